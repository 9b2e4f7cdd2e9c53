// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_zipf.c - sampled frequencies against the exact distributions.
 *
 * Tolerances: every Zipf run draws 2,000,000 samples and must pass a
 * chi-square test against P(k) = k^-s / H(n,s) at dof + 6 * sqrt(2 * dof)
 * (about six standard deviations; a correct sampler fails it with
 * probability far below 1e-6), and each of the ten most popular ranks must
 * be within 5 standard deviations of binomial noise of its expected
 * frequency (for n=1000, s=0.99 that is 0.6% relative for rank 1 and 2% for
 * rank 10).
 *
 * Arrivals: the Kolmogorov-Smirnov distance of 100,000 Poisson gaps from
 * the exponential distribution of their mean must be below the 0.1%
 * critical value 1.95 / sqrt(n), which constant gaps exceed by far.
 * The warm-up permutation must be a bijection.  Scrambled Zipf must be
 * YCSB's: its key frequencies against a reference computed from YCSB's
 * definition (see check_scrambled).  The gaussian key pattern passes the
 * same chi-square test against the normal's probabilities of each index,
 * renormalised over the range; the sequential one walks the range in order.
 */
#include <math.h>
#include <stdlib.h>

#include "zipf.h"
#include "tap.h"

#define SAMPLES 2000000

static void check_zipf(uint64_t n, double s, uint64_t seed)
{
	uint64_t *cnt = calloc(n + 1, sizeof(*cnt));
	double hsum = 0, chi = 0;
	struct zipf z;
	struct rng r;
	int bad = 0;

	zipf_init(&z, n, s);
	rng_seed(&r, seed);
	for (int i = 0; i < SAMPLES; i++) {
		uint64_t k = zipf_sample(&z, &r);

		if (k < 1 || k > n) {
			bad = 1;
			break;
		}
		cnt[k]++;
	}
	CHECK(!bad, "n=%llu s=%g: sample out of range", (unsigned long long)n, s);
	for (uint64_t k = 1; k <= n; k++)
		hsum += pow((double)k, -s);
	/* chi-square; ranks whose expectation is below 5 are pooled */
	{
		double pool_e = 0, pool_o = 0;
		uint64_t dof = 0;

		for (uint64_t k = 1; k <= n; k++) {
			double e = SAMPLES * pow((double)k, -s) / hsum;

			if (e < 5) {
				pool_e += e;
				pool_o += (double)cnt[k];
				continue;
			}
			chi += ((double)cnt[k] - e) * ((double)cnt[k] - e) / e;
			dof++;
		}
		if (pool_e > 0) {
			chi += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
			dof++;
		}
		dof--;
		if (dof > 0)
			CHECK(chi < (double)dof + 6 * sqrt(2.0 * (double)dof),
			      "n=%llu s=%g: chi-square %.1f with %llu dof",
			      (unsigned long long)n, s, chi, (unsigned long long)dof);
	}
	for (uint64_t k = 1; k <= 10 && k <= n; k++) {
		double e = pow((double)k, -s) / hsum;
		double o = (double)cnt[k] / SAMPLES;

		CHECK(fabs(o - e) <= 5 * sqrt(e * (1 - e) / SAMPLES), "n=%llu s=%g rank %llu: %.5f vs %.5f",
		      (unsigned long long)n, s, (unsigned long long)k, o, e);
	}
	free(cnt);
}

static void test_zipf_099(void)
{
	check_zipf(1000, 0.99, 1);
}

static void test_zipf_1(void)
{
	check_zipf(100, 1.0, 2);
}

static void test_zipf_05(void)
{
	check_zipf(10000, 0.5, 3);
}

static void test_zipf_15(void)
{
	check_zipf(100000, 1.5, 4);
}

static void test_zipf_large_n(void)
{
	/* ranks stay in range and rank 1 keeps its share with a huge key space */
	struct zipf z;
	struct rng r;
	uint64_t n = 1000000000ULL, ones = 0;
	double h = 0;
	int bad = 0;

	zipf_init(&z, n, 0.99);
	rng_seed(&r, 5);
	for (int i = 0; i < SAMPLES; i++) {
		uint64_t k = zipf_sample(&z, &r);

		bad |= k < 1 || k > n;
		ones += k == 1;
	}
	/* H(n, s) by Euler-Maclaurin: sum to 1e6 plus the integral tail */
	for (uint64_t k = 1; k <= 1000000; k++)
		h += pow((double)k, -0.99);
	h += (pow(1e9, 0.01) - pow(1e6, 0.01)) / 0.01 -
	     0.5 * pow(1e6, -0.99) + 0.5 * pow(1e9, -0.99);
	CHECK(!bad, "sample out of range");
	CHECK(fabs((double)ones / SAMPLES - 1 / h) <= 5 * sqrt(1 / h / SAMPLES),
	      "rank 1: %.5f vs %.5f", (double)ones / SAMPLES, 1 / h);
}

static void test_zipf_single(void)
{
	struct zipf z;
	struct rng r;

	zipf_init(&z, 1, 0.99);
	rng_seed(&r, 6);
	for (int i = 0; i < 1000; i++)
		CHECK(zipf_sample(&z, &r) == 1, "n=1 must give 1");
}

static void test_uniform(void)
{
	enum { BINS = 100 };
	uint64_t cnt[BINS] = { 0 };
	struct rng r;
	double chi = 0, e = SAMPLES / (double)BINS;

	rng_seed(&r, 8);
	for (int i = 0; i < SAMPLES; i++)
		cnt[rng_below(&r, BINS)]++;
	for (int i = 0; i < BINS; i++)
		chi += ((double)cnt[i] - e) * ((double)cnt[i] - e) / e;
	CHECK(chi < 99 + 6 * sqrt(198.0), "uniform chi-square %.1f", chi);
	for (int i = 0; i < 1000; i++) {
		double d = rng_double(&r);

		CHECK(d >= 0 && d < 1, "rng_double out of [0,1)");
	}
}

/* P(X <= x) of the standard normal */
static double phi(double x)
{
	return 0.5 * erfc(-x / sqrt(2.0));
}

/*
 * gaussian_key over n keys against P(k), the normal's mass on
 * [k - 0.5, k + 0.5) renormalised over [-0.5, n - 0.5): a chi-square over
 * the keys expected at least 5 times (the rest pooled into one bin).
 */
static void check_gaussian(uint64_t n, double sd, uint64_t seed)
{
	uint64_t *cnt = calloc(n, sizeof(*cnt));
	double mean = (double)(n - 1) / 2, z, chi = 0, pool_e = 0, pool_n = 0;
	struct keydist d;
	struct rng r;
	int bins = 0;

	keydist_init(&d, KD_GAUSSIAN, n, sd, 0);
	rng_seed(&r, seed);
	for (int i = 0; i < SAMPLES; i++) {
		uint64_t k = keydist_sample(&d, &r);

		if (k >= n) {
			CHECK(0, "key %llu out of 0..%llu", (unsigned long long)k,
			      (unsigned long long)n - 1);
			break;
		}
		cnt[k]++;
	}
	z = phi((n - 0.5 - mean) / sd) - phi((-0.5 - mean) / sd);
	for (uint64_t k = 0; k < n; k++) {
		double e = SAMPLES * (phi((k + 0.5 - mean) / sd) -
				      phi((k - 0.5 - mean) / sd)) / z;

		if (e < 5) {
			pool_e += e;
			pool_n += (double)cnt[k];
			continue;
		}
		chi += ((double)cnt[k] - e) * ((double)cnt[k] - e) / e;
		bins++;
	}
	if (pool_e > 0) {
		chi += (pool_n - pool_e) * (pool_n - pool_e) / pool_e;
		bins++;
	}
	CHECK(bins > 1 && chi < (bins - 1) + 6 * sqrt(2.0 * (bins - 1)),
	      "n %llu sd %g: chi-square %.1f over %d bins",
	      (unsigned long long)n, sd, chi, bins);
	free(cnt);
}

static void test_gaussian(void)
{
	check_gaussian(1000, 50, 21);	/* the tails pooled */
	check_gaussian(100, 100, 22);	/* truncated hard: nearly flat */
	check_gaussian(10, 1, 23);
}

static void test_keydist_edges(void)
{
	struct keydist d;
	struct rng r;

	rng_seed(&r, 24);
	keydist_init(&d, KD_GAUSSIAN, 1, 0.5, 0);
	for (int i = 0; i < 1000; i++)
		CHECK(keydist_sample(&d, &r) == 0, "one key: not 0");
	keydist_init(&d, KD_SEQUENTIAL, 5, 0, 13);	/* starts at 13 mod 5 */
	for (int i = 0; i < 12; i++) {
		uint64_t k = keydist_sample(&d, &r);

		CHECK(k == (uint64_t)(3 + i) % 5, "sequential: %llu at step %d",
		      (unsigned long long)k, i);
	}
	keydist_init(&d, KD_UNIFORM, 7, 0, 0);
	for (int i = 0; i < 1000; i++)
		CHECK(keydist_sample(&d, &r) < 7, "uniform out of range");
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* KS distance of the sample from Exp(mean) */
static double ks_exponential(int64_t *v, int n, double mean)
{
	double d = 0;

	qsort(v, (size_t)n, sizeof(*v), cmp_i64);
	for (int i = 0; i < n; i++) {
		double f = 1 - exp(-(double)v[i] / mean);
		double lo = f - (double)i / n, hi = (double)(i + 1) / n - f;

		d = fmax(d, fmax(lo, hi));
	}
	return d;
}

static void test_arrivals(void)
{
	enum { N = 100000 };
	int64_t *v = malloc(N * sizeof(*v));
	const int64_t mean = 2500000;	/* 400 ops/s on one connection */
	double sum = 0, d, crit = 1.95 / sqrt(N);
	struct rng r;

	rng_seed(&r, 9);
	for (int i = 0; i < N; i++) {
		v[i] = arrival_gap(&r, mean, 1);
		sum += (double)v[i];
		CHECK(v[i] >= 0, "negative gap");
	}
	CHECK(fabs(sum / N - mean) < 5 * mean / sqrt(N), "mean gap %.0f, want %lld",
	      sum / N, (long long)mean);
	d = ks_exponential(v, N, (double)mean);
	CHECK(d < crit, "Poisson gaps: KS distance %.4f, critical %.4f", d, crit);
	/* the same test refuses constant intervals */
	for (int i = 0; i < N; i++)
		v[i] = arrival_gap(&r, mean, 0);
	CHECK(v[0] == mean, "constant gap %lld", (long long)v[0]);
	d = ks_exponential(v, N, (double)mean);
	CHECK(d > 10 * crit, "constant gaps pass the KS test: %.4f", d);
	free(v);
}

static void test_perm_bijection(void)
{
	static const uint64_t ns[] = { 1, 2, 3, 5, 1000, 4096, 100003, 1 << 20 };

	for (size_t j = 0; j < sizeof(ns) / sizeof(ns[0]); j++) {
		uint64_t n = ns[j];
		unsigned char *seen = calloc(n, 1);
		struct perm p;
		uint64_t fixed = 0, bad = 0;

		perm_init(&p, n, 11 + j);
		for (uint64_t x = 0; x < n; x++) {
			uint64_t y = perm_map(&p, x);

			if (y >= n || seen[y]) {
				bad++;
				continue;
			}
			seen[y] = 1;
			fixed += y == x;
		}
		CHECK(!bad, "n=%llu: %llu images out of range or repeated",
		      (unsigned long long)n, (unsigned long long)bad);
		if (n >= 1000)
			CHECK(fixed < 20, "n=%llu: %llu fixed points", (unsigned long long)n,
			      (unsigned long long)fixed);
		free(seen);
	}
}

/*
 * --scramble is YCSB's ScrambledZipfianGenerator (YCSB 0.17.0): a Zipfian
 * value from Gray et al.'s generator over 10^10 + 1 items with YCSB's
 * precomputed zeta, hashed with YCSB's fnvhash64 (FNV-1a 64 over the 8
 * bytes, low first, then the absolute value) modulo the key count.  The
 * reference here is computed from that definition, not sampled: the
 * probability of every value below M exactly, from the generator's
 * inverse, the rest (ranks M and up: 10^10 of them, each tiny) spread
 * evenly over the keys.
 */
#define YCSB_ITEMS 10000000001.0	/* ZipfianGenerator(0, 10^10) */
#define REF_M 1000000

static uint64_t ref_fnv(uint64_t v)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (int i = 0; i < 8; i++) {
		h ^= v & 0xff;
		v >>= 8;
		h *= 1099511628211ULL;
	}
	return (int64_t)h < 0 ? -h : h;	/* Java's Math.abs */
}

/*
 * P(value = k) of YCSB's ZipfianGenerator for theta < 1: u uniform in
 * [0, 1); u * zetan < 1 gives 0, below 1 + 0.5^theta gives 1, else
 * floor(items * (eta * u - eta + 1)^(1 / (1 - theta))), which is below k
 * exactly when u < 1 - g(k) with g(k) = (1 - (k / items)^(1 - theta)) / eta.
 */
struct ycsb_ref {
	double theta, zetan, eta, u2;
};

static void ref_init(struct ycsb_ref *y, double theta, double zetan)
{
	double zeta2 = 1 + pow(0.5, theta);

	y->theta = theta;
	y->zetan = zetan;
	y->eta = (1 - pow(2.0 / YCSB_ITEMS, 1 - theta)) / (1 - zeta2 / zetan);
	y->u2 = zeta2 / zetan;
}

/* P(value < k) from the formula's branch alone */
static double ref_below(const struct ycsb_ref *y, double k)
{
	double g = (1 - pow(k / YCSB_ITEMS, 1 - y->theta)) / y->eta;
	double u = 1 - g;

	if (u < y->u2)
		u = y->u2;
	return u > 1 ? 1 - y->u2 : u - y->u2;
}

static double ref_p(const struct ycsb_ref *y, uint64_t k)
{
	double p = ref_below(y, (double)k + 1) - ref_below(y, (double)k);

	if (k == 0)
		p += 1 / y->zetan;
	if (k == 1)
		p += pow(0.5, y->theta) / y->zetan;
	return p;
}

/* prob[key] for n keys */
static void ref_keys(const struct ycsb_ref *y, uint64_t n, double *prob)
{
	double tail = 1 - ref_below(y, REF_M) - 1 / y->zetan -
		      pow(0.5, y->theta) / y->zetan;

	for (uint64_t j = 0; j < n; j++)
		prob[j] = tail / (double)n;
	for (uint64_t k = 0; k < REF_M; k++)
		prob[ref_fnv(k) % n] += ref_p(y, k);
}

/* The sampler under test: the key index --scramble sends. */
static uint64_t scrambled_key(uint64_t n, double s, struct rng *r)
{
	static struct ycsb_zipf z;

	if (z.n != n || z.theta != s)
		ycsb_zipf_init(&z, n, s);
	return ycsb_zipf_sample(&z, r);
}

static int cmp_desc(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x < y) - (x > y);
}

/*
 * 2,000,000 keys of n: the hottest key is YCSB's (fnvhash64(0) mod n) at
 * YCSB's frequency within 5% (relative) and within 5 standard deviations
 * of binomial noise; the ten highest key frequencies (the rank-frequency
 * curve's head) each within 5 standard deviations of the reference's ten
 * highest; and a chi-square test of every key against the reference.
 */
static void check_scrambled(uint64_t n, double s, double zetan, uint64_t seed)
{
	uint64_t *cnt = calloc(n, sizeof(*cnt));
	double *prob = malloc(n * sizeof(*prob));
	double *freq = malloc(n * sizeof(*freq));
	double chi = 0, pool_e = 0, pool_o = 0, ptop, ftop;
	uint64_t hot = ref_fnv(0) % n, dof = 0, top = 0;
	struct ycsb_ref y;
	struct rng r;

	ref_init(&y, s, zetan);
	ref_keys(&y, n, prob);
	rng_seed(&r, seed);
	for (int i = 0; i < SAMPLES; i++) {
		uint64_t k = scrambled_key(n, s, &r);

		if (k >= n) {
			tap_fail("n=%llu: key %llu out of range", (unsigned long long)n,
				 (unsigned long long)k);
			goto out;
		}
		cnt[k]++;
	}
	for (uint64_t j = 1; j < n; j++)
		top = cnt[j] > cnt[top] ? j : top;
	ptop = prob[hot];
	ftop = (double)cnt[hot] / SAMPLES;
	CHECK(top == hot, "n=%llu: hottest key %llu, YCSB's is %llu",
	      (unsigned long long)n, (unsigned long long)top, (unsigned long long)hot);
	CHECK(fabs(ftop - ptop) <= 0.05 * ptop &&
	      fabs(ftop - ptop) <= 5 * sqrt(ptop * (1 - ptop) / SAMPLES),
	      "n=%llu s=%g: hottest key at %.5f, YCSB's %.5f", (unsigned long long)n,
	      s, ftop, ptop);
	for (uint64_t j = 0; j < n; j++) {
		double e = SAMPLES * prob[j];

		freq[j] = (double)cnt[j] / SAMPLES;
		if (e < 5) {
			pool_e += e;
			pool_o += (double)cnt[j];
			continue;
		}
		chi += ((double)cnt[j] - e) * ((double)cnt[j] - e) / e;
		dof++;
	}
	if (pool_e > 0) {
		chi += (pool_o - pool_e) * (pool_o - pool_e) / pool_e;
		dof++;
	}
	dof--;
	CHECK(chi < (double)dof + 6 * sqrt(2.0 * (double)dof),
	      "n=%llu s=%g: chi-square %.1f with %llu dof", (unsigned long long)n, s,
	      chi, (unsigned long long)dof);
	qsort(prob, n, sizeof(*prob), cmp_desc);
	qsort(freq, n, sizeof(*freq), cmp_desc);
	for (int i = 0; i < 10; i++)
		CHECK(fabs(freq[i] - prob[i]) <= 5 * sqrt(prob[i] * (1 - prob[i]) / SAMPLES),
		      "n=%llu s=%g: key of rank %d at %.5f, YCSB's %.5f",
		      (unsigned long long)n, s, i + 1, freq[i], prob[i]);
out:
	free(cnt);
	free(prob);
	free(freq);
}

static void test_scrambled_1000(void)
{
	check_scrambled(1000, 0.99, 26.46902820178302, 10);	/* YCSB's zeta */
}

static void test_scrambled_100000(void)
{
	check_scrambled(100000, 0.99, 26.46902820178302, 11);
}

/* --scramble with another s: zeta over 10^10 + 1 items is computed */
static void test_scrambled_s08(void)
{
	check_scrambled(1000, 0.8, zeta_sum(YCSB_ITEM_COUNT + 1, 0.8), 12);
}

/*
 * s = 1, where YCSB's formula divides by zero, takes its limit: with the
 * same random numbers, the share of values below 10, 10^3, 10^5 and 10^7
 * lies between those of s = 0.999 and s = 1.001 (the values fall as s
 * grows); values 0 and 1 keep their exact shares 1/zeta and 0.5/zeta.
 */
static void test_scrambled_s1(void)
{
	static const double ss[3] = { 0.999, 1.0, 1.001 };
	static const uint64_t cut[4] = { 10, 1000, 100000, 10000000 };
	uint64_t below[3][4] = { { 0 } }, ones[3] = { 0 }, zeros[3] = { 0 };
	enum { M = 500000 };

	for (int j = 0; j < 3; j++) {
		struct ycsb_zipf z;
		struct rng r;

		ycsb_zipf_init(&z, 1000, ss[j]);
		rng_seed(&r, 13);
		for (int i = 0; i < M; i++) {
			uint64_t v = ycsb_zipf_value(&z, &r);

			zeros[j] += v == 0;
			ones[j] += v == 1;
			for (int c = 0; c < 4; c++)
				below[j][c] += v < cut[c];
			if (v > YCSB_ITEM_COUNT) {
				tap_fail("s=%g: value %llu", ss[j], (unsigned long long)v);
				return;
			}
		}
	}
	for (int c = 0; c < 4; c++)
		CHECK(below[0][c] <= below[1][c] && below[1][c] <= below[2][c],
		      "below %llu: %llu %llu %llu", (unsigned long long)cut[c],
		      (unsigned long long)below[0][c], (unsigned long long)below[1][c],
		      (unsigned long long)below[2][c]);
	{
		double z1 = zeta_sum(YCSB_ITEM_COUNT + 1, 1.0);
		double p0 = 1 / z1, p1 = 0.5 / z1;

		CHECK(fabs((double)zeros[1] / M - p0) <= 5 * sqrt(p0 * (1 - p0) / M),
		      "s=1: value 0 at %.5f, want %.5f", (double)zeros[1] / M, p0);
		CHECK(fabs((double)ones[1] / M - p1) <= 5 * sqrt(p1 * (1 - p1) / M),
		      "s=1: value 1 at %.5f, want %.5f", (double)ones[1] / M, p1);
	}
}

/*
 * zeta_sum against sums taken term by term (Euler-Maclaurin after the
 * first 100 terms), and against YCSB's precomputed zeta for 0.99 over
 * 10^10 + 1 items.
 */
static void test_zeta_sum(void)
{
	static const double ss[] = { 0.2, 0.5, 0.99, 1.0, 1.5, 3.0 };
	static const uint64_t ns[] = { 1, 50, 99, 100, 101, 1000, 1000000 };

	for (size_t i = 0; i < sizeof(ss) / sizeof(ss[0]); i++) {
		for (size_t j = 0; j < sizeof(ns) / sizeof(ns[0]); j++) {
			double d = 0, got = zeta_sum(ns[j], ss[i]);

			for (uint64_t k = ns[j]; k >= 1; k--)	/* small terms first */
				d += pow((double)k, -ss[i]);
			CHECK(fabs(got - d) <= 1e-12 * d, "zeta(%llu, %g): %.15g, summed %.15g",
			      (unsigned long long)ns[j], ss[i], got, d);
		}
	}
	CHECK(fabs(zeta_sum(YCSB_ITEM_COUNT + 1, 0.99) - YCSB_ZETAN) <= 1e-9 * YCSB_ZETAN,
	      "zeta(10^10 + 1, 0.99) %.15g, YCSB's %.15g",
	      zeta_sum(YCSB_ITEM_COUNT + 1, 0.99), YCSB_ZETAN);
}

int main(int argc, char **argv)
{
	TAP_INIT(argc, argv);
	RUN(test_zipf_099);
	RUN(test_zipf_1);
	RUN(test_zipf_05);
	RUN(test_zipf_15);
	RUN(test_zipf_large_n);
	RUN(test_zipf_single);
	RUN(test_uniform);
	RUN(test_gaussian);
	RUN(test_keydist_edges);
	RUN(test_arrivals);
	RUN(test_perm_bijection);
	RUN(test_scrambled_1000);
	RUN(test_scrambled_100000);
	RUN(test_scrambled_s08);
	RUN(test_scrambled_s1);
	RUN(test_zeta_sum);
	return tap_failed;
}
