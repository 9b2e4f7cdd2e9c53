/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * output.h - what loadgen prints from collected tallies: the summary, the
 * progress line, the interval lines, the JSON file and the HdrHistogram
 * log.
 */
#ifndef OUTPUT_H
#define OUTPUT_H

#include <stdint.h>
#include <stdio.h>

#include "hist.h"
#include "tally.h"

/* How the run ended, for the summary and the JSON file. */
enum { END_NORMAL, END_INTERRUPTED, END_CONNECT_TIMEOUT, END_TIMEOUT };

/*
 * One --interval line on stdout: t seconds into the run, secs long, with
 * what was outstanding at its end.
 */
void print_interval_json(double t, double secs, const struct tally *a,
			 const struct census *cen);
/* The progress line on a terminal (stderr). */
void print_progress(double t, double secs, const struct tally *a,
		    const struct census *cen);
/*
 * The run the interval lines belong to, which they then name as "run"
 * (1 the first; 0, the default, when --run-count is 1: no "run").
 */
void output_set_run(int run);
/*
 * --json with --run-count: one run's object (its figures, histograms and
 * series; the series recorded so far are taken), malloc'ed text.
 */
char *json_run_text(int run, double secs, double cpu, const struct tally *a,
		    int end);
/*
 * --json: collect_lock is how long collecting held the threads' locks.
 * With --run-count, a is the aggregate of the nruns runs, whose objects
 * (json_run_text) are runs[], and best and worst are run numbers.
 */
void write_json(const char *path, double secs, double cpu,
		const struct tally *a, int end, const struct hist *collect_lock,
		char **runs, int nruns, int best, int worst);
void print_summary(FILE *f, double secs, double cpu, const struct tally *a,
		   int end);
/* One entry of the --json file's series (see print_interval_json). */
void series_record(double t, double secs, const struct tally *a,
		   const struct census *cen);
/* HdrHistogram interval log (--hdr-log); t0 is the start of the run. */
void hdr_log_open(const char *path);
void hdr_log_interval(int64_t t0, double start, double secs,
		      const struct tally *a);
void hdr_log_close(void);

#endif /* OUTPUT_H */
