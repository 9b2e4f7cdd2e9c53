// SPDX-License-Identifier: GPL-2.0-only
/*
 * proto_meta.c - memcached 1.6's meta commands: mg, ms, md, ma and me,
 * answered byte for byte as memcached 1.6.18 answers them (mn is answered
 * by proto_text.c, which also frames lines and value blocks).
 *
 * A meta command is a two-letter verb, a key and flags of one letter each,
 * some with a token glued to them (T30, Oopaque, MS).  The flags are
 * checked first, all of them (memcached's _meta_flag_preparse: a repeated
 * or unknown flag is an error, and b decodes the key in place); then the
 * reply is built flag by flag in the order the client gave them, so that
 * T30 before t shows the new TTL and t before T30 the old one, as in
 * memcached.  Errors always reach the client; q (quiet) hides only the
 * nominal replies: HD of ms, md and ma, EN of mg.
 *
 * An ms value block is always read as data when its length could be
 * parsed: refused stores swallow it.  When memcached cannot parse the
 * line far enough to know the length (a key over 250 bytes, a bad or
 * missing length, more than 20 tokens) it reads the block as commands,
 * and so does cached.
 *
 * The win/stale protocol: N vivifies a missing key as an empty item and
 * hands its caller the win flag W; R hands W to the first caller once the
 * TTL has dropped below its token; md I and ms I with a lower cas mark an
 * item stale (X) and give W to the next caller.  Everyone else sees Z
 * while a token is out.
 *
 * Beyond memcached, a purge is information (return flag P): when mg finds
 * a key whose bytes the kernel purged (or psi mode dropped), a rebuild
 * from a synchronous origin is a hit with P, and without one the reply is
 * "EN P".  With N the first caller instead vivifies an empty placeholder
 * and gets W and P, so that one client rebuilds the value while the
 * others see Z and P until it is stored again.  R alone acts only on a
 * value that is there, as in memcached, so a lost key is "EN P" for it.
 */
#include "proto_meta.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "cache.h"
#include "daemon.h"
#include "origin.h"
#include "stats.h"
#include "store.h"
#include "upstream.h"

#define MFLAG_MAX_OPT_LENGTH 20      /* tokens, the final empty one included */
#define MFLAG_MAX_OPAQUE_LENGTH 32
#define META_LINE_MAX 2048           /* a reply line: flags are unique, so bounded */

struct mflags {
	bool has_error, no_update, locked, vivify, recache, value, set_stale;
	bool no_reply, has_cas, new_ttl, key_binary;
	char mode;                   /* M: ms and ma mode switch */
	uint32_t exptime, autoviv_exptime, recache_time, client_flags;
	uint64_t req_cas, delta, initial;
};

/* ---- base64, as memcached's base64.c (its acceptance rules matter) ---- */

static const char b64_chars[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Value of a base64 character ('=' counts as 0), or -1 for any other. */
static int b64_val(unsigned char ch)
{
	if (ch >= 'A' && ch <= 'Z')
		return ch - 'A';
	if (ch >= 'a' && ch <= 'z')
		return ch - 'a' + 26;
	if (ch >= '0' && ch <= '9')
		return ch - '0' + 52;
	if (ch == '+')
		return 62;
	if (ch == '/')
		return 63;
	if (ch == '=')
		return 0;
	return -1;
}

/*
 * Decode in place (out may equal src).  Other characters are skipped; 0
 * when no or a partial block remains or the padding is wrong.
 */
size_t b64_decode(const char *src, size_t len, char *out)
{
	unsigned char block[4];
	size_t count = 0, n = 0;
	int pad = 0;

	for (size_t i = 0; i < len; i++)
		if (b64_val((unsigned char)src[i]) >= 0)
			count++;
	if (count == 0 || count % 4)
		return 0;
	count = 0;
	for (size_t i = 0; i < len; i++) {
		int v = b64_val((unsigned char)src[i]);

		if (v < 0)
			continue;
		if (src[i] == '=')
			pad++;
		block[count++] = (unsigned char)v;
		if (count < 4)
			continue;
		out[n++] = (char)((block[0] << 2) | (block[1] >> 4));
		out[n++] = (char)((block[1] << 4) | (block[2] >> 2));
		out[n++] = (char)((block[2] << 6) | block[3]);
		count = 0;
		if (pad) {
			if (pad > 2)
				return 0;
			n -= (size_t)pad;
			break;
		}
	}
	return n;
}

static size_t b64_encode(const char *src, size_t len, char *out)
{
	const unsigned char *in = (const unsigned char *)src;
	char *p = out;

	for (; len >= 3; in += 3, len -= 3) {
		*p++ = b64_chars[in[0] >> 2];
		*p++ = b64_chars[((in[0] & 3) << 4) | (in[1] >> 4)];
		*p++ = b64_chars[((in[1] & 15) << 2) | (in[2] >> 6)];
		*p++ = b64_chars[in[2] & 63];
	}
	if (len) {
		*p++ = b64_chars[in[0] >> 2];
		if (len == 1) {
			*p++ = b64_chars[(in[0] & 3) << 4];
			*p++ = '=';
		} else {
			*p++ = b64_chars[((in[0] & 3) << 4) | (in[1] >> 4)];
			*p++ = b64_chars[(in[1] & 15) << 2];
		}
		*p++ = '=';
	}
	return (size_t)(p - out);
}

/* ---- reply building --------------------------------------------------- */


/* " X" */
static char *put_flag(char *p, char f)
{
	*p++ = ' ';
	*p++ = f;
	return p;
}

/* " k<key>", base64 and " b" for a binary key, as memcached's META_KEY. */
static char *put_key(char *p, const char *key, size_t nkey, bool binary)
{
	p = put_flag(p, 'k');
	if (!binary) {
		memcpy(p, key, nkey);
		return p + nkey;
	}
	p += b64_encode(key, nkey, p);
	return put_flag(p, 'b');
}

/* " <opaque>"; false when it is longer than memcached allows. */
static bool put_opaque(char **p, const token_t *t)
{
	if (t->length > MFLAG_MAX_OPAQUE_LENGTH)
		return false;
	**p = ' ';
	memcpy(*p + 1, t->value, t->length);
	*p += 1 + t->length;
	return true;
}

/*
 * The return flags of a reply without an item (a miss, md): O and k, in
 * the order they were asked for.  False when an opaque token is too long.
 */
static bool put_opaque_key(char **p, token_t *tokens, size_t ntokens,
			   const char *key, size_t nkey, bool binary)
{
	for (size_t i = 2; i < ntokens - 1; i++) {
		if (tokens[i].value[0] == 'O') {
			if (!put_opaque(p, &tokens[i]))
				return false;
		} else if (tokens[i].value[0] == 'k') {
			*p = put_key(*p, key, nkey, binary);
		}
	}
	return true;
}

/* " t<seconds left>", or " t-1" for an item that does not expire. */
static char *put_ttl(char *p, uint32_t exptime, uint32_t now)
{
	p = put_flag(p, 't');
	if (exptime == 0) {
		memcpy(p, "-1", 2);
		return p + 2;
	}
	return put_u64(p, (uint32_t)(exptime - now));
}

/* An error line: shown even in quiet mode. */
static void out_err(struct conn *c, const char *s)
{
	c->noreply = false;
	out_string(c, s);
}

/* ---- flag parsing ----------------------------------------------------- */

/*
 * memcached's _meta_flag_preparse: check every flag from tokens[start],
 * remember what each asks for, decode a base64 key in tokens[1].  Returns
 * 0, or -1 with *errstr set (or left at the caller's default).
 */
static int meta_preparse(token_t *tokens, size_t start, struct mflags *of,
			 const char **errstr)
{
	uint8_t seen[127] = { 0 };
	int32_t tmp;

	for (size_t i = start; tokens[i].length != 0; i++) {
		const char *arg = tokens[i].value + 1;
		uint8_t o = (uint8_t)tokens[i].value[0];

		if (o >= 127 || seen[o]) {
			*errstr = "CLIENT_ERROR duplicate flag";
			return -1;
		}
		seen[o] = 1;
		switch (o) {
		case 'b': {
			size_t n = b64_decode(tokens[1].value, tokens[1].length,
					      tokens[1].value);

			if (n == 0) {
				*errstr = "CLIENT_ERROR error decoding key";
				of->has_error = true;
			}
			tokens[1].length = n;
			of->key_binary = true;
			break;
		}
		case 'N':
		case 'T':
		case 'R':
			of->locked = true;
			if (!safe_strtol(arg, &tmp)) {
				*errstr = "CLIENT_ERROR bad token in command line format";
				of->has_error = true;
			} else if (o == 'N') {
				of->vivify = true;
				of->autoviv_exptime = cache_exptime(tmp);
			} else if (o == 'T') {
				of->exptime = cache_exptime(tmp);
				of->new_ttl = true;
			} else {
				of->recache = true;
				of->recache_time = cache_exptime(tmp);
			}
			break;
		case 'l':
		case 'h':
			of->locked = true;
			break;
		case 'O':
		case 'P':
		case 'L':
		case 'k':
		case 's':
		case 't':
		case 'c':
		case 'f':
			break;
		case 'v':
			of->value = true;
			break;
		case 'u':
			of->no_update = true;
			break;
		case 'q':
			of->no_reply = true;
			break;
		case 'F':
			if (!safe_strtoul(arg, &of->client_flags))
				of->has_error = true;
			break;
		case 'C':
			if (!safe_strtoull(arg, &of->req_cas)) {
				*errstr = "CLIENT_ERROR bad token in command line format";
				of->has_error = true;
			} else {
				of->has_cas = true;
			}
			break;
		case 'M':
			if (tokens[i].length != 2) {
				*errstr = "CLIENT_ERROR incorrect length for M token";
				of->has_error = true;
			} else {
				of->mode = tokens[i].value[1];
			}
			break;
		case 'J':
			if (!safe_strtoull(arg, &of->initial)) {
				*errstr = "CLIENT_ERROR invalid numeric initial value";
				of->has_error = true;
			}
			break;
		case 'D':
			if (!safe_strtoull(arg, &of->delta)) {
				*errstr = "CLIENT_ERROR invalid numeric delta value";
				of->has_error = true;
			}
			break;
		case 'I':
			of->set_stale = true;
			break;
		default:
			*errstr = "CLIENT_ERROR invalid flag";
			return -1;
		}
	}
	return of->has_error ? -1 : 0;
}

/* ---- mg ----------------------------------------------------------------- */

/* Insert an empty item for a key (vivify); NULL when there is no room. */
static struct item *vivify(const char *key, size_t nkey, uint32_t hv,
			   uint32_t flags, uint32_t exptime)
{
	if (cache_store(CMD_ADD, key, nkey, hv, flags, exptime, "\r\n", 0, 0) !=
	    R_STORED)
		return NULL;
	return index_find(key, nkey, hv);
}

/*
 * Find a key for mg, cache_lock held: a readable item or NULL.  A key
 * whose bytes were lost sets *purged;
 * a synchronous origin rebuilds it, or reads a plain miss through, with
 * the lock dropped during the fetch.  A lost key that stays lost is
 * dropped from the index, counted in purge_misses, unless keep_lost.
 */
static struct item *meta_lookup(struct conn *c, const char *key, size_t nkey,
				uint32_t hv, bool keep_lost, bool *purged)
{
	bool expired;
	struct item *it = cache_lookup(key, nkey, hv, &expired);
	const struct fetched *f = conn_find_fetched(c, key, nkey);

	if (f && f->rebuilt)
		*purged = true;     /* the fetch pool rebuilt it: report P */
	if (it && cache_readable(it))
		return it;
	if (it)
		*purged = true;
	if (f && !f->none) {
		/* fetched by the first pass, evicted since: store it again */
		it = cache_fill(key, nkey, hv, f->flags, f->data + nkey, f->vlen);
		if (it)
			return it;
		it = cache_lookup(key, nkey, hv, &expired);
	} else if (origin_is_sync() && !f) {
		/* no fetch pool, or the first pass did not fetch it */
		char *val = NULL;
		uint32_t vlen = 0, flags = 0;
		uint64_t t0;
		int r;

		cache_unlock();
		r = proto_origin_fetch(key, nkey, &val, &vlen, &flags, &t0);
		if (r == 1) {
			if (*purged) {
				stats.rebuilds++;
				stats.rebuild_usec += t0;
			}
			it = cache_fill(key, nkey, hv, flags, val, vlen);
		}
		free(val);
		if (it)
			return it;
		/* the key may have changed while the lock was dropped */
		it = cache_lookup(key, nkey, hv, &expired);
		if (it && cache_readable(it))
			return it;
	}
	if (!it || it->state != ITEM_LOST)
		return NULL;
	*purged = true;
	stats.purge_misses++;
	if (keep_lost)
		return it;
	cache_drop_lost(it);
	return NULL;
}

/*
 * The return flags of a hit, in the order asked, into *pp; T, N and R
 * take effect here.  The item's metadata is read as a reader under the
 * shared lock must (the fast path below).  False when an opaque token is
 * too long.
 */
static bool meta_hit_flags(char **pp, token_t *tokens, size_t ntokens,
			   struct item *it, const struct mflags *of, uint32_t now,
			   uint32_t prev_atime, uint8_t prev_mflags, bool created,
			   bool *won, bool *ttl_set)
{
	uint8_t mflags = __atomic_load_n(&it->mflags, __ATOMIC_RELAXED);
	char *p = *pp;

	for (size_t i = 2; i < ntokens - 1; i++) {
		switch (tokens[i].value[0]) {
		case 'T':
			*ttl_set = true;
			it->exptime = of->exptime;
			break;
		case 'N':
			if (created) {
				it->exptime = of->autoviv_exptime;
				*won = true;
			}
			break;
		case 'R':
			if (!(mflags & MF_TOKEN) && !created &&
			    it->exptime != 0 && it->exptime < of->recache_time)
				*won = true;
			break;
		case 's':
			p = put_flag(p, 's');
			p = put_u64(p, it->vlen);
			break;
		case 't':
			p = put_ttl(p, item_exptime(it), now);
			break;
		case 'c':
			p = put_flag(p, 'c');
			p = put_u64(p, it->cas);
			break;
		case 'f':
			p = put_flag(p, 'f');
			p = put_u64(p, it->flags);
			break;
		case 'l':
			p = put_flag(p, 'l');
			p = put_u64(p, (uint32_t)(now - prev_atime));
			break;
		case 'h':
			p = put_flag(p, 'h');
			*p++ = prev_mflags & MF_FETCHED ? '1' : '0';
			break;
		case 'O':
			if (!put_opaque(&p, &tokens[i]))
				return false;
			break;
		case 'k':
			p = put_key(p, it->key, it->keylen, mflags & MF_BINKEY);
			break;
		}
	}
	*pp = p;
	return true;
}

/*
 * mg's fast path, under the shared lock: a hit on hot data whose flags
 * only read (no T, N or R), on an item with nothing pending (no win token,
 * stale or purge flag) and no fetch of this command, is answered here,
 * the access time and the fetched bit stored atomically as a text get's
 * fast path does.  A value in a volatile segment has its unmark claimed
 * and made after the lock is dropped.  Returns false, having sent
 * nothing, for everything else, which the exclusive path answers.
 */
static bool meta_get_fast(struct conn *c, token_t *tokens, size_t ntokens,
			  const struct mflags *of, const char *key, size_t nkey,
			  uint32_t hv)
{
	char line[META_LINE_MAX], *p = line;
	uint32_t now = clock_secs(), prev_atime, wake = SEG_NONE;
	uint8_t prev_mflags;
	struct item *it;
	bool won = false, ttl_set = false, ok = false;

	if (of->vivify || of->recache || of->new_ttl || conn_find_fetched(c, key, nkey))
		return false;
	cache_key_lock(hv);
	it = index_find(key, nkey, hv);
	if (!it || it->state != ITEM_OK || !cache_alive(it, now))
		goto out;
	prev_mflags = __atomic_load_n(&it->mflags, __ATOMIC_RELAXED);
	if (prev_mflags & (MF_TOKEN | MF_STALE | MF_PURGED))
		goto out;
	if (!store_touch_hot(it, now)) {
		wake = store_claim_wake(it);
		goto out;
	}
	if (settings.verify &&
	    cache_csum(store_ptr(it->off), it->vlen + 2) != it->csum)
		goto out;
	prev_atime = __atomic_load_n(&it->atime, __ATOMIC_RELAXED);
	if (of->value) {
		memcpy(p, "VA ", 3);
		p = put_u64(p + 3, it->vlen);
	} else {
		memcpy(p, "HD", 2);
		p += 2;
	}
	if (!meta_hit_flags(&p, tokens, ntokens, it, of, now, prev_atime,
			    prev_mflags, false, &won, &ttl_set))
		goto out;
	memcpy(p, "\r\n", 2);
	p += 2;
	evbuffer_add(c->out, line, (size_t)(p - line));
	if (of->value)
		evbuffer_add(c->out, store_ptr(it->off), (size_t)it->vlen + 2);
	if (!of->no_update) {
		if (!(prev_mflags & MF_FETCHED))
			__atomic_fetch_or(&it->mflags, MF_FETCHED, __ATOMIC_RELAXED);
		if (prev_atime != now)
			__atomic_store_n(&it->atime, now, __ATOMIC_RELAXED);
	}
	__atomic_fetch_add(&stats.cmd_get, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&stats.get_hits, 1, __ATOMIC_RELAXED);
	ok = true;
out:
	cache_key_unlock(hv);
	if (wake != SEG_NONE)
		store_wake_unlocked(wake);
	return ok;
}

static void meta_get(struct conn *c, token_t *tokens, size_t ntokens)
{
	struct mflags of = { 0 };
	const char *errstr = "CLIENT_ERROR bad command line format";
	char line[META_LINE_MAX], *p = line;
	bool created = false, won = false, ttl_set = false, purged = false;
	uint32_t hv, now = clock_secs(), prev_atime = 0;
	uint64_t prev_cas = 0;
	uint8_t prev_mflags = 0;
	struct item *it;
	const char *key;
	size_t nkey;

	if (ntokens < 3) {
		out_string(c, "ERROR");
		return;
	}
	if (tokens[1].length > KEY_MAX_LENGTH) {
		out_err(c, "CLIENT_ERROR bad command line format");
		return;
	}
	if (ntokens > MFLAG_MAX_OPT_LENGTH) {
		out_err(c, "CLIENT_ERROR options flags are too long");
		return;
	}
	if (meta_preparse(tokens, 2, &of, &errstr) != 0) {
		out_err(c, errstr);
		return;
	}
	c->noreply = of.no_reply;
	key = tokens[1].value;
	nkey = tokens[1].length;
	hv = index_hash(key, nkey);
	if (meta_get_fast(c, tokens, ntokens, &of, key, nkey, hv))
		return;

	cache_wrlock();
	{
		bool expired;
		struct item *peek = cache_lookup(key, nkey, hv, &expired);

		if (peek) {
			prev_atime = peek->atime;
			prev_mflags = peek->mflags;
			prev_cas = peek->cas;
		}
	}
	/*
	 * A lost key is kept for N only.  R acts on a value that is there,
	 * as in memcached, and a lost key is an evicted one: a miss, with no
	 * placeholder that a get would serve as an empty value nobody set.
	 */
	it = meta_lookup(c, key, nkey, hv, of.vivify, &purged);
	if (it && it->state == ITEM_OK && it->cas != prev_cas) {
		/* a new value (rebuilt, read through): nobody fetched it yet */
		prev_atime = now;
		prev_mflags = it->mflags;
	}
	if (it && it->state == ITEM_LOST) {
		/* lost, asked to vivify: one caller rebuilds */
		cache_drop_lost(it);
		it = vivify(key, nkey, hv, 0, 0);
		if (it) {
			it->mflags |= MF_PURGED;
			created = true;
			won = true;
			prev_atime = now;
			prev_mflags = 0;
		}
	} else if (!it && of.vivify) {
		it = vivify(key, nkey, hv, 0, 0);
		if (it) {
			created = true;
			prev_atime = now;
			prev_mflags = 0;
		}
	}

	if (!it)
		goto miss;
	if (of.value) {
		memcpy(p, "VA ", 3);
		p = put_u64(p + 3, it->vlen);
	} else {
		memcpy(p, "HD", 2);
		p += 2;
	}
	if (!meta_hit_flags(&p, tokens, ntokens, it, &of, now, prev_atime,
			    prev_mflags, created, &won, &ttl_set)) {
		errstr = "CLIENT_ERROR opaque token too long";
		goto error;
	}
	/* Z before X before W, as memcached: W and Z never go together */
	if (it->mflags & MF_TOKEN)
		p = put_flag(p, 'Z');
	if (it->mflags & MF_STALE) {
		p = put_flag(p, 'X');
		if (!(it->mflags & MF_TOKEN))
			won = true;
	}
	if (won) {
		p = put_flag(p, 'W');
		it->mflags |= MF_TOKEN;
	}
	if (purged || (it->mflags & MF_PURGED))
		p = put_flag(p, 'P');
	memcpy(p, "\r\n", 2);
	p += 2;
	evbuffer_add(c->out, line, (size_t)(p - line));
	if (of.value)
		evbuffer_add(c->out, store_ptr(it->off), (size_t)it->vlen + 2);
	if (!of.no_update) {
		it->mflags |= MF_FETCHED;
		it->atime = now;
	}
	if (ttl_set) {
		STAT_ADD(cmd_touch);
		STAT_ADD(touch_hits);
	} else {
		stats.cmd_get++;
		stats.get_hits++;
	}
	cache_unlock();
	return;

miss:
	stats.cmd_get++;
	stats.get_misses++;
	cache_unlock();
	memcpy(p, "EN", 2);
	p += 2;
	if (!put_opaque_key(&p, tokens, ntokens, key, nkey, of.key_binary)) {
		out_err(c, "CLIENT_ERROR opaque token too long");
		return;
	}
	if (purged)
		p = put_flag(p, 'P');
	memcpy(p, "\r\n", 2);
	p += 2;
	if (!c->noreply)
		evbuffer_add(c->out, line, (size_t)(p - line));
	return;

error:
	if (!of.locked && !of.no_update)
		it->mflags |= MF_FETCHED;   /* memcached bumped it on the lookup */
	cache_unlock();
	out_err(c, errstr);
}

/* ---- ms ----------------------------------------------------------------- */

static void meta_set(struct conn *c, token_t *tokens, size_t ntokens)
{
	struct mflags of = { 0 };
	const char *errstr = "CLIENT_ERROR bad command line format";
	enum store_cmd cmd = CMD_SET;
	bool has_error = false;
	char *p = c->meta_ret;
	int32_t vlen;

	if (ntokens < 3) {
		out_string(c, "ERROR");
		return;
	}
	if (tokens[1].length > KEY_MAX_LENGTH || ntokens == 3) {
		out_err(c, "CLIENT_ERROR bad command line format");
		return;
	}
	if (ntokens > MFLAG_MAX_OPT_LENGTH) {
		out_err(c, "CLIENT_ERROR options flags too long");
		return;
	}
	if (!safe_strtol(tokens[2].value, &vlen) || vlen < 0 ||
	    vlen > INT_MAX - 2) {
		out_err(c, "CLIENT_ERROR bad command line format");
		return;
	}
	/* from here on the value block is known, and read as data */
	if (meta_preparse(tokens, 3, &of, &errstr) != 0)
		goto error;
	c->noreply = of.no_reply;
	/* the return flags, in order; filled in when the store is done */
	for (size_t i = 2; i < ntokens - 1; i++) {
		switch (tokens[i].value[0]) {
		case 'O':
			if (!put_opaque(&p, &tokens[i])) {
				errstr = "CLIENT_ERROR opaque token too long";
				has_error = true;
			}
			break;
		case 'k':
			p = put_flag(p, 'k');
			break;
		case 'c':
			p = put_flag(p, 'c');
			break;
		}
	}
	c->meta_nret = (uint8_t)(p - c->meta_ret);
	switch (of.mode) {
	case 0:
	case 'S':
		cmd = CMD_SET;
		break;
	case 'E':
		cmd = CMD_ADD;
		break;
	case 'A':
		cmd = CMD_APPEND;
		break;
	case 'P':
		cmd = CMD_PREPEND;
		break;
	case 'R':
		cmd = CMD_REPLACE;
		break;
	default:
		errstr = "CLIENT_ERROR invalid mode for ms M token";
		goto error;
	}
	/* a cas upgrades set and replace to cas, as in memcached */
	if (of.has_cas && (cmd == CMD_SET || cmd == CMD_REPLACE))
		cmd = CMD_CAS;
	if (has_error)
		goto error;
	if (!cache_item_fits(tokens[1].length, of.client_flags,
			     (uint64_t)vlen + 2)) {
		uint32_t hv = index_hash(tokens[1].value, tokens[1].length);

		/* no stale value may outlive a failed store, in any mode */
		cache_wrlock();
		cache_delete(tokens[1].value, tokens[1].length, hv);
		cache_unlock();
		errstr = "SERVER_ERROR object too large for cache";
		goto error;
	}
	c->meta_set = true;
	c->meta_stale = of.set_stale && cmd == CMD_CAS;
	c->meta_binkey = of.key_binary;
	c->cmd = cmd;
	memcpy(c->key, tokens[1].value, tokens[1].length);
	c->nkey = tokens[1].length;
	c->flags = of.client_flags;
	c->exptime = of.exptime;          /* absolute already */
	c->cas = of.req_cas;
	c->vlen = (uint32_t)vlen;
	c->state = ST_NREAD;
	return;
error:
	out_err(c, errstr);
	c->state = ST_SWALLOW;
	c->swallow = (uint64_t)vlen + 2;
}

/* The item an ms stored: its cas for the reply, its binary-key bit. */
static void meta_stored(struct conn *c, uint32_t hv, uint64_t *cas_out)
{
	struct item *it = index_find(c->key, c->nkey, hv);

	if (it) {
		*cas_out = it->cas;
		if (c->meta_binkey)
			it->mflags |= MF_BINKEY;
	}
}

/*
 * Store an ms value, cache_lock held: memcached's do_store_item rules
 * where cache_store's differ (a cas on append/prepend; a stale store).
 * *cas_out receives the new item's cas when stored.
 */
static enum store_res meta_store(struct conn *c, uint32_t hv, const char *data,
				 uint64_t *cas_out, bool noted)
{
	bool expired;
	struct item *old = cache_lookup(c->key, c->nkey, hv, &expired);
	enum store_res r;
	struct item *it;

	if (c->cmd != CMD_SET)
		old = cache_drop_if_lost(old);   /* a lost key is absent */

	if (old && c->cas && (c->cmd == CMD_APPEND || c->cmd == CMD_PREPEND) &&
	    old->cas != c->cas)
		return R_EXISTS;
	if (old && c->meta_stale && c->cas && c->cas < old->cas) {
		/* ms I: an older value is kept, marked stale, TTL and token kept */
		uint32_t exptime = old->exptime;
		uint8_t token = old->mflags & MF_TOKEN;

		r = cache_store(CMD_SET, c->key, c->nkey, hv, c->flags, exptime,
				data, c->vlen, 0);
		if (r == R_STORED) {
			STAT_ADD(cas_hits);
			it = index_find(c->key, c->nkey, hv);
			if (it)
				it->mflags |= MF_STALE | token;
		}
	} else {
		if (!noted)
			stats_note_store(c->key, c->nkey, hv);
		r = cache_store(c->cmd, c->key, c->nkey, hv, c->flags,
				c->exptime, data, c->vlen, c->cas);
	}
	if (r == R_STORED)
		meta_stored(c, hv, cas_out);
	return r;
}

/*
 * An ms of set, add, replace or cas without I, under cache_key_lock:
 * cache_store_local, or R_RETRY for meta_store under the exclusive lock
 * (with *noted: the store was counted in stats items already).
 */
static enum store_res meta_store_local(struct conn *c, uint32_t hv,
				       const char *data, uint64_t *cas_out,
				       bool *noted)
{
	enum store_res r;

	stats_note_store(c->key, c->nkey, hv);
	*noted = true;
	r = cache_store_local(c->cmd, c->key, c->nkey, hv, c->flags,
			      c->exptime, data, c->vlen, c->cas);
	if (r == R_STORED)
		meta_stored(c, hv, cas_out);
	return r;
}

void meta_complete_nread(struct conn *c, const char *data)
{
	static const char *const codes[] = {
		[R_STORED] = "HD", [R_EXISTS] = "EX", [R_NOT_FOUND] = "NF",
		[R_NOT_STORED] = "NS", [R_TOO_LARGE] = "NS",
	};
	char line[META_LINE_MAX], *p = line;
	const char *fp, *end = c->meta_ret + c->meta_nret;
	uint64_t cas = 0;
	enum store_res r;
	uint32_t hv;
	bool local = false, noted = false;
	bool plain = !c->meta_stale && c->cmd != CMD_APPEND &&
		     c->cmd != CMD_PREPEND;

	c->state = ST_CMD;
	c->meta_set = false;
	if (!proto_nread_begin(c, data, &hv, plain ? &local : NULL)) {
		out_err(c, "CLIENT_ERROR bad data chunk");
		return;
	}
	if (local) {
		r = meta_store_local(c, hv, data, &cas, &noted);
		cache_key_unlock(hv);
		if (r == R_RETRY) {
			cache_wrlock();
			r = meta_store(c, hv, data, &cas, noted);
			cache_unlock();
		}
	} else {
		r = meta_store(c, hv, data, &cas, false);
		cache_unlock();
	}
	if (r == R_NO_MEMORY) {
		out_err(c, "SERVER_ERROR out of memory storing object");
		return;
	}
	memcpy(p, codes[r], 2);
	p += 2;
	for (fp = c->meta_ret; fp < end; fp++) {
		if (*fp == 'O') {
			*p++ = ' ';
			while (fp < end && *fp != ' ')
				*p++ = *fp++;
		} else if (*fp == 'k') {
			p = put_key(p, c->key, c->nkey, c->meta_binkey);
		} else if (*fp == 'c') {
			p = put_flag(p, 'c');
			p = put_u64(p, cas);
		}
	}
	if (r == R_STORED && settings.origin == ORIGIN_MEMCACHE &&
	    proto_write_through(c, hv, line, (size_t)(p - line)))
		return;
	memcpy(p, "\r\n", 2);
	p += 2;
	if (!(r == R_STORED && c->noreply))
		evbuffer_add(c->out, line, (size_t)(p - line));
}

/*
 * The checks md and ma share, with memcached's error line for each: too
 * few tokens, a key over the length limit, too many flags, a bad or
 * repeated flag.  Returns false when it answered the error; else the flags
 * are in *of and c->noreply is set.
 */
static bool meta_begin(struct conn *c, token_t *tokens, size_t ntokens,
		       struct mflags *of)
{
	const char *errstr = NULL;

	if (ntokens < 3) {
		out_string(c, "ERROR");
		return false;
	}
	if (tokens[1].length > KEY_MAX_LENGTH) {
		out_err(c, "CLIENT_ERROR bad command line format");
		return false;
	}
	if (ntokens > MFLAG_MAX_OPT_LENGTH) {
		out_err(c, "CLIENT_ERROR options flags too long");
		return false;
	}
	if (meta_preparse(tokens, 2, of, &errstr) != 0) {
		out_err(c, "CLIENT_ERROR invalid or duplicate flag");
		return false;
	}
	c->noreply = of->no_reply;
	return true;
}

/* ---- md ----------------------------------------------------------------- */

static void meta_delete(struct conn *c, token_t *tokens, size_t ntokens)
{
	struct mflags of = { 0 };
	char line[META_LINE_MAX], *p = line + 2;
	bool expired, skip = false, deleted = false;
	struct item *it;
	uint32_t hv;

	if (!meta_begin(c, tokens, ntokens, &of))
		return;
	if (!put_opaque_key(&p, tokens, ntokens, tokens[1].value,
			    tokens[1].length, of.key_binary)) {
		out_err(c, "CLIENT_ERROR opaque token too long");
		return;
	}
	hv = index_hash(tokens[1].value, tokens[1].length);
	rebuild_lost(c, tokens[1].value, tokens[1].length, hv);
	cache_wrlock();
	it = cache_drop_if_lost(cache_lookup(tokens[1].value, tokens[1].length,
					     hv, &expired));
	if (!it) {
		STAT_ADD(delete_misses);
		memcpy(line, "NF", 2);
	} else if (of.has_cas && it->cas != of.req_cas) {
		STAT_ADD(delete_misses);
		memcpy(line, "EX", 2);
	} else if (of.set_stale) {
		/* invalidate: keep the value, mark it stale, new cas */
		if (of.new_ttl)
			it->exptime = of.exptime;
		it->mflags = (uint8_t)((it->mflags | MF_STALE) & ~MF_TOKEN);
		it->cas = cache_new_cas();
		memcpy(line, "HD", 2);
		skip = c->noreply;
	} else {
		STAT_ADD(delete_hits);
		store_forget(it);
		deleted = true;
		memcpy(line, "HD", 2);
		skip = c->noreply;
	}
	cache_unlock();
	if (deleted && settings.origin == ORIGIN_MEMCACHE)
		upstream_delete(c, tokens[1].value, tokens[1].length);
	memcpy(p, "\r\n", 2);
	p += 2;
	if (!skip)
		evbuffer_add(c->out, line, (size_t)(p - line));
}

/* ---- ma ----------------------------------------------------------------- */

static void meta_arith(struct conn *c, token_t *tokens, size_t ntokens)
{
	struct mflags of = { .delta = 1 };
	const char *errstr = "CLIENT_ERROR bad command line format";
	char line[META_LINE_MAX], *p = line, buf[32];
	bool incr = true, expired, created = false, skip = false;
	struct item *it = NULL, *cur;
	enum delta_res r;
	const char *key;
	size_t nkey, i;
	uint32_t hv;

	if (!meta_begin(c, tokens, ntokens, &of))
		return;
	key = tokens[1].value;
	nkey = tokens[1].length;
	switch (of.mode) {
	case 0:
	case 'I':
	case '+':
		incr = true;
		break;
	case 'D':
	case '-':
		incr = false;
		break;
	default:
		out_err(c, "CLIENT_ERROR invalid mode for ma M token");
		return;
	}
	hv = index_hash(key, nkey);
	rebuild_lost(c, key, nkey, hv);
	cache_wrlock();
	cur = cache_drop_if_lost(cache_lookup(key, nkey, hv, &expired));
	if (cur && cur->state == ITEM_OK && cur->vlen > 0 && of.req_cas &&
	    cur->cas != of.req_cas) {
		memcpy(p, "EX", 2);
		p += 2;
		goto flags;
	}
	r = cache_delta(key, nkey, hv, incr, of.delta, buf);
	switch (r) {
	case D_OK:
		skip = c->noreply;
		it = index_find(key, nkey, hv);
		break;
	case D_NON_NUMERIC:
		errstr = "CLIENT_ERROR cannot increment or decrement non-numeric value";
		goto error;
	case D_NO_MEMORY:
		errstr = "SERVER_ERROR out of memory";
		goto error;
	case D_NOT_FOUND:
		if (of.vivify) {
			size_t n = (size_t)(put_u64(buf, of.initial) - buf);

			memcpy(buf + n, "\r\n", 2);
			if (cache_store(CMD_ADD, key, nkey, hv, 0, 0, buf,
					(uint32_t)n, 0) != R_STORED) {
				errstr = "SERVER_ERROR Out of memory allocating new item";
				goto error;
			}
			buf[n] = '\0';
			it = index_find(key, nkey, hv);
			created = true;
		} else {
			if (incr)
				stats.incr_misses++;
			else
				stats.decr_misses++;
			memcpy(p, "NF", 2);
			p += 2;
		}
		break;
	}
flags:
	if (it) {
		size_t vlen = strlen(buf);

		if (of.value) {
			memcpy(p, "VA ", 3);
			p = put_u64(p + 3, vlen);
		} else {
			memcpy(p, "HD", 2);
			p += 2;
		}
		for (i = 2; i < ntokens - 1; i++) {
			switch (tokens[i].value[0]) {
			case 'c':
				p = put_flag(p, 'c');
				p = put_u64(p, it->cas);
				break;
			case 't':
				p = put_ttl(p, it->exptime, clock_secs());
				break;
			case 'T':
				it->exptime = of.exptime;
				break;
			case 'N':
				if (created)
					it->exptime = of.autoviv_exptime;
				break;
			case 'O':
				if (!put_opaque(&p, &tokens[i])) {
					errstr = "CLIENT_ERROR opaque token too long";
					goto error;
				}
				break;
			case 'k':
				p = put_key(p, key, nkey, of.key_binary);
				break;
			}
		}
		if (of.value) {
			memcpy(p, "\r\n", 2);
			memcpy(p + 2, buf, vlen);
			p += 2 + vlen;
		}
	} else if (!put_opaque_key(&p, tokens, ntokens, key, nkey,
				   of.key_binary)) {
		errstr = "CLIENT_ERROR opaque token too long";
		goto error;
	}
	cache_unlock();
	memcpy(p, "\r\n", 2);
	p += 2;
	if (!skip)
		evbuffer_add(c->out, line, (size_t)(p - line));
	return;
error:
	cache_unlock();
	out_err(c, errstr);
}

/* ---- me ----------------------------------------------------------------- */

static void meta_debug(struct conn *c, token_t *tokens, size_t ntokens)
{
	char line[META_LINE_MAX], *p = line;
	const char *key = tokens[1].value;
	size_t nkey = tokens[1].length;
	struct item *it;
	bool expired;
	uint32_t hv, now = clock_secs(), atime;

	if (ntokens < 3 || tokens[1].length > KEY_MAX_LENGTH) {
		out_err(c, "CLIENT_ERROR bad command line format");
		return;
	}
	if (ntokens >= 4 && tokens[2].length == 1 && tokens[2].value[0] == 'b') {
		nkey = b64_decode(tokens[1].value, nkey, tokens[1].value);
		if (nkey == 0) {
			out_err(c, "CLIENT_ERROR bad command line format");
			return;
		}
	}
	hv = index_hash(key, nkey);
	cache_wrlock();
	it = cache_lookup(key, nkey, hv, &expired);
	atime = it ? it->atime : 0;
	if (!it || !cache_readable(it)) {
		cache_unlock();
		out_string(c, "EN");
		return;
	}
	it->atime = atime;   /* me reads without counting as an access */
	memcpy(p, "ME ", 3);
	p += 3;
	if (it->mflags & MF_BINKEY) {
		p += b64_encode(it->key, it->keylen, p);
	} else {
		memcpy(p, it->key, it->keylen);
		p += it->keylen;
	}
	size_t ntotal = mc_item_size(it);

	p += snprintf(p, (size_t)(line + sizeof(line) - p),
		      " exp=%d la=%llu cas=%llu fetch=%s cls=%u size=%lu\r\n",
		      it->exptime == 0 ? -1 : (int)(now - it->exptime),
		      (unsigned long long)(now - atime),
		      (unsigned long long)it->cas,
		      it->mflags & MF_FETCHED ? "yes" : "no",
		      mc_slab_class(ntotal), (unsigned long)ntotal);
	cache_unlock();
	evbuffer_add(c->out, line, (size_t)(p - line));
}

void meta_collect(struct conn *c, token_t *tokens, size_t ntokens)
{
	struct mflags of = { 0 };
	const char *errstr = NULL;

	/* a bad mg is refused by the second pass; the key is decoded here */
	if (ntokens < 3 || tokens[1].length > KEY_MAX_LENGTH ||
	    ntokens > MFLAG_MAX_OPT_LENGTH ||
	    meta_preparse(tokens, 2, &of, &errstr) != 0)
		return;
	proto_collect_key(c, tokens[1].value, tokens[1].length);
}

void proto_meta(struct conn *c, token_t *tokens, size_t ntokens)
{
	switch (tokens[0].value[1]) {
	case 'g':
		meta_get(c, tokens, ntokens);
		break;
	case 's':
		meta_set(c, tokens, ntokens);
		break;
	case 'd':
		meta_delete(c, tokens, ntokens);
		break;
	case 'a':
		meta_arith(c, tokens, ntokens);
		break;
	case 'e':
		meta_debug(c, tokens, ntokens);
		break;
	default:
		out_string(c, "ERROR");
		break;
	}
}
