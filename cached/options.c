// SPDX-License-Identifier: GPL-2.0-only
/*
 * options.c - the command line: memcached 1.6.18's flags, its -o extended
 * options, cached's own long options, and --config FILE, a file in the
 * format of Debian's /etc/memcached.conf.
 *
 * Every flag of `memcached -h` is taken with memcached's meaning where
 * cached has the feature, accepted where it asks for nothing cached would
 * do otherwise (tuning of memcached's slab allocator, LRU, hash and
 * logger, which cached does not have), or refused: one line that names
 * the option and why, exit 64 (EX_USAGE), where it asks for a feature
 * cached does not have (UDP, SASL, TLS, the binary protocol, extstore...).
 * An operator's command line or config file then either runs with the
 * meaning it has for memcached or does not run.
 *
 * A config file is read as Debian's start-memcached reads it: one or more
 * options a line, `#` starts a comment, blank lines are skipped, and a
 * line that does not start with `-` is a directive (`logfile PATH`).  Its
 * options take the place of --config on the command line, so that later
 * options override them.
 */
#define _GNU_SOURCE
#include "options.h"

#include <errno.h>
#include <getopt.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "daemon.h"
#include "origin.h"

struct run_options run_opts;

/* The words being parsed, and for each where it came from (a config
 * file's "FILE:LINE", NULL on the command line), for the error line. */
static char **words;
static const char **wheres;
static int nwords;

static void usage(void)
{
	/*
	 * memcached's test library reads -h for what a server supports: it
	 * must name the unix socket and not the SASL or TLS options.
	 */
	printf("cached " CACHED_VERSION " - a memcached-compatible cache whose values may be\n"
	       "purged by the kernel when idle (volatile ranges) and are rebuilt on demand\n"
	       "\n"
	       "-p, --port=PORT          TCP port (default 11211)\n"
	       "-l, --listen=ADDR        addresses to listen on: ADDR[,ADDR...], each\n"
	       "                         HOST, HOST:PORT or [IPV6]:PORT; * for all\n"
	       "                         (default 127.0.0.1)\n"
	       "-s, --unix-socket=PATH   UNIX socket path (disables TCP)\n"
	       "-a, --unix-mask=MASK     the UNIX socket's mode, octal (default 700)\n"
	       "-b, --listen-backlog=N   the listen queue (default 1024)\n"
	       "-m, --memory-limit=MB    memory for items in megabytes (default 64)\n"
	       "    --memory-max=MB      cache_memlimit may grow the cache up to this (default: physical memory)\n"
	       "-c, --conn-limit=N       max simultaneous connections (default 1024)\n"
	       "-t, --threads=N          worker threads (default 4)\n"
	       "-I, --max-item-size=SIZE item size limit, k/m suffix (default 1m)\n"
	       "-R, --max-reqs-per-event=N  commands of one connection per event (default 20)\n"
	       "-u, --user=USER          user to run as (required when started as root)\n"
	       "-d, --daemon             run in the background; returns once serving\n"
	       "-P, --pidfile=FILE       write the daemon's pid to FILE\n"
	       "    --logfile=FILE       append stdout and stderr to FILE; SIGHUP reopens it\n"
	       "    --config=FILE        read options from FILE (/etc/memcached.conf format)\n"
	       "-k, --lock-memory        lock the daemon's memory (mlockall; pinned mode)\n"
	       "-r, --enable-coredumps   raise the core file limit\n"
	       "-A, --enable-shutdown    allow the shutdown command\n"
	       "-F, --disable-flush-all  refuse flush_all\n"
	       "-X, --disable-dumping    refuse stats cachedump and lru_crawler metadump\n"
	       "-v, --verbose            log errors; -vv logs more\n"
	       "-D CHAR                  key prefix delimiter for stats detail (default :);\n"
	       "                         turns per-prefix stats on\n"
	       "-o, --extended=OPTS      memcached's extended options that apply (hashpower,\n"
	       "                         idle_timeout, ...) and cached's long options,\n"
	       "                         NAME[=VALUE],... (idle=30,mode=pinned)\n"
	       "-h, --help               this text\n"
	       "-V, --version            print the version\n"
	       "-i, --license            print the license\n"
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
	       "                         command, i.e. the longest multi-get line (default 8m)\n"
	       "\n"
	       "Also taken as memcached takes them: -U 0, -B ascii|auto, -f, -n, -L, -W, -N\n"
	       "(the tuning of memcached's slabs, large pages, watchers and NAPI, which\n"
	       "cached does not have: checked and accepted).  Refused: a UDP port, the\n"
	       "binary protocol and its authentication, TLS, -Y, -e, -M and -C.\n");
}

static void die_usage(const char *fmt, ...)
	__attribute__((format(printf, 1, 2), noreturn));

static void die_usage(const char *fmt, ...)
{
	int at = optind > 0 ? optind - 1 : 0;
	va_list ap;

	va_start(ap, fmt);
	fprintf(stderr, "cached: ");
	/* the word just parsed, or the value after it */
	if (wheres && at < nwords && wheres[at])
		fprintf(stderr, "%s: ", wheres[at]);
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

static double parse_float(const char *opt, const char *s)
{
	char *end;
	double v;

	errno = 0;
	v = strtod(s, &end);
	if (errno || end == s || *end)
		die_usage("bad value '%s' for %s (a number)", s, opt);
	return v;
}

/* An absolute path: -d changes to / after start-up. */
static char *absolute(const char *path)
{
	char cwd[4096], *p;

	if (path[0] == '/' || !getcwd(cwd, sizeof(cwd)))
		return strdup(path);
	if (asprintf(&p, "%s/%s", cwd, path) < 0)
		return strdup(path);
	return p;
}

enum {
	OPT_MODE = 256, OPT_IDLE, OPT_ORIGIN, OPT_VERIFY, OPT_PSI_STALL,
	OPT_PSI_WINDOW, OPT_PSI_DROP, OPT_OUTPUT_LIMIT, OPT_MEMORY_MAX,
	OPT_PSI_POLICY, OPT_PSI_LOW, OPT_PSI_HIGH, OPT_PSI_STEP, OPT_PSI_MAX,
	OPT_PSI_INTERVAL, OPT_FETCH_THREADS, OPT_INPUT_LIMIT, OPT_IDLE_TIMEOUT,
	OPT_CONFIG, OPT_LOGFILE
};

/* memcached's long names, then cached's own (val >= 256: -o takes these). */
static const struct option longopts[] = {
	{ "port", required_argument, NULL, 'p' },
	{ "udp-port", required_argument, NULL, 'U' },
	{ "unix-socket", required_argument, NULL, 's' },
	{ "unix-mask", required_argument, NULL, 'a' },
	{ "enable-shutdown", no_argument, NULL, 'A' },
	{ "enable-ssl", no_argument, NULL, 'Z' },
	{ "listen", required_argument, NULL, 'l' },
	{ "daemon", no_argument, NULL, 'd' },
	{ "enable-coredumps", no_argument, NULL, 'r' },
	{ "user", required_argument, NULL, 'u' },
	{ "memory-limit", required_argument, NULL, 'm' },
	{ "disable-evictions", no_argument, NULL, 'M' },
	{ "conn-limit", required_argument, NULL, 'c' },
	{ "lock-memory", no_argument, NULL, 'k' },
	{ "verbose", optional_argument, NULL, 'v' },
	{ "help", no_argument, NULL, 'h' },
	{ "license", no_argument, NULL, 'i' },
	{ "version", no_argument, NULL, 'V' },
	{ "pidfile", required_argument, NULL, 'P' },
	{ "slab-growth-factor", required_argument, NULL, 'f' },
	{ "slab-min-size", required_argument, NULL, 'n' },
	{ "enable-largepages", no_argument, NULL, 'L' },
	{ "threads", required_argument, NULL, 't' },
	{ "max-reqs-per-event", required_argument, NULL, 'R' },
	{ "disable-cas", no_argument, NULL, 'C' },
	{ "listen-backlog", required_argument, NULL, 'b' },
	{ "protocol", required_argument, NULL, 'B' },
	{ "max-item-size", required_argument, NULL, 'I' },
	{ "enable-sasl", no_argument, NULL, 'S' },
	{ "disable-flush-all", no_argument, NULL, 'F' },
	{ "disable-dumping", no_argument, NULL, 'X' },
	{ "disable-watch", no_argument, NULL, 'W' },
	{ "auth-file", required_argument, NULL, 'Y' },
	{ "memory-file", required_argument, NULL, 'e' },
	{ "extended", required_argument, NULL, 'o' },
	{ "napi-ids", required_argument, NULL, 'N' },
	{ "memory-max", required_argument, NULL, OPT_MEMORY_MAX },
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
	{ "config", required_argument, NULL, OPT_CONFIG },
	{ "logfile", required_argument, NULL, OPT_LOGFILE },
	{ NULL, 0, NULL, 0 }
};

/* memcached's short flags, all of them */
static const char shortopts[] =
	":a:AZp:s:U:m:Mc:khiVrvdl:u:P:f:n:t:D:LR:Cb:B:I:SFXWY:e:o:N:";

static bool inter_given, mode_given;
static int napi_ids;

static void set_option(int ch, char *arg, const char *name);

/* ---- -o: memcached's extended options -------------------------------- */

enum ext_action {
	EXT_TUNING,    /* memcached's slab, LRU, hash or logger tuning: checked, no effect */
	EXT_HASHPOWER, /* the index's first size */
	EXT_OFF_ONLY,  /* accepted with memcached's default (0, off); else refused */
	EXT_REFUSE,    /* a feature cached does not have */
};

enum ext_arg { ARG_NONE, ARG_INT, ARG_OPT_INT, ARG_FLOAT, ARG_STR, ARG_WORD };

struct ext_opt {
	const char *name;
	enum ext_action action;
	enum ext_arg arg;
	double lo, hi;          /* ARG_INT, ARG_FLOAT: memcached's bounds */
	const char *why;        /* EXT_OFF_ONLY, EXT_REFUSE: the reason; ARG_WORD: the words */
};

static const struct ext_opt ext_opts[] = {
	{ "maxconns_fast", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "no_maxconns_fast", EXT_REFUSE, ARG_NONE, 0, 0,
	  "not supported (cached always answers a connection over -c with an error and closes it)" },
	{ "hashpower", EXT_HASHPOWER, ARG_INT, 12, 31, NULL },
	{ "no_hashexpand", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "slab_reassign", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "no_slab_reassign", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "slab_automove", EXT_TUNING, ARG_OPT_INT, 0, 2, NULL },
	{ "no_slab_automove", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "slab_automove_ratio", EXT_TUNING, ARG_FLOAT, 0, 1, NULL },
	{ "slab_automove_window", EXT_TUNING, ARG_INT, 3, 1e9, NULL },
	{ "slab_automove_freeratio", EXT_TUNING, ARG_FLOAT, 0, 1, NULL },
	{ "slab_chunk_max", EXT_TUNING, ARG_INT, 1, 1 << 30, NULL },
	{ "slab_sizes", EXT_TUNING, ARG_STR, 0, 0, NULL },
	{ "no_chunked_items", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "tail_repair_time", EXT_TUNING, ARG_INT, 10, 1e9, NULL },
	{ "hash_algorithm", EXT_TUNING, ARG_WORD, 0, 0, "jenkins murmur3 xxh3" },
	{ "lru_crawler", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "no_lru_crawler", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "lru_crawler_sleep", EXT_TUNING, ARG_INT, 0, 1000000, NULL },
	{ "lru_crawler_tocrawl", EXT_TUNING, ARG_INT, 0, 4294967295.0, NULL },
	{ "lru_maintainer", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "no_lru_maintainer", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "hot_lru_pct", EXT_TUNING, ARG_INT, 1, 79, NULL },
	{ "warm_lru_pct", EXT_TUNING, ARG_INT, 1, 79, NULL },
	{ "hot_max_factor", EXT_TUNING, ARG_FLOAT, 0, 1e9, NULL },
	{ "warm_max_factor", EXT_TUNING, ARG_FLOAT, 0, 1e9, NULL },
	{ "temporary_ttl", EXT_TUNING, ARG_INT, 0, 1e9, NULL },
	{ "watcher_logbuf_size", EXT_TUNING, ARG_INT, 0, 4194303, NULL },
	{ "worker_logbuf_size", EXT_TUNING, ARG_INT, 0, 4194303, NULL },
	{ "inline_ascii_resp", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "no_inline_ascii_resp", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "modern", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "no_modern", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "resp_obj_mem_limit", EXT_TUNING, ARG_STR, 0, 0, NULL },
	{ "relaxed_privileges", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "no_drop_privileges", EXT_TUNING, ARG_NONE, 0, 0, NULL },
	{ "drop_privileges", EXT_REFUSE, ARG_NONE, 0, 0,
	  "not supported (cached has no system call sandbox; as root it gives up root with -u)" },
	{ "read_buf_mem_limit", EXT_OFF_ONLY, ARG_INT, 0, 4294967295.0,
	  "a limit on the buffers of all connections together is not supported "
	  "(cached bounds each connection's: --input-limit, --output-limit)" },
	{ "track_sizes", EXT_REFUSE, ARG_NONE, 0, 0,
	  "item size histograms are not supported (stats sizes answers sizes_status disabled)" },
	{ "sock_cookie_id", EXT_REFUSE, ARG_STR, 0, 0, "socket cookies are not supported" },
	{ "proxy_config", EXT_REFUSE, ARG_STR, 0, 0, "the proxy is not supported" },
	{ "proxy_uring", EXT_REFUSE, ARG_NONE, 0, 0, "the proxy is not supported" },
};

/* A cached long option of its own, spelled with _ or -, for -o. */
static const struct option *cached_long(const char *name, size_t len)
{
	for (const struct option *o = longopts; o->name; o++) {
		size_t i;

		if (o->val < 256 || o->val == OPT_CONFIG || strlen(o->name) != len)
			continue;
		for (i = 0; i < len; i++)
			if (name[i] != o->name[i] && !(name[i] == '_' && o->name[i] == '-'))
				break;
		if (i == len)
			return o;
	}
	return NULL;
}

static void ext_option(char *item)
{
	char *value = strchr(item, '=');
	size_t len = value ? (size_t)(value - item) : strlen(item);
	const struct ext_opt *e = NULL;
	const struct option *o;
	char name[256];

	if (value)
		value++;
	if (len == 0 || len >= sizeof(name))
		die_usage("-o '%s': not an extended option", item);
	memcpy(name, item, len);
	name[len] = 0;
	for (size_t i = 0; i < sizeof(ext_opts) / sizeof(ext_opts[0]); i++)
		if (!strcmp(ext_opts[i].name, name))
			e = &ext_opts[i];
	if (!e && (o = cached_long(name, len))) {
		char spelled[300];

		snprintf(spelled, sizeof(spelled), "-o %s", name);
		if (o->has_arg == no_argument && value)
			die_usage("-o %s takes no value", name);
		if (o->has_arg == required_argument && (!value || !*value))
			die_usage("-o %s needs a value (%s=VALUE)", name, name);
		set_option(o->val, value, spelled);
		return;
	}
	if (!e) {
		if (!strncmp(name, "ext_", 4))
			die_usage("-o %s: extstore (items on flash) is not supported", name);
		if (!strncmp(name, "ssl_", 4))
			die_usage("-o %s: TLS is not supported (cached listens on plain TCP "
				  "and unix sockets)", name);
		die_usage("-o %s: unknown extended option (see -h)", name);
	}
	if (e->action == EXT_REFUSE)
		die_usage("-o %s: %s", name, e->why);
	switch (e->arg) {
	case ARG_NONE:
		if (value)
			die_usage("-o %s takes no value", name);
		break;
	case ARG_OPT_INT:
	case ARG_INT:
		if (!value) {
			if (e->arg == ARG_OPT_INT)
				break;
			die_usage("-o %s needs a number (%s=N)", name, name);
		}
		{
			char opt[300];
			long v;

			snprintf(opt, sizeof(opt), "-o %s", name);
			v = parse_int(opt, value, (long)e->lo, (long)e->hi);
			if (e->action == EXT_HASHPOWER)
				settings.hashpower_init = (unsigned)v;
			if (e->action == EXT_OFF_ONLY && v)
				die_usage("-o %s=%s: %s", name, value, e->why);
		}
		break;
	case ARG_FLOAT: {
		char opt[300];
		double v;

		snprintf(opt, sizeof(opt), "-o %s", name);
		if (!value)
			die_usage("-o %s needs a number (%s=N)", name, name);
		v = parse_float(opt, value);
		if (v <= e->lo || v > e->hi)
			die_usage("bad value '%s' for -o %s (above %g, at most %g)", value, name,
				  e->lo, e->hi);
		break;
	}
	case ARG_STR:
		if (!value || !*value)
			die_usage("-o %s needs a value (%s=VALUE)", name, name);
		break;
	case ARG_WORD: {
		const char *w = e->why;
		size_t n = value ? strlen(value) : 0;
		bool found = false;

		while (n && (w = strstr(w, value)))
			if ((w == e->why || w[-1] == ' ') && (w[n] == ' ' || !w[n])) {
				found = true;
				break;
			} else {
				w += n;
			}
		if (!found)
			die_usage("bad value '%s' for -o %s (%s)", value ? value : "", name, e->why);
		break;
	}
	}
}

/* -o NAME[=VALUE],... */
static void ext_options(const char *arg)
{
	char *copy = strdup(arg), *save = NULL, *item;

	if (!copy)
		die_usage("out of memory");
	for (item = strtok_r(copy, ",", &save); item; item = strtok_r(NULL, ",", &save))
		ext_option(item);
	free(copy);
}

/* ---- one option -------------------------------------------------------- */

static void license(void)
{
	printf("cached " CACHED_VERSION " is free software under the GNU General Public\n"
	       "License, version 2 only (SPDX-License-Identifier: GPL-2.0-only).\n"
	       "It uses libevent, under the 3-clause BSD license.\n");
}

/*
 * ch: the short flag, or cached's OPT_*; arg: its value; name: how an
 * error names the option when it came through -o, or NULL.
 */
static void set_option(int ch, char *arg, const char *name)
{
	char err[256], flag[8];
	uint64_t v;

	if (!name) {
		snprintf(flag, sizeof(flag), "-%c", ch);
		name = ch < 256 ? flag : "option";
	}
	switch (ch) {
	case 'p':
		settings.port = (int)parse_int("-p", arg, 0, 65535);
		break;
	case 'U':
		/* 0 is memcached's default: no UDP, which cached never has */
		if (parse_int("-U", arg, -1, 65535) != 0)
			die_usage("-U %s: UDP is not supported (cached speaks the text and "
				  "meta protocols over TCP and unix sockets)", arg);
		break;
	case 'l':
		/* as memcached: each -l adds its addresses to the list */
		if (!inter_given || !settings.inter) {
			settings.inter = arg;
		} else if (!strstr(settings.inter, arg)) {
			char *both;

			if (asprintf(&both, "%s,%s", settings.inter, arg) < 0)
				die_usage("out of memory");
			settings.inter = both;
		}
		inter_given = true;
		break;
	case 's':
		settings.socketpath = arg;
		break;
	case 'a': {
		char *end;
		long mask;

		errno = 0;
		mask = strtol(arg, &end, 8);
		if (errno || end == arg || *end || mask < 0 || mask > 0777)
			die_usage("bad value '%s' for -a (an octal mode, 0..777)", arg);
		settings.access_mask = (int)mask;
		break;
	}
	case 'b':
		settings.backlog = (int)parse_int("-b", arg, 1, 1 << 20);
		break;
	case 'm':
		settings.maxbytes = (uint64_t)parse_int("-m", arg, 1, 1 << 20) << 20;
		break;
	case 'c':
		settings.maxconns = (int)parse_int("-c", arg, 1, 1 << 20);
		break;
	case 't':
		settings.num_threads = (int)parse_int("-t", arg, 1, 256);
		break;
	case 'I':
		if (parse_size(arg, &v) < 0 || v < 1024 || v > (1u << 30))
			die_usage("bad -I '%s' (1k..1g)", arg);
		settings.item_size_max = (uint32_t)v;
		break;
	case 'R':
		settings.reqs_per_event = (int)parse_int("-R", arg, 1, 1 << 20);
		break;
	case 'u':
		settings.username = arg;
		break;
	case 'v':
		settings.verbose++;
		break;
	case 'D':
		if (!arg[0])
			die_usage("-D needs a delimiter character");
		settings.prefix_delim = arg[0];
		settings.detail = true;
		break;
	case 'd':
		run_opts.daemonize = true;
		break;
	case 'P':
		run_opts.pidfile = absolute(arg);
		break;
	case OPT_LOGFILE:
		if (!arg[0])
			die_usage("%s needs a file name", name);
		run_opts.logfile = absolute(arg);
		break;
	case 'k':
		run_opts.lock_memory = true;
		break;
	case 'r':
		run_opts.maxcore = true;
		break;
	case 'A':
		settings.shutdown_command = true;
		break;
	case 'F':
		settings.no_flush = true;
		break;
	case 'X':
		settings.no_dump = true;
		break;
	case 'W':   /* cached has no watch commands: they stay off */
	case 'L':   /* a hint memcached may ignore too: cached does not ask for large pages */
		break;
	case 'f':
		if (parse_float("-f", arg) <= 1.0)
			die_usage("bad value '%s' for -f (greater than 1)", arg);
		break;
	case 'n':
		parse_int("-n", arg, 1, 1 << 20);
		break;
	case 'N':
		napi_ids = (int)parse_int("-N", arg, 1, 1 << 20);
		break;
	case 'B':
		if (!strcmp(arg, "binary"))
			die_usage("-B binary: the binary protocol is not supported (cached "
				  "speaks the text and meta protocols)");
		if (strcmp(arg, "ascii") && strcmp(arg, "auto"))
			die_usage("bad value '%s' for -B (auto, ascii or binary)", arg);
		break;
	case 'S':
		die_usage("-S: SASL authentication is not supported (it needs the binary "
			  "protocol, which cached does not speak)");
	case 'Z':
		die_usage("-Z: TLS is not supported (cached listens on plain TCP and unix sockets)");
	case 'Y':
		die_usage("-Y %s: authentication is not supported", arg);
	case 'e':
		die_usage("-e %s: a restartable memory file is not supported (cached's "
			  "values live in a memfd that ends with the daemon)", arg);
	case 'M':
		die_usage("-M: errors instead of evictions are not supported (cached "
			  "evicts the coldest data when memory is full)");
	case 'C':
		die_usage("-C: turning cas off is not supported (cached gives every "
			  "item a cas unique)");
	case 'o':
		ext_options(arg);
		break;
	case 'h':
		usage();
		exit(0);
	case 'i':
		license();
		exit(0);
	case 'V':
		printf("cached %s\n", CACHED_VERSION);
		exit(0);
	case OPT_MODE:
		if (!strcmp(arg, "volatile"))
			settings.mode = MODE_VOLATILE;
		else if (!strcmp(arg, "pinned"))
			settings.mode = MODE_PINNED;
		else if (!strcmp(arg, "madvfree"))
			settings.mode = MODE_MADVFREE;
		else if (!strcmp(arg, "psi"))
			settings.mode = MODE_PSI;
		else
			die_usage("bad --mode '%s' (volatile|pinned|psi|madvfree)", arg);
		mode_given = true;
		break;
	case OPT_MEMORY_MAX:
		settings.memory_max = (uint64_t)parse_int("--memory-max", arg, 1, 1 << 20) << 20;
		break;
	case OPT_IDLE:
		settings.idle_secs = (int)parse_int("--idle", arg, 1, 86400 * 30);
		break;
	case OPT_ORIGIN:
		if (origin_parse(arg, err, sizeof(err)) < 0)
			die_usage("%s", err);
		settings.origin_spec = arg;
		break;
	case OPT_VERIFY:
		settings.verify = true;
		break;
	case OPT_PSI_STALL:
		settings.psi_stall_us = (uint32_t)parse_int("--psi-stall", arg, 1, 10000000);
		break;
	case OPT_PSI_WINDOW:
		settings.psi_window_us = (uint32_t)parse_int("--psi-window", arg, 500000, 10000000);
		break;
	case OPT_PSI_DROP:
		settings.psi_drop_pct = (uint32_t)parse_int("--psi-drop", arg, 1, 100);
		break;
	case OPT_PSI_POLICY:
		if (!strcmp(arg, "band"))
			settings.psi_policy = PSI_BAND;
		else if (!strcmp(arg, "trigger"))
			settings.psi_policy = PSI_TRIGGER;
		else
			die_usage("bad --psi-policy '%s' (band|trigger)", arg);
		break;
	case OPT_PSI_LOW:
	case OPT_PSI_HIGH:
		if (parse_size(arg, &v) < 0 || v < (1u << 20))
			die_usage("bad --psi-%s '%s' (a size, at least 1m)",
				  ch == OPT_PSI_LOW ? "low" : "high", arg);
		*(ch == OPT_PSI_LOW ? &settings.psi_low : &settings.psi_high) = v;
		break;
	case OPT_PSI_STEP:
		settings.psi_step_pct = (uint32_t)parse_int("--psi-step", arg, 1, 100);
		break;
	case OPT_PSI_MAX:
		settings.psi_max_pct = (uint32_t)parse_int("--psi-max", arg, 1, 100);
		break;
	case OPT_PSI_INTERVAL:
		settings.psi_interval_ms = (uint32_t)parse_int("--psi-interval", arg, 10, 60000);
		break;
	case OPT_FETCH_THREADS:
		settings.fetch_threads = (int)parse_int("--fetch-threads", arg, 0, 256);
		break;
	case OPT_OUTPUT_LIMIT:
		if (parse_size(arg, &v) < 0 || v < (1u << 20))
			die_usage("bad --output-limit '%s' (at least 1m)", arg);
		settings.out_max = v;
		break;
	case OPT_IDLE_TIMEOUT:
		settings.idle_timeout = (int)parse_int("--idle-timeout", arg, 0, 86400 * 365);
		break;
	case OPT_INPUT_LIMIT:
		if (parse_size(arg, &v) < 0 || v < (1u << 20) || v > (1ull << 30))
			die_usage("bad --input-limit '%s' (1m..1g)", arg);
		settings.in_max = v;
		break;
	default:
		die_usage("%s: not an option here", name);
	}
}

/* ---- config files ------------------------------------------------------ */

static int words_cap;

static void push_word(char *w, const char *where)
{
	if (nwords + 1 >= words_cap) {
		words_cap = words_cap ? 2 * words_cap : 64;
		words = realloc(words, (size_t)words_cap * sizeof(*words));
		wheres = realloc(wheres, (size_t)words_cap * sizeof(*wheres));
		if (!words || !wheres) {
			fprintf(stderr, "cached: out of memory\n");
			exit(1);
		}
	}
	words[nwords] = w;
	wheres[nwords++] = where;
	words[nwords] = NULL;
}

static void config_die(const char *where, const char *fmt, const char *what)
{
	fprintf(stderr, "cached: %s: ", where);
	fprintf(stderr, fmt, what);
	fputc('\n', stderr);
	exit(EX_USAGE);
}

/*
 * The options of a config file in the format of Debian's
 * /etc/memcached.conf, as its start-memcached reads it: `#` to the end of
 * the line is a comment (`\#` is not), blank lines are skipped, a line
 * that starts with `-` holds options separated by blanks, any other line
 * is a directive NAME VALUE, of which there is one, `logfile PATH`.
 */
static void read_config(const char *path)
{
	FILE *f = fopen(path, "r");
	char *line = NULL;
	size_t cap = 0;
	int lineno = 0;

	if (!f) {
		fprintf(stderr, "cached: --config %s: %s\n", path, strerror(errno));
		exit(EX_USAGE);
	}
	while (getline(&line, &cap, f) >= 0) {
		char *p = line, *end, *where, *save = NULL, *w;

		lineno++;
		for (char *h = line; (h = strchr(h, '#')); h++)
			if (h == line || h[-1] != '\\') {
				*h = 0;
				break;
			}
		while (*p == ' ' || *p == '\t')
			p++;
		end = p + strlen(p);
		while (end > p && (end[-1] == '\n' || end[-1] == '\r' ||
				   end[-1] == ' ' || end[-1] == '\t'))
			*--end = 0;
		if (!*p)
			continue;
		if (asprintf(&where, "%s:%d", path, lineno) < 0)
			where = (char *)path;
		if (*p != '-') {
			char *value = p + strcspn(p, " \t");

			if (*value)
				*value++ = 0;
			value += strspn(value, " \t");
			if (strcmp(p, "logfile"))
				config_die(where, "unknown directive '%s' (the one known is logfile PATH)", p);
			if (!*value)
				config_die(where, "%s needs a file name", p);
			push_word(strdup("--logfile"), where);
			push_word(strdup(value), where);
			continue;
		}
		for (w = strtok_r(p, " \t", &save); w; w = strtok_r(NULL, " \t", &save)) {
			if (!strcmp(w, "--config") || !strncmp(w, "--config=", 9))
				config_die(where, "%s: a config file cannot read another", w);
			push_word(strdup(w), where);
		}
	}
	free(line);
	fclose(f);
}

/* argv with each --config FILE replaced by the options of FILE */
static void expand(int argc, char **argv)
{
	push_word(argv[0], NULL);
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--")) {
			for (; i < argc; i++)
				push_word(argv[i], NULL);
			break;
		}
		if (!strncmp(argv[i], "--config=", 9)) {
			read_config(argv[i] + 9);
		} else if (!strcmp(argv[i], "--config")) {
			if (i + 1 >= argc) {
				fprintf(stderr, "cached: option --config needs a value\n");
				exit(EX_USAGE);
			}
			read_config(argv[++i]);
		} else {
			push_word(argv[i], NULL);
		}
	}
}

/* ---- the whole command line -------------------------------------------- */

static void defaults(void)
{
	settings.port = 11211;
	settings.inter = "127.0.0.1";
	settings.backlog = 1024;
	settings.access_mask = 0700;
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
}

void options_parse(int argc, char **argv)
{
	int ch;

	defaults();
	expand(argc, argv);
	opterr = 0;
	while ((ch = getopt_long(nwords, words, shortopts, longopts, NULL)) != -1) {
		switch (ch) {
		case ':':
			die_usage("option %s needs a value", words[optind - 1]);
		case '?':
			if (optopt)
				die_usage("unknown option -%c (see -h)", optopt);
			die_usage("unknown option %s (see -h)", words[optind - 1]);
		default:
			set_option(ch, optarg, NULL);
		}
	}
	if (optind < nwords)
		die_usage("unexpected argument '%s' (see -h)", words[optind]);
	optind = nwords + 1;   /* the checks below name no word */
	if (napi_ids > settings.num_threads)
		die_usage("-N %d: more NAPI ids than threads (-t %d)", napi_ids,
			  settings.num_threads);
	if (run_opts.lock_memory) {
		/* locked pages cannot be purged: -k pins the cache */
		if (mode_given && (settings.mode == MODE_VOLATILE || settings.mode == MODE_MADVFREE))
			die_usage("-k: locked memory cannot be given back to the kernel as "
				  "--mode %s does (use --mode pinned or psi)",
				  settings.mode == MODE_VOLATILE ? "volatile" : "madvfree");
		if (!mode_given)
			settings.mode = MODE_PINNED;
	}
	if (run_opts.daemonize && settings.socketpath)
		settings.socketpath = absolute(settings.socketpath);
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
