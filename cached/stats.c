// SPDX-License-Identifier: GPL-2.0-only
/*
 * stats.c - counters in memcached's names plus the volatility counters.
 *
 * Counters live in the global struct stats (changed under cache_lock) and
 * a few atomics for connections and bytes; this file only formats them.
 * No scrape takes cache_lock exclusively.  stats items and stats slabs
 * read the store's per-class counters; stats cachedump, the one that
 * looks at items, walks the index in steps of INDEX_WALK_STEP items, each
 * under the shared lock, and its caller may let the event loop run
 * between steps (stats_cachedump_step), so neither a get nor a store
 * waits more than one step for a scrape.  The figures are approximate
 * while the cache changes, as memcached's are.
 */
#include "stats.h"

#include <inttypes.h>
#include <pthread.h>
#include <stdlib.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "cache.h"
#include "daemon.h"
#include "index.h"
#include "store.h"

uint64_t stat_conn_yields;
uint64_t stat_input_limit_closes;
uint64_t stat_idle_kicks;
uint64_t stat_fetch_queue_depth, stat_fetch_active, stat_fetch_coalesced;

const char *mode_name(enum cache_mode m)
{
	static const char *const names[] = {
		[MODE_PINNED] = "pinned", [MODE_VOLATILE] = "volatile",
		[MODE_PSI] = "psi", [MODE_MADVFREE] = "madvfree",
	};

	return names[m];
}

/* Copy the counters, each read atomically (stats, struct stats). */
static void stats_copy(struct stats *to)
{
	_Static_assert(sizeof(struct stats) % sizeof(uint64_t) == 0,
		       "struct stats holds only uint64_t counters");
	uint64_t *dst = (uint64_t *)to;
	uint64_t *src = (uint64_t *)&stats;

	for (size_t i = 0; i < sizeof(stats) / sizeof(uint64_t); i++)
		dst[i] = __atomic_load_n(&src[i], __ATOMIC_RELAXED);
}

#define U(name, v) evbuffer_add_printf(out, "STAT %s %" PRIu64 "\r\n", name, (uint64_t)(v))

/* items reclaimed per class: dead items a store replaced (stats items) */
static uint64_t class_reclaimed[CACHEDUMP_CLASSES];

static uint64_t reclaimed_sum(void)
{
	uint64_t n = 0;

	for (unsigned int i = 0; i < CACHEDUMP_CLASSES; i++)
		n += __atomic_load_n(&class_reclaimed[i], __ATOMIC_RELAXED);
	return n;
}

void stats_emit(struct evbuffer *out)
{
	struct store_stats st;
	struct stats s;
	struct rusage ru;
	struct lock_waits waits;
	uint32_t now = clock_secs();

	getrusage(RUSAGE_SELF, &ru);
	/*
	 * Shared: a get fast path adds to the counters meanwhile (atomic
	 * adds), so each is read atomically; the set is as consistent as a
	 * memcached scrape's, not a snapshot of one instant.
	 */
	cache_rdlock();
	stats_copy(&s);
	store_get_stats(&st);
	/*
	 * The items a get could return, as memcached's: the index also
	 * holds the keys whose bytes were lost, waiting for a rebuild
	 */
	s.curr_items = index_count();
	s.curr_items = s.curr_items > st.lost_items ? s.curr_items - st.lost_items : 0;
	uint64_t imem = index_mem_bytes();
	unsigned int hpower = index_hashpower();
	bool expanding = index_expanding();
	uint64_t maxbytes = settings.maxbytes;   /* cache_memlimit changes it */
	cache_unlock();
	cache_lock_waits_sum(&waits);

	U("pid", getpid());
	U("uptime", now - process_started);
	U("time", now);
	evbuffer_add_printf(out, "STAT version %s\r\n", CACHED_VERSION);
	evbuffer_add_printf(out, "STAT libevent %s\r\n", event_get_version());
	evbuffer_add_printf(out, "STAT pointer_size %d\r\n", (int)(8 * sizeof(void *)));
	evbuffer_add_printf(out, "STAT rusage_user %ld.%06ld\r\n",
			    (long)ru.ru_utime.tv_sec, (long)ru.ru_utime.tv_usec);
	evbuffer_add_printf(out, "STAT rusage_system %ld.%06ld\r\n",
			    (long)ru.ru_stime.tv_sec, (long)ru.ru_stime.tv_usec);
	U("max_connections", settings.maxconns);
	U("curr_connections", __atomic_load_n(&stat_curr_conns, __ATOMIC_RELAXED));
	U("total_connections", __atomic_load_n(&stat_total_conns, __ATOMIC_RELAXED));
	U("rejected_connections", __atomic_load_n(&stat_rejected_conns, __ATOMIC_RELAXED));
	/* as memcached's: the connections' structures and the listeners' */
	U("connection_structures", __atomic_load_n(&stat_conn_structs, __ATOMIC_RELAXED) +
				   __atomic_load_n(&stat_listeners, __ATOMIC_RELAXED));
	if (settings.idle_timeout)   /* as memcached: only with a timeout */
		U("idle_kicks", __atomic_load_n(&stat_idle_kicks, __ATOMIC_RELAXED));
	U("conn_yields", __atomic_load_n(&stat_conn_yields, __ATOMIC_RELAXED));
	U("input_limit_closes", __atomic_load_n(&stat_input_limit_closes, __ATOMIC_RELAXED));
	U("accepting_conns", __atomic_load_n(&stat_accepting, __ATOMIC_RELAXED));
	U("listen_disabled_num", __atomic_load_n(&stat_listen_disabled, __ATOMIC_RELAXED));
	U("time_in_listen_disabled_us", __atomic_load_n(&stat_listen_disabled_us, __ATOMIC_RELAXED));
	U("conn_buffer_bytes", __atomic_load_n(&stat_conn_buffer_bytes, __ATOMIC_RELAXED));
	U("cmd_get", s.cmd_get);
	U("cmd_set", s.cmd_set);
	U("cmd_flush", s.cmd_flush);
	U("cmd_touch", s.cmd_touch);
	U("get_hits", s.get_hits);
	U("get_misses", s.get_misses);
	U("get_expired", s.get_expired);
	U("get_flushed", s.get_flushed);
	U("delete_misses", s.delete_misses);
	U("delete_hits", s.delete_hits);
	U("incr_misses", s.incr_misses);
	U("incr_hits", s.incr_hits);
	U("decr_misses", s.decr_misses);
	U("decr_hits", s.decr_hits);
	U("cas_misses", s.cas_misses);
	U("cas_hits", s.cas_hits);
	U("cas_badval", s.cas_badval);
	U("touch_hits", s.touch_hits);
	U("touch_misses", s.touch_misses);
	U("bytes_read", __atomic_load_n(&stat_bytes_read, __ATOMIC_RELAXED));
	U("bytes_written", __atomic_load_n(&stat_bytes_written, __ATOMIC_RELAXED));
	U("limit_maxbytes", maxbytes);
	U("threads", settings.num_threads);
	U("hash_power_level", hpower);
	U("hash_bytes", (uint64_t)sizeof(void *) << hpower);
	U("hash_is_expanding", expanding);
	U("bytes", st.value_bytes);
	U("curr_items", s.curr_items);
	U("total_items", s.total_items);
	U("evictions", s.evictions);
	U("reclaimed", reclaimed_sum());
	U("evicted_unfetched", s.evicted_unfetched);
	U("expired_unfetched", s.expired_unfetched);
	evbuffer_add_printf(out, "STAT mode %s\r\n", mode_name(settings.mode_eff));
	U("volatile_bytes", st.volatile_bytes);
	U("volatile_ranges", st.volatile_ranges);
	U("purged_ranges", s.purged_ranges);
	U("purged_objects", s.purged_objects);
	U("rebuilds", s.rebuilds);
	U("rebuild_usec", s.rebuild_usec);
	U("purge_misses", s.purge_misses);
	U("origin_fetches", s.origin_fetches);
	U("origin_errors", s.origin_errors);
	U("fetch_queue_depth", __atomic_load_n(&stat_fetch_queue_depth, __ATOMIC_RELAXED));
	U("fetch_active", __atomic_load_n(&stat_fetch_active, __ATOMIC_RELAXED));
	U("fetch_coalesced", __atomic_load_n(&stat_fetch_coalesced, __ATOMIC_RELAXED));
	U("cache_lock_rd_waits", waits.rd_waits);
	U("cache_lock_wr_waits", waits.wr_waits);
	U("cache_lock_rd_wait_us", waits.rd_wait_ns / 1000);
	U("cache_lock_wr_wait_us", waits.wr_wait_ns / 1000);
	U("cache_lock_wait_us", (waits.rd_wait_ns + waits.wr_wait_ns) / 1000);
	U("stripe_lock_waits", index_stripe_waits());
	U("store_lock_waits", store_lock_waits());
	U("verify_errors", s.verify_errors);
	U("lost_items", st.lost_items);
	U("volatile_marks", s.marks);
	U("volatile_unmarks", s.unmarks);
	U("volatile_unmarks_unlocked", __atomic_load_n(&stat_unlocked_unmarks, __ATOMIC_RELAXED));
	U("hole_punches", __atomic_load_n(&stat_punches, __ATOMIC_RELAXED));
	U("hole_punches_queued", __atomic_load_n(&stat_punches_queued, __ATOMIC_RELAXED));
	U("volatile_mark_failures", s.mark_failures);
	U("volatile_unmark_failures", s.unmark_failures);
	U("quarantined_segments", st.quarantined);
	U("compacted_objects", s.compacted_objects);
	U("compact_checked_objects", s.compact_checked_objects);
	U("cleaned_objects", s.cleaned_objects);
	U("cleaned_segments", s.cleaned_segments);
	U("psi_events", s.psi_events);
	U("psi_drops", s.psi_drops);
	U("psi_dropped_bytes", s.psi_dropped_bytes);
	U("psi_polls", s.psi_polls);
	U("psi_reclaims", s.psi_reclaims);
	U("psi_advised_bytes", s.psi_advised_bytes);
	U("psi_free_bytes", s.psi_free_bytes);
	U("segment_size", st.seg_size);
	U("segments_small", st.segs_small);
	U("segments_large", st.segs_large);
	U("store_bytes", st.used_bytes);
	U("reply_held_bytes", st.zombie_bytes);
	U("index_bytes", imem);
	evbuffer_add(out, "END\r\n", 5);
}

void stats_settings_emit(struct evbuffer *out)
{
	static const char *origins[] = { "none", "gen", "dir", "memcache" };

	U("maxbytes", __atomic_load_n(&settings.maxbytes, __ATOMIC_RELAXED));
	U("maxconns", settings.maxconns);
	U("tcpport", settings.port);
	evbuffer_add_printf(out, "STAT inter %s\r\n", settings.inter ? settings.inter : "NULL");
	U("verbosity", settings.verbose);
	evbuffer_add_printf(out, "STAT domain_socket %s\r\n",
			    settings.socketpath ? settings.socketpath : "NULL");
	evbuffer_add_printf(out, "STAT umask %o\r\n", (unsigned)settings.access_mask);
	U("udpport", 0);
	U("tcp_backlog", settings.backlog);
	evbuffer_add_printf(out, "STAT binding_protocol ascii\r\n");
	evbuffer_add_printf(out, "STAT auth_enabled_sasl no\r\n");
	evbuffer_add_printf(out, "STAT auth_enabled_ascii no\r\n");
	evbuffer_add_printf(out, "STAT evictions on\r\n");
	evbuffer_add_printf(out, "STAT maxconns_fast yes\r\n");
	U("hashpower_init", settings.hashpower_init ? settings.hashpower_init : 16);
	evbuffer_add_printf(out, "STAT shutdown_command %s\r\n",
			    settings.shutdown_command ? "yes" : "no");
	U("num_threads", settings.num_threads);
	U("fetch_threads", settings.fetch_threads);
	evbuffer_add_printf(out, "STAT cas_enabled yes\r\n");
	U("item_size_max", settings.item_size_max);
	U("reqs_per_event", settings.reqs_per_event);
	U("idle_timeout", settings.idle_timeout);
	evbuffer_add_printf(out, "STAT lru_crawler yes\r\n");
	evbuffer_add_printf(out, "STAT dump_enabled %s\r\n", settings.no_dump ? "no" : "yes");
	evbuffer_add_printf(out, "STAT flush_enabled %s\r\n", settings.no_flush ? "no" : "yes");
	evbuffer_add_printf(out, "STAT stat_key_prefix %c\r\n", settings.prefix_delim);
	evbuffer_add_printf(out, "STAT detail_enabled %s\r\n",
			    __atomic_load_n(&settings.detail, __ATOMIC_RELAXED) ? "yes" : "no");
	evbuffer_add_printf(out, "STAT mode %s\r\n", mode_name(settings.mode));
	evbuffer_add_printf(out, "STAT mode_effective %s\r\n", mode_name(settings.mode_eff));
	U("idle", settings.idle_secs);
	evbuffer_add_printf(out, "STAT origin %s\r\n", origins[settings.origin]);
	evbuffer_add_printf(out, "STAT verify %s\r\n", settings.verify ? "yes" : "no");
	U("psi_stall_us", settings.psi_stall_us);
	U("psi_window_us", settings.psi_window_us);
	U("psi_drop_pct", settings.psi_drop_pct);
	evbuffer_add_printf(out, "STAT psi_policy %s\r\n",
			    settings.psi_policy == PSI_BAND ? "band" : "trigger");
	U("psi_low", settings.psi_low);
	U("psi_high", settings.psi_high);
	U("psi_step_pct", settings.psi_step_pct);
	U("psi_max_pct", settings.psi_max_pct);
	U("psi_interval_ms", settings.psi_interval_ms);
	U("output_limit", settings.out_max);
	U("input_limit", settings.in_max);
	U("memory_max", settings.memory_max);
	evbuffer_add(out, "END\r\n", 5);
}

void stats_reset(void)
{
	uint64_t *w = (uint64_t *)&stats;

	/* atomic stores: key-local commands count without the lock */
	cache_wrlock();
	for (size_t i = 0; i < sizeof(stats) / sizeof(uint64_t); i++)
		if (&w[i] != &stats.curr_items)
			__atomic_store_n(&w[i], 0, __ATOMIC_RELAXED);
	cache_unlock();
	__atomic_store_n(&stat_total_conns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stat_rejected_conns, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stat_conn_yields, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stat_input_limit_closes, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stat_idle_kicks, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stat_unlocked_unmarks, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stat_punches, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stat_punches_queued, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stat_bytes_read, 0, __ATOMIC_RELAXED);
	__atomic_store_n(&stat_bytes_written, 0, __ATOMIC_RELAXED);
	stats_prefix_clear();
	cache_lock_waits_reset();
	__atomic_store_n(&stat_fetch_coalesced, 0, __ATOMIC_RELAXED);
	for (unsigned int i = 0; i < CACHEDUMP_CLASSES; i++)
		__atomic_store_n(&class_reclaimed[i], 0, __ATOMIC_RELAXED);
}

/*
 * memcached groups items in slab classes by size and reports them per
 * class.  cached stores by size too, but not in classes; it reports each
 * item under the class memcached 1.6 would give it with its default
 * settings (mc_slab_class of mc_item_size, store.h), so that tools and
 * memcached's own tests that read per-class figures find them where they
 * look.  stats items and stats slabs read the store's per-class counters
 * (no walk): an item counts while it holds a value, expired or flushed
 * ones until they are dropped, as memcached counts them until its crawler
 * or a store reclaims them.  stats cachedump walks, in steps.
 */
static bool listed(const struct item *it, uint32_t now)
{
	return cache_alive(it, now) && it->state != ITEM_LOST;
}

void stats_note_store(const char *key, size_t nkey, uint32_t hv)
{
	struct item *it = index_find(key, nkey, hv);

	if (it && !cache_alive(it, clock_secs())) {
		__atomic_fetch_add(&class_reclaimed[mc_slab_class(mc_item_size(it)) %
						    CACHEDUMP_CLASSES], 1, __ATOMIC_RELAXED);
		/* as memcached counts a reclaimed item nobody read */
		if (!(__atomic_load_n(&it->mflags, __ATOMIC_RELAXED) & ITEM_MF_FETCHED))
			STAT_ADD(expired_unfetched);
	}
}

#define MC_PAGE (1u << 20)         /* memcached's slab page */

struct class_acc {
	uint32_t now, coldest;
	uint64_t n[CACHEDUMP_CLASSES], bytes[CACHEDUMP_CLASSES];
};

static void classes_count(struct class_acc *a)
{
	a->now = clock_secs();
	cache_rdlock();
	store_class_stats(a->n, a->bytes, &a->coldest);
	cache_unlock();
}

#define C(cls, name, v) evbuffer_add_printf(out, "STAT items:%u:%s %" PRIu64 "\r\n", \
					     cls, name, (uint64_t)(v))

void stats_items_emit(struct evbuffer *out)
{
	struct class_acc a;

	classes_count(&a);
	for (unsigned int i = 1; i < CACHEDUMP_CLASSES; i++) {
		if (!a.n[i])
			continue;
		C(i, "number", a.n[i]);
		C(i, "age", a.coldest && a.coldest < a.now ? a.now - a.coldest : 0);
		C(i, "mem_requested", a.bytes[i]);
		C(i, "reclaimed", __atomic_load_n(&class_reclaimed[i], __ATOMIC_RELAXED));
	}
	evbuffer_add(out, "END\r\n", 5);
}

#undef C
#define C(cls, name, v) evbuffer_add_printf(out, "STAT %u:%s %" PRIu64 "\r\n", \
					     cls, name, (uint64_t)(v))

void stats_slabs_emit(struct evbuffer *out)
{
	struct class_acc a;
	struct store_stats st;
	unsigned int active = 0;

	classes_count(&a);
	for (unsigned int i = 1; i < CACHEDUMP_CLASSES; i++) {
		uint32_t chunk = mc_chunk_size(i), per_page;
		uint64_t pages;

		if (!a.n[i] || !chunk)
			continue;
		per_page = MC_PAGE / chunk;
		pages = (a.n[i] + per_page - 1) / per_page;
		C(i, "chunk_size", chunk);
		C(i, "chunks_per_page", per_page);
		C(i, "total_pages", pages);
		C(i, "total_chunks", pages * per_page);
		C(i, "used_chunks", a.n[i]);
		C(i, "free_chunks", pages * per_page - a.n[i]);
		active++;
	}
	cache_rdlock();
	store_get_stats(&st);
	cache_unlock();
	U("active_slabs", active);
	U("total_malloced", st.used_bytes);
	evbuffer_add(out, "END\r\n", 5);
}

#undef C

#define CACHEDUMP_MAX (2u << 20)   /* memcached's bound on one reply */

struct cachedump {
	struct evbuffer *out;      /* the ITEM lines so far */
	uint64_t cursor;           /* cache_walk_step's */
	uint32_t now, limit, shown, id;
	size_t bytes;
	bool full;
};

/*
 * One "ITEM key [N b; T s]" line, as memcached writes it, built by hand:
 * a dump writes up to 70,000 lines per reply, and snprintf was a third
 * of its cost.
 */
static void dump_one(struct item *it, void *arg)
{
	struct cachedump *d = arg;
	char line[KEY_MAX_LENGTH + 64], *p = line;
	size_t n;

	if (d->full || (d->limit && d->shown >= d->limit) || !listed(it, d->now) ||
	    mc_slab_class(mc_item_size(it)) != d->id)
		return;
	memcpy(p, "ITEM ", 5);
	p += 5;
	memcpy(p, it->key, it->keylen);
	p += it->keylen;
	*p++ = ' ';
	*p++ = '[';
	p = put_u64(p, it->vlen);
	memcpy(p, " b; ", 4);
	p += 4;
	p = put_u64(p, item_exptime(it));
	memcpy(p, " s]\r\n", 5);
	p += 5;
	n = (size_t)(p - line);
	if (d->bytes + n + 6 > CACHEDUMP_MAX) {   /* END\r\n\0, as memcached */
		d->full = true;
		return;
	}
	evbuffer_add(d->out, line, n);
	d->bytes += n;
	d->shown++;
}

struct cachedump *stats_cachedump_new(uint32_t id, uint32_t limit)
{
	struct cachedump *d = calloc(1, sizeof(*d));

	if (!d)
		return NULL;
	d->out = evbuffer_new();
	if (!d->out) {
		free(d);
		return NULL;
	}
	d->now = clock_secs();
	d->limit = limit;
	d->id = id;
	return d;
}

bool stats_cachedump_step(struct cachedump *d)
{
	if (cache_walk_step(&d->cursor, dump_one, d))
		return true;
	/* the limit or the 2 MB bound reached: the reply is complete */
	return d->full || (d->limit && d->shown >= d->limit);
}

void stats_cachedump_end(struct cachedump *d, struct evbuffer *out)
{
	if (out) {
		evbuffer_add_buffer(out, d->out);
		evbuffer_add(out, "END\r\n", 5);
	}
	evbuffer_free(d->out);
	free(d);
}

void stats_cachedump_emit(struct evbuffer *out, uint32_t id, uint32_t limit)
{
	struct cachedump *d = stats_cachedump_new(id, limit);

	if (!d) {
		evbuffer_add(out, "SERVER_ERROR out of memory\r\n", 28);
		return;
	}
	while (!stats_cachedump_step(d))
		;
	stats_cachedump_end(d, out);
}

/* ---- stats detail -------------------------------------------------------- */

#define PREFIX_BUCKETS 256

struct prefix {
	struct prefix *next;
	uint64_t gets, hits, sets, dels;
	size_t len;
	char name[];
};

static struct prefix *prefixes[PREFIX_BUCKETS];
static unsigned nprefixes;
static pthread_mutex_t prefix_lock = PTHREAD_MUTEX_INITIALIZER;

static uint32_t rotl32(uint32_t x, int r)
{
	return (x << r) | (x >> (32 - r));
}

/*
 * MurmurHash3 x86_32, seed 0: memcached's default hash, which also places
 * prefixes in its table, so that stats detail dump lists them in the
 * same order as memcached.
 */
static uint32_t murmur3(const char *key, size_t len)
{
	const unsigned char *p = (const unsigned char *)key;
	const uint32_t c1 = 0xcc9e2d51, c2 = 0x1b873593;
	uint32_t h = 0, k;
	size_t i;

	for (i = 0; i + 4 <= len; i += 4) {
		k = (uint32_t)p[i] | (uint32_t)p[i + 1] << 8 |
		    (uint32_t)p[i + 2] << 16 | (uint32_t)p[i + 3] << 24;
		k *= c1;
		k = rotl32(k, 15);
		k *= c2;
		h ^= k;
		h = rotl32(h, 13);
		h = h * 5 + 0xe6546b64;
	}
	k = 0;
	switch (len & 3) {
	case 3:
		k ^= (uint32_t)p[i + 2] << 16;
		/* fall through */
	case 2:
		k ^= (uint32_t)p[i + 1] << 8;
		/* fall through */
	case 1:
		k ^= p[i];
		k *= c1;
		k = rotl32(k, 15);
		k *= c2;
		h ^= k;
	}
	h ^= (uint32_t)len;
	h ^= h >> 16;
	h *= 0x85ebca6b;
	h ^= h >> 13;
	h *= 0xc2b2ae35;
	h ^= h >> 16;
	return h;
}

/* The counters of a key's prefix, created if need be; prefix_lock held. */
static struct prefix *prefix_find(const char *key, size_t nkey)
{
	const char *d = memchr(key, settings.prefix_delim, nkey);
	struct prefix **head, *pf;
	size_t len;

	if (!d)
		return NULL;
	len = (size_t)(d - key);
	head = &prefixes[murmur3(key, len) % PREFIX_BUCKETS];
	for (pf = *head; pf; pf = pf->next)
		if (pf->len == len && !memcmp(pf->name, key, len))
			return pf;
	if (nprefixes >= PREFIX_MAX)
		return NULL;
	pf = calloc(1, sizeof(*pf) + len + 1);
	if (!pf)
		return NULL;
	memcpy(pf->name, key, len);
	pf->len = len;
	pf->next = *head;
	*head = pf;
	nprefixes++;
	return pf;
}

enum prefix_op { PF_GET, PF_HIT, PF_SET, PF_DEL };

static void prefix_count(const char *key, size_t nkey, enum prefix_op op)
{
	struct prefix *pf;

	if (!__atomic_load_n(&settings.detail, __ATOMIC_RELAXED))
		return;
	pthread_mutex_lock(&prefix_lock);
	pf = prefix_find(key, nkey);
	if (pf) {
		switch (op) {
		case PF_HIT:
			pf->hits++;
			/* fall through */
		case PF_GET:
			pf->gets++;
			break;
		case PF_SET:
			pf->sets++;
			break;
		case PF_DEL:
			pf->dels++;
			break;
		}
	}
	pthread_mutex_unlock(&prefix_lock);
}

void stats_prefix_get(const char *key, size_t nkey, bool hit)
{
	prefix_count(key, nkey, hit ? PF_HIT : PF_GET);
}

void stats_prefix_set(const char *key, size_t nkey)
{
	prefix_count(key, nkey, PF_SET);
}

void stats_prefix_delete(const char *key, size_t nkey)
{
	prefix_count(key, nkey, PF_DEL);
}

void stats_prefix_dump(struct evbuffer *out)
{
	pthread_mutex_lock(&prefix_lock);
	for (size_t b = 0; b < PREFIX_BUCKETS; b++)
		for (struct prefix *pf = prefixes[b]; pf; pf = pf->next)
			evbuffer_add_printf(out, "PREFIX %s get %" PRIu64 " hit %" PRIu64
					    " set %" PRIu64 " del %" PRIu64 "\r\n",
					    pf->name, pf->gets, pf->hits, pf->sets,
					    pf->dels);
	pthread_mutex_unlock(&prefix_lock);
	evbuffer_add(out, "END\r\n", 5);
}

void stats_prefix_clear(void)
{
	pthread_mutex_lock(&prefix_lock);
	for (size_t b = 0; b < PREFIX_BUCKETS; b++) {
		struct prefix *pf = prefixes[b], *next;

		for (; pf; pf = next) {
			next = pf->next;
			free(pf);
		}
		prefixes[b] = NULL;
	}
	nprefixes = 0;
	pthread_mutex_unlock(&prefix_lock);
}
