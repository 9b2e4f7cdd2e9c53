/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * madvfree.h - --mode madvfree: MADV_FREE on private anonymous memory with
 * a cookie word per page to tell a freed page from a kept one.  The
 * calls mirror vol_mark/vol_unmark/vol_query of volatile mode (offsets
 * into the mapping given to madv_init); see madvfree.c.
 */
#ifndef MADVFREE_H
#define MADVFREE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Keep per-page state for len bytes at map.  0, or -1 (no memory). */
int madv_init(char *map, size_t len);
void madv_destroy(void);

/* 1 when this kernel has MADV_FREE (4.5 and later), else 0. */
int madv_supported(void);

/* Give up the pages wholly inside the span.  0 or a negative errno. */
long madv_mark(off_t off, off_t len);
/* Take back every marked page the span touches: 1 if the kernel had
 * freed any of them, else 0 (or -EINVAL). */
long madv_unmark(off_t off, off_t len);
/* 1 if any page the span touches is marked, else 0. */
long madv_query(off_t off, off_t len);
/* Free the span's pages now (they read as zeros). */
void madv_punch(off_t off, off_t len);

#ifdef VOL_FAKE
/* Tests: the kernel freeing marked pages.  Before each mark or unmark,
 * discard_pm per 1000 to free one marked page and mark_fail_pm to fail
 * the mark with -ENOMEM; one marked page chosen by r (1 if there was
 * one); every marked page. */
void madv_chaos(unsigned discard_pm, unsigned mark_fail_pm, uint64_t seed);
int madv_discard_random(uint64_t r);
void madv_discard_all(void);
#endif

#endif
