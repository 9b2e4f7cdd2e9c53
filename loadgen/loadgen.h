/*
 * loadgen.h - what the parts of loadgen share: the configuration, the
 * per-thread and per-connection state, and the functions each file offers.
 *
 * The files are the parts of the program: options.c reads the command line
 * into cfg; conn.c writes one connection's requests and reads its replies;
 * run.c runs the load threads (one epoll loop each) and lets the main
 * thread collect their counters; output.c prints what was measured;
 * loadgen.c holds main() and the helpers every part uses.
 */
#ifndef LOADGEN_H
#define LOADGEN_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <pthread.h>
#include <sys/socket.h>

#include "gen.h"
#include "hist.h"
#include "proto.h"
#include "zipf.h"

/* Exit status (the lowest that applies; see --help) */
#define EX_VERIFY 1		/* values failed verification, or fatal */
#define EX_NONE 2		/* no request completed */
#define EX_FAILED 3		/* requests failed */
#define EX_TIMEOUT 4		/* --timeout ended an --ops run */
#define EX_USAGE 64
#define MAX_MULTIGET 100
#define MAX_KEY 250
#define WARMUP_DEPTH 16
#define BACKOFF_MIN_NS (10 * 1000000LL)
#define BACKOFF_MAX_NS (1000 * 1000000LL)
#define VERIFY_LOG_MAX 10

/* ---------------------------------------------------------------- config */

/* The commands of the measured mix; OP_GET is mg with --meta. */
enum { OP_GET, OP_SET, OP_DELETE, OP_TOUCH, OP_COUNT };

enum { ARRIVE_CONSTANT, ARRIVE_POISSON };

struct config {
	const char *server;
	struct sockaddr_storage addr;
	socklen_t addrlen;
	int threads;
	int conns;
	int pipeline;
	double rate;
	double duration;
	uint64_t ops;
	uint64_t keys;
	const char *prefix;
	size_t prefixlen;
	int zipf;
	double zipf_s;
	int scramble;		/* YCSB's scrambled Zipfian */
	double get_ratio;	/* the share of gets in the mix */
	double mix[OP_COUNT];	/* shares of the commands, sum 1 */
	const char *gen_str;
	struct gen_params gen;
	int multiget;		/* keys per get: multiget_min..multiget */
	int multiget_min;
	int key_min, key_max;	/* --key-size; 0: keys are PREFIX + index */
	int meta;		/* gets as meta commands (mg KEY v f) */
	int arrivals;		/* ARRIVE_*: open-loop intervals */
	int warmup_random;	/* warm-up in a random order of the keys */
	struct perm wu_perm;
	const char *hdr_log;
	int pin;		/* --pin: thread i on the i-th allowed CPU */
	int sched_batch;	/* --sched-batch: load threads under SCHED_BATCH */
	int warmup;
	int verify;
	double interval;
	const char *json;
	int quiet;
	uint64_t seed;
	double connect_timeout;
	double timeout;		/* --timeout: bound of an --ops run, 0 = none */
	double run_limit;	/* the run's length: --duration or --timeout */
	int limit_is_timeout;	/* run_limit comes from --timeout */
};

extern struct config cfg;

/* ----------------------------------------------------------------- state */

/*
 * Counters of the whole run and of each command.  The whole run's hits and
 * misses are those of the keys asked by gets; a command's own are its
 * positive and negative answers (VALUE or not, DELETED or NOT_FOUND,
 * TOUCHED or NOT_FOUND).  misses_purged and hits_rebuilt count the meta
 * replies that carry the server's P flag (purged by the kernel).
 */
struct stats {
	uint64_t ops, gets, sets, deletes, touches, hits, misses;
	uint64_t misses_purged, hits_rebuilt;
	uint64_t errors, verify_errors, conn_errors;
	uint64_t unfinished;	/* in flight or due but unsent at the end */
};

/* What the main thread collects: counters and a histogram per command. */
struct tally {
	struct stats all;
	struct stats cmd[OP_COUNT];
	struct hist hist[OP_COUNT];
};

struct req {
	int64_t t_start;	/* intended (open loop) or actual send time */
	uint32_t key_off;	/* first key in the connection's key ring */
	uint16_t nkeys;
	uint16_t next;		/* next key a VALUE may answer */
	uint16_t hits;
	uint16_t purged;	/* meta: misses with P */
	uint16_t rebuilt;	/* meta: hits with P */
	uint8_t op;
	uint8_t failed;		/* meta: a key got an error reply */
};

enum { CS_DOWN, CS_CONNECTING, CS_UP };

struct thread;

struct conn {
	struct thread *t;
	int fd;
	int state;
	int epout;		/* EPOLLOUT armed */
	char *in;
	size_t in_len, in_cap;
	char *out;
	size_t out_off, out_len, out_cap;
	struct req *reqs;
	unsigned rcap, rhead, rcount;
	uint64_t *keyring;
	unsigned kcap, ktail;
	int64_t next_send;	/* open loop: intended time of the next request */
	int64_t retry_at;
	int64_t backoff;
	int settled;		/* its first connection attempt has ended */
};

enum { PH_WARMUP, PH_WAIT, PH_RUN };

struct thread {
	int id;
	pthread_t tid;
	int epfd, tfd;
	int wakefd;		/* eventfd: the main thread changed the phase */
	int64_t timer_armed;
	struct conn *conns;
	int nconns;
	struct rng rng;
	struct zipf zipf;
	struct ycsb_zipf yzipf;	/* --scramble */
	int64_t interval_ns;	/* open loop: per connection */
	uint64_t quota;		/* requests left to issue, UINT64_MAX = no limit */
	uint64_t outstanding;
	int phase;
	uint64_t wu_next, wu_end;
	int64_t t_stop;		/* the end of the measured run (--duration) */
	int64_t t_end;		/* when this thread stopped */
	int timed_out;		/* --timeout ended it with requests left */
	pthread_mutex_t lock;	/* guards tally against the reporter */
	struct tally *tally;
	struct tally *spare;	/* empty; the reporter's, swapped in by collect */
	atomic_int done;
};

extern struct thread *threads;
extern atomic_int g_stop;
extern atomic_int g_phase;
extern atomic_llong g_t0;
extern atomic_ullong g_warm_done;
extern atomic_int g_verify_logged;
extern atomic_int g_proto_logged;
extern atomic_int g_server_logged;
extern atomic_int g_conn_logged;
extern atomic_int g_connected;	/* some connection was established */
extern atomic_int g_settled;	/* connections whose first attempt ended */
extern atomic_int g_conn_timed_out;	/* --connect-timeout ended the run */

/* How the run ended, for the summary and the JSON file. */
enum { END_NORMAL, END_INTERRUPTED, END_CONNECT_TIMEOUT, END_TIMEOUT };

/* loadgen.c: helpers for every part */
int64_t now_ns(void);
void die_usage(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void *xrealloc(void *p, size_t n);
void *xcalloc(size_t a, size_t b);
void log_line_once(atomic_int *flag, const char *what, const char *line,
		   size_t len);
size_t u64_to_str(char *p, uint64_t v);
size_t key_str(char *p, uint64_t k);

/* options.c: fills cfg from the command line, or exits with status 64 */
void parse_args(int argc, char **argv);

/* conn.c: one connection's requests and replies */
void conn_start(struct conn *c, int64_t now);
void conn_fill(struct conn *c, int64_t now);
void conn_flush(struct conn *c, int64_t now);
void conn_event(struct conn *c, uint32_t ev, int64_t now);
void conn_finish(struct conn *c, int64_t t_end);

/* run.c: the load threads and what the main thread does with them */
extern int64_t g_start;
void thread_init(struct thread *t, int id);
void *thread_main(void *arg);
void thread_wake(struct thread *t);
void stats_add(struct stats *a, const struct stats *b);
struct tally *tally_new(void);
void tally_reset(struct tally *a);
void tally_add(struct tally *a, const struct tally *b);
/* The histogram of every command together. */
void tally_merged(const struct tally *a, struct hist *h);
void collect(struct tally *into);
/* How long collect held a load thread's lock, each time (main thread only). */
extern struct hist g_collect_lock;
void check_connect_timeout(int64_t now);
int all_done(void);
void do_warmup(int tty);
void wait_connections(void);
void sleep_ns(int64_t ns);

/* output.c: the summary, the interval lines and the JSON file */
double us(int64_t ns);
double cpu_seconds(void);
const char *op_name(int op);
void print_interval_json(double t, double secs, const struct tally *a);
void print_progress(double t, double secs, const struct tally *a);
void write_json(const char *path, double secs, double cpu,
		const struct tally *a, int end);
void print_summary(FILE *f, double secs, double cpu, const struct tally *a,
		   int end);
/* HdrHistogram interval log (--hdr-log) */
void hdr_log_open(const char *path);
void hdr_log_interval(double start, double secs, const struct tally *a);
void hdr_log_close(void);

#endif /* LOADGEN_H */
