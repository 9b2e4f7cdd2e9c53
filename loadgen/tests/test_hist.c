// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_hist.c - the latency histogram against a sorted reference, and its
 * HdrHistogram encoding decoded again (base64, the stored-block zlib
 * stream with its Adler-32, the V2 header and the ZigZag LEB128 counters).
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

/*
 * The nearest rank of a percentile, computed here in integers only: q is
 * the percentile in parts per 10^9 of the whole (99.9% is 999,000,000), so
 * rank = ceil(q * n / 10^9), at least 1.  hist.c must agree with it for p
 * = q / 10^7.
 */
static uint64_t ref_rank(uint64_t n, uint64_t q)
{
	unsigned __int128 r = ((unsigned __int128)q * n + 999999999) / 1000000000;

	return r < 1 ? 1 : (uint64_t)r;
}

static const uint64_t ref_qs[] = {
	0, 10000000, 100000000, 250000000, 500000000, 750000000, 900000000,
	990000000, 999000000, 999900000, 999990000, 1000000000,
};
#define NQ (sizeof(ref_qs) / sizeof(ref_qs[0]))

static void test_percentiles_vs_sorted(void)
{
	struct hist *h = calloc(1, sizeof(*h));

	for (uint64_t seed = 1; seed <= 3; seed++) {
		fill_random(seed);
		hist_init(h);
		for (int i = 0; i < N; i++)
			hist_record(h, data[i]);
		qsort(data, N, sizeof(data[0]), cmp64);
		CHECK(h->total == N, "total");
		CHECK(h->min == data[0] && h->max == data[N - 1], "min/max");
		for (size_t j = 0; j < NQ; j++) {
			double p = (double)ref_qs[j] / 1e7;
			int64_t ref = data[ref_rank(N, ref_qs[j]) - 1];
			int64_t got = hist_percentile(h, p);
			int64_t want = hist_highest_equiv(ref);

			if (want > h->max)
				want = h->max;
			CHECK(got == want, "p%g: got %lld want %lld (ref %lld)",
			      p, (long long)got, (long long)want, (long long)ref);
			/* three significant digits */
			CHECK(fabs((double)(got - ref)) <= (double)ref / 1000.0,
			      "p%g: %lld vs %lld beyond 0.1%%", p,
			      (long long)got, (long long)ref);
		}
	}
	free(h);
}

/*
 * Mean and standard deviation against the exact ones of the data: equal
 * (to rounding) for values below 2048, which have counters of their own;
 * above, each value is taken as the middle of its counter, within v/2048
 * of v, so the mean is within mean(v)/2048 and the standard deviation
 * within rms(v)/2048 (the norm of the errors bounds the change).
 */
static void check_moments(const struct hist *h, const int64_t *v, int n,
			  int exact)
{
	double mean = 0, var = 0, sq = 0, tol_m, tol_s;

	for (int i = 0; i < n; i++) {
		mean += (double)v[i];
		sq += (double)v[i] * (double)v[i];
	}
	mean /= n;
	for (int i = 0; i < n; i++)
		var += ((double)v[i] - mean) * ((double)v[i] - mean);
	var /= n;
	tol_m = exact ? 1e-9 * (mean + 1) : mean / 2048 + 1e-9 * mean;
	tol_s = exact ? 1e-9 * (sqrt(var) + 1) : sqrt(sq / n) / 2048 * 1.000001;
	CHECK(fabs(hist_mean(h) - mean) <= tol_m, "mean %.6f, exact %.6f",
	      hist_mean(h), mean);
	CHECK(fabs(hist_stddev(h) - sqrt(var)) <= tol_s, "stddev %.6f, exact %.6f",
	      hist_stddev(h), sqrt(var));
}

static void test_mean_stddev(void)
{
	struct hist *h = calloc(1, sizeof(*h));
	uint64_t x = 7;

	hist_init(h);
	CHECK(hist_mean(h) == 0 && hist_stddev(h) == 0, "empty: not 0");
	hist_record(h, 123456789);
	CHECK(hist_stddev(h) == 0, "one value: stddev %g", hist_stddev(h));
	hist_init(h);
	for (int i = 0; i < N; i++) {
		x = x * 6364136223846793005ULL + 1442695040888963407ULL;
		data[i] = (int64_t)(x >> 53);	/* 0..2047 */
		hist_record(h, data[i]);
	}
	check_moments(h, data, N, 1);
	for (uint64_t seed = 1; seed <= 3; seed++) {
		fill_random(seed);
		hist_init(h);
		for (int i = 0; i < N; i++)
			hist_record(h, data[i]);
		check_moments(h, data, N, 0);
	}
	free(h);
}

/*
 * Exact ranks: the values 1..n, each once (below 2048, so every value has
 * its own counter), for every n up to 2047: percentile q must be the value
 * of rank ceil(q * n / 10^9) exactly.  At n = 1000, p99.9 is the 999th
 * value, not the maximum.  Then totals too large for a double's 53 bits of
 * exactness: 999 * 10^12 samples of 100 and 10^12 of 200 have p99.9 = 100.
 */
static void test_rank_exact(void)
{
	struct hist *h = calloc(1, sizeof(*h));

	hist_init(h);
	for (uint64_t n = 1; n < 2048; n++) {
		hist_record(h, (int64_t)n);
		for (size_t j = 0; j < NQ; j++) {
			double p = (double)ref_qs[j] / 1e7;
			uint64_t want = ref_rank(n, ref_qs[j]);
			int64_t got = hist_percentile(h, p);

			CHECK(got == (int64_t)want, "n=%llu p%g: got %lld want %llu",
			      (unsigned long long)n, p, (long long)got,
			      (unsigned long long)want);
		}
	}
	hist_reset(h);
	hist_record_n(h, 100, 999000000000000ULL);
	hist_record_n(h, 200, 1000000000000ULL);
	CHECK(hist_percentile(h, 99.9) == 100, "p99.9 of 10^15: %lld",
	      (long long)hist_percentile(h, 99.9));
	CHECK(hist_percentile(h, 99.90001) == 200, "p99.90001 of 10^15: %lld",
	      (long long)hist_percentile(h, 99.90001));
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
	/* a reset clears every counter (it writes only those in use) */
	hist_reset(m);
	{
		int nz = 0;

		for (int i = 0; i < HIST_COUNTS; i++)
			nz += m->counts[i] != 0;
		CHECK(!nz && !m->total, "%d counters left after a reset", nz);
	}
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

static int b64val(char c)
{
	const char *a = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	const char *p = strchr(a, c);

	return c && p ? (int)(p - a) : -1;
}

static uint64_t be(const unsigned char *p, int n)
{
	uint64_t v = 0;

	for (int i = 0; i < n; i++)
		v = v << 8 | p[i];
	return v;
}

/*
 * Decode text into counts[] (HIST_COUNTS long); returns 0, or -1 with a
 * reason in *why.
 */
static int decode_hdr(const char *text, uint64_t *counts, const char **why)
{
	size_t tl = strlen(text), n = 0, rl = 0, off;
	unsigned char *raw = malloc(tl), *body;
	uint32_t s1 = 1, s2 = 0;
	int idx = 0, ok = -1;

	*why = "base64";
	if (tl % 4)
		goto out;
	for (size_t i = 0; i < tl; i += 4) {
		int v[4];

		for (int j = 0; j < 4; j++)
			v[j] = text[i + j] == '=' ? 0 : b64val(text[i + j]);
		if (v[0] < 0 || v[1] < 0 || v[2] < 0 || v[3] < 0)
			goto out;
		raw[n++] = (unsigned char)(v[0] << 2 | v[1] >> 4);
		if (text[i + 2] != '=')
			raw[n++] = (unsigned char)(v[1] << 4 | v[2] >> 2);
		if (text[i + 3] != '=')
			raw[n++] = (unsigned char)(v[2] << 6 | v[3]);
	}
	*why = "compressed header";
	if (n < 14 || be(raw, 4) != 0x1c849314 || be(raw + 4, 4) != n - 8 ||
	    raw[8] != 0x78 || (raw[8] * 256 + raw[9]) % 31)
		goto out;
	body = malloc(n);
	off = 10;
	for (;;) {	/* stored blocks */
		size_t len;
		int last;

		*why = "stored block";
		if (off + 5 > n)
			goto out_body;
		last = raw[off] & 1;
		len = raw[off + 1] | (size_t)raw[off + 2] << 8;
		if ((raw[off] & 6) || (len ^ 0xffff) != (raw[off + 3] | (size_t)raw[off + 4] << 8) ||
		    off + 5 + len > n)
			goto out_body;
		memcpy(body + rl, raw + off + 5, len);
		rl += len;
		off += 5 + len;
		if (last)
			break;
	}
	for (size_t i = 0; i < rl; i++) {
		s1 = (s1 + body[i]) % 65521;
		s2 = (s2 + s1) % 65521;
	}
	*why = "adler-32";
	if (off + 4 != n || be(raw + off, 4) != ((uint64_t)s2 << 16 | s1))
		goto out_body;
	*why = "V2 header";
	if (rl < 40 || be(body, 4) != 0x1c849313 || be(body + 4, 4) != rl - 40 ||
	    be(body + 8, 4) != 0 || be(body + 12, 4) != 3 || be(body + 16, 8) != 1 ||
	    be(body + 24, 8) != (uint64_t)HIST_HIGHEST ||
	    be(body + 32, 8) != 0x3ff0000000000000ULL)
		goto out_body;
	*why = "counters";
	memset(counts, 0, HIST_COUNTS * sizeof(*counts));
	for (size_t p = 40; p < rl;) {
		uint64_t z = 0;
		int64_t v;
		int shift = 0;

		for (;;) {
			unsigned char b;

			if (p >= rl)
				goto out_body;
			b = body[p++];
			if (shift == 56) {
				z |= (uint64_t)b << 56;
				break;
			}
			z |= (uint64_t)(b & 0x7f) << shift;
			shift += 7;
			if (!(b & 0x80))
				break;
		}
		v = (int64_t)(z >> 1) ^ -(int64_t)(z & 1);
		if (v < 0) {
			idx += (int)-v;
		} else {
			if (idx >= HIST_COUNTS)
				goto out_body;
			counts[idx++] = (uint64_t)v;
		}
	}
	ok = idx <= HIST_COUNTS ? 0 : -1;
out_body:
	free(body);
out:
	free(raw);
	return ok;
}

static void check_roundtrip(const struct hist *h, const char *what)
{
	uint64_t *counts = malloc(HIST_COUNTS * sizeof(*counts));
	char *text = hist_encode_hdr(h);
	const char *why = "";

	CHECK(text && !strncmp(text, "HISTF", 5), "%s: text starts %.8s", what,
	      text ? text : "(null)");
	if (text && !decode_hdr(text, counts, &why)) {
		int diff = 0;

		for (int i = 0; i < HIST_COUNTS; i++)
			diff += counts[i] != h->counts[i];
		CHECK(!diff, "%s: %d counters differ", what, diff);
	} else {
		CHECK(0, "%s: cannot decode (%s)", what, why);
	}
	free(text);
	free(counts);
}

static void test_hdr_encoding(void)
{
	struct hist *h = malloc(sizeof(*h));
	struct rng r;

	hist_init(h);
	check_roundtrip(h, "empty");
	hist_record(h, 0);
	check_roundtrip(h, "one zero");
	hist_record_n(h, 5000, 1ULL << 40);	/* a count needing 6 LEB bytes */
	hist_record(h, HIST_HIGHEST * 3);	/* clamped to the top bucket */
	check_roundtrip(h, "huge count, top bucket");
	fill_random(12);
	hist_reset(h);
	for (int i = 0; i < N; i++)
		hist_record(h, data[i]);
	check_roundtrip(h, "200000 log-uniform values");
	hist_reset(h);
	for (int i = 0; i < HIST_COUNTS; i++)	/* 3 bytes a counter: 2 blocks */
		hist_record_n(h, hist_index_value(i), 100000 + (uint64_t)i);
	{
		char *text = hist_encode_hdr(h);

		CHECK(text && strlen(text) > 65535 * 4 / 3, "every counter set: %zu chars",
		      text ? strlen(text) : 0);
		free(text);
	}
	check_roundtrip(h, "every counter set");
	rng_seed(&r, 13);
	for (int k = 0; k < 50; k++) {
		hist_reset(h);
		for (int i = 0, m = (int)rng_below(&r, 3000); i < m; i++)
			hist_record_n(h, (int64_t)rng_below(&r, 1ULL << rng_below(&r, 36)),
				      1 + rng_below(&r, 1000));
		check_roundtrip(h, "random");
	}
	free(h);
}

/*
 * A 100 s latency (a published report already had a p99 of 38.7 s) is
 * counted in a counter of its own, to three significant digits, and comes
 * back as such from the percentiles, the JSON buckets and the HdrHistogram
 * encoding; so does a value just under an hour.
 */
static void test_long_values(void)
{
	static const int64_t vs[] = { INT64_C(100000000000), INT64_C(3599000000000) };
	struct hist *h = calloc(1, sizeof(*h));
	char *buf = NULL;
	size_t len = 0;

	CHECK(HIST_HIGHEST >= INT64_C(3600000000000), "highest %lld ns",
	      (long long)HIST_HIGHEST);
	for (size_t i = 0; i < sizeof(vs) / sizeof(vs[0]); i++) {
		int64_t v = vs[i], lo, hi, got;
		char want[64];
		FILE *f;

		hist_init(h);
		hist_record_n(h, 1000, 99);
		hist_record(h, v);
		lo = hist_lowest_equiv(v);
		hi = hist_highest_equiv(v);
		CHECK(hist_index(v) < HIST_COUNTS && hist_index(v) > hist_index(v / 2),
		      "%lld: index %d of %d", (long long)v, hist_index(v), HIST_COUNTS);
		CHECK(lo <= v && v <= hi && (double)(hi - lo) <= (double)v / 1024,
		      "%lld: counter [%lld, %lld]", (long long)v, (long long)lo,
		      (long long)hi);
		got = hist_percentile(h, 99.5);
		CHECK(got == v, "%lld: p99.5 %lld", (long long)v, (long long)got);
		/* without the exact maximum, the counter alone still knows it */
		h->max = INT64_MAX;
		got = hist_percentile(h, 99.5);
		CHECK(got == hi, "%lld: p99.5 from the counter %lld", (long long)v,
		      (long long)got);
		h->max = v;
		f = open_memstream(&buf, &len);
		hist_write_json(h, f);
		fclose(f);
		snprintf(want, sizeof(want), "[1000,99],[%lld,1]]", (long long)lo);
		CHECK(strstr(buf, want) != NULL, "%lld: json %s", (long long)v, buf);
		free(buf);
		buf = NULL;
		check_roundtrip(h, "a long value");
	}
	free(h);
}

int main(int argc, char **argv)
{
	TAP_INIT(argc, argv);
	RUN(test_index_roundtrip);
	RUN(test_percentiles_vs_sorted);
	RUN(test_rank_exact);
	RUN(test_mean_stddev);
	RUN(test_merge);
	RUN(test_edges);
	RUN(test_json);
	RUN(test_long_values);
	RUN(test_hdr_encoding);
	return tap_failed;
}
