// SPDX-License-Identifier: GPL-2.0-only
/*
 * hist.c - log-linear histogram; see hist.h.
 *
 * Layout (HdrHistogram with unit 1 ns and 3 significant digits): counter
 * index i covers bucket b = (i >> 10) - 1 and sub-bucket s = (i & 1023) + 1024
 * (for i < 2048, b = 0 and s = i); its values are [s << b, (s + 1) << b).
 */
#include "hist.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

/*
 * Every non-zero counter lies between the minimum's and the maximum's, so
 * a reset clears only that range: a histogram of latencies from 10 us to
 * 10 ms writes 80 KiB of its 264, and the pages of the others are never
 * touched (calloc'ed memory stays unallocated).
 */
void hist_reset(struct hist *h)
{
	if (h->total) {
		int lo = hist_index(h->min), hi = hist_index(h->max);

		memset(&h->counts[lo], 0, (size_t)(hi - lo + 1) * sizeof(h->counts[0]));
	}
	h->total = 0;
	h->min = INT64_MAX;
	h->max = 0;
}

void hist_init(struct hist *h)
{
	memset(h->counts, 0, sizeof(h->counts));
	h->total = 0;
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
	for (int i = hist_index(src->min), hi = hist_index(src->max); i <= hi; i++)
		dst->counts[i] += src->counts[i];
	dst->total += src->total;
	if (src->min < dst->min)
		dst->min = src->min;
	if (src->max > dst->max)
		dst->max = src->max;
}

/*
 * ceil(p/100 * total) in floating point is off by one whenever the product
 * is an integer that the double rounds up (99.9/100 * 1000 =
 * 999.0000000000001: p99.9 of 1000 samples was the maximum).  So p is
 * taken as the nearest whole number of parts per 10^9 (0.0000001 percent)
 * and the rank computed in integers.
 */
uint64_t hist_rank(uint64_t total, double p)
{
	unsigned __int128 k;
	uint64_t q;

	if (!(p > 0))
		p = 0;
	if (p > 100)
		p = 100;
	q = (uint64_t)llround(p * 1e7);		/* parts per 10^9 */
	k = ((unsigned __int128)q * total + 999999999) / 1000000000;
	if (k < 1)
		k = 1;
	if (k > total)
		k = total;
	return (uint64_t)k;
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

/* The value a sample of bucket @i stands for: the middle of its range. */
static double bucket_mid(int i)
{
	int64_t lo = hist_index_value(i);

	return (double)lo + (double)(hist_highest_equiv(lo) - lo) / 2;
}

double hist_mean(const struct hist *h)
{
	double sum = 0;

	if (!h->total)
		return 0;
	for (int i = 0; i < HIST_COUNTS; i++) {
		if (h->counts[i])
			sum += (double)h->counts[i] * bucket_mid(i);
	}
	return sum / (double)h->total;
}

double hist_stddev(const struct hist *h)
{
	double mean = hist_mean(h), sum = 0;

	if (!h->total)
		return 0;
	for (int i = 0; i < HIST_COUNTS; i++) {
		if (h->counts[i]) {
			double d = bucket_mid(i) - mean;

			sum += (double)h->counts[i] * d * d;
		}
	}
	return sqrt(sum / (double)h->total);
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

/* ---------------------------------------------- HdrHistogram's encoding */

struct bytes {
	unsigned char *p;
	size_t len, cap;
	int oom;
};

static void put(struct bytes *b, const void *src, size_t n)
{
	if (b->oom)
		return;
	if (b->len + n > b->cap) {
		size_t cap = b->cap ? b->cap : 256;
		unsigned char *p;

		while (cap < b->len + n)
			cap *= 2;
		p = realloc(b->p, cap);
		if (!p) {
			b->oom = 1;
			return;
		}
		b->p = p;
		b->cap = cap;
	}
	memcpy(b->p + b->len, src, n);
	b->len += n;
}

static void put_be(struct bytes *b, uint64_t v, int n)
{
	unsigned char x[8];

	for (int i = 0; i < n; i++)
		x[i] = (unsigned char)(v >> (8 * (n - 1 - i)));
	put(b, x, (size_t)n);
}

/* HdrHistogram's ZigZag LEB128: 7 bits a byte, the 9th byte takes 8. */
static void put_zigzag(struct bytes *b, int64_t v)
{
	uint64_t z = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
	unsigned char x[9];
	int n = 0;

	while (n < 8 && z >> 7) {
		x[n++] = (unsigned char)((z & 0x7f) | 0x80);
		z >>= 7;
	}
	x[n++] = (unsigned char)z;
	put(b, x, (size_t)n);
}

/* V2 encoding: a 40-byte header, then the counters, runs of zeros as -n. */
static void encode_v2(const struct hist *h, struct bytes *b)
{
	int limit = h->total ? hist_index(h->max) + 1 : 0;
	size_t start;
	double one = 1.0;
	uint64_t one_bits;

	memcpy(&one_bits, &one, sizeof(one_bits));
	put_be(b, 0x1c849303 | 0x10, 4);	/* cookie, 8-byte word size */
	put_be(b, 0, 4);			/* payload length, below */
	put_be(b, 0, 4);			/* normalizing index offset */
	put_be(b, 3, 4);			/* significant digits */
	put_be(b, 1, 8);			/* lowest discernible value */
	put_be(b, (uint64_t)HIST_HIGHEST, 8);
	put_be(b, one_bits, 8);			/* integer to double ratio */
	start = b->len;
	for (int i = 0; i < limit;) {
		uint64_t c = h->counts[i++];
		int64_t zeros = 0;

		if (!c) {
			zeros = 1;
			while (i < limit && !h->counts[i]) {
				zeros++;
				i++;
			}
		}
		put_zigzag(b, zeros > 1 ? -zeros : (int64_t)c);
	}
	if (!b->oom) {
		uint64_t n = b->len - start;

		for (int i = 0; i < 4; i++)
			b->p[4 + i] = (unsigned char)(n >> (8 * (3 - i)));
	}
}

/* A zlib stream of stored blocks (RFC 1950/1951) holding src. */
static void put_zlib_stored(struct bytes *b, const unsigned char *src, size_t n)
{
	uint32_t s1 = 1, s2 = 0;
	size_t off = 0;

	put_be(b, 0x7801, 2);	/* deflate, 32 KiB window, no dictionary */
	do {
		size_t k = n - off > 65535 ? 65535 : n - off;
		unsigned char hdr[5] = { off + k == n, (unsigned char)k,
					 (unsigned char)(k >> 8),
					 (unsigned char)~k, (unsigned char)(~k >> 8) };

		put(b, hdr, 5);
		put(b, src + off, k);
		off += k;
	} while (off < n);
	for (size_t i = 0; i < n; i++) {
		s1 = (s1 + src[i]) % 65521;
		s2 = (s2 + s1) % 65521;
	}
	put_be(b, ((uint64_t)s2 << 16) | s1, 4);	/* Adler-32 */
}

char *hist_encode_hdr(const struct hist *h)
{
	static const char b64[] =
		"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
	struct bytes raw = { 0 }, out = { 0 };
	char *text = NULL;

	encode_v2(h, &raw);
	put_be(&out, 0x1c849304 | 0x10, 4);	/* compressed cookie */
	put_be(&out, 0, 4);			/* compressed length, below */
	if (!raw.oom)
		put_zlib_stored(&out, raw.p, raw.len);
	if (!raw.oom && !out.oom) {
		uint64_t n = out.len - 8;

		for (int i = 0; i < 4; i++)
			out.p[4 + i] = (unsigned char)(n >> (8 * (3 - i)));
		text = malloc((out.len + 2) / 3 * 4 + 1);
	}
	if (text) {
		size_t o = 0;

		for (size_t i = 0; i < out.len; i += 3) {
			uint32_t v = (uint32_t)out.p[i] << 16;

			if (i + 1 < out.len)
				v |= (uint32_t)out.p[i + 1] << 8;
			if (i + 2 < out.len)
				v |= out.p[i + 2];
			text[o++] = b64[v >> 18];
			text[o++] = b64[(v >> 12) & 63];
			text[o++] = i + 1 < out.len ? b64[(v >> 6) & 63] : '=';
			text[o++] = i + 2 < out.len ? b64[v & 63] : '=';
		}
		text[o] = 0;
	}
	free(raw.p);
	free(out.p);
	return text;
}
