// SPDX-License-Identifier: GPL-2.0-only
/*
 * proto_text.c - the memcached text protocol: framing, the classic
 * commands and the dispatch of every command line (meta commands to
 * proto_meta.c, admin ones to proto_admin.c; the tokenizer and the
 * origin paths they share are proto.c), with memcached 1.6's replies byte
 * for byte.  The top of the protocol layer: only the worker threads
 * (thread.c) call it.
 *
 * Framing follows memcached: a command is the bytes up to '\n' (a '\r'
 * before it is dropped, and the line ends at an embedded NUL, as with
 * memcached's strlen); a line of more than 2048 bytes without '\n' closes
 * the connection unless it is a multi-get, which may grow to --input-limit
 * (past it, memcached's "SERVER_ERROR out of memory reading request").  Tokens
 * are separated by single spaces; at most 24 tokens, the rest of a long get
 * is tokenized again.  A store command's value block is read into the
 * connection's buffer (at most -I bytes plus CRLF) and must end in "\r\n".
 * A refused store (too large) has its block swallowed; the connection lives.
 *
 * A get builds its reply in c->gbuf, so a bad key in the middle drops the
 * whole reply as memcached does, and a reply that would pass the output
 * bound closes the connection instead of growing without bound.
 *
 * Replies are sent when memcached would send them, since that decides which
 * of them an error can still take back.  memcached queues the replies of
 * pipelined commands and sends the queue when a get, gets, gat or gats
 * succeeds, after mn, after every 20 commands past the 21st of one read
 * event, and when its 16 KiB read buffer holds no complete line.  While a
 * value block is still arriving or being swallowed it sends nothing; a get
 * with a key over 250 bytes drops the queue; closing the connection for bad
 * input (a line too long, an HTTP request) drops it too, quit sends it.
 * Here c->commit is the length of the head of c->out that is sent; the
 * tail after it is the queue.  c->win is how much of the input memcached
 * would hold in its buffer: the 2048-byte limit applies to that window, as
 * in memcached, so a long line is refused or not the same way.
 */
#include "proto_text.h"

#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "conn.h"
#include "daemon.h"
#include "fetch.h"
#include "origin.h"
#include "proto.h"
#include "proto_admin.h"
#include "proto_meta.h"
#include "stats.h"
#include "store.h"
#include "upstream.h"

/* ---- output ----------------------------------------------------------- */

/* Drop the replies queued since the last commit (gbuf must be empty). */
static void out_cull(struct conn *c)
{
	evbuffer_remove_buffer(c->out, c->gbuf, c->commit);
	evbuffer_drain(c->out, evbuffer_get_length(c->out));
	evbuffer_add_buffer(c->out, c->gbuf);
}

/* Append " <v>" in decimal at @p; returns the end. */
static char *put_num(char *p, uint64_t v)
{
	*p++ = ' ';
	return put_u64(p, v);
}

/* "VALUE key flags bytes [cas]\r\n", formatted by hand: it is per hit. */
static size_t format_header(char *hdr, const char *key, size_t nkey,
			    uint32_t flags, uint32_t vlen, bool ret_cas,
			    uint64_t cas)
{
	char *p = hdr + 6 + nkey;

	memcpy(hdr, "VALUE ", 6);
	memcpy(hdr + 6, key, nkey);
	p = put_num(p, flags);
	p = put_num(p, vlen);
	if (ret_cas)
		p = put_num(p, cas);
	*p++ = '\r';
	*p++ = '\n';
	return (size_t)(p - hdr);
}

#define HDR_MAX (KEY_MAX_LENGTH + 80)

static void emit_header(struct evbuffer *b, const char *key, size_t nkey,
			uint32_t flags, uint32_t vlen, bool ret_cas, uint64_t cas)
{
	char hdr[HDR_MAX];

	evbuffer_add(b, hdr, format_header(hdr, key, nkey, flags, vlen,
					   ret_cas, cas));
}

/*
 * With --verify a value is always copied, never sent from the memfd, and
 * the checksum is taken of the copy: it covers exactly the bytes that
 * leave the daemon, whatever happens to the memfd afterwards.  On a
 * mismatch nothing is added for the key (the client sees a miss).
 */
static void emit_item_verified(struct evbuffer *b, struct item *it,
			       bool ret_cas)
{
	char hdr[HDR_MAX];
	size_t h = format_header(hdr, it->key, it->keylen, it->flags, it->vlen,
				 ret_cas, it->cas);
	size_t n = (size_t)it->vlen + 2;
	struct evbuffer_iovec v;
	char *p;

	if (evbuffer_reserve_space(b, (ev_ssize_t)(h + n), &v, 1) < 1)
		return;
	p = v.iov_base;
	memcpy(p, hdr, h);
	memcpy(p + h, store_ptr(it->off), n);
	if (cache_csum(p + h, n) != it->csum) {
		__atomic_fetch_add(&stats.verify_errors, 1, __ATOMIC_RELAXED);
		logmsg(0, "verify: checksum mismatch on key '%.*s' in its reply: not served",
		       (int)it->keylen, it->key);
		return;
	}
	v.iov_len = h + n;
	evbuffer_commit_space(b, &v, 1);
}

static void emit_item(struct evbuffer *b, struct item *it, bool ret_cas)
{
	if (settings.verify) {
		emit_item_verified(b, it, ret_cas);
		return;
	}
	emit_header(b, it->key, it->keylen, it->flags, it->vlen, ret_cas, it->cas);
	if (store_ref_value(it)) {   /* a large object: sent from the memfd */
		if (evbuffer_add_reference(b, store_ptr(it->off), it->vlen + 2,
					   store_unref_cb,
					   (void *)(uintptr_t)it->seg) == 0)
			return;
		store_unref_cb(NULL, 0, (void *)(uintptr_t)it->seg);
	}
	evbuffer_add(b, store_ptr(it->off), it->vlen + 2);
}

/* ---- get family ------------------------------------------------------- */

enum get_fast_res { FAST_SLOW, FAST_HIT, FAST_MISS };

/*
 * The common cases of a get, under the shared lock: the key is there, not
 * expired or flushed, and its segment is hot (FAST_HIT, served); or, with
 * no origin, the key is not there at all (FAST_MISS, counted; nothing to
 * expire, drop or fetch).  FAST_SLOW sends the key down the exclusive
 * path (get_one), which handles every other case.  With touch (gat,
 * gats) a hit also sets the new exptime, atomically: readers under the
 * shared lock read it with item_exptime.
 */
static enum get_fast_res get_fast(struct conn *c, const char *key, size_t nkey,
				  uint32_t hv, bool ret_cas, bool touch,
				  uint32_t exptime)
{
	uint32_t now = clock_secs(), wake = SEG_NONE;
	struct item *it;
	enum get_fast_res res = FAST_SLOW;

	cache_key_lock(hv);
	it = index_find(key, nkey, hv);
	if (!it && settings.origin == ORIGIN_NONE) {
		if (touch) {
			STAT_ADD(cmd_touch);
			STAT_ADD(touch_misses);
		} else {
			STAT_ADD(cmd_get);
			STAT_ADD(get_misses);
		}
		res = FAST_MISS;
	} else if (it && cache_alive(it, now) &&
	    store_touch_hot(it, now) &&
	    (!settings.verify ||
	     cache_csum(store_ptr(it->off), it->vlen + 2) == it->csum)) {
		if (__atomic_load_n(&it->atime, __ATOMIC_RELAXED) != now)
			__atomic_store_n(&it->atime, now, __ATOMIC_RELAXED);
		if (touch)
			item_set_exptime(it, exptime);   /* gat, gats */
		item_mark_fetched(it);
		emit_item(c->gbuf, it, ret_cas);
		if (touch) {
			STAT_ADD(cmd_touch);
			STAT_ADD(touch_hits);
		} else {
			STAT_ADD(cmd_get);
			STAT_ADD(get_hits);
		}
		res = FAST_HIT;
	} else if (it && cache_alive(it, now)) {
		wake = store_claim_wake(it);    /* cold: unmark it without the lock */
	}
	cache_key_unlock(hv);
	if (wake != SEG_NONE)
		store_wake_unlocked(wake);
	return res;
}

/*
 * One key of a get (or gat), answered with a value or not; cache_lock held.
 * As in memcached, gat and gats count as touches only.
 */
static void count_get(bool touch, bool hit)
{
	if (touch) {
		STAT_ADD(cmd_touch);
		if (hit)
			STAT_ADD(touch_hits);
		else
			STAT_ADD(touch_misses);
		return;
	}
	stats.cmd_get++;
	if (hit)
		stats.get_hits++;
	else
		stats.get_misses++;
}

/*
 * One key of a get: serve it, rebuild it from a synchronous origin, or
 * count a miss.  For the upstream origin in its first pass (collect), a
 * key that would miss is queued upstream instead.  Returns true on a hit.
 */
static bool get_one(struct conn *c, const char *key, size_t nkey,
		    bool ret_cas, bool touch, uint32_t exptime, bool collect)
{
	uint32_t hv = index_hash(key, nkey);
	bool expired, lost;
	struct item *it;

	if (collect && fetch_enabled()) {
		proto_collect_key(c, key, nkey);
		return false;
	}
	if (!collect) {
		enum get_fast_res r = get_fast(c, key, nkey, hv, ret_cas,
					       touch, exptime);

		if (r != FAST_SLOW)
			return r == FAST_HIT;
	}
	cache_wrlock();
	it = cache_lookup(key, nkey, hv, &expired);
	if (it && touch)
		it->exptime = exptime;
	if (it && cache_readable(it)) {
		if (collect) {
			/* the fills of this get's misses may evict it */
			conn_keep_fetched(c, key, nkey, it->flags,
					  store_ptr(it->off), it->vlen);
		} else {
			item_mark_fetched(it);
			emit_item(c->gbuf, it, ret_cas);
			count_get(touch, true);
		}
		cache_unlock();
		return true;
	}
	lost = it && it->state == ITEM_LOST;
	if (collect) {
		cache_unlock();
		upstream_get(c, key, nkey);
		return false;
	}
	if (origin_is_sync() && !conn_find_fetched(c, key, nkey)) {
		/* no fetch pool, or the first pass did not fetch it */
		char *val = NULL;
		uint32_t vlen = 0, flags = 0;
		uint64_t t0;
		int r;

		cache_unlock();
		r = proto_origin_fetch(key, nkey, &val, &vlen, &flags, &t0);
		if (r == 1) {
			if (lost) {
				stats.rebuilds++;
				stats.rebuild_usec += t0;
			}
			it = cache_fill(key, nkey, hv, flags, val, vlen);
			if (it && touch)
				it->exptime = exptime;
			if (it) {
				/* sent to the client: a hit before, for mg h */
				item_mark_fetched(it);
				emit_item(c->gbuf, it, ret_cas);
			} else {  /* no room: serve the origin's bytes as they are */
				emit_header(c->gbuf, key, nkey, flags, vlen,
					    ret_cas, 0);
				evbuffer_add(c->gbuf, val, vlen + 2);
			}
			free(val);
			count_get(touch, true);
			cache_unlock();
			return true;
		}
		free(val);
		it = cache_lookup(key, nkey, hv, &expired);
		lost = it && it->state == ITEM_LOST;
	} else if (c->fetched) {
		/* fetched by the first pass, but no longer cached */
		const struct fetched *f = conn_find_fetched(c, key, nkey);

		if (f && !f->none) {
			emit_header(c->gbuf, key, nkey, f->flags, f->vlen, ret_cas, 0);
			evbuffer_add(c->gbuf, f->data + nkey, (size_t)f->vlen + 2);
			count_get(touch, true);
			cache_unlock();
			return true;
		}
	}
	if (lost) {
		stats.purge_misses++;
		cache_drop_lost(it);
	}
	count_get(touch, false);
	cache_unlock();
	return false;
}

/* get, gets, gat, gats.  Returns false when the connection must close. */
static bool process_get(struct conn *c, token_t *tokens, size_t ntokens,
			bool ret_cas, bool touch, bool collect)
{
	token_t *key_token = &tokens[1];
	int32_t exptime_int = 0;
	uint32_t exptime = 0;
	bool fail_length = false, too_big = false;

	if (touch) {
		if (!safe_strtol(tokens[1].value, &exptime_int)) {
			out_string(c, "CLIENT_ERROR invalid exptime argument");
			return true;
		}
		key_token++;
		exptime = cache_exptime(exptime_int);
	}
	do {
		while (key_token->length != 0) {
			if (key_token->length > KEY_MAX_LENGTH) {
				fail_length = true;
				goto stop;
			}
			bool hit = get_one(c, key_token->value, key_token->length,
					   ret_cas, touch, exptime, collect);

			if (!collect)
				stats_prefix_get(key_token->value,
						 key_token->length, hit);
			if (evbuffer_get_length(c->gbuf) +
			    evbuffer_get_length(c->out) > settings.out_max) {
				too_big = true;
				goto stop;
			}
			key_token++;
		}
		if (key_token->value != NULL) {
			ntokens = tokenize(key_token->value, tokens, MAX_TOKENS);
			(void)ntokens;
			key_token = tokens;
		}
	} while (key_token->value != NULL);
stop:
	if (too_big) {
		logmsg(1, "closing a client whose reply passed %llu bytes",
		       (unsigned long long)settings.out_max);
		evbuffer_drain(c->gbuf, evbuffer_get_length(c->gbuf));
		return false;
	}
	if (collect)
		return true;
	if (fail_length) {
		/* memcached culls every reply not yet sent, not only this get's */
		evbuffer_drain(c->gbuf, evbuffer_get_length(c->gbuf));
		out_cull(c);
		out_string(c, "CLIENT_ERROR bad command line format");
	} else {
		evbuffer_add(c->gbuf, "END\r\n", 5);
		evbuffer_add_buffer(c->out, c->gbuf);
		out_commit(c);
	}
	return true;
}

/* ---- storage commands ------------------------------------------------- */

static void process_update(struct conn *c, token_t *tokens, size_t ntokens,
			   enum store_cmd cmd, bool handle_cas)
{
	uint32_t flags;
	int32_t exptime_int, vlen;
	uint64_t req_cas = 0;

	set_noreply_maybe(c, tokens, ntokens);
	if (tokens[1].length > KEY_MAX_LENGTH) {
		out_string(c, "CLIENT_ERROR bad command line format");
		return;
	}
	if (!(safe_strtoul(tokens[2].value, &flags) &&
	      safe_strtol(tokens[3].value, &exptime_int) &&
	      safe_strtol(tokens[4].value, &vlen))) {
		out_string(c, "CLIENT_ERROR bad command line format");
		return;
	}
	if (handle_cas && !safe_strtoull(tokens[5].value, &req_cas)) {
		out_string(c, "CLIENT_ERROR bad command line format");
		return;
	}
	if (vlen < 0 || vlen > INT_MAX - 2) {
		out_string(c, "CLIENT_ERROR bad command line format");
		return;
	}
	stats_prefix_set(tokens[1].value, tokens[1].length);
	if (!cache_item_fits(tokens[1].length, flags, (uint64_t)vlen + 2)) {
		out_string(c, "SERVER_ERROR object too large for cache");
		c->state = ST_SWALLOW;
		c->swallow = (uint64_t)vlen + 2;
		if (cmd == CMD_SET) {
			/* no stale value may outlive a failed set */
			uint32_t hv = index_hash(tokens[1].value, tokens[1].length);

			cache_wrlock();
			cache_delete(tokens[1].value, tokens[1].length, hv);
			cache_unlock();
		}
		return;
	}
	c->cmd = cmd;
	memcpy(c->key, tokens[1].value, tokens[1].length);
	c->nkey = tokens[1].length;
	c->flags = flags;
	c->exptime = (uint32_t)exptime_int;  /* raw; converted on store */
	c->cas = req_cas;
	c->vlen = (uint32_t)vlen;
	c->state = ST_NREAD;
}

/* The value block arrived: check its CRLF, store, reply. */
static void complete_nread(struct conn *c, const char *data)
{
	static const char *const replies[] = {
		[R_STORED] = "STORED",
		[R_NOT_STORED] = "NOT_STORED",
		[R_EXISTS] = "EXISTS",
		[R_NOT_FOUND] = "NOT_FOUND",
		[R_TOO_LARGE] = "SERVER_ERROR out of memory storing object",
		[R_NO_MEMORY] = "SERVER_ERROR out of memory storing object",
	};
	uint32_t hv, exptime;
	enum store_res r;
	bool local;

	if (c->meta_set) {
		meta_complete_nread(c, data);
		return;
	}
	c->state = ST_CMD;
	if (!proto_nread_begin(c, data, &hv, &local)) {
		out_string(c, "CLIENT_ERROR bad data chunk");
		return;
	}
	stats_note_store(c->key, c->nkey, hv);
	exptime = cache_exptime((int32_t)c->exptime);
	if (local) {
		r = cache_store_local(c->cmd, c->key, c->nkey, hv, c->flags,
				      exptime, data, c->vlen, c->cas);
		cache_key_unlock(hv);
		if (r == R_RETRY) {
			cache_wrlock();
			r = cache_store(c->cmd, c->key, c->nkey, hv, c->flags,
					exptime, data, c->vlen, c->cas);
			cache_unlock();
		}
	} else {
		r = cache_store(c->cmd, c->key, c->nkey, hv, c->flags,
				exptime, data, c->vlen, c->cas);
		cache_unlock();
	}
	if (r == R_STORED && settings.origin == ORIGIN_MEMCACHE &&
	    proto_write_through(c, hv, replies[r], strlen(replies[r])))
		return;
	out_string(c, replies[r]);
}

/* ---- other commands --------------------------------------------------- */

static void process_arithmetic(struct conn *c, token_t *tokens, size_t ntokens,
			       bool incr)
{
	char buf[32];
	uint64_t delta;
	enum delta_res r;
	uint32_t hv;

	set_noreply_maybe(c, tokens, ntokens);
	if (tokens[1].length > KEY_MAX_LENGTH) {
		out_string(c, "CLIENT_ERROR bad command line format");
		return;
	}
	if (!safe_strtoull(tokens[2].value, &delta)) {
		out_string(c, "CLIENT_ERROR invalid numeric delta argument");
		return;
	}
	hv = index_hash(tokens[1].value, tokens[1].length);
	rebuild_lost(c, tokens[1].value, tokens[1].length, hv);
	cache_wrlock();
	r = cache_delta(tokens[1].value, tokens[1].length, hv, incr, delta, buf);
	if (r == D_NOT_FOUND) {
		if (incr)
			stats.incr_misses++;
		else
			stats.decr_misses++;
	}
	cache_unlock();
	switch (r) {
	case D_OK:
		out_string(c, buf);
		break;
	case D_NON_NUMERIC:
		out_string(c, "CLIENT_ERROR cannot increment or decrement non-numeric value");
		break;
	case D_NO_MEMORY:
		out_string(c, "SERVER_ERROR out of memory");
		break;
	case D_NOT_FOUND:
		out_string(c, "NOT_FOUND");
		break;
	}
}

static void process_delete(struct conn *c, token_t *tokens, size_t ntokens)
{
	uint32_t hv;
	bool found;
	int d;

	if (ntokens > 3) {
		bool hold_is_zero = strcmp(tokens[2].value, "0") == 0;
		bool sets_noreply = set_noreply_maybe(c, tokens, ntokens);
		bool valid = (ntokens == 4 && (hold_is_zero || sets_noreply)) ||
			     (ntokens == 5 && hold_is_zero && sets_noreply);

		if (!valid) {
			out_string(c, "CLIENT_ERROR bad command line format.  "
				      "Usage: delete <key> [noreply]");
			return;
		}
	}
	if (tokens[1].length > KEY_MAX_LENGTH) {
		out_string(c, "CLIENT_ERROR bad command line format");
		return;
	}
	stats_prefix_delete(tokens[1].value, tokens[1].length);
	hv = index_hash(tokens[1].value, tokens[1].length);
	rebuild_lost(c, tokens[1].value, tokens[1].length, hv);
	cache_key_lock(hv);
	d = cache_delete_local(tokens[1].value, tokens[1].length, hv);
	cache_key_unlock(hv);
	if (d < 0) {
		cache_wrlock();
		d = cache_delete(tokens[1].value, tokens[1].length, hv);
		cache_unlock();
	}
	found = d > 0;
	if (found)
		STAT_ADD(delete_hits);
	else
		STAT_ADD(delete_misses);
	if (settings.origin == ORIGIN_MEMCACHE)   /* the origin may have it */
		upstream_delete(c, tokens[1].value, tokens[1].length);
	out_string(c, found ? "DELETED" : "NOT_FOUND");
}

static void process_touch(struct conn *c, token_t *tokens, size_t ntokens)
{
	int32_t exptime_int;
	uint32_t hv, exptime;
	bool found;
	int d;

	set_noreply_maybe(c, tokens, ntokens);
	if (tokens[1].length > KEY_MAX_LENGTH) {
		out_string(c, "CLIENT_ERROR bad command line format");
		return;
	}
	if (!safe_strtol(tokens[2].value, &exptime_int)) {
		out_string(c, "CLIENT_ERROR invalid exptime argument");
		return;
	}
	hv = index_hash(tokens[1].value, tokens[1].length);
	rebuild_lost(c, tokens[1].value, tokens[1].length, hv);
	exptime = cache_exptime(exptime_int);
	cache_key_lock(hv);
	d = cache_touch_local(tokens[1].value, tokens[1].length, hv, exptime);
	if (d > 0)
		item_mark_fetched(index_find(tokens[1].value, tokens[1].length, hv));
	cache_key_unlock(hv);
	if (d < 0) {
		cache_wrlock();
		d = cache_touch(tokens[1].value, tokens[1].length, hv, exptime);
		if (d)
			item_mark_fetched(index_find(tokens[1].value,
						     tokens[1].length, hv));
		cache_unlock();
	}
	found = d > 0;
	STAT_ADD(cmd_touch);
	if (found)
		STAT_ADD(touch_hits);
	else
		STAT_ADD(touch_misses);
	out_string(c, found ? "TOUCHED" : "NOT_FOUND");
}

static void process_flush_all(struct conn *c, token_t *tokens, size_t ntokens)
{
	int32_t exptime = 0;

	set_noreply_maybe(c, tokens, ntokens);
	cache_wrlock();
	stats.cmd_flush++;
	cache_unlock();
	if (settings.no_flush) {   /* -F; counted all the same, as memcached */
		out_string(c, "CLIENT_ERROR flush_all not allowed");
		return;
	}
	if (ntokens != (c->noreply ? 3u : 2u)) {
		if (!safe_strtol(tokens[1].value, &exptime)) {
			out_string(c, "CLIENT_ERROR invalid exptime argument");
			return;
		}
	}
	cache_wrlock();
	cache_flush(exptime);
	cache_unlock();
	out_string(c, "OK");
}

static void process_verbosity(struct conn *c, token_t *tokens, size_t ntokens)
{
	uint32_t level;

	set_noreply_maybe(c, tokens, ntokens);
	if (!safe_strtoul(tokens[1].value, &level)) {
		out_string(c, "CLIENT_ERROR bad command line format");
		return;
	}
	settings.verbose = level > 2 ? 2 : (int)level;
	out_string(c, "OK");
}

static void process_stats(struct conn *c, token_t *tokens, size_t ntokens)
{
	const char *sub = tokens[1].value;

	if (ntokens == 2) {
		stats_emit(c->out);
	} else if (!strcmp(sub, "reset")) {
		stats_reset();
		out_string(c, "RESET");
	} else if (!strcmp(sub, "settings")) {
		stats_settings_emit(c->out);
	} else if (!strcmp(sub, "detail")) {
		const char *arg = ntokens < 4 ? "" : tokens[2].value;

		if (!strcmp(arg, "on") || !strcmp(arg, "off")) {
			__atomic_store_n(&settings.detail, arg[1] == 'n',
					 __ATOMIC_RELAXED);
			out_string(c, "OK");
		} else if (!strcmp(arg, "dump")) {
			stats_prefix_dump(c->out);
		} else {
			out_string(c, "CLIENT_ERROR usage: stats detail on|off|dump");
		}
	} else if (!strcmp(sub, "cachedump")) {
		uint32_t id, limit;

		if (settings.no_dump) {   /* -X */
			out_string(c, "CLIENT_ERROR stats cachedump not allowed");
		} else if (ntokens < 5) {
			out_string(c, "CLIENT_ERROR bad command line");
		} else if (!safe_strtoul(tokens[2].value, &id) ||
			   !safe_strtoul(tokens[3].value, &limit)) {
			out_string(c, "CLIENT_ERROR bad command line format");
		} else if (id >= CACHEDUMP_CLASSES) {
			out_string(c, "CLIENT_ERROR Illegal slab id");
		} else {
			process_cachedump(c, id, limit);
		}
	} else if (!strcmp(sub, "items")) {
		stats_items_emit(c->out);
	} else if (!strcmp(sub, "slabs")) {
		stats_slabs_emit(c->out);
	} else if (!strcmp(sub, "sizes")) {
		out_string(c, "STAT sizes_status disabled\r\nEND");
	} else if (!strcmp(sub, "conns")) {
		conns_emit(c->out, c);
	} else {
		out_string(c, "ERROR");
	}
}

/* ---- dispatch --------------------------------------------------------- */

enum cmd_ret { CMD_DONE, CMD_CLOSE };

#define WANT(cond) do { if (!(cond)) { out_string(c, "ERROR"); return CMD_DONE; } } while (0)

static enum cmd_ret process_command(struct conn *c, char *command, bool collect)
{
	token_t tokens[MAX_TOKENS];
	size_t ntokens = tokenize(command, tokens, MAX_TOKENS);
	const char *cmd;
	char first;

	c->last_cmd = clock_secs();
	if (ntokens < 2 || tokens[0].length < 2) {
		out_string(c, "ERROR");
		return CMD_DONE;
	}
	cmd = tokens[0].value;
	first = cmd[0];
	if (first == 'm' && tokens[0].length == 2) {
		if (collect) {
			meta_collect(c, tokens, ntokens);   /* mg: is_get_line */
		} else if (cmd[1] == 'n') {
			out_string(c, "MN");
			out_commit(c);
		} else {
			proto_meta(c, tokens, ntokens);
		}
	} else if (first == 'g') {
		WANT(ntokens >= 3);
		if (!strcmp(cmd, "get"))
			return process_get(c, tokens, ntokens, false, false, collect) ? CMD_DONE : CMD_CLOSE;
		else if (!strcmp(cmd, "gets"))
			return process_get(c, tokens, ntokens, true, false, collect) ? CMD_DONE : CMD_CLOSE;
		else if (!strcmp(cmd, "gat"))
			return process_get(c, tokens, ntokens, false, true, collect) ? CMD_DONE : CMD_CLOSE;
		else if (!strcmp(cmd, "gats"))
			return process_get(c, tokens, ntokens, true, true, collect) ? CMD_DONE : CMD_CLOSE;
		else
			out_string(c, "ERROR");
	} else if (!strcmp(cmd, "set")) {
		WANT(ntokens == 6 || ntokens == 7);
		process_update(c, tokens, ntokens, CMD_SET, false);
	} else if (!strcmp(cmd, "add")) {
		WANT(ntokens == 6 || ntokens == 7);
		process_update(c, tokens, ntokens, CMD_ADD, false);
	} else if (!strcmp(cmd, "replace")) {
		WANT(ntokens == 6 || ntokens == 7);
		process_update(c, tokens, ntokens, CMD_REPLACE, false);
	} else if (!strcmp(cmd, "append")) {
		WANT(ntokens == 6 || ntokens == 7);
		process_update(c, tokens, ntokens, CMD_APPEND, false);
	} else if (!strcmp(cmd, "prepend")) {
		WANT(ntokens == 6 || ntokens == 7);
		process_update(c, tokens, ntokens, CMD_PREPEND, false);
	} else if (!strcmp(cmd, "cas")) {
		WANT(ntokens == 7 || ntokens == 8);
		process_update(c, tokens, ntokens, CMD_CAS, true);
	} else if (!strcmp(cmd, "incr")) {
		WANT(ntokens == 4 || ntokens == 5);
		process_arithmetic(c, tokens, ntokens, true);
	} else if (!strcmp(cmd, "decr")) {
		WANT(ntokens == 4 || ntokens == 5);
		process_arithmetic(c, tokens, ntokens, false);
	} else if (!strcmp(cmd, "delete")) {
		WANT(ntokens >= 3 && ntokens <= 5);
		process_delete(c, tokens, ntokens);
	} else if (!strcmp(cmd, "touch")) {
		WANT(ntokens == 4 || ntokens == 5);
		process_touch(c, tokens, ntokens);
	} else if (!strcmp(cmd, "stats")) {
		process_stats(c, tokens, ntokens);
	} else if (!strcmp(cmd, "shutdown")) {
		/* -A: as memcached, shutdown and shutdown graceful stop the
		 * daemon as SIGINT does (cached keeps nothing to restart) */
		if (!settings.shutdown_command) {
			out_string(c, "ERROR: shutdown not enabled");
		} else if (ntokens == 2 || (ntokens == 3 && !strcmp(tokens[1].value, "graceful"))) {
			raise(SIGINT);
			return CMD_CLOSE;
		} else {
			out_string(c, "CLIENT_ERROR invalid shutdown mode");
		}
	} else if (!strcmp(cmd, "cache_memlimit")) {
		WANT(ntokens == 3 || ntokens == 4);
		process_memlimit(c, tokens, ntokens);
	} else if (!strcmp(cmd, "lru_crawler")) {
		process_lru_crawler(c, tokens, ntokens);
	} else if (!strcmp(cmd, "slabs")) {
		process_slabs(c, tokens, ntokens);
	} else if (tokens[ntokens - 2].value &&
		   !strncmp(tokens[ntokens - 2].value, "HTTP/", 5)) {
		return CMD_CLOSE;
	} else if (!strcmp(cmd, "flush_all")) {
		WANT(ntokens >= 2 && ntokens <= 4);
		process_flush_all(c, tokens, ntokens);
	} else if (!strcmp(cmd, "version")) {
		out_string(c, "VERSION " CACHED_VERSION);
	} else if (!strcmp(cmd, "quit")) {
		out_commit(c);
		return CMD_CLOSE;
	} else if (!strcmp(cmd, "verbosity")) {
		WANT(ntokens == 3 || ntokens == 4);
		process_verbosity(c, tokens, ntokens);
	} else {
		out_string(c, "ERROR");
	}
	return CMD_DONE;
}

/*
 * With the fetch pool: the key of a command line that rebuilds a lost key
 * before it decides (rebuild_lost), or false.  An ms in set mode without
 * C overwrites whatever was there and rebuilds nothing.  A meta command
 * with b has its base64 key decoded into kbuf (KEY_MAX_LENGTH bytes); one
 * that does not decode is left to the command, which refuses it.
 */
static bool rebuild_line_key(const char *p, size_t n, const char **key,
			     size_t *nkey, char *kbuf)
{
	static const char *const cmds[] = {
		"add", "replace", "cas", "append", "prepend", "touch", "delete",
		"incr", "decr", "ms", "md", "ma",
	};
	const char *end = p + n, *t, *k;
	bool meta, is_ms, overwrite = true, binary = false;
	size_t ncmd, i;

	while (p < end && *p == ' ')
		p++;
	for (t = p; t < end && *t != ' '; t++)
		;
	ncmd = (size_t)(t - p);
	for (i = 0; i < sizeof(cmds) / sizeof(cmds[0]); i++)
		if (strlen(cmds[i]) == ncmd && !memcmp(cmds[i], p, ncmd))
			break;
	if (i == sizeof(cmds) / sizeof(cmds[0]))
		return false;
	meta = ncmd == 2;
	is_ms = meta && p[1] == 's';
	while (t < end && *t == ' ')
		t++;
	for (k = t; t < end && *t != ' '; t++)
		;
	if (t == k || t - k > KEY_MAX_LENGTH)
		return false;
	*key = k;
	*nkey = (size_t)(t - k);
	while (meta && t < end) {
		const char *f;

		while (t < end && *t == ' ')
			t++;
		for (f = t; t < end && *t != ' '; t++)
			;
		if (t == f)
			break;
		if (*f == 'b')
			binary = true;
		if (*f == 'C' || (*f == 'M' && t - f > 1 && f[1] != 'S' && f[1] != 's'))
			overwrite = false;
	}
	if (is_ms && overwrite)
		return false;
	if (binary) {
		*nkey = b64_decode(*key, *nkey, kbuf);
		*key = kbuf;
		return *nkey > 0;
	}
	return true;
}

/*
 * A command about to rebuild a lost key: hand the fetch to the pool and
 * return true (the connection waits for it, then runs the command again,
 * as a get's first pass does); false when the key is not lost.
 */
static bool rebuild_in_pool(struct conn *c, const char *key, size_t nkey)
{
	uint32_t hv = index_hash(key, nkey);
	bool lost;

	cache_wrlock();
	lost = cache_lost(key, nkey, hv);
	cache_unlock();
	if (!lost)
		return false;
	fetch_get(c, key, nkey);
	return c->pending > 0;
}

/*
 * True when a line is a get-family command (its misses may go to an
 * origin first): get, gets, gat, gats, and mg when with_mg.
 */
static bool is_get_line(const char *p, size_t n, bool with_mg)
{
	while (n && *p == ' ') {
		p++;
		n--;
	}
	if (with_mg && n > 3 && !strncmp(p, "mg ", 3))
		return true;
	return n > 4 && p[0] == 'g' && (!strncmp(p, "get ", 4) ||
		!strncmp(p, "gets ", 5) || !strncmp(p, "gat ", 4) ||
		!strncmp(p, "gats ", 5));
}

/*
 * May a line of more than 2048 bytes go on?  memcached lets only a
 * multi-get grow past that: "get " or "gets " after at most 100 spaces.
 */
static bool long_line_ok(const char *line, size_t n)
{
	const char *p = line;

	while (*p == ' ' && p < line + n - 5)
		p++;
	return p - line <= 100 && (!strncmp(p, "get ", 4) ||
				   !strncmp(p, "gets ", 5));
}

/*
 * @n bytes of input were used.  What came from memcached's buffer leaves
 * it; a value or a swallow that ran past it was read around it, directly
 * from the socket, which leaves the buffer empty.
 */
static void win_consume(struct conn *c, size_t n)
{
	c->win = n <= c->win ? c->win - n : 0;
}

static enum proto_ret proto_run(struct conn *c)
{
	unsigned int rpe = settings.reqs_per_event > 0 ?
			   (unsigned int)settings.reqs_per_event : 20;

	for (;;) {
		size_t avail = c->rend - c->rstart;
		char *line, *el;
		const char *rkey;
		char rkbuf[KEY_MAX_LENGTH];
		size_t consumed, rnkey;

		switch (c->state) {
		case ST_CLOSE:
			return PROTO_CLOSE;
		case ST_WAIT:
			return PROTO_BLOCKED;
		case ST_SWALLOW: {
			size_t n = avail < c->swallow ? avail : (size_t)c->swallow;

			c->rstart += n;
			c->swallow -= n;
			win_consume(c, n);
			if (c->swallow)
				return PROTO_MORE;
			c->state = ST_CMD;
			continue;
		}
		case ST_NREAD: {
			size_t need = (size_t)c->vlen + 2;

			if (avail < need) {
				if (conn_rbuf_reserve(c, need - avail) < 0)
					return PROTO_CLOSE;
				return PROTO_MORE;
			}
			c->rstart += need;
			win_consume(c, need);
			complete_nread(c, c->rbuf + c->rstart - need);
			continue;
		}
		case ST_CMD:
			break;
		}
		/*
		 * memcached's reqs_per_event (-R): it sends, and yields to the
		 * worker's other connections, every R commands past the first
		 * R + 1; the next call goes on where this one stopped
		 */
		if (c->nreq > rpe && (c->nreq - 1) % rpe == 0) {
			if (!c->yielded) {
				out_commit(c);
				__atomic_fetch_add(&stat_conn_yields, 1, __ATOMIC_RELAXED);
				c->yielded = true;
				return PROTO_YIELD;
			}
		}
		c->yielded = false;
		if (evbuffer_get_length(c->out) > OUT_SOFT)
			return PROTO_BLOCKED;
		if (c->win > avail)
			c->win = avail;
		line = c->rbuf + c->rstart;
		el = memchr(line, '\n', c->win);
		if (!el && c->win > LINE_MAX_NONGET) {
			/*
			 * Only a multi-get may be longer.  memcached moves it to
			 * a buffer that grows, sending what it has first.
			 */
			if (!long_line_ok(line, c->win))
				return PROTO_CLOSE;
			out_commit(c);
			c->nreq = 0;
			c->win = avail;
			el = memchr(line, '\n', avail);
			if (!el && avail > settings.in_max) {
				/*
				 * memcached's reply when its buffer cannot grow
				 * for a request; it then closes
				 */
				c->noreply = false;
				out_string(c, "SERVER_ERROR out of memory reading request");
				out_commit(c);
				__atomic_fetch_add(&stat_input_limit_closes, 1,
						   __ATOMIC_RELAXED);
				return PROTO_CLOSE;
			}
			if (!el)
				return PROTO_MORE;
		}
		if (!el) {
			/* memcached sends what it has, then reads its buffer full */
			out_commit(c);
			c->nreq = 0;
			if (avail > c->win) {
				c->win = avail < LINE_MAX_READ ? avail : LINE_MAX_READ;
				continue;
			}
			return PROTO_MORE;
		}
		consumed = (size_t)(el - line) + 1;
		if (el - line > 1 && el[-1] == '\r')
			el--;
		c->noreply = false;
		if ((settings.origin == ORIGIN_MEMCACHE || fetch_enabled()) &&
		    !c->refetched && is_get_line(line, consumed, fetch_enabled())) {
			/*
			 * first pass: send the misses upstream or to the fetch
			 * pool, then run again
			 */
			char *copy = malloc(consumed);
			enum cmd_ret r;

			if (!copy)
				return PROTO_CLOSE;
			memcpy(copy, line, consumed);
			*el = '\0';
			r = process_command(c, line, true);
			memcpy(line, copy, consumed);
			free(copy);
			if (r == CMD_CLOSE)
				return PROTO_CLOSE;
			if (c->pending) {
				c->state = ST_WAIT;
				upstream_flush(c);
				return PROTO_BLOCKED;
			}
			c->refetched = true;
			continue;
		}
		if (fetch_enabled() && !c->refetched &&
		    rebuild_line_key(line, (size_t)(el - line), &rkey, &rnkey, rkbuf) &&
		    rebuild_in_pool(c, rkey, rnkey)) {
			/* a lost key rebuilt off the worker, then this line again */
			c->state = ST_WAIT;
			upstream_flush(c);
			return PROTO_BLOCKED;
		}
		*el = '\0';
		c->rstart += consumed;
		c->win -= consumed;
		c->nreq++;
		if (process_command(c, line, false) == CMD_CLOSE)
			return PROTO_CLOSE;
		c->refetched = false;
		conn_drop_fetched(c);
	}
}

enum proto_ret proto_process(struct conn *c)
{
	enum proto_ret r;

	/*
	 * A value block that completes here counts as this event's first;
	 * after a yield the count goes on, as memcached's next event runs R
	 * more commands before it yields again.
	 */
	if (!c->yielded)
		c->nreq = c->state == ST_CMD ? 0 : 1;
	r = proto_run(c);
	if (r == PROTO_BLOCKED || (r == PROTO_MORE && c->state == ST_CMD))
		out_commit(c);
	return r;
}
