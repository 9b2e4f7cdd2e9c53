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
	return tap_failed;
}
