/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * hist.h - log-linear latency histogram in the style of HdrHistogram.
 *
 * Values are recorded in nanoseconds.  The value range is split into
 * power-of-two buckets; each bucket holds 1024 linear sub-buckets, so any
 * recorded value is known to within 1/1024 of itself (better than three
 * significant decimal digits) from 1 ns up to HIST_HIGHEST (one hour).
 * Larger values are clamped to HIST_HIGHEST for the counts while the exact
 * maximum is kept separately.  A histogram takes 264 KiB, of which only the
 * pages of counters in use are written: a reset clears the counters from
 * the minimum's to the maximum's.
 *
 * Histograms with the same layout merge by adding their counts, so per
 * thread and per interval histograms can be combined without loss.
 */
#ifndef HIST_H
#define HIST_H

#include <stdint.h>
#include <stdio.h>

#define HIST_SUB_BITS     10                        /* half of the sub-buckets */
#define HIST_SUB_HALF     (1u << HIST_SUB_BITS)     /* 1024 */
#define HIST_SUB_COUNT    (2u << HIST_SUB_BITS)     /* 2048 */
#define HIST_HIGHEST      (INT64_C(3600) * 1000000000) /* one hour in ns */
#define HIST_BUCKETS      32                        /* 2048 << 31 > 3600e9 */
#define HIST_COUNTS       ((int)((HIST_BUCKETS + 1) * HIST_SUB_HALF))

struct hist {
	uint64_t total;
	int64_t min;
	int64_t max;
	uint64_t counts[HIST_COUNTS];
};

/* Make memory that is not yet a histogram an empty one. */
void hist_init(struct hist *h);
/* Empty a histogram (only its counters in use are written). */
void hist_reset(struct hist *h);
/* Record one value (negative values count as 0). */
void hist_record(struct hist *h, int64_t v);
void hist_record_n(struct hist *h, int64_t v, uint64_t n);
/* dst += src */
void hist_merge(struct hist *dst, const struct hist *src);

/* Index of the counter that holds v, and the inverse (lowest value there). */
int hist_index(int64_t v);
int64_t hist_index_value(int idx);
/* The range of values that share v's counter. */
int64_t hist_lowest_equiv(int64_t v);
int64_t hist_highest_equiv(int64_t v);

/*
 * The value at percentile p (0..100): the highest value equivalent to the
 * recorded value of rank ceil(p/100 * total) (at least 1), capped at the
 * exact maximum.  0 when empty.  The rank is computed in integers, with p
 * rounded to the nearest 10^-7 percent (one part in 10^9).
 */
int64_t hist_percentile(const struct hist *h, double p);
/* The rank used by hist_percentile, exposed for tests. */
uint64_t hist_rank(uint64_t total, double p);
/*
 * The mean and the standard deviation (of the population) of the recorded
 * values, each value taken as the middle of its counter's range (exact
 * below 2048 ns, within 1/2048 of itself above).  0 when empty.
 */
double hist_mean(const struct hist *h);
double hist_stddev(const struct hist *h);

/*
 * Write the histogram as a JSON object:
 * {"unit":"ns","sub_buckets":2048,"total":N,"min":..,"max":..,
 *  "buckets":[[lowest_value,count],...]}   (non-empty counters only)
 */
void hist_write_json(const struct hist *h, FILE *f);

/*
 * The histogram in HdrHistogram's compressed V2 encoding, as base64 text
 * (the form of one line of its interval log, "HISTF..."): a malloc'ed,
 * NUL-terminated string, or NULL when out of memory.  The layout is
 * HdrHistogram's for lowest discernible value 1, highest trackable value
 * HIST_HIGHEST and 3 significant digits, so the counters are written as
 * they are.  The deflate stream uses stored (uncompressed) blocks, which
 * every zlib inflater reads, so loadgen needs no zlib.
 */
char *hist_encode_hdr(const struct hist *h);

#endif /* HIST_H */
