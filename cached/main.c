// SPDX-License-Identifier: GPL-2.0-only
/*
 * main.c - command line, start-up, the main thread's loop (clock,
 * volatility timer, spare segments, PSI, signals) and clean shutdown.  The
 * listening sockets and accept are listen.c's; the state every part shares
 * is daemon.c's.
 *
 * Flags follow memcached where memcached has them.  A bad flag prints one
 * line and exits 64 (EX_USAGE).  As root the daemon wants -u USER and
 * drops to that user after binding.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "cache.h"
#include "daemon.h"
#include "listen.h"
#include "fetch.h"
#include "index.h"
#include "origin.h"
#include "madvfree.h"
#include "psi.h"
#include "stats.h"
#include "store.h"
#include "thread.h"
#include "volatile_fadvise.h"

#define EX_USAGE 64

static struct event_base *main_base;

static void usage(void)
{
	printf("cached " CACHED_VERSION " - a memcached-compatible cache whose values may be\n"
	       "purged by the kernel when idle (volatile ranges) and are rebuilt on demand\n"
	       "\n"
	       "-p, --port=PORT          TCP port (default 11211)\n"
	       "-l, --listen=ADDR        address to listen on (default 127.0.0.1)\n"
	       "-s, --unix-socket=PATH   UNIX socket path (disables TCP)\n"
	       "-m, --memory-limit=MB    memory for items in megabytes (default 64)\n"
	       "    --memory-max=MB      cache_memlimit may grow the cache up to this (default: physical memory)\n"
	       "-c, --conn-limit=N       max simultaneous connections (default 1024)\n"
	       "-t, --threads=N          worker threads (default 4)\n"
	       "-I, --max-item-size=SIZE item size limit, k/m suffix (default 1m)\n"
	       "-R, --max-reqs-per-event=N  commands of one connection per event (default 20)\n"
	       "-u, --user=USER          user to run as (required when started as root)\n"
	       "-v, --verbose            log errors; -vv logs more\n"
	       "-D CHAR                  key prefix delimiter for stats detail (default :);\n"
	       "                         turns per-prefix stats on\n"
	       "-h, --help               this text\n"
	       "-V, --version            print the version\n"
	       "    --mode=MODE          volatile|pinned|psi|madvfree (default volatile)\n"
	       "    --idle=SECONDS       idle time before data is marked volatile (default 60)\n"
	       "    --origin=SPEC        none|gen:OPTIONS|dir:PATH|memcache:HOST:PORT\n"
	       "    --fetch-threads=N    threads fetching from a gen or dir origin, so that\n"
	       "                         a slow fetch stalls only the client that waits for\n"
	       "                         it (default 4; 0 fetches in the worker thread)\n"
	       "    --verify             checksum every object, check on every read\n"
	       "    --psi-stall=US       psi mode: stall microseconds per window (default 100000)\n"
	       "    --psi-window=US      psi mode: window microseconds (default 1000000)\n"
	       "    --psi-policy=POLICY  psi mode: band|trigger (default band)\n"
	       "    --psi-low=SIZE       band: give memory back below this much free (default MemTotal/8)\n"
	       "    --psi-high=SIZE      band: take it back above this much free (default MemTotal/4)\n"
	       "    --psi-step=PCT       band: percent of (high - low) per poll (default 20)\n"
	       "    --psi-max=PCT        band: most percent of the cache given back (default 20)\n"
	       "    --psi-interval=MS    band: poll interval (default 500)\n"
	       "    --psi-drop=PCT       trigger: percent of the cache dropped per event (default 5)\n"
	       "    --output-limit=BYTES per-connection reply bound (default 64m)\n"
	       "    --idle-timeout=SECS  close a connection that waited this long for a\n"
	       "                         command (memcached's idle_timeout; default 0, never)\n"
	       "    --input-limit=BYTES  input a connection may hold without a complete\n"
	       "                         command, i.e. the longest multi-get line (default 8m)\n");
}

static void die_usage(const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "cached: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
	exit(EX_USAGE);
}

/* Parse a number with an optional k/m/g suffix. */
static int parse_size(const char *s, uint64_t *out)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno)
		return -1;
	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	if (*end)
		return -1;
	*out = v;
	return 0;
}

static long parse_int(const char *opt, const char *s, long min, long max)
{
	char *end;
	long v;

	errno = 0;
	v = strtol(s, &end, 10);
	if (errno || end == s || *end || v < min || v > max)
		die_usage("bad value '%s' for %s (%ld..%ld)", s, opt, min, max);
	return v;
}

enum {
	OPT_MODE = 256, OPT_IDLE, OPT_ORIGIN, OPT_VERIFY, OPT_PSI_STALL,
	OPT_PSI_WINDOW, OPT_PSI_DROP, OPT_OUTPUT_LIMIT, OPT_MEMORY_MAX,
	OPT_PSI_POLICY, OPT_PSI_LOW, OPT_PSI_HIGH, OPT_PSI_STEP, OPT_PSI_MAX,
	OPT_PSI_INTERVAL, OPT_FETCH_THREADS, OPT_INPUT_LIMIT, OPT_IDLE_TIMEOUT
};

static void parse_args(int argc, char **argv)
{
	static const struct option longopts[] = {
		{ "port", required_argument, NULL, 'p' },
		{ "listen", required_argument, NULL, 'l' },
		{ "unix-socket", required_argument, NULL, 's' },
		{ "memory-limit", required_argument, NULL, 'm' },
		{ "memory-max", required_argument, NULL, OPT_MEMORY_MAX },
		{ "conn-limit", required_argument, NULL, 'c' },
		{ "threads", required_argument, NULL, 't' },
		{ "max-item-size", required_argument, NULL, 'I' },
		{ "max-reqs-per-event", required_argument, NULL, 'R' },
		{ "user", required_argument, NULL, 'u' },
		{ "verbose", no_argument, NULL, 'v' },
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ "mode", required_argument, NULL, OPT_MODE },
		{ "idle", required_argument, NULL, OPT_IDLE },
		{ "origin", required_argument, NULL, OPT_ORIGIN },
		{ "fetch-threads", required_argument, NULL, OPT_FETCH_THREADS },
		{ "verify", no_argument, NULL, OPT_VERIFY },
		{ "psi-stall", required_argument, NULL, OPT_PSI_STALL },
		{ "psi-window", required_argument, NULL, OPT_PSI_WINDOW },
		{ "psi-drop", required_argument, NULL, OPT_PSI_DROP },
		{ "psi-policy", required_argument, NULL, OPT_PSI_POLICY },
		{ "psi-low", required_argument, NULL, OPT_PSI_LOW },
		{ "psi-high", required_argument, NULL, OPT_PSI_HIGH },
		{ "psi-step", required_argument, NULL, OPT_PSI_STEP },
		{ "psi-max", required_argument, NULL, OPT_PSI_MAX },
		{ "psi-interval", required_argument, NULL, OPT_PSI_INTERVAL },
		{ "output-limit", required_argument, NULL, OPT_OUTPUT_LIMIT },
		{ "input-limit", required_argument, NULL, OPT_INPUT_LIMIT },
		{ "idle-timeout", required_argument, NULL, OPT_IDLE_TIMEOUT },
		{ NULL, 0, NULL, 0 }
	};
	char err[256];
	uint64_t v;
	int ch;

	settings.port = 11211;
	settings.inter = "127.0.0.1";
	settings.maxbytes = 64ull << 20;
	settings.maxconns = 1024;
	settings.num_threads = 4;
	settings.fetch_threads = 4;
	settings.item_size_max = 1u << 20;
	settings.reqs_per_event = 20;
	settings.mode = MODE_VOLATILE;
	settings.idle_secs = 60;
	settings.origin = ORIGIN_NONE;
	settings.psi_stall_us = 100000;
	settings.psi_window_us = 1000000;
	settings.psi_drop_pct = 5;
	settings.psi_policy = PSI_BAND;
	settings.psi_step_pct = 20;
	settings.psi_max_pct = 20;
	settings.psi_interval_ms = 500;
	settings.out_max = 64ull << 20;
	settings.in_max = 8ull << 20;
	settings.prefix_delim = ':';
	gen_defaults(&settings.gen);

	opterr = 0;
	while ((ch = getopt_long(argc, argv, ":p:l:s:m:c:t:I:R:u:D:vhV", longopts,
				 NULL)) != -1) {
		switch (ch) {
		case 'p':
			settings.port = (int)parse_int("-p", optarg, 0, 65535);
			break;
		case 'l':
			settings.inter = optarg;
			break;
		case 's':
			settings.socketpath = optarg;
			break;
		case 'm':
			settings.maxbytes = (uint64_t)parse_int("-m", optarg, 1, 1 << 20) << 20;
			break;
		case 'c':
			settings.maxconns = (int)parse_int("-c", optarg, 1, 1 << 20);
			break;
		case 't':
			settings.num_threads = (int)parse_int("-t", optarg, 1, 256);
			break;
		case 'I':
			if (parse_size(optarg, &v) < 0 || v < 1024 || v > (1u << 30))
				die_usage("bad -I '%s' (1k..1g)", optarg);
			settings.item_size_max = (uint32_t)v;
			break;
		case 'R':
			settings.reqs_per_event = (int)parse_int("-R", optarg, 1, 1 << 20);
			break;
		case 'u':
			settings.username = optarg;
			break;
		case 'v':
			settings.verbose++;
			break;
		case 'D':
			if (!optarg[0])
				die_usage("-D needs a delimiter character");
			settings.prefix_delim = optarg[0];
			settings.detail = true;
			break;
		case 'h':
			usage();
			exit(0);
		case 'V':
			printf("cached %s\n", CACHED_VERSION);
			exit(0);
		case OPT_MODE:
			if (!strcmp(optarg, "volatile"))
				settings.mode = MODE_VOLATILE;
			else if (!strcmp(optarg, "pinned"))
				settings.mode = MODE_PINNED;
			else if (!strcmp(optarg, "madvfree"))
				settings.mode = MODE_MADVFREE;
			else if (!strcmp(optarg, "psi"))
				settings.mode = MODE_PSI;
			else
				die_usage("bad --mode '%s' (volatile|pinned|psi|madvfree)", optarg);
			break;
		case OPT_MEMORY_MAX:
			settings.memory_max = (uint64_t)parse_int("--memory-max", optarg, 1, 1 << 20) << 20;
			break;
		case OPT_IDLE:
			settings.idle_secs = (int)parse_int("--idle", optarg, 1, 86400 * 30);
			break;
		case OPT_ORIGIN:
			if (origin_parse(optarg, err, sizeof(err)) < 0)
				die_usage("%s", err);
			settings.origin_spec = optarg;
			break;
		case OPT_VERIFY:
			settings.verify = true;
			break;
		case OPT_PSI_STALL:
			settings.psi_stall_us = (uint32_t)parse_int("--psi-stall", optarg, 1, 10000000);
			break;
		case OPT_PSI_WINDOW:
			settings.psi_window_us = (uint32_t)parse_int("--psi-window", optarg, 500000, 10000000);
			break;
		case OPT_PSI_DROP:
			settings.psi_drop_pct = (uint32_t)parse_int("--psi-drop", optarg, 1, 100);
			break;
		case OPT_PSI_POLICY:
			if (!strcmp(optarg, "band"))
				settings.psi_policy = PSI_BAND;
			else if (!strcmp(optarg, "trigger"))
				settings.psi_policy = PSI_TRIGGER;
			else
				die_usage("bad --psi-policy '%s' (band|trigger)", optarg);
			break;
		case OPT_PSI_LOW:
		case OPT_PSI_HIGH:
			if (parse_size(optarg, &v) < 0 || v < (1u << 20))
				die_usage("bad --psi-%s '%s' (a size, at least 1m)",
					  ch == OPT_PSI_LOW ? "low" : "high", optarg);
			*(ch == OPT_PSI_LOW ? &settings.psi_low : &settings.psi_high) = v;
			break;
		case OPT_PSI_STEP:
			settings.psi_step_pct = (uint32_t)parse_int("--psi-step", optarg, 1, 100);
			break;
		case OPT_PSI_MAX:
			settings.psi_max_pct = (uint32_t)parse_int("--psi-max", optarg, 1, 100);
			break;
		case OPT_PSI_INTERVAL:
			settings.psi_interval_ms = (uint32_t)parse_int("--psi-interval", optarg, 10, 60000);
			break;
		case OPT_FETCH_THREADS:
			settings.fetch_threads = (int)parse_int("--fetch-threads", optarg, 0, 256);
			break;
		case OPT_OUTPUT_LIMIT:
			if (parse_size(optarg, &v) < 0 || v < (1u << 20))
				die_usage("bad --output-limit '%s' (at least 1m)", optarg);
			settings.out_max = v;
			break;
		case OPT_IDLE_TIMEOUT:
			settings.idle_timeout = (int)parse_int("--idle-timeout", optarg, 0, 86400 * 365);
			break;
		case OPT_INPUT_LIMIT:
			if (parse_size(optarg, &v) < 0 || v < (1u << 20) || v > (1ull << 30))
				die_usage("bad --input-limit '%s' (1m..1g)", optarg);
			settings.in_max = v;
			break;
		case ':':
			die_usage("option %s needs a value", argv[optind - 1]);
			break;
		default:
			if (optopt)
				die_usage("unknown option -%c (see -h)", optopt);
			die_usage("unknown option %s (see -h)", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s' (see -h)", argv[optind]);
	if (!settings.memory_max)   /* cache_memlimit as in memcached */
		settings.memory_max = (uint64_t)sysconf(_SC_PHYS_PAGES) *
				      (uint64_t)sysconf(_SC_PAGESIZE);
	if (settings.memory_max < settings.maxbytes)
		settings.memory_max = settings.maxbytes;
	if (settings.item_size_max > settings.maxbytes)
		die_usage("-I %u is larger than the cache (-m)", settings.item_size_max);
	if (settings.out_max < 2ull * settings.item_size_max)
		settings.out_max = 2ull * settings.item_size_max;
}

/*
 * The daemon's clock, as memcached keeps it: the wall-clock second at
 * start plus the monotonic seconds since.  A step of the wall clock (NTP,
 * an operator) then neither expires every item nor makes all data idle at
 * once (idle ages and expiry both read the clock seconds).
 */
static struct timespec mono_start;
static uint32_t wall_start;

static uint32_t clock_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return wall_start + (uint32_t)(t.tv_sec - mono_start.tv_sec);
}

/* Once a second: the clock, then the cache's upkeep (cache_tick). */
static void clock_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;

	clock_set(clock_now());
	cache_tick(clock_secs(), (uint32_t)settings.idle_secs);
}

/* Keep a few populated spare segments ready for the workers. */
static void spare_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;

	for (;;) {
		uint32_t s;
		size_t len;
		void *p;

		cache_wrlock();
		s = store_spare_take();
		cache_unlock();
		if (s == SEG_NONE)
			return;
		p = store_slot_ptr(s, &len);
		if (madvise(p, len, MADV_POPULATE_WRITE) < 0)
			memset(p, 0, len);   /* older kernels: touch every page */
		cache_wrlock();
		store_spare_put(s);
		cache_unlock();
	}
}

static struct event *spare_ev;

/* Called under cache_lock from a worker: wake the main thread. */
static void spare_wanted(void)
{
	event_active(spare_ev, EV_READ, 0);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	(void)arg;
	logmsg(1, "signal %d: shutting down", (int)sig);
	event_base_loopbreak(main_base);
}

static void drop_privileges(void)
{
	struct passwd *pw;

	if (getuid() != 0 && geteuid() != 0)
		return;
	if (!settings.username) {
		fprintf(stderr, "cached: can't run as root without the -u switch\n");
		exit(EX_USAGE);
	}
	pw = getpwnam(settings.username);
	if (!pw) {
		fprintf(stderr, "cached: can't find the user %s to switch to\n",
			settings.username);
		exit(EX_USAGE);
	}
	if (pw->pw_uid == 0)
		return;
	if (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 ||
	    setuid(pw->pw_uid) < 0) {
		fprintf(stderr, "cached: failed to assume identity of user %s\n",
			settings.username);
		exit(EX_USAGE);
	}
}

int main(int argc, char **argv)
{
	struct timeval one_sec = { 1, 0 };
	struct event *clock_ev, *sigterm_ev, *sigint_ev;
	bool vol = false;
	int sup;

	/*
	 * Buffers of large values (a connection's read buffer holds one of
	 * up to -I bytes) come from mmap and go back on free.  glibc's default
	 * raises the threshold after such a free, and the per-thread arenas
	 * then keep every freed buffer: with -m 16, 10.5 MB of anonymous
	 * memory after a mixed load, 5.7 MB with this.
	 */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);
	parse_args(argc, argv);
	if ((getuid() == 0 || geteuid() == 0) && !settings.username) {
		fprintf(stderr, "cached: can't run as root without the -u switch\n");
		return EX_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	wall_start = (uint32_t)time(NULL);
	clock_gettime(CLOCK_MONOTONIC, &mono_start);
	process_started = wall_start;
	clock_set(wall_start);
	process_started -= 2;   /* as memcached: absolute times <= start are past */

	settings.mode_eff = settings.mode;
	if (settings.mode == MODE_VOLATILE) {
		sup = vol_supported();
		if (sup == 1) {
			vol = true;
		} else {
			fprintf(stderr, "cached: this kernel has no volatile ranges on "
				"memfd (POSIX_FADV_VOLATILE); running in pinned mode\n");
			settings.mode_eff = MODE_PINNED;
		}
	}
	if (settings.mode == MODE_MADVFREE) {
		if (madv_supported()) {
			vol = true;
			store_use_madvfree();
		} else {
			fprintf(stderr, "cached: this kernel has no MADV_FREE; "
				"running in pinned mode\n");
			settings.mode_eff = MODE_PINNED;
		}
	}
	if (evthread_use_pthreads() < 0 || !(main_base = event_base_new())) {
		fprintf(stderr, "cached: libevent initialisation failed\n");
		return 1;
	}
	listen_raise_fd_limit();
	if (cache_init(settings.maxbytes, vol) < 0) {
		fprintf(stderr, "cached: cannot create the value store: %s\n",
			strerror(errno));
		return 1;
	}
	/* signals first: a SIGTERM right after the port opens stops cleanly */
	sigterm_ev = evsignal_new(main_base, SIGTERM, signal_cb, NULL);
	sigint_ev = evsignal_new(main_base, SIGINT, signal_cb, NULL);
	event_add(sigterm_ev, NULL);
	event_add(sigint_ev, NULL);
	if (listen_open(main_base) < 0)
		return 1;
	/* a PSI trigger needs privileges that -u gives up: arm it first */
	if (settings.mode == MODE_PSI && psi_init(main_base) < 0) {
		fprintf(stderr, "cached: PSI unavailable; running in pinned mode\n");
		settings.mode_eff = MODE_PINNED;
	}
	drop_privileges();
	if (fetch_init(settings.fetch_threads) < 0) {
		fprintf(stderr, "cached: cannot create fetch threads\n");
		return 1;
	}
	if (threads_init(settings.num_threads) < 0) {
		fprintf(stderr, "cached: cannot create worker threads\n");
		return 1;
	}
	threads_start();

	spare_ev = event_new(main_base, -1, EV_PERSIST, spare_cb, NULL);
	event_add(spare_ev, NULL);
	store_spare_wanted = spare_wanted;
	spare_cb(-1, 0, NULL);

	clock_ev = event_new(main_base, -1, EV_PERSIST, clock_cb, NULL);
	event_add(clock_ev, &one_sec);
	logmsg(1, "listening (%s mode, %llu MB, %d threads)",
	       mode_name(settings.mode_eff),
	       (unsigned long long)(settings.maxbytes >> 20), settings.num_threads);

	event_base_dispatch(main_base);

	threads_stop();
	fetch_stop();
	if (settings.socketpath)
		unlink(settings.socketpath);
	logmsg(1, "stopped");
	return 0;
}
