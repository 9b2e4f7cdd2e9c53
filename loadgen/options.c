// SPDX-License-Identifier: GPL-2.0-only
/*
 * options.c - the command line: the option list, --help, and parsing into
 * cfg with one line and exit status 64 for anything it cannot use.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <getopt.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/un.h>

#include "options.h"
#include "util.h"

struct config cfg;

/* ---------------------------------------------------------------- options */

static const char usage_text[] =
"Usage: loadgen [OPTIONS]\n"
"Load generator for the memcached text protocol (get, multi-get, set,\n"
"delete, touch, and the meta get mg).\n"
"\n"
"Target:\n"
"  -s, --server ADDR      HOST:PORT, [IPV6]:PORT or a unix socket path\n"
"                         (anything containing '/'); default 127.0.0.1:11211.\n"
"                         Given more than once (up to 64): each connection\n"
"                         talks to one server, connection g (counted over\n"
"                         all threads) to the (g mod N)-th -s; the summary\n"
"                         reports each server's requests\n"
"Load:\n"
"  -t, --threads N        load threads, each with its own event loop (1)\n"
"  -c, --conns N          connections per thread (10)\n"
"  -p, --pipeline N       requests in flight per connection (1)\n"
"  -r, --rate OPS         open loop: total requests per second, sent on a\n"
"                         fixed schedule; latency counts from the intended\n"
"                         send time.  0 or absent: closed loop\n"
"      --arrivals A       open loop: constant (fixed intervals, default) or\n"
"                         poisson (exponential intervals of the same mean)\n"
"  -d, --duration S       run for S seconds (default 10 unless --ops)\n"
"  -n, --ops N            stop after N requests in total\n"
"      --run-count N      run the test N times (1), each with new connections,\n"
"                         the warm-up only before the first; then the best\n"
"                         and the worst run (by ops/s) and the aggregate of\n"
"                         all: counts summed, latency of the merged\n"
"                         histograms\n"
"      --pin              pin load thread i to the i-th CPU it may run on\n"
"                         (modulo their number), as memcaslap does\n"
"      --sched-batch      run the load threads under SCHED_BATCH, which the\n"
"                         scheduler disfavours at wake-up, so that a reply\n"
"                         seldom makes them preempt the running thread\n"
"                         (the server, when it shares the cores)\n"
"Keys and values:\n"
"  -k, --keys N           key space size (100000); keys are PREFIX0..PREFIX(N-1)\n"
"      --key-minimum M    the first key index (0): keys are PREFIXM..PREFIX(M+N-1)\n"
"      --key-prefix P     key prefix (\"key:\")\n"
"      --dist D           how keys are drawn: uniform (default), zipf:S with\n"
"                         S > 0 (the first key is the most popular),\n"
"                         sequential (each thread walks the keys in order\n"
"                         from its share's start, wrapping around) or\n"
"                         gaussian[:SD] (a normal centred on the middle\n"
"                         key, SD keys wide, N/6 by default, at most N)\n"
"      --set-dist D       the same for the keys of sets alone (default: as\n"
"                         --dist, which then draws the gets', deletes' and\n"
"                         touches')\n"
"      --scramble         zipf is YCSB's scrambled Zipfian: a Zipf value\n"
"                         over 10^10 items, FNV-hashed modulo the key count,\n"
"                         so hot keys are not neighbours\n"
"      --key-size N|MIN-MAX  key length in bytes (up to 250): each key is\n"
"                         padded with -xxx to a length drawn from its index\n"
"Commands:\n"
"      --get-ratio F      fraction of requests that are gets, 0..1 (0.9);\n"
"                         the rest are sets\n"
"      --ratio G:S        the same as gets:sets, e.g. 9:1\n"
"      --mix SPEC         weights of the commands, e.g.\n"
"                         get=80,set=10,delete=5,touch=5 (get=9,set=1)\n"
"  -m, --multiget N|MIN-MAX  keys per get request, 1..100 (1); a range\n"
"                         draws the count of each request uniformly\n"
"      --meta             gets as meta commands (mg KEY v f), one per key;\n"
"                         the server's P flag counts purged misses and\n"
"                         values rebuilt after a purge\n"
"      --expiry-range MIN-MAX  the expiry of every set (the warm-up's\n"
"                         too) and touch, in seconds, drawn uniformly from\n"
"                         MIN..MAX, at most 2592000 (30 days); a single N\n"
"                         is that expiry (0: never expire, the default)\n"
"  -g, --gen OPTIONS      value formula options, the same string as the\n"
"                         daemon's --origin gen:OPTIONS: size=N|MIN-MAX,\n"
"                         cost=US, seed=N (size=100).  Sets store these\n"
"                         values with flags 0\n"
"      --data-size-list SIZE:WEIGHT,...  each set's value length is drawn\n"
"                         from these sizes (1..67108864 bytes) with these\n"
"                         weights (whole numbers, 1 or more), as\n"
"                         memtier_benchmark's; the formula's bytes, and\n"
"                         --verify checks a hit at the length it has, which\n"
"                         must be one of the sizes.  Not with -g size=\n"
"  -w, --warmup           first set every key once (with progress), then run\n"
"      --warmup-order O   sequential (default) or random: the warm-up sets\n"
"                         the keys in a random order (a keyed permutation)\n"
"  -V, --verify           check every byte of every hit against the formula;\n"
"                         mismatches are counted, shown with their key and\n"
"                         make the exit status 1\n"
"      --seed N           seed of the key and operation choices (1)\n"
"      --connect-timeout S  give up when no connection has succeeded after\n"
"                         S seconds (10; 0 = keep retrying for ever).  Once\n"
"                         one has, failures are always retried.  The run\n"
"                         starts when every connection is up or has failed\n"
"                         once, or after S seconds with one up\n"
"      --timeout S        with --ops: end the run after S seconds even if\n"
"                         not every request has been answered (60; 0 = wait\n"
"                         for ever); it is then reported as timed out\n"
"Output:\n"
"  -i, --interval S       print one JSON line per S seconds on stdout; the\n"
"                         summary then goes to stderr\n"
"  -j, --json FILE        write the final summary with the full histogram\n"
"      --hdr-log FILE     write the histograms in HdrHistogram's interval log\n"
"                         format: per --interval (or one for the whole run),\n"
"                         untagged for all commands and tagged per command\n"
"  -U, --uncorrected      also report latency from each request's actual\n"
"                         send (wrk2's -U): in open loop, what a tool that\n"
"                         ignores coordinated omission would show\n"
"      --print-percentiles LIST  the latency percentiles the summary shows\n"
"                         and the JSON output adds as percentiles_us,\n"
"                         e.g. 50,99,99.9,99.99 (50,90,99,99.9), each in\n"
"                         (0, 100], up to 16\n"
"  -q, --quiet            no progress line, no warm-up line, no summary\n"
"  -h, --help             this text\n"
"\n"
"A progress line is shown on stderr when it is a terminal.  Ctrl-C stops\n"
"the run and prints the summary of what ran.\n"
"Exit status: 0 ok, 1 verify errors (or a fatal error), 2 no request\n"
"completed, 3 requests failed (error replies, lost connections), 4 an --ops\n"
"run timed out (--timeout), 64 bad arguments; the lowest that applies.\n";

static uint64_t parse_uint(const char *opt, const char *s, uint64_t min,
			   uint64_t max)
{
	char *e;
	unsigned long long v;

	errno = 0;
	if (*s < '0' || *s > '9')
		die_usage("%s: expected a number, got '%s'", opt, s);
	v = strtoull(s, &e, 10);
	if (errno || *e || v < min || v > max)
		die_usage("%s: expected a number in %llu..%llu, got '%s'", opt,
			  (unsigned long long)min, (unsigned long long)max, s);
	return v;
}

static double parse_double(const char *opt, const char *s, double min,
			   double max)
{
	char *e;
	double v;

	errno = 0;
	v = strtod(s, &e);
	if (errno || e == s || *e || !(v >= min && v <= max))
		die_usage("%s: expected a number in %g..%g, got '%s'", opt, min,
			  max, s);
	return v;
}

/* "N" or "MIN-MAX" within min..max */
static void parse_range(const char *opt, char *s, uint64_t min, uint64_t max,
			int *lo, int *hi)
{
	char *dash = strchr(s, '-');

	if (!dash) {
		*lo = *hi = (int)parse_uint(opt, s, min, max);
		return;
	}
	*dash = 0;
	*lo = (int)parse_uint(opt, s, min, max);
	*hi = (int)parse_uint(opt, dash + 1, min, max);
	*dash = '-';
	if (*lo > *hi)
		die_usage("%s: MIN above MAX in '%s'", opt, s);
}

/* "get=W,set=W,delete=W,touch=W": weights, normalized to shares */
static void parse_mix(char *s)
{
	static const char *const names[OP_COUNT] = { "get", "set", "delete", "touch" };
	double w[OP_COUNT] = { 0 }, sum = 0;
	char *save = NULL;

	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		char *eq = strchr(tok, '=');
		int op;

		if (!eq)
			die_usage("--mix: expected NAME=WEIGHT, got '%s'", tok);
		*eq = 0;
		for (op = 0; op < OP_COUNT && strcmp(tok, names[op]); op++)
			;
		if (op == OP_COUNT)
			die_usage("--mix: unknown command '%s' (get, set, delete, touch)", tok);
		w[op] = parse_double("--mix", eq + 1, 0, 1e9);
	}
	for (int op = 0; op < OP_COUNT; op++)
		sum += w[op];
	if (sum <= 0)
		die_usage("--mix: every weight is zero");
	for (int op = 0; op < OP_COUNT; op++)
		cfg.mix[op] = w[op] / sum;
}

/*
 * "SIZE:WEIGHT,SIZE:WEIGHT,...": every item has both, sizes 1..GEN_MAX_SIZE
 * (what the formula and the reply parser take), weights whole and positive.
 */
static void parse_size_list(const char *s)
{
	const char *item = s;
	char buf[64];

	cfg.nsizes = 0;
	for (;;) {
		const char *end = strchr(item, ',');
		size_t len = end ? (size_t)(end - item) : strlen(item);
		char *colon;
		uint64_t sum = cfg.nsizes ? cfg.size_cum[cfg.nsizes - 1] : 0;

		if (!len)
			die_usage("--data-size-list: empty item in '%s' (expected SIZE:WEIGHT,...)", s);
		if (len >= sizeof(buf))
			die_usage("--data-size-list: item too long in '%s'", s);
		if (cfg.nsizes == MAX_SIZE_LIST)
			die_usage("--data-size-list: more than %d sizes", MAX_SIZE_LIST);
		memcpy(buf, item, len);
		buf[len] = 0;
		colon = strchr(buf, ':');
		if (!colon)
			die_usage("--data-size-list: expected SIZE:WEIGHT, got '%s'", buf);
		*colon = 0;
		cfg.sizes[cfg.nsizes] = (uint32_t)parse_uint("--data-size-list: size",
							     buf, 1, GEN_MAX_SIZE);
		cfg.size_weight[cfg.nsizes] = parse_uint("--data-size-list: weight",
							 colon + 1, 1, 1000000000);
		cfg.size_cum[cfg.nsizes] = sum + cfg.size_weight[cfg.nsizes];
		cfg.nsizes++;
		if (!end)
			break;
		item = end + 1;
	}
}

/* Does the -g string set size=?  (It and --data-size-list exclude each other.) */
static int gen_has_size(const char *s)
{
	if (!strncmp(s, "gen:", 4))
		s += 4;
	for (const char *p = s; p; p = strchr(p, ',')) {
		if (*p == ',')
			p++;
		while (*p == ' ')
			p++;
		if (!strncmp(p, "size=", 5))
			return 1;
	}
	return 0;
}

/* uniform, zipf:S, sequential, gaussian or gaussian:SD */
static void parse_dist(const char *opt, const char *s, struct dist_spec *d)
{
	d->param = 0;
	if (!strcmp(s, "uniform")) {
		d->kind = KD_UNIFORM;
	} else if (!strncmp(s, "zipf:", 5)) {
		d->kind = KD_ZIPF;
		d->param = parse_double(opt, s + 5, 1e-6, 100);
	} else if (!strcmp(s, "sequential")) {
		d->kind = KD_SEQUENTIAL;
	} else if (!strcmp(s, "gaussian")) {
		d->kind = KD_GAUSSIAN;
	} else if (!strncmp(s, "gaussian:", 9)) {
		d->kind = KD_GAUSSIAN;
		d->param = parse_double(opt, s + 9, 1e-9, 1e19);
	} else {
		die_usage("%s: expected uniform, zipf:S, sequential or gaussian[:SD], got '%s'",
			  opt, s);
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* "50,99,99.9": percentiles in (0, 100], sorted, without repeats */
static void parse_percentiles(char *s)
{
	char *save = NULL;
	int n = 0;

	for (char *tok = strtok_r(s, ",", &save); tok; tok = strtok_r(NULL, ",", &save)) {
		if (n == MAX_PERCENTILES)
			die_usage("--print-percentiles: more than %d", MAX_PERCENTILES);
		cfg.pct[n] = parse_double("--print-percentiles", tok, 0, 100);
		if (cfg.pct[n] <= 0)
			die_usage("--print-percentiles: %s is not above 0", tok);
		n++;
	}
	if (!n)
		die_usage("--print-percentiles: expected a list such as 50,99,99.9");
	qsort(cfg.pct, (size_t)n, sizeof(cfg.pct[0]), cmp_double);
	cfg.npct = 0;
	for (int i = 0; i < n; i++)
		if (!cfg.npct || cfg.pct[i] != cfg.pct[cfg.npct - 1])
			cfg.pct[cfg.npct++] = cfg.pct[i];
}

static void set_get_ratio(double g)
{
	memset(cfg.mix, 0, sizeof(cfg.mix));
	cfg.mix[OP_GET] = g;
	cfg.mix[OP_SET] = 1 - g;
}

static void parse_server(struct server *srv)
{
	const char *s = srv->name;

	if (strchr(s, '/')) {
		struct sockaddr_un *un = (struct sockaddr_un *)&srv->addr;

		if (strlen(s) >= sizeof(un->sun_path))
			die_usage("--server: unix socket path too long");
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, s);
		srv->addrlen = sizeof(*un);
		return;
	}
	{
		char host[256];
		const char *colon = strrchr(s, ':');
		const char *h = s;
		size_t hl;
		struct addrinfo hints = { 0 }, *ai;
		int rc;

		if (!colon || !colon[1])
			die_usage("--server: expected HOST:PORT or a socket path, got '%s'", s);
		hl = (size_t)(colon - s);
		if (hl && s[0] == '[' && s[hl - 1] == ']') {
			h++;
			hl -= 2;
		}
		if (!hl || hl >= sizeof(host))
			die_usage("--server: bad host in '%s'", s);
		memcpy(host, h, hl);
		host[hl] = 0;
		parse_uint("--server port", colon + 1, 1, 65535);
		hints.ai_socktype = SOCK_STREAM;
		rc = getaddrinfo(host, colon + 1, &hints, &ai);
		if (rc)
			die_usage("--server: %s: %s", s, gai_strerror(rc));
		memcpy(&srv->addr, ai->ai_addr, ai->ai_addrlen);
		srv->addrlen = ai->ai_addrlen;
		freeaddrinfo(ai);
	}
}

/*
 * Every -s (127.0.0.1:11211 without one), resolved, and cfg.server, their
 * names joined.  Each server needs a connection of its own.
 */
static void parse_servers(void)
{
	size_t len = 1;
	char *joined;

	if (!cfg.nservers)
		cfg.servers[cfg.nservers++].name = "127.0.0.1:11211";
	if ((uint64_t)cfg.threads * (uint64_t)cfg.conns < (uint64_t)cfg.nservers)
		die_usage("--server: %d servers but %d connections (threads x conns); each server needs one",
			  cfg.nservers, cfg.threads * cfg.conns);
	for (int i = 0; i < cfg.nservers; i++) {
		parse_server(&cfg.servers[i]);
		len += strlen(cfg.servers[i].name) + 2;
	}
	joined = xrealloc(NULL, len);
	joined[0] = 0;
	for (int i = 0; i < cfg.nservers; i++) {
		if (i)
			strcat(joined, ", ");
		strcat(joined, cfg.servers[i].name);
	}
	cfg.server = joined;
}

enum {
	O_PREFIX = 256, O_DIST, O_GET_RATIO, O_RATIO, O_SEED, O_CONNECT_TIMEOUT,
	O_ARRIVALS, O_SCRAMBLE, O_KEY_SIZE, O_MIX, O_META, O_WARMUP_ORDER,
	O_HDR_LOG, O_PIN, O_SCHED_BATCH, O_TIMEOUT, O_EXPIRY, O_SET_DIST,
	O_KEY_MIN, O_PERCENTILES, O_SIZE_LIST, O_RUN_COUNT,
};

static const struct option long_opts[] = {
	{ "server", required_argument, NULL, 's' },
	{ "threads", required_argument, NULL, 't' },
	{ "conns", required_argument, NULL, 'c' },
	{ "pipeline", required_argument, NULL, 'p' },
	{ "rate", required_argument, NULL, 'r' },
	{ "duration", required_argument, NULL, 'd' },
	{ "ops", required_argument, NULL, 'n' },
	{ "run-count", required_argument, NULL, O_RUN_COUNT },
	{ "keys", required_argument, NULL, 'k' },
	{ "key-prefix", required_argument, NULL, O_PREFIX },
	{ "dist", required_argument, NULL, O_DIST },
	{ "set-dist", required_argument, NULL, O_SET_DIST },
	{ "key-minimum", required_argument, NULL, O_KEY_MIN },
	{ "get-ratio", required_argument, NULL, O_GET_RATIO },
	{ "ratio", required_argument, NULL, O_RATIO },
	{ "multiget", required_argument, NULL, 'm' },
	{ "arrivals", required_argument, NULL, O_ARRIVALS },
	{ "scramble", no_argument, NULL, O_SCRAMBLE },
	{ "key-size", required_argument, NULL, O_KEY_SIZE },
	{ "expiry-range", required_argument, NULL, O_EXPIRY },
	{ "mix", required_argument, NULL, O_MIX },
	{ "meta", no_argument, NULL, O_META },
	{ "warmup-order", required_argument, NULL, O_WARMUP_ORDER },
	{ "hdr-log", required_argument, NULL, O_HDR_LOG },
	{ "pin", no_argument, NULL, O_PIN },
	{ "sched-batch", no_argument, NULL, O_SCHED_BATCH },
	{ "gen", required_argument, NULL, 'g' },
	{ "data-size-list", required_argument, NULL, O_SIZE_LIST },
	{ "warmup", no_argument, NULL, 'w' },
	{ "verify", no_argument, NULL, 'V' },
	{ "seed", required_argument, NULL, O_SEED },
	{ "connect-timeout", required_argument, NULL, O_CONNECT_TIMEOUT },
	{ "timeout", required_argument, NULL, O_TIMEOUT },
	{ "interval", required_argument, NULL, 'i' },
	{ "json", required_argument, NULL, 'j' },
	{ "print-percentiles", required_argument, NULL, O_PERCENTILES },
	{ "uncorrected", no_argument, NULL, 'U' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

void parse_args(int argc, char **argv)
{
	int opt;
	int have_duration = 0, have_set_dist = 0;
	char err[256];

	cfg.threads = 1;
	cfg.run_count = 1;
	cfg.conns = 10;
	cfg.pipeline = 1;
	cfg.keys = 100000;
	cfg.prefix = "key:";
	set_get_ratio(0.9);
	cfg.multiget = 1;
	cfg.multiget_min = 1;
	cfg.seed = 1;
	cfg.connect_timeout = 10;
	cfg.timeout = 60;
	cfg.pct[0] = 50;
	cfg.pct[1] = 90;
	cfg.pct[2] = 99;
	cfg.pct[3] = 99.9;
	cfg.npct = 4;
	gen_defaults(&cfg.gen);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":s:t:c:p:r:d:n:k:m:g:wVi:j:qhU",
				  long_opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			if (cfg.nservers == MAX_SERVERS)
				die_usage("--server: more than %d servers", MAX_SERVERS);
			cfg.servers[cfg.nservers++].name = optarg;
			break;
		case 't':
			cfg.threads = (int)parse_uint("--threads", optarg, 1, 256);
			break;
		case 'c':
			cfg.conns = (int)parse_uint("--conns", optarg, 1, 10000);
			break;
		case 'p':
			cfg.pipeline = (int)parse_uint("--pipeline", optarg, 1, 4096);
			break;
		case 'r':
			cfg.rate = parse_double("--rate", optarg, 0, 1e9);
			break;
		case 'd':
			cfg.duration = parse_double("--duration", optarg, 0.001, 1e7);
			have_duration = 1;
			break;
		case 'n':
			cfg.ops = parse_uint("--ops", optarg, 1, UINT64_MAX / 2);
			break;
		case 'k':
			cfg.keys = parse_uint("--keys", optarg, 1, UINT64_MAX / 2);
			break;
		case O_RUN_COUNT:
			cfg.run_count = (int)parse_uint("--run-count", optarg, 1, 100000);
			break;
		case O_PREFIX:
			cfg.prefix = optarg;
			for (const char *p = optarg; *p; p++)
				if ((unsigned char)*p <= ' ' || *p == 127)
					die_usage("--key-prefix: no spaces or control characters");
			if (strlen(optarg) > MAX_KEY - 20)
				die_usage("--key-prefix: longer than %d bytes", MAX_KEY - 20);
			break;
		case O_DIST:
			parse_dist("--dist", optarg, &cfg.dist[ROLE_GET]);
			break;
		case O_SET_DIST:
			parse_dist("--set-dist", optarg, &cfg.dist[ROLE_SET]);
			have_set_dist = 1;
			break;
		case O_KEY_MIN:
			cfg.key_base = parse_uint("--key-minimum", optarg, 0,
						  UINT64_MAX / 2);
			break;
		case O_GET_RATIO:
			set_get_ratio(parse_double("--get-ratio", optarg, 0, 1));
			break;
		case O_RATIO: {
			char *colon = strchr(optarg, ':');
			double g, s;

			if (!colon)
				die_usage("--ratio: expected GETS:SETS, got '%s'", optarg);
			*colon = 0;
			g = parse_double("--ratio", optarg, 0, 1e9);
			s = parse_double("--ratio", colon + 1, 0, 1e9);
			*colon = ':';
			if (g + s <= 0)
				die_usage("--ratio: both parts are zero");
			set_get_ratio(g / (g + s));
			break;
		}
		case 'm':
			parse_range("--multiget", optarg, 1, MAX_MULTIGET,
				    &cfg.multiget_min, &cfg.multiget);
			break;
		case 'g':
			cfg.gen_str = optarg;
			if (!strncmp(optarg, "gen:", 4))
				optarg += 4;
			if (gen_parse(optarg, &cfg.gen, err, sizeof(err)))
				die_usage("--gen: %s", err);
			break;
		case O_SIZE_LIST:
			parse_size_list(optarg);
			break;
		case 'w':
			cfg.warmup = 1;
			break;
		case O_ARRIVALS:
			if (!strcmp(optarg, "constant"))
				cfg.arrivals = ARRIVE_CONSTANT;
			else if (!strcmp(optarg, "poisson"))
				cfg.arrivals = ARRIVE_POISSON;
			else
				die_usage("--arrivals: expected constant or poisson, got '%s'", optarg);
			break;
		case O_SCRAMBLE:
			cfg.scramble = 1;
			break;
		case O_KEY_SIZE:
			parse_range("--key-size", optarg, 1, MAX_KEY, &cfg.key_min,
				    &cfg.key_max);
			break;
		case O_EXPIRY:
			parse_range("--expiry-range", optarg, 0, MAX_EXPIRY,
				    &cfg.exp_min, &cfg.exp_max);
			break;
		case O_MIX:
			parse_mix(optarg);
			break;
		case O_META:
			cfg.meta = 1;
			break;
		case O_WARMUP_ORDER:
			if (!strcmp(optarg, "sequential"))
				cfg.warmup_random = 0;
			else if (!strcmp(optarg, "random"))
				cfg.warmup_random = 1;
			else
				die_usage("--warmup-order: expected sequential or random, got '%s'", optarg);
			break;
		case O_HDR_LOG:
			cfg.hdr_log = optarg;
			break;
		case O_PIN:
			cfg.pin = 1;
			break;
		case O_SCHED_BATCH:
			cfg.sched_batch = 1;
			break;
		case 'V':
			cfg.verify = 1;
			break;
		case O_SEED:
			cfg.seed = parse_uint("--seed", optarg, 0, UINT64_MAX);
			break;
		case O_CONNECT_TIMEOUT:
			cfg.connect_timeout = parse_double("--connect-timeout", optarg, 0, 1e7);
			break;
		case O_TIMEOUT:
			cfg.timeout = parse_double("--timeout", optarg, 0, 1e7);
			break;
		case 'i':
			cfg.interval = parse_double("--interval", optarg, 0.01, 1e6);
			break;
		case 'j':
			cfg.json = optarg;
			break;
		case 'U':
			cfg.uncorrected = 1;
			break;
		case O_PERCENTILES:
			parse_percentiles(optarg);
			break;
		case 'q':
			cfg.quiet = 1;
			break;
		case 'h':
			fputs(usage_text, stdout);
			exit(0);
		case ':':
			die_usage("option %s needs a value", argv[optind - 1]);
			break;
		default:
			if (optopt)
				die_usage("unknown option -%c", optopt);
			die_usage("unknown option %s", argv[optind - 1]);
		}
	}
	if (optind < argc)
		die_usage("unexpected argument '%s'", argv[optind]);
	if (!have_duration && !cfg.ops)
		cfg.duration = 10;
	if (!have_duration && cfg.ops)
		cfg.duration = 0;
	/*
	 * An --ops run against a server that stops answering would wait for
	 * ever: --timeout bounds it (with --duration too, whichever is first).
	 */
	cfg.run_limit = cfg.duration;
	if (cfg.ops && cfg.timeout > 0 &&
	    (cfg.run_limit <= 0 || cfg.timeout < cfg.run_limit)) {
		cfg.run_limit = cfg.timeout;
		cfg.limit_is_timeout = 1;
	}
	if (cfg.nsizes && cfg.gen_str && gen_has_size(cfg.gen_str))
		die_usage("--data-size-list and -g size= both give the value size; use one");
	if (!have_set_dist)
		cfg.dist[ROLE_SET] = cfg.dist[ROLE_GET];
	for (int role = 0; role < ROLE_COUNT; role++) {
		struct dist_spec *d = &cfg.dist[role];

		if (d->kind != KD_GAUSSIAN)
			continue;
		if (!d->param)
			d->param = (double)cfg.keys / 6;
		if (d->param > (double)cfg.keys)
			die_usage("%s: gaussian:SD wider than the %llu keys (uniform is nearly that)",
				  role == ROLE_SET ? "--set-dist" : "--dist",
				  (unsigned long long)cfg.keys);
	}
	cfg.prefixlen = strlen(cfg.prefix);
	cfg.get_ratio = cfg.mix[OP_GET];
	perm_init(&cfg.wu_perm, cfg.keys, cfg.seed ^ 0x3a7e0fd3c19bULL);
	parse_servers();
}

