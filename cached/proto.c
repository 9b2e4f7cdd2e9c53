// SPDX-License-Identifier: GPL-2.0-only
/*
 * proto.c - what the protocol parsers share: memcached's tokenizer and
 * number parsers, noreply, and the paths of a command through the
 * origins (see proto.h).
 *
 * Origins: with a synchronous origin (gen:, dir:) and no fetch pool, a
 * get's miss and a lost key are fetched inline, without cache_lock
 * (proto_origin_fetch, rebuild_lost).  With the fetch pool or the
 * memcache origin a command's first pass hands its keys to fetch.c or
 * upstream.c (proto_collect_key, proto_write_through) and the connection
 * waits (ST_WAIT); when the last answer comes, the worker calls
 * proto_upstream_done and runs the command again (thread.c).
 */
#include "proto.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "daemon.h"
#include "fetch.h"
#include "origin.h"
#include "store.h"
#include "upstream.h"

/* ---- memcached's number parsers ------------------------------------- */

bool safe_strtoull(const char *str, uint64_t *out)
{
	char *end;
	unsigned long long v;

	errno = 0;
	*out = 0;
	v = strtoull(str, &end, 10);
	if (errno == ERANGE || str == end)
		return false;
	if (isspace((unsigned char)*end) || (*end == '\0' && end != str)) {
		if ((long long)v < 0 && memchr(str, '-', (size_t)(end - str)))
			return false;
		*out = v;
		return true;
	}
	return false;
}

bool safe_strtoul(const char *str, uint32_t *out)
{
	char *end;
	unsigned long v;

	errno = 0;
	*out = 0;
	v = strtoul(str, &end, 10);
	if (errno == ERANGE || str == end)
		return false;
	if (isspace((unsigned char)*end) || (*end == '\0' && end != str)) {
		if ((long)v < 0 && memchr(str, '-', (size_t)(end - str)))
			return false;
		*out = (uint32_t)v;
		return true;
	}
	return false;
}

bool safe_strtol(const char *str, int32_t *out)
{
	char *end;
	long v;

	errno = 0;
	*out = 0;
	v = strtol(str, &end, 10);
	if (errno == ERANGE || str == end)
		return false;
	if (isspace((unsigned char)*end) || (*end == '\0' && end != str)) {
		*out = (int32_t)v;
		return true;
	}
	return false;
}

/* ---- tokenizer -------------------------------------------------------- */

/* memcached's tokenize_command: the last token holds the unparsed rest. */
size_t tokenize(char *command, token_t *tokens, size_t max_tokens)
{
	char *s, *e;
	size_t ntokens = 0;
	size_t len = strlen(command);

	s = e = command;
	for (size_t i = 0; i < len; i++) {
		if (*e == ' ') {
			if (s != e) {
				tokens[ntokens].value = s;
				tokens[ntokens].length = (size_t)(e - s);
				ntokens++;
				*e = '\0';
				if (ntokens == max_tokens - 1) {
					e++;
					s = e;
					break;
				}
			}
			s = e + 1;
		}
		e++;
	}
	if (s != e) {
		tokens[ntokens].value = s;
		tokens[ntokens].length = (size_t)(e - s);
		ntokens++;
	}
	tokens[ntokens].value = *e == '\0' ? NULL : e;
	tokens[ntokens].length = 0;
	ntokens++;
	return ntokens;
}

bool set_noreply_maybe(struct conn *c, token_t *tokens, size_t ntokens)
{
	token_t *t = &tokens[ntokens - 2];

	if (t->value && strcmp(t->value, "noreply") == 0)
		c->noreply = true;
	return c->noreply;
}

/* ---- the origins -------------------------------------------------------- */

/*
 * The start of storing a value block, for set and ms alike.  A block
 * without its CRLF is counted (as memcached does) and false returned: the
 * caller sends the error line.  Else a lost key is rebuilt first (see
 * rebuild_lost), the set counted, and cache_lock taken: with local
 * non-NULL and no memcache origin, shared with the key's stripe
 * (cache_key_lock, *local set: the caller tries cache_store_local
 * first); else exclusive, and the upstream's cas of the old value noted.
 * *hv is the key's hash.
 */
bool proto_nread_begin(struct conn *c, const char *data, uint32_t *hv,
		       bool *local)
{
	if (data[c->vlen] != '\r' || data[c->vlen + 1] != '\n') {
		STAT_ADD(cmd_set);
		return false;
	}
	*hv = index_hash(c->key, c->nkey);
	if (c->cmd != CMD_SET)
		rebuild_lost(c, c->key, c->nkey, *hv);
	STAT_ADD(cmd_set);
	if (local) {
		/* the memcache origin keeps its cas per key: exclusive */
		*local = settings.origin != ORIGIN_MEMCACHE;
		if (*local) {
			cache_key_lock(*hv);
			return true;
		}
	}
	cache_wrlock();
	if (settings.origin == ORIGIN_MEMCACHE)
		c->upcas = upstream_cas_of(c->key, c->nkey, *hv);
	return true;
}

/*
 * Fetch a key from the synchronous origin, called without cache_lock:
 * counts origin_fetches and origin_errors and returns with the lock held
 * (exclusive).  *usec: how long the fetch took.  Returns origin_fetch's
 * result (1: *val, *vlen, *flags hold the value).
 */
int proto_origin_fetch(const char *key, size_t nkey, char **val,
		       uint32_t *vlen, uint32_t *flags, uint64_t *usec)
{
	uint64_t t0 = now_usec();
	int r = origin_fetch(key, nkey, val, vlen, flags);

	*usec = now_usec() - t0;
	cache_wrlock();
	stats.origin_fetches++;
	if (r < 0)
		stats.origin_errors++;
	return r;
}

/*
 * A store the client's reply waits for went into the cache: write it
 * through to the memcache origin.  Returns true when the reply (a copy of
 * len bytes of reply, none with noreply) now waits for the upstream's
 * answer; false when nothing went upstream and the caller replies now.
 */
bool proto_write_through(struct conn *c, uint32_t hv, const char *reply,
			 size_t len)
{
	int up = upstream_set(c, c->key, c->nkey, hv, c->cmd);

	if (up < 0)
		return false;
	c->reply = c->noreply ? NULL : strndup(reply, len);
	c->noreply = false;
	c->wait_set = true;
	c->state = ST_WAIT;
	if (up == 0) {
		upstream_flush(c);
		return true;
	}
	/* a cas whose origin cas is unknown: refused, rolled back */
	c->up_failed = true;
	c->up_exists = true;
	proto_upstream_done(c);
	return true;
}

/*
 * With a synchronous origin (gen:, dir:), a key whose bytes were lost is
 * rebuilt before a command that depends on its existence decides (add,
 * replace, cas, append, prepend, touch, delete, incr, decr): the answer is
 * the one it would have had if nothing had been lost.  Without an origin
 * the lost key is a miss, as an evicted one (cache.c).  The fetch runs
 * without the lock.  With the fetch pool, proto_run has already rebuilt
 * the key through the pool (rebuild_in_pool) while the connection waited,
 * and nothing is fetched here.
 */
void rebuild_lost(struct conn *c, const char *key, size_t nkey, uint32_t hv)
{
	struct item *it;
	char *val = NULL;
	uint32_t vlen = 0, flags = 0;
	uint64_t t0;
	int r;

	/* the fetch pool asked the origin for this command: its answer holds */
	if (!origin_is_sync() || conn_find_fetched(c, key, nkey))
		return;
	cache_wrlock();
	r = cache_lost(key, nkey, hv);
	cache_unlock();
	if (!r)
		return;
	r = proto_origin_fetch(key, nkey, &val, &vlen, &flags, &t0);
	it = index_find(key, nkey, hv);
	if (r == 1 && it && it->state == ITEM_LOST &&
	    cache_fill(key, nkey, hv, flags, val, vlen)) {
		stats.rebuilds++;
		stats.rebuild_usec += t0;
	}
	cache_unlock();
	free(val);
}


/* A get's key for the fetch pool, unless the cache can serve it. */
void proto_collect_key(struct conn *c, const char *key, size_t nkey)
{
	uint32_t hv = index_hash(key, nkey), now = clock_secs(), wake = SEG_NONE;
	struct item *it;
	bool hot, expired;

	cache_key_lock(hv);
	it = index_find(key, nkey, hv);
	hot = it && it->state == ITEM_OK && cache_alive(it, now) &&
	      store_touch_hot(it, now);
	if (it && !hot && cache_alive(it, now))
		wake = store_claim_wake(it);    /* cold: unmark it without the lock */
	cache_key_unlock(hv);
	if (hot)
		return;         /* the common case: the second pass serves it */
	if (wake != SEG_NONE)
		store_wake_unlocked(wake);
	cache_wrlock();
	it = cache_lookup(key, nkey, hv, &expired);
	if (it && cache_readable(it)) {
		/* the fills of this get's misses may evict it */
		conn_keep_fetched(c, key, nkey, it->flags, store_ptr(it->off),
				  it->vlen);
		cache_unlock();
		return;
	}
	cache_unlock();
	fetch_get(c, key, nkey);
}


/* Upstream answered everything this connection waited for. */
void proto_upstream_done(struct conn *c)
{
	if (c->state != ST_WAIT)
		return;
	c->state = ST_CMD;
	if (c->wait_set && c->up_failed) {
		/* roll back: the cache never holds what the origin refused */
		uint32_t hv = index_hash(c->key, c->nkey);

		cache_wrlock();
		cache_delete(c->key, c->nkey, hv);
		cache_unlock();
	}
	if (c->reply) {
		const char *code = c->up_exists ? "EX" : c->up_not_found ? "NF" :
				   c->up_not_stored ? "NS" : NULL;

		if (c->up_failed && code && !strncmp(c->reply, "HD", 2)) {
			/* an ms reply (HD and its return flags) becomes NS, EX or NF */
			evbuffer_add(c->out, code, 2);
			evbuffer_add(c->out, c->reply + 2, strlen(c->reply + 2));
			evbuffer_add(c->out, "\r\n", 2);
		} else if (c->up_failed && code) {
			evbuffer_add_printf(c->out, "%s\r\n", c->up_exists ? "EXISTS" :
					    c->up_not_found ? "NOT_FOUND" : "NOT_STORED");
		} else if (c->up_failed) {
			evbuffer_add_printf(c->out, "SERVER_ERROR origin write failed\r\n");
		} else {
			evbuffer_add(c->out, c->reply, strlen(c->reply));
			evbuffer_add(c->out, "\r\n", 2);
		}
		free(c->reply);
		c->reply = NULL;
	}
	c->up_failed = false;
	c->up_not_stored = false;
	c->up_exists = false;
	c->up_not_found = false;
	/* a get that waited runs again; its misses are now final */
	if (!c->wait_set)
		c->refetched = true;
	c->wait_set = false;
}
