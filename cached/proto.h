/*
 * proto.h - a client connection and the memcached text protocol on it.
 */
#ifndef PROTO_H
#define PROTO_H

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
#define LINE_MAX_GET (1024 * 1024)    /* bound on a multi-get line */
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
};

enum proto_ret {
	PROTO_MORE,     /* consumed what it could; read more */
	PROTO_BLOCKED,  /* stop reading until output drains / upstream answers */
	PROTO_CLOSE,    /* close the connection after flushing */
};

/* Initialise a connection's buffers; 0 or -1. */
int conn_init_buffers(struct conn *c);

/* Free a connection's buffers. */
void conn_free_buffers(struct conn *c);

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

/* Make room for at least want free bytes at rbuf + rend; 0 or -1. */
int conn_rbuf_reserve(struct conn *c, size_t want);

/*
 * Process buffered input: run complete commands, append replies to c->out.
 * Never blocks; bounded work per call.
 */
enum proto_ret proto_process(struct conn *c);

/* ---- shared by proto_text.c and proto_meta.c ------------------------ */

#define MAX_TOKENS 24
#define ITEM_OVERHEAD 56      /* header bytes counted against -I, as memcached */

typedef struct {
	char *value;
	size_t length;
} token_t;

/* memcached's tokenize_command: the last token holds the unparsed rest. */
size_t tokenize(char *command, token_t *tokens, size_t max_tokens);

/* memcached's "noreply" as the last token; true when set. */
bool set_noreply_maybe(struct conn *c, token_t *tokens, size_t ntokens);
/* A synchronous origin rebuilds a lost key before a command decides. */
void rebuild_lost(struct conn *c, const char *key, size_t nkey, uint32_t hv);
/* A value block arrived (set, ms): false for a bad chunk; else returns
 * holding cache_lock, ready to store. */
bool proto_nread_begin(struct conn *c, const char *data, uint32_t *hv);
/* Fetch from the synchronous origin without the lock; returns holding it. */
int proto_origin_fetch(const char *key, size_t nkey, char **val,
		       uint32_t *vlen, uint32_t *flags, uint64_t *usec);
/* Write a stored value through to the memcache origin; true when the
 * reply now waits for the upstream. */
bool proto_write_through(struct conn *c, uint32_t hv, const char *reply,
			 size_t len);

/* memcached's number parsers: false on junk, overflow or a minus sign. */
bool safe_strtoull(const char *str, uint64_t *out);
bool safe_strtoul(const char *str, uint32_t *out);
bool safe_strtol(const char *str, int32_t *out);

/* A one-line reply (CRLF added), unless the command said noreply. */
void out_string(struct conn *c, const char *s);

/* Everything queued so far may be sent. */
void out_commit(struct conn *c);

/* item->mflags: what the meta protocol remembers of an item */
#define MF_FETCHED  0x01   /* read since stored (mg h, me fetch=) */
#define MF_TOKEN    0x02   /* a client holds the win token (W sent) */
#define MF_STALE    0x04   /* invalidated: served with X */
#define MF_BINKEY   0x08   /* stored with a base64 key (k prints it so) */
#define MF_PURGED   0x10   /* placeholder of a key whose bytes were lost */

/* The fetched flag under the shared lock (see item_atime, index.h). */
static inline bool item_fetched(const struct item *it)
{
	return __atomic_load_n(&it->mflags, __ATOMIC_RELAXED) & MF_FETCHED;
}

/* Note that an item was read, as memcached's ITEM_FETCHED; any lock. */
static inline void item_mark_fetched(struct item *it)
{
	if (!(__atomic_load_n(&it->mflags, __ATOMIC_RELAXED) & MF_FETCHED))
		__atomic_fetch_or(&it->mflags, MF_FETCHED, __ATOMIC_RELAXED);
}

/* lru_crawler and cache_memlimit (proto_admin.c). */
void process_lru_crawler(struct conn *c, token_t *tokens, size_t ntokens);
void process_memlimit(struct conn *c, token_t *tokens, size_t ntokens);
void process_slabs(struct conn *c, token_t *tokens, size_t ntokens);
/* stats cachedump ID LIMIT, ID checked: a walk in steps (proto_admin.c). */
void process_cachedump(struct conn *c, uint32_t id, uint32_t limit);

/* A meta command's base64 key (flag b) decoded into out (which may be
 * src); 0 when it is not valid base64 (proto_meta.c). */
size_t b64_decode(const char *src, size_t len, char *out);

/* mg, ms, md, ma, me (proto_meta.c); mn is answered by the caller. */
void proto_meta(struct conn *c, token_t *tokens, size_t ntokens);

/*
 * The first pass of an mg with the fetch pool: hand its key to the pool
 * when the cache cannot serve it (proto_collect_key).
 */
void meta_collect(struct conn *c, token_t *tokens, size_t ntokens);

/*
 * First pass of a get-family command with the fetch pool (fetch.c): a key
 * the cache cannot serve goes to the pool and c waits for it.
 */
void proto_collect_key(struct conn *c, const char *key, size_t nkey);

/* The value block of an ms arrived (data: vlen bytes and, if well formed,
 * "\r\n"): store it and reply. */
void meta_complete_nread(struct conn *c, const char *data);

/* Hooks for the upstream origin (upstream.c). */
void proto_upstream_done(struct conn *c);

#endif
