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
 * done, and the small helpers every part uses.  See loadgen.h for the map
 * of the files.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "loadgen.h"

/* ----------------------------------------------------------------- utils */

int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("loadgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see loadgen --help)\n", stderr);
	exit(EX_USAGE);
}

void die(const char *fmt, ...)
{
	va_list ap;

	fputs("loadgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		die("out of memory");
	return p;
}

void *xcalloc(size_t a, size_t b)
{
	void *p = calloc(a, b);

	if (!p)
		die("out of memory");
	return p;
}

/* Log a line of a reply once per category, with non-printables escaped. */
void log_line_once(atomic_int *flag, const char *what,
			  const char *line, size_t len)
{
	char buf[256];
	size_t o = 0;

	if (atomic_exchange(flag, 1))
		return;
	for (size_t i = 0; i < len && o < sizeof(buf) - 5; i++) {
		unsigned char c = (unsigned char)line[i];

		if (c >= 32 && c < 127 && c != '\\') {
			buf[o++] = (char)c;
		} else {
			snprintf(buf + o, 5, "\\x%02x", c);
			o += 4;
		}
	}
	buf[o] = 0;
	fprintf(stderr, "loadgen: %s: \"%s\"%s (logged once)\n", what, buf,
		len > 60 && o >= sizeof(buf) - 5 ? "..." : "");
}

size_t u64_to_str(char *p, uint64_t v)
{
	char tmp[24];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}

/*
 * Key index k as text: PREFIX and the decimal index.  With --key-size the
 * key is padded with "-xxx..." to a length drawn from k (so a key always
 * has the same length), never shorter than PREFIX and the index.
 */
size_t key_str(char *p, uint64_t k)
{
	size_t n, want;
	uint64_t h;

	memcpy(p, cfg.prefix, cfg.prefixlen);
	n = cfg.prefixlen + u64_to_str(p + cfg.prefixlen, k);
	if (!cfg.key_max)
		return n;
	h = (k + 1) * 0x9e3779b97f4a7c15ULL;
	h ^= h >> 29;
	want = (size_t)cfg.key_min +
	       (size_t)((h >> 16) % (uint64_t)(cfg.key_max - cfg.key_min + 1));
	if (want > n) {
		p[n] = '-';
		memset(p + n + 1, 'x', want - n - 1);
		n = want;
	}
	return n;
}

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
	struct tally *total, *ivl, *prog, *snap;
	int tty, end = END_NORMAL, status = 0;
	int64_t t0, next_ivl, next_prog, last_ivl, last_prog, t_end = 0;
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
	snap = tally_new();

	hist_init(&g_collect_lock);
	g_start = now_ns();
	atomic_store(&g_phase, cfg.warmup ? PH_WARMUP : PH_WAIT);
	threads = xcalloc((size_t)cfg.threads, sizeof(*threads));
	for (int i = 0; i < cfg.threads; i++)
		thread_init(&threads[i], i);
	for (int i = 0; i < cfg.threads; i++)
		if (pthread_create(&threads[i].tid, NULL, thread_main, &threads[i]))
			die("pthread_create failed");
	if (cfg.warmup)
		do_warmup(tty);
	wait_connections();

	t0 = now_ns();
	cpu0 = cpu_seconds();
	atomic_store(&g_t0, t0);
	atomic_store(&g_phase, PH_RUN);
	/*
	 * Wake every thread now: the schedule starts at t0, and a thread left
	 * asleep in epoll_wait (up to its 100 ms timeout) would send its first
	 * requests late, count that delay as latency, and lose it from the
	 * measured throughput.
	 */
	for (int i = 0; i < cfg.threads; i++)
		thread_wake(&threads[i]);
	last_ivl = last_prog = t0;
	next_ivl = cfg.interval > 0 ? t0 + (int64_t)(cfg.interval * 1e9) : INT64_MAX;
	next_prog = tty ? t0 + 1000000000LL : INT64_MAX;
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
		if (now >= next_ivl || now >= next_prog) {
			collect(snap);
			tally_add(total, snap);
			tally_add(ivl, snap);
			tally_add(prog, snap);
			if (now >= next_ivl) {
				if (tty)
					fputs("\r\033[K", stderr);
				print_interval_json((double)(now - t0) / 1e9,
						    (double)(now - last_ivl) / 1e9, ivl);
				if (cfg.hdr_log)
					hdr_log_interval((double)(last_ivl - t0) / 1e9,
							 (double)(now - last_ivl) / 1e9, ivl);
				tally_reset(ivl);
				last_ivl = now;
				while (next_ivl <= now)
					next_ivl += (int64_t)(cfg.interval * 1e9);
			}
			if (now >= next_prog) {
				print_progress((double)(now - t0) / 1e9,
					       (double)(now - last_prog) / 1e9, prog);
				tally_reset(prog);
				last_prog = now;
				while (next_prog <= now)
					next_prog += 1000000000LL;
			}
		}
		sleep_ns(5000000LL);
	}
	for (int i = 0; i < cfg.threads; i++) {
		pthread_join(threads[i].tid, NULL);
		if (threads[i].t_end > t_end)
			t_end = threads[i].t_end;
	}
	cpu = cpu_seconds() - cpu0;
	if (atomic_load(&g_conn_timed_out))
		end = END_CONNECT_TIMEOUT;
	else if (atomic_load(&g_stop))
		end = END_INTERRUPTED;
	for (int i = 0; i < cfg.threads && end == END_NORMAL; i++)
		if (threads[i].timed_out)
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
					    (double)(te - last_ivl) / 1e9, ivl);
		if (cfg.hdr_log)
			hdr_log_interval((double)(last_ivl - t0) / 1e9,
					 (double)(te - last_ivl) / 1e9, ivl);
	}
	if (cfg.hdr_log)
		hdr_log_close();
	secs = (double)(t_end - t0) / 1e9;
	/* with --interval, stdout carries nothing but the JSON lines */
	if (!cfg.quiet)
		print_summary(cfg.interval > 0 ? stderr : stdout, secs, cpu, total,
			      end);
	if (cfg.json)
		write_json(cfg.json, secs, cpu, total, end);
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
	free(prog);
	free(ivl);
	free(total);
	return status;
}
