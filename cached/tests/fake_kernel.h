/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fake_kernel.h - the volatile-range series in user space, for tests built
 * with -DVOL_FAKE: store.c's vol_mark/vol_unmark/vol_query land here.
 *
 * It keeps what kernel/patches/0001..0003 keep, per page: disjoint ranges
 * [start, last] with a purged flag, merged when a mark overlaps them
 * (ranges that only touch stay apart), trimmed or split by an unmark, kept
 * across a hole punch, and an LRU of unpurged ranges in mark order.  A
 * purge takes one whole range and punches it out of the memfd, so its
 * bytes read as zeros; NONVOLATILE then returns 1.  VOLATILE covers the
 * pages lying entirely inside the span, NONVOLATILE and ISVOLATILE every
 * page it touches, and a length of 0 means "to the end of the file".
 *
 * It is hostile on request (fake_chaos): before any mark or unmark it may
 * purge the oldest or a random range, a mark may fail with -ENOMEM, an
 * unmark may fail with -ENOMEM having changed nothing.
 */
#ifndef FAKE_KERNEL_H
#define FAKE_KERNEL_H

#include <stdint.h>
#include <sys/types.h>

long fake_vol_mark(int fd, off_t off, off_t len);
long fake_vol_unmark(int fd, off_t off, off_t len);
long fake_vol_query(int fd, off_t off, off_t len);

/*
 * Hostility, in parts per 1000 for each call: a purge before a mark or an
 * unmark, a mark that fails, an unmark that fails.  All 0 (the default)
 * is a well-behaved kernel with no memory pressure.
 */
void fake_chaos(unsigned purge_pm, unsigned mark_fail_pm,
		unsigned unmark_fail_pm, uint64_t seed);

/* Forget every range (a new memfd). */
void fake_reset(void);

/* Ranges in the tree; of them, on the LRU (not purged). */
int fake_nranges(void);
int fake_nlru(void);

/* The shrinker: purge the oldest range on the LRU.  0 if there was none. */
int fake_purge_oldest(void);
/* Purge a range of the LRU chosen with r (any range, at any moment). */
int fake_purge_random(uint64_t r);
/* Purge every range on the LRU (drop_caches). */
void fake_purge_all(void);

/* Calls made, for tests that count system calls. */
extern uint64_t fake_marks, fake_unmarks, fake_queries;

/* Called at the start of every mark (tests that look at the caller). */
extern void (*fake_mark_hook)(void);

/*
 * The store's hole punches (fallocate) land in fake_fallocate, which calls
 * this hook first, counts them in fake_punches and punches.
 */
extern void (*fake_punch_hook)(void);
extern uint64_t fake_punches;
int fake_fallocate(int fd, int mode, off_t off, off_t len);

/* A slow kernel: every unmark sleeps this long first (0: none). */
void fake_unmark_delay(unsigned int usec);

#endif
