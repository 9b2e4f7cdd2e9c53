/*
 * test_hist.c - the latency histogram against a sorted reference.
 */
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "hist.h"
#include "zipf.h"
#include "tap.h"

#define N 200000

static int64_t data[N];

static int cmp64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

/* log-uniform values from 1 us to 60 s, in ns, plus some small ones */
static void fill_random(uint64_t seed)
{
	struct rng r;

	rng_seed(&r, seed);
	for (int i = 0; i < N; i++) {
		if (i % 50 == 0)
			data[i] = (int64_t)rng_below(&r, 3000);
		else
			data[i] = (int64_t)exp(log(1e3) + rng_double(&r) *
					      (log(60e9) - log(1e3)));
	}
}

static void test_index_roundtrip(void)
{
	struct rng r;

	rng_seed(&r, 7);
	for (int64_t v = 0; v < 5000; v++) {
		int64_t want = v < 2048 ? v : v < 4096 ? (v & ~1) : (v & ~3);

		CHECK(hist_lowest_equiv(v) == want, "lowest_equiv(%lld)", (long long)v);
	}
	for (int i = 0; i < 1000000; i++) {
		int64_t v = (int64_t)rng_below(&r, (uint64_t)HIST_HIGHEST) + 1;
		int64_t lo = hist_lowest_equiv(v), hi = hist_highest_equiv(v);

		if (lo > v || hi < v || (double)(hi - lo + 1) > (double)lo / 1024.0 + 1) {
			tap_fail("v=%lld lo=%lld hi=%lld", (long long)v,
				 (long long)lo, (long long)hi);
			break;
		}
		if (hist_index_value(hist_index(v)) != lo) {
			tap_fail("index_value(index(%lld))", (long long)v);
			break;
		}
	}
	CHECK(hist_index(HIST_HIGHEST) < HIST_COUNTS, "highest fits");
}

static void test_percentiles_vs_sorted(void)
{
	static const double ps[] = { 0, 1, 10, 25, 50, 75, 90, 99, 99.9, 99.99, 100 };
	struct hist *h = calloc(1, sizeof(*h));

	for (uint64_t seed = 1; seed <= 3; seed++) {
		fill_random(seed);
		hist_init(h);
		for (int i = 0; i < N; i++)
			hist_record(h, data[i]);
		qsort(data, N, sizeof(data[0]), cmp64);
		CHECK(h->total == N, "total");
		CHECK(h->min == data[0] && h->max == data[N - 1], "min/max");
		for (size_t j = 0; j < sizeof(ps) / sizeof(ps[0]); j++) {
			int64_t ref = data[hist_rank(N, ps[j]) - 1];
			int64_t got = hist_percentile(h, ps[j]);
			int64_t want = hist_highest_equiv(ref);

			if (want > h->max)
				want = h->max;
			CHECK(got == want, "p%g: got %lld want %lld (ref %lld)",
			      ps[j], (long long)got, (long long)want, (long long)ref);
			/* three significant digits */
			CHECK(fabs((double)(got - ref)) <= (double)ref / 1000.0,
			      "p%g: %lld vs %lld beyond 0.1%%", ps[j],
			      (long long)got, (long long)ref);
		}
	}
	free(h);
}

static void test_merge(void)
{
	struct hist *all = calloc(1, sizeof(*all));
	struct hist *parts = calloc(4, sizeof(*parts));
	struct hist *m = calloc(1, sizeof(*m));

	fill_random(42);
	hist_init(all);
	hist_init(m);
	for (int k = 0; k < 4; k++)
		hist_init(&parts[k]);
	for (int i = 0; i < N; i++) {
		hist_record(all, data[i]);
		hist_record(&parts[i % 4], data[i]);
	}
	for (int k = 0; k < 4; k++)
		hist_merge(m, &parts[k]);
	CHECK(m->total == all->total && m->min == all->min && m->max == all->max,
	      "totals after merge");
	CHECK(!memcmp(m->counts, all->counts, sizeof(m->counts)), "counts after merge");
	for (double p = 0; p <= 100; p += 0.5)
		CHECK(hist_percentile(m, p) == hist_percentile(all, p), "p%g after merge", p);
	/* merging an empty histogram changes nothing */
	hist_reset(&parts[0]);
	hist_merge(m, &parts[0]);
	CHECK(m->min == all->min && m->total == all->total, "empty merge");
	free(all);
	free(parts);
	free(m);
}

static void test_edges(void)
{
	struct hist *h = calloc(1, sizeof(*h));

	hist_init(h);
	CHECK(hist_percentile(h, 99) == 0, "empty percentile");
	hist_record(h, -5);
	CHECK(h->min == 0, "negative clamps to 0");
	hist_record(h, HIST_HIGHEST * 10);
	CHECK(h->max == HIST_HIGHEST * 10, "exact max beyond range");
	CHECK(hist_percentile(h, 100) >= HIST_HIGHEST - HIST_HIGHEST / 1000,
	      "top percentile near the top of the range");
	hist_reset(h);
	hist_record_n(h, 1000, 3);
	hist_record(h, 1000000);
	CHECK(hist_percentile(h, 50) == 1000 && hist_percentile(h, 75) == 1000,
	      "exact small values");
	CHECK(hist_percentile(h, 76) == 1000000, "max");
	free(h);
}

static void test_json(void)
{
	struct hist *h = calloc(1, sizeof(*h));
	char buf[4096];
	FILE *f = tmpfile();
	size_t n;

	hist_init(h);
	hist_record_n(h, 1500, 2);
	hist_record(h, 123456789);
	hist_write_json(h, f);
	rewind(f);
	n = fread(buf, 1, sizeof(buf) - 1, f);
	buf[n] = 0;
	fclose(f);
	CHECK(strstr(buf, "\"total\":3") != NULL, "total in json: %s", buf);
	CHECK(strstr(buf, "\"buckets\":[[1500,2],[123404288,1]]") != NULL,
	      "buckets in json: %s", buf);
	free(h);
}

int main(int argc, char **argv)
{
	TAP_INIT(argc, argv);
	RUN(test_index_roundtrip);
	RUN(test_percentiles_vs_sorted);
	RUN(test_merge);
	RUN(test_edges);
	RUN(test_json);
	return tap_failed;
}
