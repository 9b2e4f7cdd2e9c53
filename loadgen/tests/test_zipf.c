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
 * Scrambled Zipf: the permutation must be a bijection, sampled keys must
 * keep their ranks' frequencies (the chi-square test above, after mapping
 * the keys back), and the ten hottest keys must not be neighbours.
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
 * Sample scrambled keys (rank r -> key perm(r - 1)) and check them with the
 * chi-square test of check_zipf after mapping every key back to its rank.
 */
static void test_scrambled_zipf(void)
{
	const uint64_t n = 10000;
	const double s = 0.99;
	uint64_t *rank_of = malloc(n * sizeof(*rank_of));
	uint64_t *cnt = calloc(n + 1, sizeof(*cnt));
	uint64_t hot[10];
	double hsum = 0, chi = 0, pool_e = 0, pool_o = 0;
	uint64_t dof = 0, near = 0;
	struct perm p;
	struct zipf z;
	struct rng r;

	perm_init(&p, n, 42);
	for (uint64_t k = 0; k < n; k++)
		rank_of[perm_map(&p, k)] = k + 1;
	zipf_init(&z, n, s);
	rng_seed(&r, 10);
	for (int i = 0; i < SAMPLES; i++)
		cnt[rank_of[perm_map(&p, zipf_sample(&z, &r) - 1)]]++;
	for (uint64_t k = 1; k <= n; k++)
		hsum += pow((double)k, -s);
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
	CHECK(chi < (double)dof + 6 * sqrt(2.0 * (double)dof),
	      "scrambled: chi-square %.1f with %llu dof", chi, (unsigned long long)dof);
	/* the ten hottest keys: pairwise more than 10 apart, spread widely */
	for (int i = 0; i < 10; i++)
		hot[i] = perm_map(&p, (uint64_t)i);
	for (int i = 0; i < 10; i++)
		for (int j = i + 1; j < 10; j++)
			near += (hot[i] > hot[j] ? hot[i] - hot[j] : hot[j] - hot[i]) <= 10;
	CHECK(near == 0, "%llu pairs of hot keys are neighbours", (unsigned long long)near);
	{
		uint64_t lo = n, hi = 0;

		for (int i = 0; i < 10; i++) {
			lo = hot[i] < lo ? hot[i] : lo;
			hi = hot[i] > hi ? hot[i] : hi;
		}
		CHECK(hi - lo > n / 2, "hot keys within %llu of each other",
		      (unsigned long long)(hi - lo));
	}
	free(rank_of);
	free(cnt);
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
	RUN(test_arrivals);
	RUN(test_perm_bijection);
	RUN(test_scrambled_zipf);
	return tap_failed;
}
