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
/*
 * The gap to the next open-loop arrival, of mean mean_ns: mean_ns itself
 * (constant intervals), or with poisson an exponential variate of that mean
 * (inversion: -mean * ln(1 - U)), which makes the arrivals a Poisson
 * process; the sum of the connections' processes is one of the total rate.
 */
int64_t arrival_gap(struct rng *r, int64_t mean_ns, int poisson);

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

/*
 * A keyed permutation of 0..n-1, for scrambled Zipf (key ranks spread over
 * the key space, so that hot keys are not neighbours) and a random warm-up
 * order.  YCSB's ScrambledZipfian hashes a rank modulo n, which merges some
 * ranks and leaves keys unused; a permutation keeps every rank's frequency
 * exactly.  It is a 4-round Feistel network over the smallest power of four
 * >= n, applied again while the result is >= n (cycle walking: fewer than 4
 * rounds of the network on average).  O(1) memory for any n.
 */
struct perm {
	uint64_t n;
	int half_bits;
	uint64_t mask;
	uint64_t key[4];
};

void perm_init(struct perm *p, uint64_t n, uint64_t seed);
/* x < n; returns the image of x, also < n. */
uint64_t perm_map(const struct perm *p, uint64_t x);

#endif /* ZIPF_H */
