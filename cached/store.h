/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * store.h - value storage: one memfd, page-aligned segments, volatility.
 * Callers hold cache_lock exclusively, except where a function says
 * otherwise: key-local commands (cache_lock shared, their key's stripe)
 * call store_reserve_local, store_link, store_unlink and store_forget of
 * a hot item under store_lock().
 */
#ifndef STORE_H
#define STORE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "index.h"

#define SEG_NONE UINT32_MAX

struct store_stats {
	uint64_t seg_size, nslots;
	uint64_t used_bytes;        /* segment bytes charged to -m */
	uint64_t value_bytes;       /* live value bytes */
	uint64_t volatile_bytes, volatile_ranges;
	uint64_t segs_small, segs_large;
	uint64_t lost_items;
	uint64_t quarantined;       /* slots waiting for an unmark to succeed */
	uint64_t zombie_bytes;      /* released under replies: not charged */
	uint64_t shared_held;       /* small segments replies point into */
};

extern char *store_base;
extern int store_fd;

/*
 * Create the memfd and the segment table for maxbytes of values (index
 * memory is charged to the same budget).  vol: mark idle data volatile.
 * Returns 0 or -1 with errno.
 */
int store_init(uint64_t maxbytes, bool vol);

/* Before store_init: --mode madvfree (private anonymous memory, MADV_FREE
 * with a cookie word per page; madvfree.c) instead of a memfd. */
void store_use_madvfree(void);

/* Release the memfd and tables (tests). */
void store_destroy(void);

/*
 * Reserve len bytes (value plus "\r\n") for a new value, evicting the
 * coldest data while over budget.  Fills *seg and *off.  Returns 0, or -1
 * when len cannot fit even in an empty cache.
 */
int store_reserve(size_t len, uint32_t *seg, uint64_t *off);

/* The store's mutex, for key-local commands (see above); lock waits. */
void store_lock(void);
void store_unlock(void);
uint64_t store_lock_waits(void);

/*
 * store_reserve for a key-local command: only an append to the active
 * segment that fits, nothing sealed, opened, evicted or cleaned.  Returns
 * 0, or -1 when the caller must store under the exclusive lock.
 */
int store_reserve_local(size_t len, uint32_t *seg, uint64_t *off);

/*
 * True when the item's value is readable and may be unlinked by a
 * key-local command: no system call, no other key touched.
 */
bool store_item_hot(const struct item *it);

/* Attach an item (it->seg/off/vlen set) to its segment's list. */
void store_link(struct item *it);

/* Detach an item from its segment; frees the segment when it empties. */
void store_unlink(struct item *it);

/*
 * Make an item's value readable: a no-op for hot data; for data in a
 * volatile range, unmark it first.  Returns 0 when the value at it->off can
 * be read, 1 when the range had been purged (every item of the range is now
 * ITEM_LOST and detached, including it).
 */
int store_prepare_read(struct item *it, uint32_t now);

/*
 * Under the shared lock: when it's value sits in a segment marked volatile
 * whose wake-up no other thread claimed, claim it and return the segment,
 * else SEG_NONE.  The caller drops the lock, calls store_wake_unlocked()
 * and then takes the lock exclusively to read: the unmark system call
 * runs outside every lock.  The answer is used by the next unmark of the
 * segment under the lock (or by the next tick).
 */
uint32_t store_claim_wake(const struct item *it);

/* No lock held: unmark the segment claimed and post the answer. */
void store_wake_unlocked(uint32_t s);

/*
 * Learn whether an item's bytes are still there without reading them:
 * unmarks its segment if it is volatile.  Returns 1 when the item is (now)
 * ITEM_LOST, else 0.
 */
int store_probe(struct item *it);

/*
 * Shared-lock fast path: true when the item's value can be read without
 * any change to the store (its segment is not volatile); records the
 * access with relaxed atomic stores.
 */
bool store_touch_hot(struct item *it, uint32_t now);

/* Turn a readable item into a lost one (detached, no storage). */
void store_lose(struct item *it);

/* Remove a lost or stored item from index and store and free it. */
void store_forget(struct item *it);

/*
 * The marks of one tick step, made outside the lock.  store_tick_step
 * claims them under the exclusive lock (each segment is then IDLE or
 * WARM_IDLE, its mark in flight: no get reads it and any unmark waits for
 * the mark); the caller drops the lock and calls store_marks_unlocked(),
 * which makes the system calls and posts each answer; a failed mark is
 * undone under the lock by the next store_tick_step or by
 * store_marks_settle(), whichever comes first, or by the first thread
 * that needs the segment.
 */
#define STORE_TICK_MARKS 64
struct store_marks {
	uint32_t n, made;
	uint32_t seg[STORE_TICK_MARKS];
	uint64_t off[STORE_TICK_MARKS], len[STORE_TICK_MARKS];
};

/*
 * One step of the once-a-second tick: settles m's marks of the step before
 * (made by store_marks_unlocked), then upkeep first (*cursor 0 starts a
 * tick), then claims the marks of segments idle for idle_secs and of warm
 * segments, at most max_marks (at most STORE_TICK_MARKS) into m.  Returns
 * true while the tick has more to do; the caller drops cache_lock between
 * steps and makes m's marks meanwhile.
 */
bool store_tick_step(uint32_t now, uint32_t idle_secs, uint32_t *cursor,
		     uint32_t max_marks, struct store_marks *m);

/* No lock held: make the marks claimed in m and post their answers. */
void store_marks_unlocked(struct store_marks *m);

/* Exclusive lock: undo the marks of m that failed; m is empty after. */
void store_marks_settle(struct store_marks *m);

/*
 * Called while a thread waits for a system call that another makes outside
 * the lock (a claimed unmark or mark); NULL: sched_yield().  The
 * single-threaded tests make the awaited call here.
 */
extern void (*store_wait_hook)(void);

/*
 * Make the hole punches of released segments, without cache_lock (the
 * daemon: cache_unlock, through cache_unlock_work).
 */
void store_punch_pending(void);

/* A whole tick, every step under one hold of the lock (the tests). */
void store_tick(uint32_t now, uint32_t idle_secs);

/* Punch out the coldest data until about bytes are dropped (PSI mode). */
uint64_t store_drop_coldest(uint64_t bytes);

/* Drop everything (flush_all): all items freed, all ranges punched. */
void store_flush_all(void);

/*
 * Spare segments, populated outside the lock by the main thread:
 * store_spare_take() reserves a fresh slot (SEG_NONE when enough spares
 * or warm segments exist); the caller populates its pages without the
 * lock (store_slot_ptr) and hands it back with store_spare_put().
 * store_spare_wanted, when set, is called (under the lock) when a spare
 * was used up.
 */
uint32_t store_spare_take(void);
void *store_slot_ptr(uint32_t s, size_t *len);
void store_spare_put(uint32_t s);
extern void (*store_spare_wanted)(void);

/*
 * Whether an item is alive at a second (expiry and flush_all, which the
 * cache layer above keeps): set by cache_init to cache_alive, so that the
 * store can reuse the bytes of dead items without calling up a layer.
 * Unset, only the expiry time counts.
 */
extern bool (*store_item_alive)(const struct item *it, uint32_t now);

/* A new budget (cache_memlimit), at most --memory-max (-m without it):
 * evicts down to it and gives the freed pages back.  Returns 0, or -1
 * when bytes is over that. */
int store_set_budget(uint64_t bytes);

/* psi mode: lose the coldest data (rebuilt or missed, as after a purge)
 * until the store fits bytes, then make bytes the budget (at most
 * store_set_budget's bound).  Returns the bytes dropped. */
uint64_t store_give_back(uint64_t bytes);

/*
 * Debug check: the number of slots that the store believes are not
 * volatile but the kernel holds volatile (POSIX_FADV_ISVOLATILE), plus
 * broken invariants (the per-class counts of store_class_stats included,
 * against a count of the index).  0 when all is well.  Costs a system call per slot.
 */
long store_audit(void);

/* Fill the counters. */
void store_get_stats(struct store_stats *st);

/*
 * memcached 1.6's slab classes with its default settings (-n 48, -f 1.25,
 * 1 MiB pages, 512 KiB chunks): the size memcached would give an item
 * (mc_item_size), the class of a size (mc_slab_class; larger items count
 * in the last class) and a class's chunk size (mc_chunk_size, 0 past the
 * last).  stats items, slabs, cachedump and metadump report by these.
 */
#define STORE_CLASSES 64          /* memcached's MAX_NUMBER_OF_SLAB_CLASSES */
size_t mc_item_size(const struct item *it);
unsigned int mc_slab_class(size_t ntotal);
uint32_t mc_chunk_size(unsigned int cls);

/*
 * Per class (STORE_CLASSES entries each), the items linked to a segment
 * (not lost; dead ones until they are dropped) and their mc_item_size
 * bytes, kept up to date at every link and unlink; *coldest gets the
 * last access time of the least recently used segment that holds items
 * (0 when none does).  Shared lock.
 */
void store_class_stats(uint64_t *n, uint64_t *bytes, uint32_t *coldest);

/*
 * A reply may point into a segment instead of copying: store_ref() under
 * the lock, and store_unref_cb (an evbuffer cleanup callback, lock-free,
 * arg the segment number) when the bytes were written.  A segment with
 * references is never marked volatile, reused or punched; if it is freed
 * meanwhile it waits as a zombie until its last reference is gone, and
 * its bytes leave the budget (store_stats.zombie_bytes): they are the
 * reply's, bounded as the reply is (--output-limit).
 */
#define STORE_ZERO_COPY_MIN 2048
void store_ref(uint32_t s);
void store_unref_cb(const void *data, size_t len, void *arg);

/*
 * Under the lock: true when the caller may send the item's value from the
 * memfd, with a reference taken to its segment: a value of
 * STORE_ZERO_COPY_MIN bytes and more that is a large object (its own
 * slots, nothing else in them), or in a shared segment that replies hold
 * already or while they hold fewer than a quarter of the budget's.
 * Otherwise false: the caller copies it, since a reference into a shared
 * segment holds all of it for as long as the client does not read.
 */
bool store_ref_value(const struct item *it);

/*
 * True when a reply in flight may still point at the item's value (it is
 * large enough to be sent from the memfd and its segment has references),
 * so that its bytes must not be written in place: the caller stores a new
 * value instead.  Under the exclusive lock, where no reference is added.
 */
bool store_value_shared(const struct item *it);

/* Pointer to a memfd offset. */
static inline char *store_ptr(uint64_t off)
{
	return store_base + off;
}

#endif
