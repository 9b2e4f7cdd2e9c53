// SPDX-License-Identifier: GPL-2.0-only
/*
 * loadgen - load generator for the memcached text protocol.
 *
 * Design (after wrk2): every thread runs its own epoll loop over its own
 * non-blocking connections.  In closed loop a connection keeps --pipeline
 * requests in flight and latency runs from the send.  In open loop
 * (--rate) every connection follows a fixed schedule of intended send
 * times; latency runs from the intended time, so a stalled server shows up
 * in the tail instead of silently lowering the offered load.
 *
 * Values are the "gen" formula of ../cached/gen.c: sets store them and every
 * get hit can be checked byte for byte (--verify).
 *
 * This file holds main(), which starts the threads, waits out the warm-up
 * and the connections, then ticks the interval lines until the threads are
 * done; with --run-count it does so once per run (the warm-up only before
 * the first) and then reports the best and worst runs and their aggregate.  The parts, each with a header of what it offers:
 *
 *   options.c  the command line, into cfg (options.h)
 *   run.c      the load threads (one epoll loop each) and the main
 *              thread's view of them (run.h); a thread's state is thread.h
 *   conn.c     one connection's requests and replies (conn.h)
 *   tally.c    counters and histograms, added up (tally.h)
 *   output.c   the summary, the interval lines, the JSON file (output.h)
 *   util.c     the clock, exits, allocation (util.h)
 *   hist.c, zipf.c, heap.c, proto.c   the histogram, the random choices,
 *              the timer heap and the reply parser, which the unit tests
 *              build alone
 */
#define _GNU_SOURCE
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "options.h"
#include "output.h"
#include "run.h"
#include "tally.h"
#include "util.h"

/* ------------------------------------------------------------------- main */

static void on_signal(int sig)
{
	(void)sig;
	if (atomic_exchange(&g_stop, 1))
		_exit(130);
}

/* What one measured run gave, beside its tally. */
struct run_result {
	double secs, cpu;
	int end;		/* END_* */
};

/*
 * One measured run, from the moment the connections are up until the
 * threads are done: ticks the interval lines, the progress line and the
 * --json series, then collects everything into *total (emptied first).
 * *base is the start of the first run (this one's when it is 0), from
 * which the --hdr-log intervals count, so that the log of several runs is
 * one time line.
 */
static struct run_result measure(struct tally *total, int64_t *base, int tty)
{
	struct run_result res = { 0, 0, END_NORMAL };
	struct tally *ivl = tally_new(), *prog = tally_new();
	struct tally *sec = tally_new(), *snap = tally_new();
	/* what is outstanding at a tick; at the end it is all unfinished */
	struct census cen, none = { 0 };
	int timed_out;
	int64_t t0, next_ivl, next_prog, next_sec, last_ivl, last_prog, last_sec;
	int64_t t_end;
	double cpu0;

	tally_reset(total);
	t0 = now_ns();
	if (!*base)
		*base = t0;
	cpu0 = cpu_seconds();
	run_begin(t0);
	last_ivl = last_prog = last_sec = t0;
	next_ivl = cfg.interval > 0 ? t0 + (int64_t)(cfg.interval * 1e9) : INT64_MAX;
	next_prog = tty ? t0 + 1000000000LL : INT64_MAX;
	/* the --json file's series: one entry per second */
	next_sec = cfg.json ? t0 + 1000000000LL : INT64_MAX;
	while (!all_done()) {
		int64_t now = now_ns();

		check_connect_timeout(now);
		/*
		 * Past the nominal end the threads are finishing their last
		 * batch; the final line below covers that, so no tick here
		 * (it could otherwise repeat the last line's time).
		 */
		if (cfg.run_limit > 0 && now >= t0 + (int64_t)(cfg.run_limit * 1e9)) {
			sleep_ns(1000000LL);
			continue;
		}
		if (now >= next_ivl || now >= next_prog || now >= next_sec) {
			census(&cen);
			collect(snap);
			tally_add(total, snap);
			tally_add(ivl, snap);
			tally_add(prog, snap);
			tally_add(sec, snap);
			if (now >= next_ivl) {
				if (tty)
					fputs("\r\033[K", stderr);
				print_interval_json((double)(now - t0) / 1e9,
						    (double)(now - last_ivl) / 1e9, ivl,
						    &cen);
				if (cfg.hdr_log)
					hdr_log_interval(*base, (double)(last_ivl - *base) / 1e9,
							 (double)(now - last_ivl) / 1e9, ivl);
				tally_reset(ivl);
				last_ivl = now;
				while (next_ivl <= now)
					next_ivl += (int64_t)(cfg.interval * 1e9);
			}
			if (now >= next_prog) {
				print_progress((double)(now - t0) / 1e9,
					       (double)(now - last_prog) / 1e9, prog,
					       &cen);
				tally_reset(prog);
				last_prog = now;
				while (next_prog <= now)
					next_prog += 1000000000LL;
			}
			if (now >= next_sec) {
				series_record((double)(now - t0) / 1e9,
					      (double)(now - last_sec) / 1e9, sec, &cen);
				tally_reset(sec);
				last_sec = now;
				while (next_sec <= now)
					next_sec += 1000000000LL;
			}
		}
		sleep_ns(5000000LL);
	}
	t_end = threads_join(&timed_out);
	res.cpu = cpu_seconds() - cpu0;
	if (atomic_load(&g_conn_timed_out))
		res.end = END_CONNECT_TIMEOUT;
	else if (atomic_load(&g_stop))
		res.end = END_INTERRUPTED;
	else if (timed_out)
		res.end = END_TIMEOUT;
	if (atomic_load(&g_stop) || t_end < t0)
		t_end = now_ns();
	collect(snap);
	tally_add(total, snap);
	if (tty)
		fputs("\r\033[K", stderr);
	tally_add(ivl, snap);
	/* the last, partial interval (never earlier than the one before) */
	if (ivl->all.ops || ivl->all.errors || ivl->all.conn_errors ||
	    ivl->all.unfinished || (cfg.hdr_log && last_ivl == t0)) {
		int64_t te = t_end > last_ivl ? t_end : last_ivl;

		if (cfg.interval > 0)
			print_interval_json((double)(te - t0) / 1e9,
					    (double)(te - last_ivl) / 1e9, ivl,
					    &none);
		if (cfg.hdr_log)
			hdr_log_interval(*base, (double)(last_ivl - *base) / 1e9,
					 (double)(te - last_ivl) / 1e9, ivl);
	}
	tally_add(sec, snap);
	if (cfg.json && (sec->all.ops || sec->all.errors || sec->all.conn_errors ||
			 sec->all.unfinished)) {
		int64_t te = t_end > last_sec ? t_end : last_sec;

		series_record((double)(te - t0) / 1e9, (double)(te - last_sec) / 1e9,
			      sec, &none);
	}
	res.secs = (double)(t_end - t0) / 1e9;
	free(snap);
	free(sec);
	free(prog);
	free(ivl);
	return res;
}

static double ops_per_s(const struct tally *a, const struct run_result *r)
{
	return r->secs > 0 ? (double)a->all.ops / r->secs : 0;
}

/* *dst becomes a copy of the run in *src (counters and histograms) */
static void keep_run(struct tally *dst, struct run_result *dres,
		     const struct tally *src, const struct run_result *sres)
{
	tally_reset(dst);
	tally_add(dst, src);
	*dres = *sres;
}

int main(int argc, char **argv)
{
	struct sigaction sa = { 0 };
	struct tally *run, *agg, *best, *worst;
	struct run_result res, agg_res = { 0, 0, END_NORMAL };
	struct run_result best_res = agg_res, worst_res = agg_res;
	int tty, status = 0, runs = 0, best_no = 0, worst_no = 0;
	/* --json with --run-count: each run's object, rendered as it ends */
	char **run_json = NULL;
	int64_t base = 0;
	/* with --interval, stdout carries nothing but the JSON lines */
	FILE *out;

	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	out = cfg.interval > 0 ? stderr : stdout;
	tty = !cfg.quiet && isatty(2);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (cfg.hdr_log)
		hdr_log_open(cfg.hdr_log);

	run = tally_new();
	agg = tally_new();
	best = tally_new();
	worst = tally_new();
	if (cfg.run_count > 1)
		run_json = xcalloc((size_t)cfg.run_count, sizeof(*run_json));

	/*
	 * Every run has threads and connections of its own, started afresh;
	 * the warm-up (sets that fill the server) happens once, before the
	 * first.
	 */
	for (int r = 0; r < cfg.run_count; r++) {
		if (r)
			threads_free();
		threads_start(r);
		if (!r && cfg.warmup)
			do_warmup(tty);
		wait_connections();
		output_set_run(cfg.run_count > 1 ? r + 1 : 0);
		res = measure(run, &base, tty);
		runs++;
		tally_add(agg, run);
		agg_res.secs += res.secs;
		agg_res.cpu += res.cpu;
		if (res.end != END_NORMAL)
			agg_res.end = res.end;
		if (cfg.run_count > 1 && !cfg.quiet) {
			fprintf(out, "run %d of %d\n", r + 1, cfg.run_count);
			print_summary(out, res.secs, res.cpu, run, res.end);
		}
		if (run_json)
			run_json[r] = json_run_text(r + 1, res.secs, res.cpu, run, res.end);
		if (r == 0 || ops_per_s(run, &res) > ops_per_s(best, &best_res)) {
			keep_run(best, &best_res, run, &res);
			best_no = r + 1;
		}
		if (r == 0 || ops_per_s(run, &res) < ops_per_s(worst, &worst_res)) {
			keep_run(worst, &worst_res, run, &res);
			worst_no = r + 1;
		}
		/* Ctrl-C, or no server: no further run */
		if (res.end == END_INTERRUPTED || res.end == END_CONNECT_TIMEOUT)
			break;
	}
	if (cfg.hdr_log)
		hdr_log_close();
	if (cfg.run_count == 1) {
		if (!cfg.quiet)
			print_summary(out, agg_res.secs, agg_res.cpu, agg, agg_res.end);
		if (cfg.json)
			write_json(cfg.json, agg_res.secs, agg_res.cpu, agg,
				   agg_res.end, &g_collect_lock, NULL, 0, 0, 0);
	} else {
		if (!cfg.quiet) {
			fprintf(out, "BEST RUN (run %d of %d, the most ops/s)\n",
				best_no, runs);
			print_summary(out, best_res.secs, best_res.cpu, best, best_res.end);
			fprintf(out, "WORST RUN (run %d of %d, the fewest ops/s)\n",
				worst_no, runs);
			print_summary(out, worst_res.secs, worst_res.cpu, worst,
				      worst_res.end);
			fprintf(out, "AGGREGATED AVERAGE RESULTS (%d runs: counts summed, "
				"rates over the summed durations, latency of the merged "
				"histograms)\n", runs);
			print_summary(out, agg_res.secs, agg_res.cpu, agg, agg_res.end);
		}
		if (cfg.json)
			write_json(cfg.json, agg_res.secs, agg_res.cpu, agg,
				   agg_res.end, &g_collect_lock, run_json, runs,
				   best_no, worst_no);
	}
	/* every condition that applies is named; the status is the lowest */
	if (agg->all.verify_errors) {
		fprintf(stderr, "loadgen: %llu values failed verification\n",
			(unsigned long long)agg->all.verify_errors);
		status = EX_VERIFY;
	}
	if (!agg->all.ops) {
		fprintf(stderr, "loadgen: no request completed\n");
		status = status ? status : EX_NONE;
	}
	if (agg->all.errors) {
		fprintf(stderr, "loadgen: %llu requests failed\n",
			(unsigned long long)agg->all.errors);
		status = status ? status : EX_FAILED;
	}
	if (agg_res.end == END_TIMEOUT) {
		fprintf(stderr, "loadgen: timed out after %g s with %llu of %llu requests answered (--timeout)\n",
			cfg.timeout,
			(unsigned long long)(agg->all.ops + agg->all.errors),
			(unsigned long long)(cfg.ops * (uint64_t)runs));
		status = status ? status : EX_TIMEOUT;
	}
	for (int r = 0; run_json && r < runs; r++)
		free(run_json[r]);
	free(run_json);
	free(worst);
	free(best);
	free(agg);
	free(run);
	return status;
}
