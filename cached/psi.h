/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * psi.h - --mode psi: the daemon gives memory back itself when free memory
 * runs low (a band of free memory, as CacheLib's MemoryMonitor, woken early
 * by a PSI trigger), or, with --psi-policy trigger, on each PSI event.
 */
#ifndef PSI_H
#define PSI_H

#include <stdint.h>

struct event_base;

/* The band policy's limits, in bytes. */
struct psi_band {
	uint64_t low, high;     /* free memory below low gives back, above high takes back */
	uint64_t step;          /* bytes given or taken back per poll */
	uint64_t cap;           /* most bytes given back in all */
};

/*
 * The band controller: the bytes given back after one poll that found
 * free_bytes free, when given were given back before it.
 */
uint64_t psi_band_next(const struct psi_band *b, uint64_t given,
		       uint64_t free_bytes);

/* Arm the trigger (and the band's poll).  Returns 0, or -1 (logged) when
 * PSI is unavailable. */
int psi_init(struct event_base *base);

#endif
