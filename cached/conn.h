/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * conn.h - a client connection: its buffers, its output, the values an
 * origin fetched for it, its references, and the registry of open
 * connections (stats conns).
 *
 * The bottom of the connection layer: the protocol parsers (proto*.c),
 * the upstream link (upstream.c) and the fetch pool (fetch.c) work on a
 * connection through this, and the worker threads (thread.c) own it.
 * When the last origin request a parked connection waits for is
 * answered, conn_answered() calls back the function the worker threads
 * registered at start-up (conn_on_answered), so that nothing below
 * thread.c calls up into it.
 */
#ifndef CONN_H
#define CONN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "daemon.h"

struct event;
struct evbuffer;
struct worker;

enum conn_state {
	ST_CMD,      /* waiting for a command line */
	ST_NREAD,    /* waiting for a value block */
	ST_SWALLOW,  /* dropping the data block of a refused store */
	ST_WAIT,     /* waiting for the upstream origin */
	ST_CLOSE,    /* close once the output is flushed */
};

#define RBUF_INIT (16 * 1024)
#define LINE_MAX_NONGET 2048          /* memcached's limit without '\n' */
#define LINE_MAX_READ 16384           /* memcached's read buffer */
#define OUT_SOFT (256 * 1024)         /* stop parsing while output above */

/*
 * A value an origin returned for the get being answered: the get's
 * second pass serves it from here when the cache could not keep it (full,
 * or evicted again by a later key of the same get).  From the fetch pool
 * (fetch.c) it may also say that the origin has no value (none: the
 * second pass answers a miss without asking again), and that the value
 * replaced a lost one (rebuilt: mg reports P).
 */
struct fetched {
	struct fetched *next;
	uint32_t flags, vlen;
	bool none, rebuilt;
	size_t nkey;
	char data[];            /* the key, then the value and its "\r\n" */
};

struct conn {
	int fd;
	struct worker *w;
	struct event *ev;
	bool ev_write;         /* ev currently waits for writability */
	char *rbuf;
	size_t rsize, rstart, rend;
	struct evbuffer *out;
	size_t commit;          /* bytes at the head of out that may be sent */
	unsigned int nreq;      /* commands begun since memcached's last read */
	bool yielded;           /* gave its turn after -R commands (PROTO_YIELD) */
	size_t win;             /* input memcached's read buffer would hold */
	struct evbuffer *gbuf;  /* one get command's reply, built aside */
	enum conn_state state;
	bool noreply;
	/* the store command whose value block is being read */
	enum store_cmd cmd;
	char key[KEY_MAX_LENGTH + 1];
	size_t nkey;
	uint32_t flags, exptime, vlen;
	uint64_t cas;
	uint64_t swallow;
	/* upstream (memcache origin) bookkeeping */
	int pending;            /* upstream requests in flight */
	bool refetched;         /* the current get already went upstream */
	bool up_failed;
	bool up_not_stored;     /* the upstream answered NOT_STORED */
	bool up_exists;         /* the upstream answered EXISTS (or its cas is unknown) */
	bool up_not_found;      /* the upstream answered NOT_FOUND */
	uint64_t upcas;         /* origin's cas of the value a cas replaced */
	bool wait_set;          /* waiting on a write-through */
	char *reply;            /* reply held back until upstream confirms */
	struct fetched *fetched; /* values fetched for the current get */
	size_t fetched_bytes;
	struct conn *next;      /* worker's list */
	uint32_t last_cmd;      /* when the last command began (stats conns) */
	/* an ms whose value block is being read (proto_meta.c) */
	bool meta_set;
	bool meta_stale;        /* I: a lower cas stores a stale value */
	bool meta_binkey;       /* b: the key was base64 */
	uint8_t meta_nret;
	char meta_ret[48];      /* the return flags asked for: O, k, c */
	/* lifetime (conn_alloc, conn_ref) and the registry (conn_register) */
	int refs;
	struct conn *reg_prev, *reg_next;
};

/*
 * A zeroed connection record of size bytes holding one reference: a
 * struct conn, or a larger record that starts with one (thread.c keeps
 * its own fields after it).  NULL when out of memory.
 */
struct conn *conn_alloc(size_t size);

/* Take a reference (an origin request in flight, a queued reply). */
void conn_ref(struct conn *c);

/*
 * Drop a reference; at the last, free the connection's buffers and its
 * record (the whole of what conn_alloc returned).
 */
void conn_unref(struct conn *c);

/*
 * One origin request c waited for was answered (c->pending counts
 * them); at the last, the answered callback runs in c's worker.
 */
void conn_answered(struct conn *c);

/*
 * Set the answered callback (thread.c, main thread, before any worker
 * runs): it ends the wait (proto_upstream_done) and resumes the
 * connection.
 */
void conn_on_answered(void (*fn)(struct conn *c));

/* Initialise a connection's buffers; 0 or -1. */
int conn_init_buffers(struct conn *c);

/* Free a connection's buffers. */
void conn_free_buffers(struct conn *c);

/* Make room for at least want free bytes at rbuf + rend; 0 or -1. */
int conn_rbuf_reserve(struct conn *c, size_t want);

/* Keep a copy of a value the upstream returned for c's current get. */
void conn_keep_fetched(struct conn *c, const char *key, size_t nkey,
		       uint32_t flags, const char *data, uint32_t vlen);

/* Note that the origin has no value for key (or failed), for c's get. */
void conn_keep_miss(struct conn *c, const char *key, size_t nkey);

/* Note that the value kept for key replaced a lost one. */
void conn_note_rebuilt(struct conn *c, const char *key, size_t nkey);

/* What an origin answered for key during c's current get, or NULL. */
const struct fetched *conn_find_fetched(const struct conn *c,
					const char *key, size_t nkey);

/* Forget the values kept for c's last get. */
void conn_drop_fetched(struct conn *c);

/* A one-line reply (CRLF added), unless the command said noreply. */
void out_string(struct conn *c, const char *s);

/* Everything queued so far may be sent. */
void out_commit(struct conn *c);

/* Add an open connection to the registry (its worker, once set up). */
void conn_register(struct conn *c);

/* Take a connection out of the registry (when its socket closes). */
void conn_unregister(struct conn *c);

/* Register a listening socket for stats conns (main thread, at start). */
void conns_add_listener(int fd);

/*
 * stats conns: every listening socket and connection, by descriptor, in
 * memcached's format; self (the connection asking) is conn_parse_cmd.
 */
void conns_emit(struct evbuffer *out, struct conn *self);

#endif
