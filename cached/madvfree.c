// SPDX-License-Identifier: GPL-2.0-only
/*
 * madvfree.c - --mode madvfree: the store's values in private anonymous
 * memory, idle segments given up with MADV_FREE.  This is what mainline
 * Linux offers instead of volatile ranges, and the daemon runs it with
 * everything else unchanged (segments, idle threshold, rescue, eviction)
 * so that the experiment compares the two kernel interfaces alone.
 *
 * MADV_FREE tells nothing about what the kernel took: a freed page reads
 * as zeros, a kept one as before, and a write to a page cancels its free.
 * A purge is therefore detected the way Chrome's discardable memory does
 * it on Linux, with a cookie word per page:
 *
 *   mark    for each page wholly inside the span: save its first word,
 *           write a non-zero cookie there, then MADV_FREE the span (the
 *           writes come first: MADV_FREE clears the dirty bits they set);
 *   unmark  for each page marked: compare-and-swap the cookie back to the
 *           saved word.  A page the kernel freed reads 0 and the swap
 *           fails; a page it kept is written by the swap, which takes it
 *           back from the lazy-free list at once.  One atomic access per
 *           page decides, so a free racing the unmark is either seen or
 *           lost to the write, never half of each.  Returns 1 if any page
 *           was freed (the segment's objects are then lost, as after a
 *           purge of a volatile range), else 0;
 *   query   1 if any page of the span is marked (the store's audit);
 *   punch   MADV_DONTNEED (the pages go back at once and read as zeros).
 *
 * Marks and words are kept per page beside the mapping (9 bytes per 4 KiB
 * page: 0.2% of the store).  Calls are made as the fadvise calls of
 * volatile mode are: the tick's marks and the unmark of a segment a get
 * claimed without the store's lock (store.c), each touching only its own
 * segment's pages and their entries here, the others under it.
 */
#define _GNU_SOURCE
#include "madvfree.h"

#include <errno.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#ifndef MADV_FREE
#define MADV_FREE 8
#endif

/* Any non-zero word: a freed page reads 0 in its place. */
#define COOKIE 0x766f6c6174696c65ull

static char *base;
static size_t page, npages;
static uint64_t *saved;         /* each marked page's first word */
static uint8_t *marked;         /* 1 while a page carries the cookie */

int madv_init(char *map, size_t len)
{
	page = (size_t)sysconf(_SC_PAGESIZE);
	base = map;
	npages = len / page;
	free(saved);
	free(marked);
	saved = calloc(npages, sizeof(*saved));
	marked = calloc(npages, 1);
	return saved && marked ? 0 : -1;
}

void madv_destroy(void)
{
	free(saved);
	free(marked);
	saved = NULL;
	marked = NULL;
	base = NULL;
}

int madv_supported(void)
{
	size_t ps = (size_t)sysconf(_SC_PAGESIZE);
	void *p = mmap(NULL, ps, PROT_READ | PROT_WRITE,
		       MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	int ok;

	if (p == MAP_FAILED)
		return 0;
	ok = madvise(p, ps, MADV_FREE) == 0;
	munmap(p, ps);
	return ok;
}

static uint64_t *word(size_t p)
{
	return (uint64_t *)(void *)(base + p * page);
}

#ifdef VOL_FAKE
/*
 * Tests: the kernel's side of MADV_FREE, at random moments.  Reclaim frees
 * a clean lazy-free page by unmapping it, so that it reads as zeros: the
 * same as MADV_DONTNEED on that page, which is what a discard does here.
 */
static unsigned chaos_discard_pm, chaos_fail_pm;
static uint64_t chaos_rng;

static uint64_t chaos_next(void)
{
	chaos_rng ^= chaos_rng << 13;
	chaos_rng ^= chaos_rng >> 7;
	chaos_rng ^= chaos_rng << 17;
	return chaos_rng;
}

void madv_chaos(unsigned discard_pm, unsigned mark_fail_pm, uint64_t seed)
{
	chaos_discard_pm = discard_pm;
	chaos_fail_pm = mark_fail_pm;
	chaos_rng = seed | 1;
}

int madv_discard_random(uint64_t r)
{
	size_t start = npages ? (size_t)(r % npages) : 0;

	for (size_t i = 0; i < npages; i++) {
		size_t p = (start + i) % npages;

		if (marked[p]) {
			madvise(base + p * page, page, MADV_DONTNEED);
			return 1;
		}
	}
	return 0;
}

void madv_discard_all(void)
{
	for (size_t p = 0; p < npages; p++)
		if (marked[p])
			madvise(base + p * page, page, MADV_DONTNEED);
}

static void chaos_discard(void)
{
	if (chaos_discard_pm && chaos_next() % 1000 < chaos_discard_pm)
		madv_discard_random(chaos_next());
}
#else
static void chaos_discard(void)
{
}
#endif

long madv_mark(off_t off, off_t len)
{
	size_t first = ((size_t)off + page - 1) / page;
	size_t end = ((size_t)off + (size_t)len) / page;

	if (off < 0 || len <= 0 || end > npages)
		return -EINVAL;
	chaos_discard();
#ifdef VOL_FAKE
	if (chaos_fail_pm && chaos_next() % 1000 < chaos_fail_pm)
		return -ENOMEM;
#endif
	if (first >= end)
		return 0;
	for (size_t p = first; p < end; p++) {
		saved[p] = *word(p);
		__atomic_store_n(word(p), COOKIE, __ATOMIC_RELAXED);
		marked[p] = 1;
	}
	if (madvise(base + first * page, (end - first) * page, MADV_FREE) < 0) {
		long err = -errno;

		for (size_t p = first; p < end; p++) {
			*word(p) = saved[p];
			marked[p] = 0;
		}
		return err;
	}
	return 0;
}

long madv_unmark(off_t off, off_t len)
{
	size_t first = (size_t)off / page;
	size_t end = ((size_t)off + (size_t)len + page - 1) / page;
	long lost = 0;

	if (off < 0 || len <= 0 || end > npages)
		return -EINVAL;
	chaos_discard();
	for (size_t p = first; p < end; p++) {
		uint64_t expect = COOKIE;

		if (!marked[p])
			continue;
		marked[p] = 0;
		if (!__atomic_compare_exchange_n(word(p), &expect, saved[p], false,
						 __ATOMIC_SEQ_CST, __ATOMIC_SEQ_CST))
			lost = 1;
	}
	return lost;
}

long madv_query(off_t off, off_t len)
{
	size_t first = (size_t)off / page;
	size_t end = ((size_t)off + (size_t)len + page - 1) / page;

	if (off < 0 || len <= 0 || end > npages)
		return -EINVAL;
	for (size_t p = first; p < end; p++)
		if (marked[p])
			return 1;
	return 0;
}

void madv_punch(off_t off, off_t len)
{
	madvise(base + off, (size_t)len, MADV_DONTNEED);
}
