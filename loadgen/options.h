/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * options.h - the configuration of a run, which options.c reads from the
 * command line into cfg before anything else runs and nothing changes
 * afterwards.
 */
#ifndef OPTIONS_H
#define OPTIONS_H

#include <stdint.h>
#include <sys/socket.h>

#include "gen.h"
#include "zipf.h"

#define MAX_MULTIGET 100
#define MAX_KEY 250
#define MAX_PERCENTILES 16
/* -s given more than once: at most this many servers. */
#define MAX_SERVERS 64
/* Entries of --data-size-list. */
#define MAX_SIZE_LIST 64
/* The longest expiry memcached takes as relative: 30 days, in seconds. */
#define MAX_EXPIRY 2592000

/* The commands of the measured mix; OP_GET is mg with --meta. */
enum { OP_GET, OP_SET, OP_DELETE, OP_TOUCH, OP_COUNT };

enum { ARRIVE_CONSTANT, ARRIVE_POISSON };

/* The keys of which commands a --dist draws: gets, deletes, touches; sets. */
enum { ROLE_GET, ROLE_SET, ROLE_COUNT };

/* --dist D: kind is a KD_* of zipf.h, param s for zipf, sd for gaussian */
struct dist_spec {
	int kind;
	double param;
};

/* One -s: as given, and its address. */
struct server {
	const char *name;
	struct sockaddr_storage addr;
	socklen_t addrlen;
};

struct config {
	const char *server;	/* every -s, joined with ", " (for messages) */
	struct server servers[MAX_SERVERS];	/* connection g: g % nservers */
	int nservers;
	int threads;
	int conns;
	int pipeline;
	double rate;
	double duration;
	uint64_t ops;
	uint64_t keys;
	uint64_t key_base;	/* --key-minimum: the first key index */
	const char *prefix;
	size_t prefixlen;
	struct dist_spec dist[ROLE_COUNT];	/* --dist, --set-dist */
	int scramble;		/* zipf is YCSB's scrambled Zipfian */
	double get_ratio;	/* the share of gets in the mix */
	double mix[OP_COUNT];	/* shares of the commands, sum 1 */
	const char *gen_str;
	struct gen_params gen;
	/*
	 * --data-size-list: each set's value length is drawn from sizes[]
	 * with the weights, whose running sums are size_cum[] (the last is
	 * their total); nsizes 0: the formula's size= gives the length.
	 */
	int nsizes;
	uint32_t sizes[MAX_SIZE_LIST];
	uint64_t size_weight[MAX_SIZE_LIST];
	uint64_t size_cum[MAX_SIZE_LIST];
	int multiget;		/* keys per get: multiget_min..multiget */
	int multiget_min;
	int key_min, key_max;	/* --key-size; 0: keys are PREFIX + index */
	int exp_min, exp_max;	/* --expiry-range, seconds; 0: never expire */
	int meta;		/* gets as meta commands (mg KEY v f) */
	int arrivals;		/* ARRIVE_*: open-loop intervals */
	int warmup_random;	/* warm-up in a random order of the keys */
	struct perm wu_perm;
	const char *hdr_log;
	int pin;		/* --pin: thread i on the i-th allowed CPU */
	int sched_batch;	/* --sched-batch: load threads under SCHED_BATCH */
	int warmup;
	int run_count;		/* --run-count: measured runs, the warm-up once */
	int verify;
	int uncorrected;	/* -U: also latency from the actual send */
	double interval;
	double pct[MAX_PERCENTILES];	/* --print-percentiles, ascending */
	int npct;
	const char *json;
	int quiet;
	uint64_t seed;
	double connect_timeout;
	double timeout;		/* --timeout: bound of an --ops run, 0 = none */
	double run_limit;	/* the run's length: --duration or --timeout */
	int limit_is_timeout;	/* run_limit comes from --timeout */
};

extern struct config cfg;

/* Fill cfg from the command line, or exit with status 64. */
void parse_args(int argc, char **argv);

#endif /* OPTIONS_H */
