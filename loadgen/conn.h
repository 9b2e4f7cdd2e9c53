/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * conn.h - one connection to the server: its buffers, the requests in
 * flight on it, and what run.c's loop calls when it is time to connect,
 * to queue requests, to send, or when epoll reports it.  A connection
 * belongs to one load thread (thread.h), whose lock the caller holds.
 */
#ifndef CONN_H
#define CONN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

#include "heap.h"

struct thread;

struct req {
	int64_t t_start;	/* intended (open loop) or actual send time */
	int64_t t_sent;		/* actual send time (--uncorrected) */
	uint32_t key_off;	/* first key in the connection's key ring */
	uint16_t nkeys;
	uint16_t next;		/* next key a VALUE may answer */
	uint16_t hits;
	uint16_t purged;	/* meta: misses with P */
	uint16_t rebuilt;	/* meta: hits with P */
	uint8_t op;
	uint8_t failed;		/* meta: a key got an error reply */
};

enum { CS_DOWN, CS_CONNECTING, CS_UP };

struct conn {
	struct thread *t;
	int server;		/* its index in cfg.servers */
	int fd;
	int state;
	int epout;		/* EPOLLOUT armed */
	char *in;
	size_t in_len, in_cap;
	char *out;
	size_t out_off, out_len, out_cap;
	struct req *reqs;
	unsigned rcap, rhead, rcount;
	uint64_t *keyring;
	unsigned kcap, ktail;
	int64_t next_send;	/* open loop: intended time of the next request */
	int64_t retry_at;
	int64_t backoff;
	int settled;		/* its first connection attempt has ended */
	struct heap_node timer;	/* in the thread's timers: a send or retry due */
};

static inline struct conn *conn_of_timer(struct heap_node *x)
{
	return (struct conn *)((char *)x - offsetof(struct conn, timer));
}

/* What the connections tell the main thread. */
extern atomic_int g_connected;	/* some connection was established */
extern atomic_int g_settled;	/* connections whose first attempt ended */
extern atomic_ullong g_warm_done;	/* warm-up sets answered or lost */

/* A new connection of thread t to cfg.servers[server], down, with its buffers. */
void conn_init(struct conn *c, struct thread *t, int server);
/*
 * The loop looks at c: its timer is due (a send or a retry), the thread
 * started, or the run began.  It connects c if its retry is due, queues
 * what the phase and the schedule allow, and sends.
 */
void conn_kick(struct conn *c, int64_t now);
/* epoll reported ev on c: it connected, or replies came, or room to send. */
void conn_event(struct conn *c, uint32_t ev, int64_t now);
struct census;
/*
 * Add what is outstanding on c at now to *s; *oldest becomes the intended
 * or actual send time of its oldest outstanding request if that is older.
 */
void conn_census(const struct conn *c, int64_t now, struct census *s,
		 int64_t *oldest);
/* The measured run ended at t_end: count what c leaves unfinished. */
void conn_finish(struct conn *c, int64_t t_end);
/* Close c and free its buffers (its thread is done). */
void conn_free(struct conn *c);

#endif /* CONN_H */
