/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * zipf.h - key popularity samplers, the key patterns of --dist, and the
 * per-thread random generator.
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
 * YCSB's ScrambledZipfianGenerator (YCSB 0.17.0), for --scramble: a value
 * of YCSB's ZipfianGenerator (Gray et al., "Quickly Generating
 * Billion-Record Synthetic Databases", SIGMOD 1994) over a fixed 10^10 + 1
 * items, whatever the key count, hashed with YCSB's fnvhash64 and taken
 * modulo the key count.  The hottest key then gets about 1/zeta(10^10,
 * 0.99) = 3.8% of the requests at any key count, as in YCSB, where a
 * Zipf over the key count itself gives its first rank 13% at 1,000 keys.
 * For s = 0.99 zeta is YCSB's precomputed constant; for other s it is
 * computed (Euler-Maclaurin; YCSB sums 10^10 terms).  At s = 1, where
 * YCSB's formula divides by zero, its limit is used.
 */
#define YCSB_ITEM_COUNT 10000000000ULL	/* ScrambledZipfianGenerator.ITEM_COUNT */
#define YCSB_ZETAN 26.46902820178302	/* its zeta for 0.99 */

struct ycsb_zipf {
	uint64_t n;		/* keys */
	double items;		/* ITEM_COUNT + 1 values, 0..ITEM_COUNT */
	double theta, zetan, eta, alpha, half_pow;
	double log_half_items;	/* s = 1: ln(items / 2), for the limit */
};

/* s must be > 0 and n >= 1. */
void ycsb_zipf_init(struct ycsb_zipf *z, uint64_t n, double s);
/* A value of YCSB's ZipfianGenerator, 0..ITEM_COUNT, 0 the most popular. */
uint64_t ycsb_zipf_value(const struct ycsb_zipf *z, struct rng *r);
/* A key index 0..n-1: fnvhash64(value) mod n. */
uint64_t ycsb_zipf_sample(const struct ycsb_zipf *z, struct rng *r);
/* YCSB's Utils.fnvhash64: FNV-1a 64 over the 8 bytes, low first; |h|. */
uint64_t ycsb_fnvhash64(uint64_t v);
/* sum of k^-s for k = 1..n */
double zeta_sum(uint64_t n, double s);

/*
 * A truncated normal over 0..n-1: a normal variate of mean `mean` and
 * standard deviation sd (> 0), rounded to the nearest index and drawn
 * again while it falls outside (memtier_benchmark's gaussian pattern).
 * Each try succeeds with probability at least 0.38 when sd <= n and the
 * mean lies in the range.
 */
uint64_t gaussian_key(struct rng *r, uint64_t n, double mean, double sd);

/*
 * How the next key index, 0..n-1, of a command is drawn (--dist):
 * uniform; Zipf(s) with index 0 the most popular; YCSB's scrambled Zipf;
 * sequential (index after index from `start`, wrapping at n); or a normal
 * centred on the middle of the range with standard deviation sd.
 */
enum { KD_UNIFORM, KD_ZIPF, KD_SCRAMBLED, KD_SEQUENTIAL, KD_GAUSSIAN };

struct keydist {
	int kind;
	uint64_t n;
	double sd;		/* KD_GAUSSIAN */
	uint64_t next;		/* KD_SEQUENTIAL */
	struct zipf zipf;	/* KD_ZIPF */
	struct ycsb_zipf ycsb;	/* KD_SCRAMBLED */
};

/* param is s for the Zipfs and sd for the normal; start is sequential's. */
void keydist_init(struct keydist *d, int kind, uint64_t n, double param,
		  uint64_t start);
uint64_t keydist_sample(struct keydist *d, struct rng *r);

/*
 * A keyed permutation of 0..n-1, for a random warm-up order.  It is a
 * 4-round Feistel network over the smallest power of four >= n, applied
 * again while the result is >= n (cycle walking: fewer than 4 rounds of
 * the network on average).  O(1) memory for any n.
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
