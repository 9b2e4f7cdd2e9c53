/*
 * hist.c - log-linear histogram; see hist.h.
 *
 * Layout (HdrHistogram with unit 1 ns and 3 significant digits): counter
 * index i covers bucket b = (i >> 10) - 1 and sub-bucket s = (i & 1023) + 1024
 * (for i < 2048, b = 0 and s = i); its values are [s << b, (s + 1) << b).
 */
#include "hist.h"

#include <string.h>

void hist_reset(struct hist *h)
{
	memset(h->counts, 0, sizeof(h->counts));
	h->total = 0;
	h->min = INT64_MAX;
	h->max = 0;
}

void hist_init(struct hist *h)
{
	hist_reset(h);
}

static int bucket_of(int64_t v)
{
	/* position of the highest set bit of (v | 2047), minus 10 */
	int top = 64 - __builtin_clzll((uint64_t)v | (HIST_SUB_COUNT - 1));

	return top - (HIST_SUB_BITS + 1);
}

int hist_index(int64_t v)
{
	int b, s;

	if (v < 0)
		v = 0;
	if (v > HIST_HIGHEST)
		v = HIST_HIGHEST;
	b = bucket_of(v);
	s = (int)(v >> b);
	return ((b + 1) << HIST_SUB_BITS) + (s - (int)HIST_SUB_HALF);
}

int64_t hist_index_value(int idx)
{
	int b = (idx >> HIST_SUB_BITS) - 1;
	int s = (idx & (int)(HIST_SUB_HALF - 1)) + (int)HIST_SUB_HALF;

	if (b < 0) {
		s -= (int)HIST_SUB_HALF;
		b = 0;
	}
	return (int64_t)s << b;
}

int64_t hist_lowest_equiv(int64_t v)
{
	return hist_index_value(hist_index(v));
}

int64_t hist_highest_equiv(int64_t v)
{
	int64_t lo;
	int b;

	if (v < 0)
		v = 0;
	if (v > HIST_HIGHEST)
		v = HIST_HIGHEST;
	b = bucket_of(v);
	lo = (v >> b) << b;
	return lo + ((int64_t)1 << b) - 1;
}

void hist_record_n(struct hist *h, int64_t v, uint64_t n)
{
	if (v < 0)
		v = 0;
	h->counts[hist_index(v)] += n;
	h->total += n;
	if (v < h->min)
		h->min = v;
	if (v > h->max)
		h->max = v;
}

void hist_record(struct hist *h, int64_t v)
{
	hist_record_n(h, v, 1);
}

void hist_merge(struct hist *dst, const struct hist *src)
{
	if (!src->total)
		return;
	for (int i = 0; i < HIST_COUNTS; i++)
		dst->counts[i] += src->counts[i];
	dst->total += src->total;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

uint64_t hist_rank(uint64_t total, double p)
{
	double r;
	uint64_t k;

	if (p < 0)
		p = 0;
	if (p > 100)
		p = 100;
	r = p / 100.0 * (double)total;
	k = (uint64_t)r;
	if ((double)k < r)
		k++;
	if (k < 1)
		k = 1;
	if (k > total)
		k = total;
	return k;
}

int64_t hist_percentile(const struct hist *h, double p)
{
	uint64_t want, seen = 0;

	if (!h->total)
		return 0;
	want = hist_rank(h->total, p);
	for (int i = 0; i < HIST_COUNTS; i++) {
		seen += h->counts[i];
		if (seen >= want) {
			int64_t v = hist_highest_equiv(hist_index_value(i));

			return v > h->max ? h->max : v;
		}
	}
	return h->max;
}

double hist_mean(const struct hist *h)
{
	double sum = 0;

	if (!h->total)
		return 0;
	for (int i = 0; i < HIST_COUNTS; i++) {
		if (h->counts[i]) {
			int64_t lo = hist_index_value(i);
			int64_t hi = hist_highest_equiv(lo);

			sum += (double)h->counts[i] * ((double)lo + (double)(hi - lo) / 2);
		}
	}
	return sum / (double)h->total;
}

void hist_write_json(const struct hist *h, FILE *f)
{
	int first = 1;

	fprintf(f, "{\"unit\":\"ns\",\"sub_buckets\":%u,\"highest\":%lld,"
		"\"total\":%llu,\"min\":%lld,\"max\":%lld,\"buckets\":[",
		HIST_SUB_COUNT, (long long)HIST_HIGHEST,
		(unsigned long long)h->total,
		(long long)(h->total ? h->min : 0), (long long)h->max);
	for (int i = 0; i < HIST_COUNTS; i++) {
		if (!h->counts[i])
			continue;
		fprintf(f, "%s[%lld,%llu]", first ? "" : ",",
			(long long)hist_index_value(i),
			(unsigned long long)h->counts[i]);
		first = 0;
	}
	fputs("]}", f);
}
