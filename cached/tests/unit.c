// SPDX-License-Identifier: GPL-2.0-only
/*
 * unit.c - unit tests of index, store (with simulated purges), item
 * semantics and the protocol parser.  Prints "ok"/"not ok" per check and
 * exits non-zero on any failure.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <pthread.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include "cache.h"
#include "conn.h"
#include "daemon.h"
#include "index.h"
#include "origin.h"
#include "proto.h"
#include "proto_text.h"
#include "psi.h"
#include "stats.h"
#include "store.h"
#include "tests/fake_kernel.h"

static int failures, checks;

#define CHECK(cond, ...) do { checks++; if (cond) { } else { failures++; \
	printf("not ok - %s:%d: ", __FILE__, __LINE__); printf(__VA_ARGS__); printf("\n"); } } while (0)

/* The kernel's volatile ranges: tests/fake_kernel.c. */
#define nfr fake_nranges()
#define purge_all fake_purge_all

static void setup(uint64_t mb)
{
	memset(&settings, 0, sizeof(settings));
	memset(&stats, 0, sizeof(stats));
	settings.maxbytes = mb << 20;
	settings.item_size_max = 1 << 20;
	settings.out_max = 64 << 20;
	settings.in_max = 8 << 20;
	settings.verify = true;
	settings.idle_secs = 10;
	current_time = process_started = 1000000000;
	fake_reset();
	fake_chaos(0, 0, 0, 1);
	CHECK(cache_init(settings.maxbytes, true) == 0, "cache_init");
}

static void teardown(void)
{
	cache_flush(0);
	store_destroy();
}

static struct item *get(const char *k)
{
	bool exp;
	struct item *it = cache_lookup(k, strlen(k), index_hash(k, strlen(k)), &exp);

	return it;
}

static enum store_res put(enum store_cmd cmd, const char *k, const char *v)
{
	size_t n = strlen(v);
	char *buf = malloc(n + 2);
	enum store_res r;

	memcpy(buf, v, n);
	memcpy(buf + n, "\r\n", 2);
	r = cache_store(cmd, k, strlen(k), index_hash(k, strlen(k)), 0, 0,
			buf, (uint32_t)n, 0);
	free(buf);
	return r;
}

static int value_is(struct item *it, const char *v)
{
	return it && cache_readable(it) && it->vlen == strlen(v) &&
	       !memcmp(store_ptr(it->off), v, it->vlen) &&
	       !memcmp(store_ptr(it->off) + it->vlen, "\r\n", 2);
}

struct walk_count {
	unsigned char *seen;      /* per k%d key */
	unsigned int new_seen;    /* n%d keys */
};

static void walk_counter(struct item *it, void *arg)
{
	struct walk_count *wc = arg;

	int n = 0;

	if (it->key[0] != 'k') {
		wc->new_seen++;
		return;
	}
	for (int i = 1; i < it->keylen; i++)     /* key[] has no NUL */
		n = n * 10 + it->key[i] - '0';
	wc->seen[n]++;
}

static void test_index(void)
{
	char key[32];

	CHECK(index_init(4) == 0, "index_init");
	for (int i = 0; i < 10000; i++) {
		int n = sprintf(key, "k%d", i);
		struct item *it = item_new(key, (size_t)n, index_hash(key, (size_t)n));

		index_insert(it);
	}
	CHECK(index_count() == 10000, "count %llu", (unsigned long long)index_count());
	int found = 0;
	for (int i = 0; i < 10000; i++) {
		int n = sprintf(key, "k%d", i);

		found += index_find(key, (size_t)n, index_hash(key, (size_t)n)) != NULL;
	}
	CHECK(found == 10000, "found %d", found);
	CHECK(!index_find("nope", 4, index_hash("nope", 4)), "absent key");
	for (int i = 0; i < 10000; i += 2) {
		int n = sprintf(key, "k%d", i);
		struct item *it = index_find(key, (size_t)n, index_hash(key, (size_t)n));

		index_remove(it);
		free(it);
	}
	CHECK(index_count() == 5000, "after remove");
	CHECK(!index_find("k2", 2, index_hash("k2", 2)), "removed gone");
	CHECK(index_find("k3", 2, index_hash("k3", 2)) != NULL, "kept");

	/*
	 * A stepped walk while the table doubles twice between steps: each
	 * of the 5,000 items present throughout is seen exactly once.
	 */
	static unsigned char seen[10000];
	struct walk_count wc = { .seen = seen };
	uint64_t cursor = 0;
	unsigned int steps = 0, added = 0;
	unsigned int hp0 = index_hashpower();

	memset(seen, 0, sizeof(seen));
	while (!index_walk(&cursor, 7, walk_counter, &wc)) {
		steps++;
		for (int j = 0; j < 40; j++) {
			int n = sprintf(key, "n%u", added++);

			index_insert(item_new(key, (size_t)n, index_hash(key, (size_t)n)));
		}
	}
	int once = 0, other = 0;
	for (int i = 0; i < 10000; i++) {
		if (i % 2 && seen[i] == 1)
			once++;
		else if (seen[i])
			other++;
	}
	CHECK(once == 5000 && other == 0 && wc.new_seen <= added,
	      "stepped walk: %d of 5000 seen once, %d wrong, %u of %u new seen", once, other,
	      wc.new_seen, added);
	CHECK(steps > 500 && index_hashpower() >= hp0 + 2,
	      "the walk took %u steps over %u doublings", steps, index_hashpower() - hp0);
	printf("ok - index\n");
}

/* The fuzzer's shadow of the index: which keys are in it, and walk marks. */
#define FZ_KEYS 60000
struct fz {
	struct item *it[FZ_KEYS];       /* NULL: not in the index */
	unsigned char seen[FZ_KEYS];    /* times the walk under way saw it */
	unsigned char steady[FZ_KEYS];  /* present from the walk's start on */
	unsigned int stray;             /* items seen that the shadow lacks */
};

static unsigned int fz_num(const struct item *it)
{
	unsigned int n = 0;

	for (int i = 1; i < it->keylen; i++)
		n = n * 10 + (unsigned int)(it->key[i] - '0');
	return n;
}

static void fz_seen(struct item *it, void *arg)
{
	struct fz *f = arg;
	unsigned int n = fz_num(it);

	if (n >= FZ_KEYS || f->it[n] != it)
		f->stray++;
	else if (f->seen[n] < 255)
		f->seen[n]++;
}

static void fz_count(struct item *it, void *arg)
{
	fz_seen(it, arg);
}

/* A walk that removes the items of even number it is given. */
static void fz_remove(struct item *it, void *arg)
{
	fz_seen(it, arg);
	if (fz_num(it) % 2 == 0)
		index_remove(it);
}

/*
 * The index against a shadow model: random inserts, removes, lookups,
 * ticks and stepped walks from a 16-bucket table to 2^16, so that walks
 * span many incremental doublings.  Every lookup agrees with the shadow,
 * a walk sees each key present from its start to its end exactly once and
 * never an item the shadow lacks, and foreach sees exactly the shadow.  A
 * doubling of a large table is not done in the insert that starts it.
 */
static void test_index_fuzz(void)
{
	static struct fz f;
	char key[16];
	unsigned int seed = 4242, walks = 0, bad_walks = 0, bad_finds = 0;
	unsigned int expanding_steps = 0, npresent = 0;
	uint64_t cursor = 0;
	bool walking = false;

	memset(&f, 0, sizeof(f));
	CHECK(index_init(4) == 0, "index_init");
	for (int op = 0; op < 400000; op++) {
		unsigned int k = (unsigned int)rand_r(&seed) % FZ_KEYS;
		unsigned int r = (unsigned int)rand_r(&seed) % 100;
		int n = sprintf(key, "f%u", k);
		uint32_t hv = index_hash(key, (size_t)n);

		expanding_steps += index_expanding();
		if (op % 2000 == 1999) {        /* every key, often mid-doubling */
			for (unsigned int j = 0; j < FZ_KEYS; j++) {
				if (!f.it[j])
					continue;
				n = sprintf(key, "f%u", j);
				bad_finds += index_find(key, (size_t)n, f.it[j]->hash) != f.it[j];
			}
			n = sprintf(key, "f%u", k);
		}
		if (r < 55) {                   /* insert, mostly: the table grows */
			if (!f.it[k]) {
				f.it[k] = item_new(key, (size_t)n, hv);
				index_insert(f.it[k]);
				npresent++;
			}
		} else if (r < 70) {
			if (f.it[k]) {
				index_remove(f.it[k]);
				free(f.it[k]);
				f.it[k] = NULL;
				f.steady[k] = 0;
				npresent--;
			}
		} else if (r < 90) {
			bad_finds += index_find(key, (size_t)n, hv) != f.it[k];
		} else if (r < 91) {
			CHECK(index_rehash(5) <= 5, "index_rehash moves at most what it is asked");
		} else {
			if (!walking) {
				for (unsigned int i = 0; i < FZ_KEYS; i++) {
					f.seen[i] = 0;
					f.steady[i] = f.it[i] != NULL;
				}
				walking = true;
			}
			if (index_walk(&cursor, 1 + (unsigned int)rand_r(&seed) % 50, fz_seen, &f)) {
				unsigned int wrong = 0;

				for (unsigned int i = 0; i < FZ_KEYS; i++)
					if (f.steady[i] && f.seen[i] != 1)
						wrong++;
				bad_walks += wrong != 0;
				walks++;
				walking = false;
			}
		}
	}
	CHECK(index_count() == npresent, "count %llu, shadow %u",
	      (unsigned long long)index_count(), npresent);
	CHECK(bad_finds == 0, "%u lookups disagreed with the shadow", bad_finds);
	CHECK(walks >= 3 && bad_walks == 0 && f.stray == 0,
	      "%u of %u walks missed or repeated a steady key, %u stray items", bad_walks, walks, f.stray);
	CHECK(index_expansions() >= 8 && expanding_steps > 1000,
	      "%llu doublings, %u operations saw one under way",
	      (unsigned long long)index_expansions(), expanding_steps);
	unsigned int doublings = (unsigned int)index_expansions();

	memset(f.seen, 0, sizeof(f.seen));
	index_foreach(fz_count, &f);
	unsigned int once = 0;
	for (unsigned int i = 0; i < FZ_KEYS; i++)
		once += f.it[i] && f.seen[i] == 1;
	CHECK(once == npresent && f.stray == 0, "foreach saw %u of %u once, %u stray", once, npresent, f.stray);

	/* A doubling of 2^15 buckets is spread over inserts and ticks. */
	CHECK(index_init(15) == 0, "index_init");
	for (unsigned int i = 0; i < FZ_KEYS; i++)
		free(f.it[i]);
	memset(&f, 0, sizeof(f));
	unsigned int i = 0, started = 0;
	for (; i < FZ_KEYS && !started; i++) {
		int n = sprintf(key, "f%u", i);

		f.it[i] = item_new(key, (size_t)n, index_hash(key, (size_t)n));
		index_insert(f.it[i]);
		started = index_expanding();
	}
	CHECK(started && index_hashpower() == 16,
	      "a doubling to 2^16 under way after the insert that started it (%u)", index_hashpower());
	unsigned int ticks = 0;
	while (index_expanding() && ticks < 100) {
		CHECK(index_rehash(INDEX_REHASH_TICK) <= INDEX_REHASH_TICK, "tick bounded");
		ticks++;
	}
	CHECK(!index_expanding() && ticks == (1u << 15) / INDEX_REHASH_TICK,
	      "the doubling took %u ticks", ticks);
	unsigned int found = 0;
	for (unsigned int j = 0; j < i; j++) {
		int n = sprintf(key, "f%u", j);

		found += index_find(key, (size_t)n, index_hash(key, (size_t)n)) == f.it[j];
	}
	CHECK(found == i, "after the doubling %u of %u found", found, i);

	/* a walk that removes half the items, in the middle of a doubling */
	for (unsigned int j = 0; j < FZ_KEYS; j++)
		free(f.it[j]);
	memset(&f, 0, sizeof(f));
	CHECK(index_init(15) == 0, "index_init");
	for (i = 0, started = 0; i < FZ_KEYS && !started; i++) {
		int n = sprintf(key, "f%u", i);

		f.it[i] = item_new(key, (size_t)n, index_hash(key, (size_t)n));
		index_insert(f.it[i]);
		started = index_expanding();
	}
	for (int j = 0; j < 100; j++) {    /* some buckets moved, most not */
		int n = sprintf(key, "f%u", i);

		f.it[i] = item_new(key, (size_t)n, index_hash(key, (size_t)n));
		index_insert(f.it[i++]);
	}
	index_foreach(fz_remove, &f);
	unsigned int more = 0;

	once = 0;
	for (unsigned int j = 0; j < i; j++) {
		once += f.seen[j] == 1;
		more += f.seen[j] > 1;
	}
	CHECK(index_expanding() && once == i && more == 0 && f.stray == 0 &&
	      index_count() == i / 2,
	      "a removing walk mid-doubling saw %u of %u once, %u more often, %u stray; %llu left",
	      once, i, more, f.stray, (unsigned long long)index_count());
	CHECK(index_init(4) == 0, "index_init");
	for (unsigned int j = 0; j < FZ_KEYS; j++)
		free(f.it[j]);
	printf("ok - index fuzz: %u doublings, %u walks, %u operations mid-doubling\n",
	       doublings, walks, expanding_steps);
}

static void test_semantics(void)
{
	char buf[32];

	setup(16);
	CHECK(put(CMD_SET, "a", "hello") == R_STORED, "set");
	CHECK(value_is(get("a"), "hello"), "get");
	CHECK(put(CMD_ADD, "a", "x") == R_NOT_STORED, "add existing");
	CHECK(put(CMD_REPLACE, "b", "x") == R_NOT_STORED, "replace missing");
	CHECK(put(CMD_APPEND, "a", "!") == R_STORED, "append");
	CHECK(put(CMD_PREPEND, "a", ">") == R_STORED, "prepend");
	CHECK(value_is(get("a"), ">hello!"), "append+prepend");
	CHECK(put(CMD_SET, "n", "100") == R_STORED, "set n");
	CHECK(cache_delta("n", 1, index_hash("n", 1), false, 95, buf) == D_OK &&
	      !strcmp(buf, "5"), "decr");
	CHECK(value_is(get("n"), "5  "), "decr pads with spaces");
	CHECK(cache_delta("a", 1, index_hash("a", 1), true, 1, buf) == D_NON_NUMERIC, "non numeric");
	CHECK(cache_delta("zz", 2, index_hash("zz", 2), true, 1, buf) == D_NOT_FOUND, "incr missing");
	CHECK(cache_delete("a", 1, index_hash("a", 1)), "delete");
	CHECK(!get("a"), "deleted");
	CHECK(cache_touch("n", 1, index_hash("n", 1), cache_exptime(5)), "touch");
	current_time += 6;
	CHECK(!get("n"), "expired after touch");
	CHECK(cache_exptime(-1) == 1, "negative exptime is past");
	CHECK(cache_exptime(100) == current_time + 100, "relative exptime");
	CHECK(cache_exptime(2000000000) == 2000000000u, "absolute exptime");
	put(CMD_SET, "f", "x");
	cache_flush(0);
	CHECK(!get("f") && index_count() == 0, "flush_all");

	/* flush_all 3: effective from two seconds on, for what was stored by then */
	put(CMD_SET, "old", "x");
	cache_flush(3);
	current_time += 1;
	CHECK(value_is(get("old"), "x"), "flush_all 3: alive after 1s");
	put(CMD_SET, "mid", "y");
	current_time += 1;
	CHECK(!get("old") && !get("mid"), "flush_all 3: both gone after 2s");
	put(CMD_SET, "new", "z");
	CHECK(!get("new"), "flush_all 3: stored in the deadline second, gone");
	current_time += 1;
	put(CMD_SET, "late", "w");
	CHECK(value_is(get("late"), "w"), "flush_all 3: stored after it, kept");
	cache_flush(0);
	/* flush_all 1 is at once, and also hides what this second stores */
	put(CMD_SET, "p", "x");
	cache_flush(1);
	CHECK(!get("p"), "flush_all 1: at once");
	put(CMD_SET, "q", "y");
	CHECK(!get("q"), "flush_all 1: same second hidden");
	current_time += 1;
	put(CMD_SET, "r", "z");
	CHECK(value_is(get("r"), "z"), "flush_all 1: next second kept");
	cache_flush(0);
	/* a deadline already past flushes nothing */
	put(CMD_SET, "s", "x");
	cache_flush(process_started - 5);
	CHECK(value_is(get("s"), "x"), "flush_all in the past: no-op");
	teardown();
	printf("ok - semantics\n");
}

static void test_eviction(void)
{
	char key[32], val[1000];

	setup(4);
	memset(val, 'v', sizeof(val) - 1);
	val[sizeof(val) - 1] = 0;
	for (int i = 0; i < 20000; i++) {
		sprintf(key, "e%d", i);
		CHECK(put(CMD_SET, key, val) == R_STORED, "set %d never fails", i);
		if (i % 1000 == 0)
			current_time++;
	}
	struct store_stats st;
	store_get_stats(&st);
	CHECK(stats.evictions > 0, "evictions counted");
	CHECK(st.used_bytes + index_mem_bytes() <= (4u << 20), "budget kept: %llu",
	      (unsigned long long)(st.used_bytes + index_mem_bytes()));
	CHECK(value_is(get("e19999"), val), "newest survives");
	CHECK(!get("e0"), "oldest evicted");
	/* a large object gets its own range and fits after evictions */
	static char big[1 << 19];
	memset(big, 'B', sizeof(big) - 1);
	CHECK(put(CMD_SET, "big", big) == R_STORED, "large object");
	CHECK(value_is(get("big"), big), "large object readable");
	teardown();
	printf("ok - eviction\n");
}

/*
 * The log cleaner: uniform overwrites of a small live set, many times the
 * budget in bytes written, evict nothing and keep the store within a
 * small multiple of its live bytes; a reply that still points into a
 * cleaned segment keeps its bytes until it lets go.
 */
static void fill_value(char *v, size_t n, int key, int version)
{
	int len = snprintf(v, n, "k%d:v%d:", key, version);

	for (size_t i = (size_t)len; i < n - 1; i++)
		v[i] = (char)('a' + (key + version + (int)i) % 26);
	v[n - 1] = 0;
}

/*
 * Evictions take the coldest segments in order from the list the tick
 * builds: segments filled over 20 seconds, the two oldest used again
 * after the tick, then enough new data to evict four: the four oldest
 * not used again go, the two used again stay, as the scan of every slot
 * that the list replaces chose.
 */
/* The most objects the compaction looked at in one of TICKS ticks. */
static uint64_t most_checked(int ticks)
{
	uint64_t c0, most = 0;

	for (int t = 0; t < ticks; t++) {
		c0 = stats.compact_checked_objects;
		current_time++;
		store_tick(current_time, 10);
		if (stats.compact_checked_objects - c0 > most)
			most = stats.compact_checked_objects - c0;
	}
	return most;
}

/*
 * The tick's compaction looks at a bounded number of objects: a segment
 * of a hundred thousand small objects, all written within --idle, is not
 * walked at all, and one whose objects are all hot again is given up
 * after an eighth of them.  (Each tick used to walk a whole segment of
 * hot objects under the exclusive lock: 131,072 objects of 4 bytes, some
 * 25 ms of every second in which no get was served.)
 */
static void test_compact_bounded(void)
{
	char key[32];
	uint64_t most;

	setup(64);
	for (int i = 0; i < 300000; i++) {
		sprintf(key, "t%d", i);
		put(CMD_SET, key, "vvvv");
	}
	most = most_checked(4);
	CHECK(most == 0, "young segments: no object looked at (%llu at most a tick)",
	      (unsigned long long)most);

	/* idle, then every object read again: all hot */
	current_time += 20;
	for (int i = 0; i < 300000; i++) {
		struct item *it;

		sprintf(key, "t%d", i);
		it = get(key);
		CHECK(it && cache_readable(it), "t%d there", i);
	}
	most = most_checked(4);
	CHECK(most > 0 && most <= 2 * 16384,
	      "segments of hot objects: at most 32,768 objects looked at a tick (%llu)",
	      (unsigned long long)most);
	CHECK(stats.compacted_objects == 0, "nothing moved (%llu)",
	      (unsigned long long)stats.compacted_objects);
	teardown();
}

static void test_evict_list(void)
{
	static char val[100 * 1024];
	char key[32];
	struct item *it;

	setup(32);
	memset(val, 'E', sizeof(val) - 1);
	for (int sec = 0; sec < 20; sec++) {
		for (int i = 0; i < 9; i++) {
			sprintf(key, "s%d.%d", sec, i);
			put(CMD_SET, key, val);
		}
		current_time++;
	}
	store_tick(current_time, 1000);
	current_time++;
	CHECK(get("s0.3") && cache_readable(get("s0.3")) && get("s1.3") &&
	      cache_readable(get("s1.3")), "two of the oldest used again");
	uint64_t ev = stats.evictions;
	int n = 0;
	while (stats.evictions < ev + 4 * 9 && n < 2000) {
		sprintf(key, "n%d", n++);
		put(CMD_SET, key, val);
		if (n % 9 == 0)
			current_time++;     /* newer than the two used again */
	}
	int gone[20] = { 0 };
	for (int sec = 0; sec < 20; sec++) {
		sprintf(key, "s%d.5", sec);
		it = index_find(key, strlen(key), index_hash(key, strlen(key)));
		gone[sec] = !it;
	}
	/* 10 values a segment, 9 a second: s2.5 to s6.5 are in segments 2 to 5 */
	CHECK(!gone[0] && !gone[1] && gone[2] && gone[3] && gone[4] && gone[5] && gone[6] &&
	      !gone[7] && !gone[19],
	      "evicted: 0:%d 1:%d 2:%d 3:%d 4:%d 5:%d 6:%d 7:%d 19:%d", gone[0], gone[1], gone[2],
	      gone[3], gone[4], gone[5], gone[6], gone[7], gone[19]);
	teardown();
	printf("ok - eviction list\n");
}

static void test_cleaner(void)
{
	enum { NKEYS = 2000, VLEN = 1000, WRITES = 100000 };
	static int version[NKEYS];
	char key[32], val[VLEN + 1], held[VLEN + 1];
	struct store_stats st;
	uint32_t rnd = 12345, held_seg;
	const char *held_ptr;
	struct item *it;
	int bad = 0;

	setup(64);
	for (int k = 0; k < NKEYS; k++) {
		sprintf(key, "c%d", k);
		fill_value(val, sizeof(val), k, 0);
		CHECK(put(CMD_SET, key, val) == R_STORED, "fill %d", k);
	}
	/* a reply in flight holds key c0's bytes */
	it = get("c0");
	held_seg = it->seg;
	held_ptr = store_ptr(it->off);
	memcpy(held, held_ptr, VLEN);
	store_ref(held_seg);
	for (int i = 0; i < WRITES; i++) {
		int k;

		rnd = rnd * 1103515245u + 12345u;
		k = 1 + (int)((rnd >> 8) % (NKEYS - 1));   /* never c0 */
		sprintf(key, "c%d", k);
		fill_value(val, sizeof(val), k, ++version[k]);
		if (put(CMD_SET, key, val) != R_STORED)
			bad++;
	}
	CHECK(bad == 0, "every set stored (%d failed)", bad);
	CHECK(stats.evictions == 0, "no live object evicted (%llu)",
	      (unsigned long long)stats.evictions);
	CHECK(stats.cleaned_segments > 0 && stats.cleaned_objects > 0,
	      "segments cleaned (%llu, %llu objects)",
	      (unsigned long long)stats.cleaned_segments,
	      (unsigned long long)stats.cleaned_objects);
	for (int k = 0; k < NKEYS; k++) {
		sprintf(key, "c%d", k);
		fill_value(val, sizeof(val), k, version[k]);
		if (!value_is(get(key), val))
			bad++;
	}
	CHECK(bad == 0, "every object has its newest value (%d wrong)", bad);
	it = get("c0");
	CHECK(it && it->seg != held_seg, "c0 was copied forward");
	CHECK(!memcmp(held_ptr, held, VLEN), "held bytes intact until unref");
	store_unref_cb(NULL, 0, (void *)(uintptr_t)held_seg);
	store_get_stats(&st);
	CHECK(st.used_bytes <= 2 * st.value_bytes + 4 * st.seg_size,
	      "footprint %llu bytes for %llu live",
	      (unsigned long long)st.used_bytes,
	      (unsigned long long)st.value_bytes);
	teardown();
	printf("ok - cleaner\n");
}

static void test_volatile(void)
{
	char key[32], val[200];

	setup(16);
	for (int i = 0; i < 3000; i++) {
		sprintf(key, "v%d", i);
		sprintf(val, "value-%d-%0100d", i, i);
		put(CMD_SET, key, val);
	}
	static char big[300000];
	memset(big, 'L', sizeof(big) - 1);
	put(CMD_SET, "large", big);
	/* hot data: no mark before the idle time */
	current_time += 5;
	store_tick(current_time, 10);
	CHECK(nfr == 0, "nothing volatile while hot (%d)", nfr);
	current_time += 10;
	store_tick(current_time, 10);
	struct store_stats st;
	store_get_stats(&st);
	CHECK(nfr > 0 && st.volatile_ranges == (uint64_t)nfr, "idle data marked (%d)", nfr);
	/* a read of volatile, unpurged data unmarks and copies forward */
	sprintf(val, "value-%d-%0100d", 7, 7);
	CHECK(value_is(get("v7"), val), "read volatile unpurged");
	CHECK(stats.unmarks == 1, "one unmark");
	CHECK(value_is(get("v7"), val) && stats.unmarks == 1, "hot again: no system call");
	store_tick(current_time, 10);
	purge_all();
	uint64_t lost = 0, ok = 0;
	for (int i = 0; i < 3000; i++) {
		struct item *it;

		sprintf(key, "v%d", i);
		sprintf(val, "value-%d-%0100d", i, i);
		it = get(key);
		CHECK(it != NULL, "index keeps purged key %s", key);
		if (it && cache_readable(it)) {
			CHECK(value_is(it, val), "never serve purged bytes %s", key);
			ok++;
		} else if (it) {
			CHECK(it->state == ITEM_LOST, "lost state");
			lost++;
		}
	}
	CHECK(lost > 0 && stats.purged_ranges > 0 && stats.purged_objects >= lost,
	      "purge counted (lost %llu ranges %llu objects %llu)",
	      (unsigned long long)lost, (unsigned long long)stats.purged_ranges,
	      (unsigned long long)stats.purged_objects);
	CHECK(ok >= 1, "copied-forward object survived");
	struct item *L = get("large");
	CHECK(L && !cache_readable(L) && L->state == ITEM_LOST, "large purged");
	/* rebuild in place */
	const char *nv = "rebuilt\r\n";
	CHECK(cache_fill("v1", 2, index_hash("v1", 2), 0, nv, 7) != NULL, "fill");
	CHECK(value_is(get("v1"), "rebuilt"), "rebuilt value");
	/* --verify catches bytes changed behind our back */
	put(CMD_SET, "chk", "abcdef");
	struct item *c = get("chk");
	store_ptr(c->off)[0] = 'X';
	CHECK(!cache_readable(c) && stats.verify_errors == 1, "checksum catches corruption");
	teardown();
	printf("ok - volatile\n");
}

/* Hot objects scattered over otherwise idle segments are copied forward. */
/*
 * A tick with much to mark does it in steps: 120 idle 1 MiB segments are
 * marked in one tick, at most 64 per step (the daemon drops cache_lock
 * between steps), and a step that starts a tick does the upkeep first.
 */
static void test_tick_steps(void)
{
	static char val[100 * 1024];
	char key[32];
	struct store_marks sm = { 0 };
	uint32_t cursor = 0, steps = 0, most = 0;
	uint64_t before;
	bool more;

	setup(128);
	memset(val, 'S', sizeof(val) - 1);
	for (int i = 0; i < 1240; i++) {
		sprintf(key, "t%d", i);
		put(CMD_SET, key, val);
	}
	current_time += 20;
	before = stats.marks;
	do {
		uint64_t m = stats.marks;

		more = store_tick_step(current_time, 10, &cursor, STORE_TICK_MARKS, &sm);
		store_marks_unlocked(&sm);
		steps++;
		if (stats.marks - m > most)
			most = (uint32_t)(stats.marks - m);
	} while (more && steps < 1000);
	CHECK(stats.marks - before >= 110 && most <= 64 && steps >= 2,
	      "stepped tick: %llu marks in %u steps, at most %u per step",
	      (unsigned long long)(stats.marks - before), steps, most);
	CHECK(nfr == (int)(stats.marks - before), "every mark is a range (%d)", nfr);
	cursor = 0;
	before = stats.marks;
	do {
		more = store_tick_step(current_time, 10, &cursor, STORE_TICK_MARKS, &sm);
		store_marks_unlocked(&sm);
	} while (more);
	store_marks_settle(&sm);
	CHECK(stats.marks == before, "a second tick marks nothing new");
	teardown();
	printf("ok - tick steps\n");
}

static void test_compact(void)
{
	char key[32], val[1100];
	struct store_stats st;
	int moved = 0, hot_ok = 0, nhot = 0;

	setup(16);
	for (int i = 0; i < 4000; i++) {
		sprintf(key, "c%d", i);
		sprintf(val, "value-%d-%01000d", i, i);
		put(CMD_SET, key, val);
	}
	current_time += 20;
	/* one object in 40 stays in use, as under a Zipf popularity */
	uint32_t seg_before[4000 / 40];
	for (int i = 0; i < 4000; i += 40) {
		struct item *it;

		sprintf(key, "c%d", i);
		it = get(key);
		it->atime = current_time;
		store_touch_hot(it, current_time);
		seg_before[i / 40] = it->seg;
	}
	store_tick(current_time, 10);
	store_get_stats(&st);
	CHECK(stats.compacted_objects > 0, "hot objects copied forward (%llu)",
	      (unsigned long long)stats.compacted_objects);
	CHECK(st.volatile_ranges >= 2, "the idle rest went volatile (%llu ranges)",
	      (unsigned long long)st.volatile_ranges);
	purge_all();
	for (int i = 0; i < 4000; i += 40) {
		struct item *it;

		sprintf(key, "c%d", i);
		sprintf(val, "value-%d-%01000d", i, i);
		it = get(key);
		nhot++;
		if (it && it->seg != seg_before[i / 40])
			moved++;
		if (value_is(it, val))
			hot_ok++;
	}
	CHECK(moved > 0, "hot objects moved (%d of %d)", moved, nhot);
	CHECK(hot_ok == nhot, "every hot object survives the purge (%d of %d)",
	      hot_ok, nhot);
	{
		struct item *it = get("c1");

		CHECK(it && !cache_readable(it) && it->state == ITEM_LOST,
		      "an idle object was purged");
	}
	teardown();

	/* pinned mode rescues hot objects too: eviction then takes cold ones */
	memset(&settings, 0, sizeof(settings));
	memset(&stats, 0, sizeof(stats));
	settings.maxbytes = 16 << 20;
	settings.item_size_max = 1 << 20;
	settings.idle_secs = 10;
	current_time = process_started = 1000000000;
	fake_reset();
	CHECK(cache_init(settings.maxbytes, false) == 0, "cache_init pinned");
	for (int i = 0; i < 4000; i++) {
		sprintf(key, "c%d", i);
		sprintf(val, "value-%d-%01000d", i, i);
		put(CMD_SET, key, val);
	}
	current_time += 20;
	for (int i = 0; i < 4000; i += 40) {
		struct item *it;

		sprintf(key, "c%d", i);
		it = get(key);
		it->atime = current_time;
		store_touch_hot(it, current_time);
	}
	store_tick(current_time, 10);
	CHECK(stats.compacted_objects > 0 && fake_nranges() == 0,
	      "pinned: hot objects rescued (%llu), nothing marked",
	      (unsigned long long)stats.compacted_objects);
	/* fill past the budget: evictions take the idle objects first */
	for (int i = 0; i < 30000; i++) {
		sprintf(key, "n%d", i);
		sprintf(val, "new-%d-%01000d", i, i);
		put(CMD_SET, key, val);
		if (stats.evictions >= 2000)
			break;
	}
	hot_ok = 0;
	for (int i = 0; i < 4000; i += 40) {
		sprintf(key, "c%d", i);
		sprintf(val, "value-%d-%01000d", i, i);
		hot_ok += value_is(get(key), val);
	}
	CHECK(stats.evictions >= 2000 && hot_ok == nhot,
	      "pinned: %llu evictions kept every hot object (%d of %d)",
	      (unsigned long long)stats.evictions, hot_ok, nhot);
	teardown();
	printf("ok - compact\n");
}

/* A reply that points into a segment keeps it from being reused. */
static void test_zero_copy(void)
{
	static char big[8000], other[8000];
	struct evbuffer *b = evbuffer_new();
	struct item *it;
	char *p;

	setup(4);
	memset(big, 'Z', sizeof(big) - 1);
	memset(other, 'O', sizeof(other) - 1);
	put(CMD_SET, "zc", big);
	it = get("zc");
	CHECK(it && cache_readable(it), "zc readable");
	store_ref(it->seg);
	evbuffer_add_reference(b, store_ptr(it->off), it->vlen + 2, store_unref_cb,
			       (void *)(uintptr_t)it->seg);
	cache_delete("zc", 2, index_hash("zc", 2));
	/* churn: many sets evict and reuse segments; the referenced bytes stay */
	char key[32];
	for (int i = 0; i < 2000; i++) {
		sprintf(key, "churn%d", i);
		put(CMD_SET, key, other);
		if (i % 100 == 0) {
			current_time++;
			store_tick(current_time, 1000);
		}
	}
	p = (char *)evbuffer_pullup(b, -1);
	CHECK(p && !memcmp(p, big, sizeof(big) - 1), "referenced bytes intact under churn");
	evbuffer_free(b);   /* drops the reference */
	current_time++;
	store_tick(current_time, 1000);
	for (int i = 0; i < 2000; i++) {
		sprintf(key, "again%d", i);
		CHECK(put(CMD_SET, key, other) == R_STORED, "set after release");
	}
	teardown();
	printf("ok - zero copy\n");
}

/*
 * A slow reader (issue #41): replies that are never written must not make
 * the store refuse sets.  With -m 4 (256 KiB segments, 16 to the budget):
 * replies held on 2,000 values of 4,000 bytes, taken as the daemon takes
 * them (store_ref_value), point into at most 4 shared segments, a quarter
 * of the budget's (the rest are copied); then replies held on the
 * 100,000-byte objects (their own slots), and 100 more set: every one
 * STORED, at least 30 kept (3 MB of the 4 MB budget: the objects evicted
 * under the replies leave the budget, zombie_bytes), the held bytes
 * unchanged, and given back at the tick after the replies are gone.
 * Each reference into a shared segment used to pin it, charged: with
 * every segment pinned, every set failed.
 */
static void test_slow_reader(void)
{
	enum { NSMALL = 2000, NLARGE = 30, MORE = 100, BIG = 100000 };
	static char small[4001], big[BIG + 1], sent[NLARGE][BIG + 2];
	struct evbuffer *b = evbuffer_new(), *bs = evbuffer_new();
	struct store_stats st;
	char key[32];
	int refd = 0, bad = 0, held = 0, kept;

	setup(4);
	settings.verify = false;   /* zero copy, as the daemon without --verify */
	for (int i = 0; i < NSMALL; i++) {
		struct item *it;

		sprintf(key, "s%d", i);
		fill_value(small, sizeof(small), i, 0);
		put(CMD_SET, key, small);
		it = get(key);
		if (it && cache_readable(it) && store_ref_value(it)) {
			evbuffer_add_reference(bs, store_ptr(it->off), it->vlen + 2,
					       store_unref_cb, (void *)(uintptr_t)it->seg);
			refd++;
		}
	}
	store_get_stats(&st);
	CHECK(refd > 0 && st.shared_held <= 4,
	      "%d replies from the memfd hold %llu shared segments, at most 4", refd,
	      (unsigned long long)st.shared_held);
	for (int i = 0; i < NLARGE; i++) {
		sprintf(key, "L%d", i);
		fill_value(big, sizeof(big), i, 1);
		CHECK(put(CMD_SET, key, big) == R_STORED, "large %d stored", i);
	}
	for (int i = 0; i < NLARGE; i++) {
		struct item *it;

		sprintf(key, "L%d", i);
		it = get(key);
		if (!it || !cache_readable(it))
			continue;
		CHECK(store_ref_value(it), "a large object is sent from the memfd");
		memcpy(sent[held], store_ptr(it->off), BIG + 2);
		evbuffer_add_reference(b, store_ptr(it->off), it->vlen + 2,
				       store_unref_cb, (void *)(uintptr_t)it->seg);
		held++;
	}
	CHECK(held >= 8, "%d large objects held by replies", held);
	current_time++;   /* the new objects are the newest to the eviction */
	for (int i = 0; i < MORE; i++) {
		sprintf(key, "M%d", i);
		fill_value(big, sizeof(big), i, 2);
		if (put(CMD_SET, key, big) != R_STORED)
			bad++;
	}
	store_get_stats(&st);
	CHECK(bad == 0, "every set beside the held replies stored (%d failed)", bad);
	CHECK(st.zombie_bytes >= (uint64_t)held * BIG && st.used_bytes <= (4u << 20),
	      "held %llu bytes outside the budget, %llu charged",
	      (unsigned long long)st.zombie_bytes, (unsigned long long)st.used_bytes);
	CHECK(store_audit() == 0, "store audit with zombies");
	kept = 0;
	for (int i = 0; i < MORE; i++) {
		sprintf(key, "M%d", i);
		fill_value(big, sizeof(big), i, 2);
		kept += value_is(get(key), big);
	}
	CHECK(kept >= 30, "%d new objects kept beside %d held", kept, held);
	bad = 0;
	for (int i = 0; i < held; i++) {
		char one[BIG + 2];

		if (evbuffer_remove(b, one, BIG + 2) != BIG + 2 || memcmp(one, sent[i], BIG + 2))
			bad++;
	}
	CHECK(bad == 0 && evbuffer_get_length(b) == 0,
	      "every held reply carries its bytes (%d wrong)", bad);
	evbuffer_free(bs);
	current_time++;
	store_tick(current_time, 1000);
	store_get_stats(&st);
	CHECK(st.zombie_bytes == 0 && st.shared_held == 0 && store_audit() == 0,
	      "given back after the replies: %llu held", (unsigned long long)st.zombie_bytes);
	evbuffer_free(b);
	teardown();
	printf("ok - slow reader\n");
}

/*
 * incr writes a shorter result over the old number, padded with spaces,
 * only while no reply points at the old bytes: a queued zero-copy reply
 * must still send the value of the cas it named.  Then, as memcached, the
 * result is a new value of its own length.
 */
static void test_incr_in_flight(void)
{
	static char num[4001], sent[4003];
	struct evbuffer *b = evbuffer_new();
	char buf[32], *p;
	struct item *it;
	uint64_t cas;

	setup(4);
	settings.verify = false;   /* zero copy, as the daemon without --verify */
	memset(num, '0', 4000);
	num[3999] = '7';
	put(CMD_SET, "n", num);
	CHECK(cache_delta("n", 1, index_hash("n", 1), true, 1, buf) == D_OK &&
	      !strcmp(buf, "8"), "incr: %s", buf);
	it = get("n");
	CHECK(it && it->vlen == 4000 && !memcmp(store_ptr(it->off), "8   ", 4),
	      "nothing in flight: in place, padded");
	/* a reply of it queued, as emit_item queues one */
	store_ref(it->seg);
	evbuffer_add_reference(b, store_ptr(it->off), it->vlen + 2, store_unref_cb,
			       (void *)(uintptr_t)it->seg);
	memcpy(sent, store_ptr(it->off), 4002);
	cas = it->cas;
	CHECK(cache_delta("n", 1, index_hash("n", 1), true, 2, buf) == D_OK &&
	      !strcmp(buf, "10"), "incr in flight: %s", buf);
	p = (char *)evbuffer_pullup(b, -1);
	CHECK(p && !memcmp(p, sent, 4002), "the queued reply keeps the bytes of its cas");
	it = get("n");
	CHECK(value_is(it, "10") && it->cas != cas, "a new value of the number's length");
	CHECK(cache_delta("n", 1, index_hash("n", 1), false, 1, buf) == D_OK &&
	      value_is(get("n"), "9 "), "a small value is written in place: %s", buf);
	evbuffer_free(b);
	teardown();
	printf("ok - incr in flight\n");
}

/* Feed a protocol session through a conn without a socket. */
static char *session(const char *in, size_t n)
{
	struct conn c;
	static __thread char out[1 << 20];   /* test_wake_unlocked: two threads */
	size_t len;

	memset(&c, 0, sizeof(c));
	c.fd = -1;
	conn_init_buffers(&c);
	for (size_t off = 0; off < n; ) {
		size_t k = n - off < 7 ? n - off : 7;   /* odd chunks: framing */

		conn_rbuf_reserve(&c, k);
		memcpy(c.rbuf + c.rend, in + off, k);
		c.rend += k;
		off += k;
		if (proto_process(&c) == PROTO_CLOSE)
			break;
		while (evbuffer_get_length(c.out) > OUT_SOFT)
			evbuffer_drain(c.out, evbuffer_get_length(c.out));
	}
	len = evbuffer_get_length(c.out);
	if (len >= sizeof(out))
		len = sizeof(out) - 1;
	evbuffer_remove(c.out, out, len);
	out[len] = 0;
	conn_free_buffers(&c);
	return out;
}

#define S(in) session(in, sizeof(in) - 1)
#define S2(in) session(in, strlen(in))

static void test_parser(void)
{
	setup(16);
	CHECK(!strcmp(S("set a 0 0 1\r\nx\r\nget a\r\n"), "STORED\r\nVALUE a 0 1\r\nx\r\nEND\r\n"), "set/get");
	CHECK(!strcmp(S("bogus\r\n"), "ERROR\r\n"), "unknown");
	CHECK(!strcmp(S("set a 0 0 1\r\nxy\r\n"), "CLIENT_ERROR bad data chunk\r\nERROR\r\n"), "bad chunk");
	CHECK(!strcmp(S("set a 0 0 z\r\n"), "CLIENT_ERROR bad command line format\r\n"), "bad format");
	CHECK(!strcmp(S("incr a 1\r\n"), "CLIENT_ERROR cannot increment or decrement non-numeric value\r\n"), "incr err");
	CHECK(!strcmp(S("set a 0 0 5 noreply\r\nhello\r\nget a\r\n"), "VALUE a 0 5\r\nhello\r\nEND\r\n"), "noreply");
	CHECK(!strcmp(S("set big 0 0 2000000\r\n"), "SERVER_ERROR object too large for cache\r\n"), "too large");
	CHECK(!strcmp(S("delete a\r\ndelete a\r\n"), "DELETED\r\nNOT_FOUND\r\n"), "delete");
	CHECK(!strcmp(S("version\r\n"), "VERSION " CACHED_VERSION "\r\n"), "version");
	char line[3000];
	memset(line, 'x', sizeof(line));
	CHECK(!strcmp(session(line, sizeof(line)), ""), "2048 limit closes");
	teardown();
	printf("ok - parser\n");
}

/* The contents of @b as a C string (caller frees); @b is freed. */
static char *evbuffer_string(struct evbuffer *b)
{
	size_t n = evbuffer_get_length(b);
	char *s = malloc(n + 1);

	evbuffer_remove(b, s, n);
	s[n] = '\0';
	evbuffer_free(b);
	return s;
}

/* A reply of stats_cachedump_emit() as a C string (caller frees). */
static char *cachedump(uint32_t id, uint32_t limit)
{
	struct evbuffer *b = evbuffer_new();

	stats_cachedump_emit(b, id, limit);
	return evbuffer_string(b);
}

static int count_lines(const char *s, const char *prefix)
{
	int n = 0;

	for (const char *p = s; (p = strstr(p, prefix)); p++)
		n++;
	return n;
}

static void test_cachedump(void)
{
	char key[KEY_MAX_LENGTH + 1], *d;
	int n;

	setup(64);
	put(CMD_SET, "live", "abc");
	cache_store(CMD_SET, "exp", 3, index_hash("exp", 3), 0, current_time + 100,
		    "x\r\n", 1, 0);
	cache_store(CMD_SET, "gone", 4, index_hash("gone", 4), 0, current_time + 1,
		    "x\r\n", 1, 0);
	current_time += 2;
	d = cachedump(1, 0);
	CHECK(strstr(d, "ITEM live [3 b; 0 s]\r\n") &&
	      strstr(d, "ITEM exp [1 b; 1000000100 s]\r\n") && !strstr(d, "gone") &&
	      count_lines(d, "ITEM ") == 2 && !strcmp(d + strlen(d) - 5, "END\r\n"),
	      "cachedump lists live items with size and expiry: %s", d);
	free(d);
	d = cachedump(1, 1);
	CHECK(count_lines(d, "ITEM ") == 1, "cachedump limit 1");
	free(d);
	d = cachedump(2, 0);
	CHECK(!strcmp(d, "END\r\n"), "cachedump of another class is empty");
	free(d);
	cache_flush(0);
	d = cachedump(1, 0);
	CHECK(!strcmp(d, "END\r\n"), "cachedump after flush_all is empty");
	free(d);

	/* as memcached, one reply stops short of 2 MB */
	memset(key, 'k', KEY_MAX_LENGTH);
	for (int i = 0; i < 9000; i++) {
		int l = snprintf(key, sizeof(key), "%d", i);

		key[l] = 'k';
		key[KEY_MAX_LENGTH] = '\0';
		put(CMD_SET, key, "v");
	}
	CHECK(index_count() == 9000, "9000 long keys stored");
	/* a 250-byte key: memcached's class 7 (item of 310 bytes) */
	CHECK(mc_slab_class(mc_item_size(get(key))) == 7, "class of a long key");
	d = cachedump(1, 0);
	CHECK(!strcmp(d, "END\r\n"), "not in class 1");
	free(d);
	d = cachedump(7, 0);
	n = count_lines(d, "ITEM ");
	CHECK(strlen(d) <= (2u << 20) && n > 7000 && n < 9000 &&
	      !strcmp(d + strlen(d) - 5, "END\r\n"),
	      "cachedump reply bounded: %zu bytes, %d items", strlen(d), n);
	free(d);
	teardown();
	printf("ok - cachedump\n");
}

static void test_prefix_stats(void)
{
	struct evbuffer *b = evbuffer_new();
	char key[64], *d;
	size_t n;

	settings.prefix_delim = ':';
	settings.detail = false;
	stats_prefix_set("off:1", 5);
	settings.detail = true;
	stats_prefix_get("user:1", 6, true);
	stats_prefix_get("user:2", 6, false);
	stats_prefix_set("user:3", 6);
	stats_prefix_delete("user:1", 6);
	stats_prefix_set("nodelim", 7);
	stats_prefix_dump(b);
	n = evbuffer_get_length(b);
	d = calloc(1, n + 1);
	evbuffer_remove(b, d, n);
	CHECK(!strcmp(d, "PREFIX user get 2 hit 1 set 1 del 1\r\nEND\r\n"),
	      "prefix counters: %s", d);
	free(d);
	/* the table stops growing at PREFIX_MAX prefixes */
	for (int i = 0; i < PREFIX_MAX + 500; i++) {
		int l = snprintf(key, sizeof(key), "p%d:x", i);

		stats_prefix_set(key, (size_t)l);
	}
	stats_prefix_dump(b);
	n = evbuffer_get_length(b);
	d = calloc(1, n + 1);
	evbuffer_remove(b, d, n);
	CHECK(count_lines(d, "PREFIX ") == PREFIX_MAX, "prefix table bounded: %d",
	      count_lines(d, "PREFIX "));
	free(d);
	stats_prefix_clear();
	stats_prefix_dump(b);
	n = evbuffer_get_length(b);
	d = calloc(1, n + 1);
	evbuffer_remove(b, d, n);
	CHECK(!strcmp(d, "END\r\n"), "prefix stats cleared");
	free(d);
	settings.detail = false;
	evbuffer_free(b);
	printf("ok - prefix stats\n");
}

/* Mark everything idle volatile, then let the kernel purge it all. */
static void idle_and_purge(void)
{
	current_time += 11;
	store_tick(current_time, 10);
	purge_all();
}

/*
 * The purge flag P: a key lost to a purge is "EN P" once without an
 * origin, then a plain miss (also with R, as for an evicted key); N
 * vivifies a placeholder whose first caller gets W and P and the others Z
 * and P until a new value is stored; quiet mode hides the miss; an
 * origin's rebuild is a hit with P.
 */
static void test_meta_purge(void)
{
	char key[32], val[200], *r0;

	setup(16);
	for (int i = 0; i < 50; i++) {
		sprintf(key, "p%d", i);
		sprintf(val, "value-%d", i);
		put(CMD_SET, key, val);
	}
	CHECK(!strcmp(S("mg p1 v\r\n"), "VA 7\r\nvalue-1\r\n"), "hit before the purge");
	idle_and_purge();
	CHECK(!strcmp(S("mg p1 v\r\n"), "EN P\r\n"), "purged miss: %s", S("mg p1 v\r\n"));
	CHECK(!strcmp(S("mg p1 v\r\n"), "EN\r\n"), "reported once, then a miss");
	r0 = S("mg p2 v Oop k\r\n");
	CHECK(!strcmp(r0, "EN Oop kp2 P\r\n"), "P after opaque and key: %s", r0);
	CHECK(!strcmp(S("mg p3 v q\r\nmn\r\n"), "MN\r\n"), "quiet hides a purged miss");
	CHECK(!strcmp(S("get p4\r\n"), "END\r\n"), "classic get: a miss");
	CHECK(!strcmp(S("mg p4 v\r\n"), "EN\r\n"), "the classic miss consumed the report");
	/* N: one winner rebuilds, the others wait with Z */
	CHECK(!strcmp(S("mg p5 N30 v t\r\n"), "VA 0 t30 W P\r\n\r\n"), "first caller wins: %s", S("mg p5 v\r\n"));
	CHECK(!strcmp(S("mg p5 N30 v\r\n"), "VA 0 Z P\r\n\r\n"), "second caller waits");
	CHECK(!strcmp(S("mg p5 N30 s\r\n"), "HD s0 Z P\r\n"), "third caller waits");
	CHECK(!strcmp(S("ms p5 3 T0\r\nnew\r\nmg p5 v\r\n"), "HD\r\nVA 3\r\nnew\r\n"), "rebuilt: no W, Z or P");
	/*
	 * R without N acts only on a value that is there, as in memcached:
	 * a lost key is a miss, as an evicted one, and no placeholder is
	 * left that a get would serve as an empty value nobody set (for
	 * ever, with the lost item's TTL of 0)
	 */
	r0 = S("mg p6 R30 v t f\r\n");
	CHECK(!strcmp(r0, "EN P\r\n"), "R on a lost key: a miss: %s", r0);
	CHECK(!strcmp(S("get p6\r\n"), "END\r\n"), "no empty placeholder after R: %s", S("get p6\r\n"));
	CHECK(!strcmp(S("mg p6 R30 v\r\n"), "EN\r\n"), "R: reported once, then a miss");
	S("set p60 5 0 3\r\nabc\r\n");
	idle_and_purge();
	S("mg p60 R30 s\r\nmg p60 R30 Oo k q\r\n");
	r0 = S("get p60\r\nmg p60 s\r\n");
	CHECK(!strcmp(r0, "END\r\nEN\r\n"), "R, R q, then get and mg: %s", r0);
	CHECK(stats.purge_misses >= 5, "purge_misses counted (%llu)", (unsigned long long)stats.purge_misses);
	/* a rebuild from a synchronous origin is a hit with P */
	char err[128];

	CHECK(origin_parse("gen:size=20", err, sizeof(err)) == 0, "origin: %s", err);
	put(CMD_SET, "g1", "old");
	idle_and_purge();
	char *r = S("mg g1 s\r\n");
	CHECK(!strcmp(r, "HD s20 P\r\n"), "rebuilt from the origin: %s", r);
	CHECK(!strcmp(S("mg g1 s\r\n"), "HD s20\r\n"), "then a plain hit");
	CHECK(!strcmp(S("mg never s\r\n"), "HD s20\r\n"), "a plain miss reads through, no P");
	CHECK(stats.rebuilds == 1, "one rebuild (%llu)", (unsigned long long)stats.rebuilds);
	settings.origin = ORIGIN_NONE;
	teardown();
	printf("ok - meta purge flag\n");
}

/*
 * Random meta sessions against a shadow model, with purges at random
 * moments: a hit always carries the last value stored, P appears only on
 * a key that held a value at a purge, and only once.
 */
static void test_meta_model(void)
{
	enum { NK = 40 };
	struct { int state; char val[40]; } m[NK];   /* 0 none, 1 set, 2 maybe lost */
	char cmd[2048], key[16], exp[2048];
	unsigned int seed = 12345;
	int hits = 0, purged = 0;

	setup(16);
	memset(m, 0, sizeof(m));
	for (int step = 0; step < 20000; step++) {
		int k = (int)(rand_r(&seed) % NK), op = (int)(rand_r(&seed) % 100);
		char *r;

		sprintf(key, "m%d", k);
		if (op < 30) {
			sprintf(m[k].val, "v%d-%d", k, step);
			m[k].state = 1;
			sprintf(cmd, "ms %s %zu\r\n%s\r\n", key, strlen(m[k].val), m[k].val);
			CHECK(!strcmp(S2(cmd), "HD\r\n"), "ms %s", key);
		} else if (op < 35) {
			r = S2((sprintf(cmd, "md %s q\r\nmn\r\n", key), cmd));
			if (m[k].state == 1)
				CHECK(!strcmp(r, "MN\r\n"), "md %s: %s", key, r);
			else if (m[k].state == 0)
				CHECK(!strcmp(r, "NF\r\nMN\r\n"), "md %s: %s", key, r);
			else
				CHECK(!strcmp(r, "MN\r\n") || !strcmp(r, "NF\r\nMN\r\n"), "md %s: %s", key, r);
			m[k].state = 0;
		} else if (op < 37) {
			idle_and_purge();
			for (int i = 0; i < NK; i++)
				if (m[i].state == 1)
					m[i].state = 2;
		} else {
			r = S2((sprintf(cmd, "mg %s v\r\n", key), cmd));
			if (!strncmp(r, "VA ", 3)) {
				sprintf(exp, "VA %zu\r\n%s\r\n", strlen(m[k].val), m[k].val);
				CHECK(m[k].state && !strcmp(r, exp), "hit %s: %s, model %d %s", key, r, m[k].state, m[k].val);
				m[k].state = 1;
				hits++;
			} else if (!strcmp(r, "EN P\r\n")) {
				CHECK(m[k].state == 2, "P on %s, model %d", key, m[k].state);
				m[k].state = 0;
				purged++;
			} else {
				CHECK(!strcmp(r, "EN\r\n") && m[k].state == 0, "miss %s: %s, model %d", key, r, m[k].state);
			}
		}
	}
	CHECK(hits > 1000 && purged > 100, "the model saw hits (%d) and purges (%d)", hits, purged);
	teardown();
	printf("ok - meta model (%d hits, %d purged misses)\n", hits, purged);
}

/*
 * A lost key (bytes purged) without an origin answers as a key memcached
 * evicted: the replies below are memcached's for an absent key (difftest
 * checks those against Debian's memcached).  With an origin it is rebuilt
 * before the command decides, so it answers as if nothing had been lost.
 */
static void lose_all(void)
{
	current_time += 100;
	store_tick(current_time, 10);
	purge_all();
}

static void test_lost_semantics(void)
{
	char err[128];

	setup(16);
	settings.verify = false;
	S("set a 0 0 1\r\n1\r\nset b 0 0 1\r\n2\r\nset c 0 0 1\r\n3\r\n"
	  "set d 0 0 1\r\n4\r\nset e 0 0 1\r\n5\r\nset f 0 0 1\r\n6\r\n"
	  "set g 0 0 1\r\n7\r\n");
	lose_all();
	CHECK(index_count() == 7, "lost keys stay in the index");
	CHECK(!strcmp(S("add a 0 0 1\r\nA\r\nget a\r\n"),
		      "STORED\r\nVALUE a 0 1\r\nA\r\nEND\r\n"), "add stores over a lost key");
	CHECK(!strcmp(S("replace b 0 0 1\r\nB\r\n"), "NOT_STORED\r\n"), "replace: NOT_STORED");
	CHECK(!strcmp(S("touch c 0\r\n"), "NOT_FOUND\r\n"), "touch: NOT_FOUND");
	CHECK(!strcmp(S("delete d\r\n"), "NOT_FOUND\r\n"), "delete: NOT_FOUND");
	CHECK(!strcmp(S("incr e 1\r\n"), "NOT_FOUND\r\n"), "incr: NOT_FOUND");
	CHECK(!strcmp(S("cas f 0 0 1 1\r\nF\r\n"), "NOT_FOUND\r\n"), "cas: NOT_FOUND");
	CHECK(!strcmp(S("append g 0 0 1\r\nG\r\nget g\r\n"), "NOT_STORED\r\nEND\r\n"),
	      "append: NOT_STORED, then a miss");
	CHECK(index_count() == 1, "lost keys became misses (%llu left)",
	      (unsigned long long)index_count());
	teardown();

	/* with an origin, the rebuild decides */
	setup(16);
	settings.verify = false;
	CHECK(origin_parse("gen:size=4", err, sizeof(err)) == 0, "gen origin: %s", err);
	S("get a\r\nget b\r\nget c\r\nget d\r\nget e\r\n");
	lose_all();
	CHECK(!strcmp(S("add a 0 0 1\r\nA\r\n"), "NOT_STORED\r\n"), "origin: add NOT_STORED");
	CHECK(!strcmp(S("replace b 0 0 1\r\nB\r\n"), "STORED\r\n"), "origin: replace STORED");
	CHECK(!strcmp(S("touch c 0\r\n"), "TOUCHED\r\n"), "origin: touch TOUCHED");
	CHECK(!strcmp(S("delete d\r\n"), "DELETED\r\n"), "origin: delete DELETED");
	CHECK(stats.rebuilds == 4, "origin: 4 rebuilds (%llu)", (unsigned long long)stats.rebuilds);
	settings.origin = ORIGIN_NONE;
	teardown();

	/* the meta commands give the same answers for a lost key */
	setup(16);
	settings.verify = false;
	S("ms a 1\r\n1\r\nms b 1\r\n2\r\nms c 1\r\n3\r\nms d 1\r\n4\r\n"
	  "ms e 1\r\n5\r\nms f 1\r\n6\r\n");
	lose_all();
	CHECK(!strcmp(S("ms a 1 ME\r\nA\r\nmg a v\r\n"), "HD\r\nVA 1\r\nA\r\n"),
	      "meta: ms ME (add) stores over a lost key");
	CHECK(!strcmp(S("ms b 1 MR\r\nB\r\n"), "NS\r\n"), "meta: ms MR (replace): NS");
	CHECK(!strcmp(S("md c\r\n"), "NF\r\n"), "meta: md: NF");
	CHECK(!strcmp(S("md d I\r\n"), "NF\r\n"), "meta: md I: NF");
	CHECK(!strcmp(S("ma e\r\n"), "NF\r\n"), "meta: ma: NF");
	CHECK(!strcmp(S("ms f 1 MA\r\nF\r\nmg f v\r\n"), "NS\r\nEN\r\n"),
	      "meta: ms MA (append): NS, then a miss");
	CHECK(index_count() == 1, "meta: lost keys became misses (%llu left)",
	      (unsigned long long)index_count());
	teardown();

	/* with an origin, the rebuild decides for the meta commands too */
	setup(16);
	settings.verify = false;
	CHECK(origin_parse("gen:size=4", err, sizeof(err)) == 0, "gen origin: %s", err);
	S("get a\r\nget b\r\nget c\r\n");
	lose_all();
	CHECK(!strcmp(S("ms a 1 ME\r\nA\r\n"), "NS\r\n"), "meta origin: ms ME NS");
	CHECK(!strcmp(S("ms b 1 MR\r\nB\r\n"), "HD\r\n"), "meta origin: ms MR HD");
	CHECK(!strcmp(S("md c\r\n"), "HD\r\n"), "meta origin: md HD");
	CHECK(stats.rebuilds == 3, "meta origin: 3 rebuilds (%llu)", (unsigned long long)stats.rebuilds);
	settings.origin = ORIGIN_NONE;
	teardown();
	printf("ok - lost key semantics\n");
}

/*
 * A lost key rebuilt from the origin carries what the origin gave with its
 * bytes: the origin's flags (gen: has none, so 0, as a read-through of a
 * key never set), not the flags the client gave the bytes that were lost,
 * and none of the old value's meta bits (stale, win token, fetched, its
 * last access).  It keeps its expiry, the key's lifetime, and gets a new
 * cas.  Whichever path rebuilds it: a get, an mg, or another command
 * (rebuild_lost).  An mg that reads a key through sees it as new too.
 */
static void test_rebuild_metadata(void)
{
	char err[128], *r;

	setup(16);
	settings.verify = false;
	CHECK(origin_parse("gen:size=4", err, sizeof(err)) == 0, "gen origin: %s", err);
	S("set a 7 0 1\r\nx\r\n"
	  "ms b 1 F9 T1000\r\ny\r\nmd b I\r\n"
	  "ms c 1 F3\r\nz\r\nmg c v\r\n"
	  "ms d 1 F5 T1000\r\nw\r\nmg d R2000 v\r\n"
	  "set e 6 0 1\r\nv\r\n");
	r = S("mg b s\r\nmg d s\r\n");
	CHECK(!strcmp(r, "HD s1 X W\r\nHD s1 Z\r\n"), "b stale, d's token out: %s", r);
	lose_all();   /* 100 s later */
	r = S("get a\r\n");
	CHECK(!strncmp(r, "VALUE a 0 4\r\n", 13) && strlen(r) == 13 + 6 + 5,
	      "get: rebuilt with the origin's flags: %s", r);
	r = S("mg b s f t\r\n");
	CHECK(!strcmp(r, "HD s4 f0 t900 P\r\n"), "mg: not stale, its TTL kept: %s", r);
	r = S("mg c s f h l\r\n");
	CHECK(!strcmp(r, "HD s4 f0 h0 l0 P\r\n"), "mg: not fetched before, just accessed: %s", r);
	r = S("mg d s f\r\n");
	CHECK(!strcmp(r, "HD s4 f0 P\r\n"), "mg: no token out on the new value: %s", r);
	r = S("append e 0 0 1\r\n!\r\nget e\r\n");
	CHECK(!strncmp(r, "STORED\r\nVALUE e 0 5\r\n", 21),
	      "append: rebuilt with the origin's flags: %s", r);
	CHECK(stats.rebuilds == 5, "5 rebuilds (%llu)", (unsigned long long)stats.rebuilds);
	r = S("mg never s f h l\r\n");
	CHECK(!strcmp(r, "HD s4 f0 h0 l0\r\n"), "mg: a read-through is new too: %s", r);
	settings.origin = ORIGIN_NONE;
	teardown();
	printf("ok - rebuilt metadata\n");
}

static void *cold_get(void *arg)
{
	*(char **)arg = strdup(S("get y7\r\n"));
	return NULL;
}

static double now_ms(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec * 1e3 + t.tv_nsec / 1e6;
}

/* 3,000 values "value-I-..." under keys PREFIX0.., then 20 s idle */
static void fill_cold(const char *prefix)
{
	char key[32], val[200];

	for (int i = 0; i < 3000; i++) {
		sprintf(key, "%s%d", prefix, i);
		sprintf(val, "value-%d-%0100d", i, i);
		put(CMD_SET, key, val);
	}
	current_time += 20;
}

/* fill_cold, then a tick: the values go volatile */
static void fill_idle(const char *prefix)
{
	fill_cold(prefix);
	store_tick(current_time, 10);
}

/* fake_mark_hook: is cache_lock held while the kernel is asked to mark? */
static int marks_locked, marks_unlocked;

static void mark_lock_probe(void)
{
	if (pthread_rwlock_trywrlock(&cache_lock) == 0) {
		pthread_rwlock_unlock(&cache_lock);
		marks_unlocked++;
	} else {
		marks_locked++;
	}
}

/* store_wait_hook: the thread that makes the marks does it now */
static struct store_marks *pending_marks;
static int waits;

static void make_pending_marks(void)
{
	waits++;
	if (pending_marks && pending_marks->made < pending_marks->n)
		store_marks_unlocked(pending_marks);
}


/*
 * The tick's marks are made without cache_lock: a step claims them under
 * the lock (the segments are IDLE at once, so no get reads them), the
 * calls come after it is dropped, and whoever needs a claimed segment
 * before its mark is made waits for it (an unmark that overtook the mark
 * would leave the range volatile behind the store's back).  A mark that
 * fails is undone, by the waiter or by the tick, once.
 */
static void test_marks_unlocked(void)
{
	struct store_marks m = { 0 };
	struct store_stats st;
	char want[300];
	uint32_t cursor = 0;
	uint64_t f0, mk0;
	int claimed;

	setup(16);
	fill_cold("m");
	fake_mark_hook = mark_lock_probe;
	marks_locked = marks_unlocked = 0;
	cache_tick(current_time, 10);
	fake_mark_hook = NULL;
	CHECK(marks_unlocked > 0 && marks_locked == 0,
	      "the tick's marks are made outside the lock: %d outside, %d under it",
	      marks_unlocked, marks_locked);
	CHECK(store_audit() == 0 && fake_nranges() == marks_unlocked,
	      "each mark made is a range (%d)", fake_nranges());
	teardown();

	/* claimed, not made yet: counted, no kernel call, gets wait for it */
	setup(16);
	fill_cold("m");
	f0 = fake_marks;
	store_tick_step(current_time, 10, &cursor, STORE_TICK_MARKS, &m);
	claimed = (int)m.n;
	store_get_stats(&st);
	CHECK(claimed > 0 && fake_marks == f0 && st.volatile_ranges == (uint64_t)claimed,
	      "a step claims %d marks and makes none (%llu calls)", claimed,
	      (unsigned long long)(fake_marks - f0));
	pending_marks = &m;
	store_wait_hook = make_pending_marks;
	waits = 0;
	sprintf(want, "VALUE m7 0 %zu\r\nvalue-7-%0100d\r\nEND\r\n", strlen("value-7-") + 100, 7);
	CHECK(!strcmp(S("get m7\r\n"), want) && waits > 0 && m.made == m.n,
	      "a get of a segment whose mark is in flight waits for it (%d waits)", waits);
	store_wait_hook = NULL;
	store_marks_settle(&m);
	CHECK(store_audit() == 0, "no range is volatile behind the store's back");
	teardown();

	/* every mark fails: undone once, whether a get or the tick comes first */
	setup(16);
	fill_cold("m");
	fake_chaos(0, 1000, 0, 7);
	cursor = 0;
	mk0 = stats.marks;
	store_tick_step(current_time, 10, &cursor, STORE_TICK_MARKS, &m);
	claimed = (int)m.n;
	store_marks_unlocked(&m);
	CHECK(!strcmp(S("get m7\r\n"), want), "a get after a failed mark is served");
	store_marks_settle(&m);
	cache_tick(current_time, 10);
	fake_chaos(0, 0, 0, 7);
	store_get_stats(&st);
	CHECK(claimed > 0 && stats.marks == mk0 && stats.mark_failures >= (uint64_t)claimed &&
	      st.volatile_ranges == 0 && st.volatile_bytes == 0 && store_audit() == 0,
	      "failed marks undone once: %llu marks, %llu failures, %llu ranges counted",
	      (unsigned long long)(stats.marks - mk0), (unsigned long long)stats.mark_failures,
	      (unsigned long long)st.volatile_ranges);
	cache_tick(current_time, 10);
	CHECK(stats.marks > mk0 && fake_nranges() == (int)(stats.marks - mk0) &&
	      store_audit() == 0, "the next tick marks them (%llu)",
	      (unsigned long long)(stats.marks - mk0));
	teardown();
	printf("ok - marks unlocked\n");
}

/* Bytes of the memfd that hold pages. */
static uint64_t store_resident(void)
{
	struct stat sb;

	return fstat(store_fd, &sb) == 0 ? (uint64_t)sb.st_blocks * 512 : 0;
}

/*
 * A released segment's pages are punched outside cache_lock: by the
 * thread that released it, once it dropped the lock (cache_unlock), or,
 * when an allocation finds no room while punches wait, by the allocation.
 */
static void test_punches_unlocked(void)
{
	static char big[300 * 1024];
	char key[32], cmd[64];
	uint64_t before, after, p0;
	int stored = 0;

	setup(16);
	memset(big, 'P', sizeof(big) - 1);
	for (int i = 0; i < 30; i++) {
		sprintf(key, "p%d", i);
		stored += put(CMD_SET, key, big) == R_STORED;
	}
	before = store_resident();
	fake_punch_hook = mark_lock_probe;
	marks_locked = marks_unlocked = 0;
	p0 = fake_punches;
	for (int i = 0; i < 30; i++) {
		int n = sprintf(cmd, "delete p%d\r\n", i);

		CHECK(!strcmp(session(cmd, (size_t)n), "DELETED\r\n"), "delete p%d", i);
	}
	fake_punch_hook = NULL;
	after = store_resident();
	CHECK(strstr(S("stats\r\n"), "STAT hole_punches_queued ") != NULL &&
	      stat_punches_queued >= 30 && stat_punches >= stat_punches_queued,
	      "stats: %llu hole punches, %llu of them queued",
	      (unsigned long long)stat_punches, (unsigned long long)stat_punches_queued);
	CHECK(stored == 30 && marks_unlocked >= 30 && marks_locked == 0,
	      "deletes of 30 large values: %d punches outside the lock, %d under it",
	      marks_unlocked, marks_locked);
	CHECK(before >= 30 * sizeof(big) && after + 30 * (sizeof(big) - 4096) <= before,
	      "their pages were given back (%llu KiB resident, %llu before)",
	      (unsigned long long)(after >> 10), (unsigned long long)(before >> 10));

	/* released without an unlock after (as here): the allocation punches */
	for (int i = 0; i < 30; i++) {
		sprintf(key, "q%d", i);
		put(CMD_SET, key, big);
		sprintf(key, "q%d", i);
		store_forget(get(key));
	}
	p0 = fake_punches;
	for (int i = 0; i < 200; i++) {
		sprintf(key, "r%d", i);
		CHECK(put(CMD_SET, key, big) == R_STORED, "set r%d", i);
	}
	CHECK(fake_punches > p0 && store_audit() == 0,
	      "200 sets of 300 KiB into -m 16 with punches waiting: stored, %llu punched",
	      (unsigned long long)(fake_punches - p0));
	store_punch_pending();
	int present = 0, intact = 0;

	for (int i = 0; i < 200; i++) {
		struct item *it;

		sprintf(key, "r%d", i);
		it = get(key);
		if (!it || it->state != ITEM_OK)
			continue;
		present++;
		intact += cache_readable(it) &&
			  !memcmp(store_ptr(it->off), big, sizeof(big) - 1);
	}
	CHECK(present > 20 && intact == present && !stats.verify_errors,
	      "no slot was reused before its punch: %d of %d values intact", intact, present);
	CHECK(store_resident() <= (16u << 20) + (2u << 20),
	      "within -m once punched (%llu KiB resident)",
	      (unsigned long long)(store_resident() >> 10));
	teardown();
	printf("ok - punches unlocked\n");
}

/*
 * A get of a value in a volatile segment unmarks it without cache_lock:
 * one kernel call whose answer the read under the lock uses (a purge
 * found by it makes a miss), and a get of hot data is served while that
 * call is slow.  An answer no get came back for is used by the next tick.
 */
static void test_wake_unlocked(void)
{
	char key[32], val[200], want[300], *cold = NULL;
	uint64_t u0;
	pthread_t th;

	setup(16);
	stat_unlocked_unmarks = 0;
	fill_idle("w");
	CHECK(nfr > 0, "idle data marked (%d)", nfr);

	u0 = fake_unmarks;
	sprintf(want, "VALUE w5 0 %zu\r\nvalue-5-%0100d\r\nEND\r\n", strlen("value-5-") + 100, 5);
	CHECK(!strcmp(S("get w5\r\n"), want), "a cold get is served");
	CHECK(fake_unmarks == u0 + 1 && stats.unmarks == 1 && stat_unlocked_unmarks == 1,
	      "one unmark, made outside the lock and used under it (%llu calls)",
	      (unsigned long long)(fake_unmarks - u0));

	/* purged before the get: the answer the get got says so: a miss */
	store_tick(current_time, 10);
	purge_all();
	u0 = fake_unmarks;
	CHECK(!strcmp(S("get w6\r\n"), "END\r\n"), "a purged value is a miss");
	CHECK(fake_unmarks == u0 + 1 && stats.purged_ranges == 1, "one unmark found the purge");

	/* a claim nobody reads after: the tick uses the answer */
	for (int i = 0; i < 3000; i++) {
		sprintf(key, "x%d", i);
		put(CMD_SET, key, val);
	}
	current_time += 20;
	store_tick(current_time, 10);
	struct item *it = index_find("x9", 2, index_hash("x9", 2));
	uint32_t s = it ? store_claim_wake(it) : SEG_NONE;
	CHECK(s != SEG_NONE && store_claim_wake(it) == SEG_NONE, "one thread claims a wake-up");
	if (s != SEG_NONE)
		store_wake_unlocked(s);
	store_tick(current_time, 10);
	struct store_stats st;
	store_get_stats(&st);
	CHECK(store_audit() == 0 && st.volatile_ranges == (uint64_t)nfr,
	      "the tick used the posted answer: %llu ranges counted, %d in the kernel",
	      (unsigned long long)st.volatile_ranges, nfr);

	/* a slow unmark of cold data holds no get of hot data */
	fill_idle("y");
	put(CMD_SET, "hot", "h");
	fake_unmark_delay(1000000);
	double t0 = now_ms();
	pthread_create(&th, NULL, cold_get, &cold);
	usleep(50000);
	double t1 = now_ms();
	const char *hot = S("get hot\r\n");
	double t2 = now_ms();
	pthread_join(th, NULL);
	double t3 = now_ms();
	fake_unmark_delay(0);
	CHECK(!strcmp(hot, "VALUE hot 0 1\r\nh\r\nEND\r\n") && t2 - t1 < 400 && t3 - t0 >= 990,
	      "a hot get took %.0f ms while a cold get's unmark took %.0f ms", t2 - t1, t3 - t0);
	sprintf(want, "VALUE y7 0 %zu\r\nvalue-7-%0100d\r\nEND\r\n", strlen("value-7-") + 100, 7);
	CHECK(cold && !strcmp(cold, want), "the cold get is served after its slow unmark");
	free(cold);
	teardown();
	cache_lock_waits_reset();   /* test_lock_waits counts from a single thread */
	printf("ok - wake without the lock\n");
}

/*
 * --verify covers the bytes that leave: a reply is copied and checked, so
 * a change to the memfd after the get (a purge during the send) cannot
 * reach the client; without --verify a large value is sent from the memfd.
 */
static void test_verify_reply(void)
{
	static char big[8000], out[9000];
	static const char req[] = "get zc\r\n";
	struct item *it;
	struct conn c;
	size_t n;

	setup(16);
	memset(big, 'Z', sizeof(big) - 1);
	put(CMD_SET, "zc", big);
	for (int verify = 1; verify >= 0; verify--) {
		settings.verify = verify;
		memset(&c, 0, sizeof(c));
		c.fd = -1;
		conn_init_buffers(&c);
		conn_rbuf_reserve(&c, sizeof(req));
		memcpy(c.rbuf + c.rend, req, sizeof(req) - 1);
		c.rend += sizeof(req) - 1;
		proto_process(&c);
		it = get("zc");
		store_ptr(it->off)[100] = 'X';     /* purged after the check */
		n = evbuffer_get_length(c.out);
		CHECK(n < sizeof(out), "reply length %zu", n);
		evbuffer_remove(c.out, out, n);
		out[n] = 0;
		if (verify)
			CHECK(!memchr(out, 'X', n) && strstr(out, big),
			      "--verify: the reply holds the bytes checked");
		else
			CHECK(memchr(out, 'X', n) != NULL,
			      "no --verify: a large value is sent from the memfd");
		store_ptr(it->off)[100] = 'Z';
		conn_free_buffers(&c);
	}
	teardown();
	printf("ok - verify covers replies\n");
}

/*
 * The psi mode's band controller against its rules, over random bands and
 * random free-memory readings: never more than the cap given back, at most
 * a step a poll, a step up below the band (up to the cap), a step down
 * above it (down to 0), no change inside it; and a run of low readings
 * reaches the cap, a run of high ones gives it all back.
 */
static void test_psi_band(void)
{
	unsigned seed = 7;
	int bad = 0, reached = 0;

	for (int round = 0; round < 2000; round++) {
		struct psi_band b;
		uint64_t given = 0, next, f;

		b.low = (uint64_t)(rand_r(&seed) % 512 + 1) << 20;
		b.high = b.low + ((uint64_t)(rand_r(&seed) % 256) << 20);
		b.step = (uint64_t)(rand_r(&seed) % 64 + 1) << 20;
		b.cap = (uint64_t)(rand_r(&seed) % 200) << 20;
		for (int poll = 0; poll < 50; poll++) {
			f = (uint64_t)(rand_r(&seed) % 1024) << 20;
			next = psi_band_next(&b, given, f);
			if (next > b.cap)
				bad++;
			if (f < b.low && next != (given + b.step < b.cap ? given + b.step : b.cap))
				bad++;
			if (f > b.high && next != (given > b.step ? given - b.step : 0))
				bad++;
			if (f >= b.low && f <= b.high && next != given)
				bad++;
			given = next;
		}
		for (int poll = 0; poll <= (int)(b.cap / b.step) + 1; poll++)
			given = psi_band_next(&b, given, b.low ? b.low - 1 : 0);
		reached += given == b.cap;
		for (int poll = 0; poll <= (int)(b.cap / b.step) + 1; poll++)
			given = psi_band_next(&b, given, b.high + 1);
		if (given)
			bad++;
	}
	CHECK(bad == 0, "psi band: %d broken rules", bad);
	CHECK(reached == 2000, "psi band: %d of 2000 bands reach the cap", reached);
	printf("ok - psi band controller\n");
}

/* A thread that holds cache_lock (exclusive or shared) for a while. */
static void *hold_shared(void *arg)
{
	cache_rdlock();
	__atomic_store_n((int *)arg, 1, __ATOMIC_RELEASE);
	usleep(500000);
	cache_unlock();
	return NULL;
}

/*
 * An mg of hot data takes the lock shared, as a get does: it is served
 * while another thread holds the shared lock (a scrape's step), where it
 * used to wait for the exclusive lock until that thread let go.
 */
static void test_meta_fast(void)
{
	pthread_t th;
	int held = 0;

	setup(16);
	put(CMD_SET, "hot", "h");
	CHECK(!strcmp(S("mg hot v\r\n"), "VA 1\r\nh\r\n"), "mg of hot data");
	pthread_create(&th, NULL, hold_shared, &held);
	while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
		usleep(100);
	double t1 = now_ms();
	const char *out = S("mg hot v f\r\n");
	double t2 = now_ms();
	CHECK(!strcmp(out, "VA 1 f0\r\nh\r\n") && t2 - t1 < 250,
	      "mg served in %.0f ms while the shared lock is held for 500 ms", t2 - t1);
	pthread_join(th, NULL);
	CHECK(!strcmp(S("mg hot h l t\r\n"), "HD h1 l0 t-1\r\n"), "the fast path set the fetched bit");
	teardown();
	cache_lock_waits_reset();   /* test_lock_waits counts from a single thread */
	printf("ok - mg fast path\n");
}

/*
 * Key-local commands take the lock shared plus their key's stripe: a set,
 * a delete and a touch of hot keys complete while another thread holds
 * the shared lock (a scrape's step, a get), where they used to wait for
 * the exclusive lock until it let go.
 */
static void test_sets_shared(void)
{
	pthread_t th;
	int held = 0;
	double t1, t2;
	const char *o1, *o2, *o3, *o4, *o5;

	setup(16);
	put(CMD_SET, "warm", "w");   /* the active segment is open */
	put(CMD_SET, "old", "o");
	pthread_create(&th, NULL, hold_shared, &held);
	while (!__atomic_load_n(&held, __ATOMIC_ACQUIRE))
		usleep(100);
	t1 = now_ms();
	o1 = strdup(S("set hot 0 0 2\r\nhh\r\n"));
	o2 = strdup(S("touch old 100\r\n"));
	o3 = strdup(S("delete old\r\n"));
	o4 = strdup(S("add hot 0 0 1\r\nx\r\n"));
	o5 = strdup(S("ms meta 2 T0\r\nmm\r\n"));
	t2 = now_ms();
	CHECK(!strcmp(o1, "STORED\r\n") && !strcmp(o2, "TOUCHED\r\n") &&
	      !strcmp(o3, "DELETED\r\n") && !strcmp(o4, "NOT_STORED\r\n") &&
	      !strcmp(o5, "HD\r\n"),
	      "set, touch, delete, add, ms: %s %s %s %s %s", o1, o2, o3, o4, o5);
	CHECK(t2 - t1 < 250,
	      "set, touch, delete, add and ms served in %.0f ms while the shared lock is held for 500 ms",
	      t2 - t1);
	free((void *)o1);
	free((void *)o2);
	free((void *)o3);
	free((void *)o4);
	free((void *)o5);
	pthread_join(th, NULL);
	CHECK(!strcmp(S("get hot old meta\r\n"),
		      "VALUE hot 0 2\r\nhh\r\nVALUE meta 0 2\r\nmm\r\nEND\r\n"),
	      "the stores took effect");
	teardown();
	cache_lock_waits_reset();   /* test_lock_waits counts from a single thread */
	printf("ok - key-local sets under the shared lock\n");
}

/*
 * Key-local commands racing: RACE_THREADS threads, each with keys of its
 * own (which share stripes and segments with the others' keys), run
 * sets, adds, replaces, deletes, touches and gets through the protocol
 * and check every reply against a model of their keys; values of up to
 * 2 KB roll the active segment over every few hundred sets, and a few
 * large ones go to the exclusive path.  Meanwhile the main thread
 * scrapes (stats, stats items, stats cachedump walk the index stripe by
 * stripe), ticks, and audits the store under the exclusive lock.
 */
#define RACE_THREADS 4
#define RACE_KEYS 300

struct racer {
	unsigned int id, seed, ops;
	int bad;
	char *last[RACE_KEYS];
	char first_bad[200];
};

static void race_bad(struct racer *r, const char *what, const char *key,
		     const char *got)
{
	if (!r->bad++)
		snprintf(r->first_bad, sizeof(r->first_bad), "%s %s: got %.60s",
			 what, key, got);
}

static void *racer_run(void *arg)
{
	struct racer *r = arg;
	unsigned int seed = r->seed;
	size_t cap = 400000;
	char *req = malloc(cap), *want = malloc(cap), key[32];

	for (unsigned int op = 0; op < r->ops; op++) {
		unsigned int k = (unsigned int)rand_r(&seed) % RACE_KEYS;
		unsigned int c = (unsigned int)rand_r(&seed) % 100;
		char **last = &r->last[k];
		const char *out;

		snprintf(key, sizeof(key), "r%u_%u", r->id, k);
		if (c < 50) {
			size_t n = (unsigned int)rand_r(&seed) % 100 == 0 ?
				   300000 : 1 + (unsigned int)rand_r(&seed) % 2000;
			const char *cmd = c < 35 ? "set" : c < 42 ? "add" : "replace";
			bool stores = c < 35 || (c < 42 ? !*last : *last != NULL);
			char *v = malloc(n + 1);
			int h;

			for (size_t i = 0; i < n; i++)
				v[i] = (char)('a' + (op + i * 7 + k) % 26);
			v[n] = 0;
			h = snprintf(req, cap, "%s %s 0 0 %zu\r\n", cmd, key, n);
			memcpy(req + h, v, n);
			memcpy(req + h + n, "\r\n", 2);
			out = session(req, (size_t)h + n + 2);
			if (strcmp(out, stores ? "STORED\r\n" : "NOT_STORED\r\n"))
				race_bad(r, cmd, key, out);
			if (stores) {
				free(*last);
				*last = v;
			} else {
				free(v);
			}
		} else if (c < 60) {
			snprintf(req, cap, "delete %s\r\n", key);
			out = S2(req);
			if (strcmp(out, *last ? "DELETED\r\n" : "NOT_FOUND\r\n"))
				race_bad(r, "delete", key, out);
			free(*last);
			*last = NULL;
		} else if (c < 66) {
			snprintf(req, cap, "touch %s 0\r\n", key);
			out = S2(req);
			if (strcmp(out, *last ? "TOUCHED\r\n" : "NOT_FOUND\r\n"))
				race_bad(r, "touch", key, out);
		} else {
			/* a large value's reply passes OUT_SOFT: its size only */
			bool big = *last && strlen(*last) > 100000;

			snprintf(req, cap, big ? "mg %s s\r\n" : "get %s\r\n", key);
			out = S2(req);
			if (big)
				snprintf(want, cap, "HD s%zu\r\n", strlen(*last));
			else if (*last)
				snprintf(want, cap, "VALUE %s 0 %zu\r\n%s\r\nEND\r\n",
					 key, strlen(*last), *last);
			else
				snprintf(want, cap, "END\r\n");
			if (strcmp(out, want))
				race_bad(r, "get", key, out);
		}
	}
	free(req);
	free(want);
	return NULL;
}

static void test_local_race(void)
{
	static struct racer rs[RACE_THREADS];
	pthread_t th[RACE_THREADS];
	long audit_bad = 0;
	int running = RACE_THREADS, rounds = 0;
	uint64_t present = 0;

	setup(64);
	settings.idle_secs = 1000000;   /* ticks mark nothing: no purge */
	put(CMD_SET, "warm", "w");
	for (unsigned int i = 0; i < RACE_THREADS; i++) {
		memset(&rs[i], 0, sizeof(rs[i]));
		rs[i].id = i;
		rs[i].seed = 1234 + i;
		rs[i].ops = 6000;
		pthread_create(&th[i], NULL, racer_run, &rs[i]);
	}
	while (running) {
		switch (rounds++ % 4) {
		case 0:
			S("stats cachedump 1 0\r\n");
			break;
		case 1:
			S("stats items\r\nstats slabs\r\n");
			break;
		case 2:
			S("stats\r\n");
			clock_set(clock_secs() + 1);
			cache_tick(clock_secs(), settings.idle_secs);
			break;
		default:
			cache_wrlock();
			audit_bad += store_audit();
			cache_unlock();
			break;
		}
		running = 0;
		for (unsigned int i = 0; i < RACE_THREADS; i++)
			running += pthread_tryjoin_np(th[i], NULL) == EBUSY;
		if (running < RACE_THREADS) {
			/* join the rest; each joined once */
			for (unsigned int i = 0; i < RACE_THREADS; i++)
				pthread_join(th[i], NULL);
			running = 0;
		}
	}
	for (unsigned int i = 0; i < RACE_THREADS; i++) {
		CHECK(rs[i].bad == 0, "racer %u: %d wrong replies, first: %s",
		      i, rs[i].bad, rs[i].first_bad);
		for (unsigned int k = 0; k < RACE_KEYS; k++) {
			present += rs[i].last[k] != NULL;
			free(rs[i].last[k]);
		}
	}
	cache_wrlock();
	audit_bad += store_audit();
	CHECK(index_count() == present + 1, "index holds %llu items, the model %llu",
	      (unsigned long long)index_count(), (unsigned long long)present + 1);
	cache_unlock();
	CHECK(audit_bad == 0, "store audits under the race: %ld inconsistencies", audit_bad);
	CHECK(rounds > 4, "the main thread scraped and ticked %d times meanwhile", rounds);
	teardown();
	cache_lock_waits_reset();
	printf("ok - key-local commands racing (%d scrapes, ticks and audits)\n", rounds);
}

struct holder {
	bool write;
	int held;           /* set once the lock is taken */
};

static void *hold_lock(void *arg)
{
	struct holder *h = arg;

	if (h->write)
		cache_wrlock();
	else
		cache_rdlock();
	__atomic_store_n(&h->held, 1, __ATOMIC_RELEASE);
	usleep(30000);
	cache_unlock();
	return NULL;
}

static uint64_t stat_value(const char *text, const char *name)
{
	char pat[80];
	const char *p;

	snprintf(pat, sizeof(pat), "STAT %s ", name);
	p = strstr(text, pat);
	return p ? strtoull(p + strlen(pat), NULL, 10) : UINT64_MAX;
}

/* stats as text, cache_lock not held. */
static char *stats_text(void)
{
	struct evbuffer *out = evbuffer_new();

	stats_emit(out);
	return evbuffer_string(out);
}

/*
 * conns unlocked: stats conns makes two system calls per connection
 * (getpeername, getsockname).  They run outside the registry's lock, so
 * that workers registering and closing connections never wait for them.  This test's
 * own getpeername (it takes libc's place in this program) has another
 * thread register and unregister a connection while the call is under
 * way, and waits up to 2 s for it: with the lock held across the calls
 * the thread waits for the whole scrape.
 */
static bool peer_probe, peer_blocked;
static pthread_t peer_thread;
static struct conn *peer_other;

static void *peer_register(void *arg)
{
	conn_register(arg);
	conn_unregister(arg);
	return NULL;
}

int getpeername(int fd, struct sockaddr *sa, socklen_t *len)
{
	if (peer_probe) {
		struct timespec until;

		peer_probe = false;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_sec += 2;
		pthread_create(&peer_thread, NULL, peer_register, peer_other);
		if (pthread_timedjoin_np(peer_thread, NULL, &until) != 0)
			peer_blocked = true;   /* joined once the scrape is over */
		else
			peer_thread = 0;
	}
	return (int)syscall(SYS_getpeername, fd, sa, len);
}

static void test_conns_unlocked(void)
{
	struct conn *c = conn_alloc(sizeof(struct conn));
	struct evbuffer *out = evbuffer_new();
	char line[64];
	int sv[2];
	size_t n;
	char *text;

	peer_other = conn_alloc(sizeof(struct conn));
	CHECK(c && peer_other && out && socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == 0,
	      "conns: set up");
	c->fd = sv[0];
	c->state = ST_CMD;
	conn_register(c);
	peer_probe = true;
	conns_emit(out, NULL);
	if (peer_blocked)
		pthread_join(peer_thread, NULL);
	CHECK(!peer_probe && !peer_blocked,
	      "stats conns: a connection registered while it asks a socket's address");
	n = evbuffer_get_length(out);
	text = calloc(1, n + 1);
	evbuffer_remove(out, text, n);
	snprintf(line, sizeof(line), "STAT %d:addr unix:\r\nSTAT %d:listen_addr unix:\r\n",
		 sv[0], sv[0]);
	CHECK(strstr(text, line) && strstr(text, "conn_read") &&
	      n >= 5 && !strcmp(text + n - 5, "END\r\n"), "stats conns: %s", text);
	free(text);
	conn_unregister(c);
	close(sv[0]);
	close(sv[1]);
	evbuffer_free(out);
	free(c);
	free(peer_other);
}

/*
 * Lock waits: every test before this one ran in one thread, so nothing
 * waited; then a reader arriving while a writer holds the lock 30 ms
 * counts one read wait of about that long, and a writer arriving while a
 * reader holds it one write wait.
 */
static void test_lock_waits(void)
{
	struct lock_waits w;
	struct holder h = { 0 };
	pthread_t t;
	char *s;

	setup(16);
	put(CMD_SET, "a", "1");
	cache_rdlock();
	cache_unlock();
	cache_wrlock();
	cache_unlock();
	cache_lock_waits_sum(&w);
	CHECK(w.rd_waits == 0 && w.wr_waits == 0 && w.rd_wait_ns == 0 && w.wr_wait_ns == 0,
	      "single-threaded: no lock waits (%llu %llu)",
	      (unsigned long long)w.rd_waits, (unsigned long long)w.wr_waits);
	s = stats_text();
	CHECK(stat_value(s, "cache_lock_rd_waits") == 0 && stat_value(s, "cache_lock_wr_waits") == 0 &&
	      stat_value(s, "cache_lock_wait_us") == 0, "stats: no lock waits single-threaded");
	free(s);

	for (int round = 0; round < 2; round++) {
		h.write = round == 0;
		h.held = 0;
		pthread_create(&t, NULL, hold_lock, &h);
		while (!__atomic_load_n(&h.held, __ATOMIC_ACQUIRE))
			usleep(100);
		if (round == 0)
			cache_rdlock();
		else
			cache_wrlock();
		cache_unlock();
		pthread_join(t, NULL);
	}
	cache_lock_waits_sum(&w);
	CHECK(w.rd_waits == 1 && w.wr_waits == 1, "one wait each: rd %llu wr %llu",
	      (unsigned long long)w.rd_waits, (unsigned long long)w.wr_waits);
	CHECK(w.rd_wait_ns >= 10000000 && w.wr_wait_ns >= 10000000 &&
	      w.rd_wait_ns < 10000000000ull && w.wr_wait_ns < 10000000000ull,
	      "each wait about 30 ms: rd %llu us wr %llu us",
	      (unsigned long long)w.rd_wait_ns / 1000, (unsigned long long)w.wr_wait_ns / 1000);
	s = stats_text();
	CHECK(stat_value(s, "cache_lock_rd_waits") == 1 && stat_value(s, "cache_lock_wr_waits") == 1 &&
	      stat_value(s, "cache_lock_rd_wait_us") == w.rd_wait_ns / 1000 &&
	      stat_value(s, "cache_lock_wr_wait_us") == w.wr_wait_ns / 1000 &&
	      stat_value(s, "cache_lock_wait_us") == (w.rd_wait_ns + w.wr_wait_ns) / 1000,
	      "stats shows the waits");
	free(s);
	stats_reset();
	cache_lock_waits_sum(&w);
	CHECK(w.rd_waits == 0 && w.wr_waits == 0 && w.rd_wait_ns == 0,
	      "stats reset clears the waits");
	teardown();
	printf("ok - cache_lock waits\n");
}

int main(void)
{
	log_silence();
	test_index();
	test_index_fuzz();
	test_semantics();
	test_eviction();
	test_evict_list();
	test_compact_bounded();
	test_cleaner();
	test_volatile();
	test_tick_steps();
	test_compact();
	test_zero_copy();
	test_slow_reader();
	test_incr_in_flight();
	test_parser();
	test_cachedump();
	test_prefix_stats();
	test_meta_purge();
	test_meta_model();
	test_lost_semantics();
	test_rebuild_metadata();
	test_wake_unlocked();
	test_marks_unlocked();
	test_punches_unlocked();
	test_verify_reply();
	test_psi_band();
	test_meta_fast();
	test_sets_shared();
	test_local_race();
	test_conns_unlocked();
	test_lock_waits();      /* last: the threaded tests before it clear the waits */
	printf("%d checks, %d failed\n", checks, failures);
	return failures ? 1 : 0;
}
