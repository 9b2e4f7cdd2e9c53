// SPDX-License-Identifier: GPL-2.0-only
/*
 * store.c - values in one memfd, cut into page-aligned segments.
 *
 * The memfd is a sparse file of slots of seg_size bytes (4x the budget,
 * so large objects always find contiguous room); only bytes written cost
 * memory, and freeing a range punches a hole.  It is reserved for the
 * largest budget cache_memlimit may set (--memory-max); the slots in use
 * (nslots) follow the largest budget set so far.
 *
 *  - Small values (<= seg_size/4) are appended to the active segment,
 *    8-byte aligned.  A segment is the unit of volatility and eviction.
 *  - A large value gets its own range of whole pages (one or more slots).
 *
 * Every segment keeps a list of its items and its last access time.  A
 * timer (store_tick) marks a segment whose items have all been idle for
 * --idle seconds volatile with ONE vol_mark call over its pages, made
 * outside cache_lock.  Hot
 * segments are never volatile, so a hit on hot data makes no system call.
 * Reading from a volatile segment unmarks it first (store_prepare_read):
 * if the kernel purged it, every item in it becomes ITEM_LOST (the index
 * keeps the keys), the range is freed, and the caller rebuilds or misses;
 * if not, the item read is copied forward into the active segment so the
 * rest of the cold segment can go volatile again on the next tick.
 *
 * The budget (-m) covers segment bytes plus index memory.  Over budget,
 * old lost items are forgotten first, then the coldest segment (oldest
 * access time) is evicted with all its items.
 *
 * Segment states.  Each slot has exactly one state (struct seg.state) and
 * every change of state goes through one function, named on the arrow:
 *
 *            seg_open                  seg_seal
 *   FREE ----------------> ACTIVE -----------------> SEALED
 *    ^  \  seg_spare_take    ^  (small, appending)     |  ^
 *    |   `-> SPARE ----------'           seg_claim_mark|  |seg_wake
 *    |        seg_open       |                         v  |  (not purged)
 *    |                       | seg_open             IDLE (marked volatile,
 *    |   WARM <--------------+                       small or large)
 *    |   WARM_IDLE ----------'  (warm_take unmarks)    |
 *    |        ^                                        | seg_wake: purged ->
 *    |        | seg_release(keep)                      | items lost
 *    |        |                                        v
 *    +---- seg_release <--- any of ACTIVE, SEALED, LARGE, IDLE
 *    |        |   \
 *    |        |    `--> ZOMBIE (replies point into it) --store_sweep-->
 *    |        v                                          seg_release
 *    +--- QUARANTINE  (an unmark failed: the kernel may still hold the
 *          range volatile; punched, never reused; quarantine_retry
 *          unmarks it again on later ticks and frees it)
 *
 *   FREE --seg_open(large)--> LARGE (+ CONT on the slots after the head)
 *   LARGE --seg_claim_mark--> IDLE --seg_wake--> LARGE
 *   WARM --seg_claim_mark--> WARM_IDLE (the tick marks warm segments)
 *
 * The invariant that keeps every byte right: the kernel may hold a slot
 * volatile only while its state is IDLE, WARM_IDLE or QUARANTINE.  A
 * range outlives a hole punch in the kernel, so seg_unmark() runs before
 * any marked slot is punched, reused or reset; when it fails the slot is
 * quarantined.  store_audit() checks this against POSIX_FADV_ISVOLATILE.
 *
 * Two holds are not states: refs (replies in flight that point into the
 * segment, atomic) and pinned (the store is moving the segment's items
 * and must not see it freed under its feet).
 *
 * A reply sends a value of STORE_ZERO_COPY_MIN bytes or more from the
 * memfd (store_ref_value).  A reference into a shared segment holds the
 * whole segment (1 MiB for a value of 2 KiB) for as long as the client
 * does not read, and one client that asked for values spread over every
 * segment and stopped reading used to pin the whole budget: eviction
 * forgot items without freeing a byte and every set failed.  So at most
 * a quarter of the budget's segments (pin_cap) may be shared segments
 * held by replies; past that, a value in a shared segment not held yet
 * is copied into its reply (a slow reader then holds copies, bounded by
 * its output bounds, as memcached holds the items it sends).  A large
 * object's slots hold its value and nothing else, so a reply pointing at
 * them holds what it sends, as a copy would: always sent from the memfd.
 * A segment released under replies is the replies' from then on: its
 * bytes leave the budget at once (zombie_bytes) and its slots wait as a
 * ZOMBIE, unused, until the last reply is written.
 *
 * The unmark of an IDLE segment that a get is about to read runs outside
 * cache_lock: under the shared lock the get claims the segment's wake-up
 * (wake: NONE -> CLAIMED, atomic; one thread wins), drops the lock, makes
 * the call and posts its answer (wake_res, then wake DONE), and only then
 * takes the lock exclusively for the read.  The segment stays IDLE all
 * along, so every path that leaves IDLE still goes through seg_unmark(),
 * which, for a claimed segment, waits for the posted answer and uses it
 * instead of calling the kernel again (a second unmark would report no
 * purge for a range the first found purged).  Posted answers that no get
 * came back for are used by the next tick (nwoken).
 *
 * The tick's marks run outside cache_lock too: a tick step claims each
 * mark under the lock (the segment goes IDLE, or WARM_IDLE for a warm
 * one, at once, with wake MARKING: no get reads it, no one claims its
 * wake-up) and the tick makes the calls after dropping the lock
 * (store_marks_unlocked), posting NONE or MARK_FAILED.  seg_unmark()
 * first waits for a mark in flight (seg_mark_wait), so an unmark never
 * overtakes the mark it undoes; a failed mark puts the segment back where
 * it was (seg_mark_failed), by whichever of the waiter and the next tick
 * step comes first.  A freed segment kept warm is marked by the next
 * tick, not by the thread that freed it.
 */
#define _GNU_SOURCE
#include "store.h"

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <sched.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "daemon.h"
#include "madvfree.h"
#include "volatile_fadvise.h"

#ifdef VOL_FAKE
/* Unit tests replace the kernel calls to simulate purges on any kernel. */
long fake_vol_mark(int fd, off_t off, off_t len);
long fake_vol_unmark(int fd, off_t off, off_t len);
long fake_vol_query(int fd, off_t off, off_t len);
#define vol_mark fake_vol_mark
#define vol_unmark fake_vol_unmark
#define vol_query fake_vol_query
int fake_fallocate(int fd, int mode, off_t off, off_t len);
#define fallocate fake_fallocate
#endif

#define PAGE 4096u

/*
 * --mode madvfree keeps the values in private anonymous memory and gives
 * idle segments up with MADV_FREE (madvfree.c); everything else in the
 * store is the same.  These four are the only places the two differ.
 */
static bool madv_on;

void store_use_madvfree(void)
{
	madv_on = true;
}

static long kern_mark(uint64_t off, uint64_t len)
{
	return madv_on ? madv_mark((off_t)off, (off_t)len) :
			 vol_mark(store_fd, (off_t)off, (off_t)len);
}

static long kern_unmark(uint64_t off, uint64_t len)
{
	return madv_on ? madv_unmark((off_t)off, (off_t)len) :
			 vol_unmark(store_fd, (off_t)off, (off_t)len);
}

static long kern_query(uint64_t off, uint64_t len)
{
	return madv_on ? madv_query((off_t)off, (off_t)len) :
			 vol_query(store_fd, (off_t)off, (off_t)len);
}

enum seg_state {
	SEG_FREE = 0,     /* unused slot: no pages, not volatile */
	SEG_SPARE,        /* taken to be populated by the main thread */
	SEG_ACTIVE,       /* small: objects are appended here */
	SEG_SEALED,       /* small: no more appends */
	SEG_LARGE,        /* one large object; head of its slots */
	SEG_CONT,         /* a slot after the head of a large object */
	SEG_PUNCH,        /* released for good, its pages punched outside the
			     lock (wake PUNCHING, then PUNCHED); then FREE */
	SEG_IDLE,         /* sealed small or large, marked volatile */
	SEG_WARM,         /* empty small, pages kept for reuse */
	SEG_WARM_IDLE,    /* empty small, pages kept, marked volatile */
	SEG_QUARANTINE,   /* unmark failed: may be volatile; never reused */
	SEG_ZOMBIE,       /* released while replies still point into it */
};

struct seg {
	uint8_t state;      /* enum seg_state */
	uint8_t large;      /* holds one large object (LARGE, IDLE, ZOMBIE) */
	uint8_t pinned;     /* items being moved: do not release */
	uint8_t keep;       /* ZOMBIE: release as warm when the refs go */
	uint32_t refs;      /* replies in flight that point into it (atomic) */
	uint32_t nslots;    /* slots spanned (head entry) */
	uint32_t born;      /* when it was opened: no older object written */
	uint64_t used;      /* bytes appended (small) / value bytes (large) */
	uint64_t charge;    /* bytes charged to the budget */
	uint64_t vbytes;    /* length of the volatile range (IDLE, WARM_IDLE) */
	uint64_t live;      /* bytes of linked items, as appended (small) */
	uint32_t nitems;
	uint32_t atime;
	uint32_t dead_by;   /* latest expiry of its items (a hint), 0 = none */
	uint32_t wake;      /* IDLE, WARM_IDLE: a WAKE_ value (atomic) */
	long wake_res;      /* the unmark's answer, once wake is WAKE_DONE */
	struct item *items;
};

/*
 * wake, the system call in flight on a marked segment outside the lock:
 * NONE (none), CLAIMED -> DONE (a get's unmark, IDLE only), MARKING ->
 * NONE or MARK_FAILED (the tick's mark, IDLE or WARM_IDLE); PUNCHING ->
 * PUNCHED (a PUNCH segment's hole punch).
 */
enum { WAKE_NONE, WAKE_CLAIMED, WAKE_DONE, WAKE_MARKING, WAKE_MARK_FAILED,
       WAKE_PUNCHING, WAKE_PUNCHED };

void (*store_wait_hook)(void);

char *store_base;
int store_fd = -1;

static struct seg *segs;
static uint64_t nslots, seg_size, budget, large_min;
static uint64_t slots_max;   /* slots reserved: memfd, mapping, tables */
static uint32_t active = SEG_NONE;
static uint64_t used_bytes, value_bytes, vol_bytes, vol_ranges;
static uint64_t nsmall, nlarge;
static bool vol_enabled;
static uint32_t cursor, reap_cursor, compact_cursor;   /* slot scans */
static uint32_t ncold, cold_pos, ncold_next;   /* eviction's list (coldest()) */

/*
 * Freed small segments are kept "warm" on a stack instead of being punched
 * out, and reused first: appending into pages that are already there costs
 * no page fault and no hole punch under the lock.  In volatile mode a warm
 * segment is marked volatile (WARM_IDLE), so the kernel may take its pages
 * back at any time; warm_take() unmarks it before reuse, and quarantines
 * it when the unmark fails.
 */
static uint32_t *warm;
static uint32_t nwarm;
static uint32_t nzombies, nquarantined;
static uint64_t zombie_bytes;   /* charge of ZOMBIE segments, not in used_bytes */
static int32_t nshared_held;    /* small segments with refs (atomic) */
static uint32_t nwoken;   /* segments with an answer posted, not used yet (atomic) */

/* Hole punches waiting (store_punch_pending) */
static pthread_mutex_t punch_mu = PTHREAD_MUTEX_INITIALIZER;
static uint32_t *punch_q;        /* heads waiting for their punch */
static uint32_t npunch_q;        /* punch_mu */
static uint32_t npunching;       /* PUNCH heads not freed yet (cache_lock) */
static uint32_t punches_taken;   /* taken from punch_q, not posted (atomic) */

/*
 * Items and bytes per memcached slab class (stats items, stats slabs),
 * kept at every link and unlink so that those scrapes read 64 counters
 * instead of walking the index.  Changed under the exclusive lock, read
 * under the shared one; atomic so that no reader ever sees a torn value.
 */
static uint64_t class_n[STORE_CLASSES], class_bytes[STORE_CLASSES];

#define MC_PAGE (1u << 20)
#define MC_CHUNK_MAX (MC_PAGE / 2)

size_t mc_item_size(const struct item *it)
{
	/* 48-byte header, key and NUL, client flags if not 0, value, cas */
	return 48 + (size_t)it->keylen + 1 + (it->flags ? 4 : 0) + it->vlen + 2 + 8;
}

uint32_t mc_chunk_size(unsigned int cls)
{
	double size = 96;
	unsigned int i = 1;

	for (;;) {
		uint32_t sz = (uint32_t)size;

		if (sz >= MC_CHUNK_MAX / 1.25)
			return i == cls ? MC_CHUNK_MAX : 0;
		if (sz % 8)
			sz += 8 - sz % 8;
		if (i == cls)
			return sz;
		size = sz * 1.25;
		i++;
	}
}

/* memcached's chunk sizes, class 1 first, computed once (mc_chunk_size). */
static uint32_t chunk_table[STORE_CLASSES];
static unsigned int chunk_classes;
static pthread_once_t chunk_once = PTHREAD_ONCE_INIT;

static void chunk_table_init(void)
{
	unsigned int n = 0;
	uint32_t sz;

	while (n + 1 < STORE_CLASSES && (sz = mc_chunk_size(n + 1)))
		chunk_table[n++] = sz;
	chunk_classes = n;
}

unsigned int mc_slab_class(size_t ntotal)
{
	unsigned int i;

	pthread_once(&chunk_once, chunk_table_init);
	for (i = 0; i < chunk_classes; i++)
		if (ntotal <= chunk_table[i])
			return i + 1;
	return chunk_classes;    /* larger items are chunked in the last */
}

/* Count a linked item in its class (sign +1) or take it out (-1). */
static void class_count(const struct item *it, int sign)
{
	size_t size = mc_item_size(it);
	unsigned int cls = mc_slab_class(size) % STORE_CLASSES;

	__atomic_fetch_add(&class_n[cls], (uint64_t)(int64_t)sign, __ATOMIC_RELAXED);
	__atomic_fetch_add(&class_bytes[cls], (uint64_t)((int64_t)sign * (int64_t)size),
			   __ATOMIC_RELAXED);
}

/*
 * Spare segments: fresh slots whose pages the main thread has populated
 * (MADV_POPULATE_WRITE) outside the lock, so appending into a new segment
 * does not take 256 page faults on the request path.
 */
#define SPARE_TARGET 4
static uint32_t spare[SPARE_TARGET];
static uint32_t nspare, nspare_out;   /* ready; being populated */
void (*store_spare_wanted)(void);

/* Lost items, oldest first, linked through snext/sprev. */
static struct item *lost_head, *lost_tail;
static uint64_t lost_count, lost_bytes;

static uint64_t round_up(uint64_t v, uint64_t a)
{
	return (v + a - 1) / a * a;
}

static uint64_t seg_off(uint32_t s)
{
	return (uint64_t)s * seg_size;
}

static uint64_t seg_span(uint32_t s)
{
	return (uint64_t)(segs[s].nslots ? segs[s].nslots : 1) * seg_size;
}

/* Holds objects that can be read without a system call. */
static bool seg_readable(const struct seg *g)
{
	return g->state == SEG_ACTIVE || g->state == SEG_SEALED ||
	       g->state == SEG_LARGE;
}

/* Holds objects (readable or marked volatile). */
static bool seg_holds(const struct seg *g)
{
	return seg_readable(g) || g->state == SEG_IDLE;
}

/* May be volatile in the kernel. */
static bool seg_marked(const struct seg *g)
{
	return g->state == SEG_IDLE || g->state == SEG_WARM_IDLE ||
	       g->state == SEG_QUARANTINE;
}

/* Slots for a budget: 4x its bytes, and a few for large objects. */
static uint64_t slots_for(uint64_t bytes)
{
	return 4 * ((bytes + seg_size - 1) / seg_size) + 8;
}

/*
 * Create memfd, size it, map it, allocate the segment table.  The memfd,
 * the mapping and the table are reserved for the largest budget the
 * store may get (--memory-max, at least maxbytes), so that cache_memlimit
 * can grow the budget up to it without moving anything a reply points
 * into.  The reservation costs address space only: the memfd is sparse,
 * and the table (sizeof(struct seg) + 4 bytes per slot) is calloc'ed
 * pages that stay untouched until a slot is used.  The slot scans
 * (eviction, ticks) cover nslots, the slots of the largest budget set so
 * far.  Segment size follows the starting budget.
 */
int store_init(uint64_t maxbytes, bool vol)
{
	uint64_t max = settings.memory_max > maxbytes ? settings.memory_max : maxbytes;

	budget = maxbytes;
	seg_size = 1u << 20;
	while (seg_size > 64 * 1024 && seg_size * 16 > maxbytes)
		seg_size >>= 1;
	large_min = seg_size / 4;
	slots_max = slots_for(max);
	nslots = slots_for(maxbytes);
	vol_enabled = vol;
	if (madv_on) {
		store_fd = -1;
		store_base = mmap(NULL, slots_max * seg_size, PROT_READ | PROT_WRITE,
				  MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
	} else {
		store_fd = memfd_create("cached-values", MFD_CLOEXEC);
		if (store_fd < 0)
			return -1;
		if (ftruncate(store_fd, (off_t)(slots_max * seg_size)) < 0)
			return -1;
		store_base = mmap(NULL, slots_max * seg_size, PROT_READ | PROT_WRITE,
				  MAP_SHARED, store_fd, 0);
	}
	if (store_base == MAP_FAILED) {
		store_base = NULL;
		return -1;
	}
	if (madv_on && madv_init(store_base, slots_max * seg_size) < 0)
		return -1;
	segs = calloc(slots_max, sizeof(*segs));
	warm = calloc(slots_max, sizeof(*warm));
	punch_q = calloc(slots_max, sizeof(*punch_q));
	nwarm = 0;
	npunch_q = npunching = 0;
	if (!segs || !warm || !punch_q)
		return -1;
	cache_unlock_work = store_punch_pending;
	active = SEG_NONE;
	used_bytes = value_bytes = vol_bytes = vol_ranges = 0;
	nsmall = nlarge = 0;
	nzombies = nquarantined = 0;
	zombie_bytes = 0;
	nshared_held = 0;
	nwoken = 0;
	ncold = cold_pos = ncold_next = 0;
	nspare = nspare_out = 0;
	cursor = reap_cursor = compact_cursor = 0;
	lost_head = lost_tail = NULL;
	lost_count = lost_bytes = 0;
	return 0;
}

/* Unmap and close; the index must have been emptied by the caller. */
void store_destroy(void)
{
	if (store_base)
		munmap(store_base, slots_max * seg_size);
	if (store_fd >= 0)
		close(store_fd);
	if (madv_on)
		madv_destroy();
	free(segs);
	free(warm);
	free(punch_q);
	warm = NULL;
	punch_q = NULL;
	nwarm = 0;
	npunch_q = npunching = 0;
	__atomic_store_n(&cache_unlock_pending, 0, __ATOMIC_RELAXED);
	segs = NULL;
	store_base = NULL;
	store_fd = -1;
}

/*
 * Hole punches outside the lock.  A slot range released for good becomes
 * PUNCH (its head; CONT after it) and waits in punch_q; the thread that
 * released it punches it after dropping cache_lock (cache_unlock calls
 * store_punch_pending when cache_unlock_pending says there is work) and
 * posts PUNCHED; the next allocation that looks at the range under the
 * lock frees it (slot_free).  An allocation that finds no room while
 * punches are waiting makes them itself (find_slots).  punch_q is guarded
 * by punch_mu, not by cache_lock: the punching thread holds no lock.
 */
static void punch(uint32_t s, uint64_t len);

void store_punch_pending(void)
{
	for (;;) {
		uint32_t batch[64], n = 0;

		pthread_mutex_lock(&punch_mu);
		while (n < 64 && npunch_q)
			batch[n++] = punch_q[--npunch_q];
		__atomic_store_n(&cache_unlock_pending, npunch_q, __ATOMIC_RELAXED);
		__atomic_fetch_add(&punches_taken, n, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&punch_mu);
		if (!n)
			return;
		for (uint32_t i = 0; i < n; i++) {
			struct seg *g = &segs[batch[i]];

			punch(batch[i], (uint64_t)g->nslots * seg_size);
			__atomic_store_n(&g->wake, WAKE_PUNCHED, __ATOMIC_RELEASE);
		}
		__atomic_fetch_add(&stat_punches_queued, n, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&punches_taken, n, __ATOMIC_RELEASE);
	}
}

/* Release slots [s, s + n) for good: punched outside the lock, then FREE. */
static void seg_punch_later(uint32_t s, uint32_t n)
{
	struct seg *g = &segs[s];

	memset(g, 0, sizeof(*g));
	g->state = SEG_PUNCH;
	g->nslots = n;
	g->wake = WAKE_PUNCHING;
	for (uint32_t i = 1; i < n; i++)
		segs[s + i].state = SEG_CONT;
	npunching++;
	pthread_mutex_lock(&punch_mu);
	punch_q[npunch_q++] = s;
	__atomic_store_n(&cache_unlock_pending, npunch_q, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&punch_mu);
}

static void seg_clear(uint32_t s, uint32_t n);

/*
 * The store's mutex.  Key-local commands (cache_lock shared) change the
 * store under it: the append of a value to the active segment, the link
 * and unlink of their item, the release of a segment that emptied, the
 * lost list.  Scrapes under the shared lock read the store's totals under
 * it.  Holders of the exclusive lock need not take it: every other
 * holder of store_mu holds cache_lock shared.
 */
static pthread_mutex_t store_mu = PTHREAD_MUTEX_INITIALIZER;
static uint64_t store_mu_waits;

void store_lock(void)
{
	if (pthread_mutex_trylock(&store_mu) == 0)
		return;
	__atomic_fetch_add(&store_mu_waits, 1, __ATOMIC_RELAXED);
	pthread_mutex_lock(&store_mu);
}

void store_unlock(void)
{
	pthread_mutex_unlock(&store_mu);
}

uint64_t store_lock_waits(void)
{
	return __atomic_load_n(&store_mu_waits, __ATOMIC_RELAXED);
}

/* Exclusive lock: true when slot s is FREE (a punched PUNCH range is freed). */
static bool slot_free(uint32_t s)
{
	struct seg *g = &segs[s];

	if (g->state == SEG_PUNCH &&
	    __atomic_load_n(&g->wake, __ATOMIC_ACQUIRE) == WAKE_PUNCHED) {
		npunching--;
		seg_clear(s, g->nslots);
	}
	return g->state == SEG_FREE;
}

/*
 * Bytes of the budget in use: segments, index memory, and the pages kept
 * for reuse (warm and spare segments, and spares being populated), which
 * are resident too: -m bounds what the store keeps in memory.
 */
static uint64_t charged(void)
{
	return used_bytes + index_mem_bytes() +
	       (uint64_t)(nwarm + nspare + nspare_out) * seg_size;
}

static void punch(uint32_t s, uint64_t len)
{
	__atomic_fetch_add(&stat_punches, 1, __ATOMIC_RELAXED);
	if (madv_on)
		madv_punch((off_t)seg_off(s), (off_t)len);
	else
		fallocate(store_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  (off_t)seg_off(s), (off_t)len);
}

/* Wait for a system call that another thread makes outside the lock. */
static void store_wait(void)
{
	if (store_wait_hook)
		store_wait_hook();
	else
		sched_yield();
}

/*
 * The tick's mark of s failed (posted as MARK_FAILED): the range was never
 * volatile.  Back to the state it was claimed from, the accounting of the
 * claim undone.  Exclusive lock.
 */
static void seg_mark_failed(uint32_t s)
{
	struct seg *g = &segs[s];

	assert(g->state == SEG_IDLE || g->state == SEG_WARM_IDLE);
	stats.marks--;
	stats.mark_failures++;
	vol_bytes -= g->vbytes;
	vol_ranges--;
	g->vbytes = 0;
	if (g->state == SEG_WARM_IDLE)
		g->state = SEG_WARM;
	else
		g->state = g->large ? SEG_LARGE : SEG_SEALED;
	__atomic_store_n(&g->wake, WAKE_NONE, __ATOMIC_RELAXED);
}

/*
 * Before anything leaves a marked state: wait for a mark of s still in
 * flight outside the lock (an unmark must not overtake it, or the range
 * would end up volatile behind the store's back).  Returns true when the
 * mark failed and s is back where it was (not marked), else false.
 */
static bool seg_mark_wait(uint32_t s)
{
	struct seg *g = &segs[s];
	uint32_t w;

	while ((w = __atomic_load_n(&g->wake, __ATOMIC_ACQUIRE)) == WAKE_MARKING)
		store_wait();
	if (w != WAKE_MARK_FAILED)
		return false;
	seg_mark_failed(s);
	return true;
}

/*
 * The one place a marked range is given back by the store: unmark the
 * whole span of slot s.  Returns 1 if the kernel had purged any of it, 0
 * if not, or a negative errno with the range still volatile.  Drops the
 * volatile accounting either way (the caller changes the state).
 */
static long seg_unmark(uint32_t s)
{
	struct seg *g = &segs[s];
	long r;

	if (seg_mark_wait(s))
		return 0;       /* the mark failed: it was never volatile */
	if (__atomic_load_n(&g->wake, __ATOMIC_ACQUIRE) != WAKE_NONE) {
		/* a get is unmarking it outside the lock: its answer holds */
		while (__atomic_load_n(&g->wake, __ATOMIC_ACQUIRE) != WAKE_DONE)
			store_wait();
		r = g->wake_res;
		__atomic_store_n(&g->wake, WAKE_NONE, __ATOMIC_RELAXED);
		__atomic_fetch_sub(&nwoken, 1, __ATOMIC_RELAXED);
	} else {
		r = kern_unmark(seg_off(s), seg_span(s));
	}
	stats.unmarks++;
	if (r < 0) {
		stats.unmark_failures++;
		return r;
	}
	if (g->state == SEG_IDLE || g->state == SEG_WARM_IDLE) {
		vol_bytes -= g->vbytes;
		vol_ranges--;
		g->vbytes = 0;
	}
	return r;
}

/*
 * Claim the mark of s over len bytes for the caller to make outside the
 * lock (store_marks_unlocked): s becomes IDLE (sealed or large) or
 * WARM_IDLE (warm) at once, with its mark in flight (wake MARKING), so
 * that no get reads it and no one unmarks it before the mark is made
 * (seg_mark_wait).  The accounting counts the mark now; a failed one is
 * undone by seg_mark_failed.
 */
static void seg_claim_mark(uint32_t s, uint64_t len, struct store_marks *m)
{
	struct seg *g = &segs[s];

	assert(g->state == SEG_SEALED || g->state == SEG_LARGE ||
	       g->state == SEG_WARM);
	assert(!__atomic_load_n(&g->refs, __ATOMIC_ACQUIRE));
	assert(__atomic_load_n(&g->wake, __ATOMIC_RELAXED) == WAKE_NONE);
	assert(m->n < STORE_TICK_MARKS);
	stats.marks++;
	g->state = g->state == SEG_WARM ? SEG_WARM_IDLE : SEG_IDLE;
	g->vbytes = len;
	vol_bytes += len;
	vol_ranges++;
	__atomic_store_n(&g->wake, WAKE_MARKING, __ATOMIC_RELAXED);
	m->seg[m->n] = s;
	m->off[m->n] = seg_off(s);
	m->len[m->n] = len;
	m->n++;
}

void store_marks_unlocked(struct store_marks *m)
{
	for (uint32_t i = 0; i < m->n; i++) {
		struct seg *g = &segs[m->seg[i]];
		long r = kern_mark(m->off[i], m->len[i]);

		__atomic_store_n(&g->wake, r < 0 ? WAKE_MARK_FAILED : WAKE_NONE,
				 __ATOMIC_RELEASE);
	}
	m->made = m->n;
}

void store_marks_settle(struct store_marks *m)
{
	assert(m->made == m->n);   /* made before the lock was taken again */
	for (uint32_t i = 0; i < m->n; i++) {
		uint32_t s = m->seg[i];

		/* settled already if an unmark or a release came first */
		if (__atomic_load_n(&segs[s].wake, __ATOMIC_ACQUIRE) == WAKE_MARK_FAILED)
			seg_mark_failed(s);
	}
	m->n = m->made = 0;
}

/* The slots of s (already punched) wait for an unmark that succeeds. */
static void seg_quarantine(uint32_t s, uint32_t n)
{
	struct seg *g = &segs[s];

	if (g->state == SEG_IDLE || g->state == SEG_WARM_IDLE) {
		vol_bytes -= g->vbytes;
		vol_ranges--;
	}
	memset(g, 0, sizeof(*g));
	g->state = SEG_QUARANTINE;
	g->nslots = n;
	for (uint32_t i = 1; i < n; i++)
		segs[s + i].state = SEG_CONT;
	nquarantined++;
}

/* Give the slots of s back as FREE. */
static void seg_clear(uint32_t s, uint32_t n)
{
	memset(&segs[s], 0, sizeof(segs[s]));
	for (uint32_t i = 1; i < n; i++)
		segs[s + i].state = SEG_FREE;
}

/* Retry the unmark of quarantined slots; frees those that succeed. */
static void quarantine_retry(void)
{
	for (uint32_t s = 0; nquarantined && s < nslots; s++) {
		struct seg *g = &segs[s];

		if (g->state != SEG_QUARANTINE)
			continue;
		if (seg_unmark(s) < 0)
			continue;
		nquarantined--;
		seg_clear(s, g->nslots ? g->nslots : 1);
	}
}

/*
 * Release an emptied segment (ACTIVE, SEALED, LARGE, IDLE, or a ZOMBIE
 * whose replies are gone).  Every punch, reuse or reset of a slot goes
 * through here: a marked segment is unmarked first, and quarantined when
 * that fails.  keep: a small segment's pages stay as a warm segment.
 */
static void seg_release(uint32_t s, bool keep)
{
	struct seg *g = &segs[s];
	uint32_t n = g->nslots ? g->nslots : 1;
	bool small = !g->large;

	assert(seg_holds(g) || g->state == SEG_ZOMBIE);
	assert(g->nitems == 0 && !g->pinned);
	if (active == s)
		active = SEG_NONE;
	if (__atomic_load_n(&g->refs, __ATOMIC_ACQUIRE)) {
		/*
		 * A reply still points here: keep it until store_sweep.
		 * Its bytes are the reply's now, bounded by the reply's
		 * bound, not the budget's: the budget is free for new data.
		 */
		assert(g->state != SEG_IDLE);
		if (g->state != SEG_ZOMBIE) {
			nzombies++;
			used_bytes -= g->charge;
			zombie_bytes += g->charge;
			if (small)
				nsmall--;
			else
				nlarge--;
		}
		g->state = SEG_ZOMBIE;
		g->keep = keep;
		return;
	}
	if (g->state == SEG_ZOMBIE) {
		nzombies--;
		zombie_bytes -= g->charge;
	} else {
		used_bytes -= g->charge;
		if (small)
			nsmall--;
		else
			nlarge--;
	}
	if (g->state == SEG_IDLE && seg_unmark(s) < 0) {
		punch(s, seg_span(s));
		seg_quarantine(s, n);
		return;
	}
	if (keep && small) {
		/* marked volatile by the next tick, outside the lock */
		memset(g, 0, sizeof(*g));
		g->state = SEG_WARM;
		g->nslots = 1;
		warm[nwarm++] = s;
		return;
	}
	seg_punch_later(s, n);
}

static void seg_free(uint32_t s)
{
	seg_release(s, true);
}

/*
 * Pop a warm segment that can be written: unmarked first when it is
 * WARM_IDLE (its old contents do not matter, purged or not).  Returns
 * SEG_NONE when the stack is empty; a segment whose unmark fails is
 * quarantined and the next one tried.
 */
static uint32_t warm_take(void)
{
	while (nwarm) {
		uint32_t s = warm[--nwarm];
		struct seg *g = &segs[s];

		assert(g->state == SEG_WARM || g->state == SEG_WARM_IDLE);
		if (g->state == SEG_WARM_IDLE && seg_unmark(s) < 0) {
			punch(s, seg_size);
			seg_quarantine(s, 1);
			continue;
		}
		g->state = SEG_FREE;
		return s;
	}
	return SEG_NONE;
}

/* Release zombie segments whose replies have all been written. */
static void store_sweep(void)
{
	for (uint32_t s = 0; nzombies && s < nslots; s++)
		if (segs[s].state == SEG_ZOMBIE &&
		    !__atomic_load_n(&segs[s].refs, __ATOMIC_ACQUIRE))
			seg_release(s, segs[s].keep);
}

void store_ref(uint32_t s)
{
	if (__atomic_fetch_add(&segs[s].refs, 1, __ATOMIC_RELAXED) == 0 &&
	    !segs[s].large)
		__atomic_fetch_add(&nshared_held, 1, __ATOMIC_RELAXED);
}

/* Shared segments replies may hold: a quarter of the budget's, at least 1. */
static int32_t pin_cap(void)
{
	uint64_t n = budget / seg_size / 4;

	return n ? (int32_t)(n < INT32_MAX ? n : INT32_MAX) : 1;
}

bool store_ref_value(const struct item *it)
{
	const struct seg *g = &segs[it->seg];

	if ((uint64_t)it->vlen + 2 < STORE_ZERO_COPY_MIN)
		return false;
	/* a new pin of a shared segment only within pin_cap (several
	 * threads may pass the check at once: the cap is a bound plus the
	 * number of workers) */
	if (!g->large && !__atomic_load_n(&g->refs, __ATOMIC_RELAXED) &&
	    __atomic_load_n(&nshared_held, __ATOMIC_RELAXED) >= pin_cap())
		return false;
	store_ref(it->seg);
	return true;
}

void store_unref_cb(const void *data, size_t len, void *arg)
{
	uint32_t s = (uint32_t)(uintptr_t)arg;
	/* read while the reference holds the segment: it may be reused after */
	bool small = !segs[s].large;

	(void)data;
	(void)len;
	if (__atomic_sub_fetch(&segs[s].refs, 1, __ATOMIC_RELEASE) == 0 && small)
		__atomic_fetch_sub(&nshared_held, 1, __ATOMIC_RELAXED);
}

bool store_value_shared(const struct item *it)
{
	return (uint64_t)it->vlen + 2 >= STORE_ZERO_COPY_MIN &&
	       __atomic_load_n(&segs[it->seg].refs, __ATOMIC_ACQUIRE) != 0;
}

/* Punch out every warm segment (a large object needs contiguous room). */
static void warm_drain(void)
{
	uint32_t s;

	while ((s = warm_take()) != SEG_NONE) {
		punch(s, seg_size);
		seg_clear(s, 1);
	}
}

/* Append to the lost list. */
static void lost_push(struct item *it)
{
	it->snext = NULL;
	it->sprev = lost_tail;
	if (lost_tail)
		lost_tail->snext = it;
	else
		lost_head = it;
	lost_tail = it;
	lost_count++;
	lost_bytes += sizeof(*it) + it->keylen;
}

/* Remove from the lost list. */
static void lost_del(struct item *it)
{
	assert(lost_count > 0 && it->state == ITEM_LOST);
	if (it->sprev)
		it->sprev->snext = it->snext;
	else
		lost_head = it->snext;
	if (it->snext)
		it->snext->sprev = it->sprev;
	else
		lost_tail = it->sprev;
	it->snext = it->sprev = NULL;
	lost_count--;
	lost_bytes -= sizeof(*it) + it->keylen;
}

/* Attach to the head of the segment's list and charge the value. */
void store_link(struct item *it)
{
	struct seg *g = &segs[it->seg];

	assert(seg_readable(g));
	it->sprev = NULL;
	it->snext = g->items;
	if (g->items)
		g->items->sprev = it;
	g->items = it;
	g->nitems++;
	if (!it->exptime)
		g->dead_by = UINT32_MAX;
	else if (it->exptime > g->dead_by)
		g->dead_by = it->exptime;
	g->live += round_up(it->vlen + 2, 8);
	value_bytes += it->vlen;
	it->state = ITEM_OK;
	class_count(it, 1);
}

/*
 * Detach from the segment (or the lost list); free an emptied segment.
 * The item is left without storage (ITEM_OK, SEG_NONE), so a second
 * unlink is a no-op.
 */
void store_unlink(struct item *it)
{
	struct seg *g;
	uint32_t s = it->seg;

	if (it->state == ITEM_LOST) {
		lost_del(it);
		it->state = ITEM_OK;
		it->seg = SEG_NONE;
		return;
	}
	if (s == SEG_NONE)
		return;
	g = &segs[s];
	assert(seg_holds(g) && g->nitems > 0);
	if (it->sprev)
		it->sprev->snext = it->snext;
	else
		g->items = it->snext;
	if (it->snext)
		it->snext->sprev = it->sprev;
	it->snext = it->sprev = NULL;
	g->nitems--;
	g->live -= round_up(it->vlen + 2, 8);
	value_bytes -= it->vlen;
	class_count(it, -1);
	it->seg = SEG_NONE;
	if (g->nitems == 0 && s != active && !g->pinned)
		seg_free(s);
}

/* Detach and put on the lost list. */
void store_lose(struct item *it)
{
	if (it->state == ITEM_LOST)
		return;
	store_unlink(it);
	it->state = ITEM_LOST;
	lost_push(it);
}

/* Remove from index and store, free. */
void store_forget(struct item *it)
{
	store_unlink(it);
	index_remove(it);
	free(it);
	__atomic_store_n(&stats.curr_items, index_count(), __ATOMIC_RELAXED);
}

/* Evict every item of a segment (counted as evictions) and free it. */
static void seg_evict(uint32_t s)
{
	struct seg *g = &segs[s];
	struct item *it;

	g->pinned = 1;
	while ((it = g->items)) {
		if (!it->exptime || it->exptime > clock_secs()) {
			stats.evictions++;
			/* as memcached: evicted before anyone read it */
			if (!(it->mflags & ITEM_MF_FETCHED))
				stats.evicted_unfetched++;
		}
		store_forget(it);
	}
	g->pinned = 0;
	seg_free(s);
}

/* Evictable: holds objects, nobody is moving them, not being appended. */
static bool seg_evictable(uint32_t s, bool allow_active)
{
	const struct seg *g = &segs[s];

	return seg_holds(g) && !g->pinned && (s != active || allow_active);
}

/*
 * Eviction takes the coldest evictable segment (oldest access time, then
 * fewest objects).  A scan of every slot per eviction held the exclusive
 * lock over the whole table (262,144 slots for 64 GB), so the coldest
 * COLD_CANDS segments are kept in a sorted list instead: the tick builds
 * it in steps of TICK_SCAN slots (into cold_next, published when its walk
 * ends), and an eviction takes the first candidate still evictable with
 * the access time it was listed with.  A segment used since is hotter than
 * listed and is skipped; none can have grown colder than its listing,
 * since access times only grow between ticks (the tick's compaction runs
 * before its walk).  When the list runs dry, one full scan refills it.
 */
#define COLD_CANDS 256

struct cold {
	uint32_t s, atime, nitems;
};

static struct cold cold_list[COLD_CANDS], cold_next[COLD_CANDS], cold_tmp[COLD_CANDS];

static bool colder(const struct cold *a, const struct cold *b)
{
	return a->atime < b->atime || (a->atime == b->atime && a->nitems < b->nitems);
}

/* Offer slot s to a max-heap of the coldest (heap[0] the warmest kept). */
static void cold_offer(struct cold *heap, uint32_t *n, uint32_t s)
{
	struct cold c = { s, segs[s].atime, segs[s].nitems };
	uint32_t i;

	if (*n < COLD_CANDS) {
		for (i = (*n)++; i && colder(&heap[(i - 1) / 2], &c); i = (i - 1) / 2)
			heap[i] = heap[(i - 1) / 2];
		heap[i] = c;
		return;
	}
	if (!colder(&c, &heap[0]))
		return;
	for (i = 0;;) {
		uint32_t l = 2 * i + 1, r = l + 1, m = i;
		const struct cold *big = &c;

		if (l < *n && colder(big, &heap[l])) {
			m = l;
			big = &heap[l];
		}
		if (r < *n && colder(big, &heap[r]))
			m = r;
		if (m == i)
			break;
		heap[i] = heap[m];
		i = m;
	}
	heap[i] = c;
}

static int cold_cmp(const void *a, const void *b)
{
	return colder(a, b) ? -1 : colder(b, a) ? 1 : 0;
}

/* A built heap becomes the list evictions take from, coldest first. */
static void cold_publish(const struct cold *heap, uint32_t n)
{
	memcpy(cold_list, heap, n * sizeof(*heap));
	qsort(cold_list, n, sizeof(*cold_list), cold_cmp);
	ncold = n;
	cold_pos = 0;
}

/* Coldest evictable segment, or SEG_NONE. */
static uint32_t coldest(bool allow_active)
{
	for (int pass = 0; pass < 2; pass++) {
		for (uint32_t i = cold_pos; i < ncold; i++) {
			struct cold *c = &cold_list[i];
			uint32_t s = c->s;

			if (s == SEG_NONE)
				continue;
			if (s >= nslots || !seg_holds(&segs[s]) || segs[s].atime != c->atime) {
				c->s = SEG_NONE;        /* gone, or used since */
				continue;
			}
			if (!seg_evictable(s, allow_active))
				continue;               /* pinned, or the active one */
			c->s = SEG_NONE;
			while (cold_pos < ncold && cold_list[cold_pos].s == SEG_NONE)
				cold_pos++;
			return s;
		}
		if (pass == 0) {
			/* dry: one full scan refills the list */
			uint32_t n = 0;

			for (uint32_t s = 0; s < nslots; s++)
				if (seg_holds(&segs[s]))
					cold_offer(cold_tmp, &n, s);
			cold_publish(cold_tmp, n);
		}
	}
	return SEG_NONE;
}

/*
 * Lost keys (index entries without bytes, waiting for a rebuild) may take
 * up to 1/LOST_SHARE of the budget before the oldest are forgotten.
 */
#define LOST_SHARE 64

/* Free some budget: forget old lost items, else evict a segment. */
static int make_room(void)
{
	uint32_t s;

	if (nzombies) {
		uint32_t before = nzombies;

		store_sweep();
		if (nzombies < before)
			return 0;
	}
	if (nwarm) {
		/* pages kept for reuse go before any data */
		s = warm_take();
		if (s != SEG_NONE)
			seg_punch_later(s, 1);
		return 0;
	}
	if (lost_head && lost_bytes > budget / LOST_SHARE) {
		for (int i = 0; i < 64 && lost_head; i++)
			store_forget(lost_head);
		return 0;
	}
	s = coldest(false);
	if (s == SEG_NONE)
		s = coldest(true);
	if (s == SEG_NONE) {
		if (lost_head) {
			store_forget(lost_head);
			return 0;
		}
		return -1;
	}
	seg_evict(s);
	return 0;
}

/* First run of n free slots from the cursor, or SEG_NONE. */
static uint32_t find_free(uint32_t n)
{
	for (uint64_t k = 0; k < nslots; k++) {
		uint32_t s = (uint32_t)((cursor + k) % nslots);
		uint32_t i;

		if (s + n > nslots)
			continue;
		for (i = 0; i < n && slot_free(s + i); i++)
			;
		if (i == n) {
			cursor = s + n;
			return s;
		}
	}
	return SEG_NONE;
}

/* n contiguous FREE slots, or SEG_NONE; waiting punches are made first. */
static uint32_t find_slots(uint32_t n)
{
	uint32_t s = find_free(n);

	if (s == SEG_NONE && npunching) {
		store_punch_pending();
		while (__atomic_load_n(&punches_taken, __ATOMIC_ACQUIRE))
			store_wait();   /* another thread's punches in flight */
		s = find_free(n);
	}
	return s;
}

/* FREE or SPARE slots [s, s + n) become an ACTIVE or LARGE segment. */
static void seg_open(uint32_t s, bool large, uint32_t n, uint64_t charge)
{
	struct seg *g = &segs[s];

	assert(g->state == SEG_FREE || g->state == SEG_SPARE);
	memset(g, 0, sizeof(*g));
	g->state = large ? SEG_LARGE : SEG_ACTIVE;
	g->large = large;
	g->nslots = n;
	g->charge = charge;
	g->atime = g->born = clock_secs();
	for (uint32_t i = 1; i < n; i++) {
		assert(segs[s + i].state == SEG_FREE);
		segs[s + i].state = SEG_CONT;
	}
	used_bytes += charge;
	if (large)
		nlarge++;
	else
		nsmall++;
}

/* The active segment takes no more appends. */
static void seg_seal(uint32_t s)
{
	assert(segs[s].state == SEG_ACTIVE);
	segs[s].state = SEG_SEALED;
	if (active == s)
		active = SEG_NONE;
	if (segs[s].nitems == 0 && !segs[s].pinned)
		seg_free(s);
}

/* Take n slots as a new segment charged with charge bytes. */
static uint32_t seg_new(bool large, uint32_t n, uint64_t charge)
{
	uint32_t s;
	bool retried = false;

	for (;;) {
		/* a warm or spare segment is charged already: reuse is free */
		if (!large && charged() <= budget) {
			if ((s = warm_take()) != SEG_NONE)
				break;
			if (nspare) {
				s = spare[--nspare];
				if (store_spare_wanted)
					store_spare_wanted();
				break;
			}
		}
		if (charged() + charge <= budget) {
			if ((s = find_slots(n)) != SEG_NONE)
				break;
			if (nwarm) {
				warm_drain();
				continue;
			}
			if (nquarantined && !retried) {
				retried = true;
				quarantine_retry();
				continue;
			}
		}
		if (make_room() < 0)
			return SEG_NONE;
	}
	seg_open(s, large, n, charge);
	return s;
}
/*
 * The log cleaner.  Overwrites and deletes leave dead bytes in sealed
 * segments, and a segment comes free only when its last object goes: under
 * uniform overwrites of 10,000 4 KiB objects the store grew to five times
 * its live bytes before segments started to empty (210 MB for 40 MB), and
 * a set-only load filled the budget and evicted live objects.  So whenever
 * the active segment fills while small segments hold more than twice their
 * live bytes, the sealed segment with the fewest live bytes, if at most
 * half of it is live, has its objects copied forward and is freed.  The
 * footprint then stays near twice the live bytes.  Cleaning only past 2x
 * rather than at once picks emptier victims: under uniform overwrites it
 * copied 0.24 objects per set instead of 0.82, for 82 MB instead of 60 MB
 * with 40 MB live.  Volatile segments are left alone (their objects are
 * idle, and a copy would unmark them).
 */
static bool cleaning;

/*
 * Copy an object of a pinned segment into the active one.  The caller
 * frees the segment once it is empty.
 */
static int move_forward(struct item *it)
{
	uint32_t ns;
	uint64_t noff;

	if (store_reserve(it->vlen + 2, &ns, &noff) != 0)
		return -1;
	memcpy(store_ptr(noff), store_ptr(it->off), it->vlen + 2);
	store_unlink(it);
	it->seg = ns;
	it->off = noff;
	store_link(it);
	return 0;
}

static void store_clean(void)
{
	uint32_t victim = SEG_NONE;
	uint64_t live = 0;
	struct item *it, *next;
	struct seg *g;

	for (uint32_t s = 0; s < nslots; s++) {
		g = &segs[s];
		if (g->large || !seg_holds(g))
			continue;
		live += g->live;
		/* IDLE ones are left alone: a copy would unmark them */
		if (g->state != SEG_SEALED || g->pinned || !g->nitems ||
		    g->live * 2 > seg_size)
			continue;
		if (victim == SEG_NONE || g->live < segs[victim].live)
			victim = s;
	}
	/* nothing to do while dead bytes are at most half of the segments */
	if (victim == SEG_NONE || nsmall * seg_size <= 2 * live)
		return;
	g = &segs[victim];
	cleaning = true;
	g->pinned = 1;
	for (it = g->items; it; it = next) {
		next = it->snext;
		if (move_forward(it) != 0)
			break;
		stats.cleaned_objects++;
	}
	g->pinned = 0;
	cleaning = false;
	if (g->nitems == 0 && seg_holds(g)) {
		stats.cleaned_segments++;
		seg_free(victim);
	}
}

/*
 * Expired items.  memcached reuses the memory of an expired item when it
 * allocates (it looks at the tail of the LRU first), so a client that
 * stores values with a TTL and then new keys sees its memory stay flat
 * (memcached's t/issue_14.t).  Here an expired item kept its bytes until
 * its key was looked up again, and the store opened a new segment beside
 * them.  So before the store takes another segment:
 *
 *  - the full active segment forgets its dead items, and when at most
 *    half of it is then live and no reply points into it, its live
 *    objects slide down to its start (one memmove each, in offset order)
 *    and appending goes on in the same pages (active_slide);
 *  - segments whose items have all expired (per dead_by, a hint that a
 *    later touch may leave stale, which costs one scan that corrects it)
 *    forget their items and come free, to be reused first (reap_dead).
 *
 * An item counts as dead here only a second after it expired (or after a
 * delayed flush_all took it): a caller that found it alive under the lock
 * may hold it, and the clock moves at most one second during a lock hold.
 */
#define REAP_SCAN 16384   /* items looked at per reap_dead: bounds the lock hold */

bool (*store_item_alive)(const struct item *it, uint32_t now);

static bool reapable(const struct item *it)
{
	uint32_t then = clock_secs() - 1;

	if (clock_secs() <= 1)
		return false;
	if (store_item_alive)
		return !store_item_alive(it, then);
	return it->exptime && it->exptime <= then;
}

/*
 * Forget the dead items of s and note the latest expiry of the rest.
 * Frees s when it empties (unless it is the active one).  Returns the
 * number of items looked at.
 */
static uint32_t seg_reap(uint32_t s)
{
	struct seg *g = &segs[s];
	struct item *it, *next;
	uint32_t seen = g->nitems;

	assert(seg_holds(g) && !g->pinned);
	g->pinned = 1;
	g->dead_by = 0;
	for (it = g->items; it; it = next) {
		next = it->snext;
		if (reapable(it))
			store_forget(it);
		else if (!it->exptime)
			g->dead_by = UINT32_MAX;
		else if (it->exptime > g->dead_by)
			g->dead_by = it->exptime;
	}
	g->pinned = 0;
	if (!g->nitems && s != active)
		seg_free(s);
	return seen;
}

/*
 * Free segments whose items have all been dead for a second, until one
 * came free or REAP_SCAN items were looked at.
 */
static void reap_dead(void)
{
	uint32_t seen = 0;

	for (uint64_t n = 0; n < nslots && seen < REAP_SCAN; n++) {
		uint32_t s = reap_cursor;
		struct seg *g = &segs[s];

		if (++reap_cursor >= nslots)
			reap_cursor = 0;
		if (s == active || !seg_holds(g) || g->pinned || !g->nitems ||
		    g->dead_by >= clock_secs())
			continue;
		seen += seg_reap(s);
		if (!seg_holds(g))
			return;
	}
}

/*
 * The active segment is full: reuse its dead bytes in place when at most
 * half of it is live once its dead items are gone.  Returns true when
 * need bytes now fit at its end.
 */
static bool active_slide(uint64_t need)
{
	struct seg *g = &segs[active];
	struct item *it, *last = NULL;
	uint64_t pos;

	if (g->pinned || __atomic_load_n(&g->refs, __ATOMIC_ACQUIRE))
		return false;
	seg_reap(active);
	if (g->live * 2 > seg_size || g->live + need > seg_size)
		return false;
	/* appended at the head of the list: offsets descend from it */
	for (it = g->items; it; it = it->snext) {
		if (last && it->off >= last->off)
			return false;
		last = it;
	}
	pos = seg_off(active);
	for (it = last; it; it = it->sprev) {
		if (it->off != pos)
			memmove(store_ptr(pos), store_ptr(it->off), it->vlen + 2);
		it->off = pos;
		pos += round_up(it->vlen + 2, 8);
	}
	g->used = pos - seg_off(active);
	assert(g->used == g->live);
	return true;
}

int store_reserve(size_t len, uint32_t *seg, uint64_t *off)
{
	uint64_t need = round_up(len, 8);

	if (len > large_min) {
		uint64_t bytes = round_up(len, PAGE);
		uint32_t n = (uint32_t)((bytes + seg_size - 1) / seg_size);
		uint32_t s;

		if (bytes > budget || n > nslots)
			return -1;
		if (!cleaning)
			reap_dead();
		s = seg_new(true, n, bytes);
		if (s == SEG_NONE)
			return -1;
		segs[s].used = len;
		*seg = s;
		*off = seg_off(s);
		return 0;
	}
	if (active == SEG_NONE || segs[active].used + need > seg_size) {
		if (active != SEG_NONE && !cleaning && active_slide(need))
			goto append;
		if (active != SEG_NONE)
			seg_seal(active);
		if (!cleaning) {
			reap_dead();
			store_clean();   /* may open a new active segment */
		}
		if (active == SEG_NONE || segs[active].used + need > seg_size) {
			if (active != SEG_NONE)
				seg_seal(active);
			active = seg_new(false, 1, seg_size);
		}
		if (active == SEG_NONE)
			return -1;
	}
append:
	assert(segs[active].state == SEG_ACTIVE);
	*seg = active;
	*off = seg_off(active) + segs[active].used;
	segs[active].used += need;
	__atomic_store_n(&segs[active].atime, clock_secs(), __ATOMIC_RELAXED);
	return 0;
}

int store_reserve_local(size_t len, uint32_t *seg, uint64_t *off)
{
	uint64_t need = round_up(len, 8);
	struct seg *g;

	if (len > large_min || active == SEG_NONE)
		return -1;
	g = &segs[active];
	if (g->state != SEG_ACTIVE || g->pinned || g->used + need > seg_size)
		return -1;
	*seg = active;
	*off = seg_off(active) + g->used;
	g->used += need;
	if (__atomic_load_n(&g->atime, __ATOMIC_RELAXED) != clock_secs())
		__atomic_store_n(&g->atime, clock_secs(), __ATOMIC_RELAXED);
	return 0;
}

bool store_item_hot(const struct item *it)
{
	const struct seg *g;

	if (it->state != ITEM_OK || it->seg == SEG_NONE)
		return false;
	g = &segs[it->seg];
	return seg_readable(g) && !g->pinned;
}

/*
 * The bytes of s are gone (purged, or dropped): every item becomes lost,
 * and the segment is released.
 */
static void seg_lose_all(uint32_t s)
{
	struct seg *g = &segs[s];
	struct item *it;

	g->pinned = 1;
	while ((it = g->items)) {
		stats.purged_objects++;
		store_lose(it);
	}
	g->pinned = 0;
	seg_release(s, false);
}

/*
 * Unmark an IDLE segment that is about to be read.  Returns 0 with the
 * segment SEALED or LARGE again; 1 when the kernel had purged it or the
 * unmark failed: every item is then lost and the segment released (a
 * failed unmark leaves the range volatile, so seg_release quarantines it
 * unless a second try succeeds).
 */
static int seg_wake(uint32_t s)
{
	struct seg *g = &segs[s];
	long r;

	assert(g->state == SEG_IDLE && !g->pinned);
	r = seg_unmark(s);
	if (r == 0) {
		g->state = g->large ? SEG_LARGE : SEG_SEALED;
		return 0;
	}
	if (r > 0) {
		stats.purged_ranges++;
		g->state = g->large ? SEG_LARGE : SEG_SEALED;
	} else {
		logmsg(1, "unmark failed (%ld): its objects are lost", r);
	}
	seg_lose_all(s);
	return 1;
}

int store_prepare_read(struct item *it, uint32_t now)
{
	uint32_t s = it->seg;
	struct seg *g = &segs[s];

	assert(it->state == ITEM_OK && s != SEG_NONE && seg_holds(g));
	if (g->state != SEG_IDLE) {
		g->atime = now;
		return 0;
	}
	if (seg_wake(s))
		return 1;
	if (!g->large) {
		/* copy the hot object forward; the rest may go volatile again */
		uint32_t ns;
		uint64_t noff;

		g->pinned = 1;
		if (store_reserve(it->vlen + 2, &ns, &noff) == 0) {
			memcpy(store_ptr(noff), store_ptr(it->off), it->vlen + 2);
			g->pinned = 0;
			store_unlink(it);
			it->seg = ns;
			it->off = noff;
			store_link(it);
			return 0;
		}
		g->pinned = 0;
	}
	g->atime = now;
	return 0;
}

uint32_t store_claim_wake(const struct item *it)
{
	uint32_t s = it->seg, none = WAKE_NONE;
	struct seg *g;

	if (it->state != ITEM_OK || s == SEG_NONE)
		return SEG_NONE;
	g = &segs[s];
	if (g->state != SEG_IDLE || g->pinned ||
	    !__atomic_compare_exchange_n(&g->wake, &none, WAKE_CLAIMED, false,
					 __ATOMIC_ACQ_REL, __ATOMIC_RELAXED))
		return SEG_NONE;
	return s;
}

void store_wake_unlocked(uint32_t s)
{
	struct seg *g = &segs[s];

	g->wake_res = kern_unmark(seg_off(s), seg_span(s));
	__atomic_fetch_add(&stat_unlocked_unmarks, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(&nwoken, 1, __ATOMIC_RELAXED);
	__atomic_store_n(&g->wake, WAKE_DONE, __ATOMIC_RELEASE);
}

/* The tick: use the answers of unmarks that no get came back for. */
static void settle_woken(void)
{
	for (uint32_t s = 0; __atomic_load_n(&nwoken, __ATOMIC_RELAXED) && s < nslots; s++) {
		struct seg *g = &segs[s];

		if (g->state == SEG_IDLE && !g->pinned &&
		    __atomic_load_n(&g->wake, __ATOMIC_ACQUIRE) == WAKE_DONE)
			seg_wake(s);
	}
}

int store_probe(struct item *it)
{
	if (it->state == ITEM_LOST)
		return 1;
	if (it->seg == SEG_NONE || segs[it->seg].state != SEG_IDLE)
		return 0;
	return seg_wake(it->seg);
}

bool store_touch_hot(struct item *it, uint32_t now)
{
	struct seg *g;

	if (it->state != ITEM_OK || it->seg == SEG_NONE)
		return false;
	g = &segs[it->seg];
	if (!seg_readable(g))
		return false;
	if (__atomic_load_n(&g->atime, __ATOMIC_RELAXED) != now)
		__atomic_store_n(&g->atime, now, __ATOMIC_RELAXED);
	return true;
}

/*
 * Under a skewed popularity (Zipf) a few hot objects keep almost every
 * segment awake, and a segment goes volatile only when all its objects
 * went idle.  A sealed segment whose objects used in the last idle_secs
 * take at most 1/COMPACT_HOT of its bytes has them copied forward into
 * the active segment, so that the rest, idle, goes volatile on this tick
 * (and a segment left with only dead bytes is freed).  Returns true when
 * the segment was compacted.
 */
#define COMPACT_HOT 8
#define COMPACT_MAX 16          /* segments per tick: bounds the lock hold */
#define COMPACT_SCAN 16384      /* objects looked at per tick, likewise */

static bool seg_compact(uint32_t s, uint32_t now, uint32_t idle_secs)
{
	struct seg *g = &segs[s];
	struct item *it, *next;
	uint64_t hot = 0;
	uint32_t newest = 0;
	bool done = true;

	/* hot past an eighth: not worth it, and no need to look further */
	for (it = g->items; it && hot * COMPACT_HOT <= g->used; it = it->snext) {
		stats.compact_checked_objects++;
		if (now - it->atime < idle_secs)
			hot += it->vlen + 2;
	}
	if (!hot || hot * COMPACT_HOT > g->used)
		return false;
	g->pinned = 1;
	for (it = g->items; it; it = next) {
		next = it->snext;
		stats.compact_checked_objects++;
		if (now - it->atime >= idle_secs) {
			if (it->atime > newest)
				newest = it->atime;
			continue;
		}
		if (move_forward(it) != 0) {
			done = false;
			break;
		}
		stats.compacted_objects++;
	}
	g->pinned = 0;
	if (g->nitems == 0) {
		if (seg_holds(g))
			seg_free(s);
		return done;
	}
	if (done)
		g->atime = newest;
	return done;
}

/*
 * A sealed small segment with hot objects among idle ones.  One opened
 * within idle_secs holds none that went idle since written (only objects
 * the cleaner moved keep an older access time), so it is not walked: a
 * segment holds up to 131,072 small objects.
 */
static bool seg_compactable(uint32_t s, uint32_t now, uint32_t idle_secs)
{
	const struct seg *g = &segs[s];

	return g->state == SEG_SEALED && !g->pinned && g->nitems &&
	       now - g->atime < idle_secs && now - g->born >= idle_secs;
}

/* A sealed or large segment whose objects have all been idle. */
static bool seg_markable(uint32_t s, uint32_t now, uint32_t idle_secs)
{
	const struct seg *g = &segs[s];

	return (g->state == SEG_SEALED || g->state == SEG_LARGE) &&
	       !g->pinned && g->nitems &&
	       !__atomic_load_n(&g->refs, __ATOMIC_ACQUIRE) &&
	       now - g->atime >= idle_secs;
}

/* The tick's upkeep, each part bounded: sweep, quarantine, seal, compact. */
static void store_upkeep(uint32_t now, uint32_t idle_secs)
{
	uint32_t compacted = 0;
	uint64_t scanned = 0;   /* objects looked at */

	store_sweep();
	if (__atomic_load_n(&nwoken, __ATOMIC_RELAXED))
		settle_woken();
	if (nquarantined)
		quarantine_retry();
	if (active != SEG_NONE && now - segs[active].atime >= idle_secs)
		seg_seal(active);   /* so it can go volatile */
	/*
	 * Every mode rescues hot objects from cold segments: volatile mode so
	 * that the rest can go volatile, pinned and psi modes so that eviction
	 * and PSI drops (coldest segment first) take the cold objects and keep
	 * the hot ones.  The modes are compared on equal terms.
	 */
	for (uint32_t n = 0; n < nslots && scanned < COMPACT_SCAN &&
	     compacted < COMPACT_MAX; n++) {
		uint32_t s = compact_cursor;
		uint64_t c0 = stats.compact_checked_objects;

		if (++compact_cursor >= nslots)
			compact_cursor = 0;
		if (!seg_compactable(s, now, idle_secs))
			continue;
		if (seg_compact(s, now, idle_secs))
			compacted++;
		scanned += stats.compact_checked_objects - c0;
	}
}

/*
 * The tick is cut into steps so that the lock is dropped between them:
 * the first step does the upkeep (sweep, quarantine, seal, compaction,
 * each bounded) and every step marks at most max_marks segments after
 * looking at at most TICK_SCAN slots.  A large cache that goes idle at
 * once is marked in one tick still, one batch per hold of the lock.
 */
#define TICK_SCAN 8192

bool store_tick_step(uint32_t now, uint32_t idle_secs, uint32_t *cursor,
		     uint32_t max_marks, struct store_marks *m)
{
	uint32_t marked = 0, scanned = 0, s;

	store_marks_settle(m);
	if (max_marks > STORE_TICK_MARKS)
		max_marks = STORE_TICK_MARKS;
	if (*cursor == 0) {
		store_upkeep(now, idle_secs);
		ncold_next = 0;         /* the eviction list's walk starts over */
	}
	for (s = *cursor ? *cursor - 1 : 0; s < nslots && scanned < TICK_SCAN &&
	     marked < max_marks; s++, scanned++) {
		if (seg_holds(&segs[s]))
			cold_offer(cold_next, &ncold_next, s);
		if (!vol_enabled)
			continue;
		if (seg_markable(s, now, idle_secs)) {
			seg_claim_mark(s, round_up(segs[s].used, PAGE), m);
			marked++;
		} else if (segs[s].state == SEG_WARM) {
			seg_claim_mark(s, seg_size, m);
			marked++;
		}
	}
	*cursor = s + 1;
	if (s < nslots)
		return true;
	cold_publish(cold_next, ncold_next);
	return false;
}

void store_tick(uint32_t now, uint32_t idle_secs)
{
	struct store_marks m = { 0 };
	uint32_t cursor = 0;
	bool more;

	do {
		more = store_tick_step(now, idle_secs, &cursor, STORE_TICK_MARKS, &m);
		store_marks_unlocked(&m);
	} while (more);
	store_marks_settle(&m);
}

/* psi mode: lose the coldest segment's objects; its charge, 0 if none. */
static uint64_t drop_one_coldest(void)
{
	uint32_t s = coldest(false);
	uint64_t charge;

	if (s == SEG_NONE)
		return 0;
	charge = segs[s].charge;
	stats.psi_dropped_bytes += charge;
	seg_lose_all(s);
	return charge;
}

uint64_t store_drop_coldest(uint64_t bytes)
{
	uint64_t dropped = 0, one = 1;

	while (dropped < bytes && one)
		dropped += one = drop_one_coldest();
	return dropped;
}

uint64_t store_give_back(uint64_t bytes)
{
	uint64_t dropped = 0, one = 1;

	warm_drain();   /* warm segments hold no data: they go first */
	while (charged() > bytes && one) {
		dropped += one = drop_one_coldest();
		warm_drain();
	}
	store_set_budget(bytes);
	return dropped;
}

uint32_t store_spare_take(void)
{
	uint32_t s;

	if (nspare + nspare_out >= SPARE_TARGET || nwarm)
		return SEG_NONE;
	if (charged() + 2 * seg_size > budget)
		return SEG_NONE;   /* no room to hold spares */
	s = find_slots(1);
	if (s != SEG_NONE) {
		segs[s].state = SEG_SPARE;
		nspare_out++;
	}
	return s;
}

void *store_slot_ptr(uint32_t s, size_t *len)
{
	*len = seg_size;
	return store_base + seg_off(s);
}

void store_spare_put(uint32_t s)
{
	assert(segs[s].state == SEG_SPARE && nspare_out > 0);
	nspare_out--;
	spare[nspare++] = s;
}

static void forget_cb(struct item *it, void *arg)
{
	(void)arg;
	store_forget(it);
}

void store_flush_all(void)
{
	index_foreach(forget_cb, NULL);
	if (active != SEG_NONE)
		seg_seal(active);
	for (uint32_t s = 0; s < nslots; s++)
		if (seg_holds(&segs[s]) && !segs[s].nitems && !segs[s].pinned)
			seg_free(s);
}

struct class_audit {
	uint64_t n[STORE_CLASSES], bytes[STORE_CLASSES];
};

static void class_audit_cb(struct item *it, void *arg)
{
	struct class_audit *a = arg;
	size_t size = mc_item_size(it);
	unsigned int cls = mc_slab_class(size) % STORE_CLASSES;

	if (it->state != ITEM_OK || it->seg == SEG_NONE)
		return;
	a->n[cls]++;
	a->bytes[cls] += size;
}

/* The per-class counters against a count of the linked items: 0 or 1. */
static long class_audit(void)
{
	struct class_audit *a = calloc(1, sizeof(*a));
	long bad = 0;

	if (!a)
		return 0;
	index_foreach(class_audit_cb, a);
	for (unsigned int i = 0; i < STORE_CLASSES; i++)
		if (a->n[i] != class_n[i] || a->bytes[i] != class_bytes[i])
			bad = 1;
	free(a);
	return bad;
}

long store_audit(void)
{
	long bad = class_audit();
	uint64_t used = 0, vb = 0, vr = 0, small = 0, large = 0, lost = 0, zb = 0;
	uint32_t zombies = 0, quarantined = 0;

	for (uint32_t s = 0; s < nslots; s++) {
		struct seg *g = &segs[s];
		uint32_t n = g->nslots ? g->nslots : 1;

		if (g->state == SEG_CONT)
			continue;
		if (!seg_marked(g) &&
		    kern_query(seg_off(s), (uint64_t)n * seg_size) != 0)
			bad++;
		if (seg_holds(g)) {
			used += g->charge;
			if (g->large)
				large++;
			else
				small++;
		}
		if (g->state == SEG_ZOMBIE)
			zb += g->charge;
		if (g->state == SEG_IDLE || g->state == SEG_WARM_IDLE) {
			vb += g->vbytes;
			vr++;
		}
		zombies += g->state == SEG_ZOMBIE;
		quarantined += g->state == SEG_QUARANTINE;
		if ((s == active) != (g->state == SEG_ACTIVE))
			bad++;
		for (uint32_t i = 1; i < n && s + i < nslots; i++)
			if (segs[s + i].state != SEG_CONT)
				bad++;
	}
	for (struct item *it = lost_head; it; it = it->snext)
		lost++;
	if (used != used_bytes || vb != vol_bytes || vr != vol_ranges ||
	    small != nsmall || large != nlarge || lost != lost_count ||
	    zombies != nzombies || quarantined != nquarantined || zb != zombie_bytes)
		bad++;
	return bad;
}

void store_class_stats(uint64_t *n, uint64_t *bytes, uint32_t *coldest)
{
	uint32_t oldest = 0;

	store_lock();
	for (unsigned int i = 0; i < STORE_CLASSES; i++) {
		n[i] = __atomic_load_n(&class_n[i], __ATOMIC_RELAXED);
		bytes[i] = __atomic_load_n(&class_bytes[i], __ATOMIC_RELAXED);
	}
	for (uint32_t s = 0; s < nslots; s++) {
		const struct seg *g = &segs[s];
		uint32_t a;

		if (!seg_holds(g) || !g->nitems)
			continue;
		a = __atomic_load_n(&g->atime, __ATOMIC_RELAXED);
		if (!oldest || a < oldest)
			oldest = a;
	}
	store_unlock();
	*coldest = oldest;
}

void store_get_stats(struct store_stats *st)
{
	store_lock();
	st->seg_size = seg_size;
	st->nslots = nslots;
	st->used_bytes = used_bytes;
	st->value_bytes = value_bytes;
	st->volatile_bytes = vol_bytes;
	st->volatile_ranges = vol_ranges;
	st->segs_small = nsmall;
	st->segs_large = nlarge;
	st->lost_items = lost_count;
	st->quarantined = nquarantined;
	st->zombie_bytes = zombie_bytes;
	st->shared_held = (uint64_t)(int64_t)__atomic_load_n(&nshared_held, __ATOMIC_RELAXED);
	store_unlock();
}

/*
 * cache_memlimit: a new budget.  The memfd was reserved for --memory-max,
 * so the budget may shrink and grow up to that, not beyond; growing puts
 * more of the reserved slots in use.  Shrinking evicts the coldest data
 * until the rest fits and punches out the warm segments, so the memory
 * goes back to the system at once (the slots stay in use, empty).
 */
int store_set_budget(uint64_t bytes)
{
	uint64_t cap = (slots_max - 8) / 4 * seg_size;

	if (bytes > cap)
		return -1;
	if (slots_for(bytes) > nslots)
		nslots = slots_for(bytes);   /* reserved slots are FREE (zeroed) */
	budget = bytes;
	while (charged() > budget && make_room() == 0)
		;
	warm_drain();
	return 0;
}
