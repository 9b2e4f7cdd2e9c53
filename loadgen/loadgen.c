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
 * done.  The parts, each with a header of what it offers:
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

int main(int argc, char **argv)
{
	struct sigaction sa = { 0 };
	struct tally *total, *ivl, *prog, *sec, *snap;
	/* what is outstanding at a tick; at the end it is all unfinished */
	struct census cen, none = { 0 };
	int tty, end = END_NORMAL, status = 0, timed_out;
	int64_t t0, next_ivl, next_prog, next_sec, last_ivl, last_prog, last_sec;
	int64_t t_end;
	double cpu0, secs, cpu;

	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	tty = !cfg.quiet && isatty(2);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);
	if (cfg.hdr_log)
		hdr_log_open(cfg.hdr_log);

	total = tally_new();
	ivl = tally_new();
	prog = tally_new();
	sec = tally_new();
	snap = tally_new();

	threads_start();
	if (cfg.warmup)
		do_warmup(tty);
	wait_connections();

	t0 = now_ns();
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
					hdr_log_interval(t0, (double)(last_ivl - t0) / 1e9,
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
	cpu = cpu_seconds() - cpu0;
	if (atomic_load(&g_conn_timed_out))
		end = END_CONNECT_TIMEOUT;
	else if (atomic_load(&g_stop))
		end = END_INTERRUPTED;
	else if (timed_out)
		end = END_TIMEOUT;
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
			hdr_log_interval(t0, (double)(last_ivl - t0) / 1e9,
					 (double)(te - last_ivl) / 1e9, ivl);
	}
	if (cfg.hdr_log)
		hdr_log_close();
	tally_add(sec, snap);
	if (cfg.json && (sec->all.ops || sec->all.errors || sec->all.conn_errors ||
			 sec->all.unfinished)) {
		int64_t te = t_end > last_sec ? t_end : last_sec;

		series_record((double)(te - t0) / 1e9, (double)(te - last_sec) / 1e9,
			      sec, &none);
	}
	secs = (double)(t_end - t0) / 1e9;
	/* with --interval, stdout carries nothing but the JSON lines */
	if (!cfg.quiet)
		print_summary(cfg.interval > 0 ? stderr : stdout, secs, cpu, total,
			      end);
	if (cfg.json)
		write_json(cfg.json, secs, cpu, total, end, &g_collect_lock);
	/* every condition that applies is named; the status is the lowest */
	if (total->all.verify_errors) {
		fprintf(stderr, "loadgen: %llu values failed verification\n",
			(unsigned long long)total->all.verify_errors);
		status = EX_VERIFY;
	}
	if (!total->all.ops) {
		fprintf(stderr, "loadgen: no request completed\n");
		status = status ? status : EX_NONE;
	}
	if (total->all.errors) {
		fprintf(stderr, "loadgen: %llu requests failed\n",
			(unsigned long long)total->all.errors);
		status = status ? status : EX_FAILED;
	}
	if (end == END_TIMEOUT) {
		fprintf(stderr, "loadgen: timed out after %g s with %llu of %llu requests answered (--timeout)\n",
			cfg.timeout,
			(unsigned long long)(total->all.ops + total->all.errors),
			(unsigned long long)cfg.ops);
		status = status ? status : EX_TIMEOUT;
	}
	free(snap);
	free(sec);
	free(prog);
	free(ivl);
	free(total);
	return status;
}
