// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz_store.c - model-based fuzzer of cached's item semantics and store
 * against a shadow map, on the fake kernel (tests/fake_kernel.c) at its
 * most hostile: purges of the oldest or any range at any moment (between
 * commands and inside the store's own marks and unmarks), marks and
 * unmarks that fail with ENOMEM.
 *
 * Each seed runs OPS random operations on a small cache (-m 1, 2 or 4 MB,
 * so eviction, cleaning, warm reuse and large objects all happen): set,
 * add, replace, append, prepend, cas, get (with an origin rebuild or a
 * drop of a lost key, as the daemon's get does), delete, touch, incr,
 * decr, flush_all, expiry, clock ticks that mark idle data volatile,
 * purges, and replies that keep pointing into the memfd (zero copy) for
 * a while, also of numbers of 2 KiB and more that incr and decr change
 * meanwhile (op_inflight, a slow reader), and many replies held while
 * other clients set (op_slow_reader, issue #41).  It checks:
 *  - every read is the exact current value of the key, or a miss;
 *  - a zero-copy reply's bytes are still the value when it is "sent";
 *  - replies held by a client that does not read never make a set fail
 *    while the budget has room beside the index;
 *  - incr and decr answer the right number, and leave it as the value,
 *    padded with spaces to the old length or of its own length;
 *  - add / replace / delete / touch / incr treat a lost key as memcached
 *    treats an evicted one;
 *  - a rebuilt key carries the origin's flags;
 *  - --verify never fires (the fake kernel never purges silently);
 *  - store_audit(): no slot that the daemon believes is not volatile is
 *    volatile in the kernel (ISVOLATILE), and the store's invariants hold;
 *  - the lost-item count never exceeds the index;
 *  - cache_memlimit (half of -m up to --memory-max, 2x -m in half the
 *    seeds) is accepted and the segment bytes fit the new budget;
 *  - expired bytes are reused (op_reuse, as memcached's t/issue_14.t):
 *    after values with a TTL expired, new keys of the same sizes fit in
 *    the segment bytes the expired ones took;
 *  - the meta protocol's mg (R30 now and then), through the protocol
 *    code: a hit is the exact value and never carries the purge flag P
 *    (there is no origin);
 *    "EN P" only for a key that holds a value in the shadow and was in
 *    the index, reported once (the key is then absent); quiet mode hides
 *    the miss either way.
 *
 *     fuzz_store [-s FIRST_SEED] [-n SEEDS] [-o OPS_PER_SEED] [-v] [-b] [-L] [-M]
 *
 * -b checks only the bytes served (no audit, no lost-key semantics),
 * -L all but the lost-key semantics.  -M runs the store of --mode
 * madvfree (private anonymous memory, MADV_FREE, a cookie per page) with
 * the kernel's side played by madvfree.c's test hooks: single pages of
 * marked segments freed at any moment, between commands and inside the
 * store's marks and unmarks, and marks that fail with ENOMEM.
 * Prints the first failure of each failing seed and "N passed, N failed"
 * (one per seed).
 */
#define _GNU_SOURCE
#include <ctype.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "cache.h"
#include "daemon.h"
#include "index.h"
#include "proto.h"
#include "proto_text.h"
#include "stats.h"
#include "store.h"
#include "madvfree.h"
#include "tests/fake_kernel.h"

#define NKEYS 160
#define MAXHELD 48
#define HELD_AT_RANDOM 8   /* held by plain gets; op_slow_reader holds more */

struct shadow {
	char *val;          /* NULL: absent (never set, deleted, flushed) */
	uint32_t len;
	uint32_t exptime;   /* absolute, 0 = never */
};

struct held {               /* a zero-copy reply not yet sent */
	const char *ptr;
	char *expect;
	uint32_t len, seg;
	int key;
};

static struct shadow sh[NKEYS];
static struct held held[MAXHELD];
static int nheld;
static int force_hold;      /* op_get: hold a zero-copy reply if it can */
static int force_number;    /* op_store: a number padded to 2 KiB and more */
static uint64_t rs;
static int verbose;
static int bytes_only;   /* -b: check only the bytes served */
static int no_lost;      /* -L: no lost-key semantics checks */
static int madvfree;     /* -M: the store of --mode madvfree */
static char failmsg[512];
static long failop;
static long op_no;

static uint64_t rnd(void)
{
	rs ^= rs << 13;
	rs ^= rs >> 7;
	rs ^= rs << 17;
	return rs;
}

static uint32_t below(uint32_t n)
{
	return (uint32_t)(rnd() % n);
}

#define FAIL(...) do { if (!failmsg[0]) { failop = op_no; \
	snprintf(failmsg, sizeof(failmsg), __VA_ARGS__); } return; } while (0)

static const char *keyname(int k, size_t *n)
{
	static char buf[16];

	*n = (size_t)snprintf(buf, sizeof(buf), "k%d", k);
	return buf;
}

static bool alive(int k)
{
	return sh[k].val &&
	       (!sh[k].exptime || sh[k].exptime > current_time);
}

static void sh_clear(int k)
{
	free(sh[k].val);
	sh[k].val = NULL;
	sh[k].len = 0;
}

static void sh_set(int k, const char *v, uint32_t len, uint32_t exptime)
{
	char *n = malloc(len + 1);

	memcpy(n, v, len);
	free(sh[k].val);
	sh[k].val = n;
	sh[k].len = len;
	sh[k].exptime = exptime;
}

/* A value of len bytes (+ "\r\n"): numeric now and then, else patterned. */
static char *make_value(uint32_t len, int k)
{
	char *v = malloc(len + 2);
	uint64_t x = rnd();

	for (uint32_t i = 0; i < len; i++) {
		x = x * 6364136223846793005ull + 1442695040888963407ull;
		v[i] = (char)('A' + (x >> 59) + (k & 7));
	}
	if (len >= 8)
		memcpy(v, "<v", 2), v[len - 1] = '>';
	memcpy(v + len, "\r\n", 2);
	return v;
}

static uint32_t value_len(void)
{
	switch (below(10)) {
	case 0:
		return 40000 + below(260000);   /* large: its own range */
	case 1:
		return 8000 + below(60000);     /* large on small -m */
	case 2:
		return 1 + below(20);
	default:
		return 50 + below(3000);        /* zero-copy sizes included */
	}
}

/* What the daemon holds for k, without changing anything. */
static struct item *peek(int k)
{
	size_t n;
	const char *key = keyname(k, &n);

	return index_find(key, n, index_hash(key, n));
}

static bool peek_lost(int k)
{
	struct item *it = peek(k);

	if (bytes_only || no_lost)
		return false;
	return it && it->state == ITEM_LOST &&
	       (!it->exptime || it->exptime > current_time);
}

static void check_bytes(int k, struct item *it, const char *what)
{
	if (!alive(k))
		FAIL("%s k%d: served a value for a key that is gone", what, k);
	if (it->vlen != sh[k].len)
		FAIL("%s k%d: length %u, expected %u", what, k, it->vlen, sh[k].len);
	if (memcmp(store_ptr(it->off), sh[k].val, sh[k].len)) {
		uint32_t i = 0;

		while (store_ptr(it->off)[i] == sh[k].val[i])
			i++;
		FAIL("%s k%d: wrong byte at %u of %u (0x%02x, expected 0x%02x)",
		     what, k, i, sh[k].len,
		     (unsigned char)store_ptr(it->off)[i],
		     (unsigned char)sh[k].val[i]);
	}
	if (memcmp(store_ptr(it->off) + it->vlen, "\r\n", 2))
		FAIL("%s k%d: value not followed by CRLF", what, k);
}

static void release_held(int i)
{
	struct held *h = &held[i];

	if (memcmp(h->ptr, h->expect, h->len)) {
		uint32_t j = 0;

		while (h->ptr[j] == h->expect[j])
			j++;
		if (!failmsg[0]) {
			failop = op_no;
			snprintf(failmsg, sizeof(failmsg),
				 "zero-copy reply of k%d: byte %u of %u changed before it was sent",
				 h->key, j, h->len);
		}
	}
	store_unref_cb(NULL, 0, (void *)(uintptr_t)h->seg);
	free(h->expect);
	held[i] = held[--nheld];
}

static void op_get(int k)
{
	size_t n;
	const char *key = keyname(k, &n);
	uint32_t hv = index_hash(key, n);
	bool expired;
	struct item *it = index_find(key, n, hv);

	/*
	 * As the daemon's fast path: a get of a value in a volatile segment
	 * claims the segment's wake-up and unmarks it without the lock, with
	 * a purge possible before that call; sometimes the get then never
	 * comes back for it (its key went away meanwhile), and the answer
	 * waits for the next unmark of the segment or the next tick.
	 */
	if (it && below(2)) {
		uint32_t s = store_claim_wake(it);

		if (s != SEG_NONE) {
			if (below(4) == 0) {
				if (madvfree)
					madv_discard_random(rnd());
				else
					fake_purge_random(rnd());
			}
			store_wake_unlocked(s);
			if (below(4) == 0)
				return;
		}
	}
	it = cache_lookup(key, n, hv, &expired);

	if (it && cache_readable(it)) {
		check_bytes(k, it, "get");
		if (failmsg[0])
			return;
		/* held as the daemon's reply holds it (store_ref_value) */
		if (nheld < (force_hold ? MAXHELD : HELD_AT_RANDOM) &&
		    (force_hold || below(3) == 0) && store_ref_value(it)) {
			struct held *h = &held[nheld++];

			h->ptr = store_ptr(it->off);
			h->len = it->vlen + 2;
			h->expect = malloc(h->len);
			memcpy(h->expect, h->ptr, h->len);
			h->seg = it->seg;
			h->key = k;
		}
		return;
	}
	if (it && it->state == ITEM_LOST) {
		/* the origin rebuilds it (the shadow is the origin), or a miss */
		if (alive(k) && below(16) == 0) {
			/* the origin's value does not fit: the rebuild fails */
			uint32_t big = (uint32_t)settings.maxbytes + 4096;
			char *v = calloc(1, big + 2);

			memcpy(v + big, "\r\n", 2);
			if (cache_fill(key, n, hv, 0, v, big))
				FAIL("rebuild k%d: a value larger than -m was stored", k);
			free(v);
			sh_clear(k);
			return;
		}
		if (alive(k) && below(2)) {
			/* with the origin's flags, not the lost value's (0) */
			uint32_t flags = 1 + below(1000);
			struct item *f;
			char *v = malloc(sh[k].len + 2);

			memcpy(v, sh[k].val, sh[k].len);
			memcpy(v + sh[k].len, "\r\n", 2);
			f = cache_fill(key, n, hv, flags, v, sh[k].len);
			free(v);
			if (f && f->flags != flags)
				FAIL("rebuild k%d: flags %u, the origin's %u", k,
				     f->flags, flags);
			if (f)
				check_bytes(k, f, "rebuild");
			return;
		}
		stats.purge_misses++;
		cache_drop_lost(it);
	}
}

/* One protocol exchange through a conn without a socket. */
static char *session(const char *in, size_t n, size_t *outlen)
{
	static char out[(2 << 20) + 256];
	struct conn c;
	size_t len;

	memset(&c, 0, sizeof(c));
	c.fd = -1;
	conn_init_buffers(&c);
	conn_rbuf_reserve(&c, n);
	memcpy(c.rbuf + c.rend, in, n);
	c.rend += n;
	proto_process(&c);
	len = evbuffer_get_length(c.out);
	if (len >= sizeof(out))
		len = sizeof(out) - 1;
	evbuffer_remove(c.out, out, len);
	out[len] = 0;
	conn_free_buffers(&c);
	*outlen = len;
	return out;
}

static long mg_hits, mg_purged, mg_misses, budget_changes;
static uint64_t m0;   /* -m of the seed */

/*
 * mg KEY v [R30] [q]: the purge flag P against the shadow.  R acts only on
 * a value that is there, as in memcached: on a lost key it is a miss (EN
 * P), never an empty placeholder that a get would serve.
 */
static void op_mg(int k)
{
	size_t n, rlen;
	const char *key = keyname(k, &n);
	bool quiet = below(4) == 0, indexed = peek(k) != NULL;
	bool lost = peek_lost(k) && alive(k);
	char cmd[64], *r;
	int len = snprintf(cmd, sizeof(cmd), "mg %.*s v%s%s\r\n%s", (int)n, key,
			   below(4) ? "" : " R30", quiet ? " q" : "",
			   quiet ? "mn\r\n" : "");

	r = session(cmd, (size_t)len, &rlen);
	if (!strncmp(r, "VA ", 3)) {
		char *eol = strstr(r, "\r\n");
		unsigned long vlen = strtoul(r + 3, NULL, 10);

		if (!alive(k))
			FAIL("mg k%d: a hit for a key that is gone", k);
		if (!eol || strstr(r, " P\r\n") == eol - 2)
			FAIL("mg k%d: a hit with P without an origin: %.40s", k, r);
		if (vlen != sh[k].len || rlen < (size_t)(eol + 2 - r) + vlen + 2 ||
		    memcmp(eol + 2, sh[k].val, sh[k].len))
			FAIL("mg k%d: wrong value (length %lu, expected %u)", k, vlen,
			     sh[k].len);
		mg_hits++;
		return;
	}
	if (!strcmp(r, "EN P\r\n")) {
		if (!indexed || !alive(k))
			FAIL("mg k%d: EN P for a key that %s", k,
			     indexed ? "is gone" : "was not in the index");
		sh_clear(k);
		len = snprintf(cmd, sizeof(cmd), "mg %.*s v\r\n", (int)n, key);
		r = session(cmd, (size_t)len, &rlen);
		if (strcmp(r, "EN\r\n"))
			FAIL("mg k%d: after EN P, %.40s", k, r);
		mg_purged++;
		return;
	}
	if (!strcmp(r, quiet ? "MN\r\n" : "EN\r\n")) {
		if (lost && !quiet)
			FAIL("mg k%d: a key known to be lost answered EN without P", k);
		sh_clear(k);   /* evicted or lost: the key is absent now */
		mg_misses++;
		return;
	}
	FAIL("mg k%d: unexpected reply %.60s", k, r);
}

/* Commands the key-local path completed (cache_store_local and co.). */
static uint64_t local_done;

static void op_store(int k, enum store_cmd cmd)
{
	size_t n;
	const char *key = keyname(k, &n);
	uint32_t hv = index_hash(key, n);
	uint32_t len = value_len(), exptime = 0;
	char *v;
	enum store_res r;
	bool was_alive = alive(k), lost = peek_lost(k);
	struct item *before = peek(k);
	uint64_t cas = 0;

	if (below(8) == 0)
		exptime = current_time + 1 + below(20);
	if (cmd == CMD_APPEND || cmd == CMD_PREPEND)
		len = 1 + below(200);
	if (force_number || below(6) == 0) {
		/*
		 * a number, sometimes padded to 32 bytes and more, sometimes
		 * to 2 KiB and more: replies of those point into the memfd
		 * (op_get holds some), and incr must not rewrite them there
		 */
		int pad = force_number ? (below(2) ? 2046 + (int)below(3000) :
					  70000 + (int)below(50000)) :
			  below(3) ? 0 : below(2) ? (int)below(60) :
			  2046 + (int)below(3000);

		v = malloc((size_t)pad + 24);
		len = (uint32_t)sprintf(v, below(2) ? "%0*u" : "%-*u", pad,
					(unsigned)below(1000000));
		memcpy(v + len, "\r\n", 2);
	} else {
		v = make_value(len, k);
	}
	if (cmd == CMD_CAS)
		cas = before ? (below(4) ? before->cas : before->cas + 1) : 1;
	r = R_RETRY;
	if (below(2)) {   /* the key-local path first, as a set from a worker */
		r = cache_store_local(cmd, key, n, hv, 0, exptime, v, len, cas);
		local_done += r != R_RETRY;
	}
	if (r == R_RETRY)
		r = cache_store(cmd, key, n, hv, 0, exptime, v, len, cas);
	switch (cmd) {
	case CMD_SET:
		if (r == R_STORED)
			sh_set(k, v, len, exptime);
		else
			sh_clear(k);
		break;
	case CMD_ADD:
		if (r == R_STORED) {
			sh_set(k, v, len, exptime);
		} else if (r == R_NOT_STORED) {
			if (!was_alive && !bytes_only) {
				free(v);
				FAIL("add k%d: NOT_STORED for a key that is gone", k);
			}
			if (lost) {
				free(v);
				FAIL("add k%d: NOT_STORED for a lost key (memcached stores after an eviction)", k);
			}
		}
		break;
	case CMD_REPLACE:
	case CMD_CAS:
		if (r == R_STORED) {
			if (!was_alive || lost) {
				free(v);
				FAIL("%s k%d: STORED over a key that is gone or lost",
				     cmd == CMD_CAS ? "cas" : "replace", k);
			}
			sh_set(k, v, len, exptime);
		} else if (r == R_NO_MEMORY || r == R_TOO_LARGE) {
			sh_clear(k);
		}
		break;
	case CMD_APPEND:
	case CMD_PREPEND:
		if (r == R_STORED) {
			char *j;

			if (!was_alive || lost) {
				free(v);
				FAIL("append/prepend k%d: STORED on a key that is gone or lost", k);
			}
			j = malloc(sh[k].len + len + 1);
			if (cmd == CMD_APPEND) {
				memcpy(j, sh[k].val, sh[k].len);
				memcpy(j + sh[k].len, v, len);
			} else {
				memcpy(j, v, len);
				memcpy(j + len, sh[k].val, sh[k].len);
			}
			sh_set(k, j, sh[k].len + len, sh[k].exptime);
			free(j);
		} else if (r == R_NO_MEMORY) {
			sh_clear(k);
		}
		break;
	}
	free(v);
}

static void op_delete(int k)
{
	size_t n;
	const char *key = keyname(k, &n);
	bool lost = peek_lost(k), was_alive = alive(k);
	int d = below(2) ? cache_delete_local(key, n, index_hash(key, n)) : -1;
	bool found;

	local_done += d >= 0;
	found = d < 0 ? cache_delete(key, n, index_hash(key, n)) : d > 0;

	sh_clear(k);
	if (found && !was_alive)
		FAIL("delete k%d: DELETED for a key that is gone", k);
	if (found && lost)
		FAIL("delete k%d: DELETED for a lost key (memcached: NOT_FOUND after an eviction)", k);
}

static void op_touch(int k)
{
	size_t n;
	const char *key = keyname(k, &n);
	bool lost = peek_lost(k), was_alive = alive(k);
	uint32_t exptime = below(3) ? 0 : current_time + 1 + below(20);
	int d = below(2) ? cache_touch_local(key, n, index_hash(key, n), exptime) : -1;
	bool found;

	local_done += d >= 0;
	found = d < 0 ? cache_touch(key, n, index_hash(key, n), exptime) : d > 0;

	if (found && (!was_alive || lost))
		FAIL("touch k%d: TOUCHED a key that is gone or lost", k);
	if (found)
		sh[k].exptime = exptime;
}

static void op_delta(int k, bool incr)
{
	size_t n;
	const char *key = keyname(k, &n);
	bool lost = peek_lost(k), was_alive = alive(k);
	uint64_t delta = below(4) ? below(100) : rnd(), v, e;
	char buf[32], *numv, *end;
	bool parsed;
	enum delta_res r = cache_delta(key, n, index_hash(key, n), incr, delta, buf);
	struct item *it;
	uint32_t l;

	if (r == D_NOT_FOUND || r == D_NO_MEMORY) {
		if (r == D_NO_MEMORY)
			sh_clear(k);
		return;
	}
	if (!was_alive || lost)
		FAIL("incr/decr k%d: answered for a key that is gone or lost", k);
	/* memcached's safe_strtoull over the whole value, whatever its length */
	numv = malloc(sh[k].len + 1);
	memcpy(numv, sh[k].val, sh[k].len);
	numv[sh[k].len] = 0;
	errno = 0;
	v = strtoull(numv, &end, 10);
	parsed = sh[k].len && errno != ERANGE && end != numv &&
		 (!*end || isspace((unsigned char)*end)) &&
		 !((long long)v < 0 && memchr(numv, '-', (size_t)(end - numv)));
	free(numv);
	if (r == D_NON_NUMERIC) {
		if (parsed)
			FAIL("incr/decr k%d: NON_NUMERIC for a number of %u bytes", k,
			     sh[k].len);
		return;
	}
	if (!parsed)
		FAIL("incr/decr k%d: changed a non-numeric value", k);
	e = incr ? v + delta : (delta > v ? 0 : v - delta);
	if (strtoull(buf, NULL, 10) != e)
		FAIL("incr/decr k%d: %s, expected %llu", k, buf,
		     (unsigned long long)e);
	l = (uint32_t)strlen(buf);
	/*
	 * As memcached: a result that fits is written over the old number,
	 * padded with spaces, unless a reply in flight may still point at the
	 * old bytes; then (and when it does not fit) it is a new value of
	 * its own length.  Either is right; which one, the daemon says.
	 */
	it = peek(k);
	if (l <= sh[k].len && it && it->vlen == sh[k].len) {
		memcpy(sh[k].val, buf, l);
		memset(sh[k].val + l, ' ', sh[k].len - l);
	} else {
		sh_set(k, buf, l, sh[k].exptime);
	}
	if (!it || it->state != ITEM_OK)
		FAIL("incr/decr k%d: no value after it answered", k);
	check_bytes(k, it, "incr/decr");
}

/*
 * A slow reader: a number of 2 KiB and more is stored, a get's reply of it
 * is held (zero copy, as the replies a reader with a small receive buffer
 * leaves queued), and then another client changes it with incr and decr.
 * The held reply must keep its bytes (release_held checks them later),
 * and every result must be right (op_delta).
 */
static void op_inflight(int k)
{
	force_number = 1;
	op_store(k, CMD_SET);
	force_number = 0;
	force_hold = 1;
	op_get(k);
	force_hold = 0;
	for (uint32_t i = 1 + below(3); i && !failmsg[0]; i--)
		op_delta(k, below(2));
}

/*
 * A slow reader (issue #41): a client asks for values all over the store
 * and does not read, so the replies the daemon sends from the memfd
 * (store_ref_value: large objects, and values of shared segments while
 * replies hold fewer than a quarter of the budget's) stay held, up to
 * MAXHELD; then other clients set small values of new contents.  While
 * the budget has room beside the index (four segments) and the slots
 * that held replies and quarantine keep leave one free, every set must
 * be STORED: a held reply keeps its own bytes, not the budget.  Every
 * reference into a shared segment used to pin all of it, charged, and
 * with the budget pinned every set failed with SERVER_ERROR out of
 * memory.
 */
static long slow_sets, slow_held;
static void audit(void);

static void op_slow_reader(void)
{
	uint32_t gets = 8 + below(64), sets = 10 + below(100);

	force_hold = 1;
	for (uint32_t i = 0; i < gets && !failmsg[0]; i++)
		op_get((int)below(NKEYS));
	force_hold = 0;
	slow_held += nheld;
	for (uint32_t i = 0; i < sets && !failmsg[0]; i++) {
		int k = (int)below(NKEYS);
		size_t n;
		const char *key = keyname(k, &n);
		uint32_t len = 50 + below(3000);
		char *v = make_value(len, k);
		struct store_stats st;
		enum store_res r;
		uint64_t b = settings.maxbytes, slots;

		store_get_stats(&st);
		slots = st.zombie_bytes / st.seg_size + 1 + st.quarantined;
		r = cache_store(CMD_SET, key, n, index_hash(key, n), 0, 0, v, len, 0);
		if (r == R_STORED) {
			sh_set(k, v, len, 0);
			slow_sets++;
		} else {
			sh_clear(k);
		}
		free(v);
		if (r != R_STORED && b > index_mem_bytes() + 4 * st.seg_size &&
		    slots * st.seg_size <= 2 * b)
			FAIL("slow reader: a set of %u bytes failed (%d) with %d replies "
			     "held (%llu bytes), budget %llu, index %llu", len, (int)r,
			     nheld, (unsigned long long)st.zombie_bytes,
			     (unsigned long long)b,
			     (unsigned long long)index_mem_bytes());
		if (!failmsg[0] && below(8) == 0)
			audit();
	}
}

/*
 * Expiry reuse, as memcached's t/issue_14.t: after flush_all, a round of
 * small values with a TTL, the clock past their expiry (ticks now and
 * then, so their segments may be sealed, marked volatile and purged),
 * then a round of new keys of the same sizes in the same order.  The
 * second round must fit in the segment bytes the first took: the expired
 * bytes are reused, not kept beside the new ones.  When the first round
 * fit in one segment the store must stay at that one segment; past one,
 * it may take one more (the dead part of the segment that was active when
 * the second round began).  No key of the second round may be evicted.
 */
static long reuse_rounds, reuse_multi;

static void op_reuse(void)
{
	struct store_stats st;
	uint32_t lens[NKEYS / 2], maxexp = 0, m = 4 + below(NKEYS / 2 - 4);
	uint64_t target, r1 = 0, u1 = 0, limit = 0, each;
	/* the budget left beside the index (its bucket array alone may take
	 * most of a budget that cache_memlimit halved) */
	uint64_t room = settings.maxbytes > index_mem_bytes() ?
			settings.maxbytes - index_mem_bytes() : 0;

	store_get_stats(&st);
	/* both rounds, their end-of-segment waste and one segment more */
	room = room > 3 * st.seg_size ? (room - 3 * st.seg_size) / 2 : 0;
	if (room < st.seg_size / 8)
		return;
	while (nheld)
		release_held(0);
	cache_flush(0);
	for (int i = 0; i < NKEYS; i++)
		sh_clear(i);
	store_get_stats(&st);
	target = st.seg_size / 8 + below((uint32_t)(3 * st.seg_size));
	if (target > room)
		target = room;
	each = 2 * target / m;
	if (each > st.seg_size / 4 - 2)
		each = st.seg_size / 4 - 2;
	for (uint32_t i = 0; i < m; i++) {
		lens[i] = 1 + below((uint32_t)each);
		r1 += (lens[i] + 2 + 7) / 8 * 8;
	}
	for (int round = 0; round < 2; round++) {
		for (uint32_t i = 0; i < m; i++) {
			int k = (int)(round * m + i);
			size_t n;
			const char *key = keyname(k, &n);
			uint32_t exptime = round ? 0 : current_time + 1 + below(4);
			char *v = make_value(lens[i], k);

			if (cache_store(CMD_SET, key, n, index_hash(key, n), 0,
					exptime, v, lens[i], 0) != R_STORED) {
				free(v);
				FAIL("reuse: set k%d (%u bytes) refused", k, lens[i]);
			}
			sh_set(k, v, lens[i], exptime);
			free(v);
			if (exptime > maxexp)
				maxexp = exptime;
			store_get_stats(&st);
			if (round && st.used_bytes > limit)
				FAIL("reuse: %u values with a TTL took %llu segment bytes; after they expired, %u new ones of the same sizes take %llu",
				     m, (unsigned long long)u1, i + 1,
				     (unsigned long long)st.used_bytes);
		}
		if (round)
			break;
		store_get_stats(&st);
		u1 = st.used_bytes;
		limit = r1 <= st.seg_size ? u1 : u1 + st.seg_size;
		while (current_time <= maxexp) {
			current_time++;
			if (below(2))
				store_tick(current_time, (uint32_t)settings.idle_secs);
		}
	}
	for (uint32_t i = 0; i < m; i++) {
		struct item *it = peek((int)(m + i));

		if (!it || it->state != ITEM_OK || it->seg == SEG_NONE)
			FAIL("reuse: k%u evicted or lost", m + i);
		check_bytes((int)(m + i), it, "reuse");
		if (failmsg[0])
			return;
	}
	reuse_rounds++;
	reuse_multi += r1 > st.seg_size;
}

/*
 * The tick's marks: a step claims them and the daemon's tick makes them
 * after it dropped the lock.  Here they are made at a random later moment
 * (other commands, purges and failures between), at the latest when a
 * command waits for one (store_wait_hook) or before the next step.
 */
static struct store_marks fz_marks;
static uint32_t tick_cursor;

static void make_marks(void)
{
	if (fz_marks.made < fz_marks.n)
		store_marks_unlocked(&fz_marks);
}

static bool tick_step(void)
{
	make_marks();
	return store_tick_step(current_time, (uint32_t)settings.idle_secs, &tick_cursor,
			       1 + below(3), &fz_marks);
}

/* Everything the daemon serves must be right; run now and then. */
static void audit(void)
{
	struct store_stats st;
	long bad = bytes_only ? 0 : store_audit();

	if (bad)
		FAIL("store_audit: %ld inconsistencies", bad);
	store_get_stats(&st);
	if (st.lost_items > index_count())
		FAIL("lost_items %llu > items %llu",
		     (unsigned long long)st.lost_items,
		     (unsigned long long)index_count());
	if (stats.verify_errors)
		FAIL("--verify caught %llu corrupted values",
		     (unsigned long long)stats.verify_errors);
}

static int run_seed(uint64_t seed, long ops)
{
	static const uint64_t mbs[] = { 1, 2, 4 };

	rs = seed * 0x9e3779b97f4a7c15ull + 1;
	memset(&settings, 0, sizeof(settings));
	memset(&stats, 0, sizeof(stats));
	settings.maxbytes = mbs[below(3)] << 20;
	m0 = settings.maxbytes;
	settings.memory_max = below(2) ? 2 * m0 : 0;   /* --memory-max */
	settings.item_size_max = 1 << 20;
	if (settings.item_size_max > settings.maxbytes)
		settings.item_size_max = settings.maxbytes;
	settings.out_max = 64 << 20;
	settings.in_max = 8 << 20;
	settings.verify = below(2);
	settings.idle_secs = 1 + below(8);
	current_time = process_started = 1000000000;
	fake_reset();
	fake_chaos(below(4) ? 30 + below(100) : 0, below(2) ? below(150) : 0,
		   below(4) ? 50 + below(300) : 0, rnd());
	if (madvfree)
		madv_chaos(below(4) ? 30 + below(200) : 0, below(2) ? below(150) : 0, rnd());
	failmsg[0] = 0;
	nheld = 0;
	if (cache_init(settings.maxbytes, true) < 0) {
		printf("seed %llu: cache_init failed\n", (unsigned long long)seed);
		return 1;
	}
	/*
	 * Half of the ticks run in steps of one to three marks, with other
	 * commands between the steps, as the daemon lets gets and sets in
	 * between the steps of a tick (it drops cache_lock).
	 */
	bool ticking = false;

	memset(&fz_marks, 0, sizeof(fz_marks));
	tick_cursor = 0;
	store_wait_hook = make_marks;

	for (op_no = 0; op_no < ops && !failmsg[0]; op_no++) {
		int k = (int)below(NKEYS);
		uint32_t c = below(1000);

		if (ticking && below(3) == 0) {
			ticking = tick_step();
			continue;
		}
		if (fz_marks.made < fz_marks.n && below(4) == 0) {
			make_marks();
			continue;
		}
		/* the punches of released segments: as the daemon's cache_unlock
		 * makes them, now and then (else an allocation makes them) */
		if (below(16) == 0)
			store_punch_pending();
		if (c < 250)
			op_get(k);
		else if (c < 450)
			op_store(k, CMD_SET);
		else if (c < 500)
			op_store(k, CMD_ADD);
		else if (c < 540)
			op_store(k, CMD_REPLACE);
		else if (c < 570)
			op_store(k, below(2) ? CMD_APPEND : CMD_PREPEND);
		else if (c < 590)
			op_store(k, CMD_CAS);
		else if (c < 660)
			op_delete(k);
		else if (c < 690)
			op_touch(k);
		else if (c < 730)
			op_delta(k, below(2));
		else if (c < 733) {
			cache_flush(0);
			for (int i = 0; i < NKEYS; i++)
				sh_clear(i);
		} else if (c < 800) {
			while (ticking)   /* the daemon's ticks do not overlap */
				ticking = tick_step();
			current_time += below(4) ? 1 : 1 + below(15);
			if (below(2)) {
				store_tick(current_time, (uint32_t)settings.idle_secs);
			} else {
				tick_cursor = 0;
				ticking = tick_step();
			}
		} else if (c < 840) {
			if (madvfree)
				madv_discard_random(rnd());
			else
				fake_purge_oldest();
		} else if (c < 860) {
			if (madvfree)
				madv_discard_random(rnd());
			else
				fake_purge_random(rnd());
		} else if (c < 863) {
			if (madvfree)
				madv_discard_all();
			else
				fake_purge_all();
		} else if (c < 866) {
			/* cache_memlimit: shrink to 1/2..1 of -m, or back, or
			 * grow up to --memory-max */
			uint64_t top = settings.memory_max ? settings.memory_max : m0;
			uint64_t b = below(3) ? m0 / 2 + below((uint32_t)(top - m0 / 2)) + 1 : top;

			if (store_set_budget(b) != 0 && !failmsg[0]) {
				failop = op_no;
				snprintf(failmsg, sizeof(failmsg),
					 "store_set_budget(%llu) refused (-m %llu)",
					 (unsigned long long)b, (unsigned long long)m0);
			}
			settings.maxbytes = b;
			budget_changes++;
			/* the memory is given back (replies in flight aside) */
			struct store_stats st;

			store_get_stats(&st);
			if (!nheld && st.used_bytes > b && !failmsg[0]) {
				failop = op_no;
				snprintf(failmsg, sizeof(failmsg),
					 "cache_memlimit %llu: %llu segment bytes kept",
					 (unsigned long long)b,
					 (unsigned long long)st.used_bytes);
			}
		} else if (c < 900) {
			if (nheld)
				release_held((int)below((uint32_t)nheld));
		} else if (c < 940) {
			op_mg(k);
		} else if (c < 942) {
			while (ticking)   /* op_reuse ticks: ticks do not overlap */
				ticking = tick_step();
			op_reuse();
		} else if (c < 952) {
			op_inflight(k);
		} else if (c < 955) {
			op_slow_reader();
		} else {
			/* a read of a key that goes volatile soon, then pressure */
			op_get(k);
		}
		if (!failmsg[0])
			audit();
	}
	while (nheld)
		release_held(0);
	make_marks();
	store_marks_settle(&fz_marks);
	cache_flush(0);
	store_wait_hook = NULL;
	store_destroy();
	for (int i = 0; i < NKEYS; i++)
		sh_clear(i);
	if (failmsg[0]) {
		printf("FAIL seed %llu at op %ld: %s\n", (unsigned long long)seed,
		       failop, failmsg);
		return 1;
	}
	if (verbose)
		printf("ok seed %llu: %llu purged ranges, %llu purged objects, %llu evictions, %llu unmarks (%llu failed), %llu marks (%llu failed)\n",
		       (unsigned long long)seed,
		       (unsigned long long)stats.purged_ranges,
		       (unsigned long long)stats.purged_objects,
		       (unsigned long long)stats.evictions,
		       (unsigned long long)stats.unmarks,
		       (unsigned long long)stats.unmark_failures,
		       (unsigned long long)stats.marks,
		       (unsigned long long)stats.mark_failures);
	return 0;
}

int main(int argc, char **argv)
{
	uint64_t first = 1;
	long seeds = 50, ops = 4000;
	int opt, pass = 0, fail = 0;

	log_silence();
	while ((opt = getopt(argc, argv, "s:n:o:vbLM")) != -1) {
		switch (opt) {
		case 's':
			first = strtoull(optarg, NULL, 0);
			break;
		case 'n':
			seeds = strtol(optarg, NULL, 0);
			break;
		case 'o':
			ops = strtol(optarg, NULL, 0);
			break;
		case 'v':
			verbose = 1;
			break;
		case 'b':
			bytes_only = 1;
			break;
		case 'L':
			no_lost = 1;
			break;
		case 'M':
			madvfree = 1;
			store_use_madvfree();
			break;
		default:
			fprintf(stderr, "usage: %s [-s FIRST_SEED] [-n SEEDS] [-o OPS] [-v] [-b] [-L] [-M]\n",
				argv[0]);
			return 64;
		}
	}
	for (long i = 0; i < seeds; i++) {
		if (run_seed(first + (uint64_t)i, ops))
			fail++;
		else
			pass++;
	}
	printf("mg: %ld hits, %ld purged misses (EN P), %ld other misses; %ld budget changes\n",
	       mg_hits, mg_purged, mg_misses, budget_changes);
	printf("expiry reuse: %ld rounds, %ld past one segment\n",
	       reuse_rounds, reuse_multi);
	printf("key-local path: %llu commands completed\n",
	       (unsigned long long)local_done);
	printf("slow readers: %ld sets stored beside %ld replies held\n",
	       slow_sets, slow_held);
	if (seeds * ops >= 10000 && !local_done) {
		printf("FAIL the key-local path never completed a command\n");
		fail++;
	}
	printf("%d passed, %d failed\n", pass, fail);
	return fail ? 1 : 0;
}
