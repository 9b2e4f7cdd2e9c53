/*
 * store.c - values in one memfd, cut into page-aligned segments.
 *
 * The memfd is a sparse file of nslots slots of seg_size bytes (4x the
 * budget, so large objects always find contiguous room); only bytes
 * written cost memory, and freeing a range punches a hole.
 *
 *  - Small values (<= seg_size/4) are appended to the active segment,
 *    8-byte aligned.  A segment is the unit of volatility and eviction.
 *  - A large value gets its own range of whole pages (one or more slots).
 *
 * Every segment keeps a list of its items and its last access time.  A
 * timer (store_tick) marks a segment whose items have all been idle for
 * --idle seconds volatile with ONE vol_mark call over its pages.  Hot
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
 */
#define _GNU_SOURCE
#include "store.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "cached.h"
#include "volatile_fadvise.h"

#ifdef VOL_FAKE
/* Unit tests replace the kernel calls to simulate purges on any kernel. */
long fake_vol_mark(int fd, off_t off, off_t len);
long fake_vol_unmark(int fd, off_t off, off_t len);
#define vol_mark fake_vol_mark
#define vol_unmark fake_vol_unmark
#endif

#define PAGE 4096u

enum seg_kind { SEG_FREE = 0, SEG_SMALL, SEG_LARGE, SEG_CONT, SEG_WARM, SEG_SPARE };

struct seg {
	uint8_t kind;
	uint8_t vol;        /* marked volatile */
	uint8_t pinned;     /* not to be evicted right now */
	uint8_t zombie;     /* freed, but replies still point into it */
	uint32_t refs;      /* replies in flight that point into it (atomic) */
	bool keep_on_release;
	uint32_t nslots;    /* slots spanned (head entry) */
	uint64_t used;      /* bytes appended (small) / value bytes (large) */
	uint64_t charge;    /* bytes charged to the budget */
	uint64_t vbytes;    /* length of the volatile range */
	uint64_t live;      /* bytes of linked items, as appended (small) */
	uint32_t nitems;
	uint32_t atime;
	struct item *items;
};

char *store_base;
int store_fd = -1;

static struct seg *segs;
static uint64_t nslots, seg_size, budget, large_min;
static uint32_t active = SEG_NONE;
static uint64_t used_bytes, value_bytes, vol_bytes, vol_ranges;
static uint64_t nsmall, nlarge;
static bool vol_enabled;
static uint32_t cursor;

/*
 * Freed small segments are kept "warm" on a stack instead of being punched
 * out, and reused first: appending into pages that are already there costs
 * no page fault and no hole punch under the lock.  The warm stack plus the
 * live segments never exceed the budget's worth of touched slots.  In
 * volatile mode a warm segment is marked volatile, so the kernel may take
 * its pages back at any time; reuse unmarks it and ignores the purge flag.
 */
static uint32_t *warm;
static uint32_t nwarm;
static uint32_t nzombies;

/*
 * Spare segments: fresh slots whose pages the main thread has populated
 * (MADV_POPULATE_WRITE) outside the lock, so appending into a new segment
 * does not take 256 page faults on the request path.
 */
#define SPARE_TARGET 4
static uint32_t spare[SPARE_TARGET];
static uint32_t nspare;
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

/* Create memfd, size it, map it, allocate the segment table. */
int store_init(uint64_t maxbytes, bool vol)
{
	budget = maxbytes;
	seg_size = 1u << 20;
	while (seg_size > 64 * 1024 && seg_size * 16 > maxbytes)
		seg_size >>= 1;
	large_min = seg_size / 4;
	nslots = 4 * ((maxbytes + seg_size - 1) / seg_size) + 8;
	vol_enabled = vol;
	store_fd = memfd_create("cached-values", MFD_CLOEXEC);
	if (store_fd < 0)
		return -1;
	if (ftruncate(store_fd, (off_t)(nslots * seg_size)) < 0)
		return -1;
	store_base = mmap(NULL, nslots * seg_size, PROT_READ | PROT_WRITE,
			  MAP_SHARED, store_fd, 0);
	if (store_base == MAP_FAILED) {
		store_base = NULL;
		return -1;
	}
	segs = calloc(nslots, sizeof(*segs));
	warm = calloc(nslots, sizeof(*warm));
	nwarm = 0;
	if (!segs || !warm)
		return -1;
	active = SEG_NONE;
	used_bytes = value_bytes = vol_bytes = vol_ranges = 0;
	nsmall = nlarge = 0;
	lost_head = lost_tail = NULL;
	lost_count = lost_bytes = 0;
	return 0;
}

/* Unmap and close; the index must have been emptied by the caller. */
void store_destroy(void)
{
	if (store_base)
		munmap(store_base, nslots * seg_size);
	if (store_fd >= 0)
		close(store_fd);
	free(segs);
	free(warm);
	warm = NULL;
	nwarm = 0;
	segs = NULL;
	store_base = NULL;
	store_fd = -1;
}

/* Bytes of the budget in use: segments plus index memory. */
static uint64_t charged(void)
{
	return used_bytes + index_mem_bytes();
}

/*
 * Release a segment's slots.  A small segment whose pages are intact goes
 * on the warm stack (keep); anything else has its hole punched.
 */
static void seg_release(uint32_t s, bool keep)
{
	struct seg *g = &segs[s];
	uint64_t len = (uint64_t)g->nslots * seg_size;

	if (__atomic_load_n(&g->refs, __ATOMIC_ACQUIRE)) {
		/* a reply still points here: keep it until store_sweep */
		if (!g->zombie)
			nzombies++;
		g->zombie = 1;
		g->keep_on_release = keep;
		if (active == s)
			active = SEG_NONE;
		return;
	}
	if (g->zombie)
		nzombies--;

	if (g->vol) {
		vol_bytes -= g->vbytes;
		vol_ranges--;
	}
	if (keep && g->kind == SEG_SMALL) {
		bool marked = g->vol;

		if (!marked && vol_enabled &&
		    vol_mark(store_fd, (off_t)seg_off(s), (off_t)seg_size) == 0)
			marked = true;
		used_bytes -= g->charge;
		nsmall--;
		if (active == s)
			active = SEG_NONE;
		memset(g, 0, sizeof(*g));
		g->kind = SEG_WARM;
		g->vol = marked;       /* for a warm segment: needs an unmark */
		warm[nwarm++] = s;
		return;
	}
	fallocate(store_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
		  (off_t)seg_off(s), (off_t)len);
	used_bytes -= g->charge;
	if (g->kind == SEG_SMALL)
		nsmall--;
	else
		nlarge--;
	for (uint32_t i = 1; i < g->nslots; i++)
		segs[s + i].kind = SEG_FREE;
	if (active == s)
		active = SEG_NONE;
	memset(g, 0, sizeof(*g));
}

static void seg_free(uint32_t s)
{
	seg_release(s, true);
}

/* Release zombie segments whose replies have all been written. */
static void store_sweep(void)
{
	for (uint32_t s = 0; nzombies && s < nslots; s++)
		if (segs[s].zombie && !__atomic_load_n(&segs[s].refs, __ATOMIC_ACQUIRE))
			seg_release(s, segs[s].keep_on_release);
}

void store_ref(uint32_t s)
{
	__atomic_fetch_add(&segs[s].refs, 1, __ATOMIC_RELAXED);
}

void store_unref_cb(const void *data, size_t len, void *arg)
{
	(void)data;
	(void)len;
	__atomic_fetch_sub(&segs[(uintptr_t)arg].refs, 1, __ATOMIC_RELEASE);
}

/* Punch out every warm segment (a large object needs contiguous room). */
static void warm_drain(void)
{
	while (nwarm) {
		uint32_t s = warm[--nwarm];

		fallocate(store_fd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  (off_t)seg_off(s), (off_t)seg_size);
		memset(&segs[s], 0, sizeof(segs[s]));
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

	it->sprev = NULL;
	it->snext = g->items;
	if (g->items)
		g->items->sprev = it;
	g->items = it;
	g->nitems++;
	g->live += round_up(it->vlen + 2, 8);
	value_bytes += it->vlen;
	it->state = ITEM_OK;
}

/* Detach from the segment (or the lost list); free an emptied segment. */
void store_unlink(struct item *it)
{
	struct seg *g;
	uint32_t s = it->seg;

	if (it->state == ITEM_LOST) {
		lost_del(it);
		return;
	}
	if (s == SEG_NONE)
		return;
	g = &segs[s];
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
	stats.curr_items = index_count();
}

/* Evict every item of a segment (counted as evictions) and free it. */
static void seg_evict(uint32_t s)
{
	struct seg *g = &segs[s];
	struct item *it;

	g->pinned = 1;
	while ((it = g->items)) {
		if (!it->exptime || it->exptime > current_time)
			stats.evictions++;
		store_forget(it);
	}
	g->pinned = 0;
	seg_free(s);
}

/* Coldest evictable segment, or SEG_NONE. */
static uint32_t coldest(bool allow_active)
{
	uint32_t best = SEG_NONE;

	for (uint32_t s = 0; s < nslots; s++) {
		struct seg *g = &segs[s];

		if (g->kind != SEG_SMALL && g->kind != SEG_LARGE)
			continue;
		if (g->pinned || g->zombie || (s == active && !allow_active))
			continue;
		if (best == SEG_NONE || g->atime < segs[best].atime ||
		    (g->atime == segs[best].atime && g->nitems < segs[best].nitems))
			best = s;
	}
	return best;
}

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
	if (lost_head && lost_bytes * 16 > budget / 4) {
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
static uint32_t find_slots(uint32_t n)
{
	for (uint64_t k = 0; k < nslots; k++) {
		uint32_t s = (uint32_t)((cursor + k) % nslots);
		uint32_t i;

		if (s + n > nslots)
			continue;
		for (i = 0; i < n && segs[s + i].kind == SEG_FREE; i++)
			;
		if (i == n) {
			cursor = s + n;
			return s;
		}
	}
	return SEG_NONE;
}

/* Take n slots as a new segment charged with charge bytes. */
static uint32_t seg_new(int kind, uint32_t n, uint64_t charge)
{
	uint32_t s;

	for (;;) {
		if (charged() + charge <= budget) {
			if (kind == SEG_SMALL && nwarm) {
				s = warm[--nwarm];
				if (segs[s].vol)   /* contents do not matter */
					vol_unmark(store_fd, (off_t)seg_off(s),
						   (off_t)seg_size);
				memset(&segs[s], 0, sizeof(segs[s]));
				break;
			}
			if (kind == SEG_SMALL && nspare) {
				s = spare[--nspare];
				memset(&segs[s], 0, sizeof(segs[s]));
				if (store_spare_wanted)
					store_spare_wanted();
				break;
			}
			if ((s = find_slots(n)) != SEG_NONE)
				break;
			if (nwarm) {
				warm_drain();
				continue;
			}
		}
		if (make_room() < 0)
			return SEG_NONE;
	}
	segs[s].kind = (uint8_t)kind;
	segs[s].nslots = n;
	segs[s].charge = charge;
	segs[s].atime = current_time;
	for (uint32_t i = 1; i < n; i++)
		segs[s + i].kind = SEG_CONT;
	used_bytes += charge;
	if (kind == SEG_SMALL)
		nsmall++;
	else
		nlarge++;
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
		if (g->kind != SEG_SMALL)
			continue;
		live += g->live;
		if (s == active || g->vol || g->pinned || g->zombie ||
		    !g->nitems || g->live * 2 > seg_size)
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
	if (g->nitems == 0) {
		stats.cleaned_segments++;
		seg_free(victim);
	}
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
		s = seg_new(SEG_LARGE, n, bytes);
		if (s == SEG_NONE)
			return -1;
		segs[s].used = len;
		*seg = s;
		*off = seg_off(s);
		return 0;
	}
	if (active == SEG_NONE || segs[active].used + need > seg_size) {
		if (active != SEG_NONE) {
			uint32_t old = active;

			active = SEG_NONE;
			if (segs[old].nitems == 0)
				seg_free(old);
		}
		if (!cleaning)
			store_clean();   /* may open a new active segment */
		if (active == SEG_NONE || segs[active].used + need > seg_size)
			active = seg_new(SEG_SMALL, 1, seg_size);
		if (active == SEG_NONE)
			return -1;
	}
	*seg = active;
	*off = seg_off(active) + segs[active].used;
	segs[active].used += need;
	segs[active].atime = current_time;
	return 0;
}

/* Purge bookkeeping: every item of the segment becomes lost. */
static void seg_purged(uint32_t s)
{
	struct seg *g = &segs[s];
	struct item *it;

	stats.purged_ranges++;
	g->pinned = 1;
	while ((it = g->items)) {
		stats.purged_objects++;
		store_lose(it);
	}
	g->pinned = 0;
	seg_release(s, false);
}

int store_prepare_read(struct item *it, uint32_t now)
{
	uint32_t s = it->seg;
	struct seg *g = &segs[s];
	long r;

	if (!g->vol) {
		g->atime = now;
		return 0;
	}
	r = vol_unmark(store_fd, (off_t)seg_off(s), (off_t)g->vbytes);
	stats.unmarks++;
	g->vol = 0;
	vol_bytes -= g->vbytes;
	vol_ranges--;
	g->vbytes = 0;
	if (r != 0) {
		if (r < 0)
			logmsg(1, "unmark failed (%ld): treating range as purged", r);
		seg_purged(s);
		return 1;
	}
	if (g->kind == SEG_SMALL && s != active) {
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

bool store_touch_hot(struct item *it, uint32_t now)
{
	struct seg *g;

	if (it->state != ITEM_OK || it->seg == SEG_NONE)
		return false;
	g = &segs[it->seg];
	if (g->vol)
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
static uint32_t compact_cursor;

static bool seg_compact(uint32_t s, uint32_t now, uint32_t idle_secs)
{
	struct seg *g = &segs[s];
	struct item *it, *next;
	uint64_t hot = 0;
	uint32_t newest = 0;
	bool done = true;

	for (it = g->items; it; it = it->snext)
		if (now - it->atime < idle_secs)
			hot += it->vlen + 2;
	if (!hot || hot * COMPACT_HOT > g->used)
		return false;
	g->pinned = 1;
	for (it = g->items; it; it = next) {
		next = it->snext;
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
		seg_free(s);
		return done;
	}
	if (done)
		g->atime = newest;
	return done;
}

void store_tick(uint32_t now, uint32_t idle_secs)
{
	uint32_t compacted = 0;
	uint64_t scanned = 0;

	store_sweep();
	if (active != SEG_NONE && now - segs[active].atime >= idle_secs) {
		uint32_t old = active;

		active = SEG_NONE;   /* seal it so it can go volatile */
		if (segs[old].nitems == 0)
			seg_free(old);
	}
	if (!vol_enabled)
		return;
	for (uint32_t n = 0; n < nslots && scanned < COMPACT_SCAN &&
	     compacted < COMPACT_MAX; n++) {
		uint32_t s = compact_cursor;
		struct seg *g = &segs[s];

		if (++compact_cursor >= nslots)
			compact_cursor = 0;
		if (g->kind != SEG_SMALL || g->vol || s == active || g->pinned ||
		    g->zombie || !g->nitems || now - g->atime >= idle_secs)
			continue;
		scanned += g->nitems;
		if (seg_compact(s, now, idle_secs))
			compacted++;
	}
	for (uint32_t s = 0; s < nslots; s++) {
		struct seg *g = &segs[s];
		uint64_t len;

		if ((g->kind != SEG_SMALL && g->kind != SEG_LARGE) || g->vol ||
		    s == active || g->pinned || g->zombie || !g->nitems ||
		    __atomic_load_n(&g->refs, __ATOMIC_ACQUIRE) ||
		    now - g->atime < idle_secs)
			continue;
		len = round_up(g->used, PAGE);
		if (vol_mark(store_fd, (off_t)seg_off(s), (off_t)len) < 0)
			continue;
		stats.marks++;
		g->vol = 1;
		g->vbytes = len;
		vol_bytes += len;
		vol_ranges++;
	}
}

uint64_t store_drop_coldest(uint64_t bytes)
{
	uint64_t dropped = 0;

	while (dropped < bytes) {
		uint32_t s = coldest(false);

		if (s == SEG_NONE)
			break;
		dropped += segs[s].charge;
		stats.psi_dropped_bytes += segs[s].charge;
		seg_purged(s);
		stats.purged_ranges--;    /* a drop is not a kernel purge */
	}
	return dropped;
}

uint32_t store_spare_take(void)
{
	uint32_t s;

	if (nspare + 0u >= SPARE_TARGET || nwarm)
		return SEG_NONE;
	if (charged() + (nspare + 2) * seg_size > budget)
		return SEG_NONE;   /* no room to hold spares */
	s = find_slots(1);
	if (s != SEG_NONE)
		segs[s].kind = SEG_SPARE;
	return s;
}

void *store_slot_ptr(uint32_t s, size_t *len)
{
	*len = seg_size;
	return store_base + seg_off(s);
}

void store_spare_put(uint32_t s)
{
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
	for (uint32_t s = 0; s < nslots; s++)
		if (segs[s].kind == SEG_SMALL || segs[s].kind == SEG_LARGE)
			seg_free(s);
	active = SEG_NONE;
}

void store_get_stats(struct store_stats *st)
{
	st->seg_size = seg_size;
	st->nslots = nslots;
	st->used_bytes = used_bytes;
	st->value_bytes = value_bytes;
	st->volatile_bytes = vol_bytes;
	st->volatile_ranges = vol_ranges;
	st->segs_small = nsmall;
	st->segs_large = nlarge;
	st->lost_items = lost_count;
}

/*
 * cache_memlimit: a new budget.  The memfd was sized for -m, so the
 * budget may shrink and grow again up to -m, not beyond.  Shrinking
 * evicts the coldest data until the rest fits and punches out the warm
 * segments, so the memory goes back to the system at once.
 */
int store_set_budget(uint64_t bytes)
{
	uint64_t cap = (nslots - 8) / 4 * seg_size;

	if (bytes > cap)
		return -1;
	budget = bytes;
	while (charged() > budget && make_room() == 0)
		;
	warm_drain();
	return 0;
}
