// SPDX-License-Identifier: GPL-2.0-only
/*
 * fake_kernel.c - volatile ranges of one memfd, as the kernel series keeps
 * them (see fake_kernel.h).  A sorted array of disjoint page ranges: the
 * tests hold at most a few thousand, so O(n) per call is plenty.
 */
#define _GNU_SOURCE
#include "fake_kernel.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define FPAGE 4096

struct frange {
	uint64_t start, last;   /* pages, inclusive */
	uint64_t seq;           /* LRU position: lower = marked earlier */
	bool purged;
	bool on_lru;
};

static struct frange *rg;
static int nrg, caprg;
static uint64_t seq;
static int ffd = -1;
static unsigned p_purge, p_mark_fail, p_unmark_fail;
static uint64_t rng = 1;
uint64_t fake_marks, fake_unmarks, fake_queries;
static unsigned int unmark_delay_us;

void fake_unmark_delay(unsigned int usec)
{
	unmark_delay_us = usec;
}

static uint64_t next_rand(void)
{
	rng ^= rng << 13;
	rng ^= rng >> 7;
	rng ^= rng << 17;
	return rng;
}

void fake_chaos(unsigned purge_pm, unsigned mark_fail_pm,
		unsigned unmark_fail_pm, uint64_t s)
{
	p_purge = purge_pm;
	p_mark_fail = mark_fail_pm;
	p_unmark_fail = unmark_fail_pm;
	rng = s ? s : 1;
}

void fake_reset(void)
{
	nrg = 0;
	seq = 0;
	ffd = -1;
	fake_marks = fake_unmarks = fake_queries = 0;
}

int fake_nranges(void)
{
	return nrg;
}

int fake_nlru(void)
{
	int n = 0;

	for (int i = 0; i < nrg; i++)
		n += rg[i].on_lru;
	return n;
}

static uint64_t file_pages(int fd)
{
	struct stat st;

	if (fstat(fd, &st) < 0)
		return 0;
	return (uint64_t)st.st_size / FPAGE;
}

/* Insert at position i, keeping the array sorted. */
static void rg_insert(int i, struct frange r)
{
	if (nrg == caprg) {
		caprg = caprg ? 2 * caprg : 256;
		rg = realloc(rg, (size_t)caprg * sizeof(*rg));
		if (!rg)
			abort();
	}
	memmove(&rg[i + 1], &rg[i], (size_t)(nrg - i) * sizeof(*rg));
	rg[i] = r;
	nrg++;
}

static void rg_delete(int i)
{
	memmove(&rg[i], &rg[i + 1], (size_t)(nrg - i - 1) * sizeof(*rg));
	nrg--;
}

/* The shrinker's purge of range i: the whole range, its pages punched. */
static void purge(int i)
{
	struct frange *r = &rg[i];

	if (ffd >= 0)
		fallocate(ffd, FALLOC_FL_PUNCH_HOLE | FALLOC_FL_KEEP_SIZE,
			  (off_t)(r->start * FPAGE),
			  (off_t)((r->last - r->start + 1) * FPAGE));
	r->purged = true;
	r->on_lru = false;
}

int fake_purge_oldest(void)
{
	int best = -1;

	for (int i = 0; i < nrg; i++)
		if (rg[i].on_lru && (best < 0 || rg[i].seq < rg[best].seq))
			best = i;
	if (best < 0)
		return 0;
	purge(best);
	return 1;
}

int fake_purge_random(uint64_t r)
{
	int n = fake_nlru(), k;

	if (!n)
		return 0;
	k = (int)(r % (uint64_t)n);
	for (int i = 0; i < nrg; i++)
		if (rg[i].on_lru && k-- == 0) {
			purge(i);
			return 1;
		}
	return 0;
}

void fake_purge_all(void)
{
	for (int i = 0; i < nrg; i++)
		if (rg[i].on_lru)
			purge(i);
}

/* Memory pressure at any moment: before a call, maybe purge something. */
static void maybe_pressure(void)
{
	if (p_purge && next_rand() % 1000 < p_purge) {
		if (next_rand() & 1)
			fake_purge_oldest();
		else
			fake_purge_random(next_rand());
	}
}

void (*fake_mark_hook)(void);

long fake_vol_mark(int fd, off_t off, off_t len)
{
	uint64_t start, end, last, size;
	bool purged = false;
	int i;

	if (fake_mark_hook)
		fake_mark_hook();
	fake_marks++;
	ffd = fd;
	maybe_pressure();
	if (off < 0 || len < 0)
		return -EINVAL;
	if (p_mark_fail && next_rand() % 1000 < p_mark_fail)
		return -ENOMEM;
	size = file_pages(fd);
	/* only pages lying entirely inside the span */
	start = ((uint64_t)off + FPAGE - 1) / FPAGE;
	end = len ? ((uint64_t)off + (uint64_t)len) / FPAGE : size;
	if (end > size)
		end = size;
	if (start >= end)
		return 0;
	last = end - 1;
	/* absorb every range it overlaps, inheriting the purged flag */
	for (i = 0; i < nrg && rg[i].last < start; i++)
		;
	while (i < nrg && rg[i].start <= last) {
		if (rg[i].start < start)
			start = rg[i].start;
		if (rg[i].last > last)
			last = rg[i].last;
		purged |= rg[i].purged;
		rg_delete(i);
	}
	rg_insert(i, (struct frange){ start, last, ++seq, purged, true });
	return 0;
}

long fake_vol_unmark(int fd, off_t off, off_t len)
{
	uint64_t start, last;
	int purged = 0, i;

	if (unmark_delay_us)
		usleep(unmark_delay_us);
	fake_unmarks++;
	ffd = fd;
	maybe_pressure();
	if (off < 0 || len < 0)
		return -EINVAL;
	if (p_unmark_fail && next_rand() % 1000 < p_unmark_fail)
		return -ENOMEM;   /* nothing changed */
	/* every page the span touches */
	start = (uint64_t)off / FPAGE;
	last = len ? ((uint64_t)off + (uint64_t)len + FPAGE - 1) / FPAGE - 1
		   : UINT64_MAX;
	for (i = 0; i < nrg && rg[i].last < start; i++)
		;
	while (i < nrg && rg[i].start <= last) {
		struct frange *r = &rg[i];

		purged |= r->purged;
		if (r->start >= start && r->last <= last) {
			rg_delete(i);
			continue;
		}
		if (r->start < start && r->last > last) {
			/* split: the right part follows the left one */
			struct frange right = *r;

			right.start = last + 1;
			r->last = start - 1;
			rg_insert(i + 1, right);
			break;
		}
		if (r->start < start)
			r->last = start - 1;
		else
			r->start = last + 1;
		i++;
	}
	return purged;
}

long fake_vol_query(int fd, off_t off, off_t len)
{
	uint64_t start, last;

	(void)fd;
	fake_queries++;
	if (off < 0 || len < 0)
		return -EINVAL;
	start = (uint64_t)off / FPAGE;
	last = len ? ((uint64_t)off + (uint64_t)len + FPAGE - 1) / FPAGE - 1
		   : UINT64_MAX;
	for (int i = 0; i < nrg; i++)
		if (rg[i].start <= last && rg[i].last >= start)
			return 1;
	return 0;
}

void (*fake_punch_hook)(void);
uint64_t fake_punches;

/* A hole punch of the store: the real one, after the hook. */
int fake_fallocate(int fd, int mode, off_t off, off_t len)
{
	if (fake_punch_hook)
		fake_punch_hook();
	__atomic_fetch_add(&fake_punches, 1, __ATOMIC_RELAXED);
	return fallocate(fd, mode, off, len);
}
