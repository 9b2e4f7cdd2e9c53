/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * proto.h - what the protocol parsers share (proto.c): the tokenizer,
 * memcached's number parsers, noreply, the meta protocol's item flags,
 * and the paths of a command through the origins (rebuild a lost key,
 * hand a get's miss to the fetch pool, write a store through to the
 * memcache origin, end a wait for them).
 *
 * The classic text commands and the dispatcher are proto_text.c
 * (proto_text.h), the meta commands proto_meta.c (proto_meta.h), the
 * admin commands proto_admin.c (proto_admin.h); all three sit on this.
 */
#ifndef PROTO_H
#define PROTO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "cache.h"
#include "conn.h"
#include "daemon.h"

#define MAX_TOKENS 24

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
 * holding cache_lock, ready to store: exclusive, or (local non-NULL,
 * *local set) shared with the key's stripe. */
bool proto_nread_begin(struct conn *c, const char *data, uint32_t *hv,
		       bool *local);
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

/* item->mflags: what the meta protocol remembers of an item */
#define MF_FETCHED  ITEM_MF_FETCHED   /* read since stored (mg h, me fetch=) */
#define MF_TOKEN    0x02   /* a client holds the win token (W sent) */
#define MF_STALE    0x04   /* invalidated: served with X */
#define MF_BINKEY   ITEM_MF_KEY   /* stored with a base64 key (k prints it so) */
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

/*
 * First pass of a get-family command with the fetch pool (fetch.c): a key
 * the cache cannot serve goes to the pool and c waits for it.
 */
void proto_collect_key(struct conn *c, const char *key, size_t nkey);

/*
 * Every origin request c waited for was answered (the upstream link or
 * the fetch pool): end the wait (ST_WAIT back to ST_CMD), roll back a
 * write-through the origin refused and send the reply held back for it.
 * The worker then runs c again (thread.c).
 */
void proto_upstream_done(struct conn *c);

#endif
