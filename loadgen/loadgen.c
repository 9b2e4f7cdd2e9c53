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
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <math.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <pthread.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/timerfd.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "../cached/gen.h"
#include "hist.h"
#include "proto.h"
#include "zipf.h"

#define EX_USAGE 64
#define MAX_MULTIGET 100
#define MAX_KEY 250
#define WARMUP_DEPTH 16
#define BACKOFF_MIN_NS (10 * 1000000LL)
#define BACKOFF_MAX_NS (1000 * 1000000LL)
#define VERIFY_LOG_MAX 10

/* ---------------------------------------------------------------- config */

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
	double get_ratio;
	const char *gen_str;
	struct gen_params gen;
	int multiget;
	int warmup;
	int verify;
	double interval;
	const char *json;
	int quiet;
	uint64_t seed;
	double connect_timeout;
};

static struct config cfg;

/* ----------------------------------------------------------------- state */

struct stats {
	uint64_t ops, gets, sets, hits, misses;
	uint64_t errors, verify_errors, conn_errors;
};

enum { OP_GET, OP_SET };

struct req {
	int64_t t_start;	/* intended (open loop) or actual send time */
	uint32_t key_off;	/* first key in the connection's key ring */
	uint16_t nkeys;
	uint16_t next;		/* next key a VALUE may answer */
	uint16_t hits;
	uint8_t op;
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
	int64_t interval_ns;	/* open loop: per connection */
	uint64_t quota;		/* requests left to issue, UINT64_MAX = no limit */
	uint64_t outstanding;
	int phase;
	uint64_t wu_next, wu_end;
	int64_t t_end;		/* when this thread stopped */
	pthread_mutex_t lock;	/* guards st and hist against the reporter */
	struct stats st;
	struct hist hist;
	atomic_int done;
};

static struct thread *threads;
static atomic_int g_stop;
static atomic_int g_phase;
static atomic_llong g_t0;
static atomic_ullong g_warm_done;
static atomic_int g_verify_logged;
static atomic_int g_proto_logged;
static atomic_int g_server_logged;
static atomic_int g_conn_logged;
static atomic_int g_connected;	/* some connection was established */

/* ----------------------------------------------------------------- utils */

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("loadgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see loadgen --help)\n", stderr);
	exit(EX_USAGE);
}

static void die(const char *fmt, ...)
{
	va_list ap;

	fputs("loadgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

static void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		die("out of memory");
	return p;
}

static void *xcalloc(size_t a, size_t b)
{
	void *p = calloc(a, b);

	if (!p)
		die("out of memory");
	return p;
}

/* Log a line of a reply once per category, with non-printables escaped. */
static void log_line_once(atomic_int *flag, const char *what,
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

static size_t u64_to_str(char *p, uint64_t v)
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

static size_t key_str(char *p, uint64_t k)
{
	memcpy(p, cfg.prefix, cfg.prefixlen);
	return cfg.prefixlen + u64_to_str(p + cfg.prefixlen, k);
}

/* ------------------------------------------------------------ connection */

static void conn_epoll(struct conn *c, int op, int out)
{
	struct epoll_event ev = { .events = EPOLLIN | (out ? EPOLLOUT : 0),
				  .data.ptr = c };

	if (epoll_ctl(c->t->epfd, op, c->fd, &ev) && op != EPOLL_CTL_DEL)
		die("epoll_ctl: %s", strerror(errno));
	c->epout = out;
}

static void conn_fail(struct conn *c, const char *why, int err, int64_t now)
{
	struct thread *t = c->t;

	if (!atomic_exchange(&g_conn_logged, 1))
		fprintf(stderr, "loadgen: %s %s: %s (counted, retrying with back-off; logged once)\n",
			why, cfg.server, err ? strerror(err) : "closed by server");
	t->st.conn_errors++;
	/* requests in flight are lost */
	t->st.errors += c->rcount;
	if (t->phase == PH_WARMUP)
		atomic_fetch_add_explicit(&g_warm_done, c->rcount,
					  memory_order_relaxed);
	t->outstanding -= c->rcount;
	c->rcount = 0;
	c->rhead = 0;
	c->in_len = 0;
	c->out_off = c->out_len = 0;
	if (c->fd >= 0) {
		epoll_ctl(t->epfd, EPOLL_CTL_DEL, c->fd, NULL);
		close(c->fd);
		c->fd = -1;
	}
	c->state = CS_DOWN;
	c->retry_at = now + c->backoff;
	c->backoff *= 2;
	if (c->backoff > BACKOFF_MAX_NS)
		c->backoff = BACKOFF_MAX_NS;
}

static void conn_start(struct conn *c, int64_t now)
{
	int one = 1;
	int fd = socket(cfg.addr.ss_family,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		c->fd = -1;
		conn_fail(c, "socket", errno, now);
		return;
	}
	if (cfg.addr.ss_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->fd = fd;
	if (connect(fd, (struct sockaddr *)&cfg.addr, cfg.addrlen) == 0) {
		c->state = CS_UP;
		atomic_store_explicit(&g_connected, 1, memory_order_relaxed);
		conn_epoll(c, EPOLL_CTL_ADD, 0);
	} else if (errno == EINPROGRESS || errno == EAGAIN) {
		c->state = CS_CONNECTING;
		conn_epoll(c, EPOLL_CTL_ADD, 1);
	} else {
		conn_fail(c, "connect", errno, now);
	}
}

static void out_reserve(struct conn *c, size_t n)
{
	if (c->out_len + n <= c->out_cap)
		return;
	if (c->out_off) {
		memmove(c->out, c->out + c->out_off, c->out_len - c->out_off);
		c->out_len -= c->out_off;
		c->out_off = 0;
		if (c->out_len + n <= c->out_cap)
			return;
	}
	while (c->out_len + n > c->out_cap)
		c->out_cap *= 2;
	c->out = xrealloc(c->out, c->out_cap);
}

static uint64_t pick_key(struct thread *t)
{
	if (cfg.zipf)
		return zipf_sample(&t->zipf, &t->rng) - 1;
	return rng_below(&t->rng, cfg.keys);
}

static void put_set(struct conn *c, uint64_t k)
{
	char key[MAX_KEY + 24];
	size_t kl = key_str(key, k);
	uint32_t vl = gen_value_len(&cfg.gen, key, kl);
	char *p;

	out_reserve(c, kl + 40 + vl);
	p = c->out + c->out_len;
	memcpy(p, "set ", 4);
	p += 4;
	memcpy(p, key, kl);
	p += kl;
	memcpy(p, " 0 0 ", 5);
	p += 5;
	p += u64_to_str(p, vl);
	*p++ = '\r';
	*p++ = '\n';
	gen_value_fill(&cfg.gen, key, kl, 0, p, vl);
	p += vl;
	*p++ = '\r';
	*p++ = '\n';
	c->out_len = (size_t)(p - c->out);
}

/* Queue one request on c (the caller checked that there is room). */
static void issue(struct conn *c, int op, int64_t t_start, uint64_t setkey)
{
	struct thread *t = c->t;
	struct req *r = &c->reqs[(c->rhead + c->rcount) % c->rcap];

	r->t_start = t_start;
	r->key_off = c->ktail;
	r->next = 0;
	r->hits = 0;
	r->op = (uint8_t)op;
	if (op == OP_SET) {
		r->nkeys = 1;
		c->keyring[c->ktail] = setkey;
		c->ktail = (c->ktail + 1) % c->kcap;
		put_set(c, setkey);
	} else {
		char *p;

		r->nkeys = (uint16_t)cfg.multiget;
		out_reserve(c, 8 + (size_t)cfg.multiget * (cfg.prefixlen + 22));
		p = c->out + c->out_len;
		memcpy(p, "get", 3);
		p += 3;
		for (int i = 0; i < cfg.multiget; i++) {
			uint64_t k = pick_key(t);

			c->keyring[c->ktail] = k;
			c->ktail = (c->ktail + 1) % c->kcap;
			*p++ = ' ';
			p += key_str(p, k);
		}
		*p++ = '\r';
		*p++ = '\n';
		c->out_len = (size_t)(p - c->out);
	}
	c->rcount++;
	t->outstanding++;
}

static void issue_run(struct conn *c, int64_t t_start)
{
	struct thread *t = c->t;
	int op = OP_GET;

	if (cfg.get_ratio < 1.0 && rng_double(&t->rng) >= cfg.get_ratio)
		op = OP_SET;
	issue(c, op, t_start, op == OP_SET ? pick_key(t) : 0);
	if (t->quota != UINT64_MAX)
		t->quota--;
}

/* Put as many requests on c as its mode allows right now. */
static void conn_fill(struct conn *c, int64_t now)
{
	struct thread *t = c->t;

	if (c->state != CS_UP)
		return;
	if (t->phase == PH_WARMUP) {
		while (c->rcount < c->rcap && c->rcount < WARMUP_DEPTH &&
		       t->wu_next < t->wu_end) {
			issue(c, OP_SET, now, t->wu_next);
			t->wu_next++;
		}
		return;
	}
	if (t->phase != PH_RUN)
		return;
	if (cfg.rate > 0) {
		while (c->rcount < (unsigned)cfg.pipeline && t->quota &&
		       c->next_send <= now) {
			issue_run(c, c->next_send);
			c->next_send += t->interval_ns;
		}
	} else {
		while (c->rcount < (unsigned)cfg.pipeline && t->quota)
			issue_run(c, now);
	}
}

static void conn_flush(struct conn *c, int64_t now)
{
	while (c->out_off < c->out_len) {
		ssize_t n = send(c->fd, c->out + c->out_off,
				 c->out_len - c->out_off, MSG_NOSIGNAL);

		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN) {
				if (!c->epout)
					conn_epoll(c, EPOLL_CTL_MOD, 1);
				return;
			}
			conn_fail(c, "send to", errno, now);
			return;
		}
		c->out_off += (size_t)n;
	}
	c->out_off = c->out_len = 0;
	if (c->epout)
		conn_epoll(c, EPOLL_CTL_MOD, 0);
}

static void verify_fail(struct thread *t, const struct proto_reply *pr,
			const char *what, long off)
{
	int n;

	t->st.verify_errors++;
	n = atomic_fetch_add(&g_verify_logged, 1);
	if (n < VERIFY_LOG_MAX) {
		fprintf(stderr, "loadgen: verify: key %.*s: %s", (int)pr->keylen,
			pr->key, what);
		if (off >= 0)
			fprintf(stderr, " at offset %ld (length %zu, expected %u)",
				off, pr->datalen,
				gen_value_len(&cfg.gen, pr->key, pr->keylen));
		else
			fprintf(stderr, " %u, expected 0", pr->flags);
		fputc('\n', stderr);
	} else if (n == VERIFY_LOG_MAX) {
		fprintf(stderr, "loadgen: verify: further mismatches are counted, not shown\n");
	}
}

/* Does the key in a VALUE line equal key index k? */
static int key_is(const struct proto_reply *pr, uint64_t k)
{
	char key[MAX_KEY + 24];
	size_t kl = key_str(key, k);

	return kl == pr->keylen && !memcmp(key, pr->key, kl);
}

static void req_done(struct conn *c, struct req *r, int64_t now, int ok)
{
	struct thread *t = c->t;

	c->rhead = (c->rhead + 1) % c->rcap;
	c->rcount--;
	t->outstanding--;
	if (t->phase == PH_WARMUP) {
		atomic_fetch_add_explicit(&g_warm_done, 1, memory_order_relaxed);
		if (!ok)
			t->st.errors++;
		return;
	}
	if (!ok) {
		t->st.errors++;
		return;
	}
	t->st.ops++;
	if (r->op == OP_GET) {
		t->st.gets++;
		t->st.hits += r->hits;
		t->st.misses += (uint64_t)(r->nkeys - r->hits);
	} else {
		t->st.sets++;
	}
	hist_record(&t->hist, now - r->t_start);
	c->backoff = BACKOFF_MIN_NS;
}

/* Handle one reply element; returns -1 when the stream is out of step. */
static int handle_reply(struct conn *c, const struct proto_reply *pr, int64_t now)
{
	struct thread *t = c->t;
	struct req *r;

	if (pr->kind == PR_MALFORMED) {
		log_line_once(&g_proto_logged, "malformed reply", pr->line, pr->linelen);
		return -1;
	}
	if (!c->rcount) {
		log_line_once(&g_proto_logged, "unexpected reply (nothing pending)",
			      pr->line, pr->linelen);
		return -1;
	}
	r = &c->reqs[c->rhead];
	switch (pr->kind) {
	case PR_VALUE:
		if (r->op != OP_GET)
			break;
		while (r->next < r->nkeys &&
		       !key_is(pr, c->keyring[(r->key_off + r->next) % c->kcap]))
			r->next++;
		if (r->next == r->nkeys) {
			log_line_once(&g_proto_logged, "reply for a key not requested",
				      pr->line, pr->linelen);
			return -1;
		}
		r->next++;
		r->hits++;
		if (cfg.verify && t->phase == PH_RUN) {
			long off = gen_value_check(&cfg.gen, pr->key, pr->keylen,
						   pr->data, pr->datalen);
			if (off >= 0) {
				size_t want = gen_value_len(&cfg.gen, pr->key, pr->keylen);
				size_t n = pr->datalen < want ? pr->datalen : want;

				verify_fail(t, pr, pr->datalen != want && (size_t)off == n ?
					    "wrong length" : "wrong byte", off);
			}
			else if (pr->flags != 0)
				verify_fail(t, pr, "flags", -1);
		}
		return 0;
	case PR_END:
		if (r->op != OP_GET)
			break;
		req_done(c, r, now, 1);
		return 0;
	case PR_STORED:
		if (r->op != OP_SET)
			break;
		req_done(c, r, now, 1);
		return 0;
	case PR_NOT_STORED:
	case PR_EXISTS:
	case PR_NOT_FOUND:
		if (r->op != OP_SET)
			break;
		log_line_once(&g_server_logged, "set not stored", pr->line, pr->linelen);
		req_done(c, r, now, 0);
		return 0;
	case PR_ERROR:
	case PR_CLIENT_ERROR:
	case PR_SERVER_ERROR:
		log_line_once(&g_server_logged, "error reply", pr->line, pr->linelen);
		req_done(c, r, now, 0);
		return 0;
	default:
		break;
	}
	log_line_once(&g_proto_logged, "unexpected reply", pr->line, pr->linelen);
	return -1;
}

static void conn_read(struct conn *c, int64_t now)
{
	size_t off = 0;

	for (;;) {
		ssize_t n;

		if (c->in_len == c->in_cap) {
			c->in_cap *= 2;
			c->in = xrealloc(c->in, c->in_cap);
		}
		n = recv(c->fd, c->in + c->in_len, c->in_cap - c->in_len, 0);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			if (errno == EAGAIN)
				return;
			conn_fail(c, "recv from", errno, now);
			return;
		}
		if (n == 0) {
			conn_fail(c, "connection to", 0, now);
			return;
		}
		c->in_len += (size_t)n;
		break;
	}
	while (off < c->in_len) {
		struct proto_reply pr;
		size_t used = proto_parse(c->in + off, c->in_len - off,
					  GEN_MAX_SIZE, &pr);

		if (!used)
			break;
		if (handle_reply(c, &pr, now)) {
			/*
			 * The stream is out of step: the pending requests are
			 * counted as errors when the connection is dropped; a
			 * reply with nothing pending is one error of its own.
			 */
			if (!c->rcount)
				c->t->st.errors++;
			conn_fail(c, "protocol error on", EPROTO, now);
			return;
		}
		off += used;
	}
	if (off) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
}

static void conn_event(struct conn *c, uint32_t ev, int64_t now)
{
	if (c->state == CS_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
			conn_fail(c, "connect", err ? err : errno, now);
			return;
		}
		c->state = CS_UP;
		atomic_store_explicit(&g_connected, 1, memory_order_relaxed);
		conn_epoll(c, EPOLL_CTL_MOD, 0);
	}
	if (ev & (EPOLLIN | EPOLLERR | EPOLLHUP)) {
		conn_read(c, now);
		if (c->state != CS_UP)
			return;
	}
	/*
	 * The next request goes out at once.  (Holding the sends until the
	 * whole epoll batch had been read measured slower when the host is
	 * busy: a thread preempted mid-batch then holds back every send.)
	 */
	conn_fill(c, now);
	if (c->state == CS_UP && c->out_len > c->out_off)
		conn_flush(c, now);
}

/* ---------------------------------------------------------------- thread */

static void timer_arm(struct thread *t, int64_t when)
{
	struct itimerspec its = { 0 };

	if (when == t->timer_armed)
		return;
	t->timer_armed = when;
	if (when != INT64_MAX) {
		if (when <= 0)
			when = 1;
		its.it_value.tv_sec = when / 1000000000LL;
		its.it_value.tv_nsec = when % 1000000000LL;
	}
	timerfd_settime(t->tfd, TFD_TIMER_ABSTIME, &its, NULL);
}

static void thread_start_run(struct thread *t)
{
	int64_t t0 = atomic_load(&g_t0);
	int total = cfg.threads * cfg.conns;

	t->phase = PH_RUN;
	for (int i = 0; i < t->nconns; i++) {
		int g = t->id * cfg.conns + i;

		/* spread the connections' schedules over one period */
		t->conns[i].next_send = t0 + t->interval_ns * g / total;
	}
}

static void *thread_main(void *arg)
{
	struct thread *t = arg;
	struct epoll_event evs[256];
	int64_t t_stop = INT64_MAX;

	for (int i = 0; i < t->nconns; i++)
		conn_start(&t->conns[i], now_ns());
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		int64_t now = now_ns(), wake = INT64_MAX;
		int n, timeout_ms = 100;

		pthread_mutex_lock(&t->lock);
		if (t->phase == PH_WARMUP && t->wu_next >= t->wu_end &&
		    !t->outstanding)
			t->phase = PH_WAIT;
		if (t->phase == PH_WAIT && atomic_load(&g_phase) == PH_RUN) {
			thread_start_run(t);
			if (cfg.duration > 0)
				t_stop = atomic_load(&g_t0) +
					 (int64_t)(cfg.duration * 1e9);
		}
		if (t->phase == PH_RUN) {
			if (now >= t_stop) {
				t->t_end = t_stop;
				pthread_mutex_unlock(&t->lock);
				break;
			}
			if (!t->quota && !t->outstanding) {
				t->t_end = now;
				pthread_mutex_unlock(&t->lock);
				break;
			}
		}
		for (int i = 0; i < t->nconns; i++) {
			struct conn *c = &t->conns[i];

			if (c->state == CS_DOWN) {
				if (now >= c->retry_at)
					conn_start(c, now);
				else if (c->retry_at < wake)
					wake = c->retry_at;
			}
			if (c->state == CS_UP) {
				conn_fill(c, now);
				if (c->out_len > c->out_off)
					conn_flush(c, now);
				if (cfg.rate > 0 && t->phase == PH_RUN &&
				    c->state == CS_UP && t->quota &&
				    c->rcount < (unsigned)cfg.pipeline &&
				    c->next_send < wake)
					wake = c->next_send;
			}
		}
		pthread_mutex_unlock(&t->lock);
		if (t_stop < wake)
			wake = t_stop;
		if (wake != INT64_MAX && wake - now < 100 * 1000000LL) {
			/* precise wake-up through the timerfd */
			timer_arm(t, wake);
		}
		n = epoll_wait(t->epfd, evs, 256, timeout_ms);
		if (n < 0) {
			if (errno == EINTR)
				continue;
			die("epoll_wait: %s", strerror(errno));
		}
		now = now_ns();
		pthread_mutex_lock(&t->lock);
		for (int i = 0; i < n; i++) {
			if (!evs[i].data.ptr) {
				uint64_t x;

				if (read(t->tfd, &x, sizeof(x)) < 0 && errno != EAGAIN)
					die("timerfd: %s", strerror(errno));
				t->timer_armed = 0;
				continue;
			}
			if (evs[i].data.ptr == t) {
				uint64_t x;

				if (read(t->wakefd, &x, sizeof(x)) < 0 && errno != EAGAIN)
					die("eventfd: %s", strerror(errno));
				continue;
			}
			conn_event(evs[i].data.ptr, evs[i].events, now);
		}
		pthread_mutex_unlock(&t->lock);
	}
	if (!t->t_end)
		t->t_end = now_ns();
	atomic_store(&t->done, 1);
	return NULL;
}

/* Make a thread leave epoll_wait and look at the phase again. */
static void thread_wake(struct thread *t)
{
	uint64_t one = 1;

	if (write(t->wakefd, &one, sizeof(one)) < 0 && errno != EAGAIN)
		die("eventfd: %s", strerror(errno));
}

static void thread_init(struct thread *t, int id)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };
	unsigned rcap = (unsigned)cfg.pipeline;

	if (rcap < WARMUP_DEPTH)
		rcap = WARMUP_DEPTH;
	t->id = id;
	t->epfd = epoll_create1(EPOLL_CLOEXEC);
	t->tfd = timerfd_create(CLOCK_MONOTONIC, TFD_NONBLOCK | TFD_CLOEXEC);
	if (t->epfd < 0 || t->tfd < 0)
		die("epoll/timerfd: %s", strerror(errno));
	if (epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->tfd, &ev))
		die("epoll_ctl: %s", strerror(errno));
	t->wakefd = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
	ev.data.ptr = t;
	if (t->wakefd < 0 || epoll_ctl(t->epfd, EPOLL_CTL_ADD, t->wakefd, &ev))
		die("eventfd: %s", strerror(errno));
	t->timer_armed = INT64_MAX;
	rng_seed(&t->rng, cfg.seed * 1000003 + (uint64_t)id + 1);
	if (cfg.zipf)
		zipf_init(&t->zipf, cfg.keys, cfg.zipf_s);
	if (cfg.rate > 0)
		t->interval_ns = (int64_t)(1e9 * cfg.threads * cfg.conns / cfg.rate);
	if (t->interval_ns < 1)
		t->interval_ns = 1;
	t->quota = UINT64_MAX;
	if (cfg.ops)
		t->quota = cfg.ops / (uint64_t)cfg.threads +
			   ((uint64_t)id < cfg.ops % (uint64_t)cfg.threads);
	t->phase = cfg.warmup ? PH_WARMUP : PH_WAIT;
	t->wu_next = cfg.keys * (uint64_t)id / (uint64_t)cfg.threads;
	t->wu_end = cfg.keys * (uint64_t)(id + 1) / (uint64_t)cfg.threads;
	pthread_mutex_init(&t->lock, NULL);
	hist_init(&t->hist);
	t->nconns = cfg.conns;
	t->conns = xcalloc((size_t)cfg.conns, sizeof(*t->conns));
	for (int i = 0; i < cfg.conns; i++) {
		struct conn *c = &t->conns[i];

		c->t = t;
		c->fd = -1;
		c->state = CS_DOWN;
		c->in_cap = 64 * 1024;
		c->in = xrealloc(NULL, c->in_cap);
		c->out_cap = 16 * 1024;
		c->out = xrealloc(NULL, c->out_cap);
		c->rcap = rcap;
		c->reqs = xcalloc(rcap, sizeof(*c->reqs));
		c->kcap = rcap * (unsigned)(cfg.multiget > 1 ? cfg.multiget : 1);
		c->keyring = xcalloc(c->kcap, sizeof(*c->keyring));
		c->backoff = BACKOFF_MIN_NS;
	}
}

/* -------------------------------------------------------------- reporting */

static void stats_add(struct stats *a, const struct stats *b)
{
	a->ops += b->ops;
	a->gets += b->gets;
	a->sets += b->sets;
	a->hits += b->hits;
	a->misses += b->misses;
	a->errors += b->errors;
	a->verify_errors += b->verify_errors;
	a->conn_errors += b->conn_errors;
}

/* Move every thread's counters and histogram into st/h (merged). */
static void collect(struct stats *st, struct hist *h)
{
	memset(st, 0, sizeof(*st));
	hist_reset(h);
	for (int i = 0; i < cfg.threads; i++) {
		struct thread *t = &threads[i];

		pthread_mutex_lock(&t->lock);
		stats_add(st, &t->st);
		memset(&t->st, 0, sizeof(t->st));
		hist_merge(h, &t->hist);
		hist_reset(&t->hist);
		pthread_mutex_unlock(&t->lock);
	}
}

static double us(int64_t ns)
{
	return (double)ns / 1000.0;
}

static void print_interval_json(double t, double secs, const struct stats *s,
				const struct hist *h)
{
	printf("{\"t\":%.3f,\"ops\":%llu,\"ops_per_s\":%.1f,\"gets\":%llu,"
	       "\"sets\":%llu,\"hits\":%llu,\"misses\":%llu,\"errors\":%llu,"
	       "\"verify_errors\":%llu,\"conn_errors\":%llu,"
	       "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,"
	       "\"p999_us\":%.1f,\"max_us\":%.1f}\n",
	       t, (unsigned long long)s->ops, secs > 0 ? (double)s->ops / secs : 0,
	       (unsigned long long)s->gets, (unsigned long long)s->sets,
	       (unsigned long long)s->hits, (unsigned long long)s->misses,
	       (unsigned long long)s->errors,
	       (unsigned long long)s->verify_errors,
	       (unsigned long long)s->conn_errors,
	       us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
	       us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)),
	       us(h->max));
	fflush(stdout);
}

static void print_progress(double t, double secs, const struct stats *s,
			   const struct hist *h)
{
	fprintf(stderr, "\r[%6.1fs] %10.0f ops/s  hits %llu  misses %llu  errors %llu"
		"  p99 %.1f us   ",
		t, secs > 0 ? (double)s->ops / secs : 0,
		(unsigned long long)s->hits, (unsigned long long)s->misses,
		(unsigned long long)(s->errors + s->verify_errors),
		us(hist_percentile(h, 99)));
}

static double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 32)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

static void write_json(const char *path, double secs, double cpu,
		       const struct stats *s, const struct hist *h, int interrupted)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno));
		return;
	}
	fputs("{\"config\":{\"server\":", f);
	json_str(f, cfg.server);
	fprintf(f, ",\"threads\":%d,\"conns\":%d,\"pipeline\":%d,\"rate\":%.1f,"
		"\"duration\":%.3f,\"ops\":%llu,\"keys\":%llu,\"key_prefix\":",
		cfg.threads, cfg.conns, cfg.pipeline, cfg.rate, cfg.duration,
		(unsigned long long)cfg.ops, (unsigned long long)cfg.keys);
	json_str(f, cfg.prefix);
	fprintf(f, ",\"dist\":\"%s\",\"zipf_s\":%.4f,\"get_ratio\":%.4f,\"gen\":",
		cfg.zipf ? "zipf" : "uniform", cfg.zipf ? cfg.zipf_s : 0.0,
		cfg.get_ratio);
	json_str(f, cfg.gen_str ? cfg.gen_str : "");
	fprintf(f, ",\"multiget\":%d,\"warmup\":%s,\"verify\":%s},",
		cfg.multiget, cfg.warmup ? "true" : "false",
		cfg.verify ? "true" : "false");
	fprintf(f, "\"interrupted\":%s,\"duration_s\":%.3f,\"ops\":%llu,"
		"\"ops_per_s\":%.1f,\"gets\":%llu,\"sets\":%llu,\"hits\":%llu,"
		"\"misses\":%llu,\"errors\":%llu,\"verify_errors\":%llu,"
		"\"conn_errors\":%llu,\"p50_us\":%.1f,\"p90_us\":%.1f,"
		"\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f,"
		"\"mean_us\":%.1f,\"cpu_s\":%.3f,\"cpu_ms_per_1000\":%.4f,"
		"\"histogram\":",
		interrupted ? "true" : "false", secs, (unsigned long long)s->ops,
		secs > 0 ? (double)s->ops / secs : 0,
		(unsigned long long)s->gets, (unsigned long long)s->sets,
		(unsigned long long)s->hits, (unsigned long long)s->misses,
		(unsigned long long)s->errors,
		(unsigned long long)s->verify_errors,
		(unsigned long long)s->conn_errors,
		us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
		us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)),
		us(h->max), us((int64_t)hist_mean(h)), cpu,
		s->ops ? cpu * 1e6 / (double)s->ops : 0);
	hist_write_json(h, f);
	fputs("}\n", f);
	if (fclose(f))
		fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno));
}

static void print_summary(FILE *f, double secs, double cpu, const struct stats *s,
			  const struct hist *h, int interrupted)
{
	uint64_t keys = s->hits + s->misses;

	fprintf(f, "server      %s  (%d threads x %d conns, pipeline %d, %s)\n",
	       cfg.server, cfg.threads, cfg.conns, cfg.pipeline,
	       cfg.rate > 0 ? "open loop" : "closed loop");
	if (cfg.rate > 0)
		fprintf(f, "rate        %.1f ops/s offered\n", cfg.rate);
	fprintf(f, "duration    %.3f s%s\n", secs, interrupted ? "  (interrupted)" : "");
	fprintf(f, "ops         %llu  (%.1f ops/s)  gets %llu  sets %llu\n",
	       (unsigned long long)s->ops, secs > 0 ? (double)s->ops / secs : 0,
	       (unsigned long long)s->gets, (unsigned long long)s->sets);
	fprintf(f, "hits        %llu  (%.1f%%)  misses %llu\n",
	       (unsigned long long)s->hits,
	       keys ? 100.0 * (double)s->hits / (double)keys : 0.0,
	       (unsigned long long)s->misses);
	fprintf(f, "errors      %llu  verify_errors %llu  conn_errors %llu\n",
	       (unsigned long long)s->errors,
	       (unsigned long long)s->verify_errors,
	       (unsigned long long)s->conn_errors);
	fprintf(f, "latency us  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
	       us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
	       us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)),
	       us(h->max));
	fprintf(f, "cpu         %.3f s  (%.4f ms per 1000 requests)\n", cpu,
	       s->ops ? cpu * 1e6 / (double)s->ops : 0);
	fflush(f);
}

/* ---------------------------------------------------------------- options */

static const char usage_text[] =
"Usage: loadgen [OPTIONS]\n"
"Load generator for the memcached text protocol (get, multi-get, set).\n"
"\n"
"Target:\n"
"  -s, --server ADDR      HOST:PORT, [IPV6]:PORT or a unix socket path\n"
"                         (anything containing '/'); default 127.0.0.1:11211\n"
"Load:\n"
"  -t, --threads N        load threads, each with its own event loop (1)\n"
"  -c, --conns N          connections per thread (10)\n"
"  -p, --pipeline N       requests in flight per connection (1)\n"
"  -r, --rate OPS         open loop: total requests per second, sent on a\n"
"                         fixed schedule; latency counts from the intended\n"
"                         send time.  0 or absent: closed loop\n"
"  -d, --duration S       run for S seconds (default 10 unless --ops)\n"
"  -n, --ops N            stop after N requests in total\n"
"Keys and values:\n"
"  -k, --keys N           key space size (100000); keys are PREFIX0..PREFIX(N-1)\n"
"      --key-prefix P     key prefix (\"key:\")\n"
"      --dist D           key popularity: uniform or zipf:S, S > 0 (uniform);\n"
"                         with zipf, PREFIX0 is the most popular key\n"
"      --get-ratio F      fraction of requests that are gets, 0..1 (0.9)\n"
"      --ratio G:S        the same as gets:sets, e.g. 9:1\n"
"  -m, --multiget N       keys per get request, 1..100 (1)\n"
"  -g, --gen OPTIONS      value formula options, the same string as the\n"
"                         daemon's --origin gen:OPTIONS: size=N|MIN-MAX,\n"
"                         cost=US, seed=N (size=100).  Sets store these\n"
"                         values with flags 0\n"
"  -w, --warmup           first set every key once (with progress), then run\n"
"  -V, --verify           check every byte of every hit against the formula;\n"
"                         mismatches are counted, shown with their key and\n"
"                         make the exit status 1\n"
"      --seed N           seed of the key and operation choices (1)\n"
"      --connect-timeout S  give up when no connection has succeeded after\n"
"                         S seconds (10; 0 = keep retrying for ever).  Once\n"
"                         one has, failures are always retried\n"
"Output:\n"
"  -i, --interval S       print one JSON line per S seconds on stdout; the\n"
"                         summary then goes to stderr\n"
"  -j, --json FILE        write the final summary with the full histogram\n"
"  -q, --quiet            no progress line, no warm-up line, no summary\n"
"  -h, --help             this text\n"
"\n"
"A progress line is shown on stderr when it is a terminal.  Ctrl-C stops\n"
"the run and prints the summary of what ran.\n"
"Exit status: 0 ok, 1 verify errors (or a fatal error), 2 no request\n"
"completed, 64 bad arguments.\n";

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

static void parse_server(const char *s)
{
	if (strchr(s, '/')) {
		struct sockaddr_un *un = (struct sockaddr_un *)&cfg.addr;

		if (strlen(s) >= sizeof(un->sun_path))
			die_usage("--server: unix socket path too long");
		un->sun_family = AF_UNIX;
		strcpy(un->sun_path, s);
		cfg.addrlen = sizeof(*un);
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
		memcpy(&cfg.addr, ai->ai_addr, ai->ai_addrlen);
		cfg.addrlen = ai->ai_addrlen;
		freeaddrinfo(ai);
	}
}

enum {
	O_PREFIX = 256, O_DIST, O_GET_RATIO, O_RATIO, O_SEED, O_CONNECT_TIMEOUT,
};

static const struct option long_opts[] = {
	{ "server", required_argument, NULL, 's' },
	{ "threads", required_argument, NULL, 't' },
	{ "conns", required_argument, NULL, 'c' },
	{ "pipeline", required_argument, NULL, 'p' },
	{ "rate", required_argument, NULL, 'r' },
	{ "duration", required_argument, NULL, 'd' },
	{ "ops", required_argument, NULL, 'n' },
	{ "keys", required_argument, NULL, 'k' },
	{ "key-prefix", required_argument, NULL, O_PREFIX },
	{ "dist", required_argument, NULL, O_DIST },
	{ "get-ratio", required_argument, NULL, O_GET_RATIO },
	{ "ratio", required_argument, NULL, O_RATIO },
	{ "multiget", required_argument, NULL, 'm' },
	{ "gen", required_argument, NULL, 'g' },
	{ "warmup", no_argument, NULL, 'w' },
	{ "verify", no_argument, NULL, 'V' },
	{ "seed", required_argument, NULL, O_SEED },
	{ "connect-timeout", required_argument, NULL, O_CONNECT_TIMEOUT },
	{ "interval", required_argument, NULL, 'i' },
	{ "json", required_argument, NULL, 'j' },
	{ "quiet", no_argument, NULL, 'q' },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void parse_args(int argc, char **argv)
{
	int opt;
	int have_duration = 0;
	char err[256];

	cfg.server = "127.0.0.1:11211";
	cfg.threads = 1;
	cfg.conns = 10;
	cfg.pipeline = 1;
	cfg.keys = 100000;
	cfg.prefix = "key:";
	cfg.get_ratio = 0.9;
	cfg.multiget = 1;
	cfg.seed = 1;
	cfg.connect_timeout = 10;
	gen_defaults(&cfg.gen);
	opterr = 0;
	while ((opt = getopt_long(argc, argv, ":s:t:c:p:r:d:n:k:m:g:wVi:j:qh",
				  long_opts, NULL)) != -1) {
		switch (opt) {
		case 's':
			cfg.server = optarg;
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
		case O_PREFIX:
			cfg.prefix = optarg;
			for (const char *p = optarg; *p; p++)
				if ((unsigned char)*p <= ' ' || *p == 127)
					die_usage("--key-prefix: no spaces or control characters");
			if (strlen(optarg) > MAX_KEY - 20)
				die_usage("--key-prefix: longer than %d bytes", MAX_KEY - 20);
			break;
		case O_DIST:
			if (!strcmp(optarg, "uniform")) {
				cfg.zipf = 0;
			} else if (!strncmp(optarg, "zipf:", 5)) {
				cfg.zipf = 1;
				cfg.zipf_s = parse_double("--dist zipf:S", optarg + 5,
							  1e-6, 100);
			} else {
				die_usage("--dist: expected uniform or zipf:S, got '%s'", optarg);
			}
			break;
		case O_GET_RATIO:
			cfg.get_ratio = parse_double("--get-ratio", optarg, 0, 1);
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
			cfg.get_ratio = g / (g + s);
			break;
		}
		case 'm':
			cfg.multiget = (int)parse_uint("--multiget", optarg, 1, MAX_MULTIGET);
			break;
		case 'g':
			cfg.gen_str = optarg;
			if (!strncmp(optarg, "gen:", 4))
				optarg += 4;
			if (gen_parse(optarg, &cfg.gen, err, sizeof(err)))
				die_usage("--gen: %s", err);
			break;
		case 'w':
			cfg.warmup = 1;
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
		case 'i':
			cfg.interval = parse_double("--interval", optarg, 0.01, 1e6);
			break;
		case 'j':
			cfg.json = optarg;
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
	cfg.prefixlen = strlen(cfg.prefix);
	parse_server(cfg.server);
}

/* ------------------------------------------------------------------- main */

static void on_signal(int sig)
{
	(void)sig;
	if (atomic_exchange(&g_stop, 1))
		_exit(130);
}

static void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };

	if (ns > 0)
		nanosleep(&ts, NULL);
}

static int64_t g_start;

/* Stop the run when the server was never reachable within the timeout. */
static void check_connect_timeout(int64_t now)
{
	if (cfg.connect_timeout <= 0 || atomic_load(&g_connected) ||
	    atomic_load(&g_stop) ||
	    now - g_start < (int64_t)(cfg.connect_timeout * 1e9))
		return;
	fprintf(stderr, "loadgen: no connection to %s within %g s, giving up\n",
		cfg.server, cfg.connect_timeout);
	atomic_store(&g_stop, 1);
}

static int all_done(void)
{
	for (int i = 0; i < cfg.threads; i++)
		if (!atomic_load(&threads[i].done))
			return 0;
	return 1;
}

static void do_warmup(int tty)
{
	int64_t start = now_ns(), next = start + 200000000LL;
	struct stats st;
	struct hist *h = xcalloc(1, sizeof(*h));

	for (;;) {
		int waiting = 0;

		for (int i = 0; i < cfg.threads; i++) {
			struct thread *t = &threads[i];

			pthread_mutex_lock(&t->lock);
			waiting += t->phase == PH_WAIT;
			pthread_mutex_unlock(&t->lock);
		}
		if (waiting == cfg.threads || atomic_load(&g_stop))
			break;
		check_connect_timeout(now_ns());
		if (tty && now_ns() >= next) {
			unsigned long long d = atomic_load(&g_warm_done);

			fprintf(stderr, "\rwarmup: %llu/%llu keys (%.0f%%)   ", d,
				(unsigned long long)cfg.keys,
				100.0 * (double)d / (double)cfg.keys);
			next += 200000000LL;
		}
		sleep_ns(10000000LL);
	}
	collect(&st, h);
	if (tty)
		fputs("\r\033[K", stderr);
	if (!cfg.quiet)
		fprintf(stderr, "warmup: %llu keys set in %.2f s, %llu errors%s\n",
			(unsigned long long)atomic_load(&g_warm_done),
			(double)(now_ns() - start) / 1e9,
			(unsigned long long)st.errors,
			atomic_load(&g_stop) ? " (interrupted)" : "");
	free(h);
}

int main(int argc, char **argv)
{
	struct sigaction sa = { 0 };
	struct stats total = { 0 }, ivl = { 0 }, prog = { 0 }, snap;
	struct hist *h_total, *h_ivl, *h_prog, *h_snap;
	int tty, interrupted;
	int64_t t0, next_ivl, next_prog, last_ivl, last_prog, t_end = 0;
	double cpu0, secs, cpu;

	parse_args(argc, argv);
	setvbuf(stdout, NULL, _IOLBF, 0);
	tty = !cfg.quiet && isatty(2);
	sa.sa_handler = on_signal;
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	signal(SIGPIPE, SIG_IGN);

	h_total = xcalloc(1, sizeof(*h_total));
	h_ivl = xcalloc(1, sizeof(*h_ivl));
	h_prog = xcalloc(1, sizeof(*h_prog));
	h_snap = xcalloc(1, sizeof(*h_snap));
	hist_init(h_total);
	hist_init(h_ivl);
	hist_init(h_prog);
	hist_init(h_snap);

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
		if (cfg.duration > 0 && now >= t0 + (int64_t)(cfg.duration * 1e9)) {
			sleep_ns(1000000LL);
			continue;
		}
		if (now >= next_ivl || now >= next_prog) {
			collect(&snap, h_snap);
			stats_add(&total, &snap);
			hist_merge(h_total, h_snap);
			stats_add(&ivl, &snap);
			hist_merge(h_ivl, h_snap);
			stats_add(&prog, &snap);
			hist_merge(h_prog, h_snap);
			if (now >= next_ivl) {
				if (tty)
					fputs("\r\033[K", stderr);
				print_interval_json((double)(now - t0) / 1e9,
						    (double)(now - last_ivl) / 1e9,
						    &ivl, h_ivl);
				memset(&ivl, 0, sizeof(ivl));
				hist_reset(h_ivl);
				last_ivl = now;
				while (next_ivl <= now)
					next_ivl += (int64_t)(cfg.interval * 1e9);
			}
			if (now >= next_prog) {
				print_progress((double)(now - t0) / 1e9,
					       (double)(now - last_prog) / 1e9,
					       &prog, h_prog);
				memset(&prog, 0, sizeof(prog));
				hist_reset(h_prog);
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
	interrupted = atomic_load(&g_stop);
	if (interrupted || t_end < t0)
		t_end = now_ns();
	collect(&snap, h_snap);
	stats_add(&total, &snap);
	hist_merge(h_total, h_snap);
	if (tty)
		fputs("\r\033[K", stderr);
	if (cfg.interval > 0) {
		stats_add(&ivl, &snap);
		hist_merge(h_ivl, h_snap);
		/* the last, partial interval (never earlier than the one before) */
		if (ivl.ops || ivl.errors || ivl.conn_errors) {
			int64_t te = t_end > last_ivl ? t_end : last_ivl;

			print_interval_json((double)(te - t0) / 1e9,
					    (double)(te - last_ivl) / 1e9,
					    &ivl, h_ivl);
		}
	}
	secs = (double)(t_end - t0) / 1e9;
	/* with --interval, stdout carries nothing but the JSON lines */
	if (!cfg.quiet)
		print_summary(cfg.interval > 0 ? stderr : stdout, secs, cpu, &total,
			      h_total, interrupted);
	if (cfg.json)
		write_json(cfg.json, secs, cpu, &total, h_total, interrupted);
	if (total.verify_errors) {
		fprintf(stderr, "loadgen: %llu values failed verification\n",
			(unsigned long long)total.verify_errors);
		return 1;
	}
	if (!total.ops) {
		fprintf(stderr, "loadgen: no request completed\n");
		return 2;
	}
	return 0;
}
