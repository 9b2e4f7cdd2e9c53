/*
 * zipf.h - key popularity samplers and the per-thread random generator.
 *
 * Zipf(s) over ranks 1..n: P(k) = k^-s / H(n,s).  Sampling uses
 * rejection-inversion (Hoermann and Derflinger, 1996): O(1) time and memory
 * for any n and any s > 0, no table of n entries.
 */
#ifndef ZIPF_H
#define ZIPF_H

#include <stdint.h>

struct rng {
	uint64_t s[4];
};

void rng_seed(struct rng *r, uint64_t seed);
uint64_t rng_next(struct rng *r);
/* Uniform double in [0, 1). */
double rng_double(struct rng *r);
/* Uniform integer in [0, n). */
uint64_t rng_below(struct rng *r, uint64_t n);

struct zipf {
	uint64_t n;
	double s;
	double h_x1;	/* H(1.5) - 1 */
	double h_n;	/* H(n + 0.5) */
	double cut;
};

/* s must be > 0 and n >= 1. */
void zipf_init(struct zipf *z, uint64_t n, double s);
/* A rank in 1..n, rank 1 the most popular. */
uint64_t zipf_sample(const struct zipf *z, struct rng *r);

#endif /* ZIPF_H */
