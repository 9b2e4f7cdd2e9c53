// SPDX-License-Identifier: GPL-2.0-only
/*
 * conn.c - one connection: writing requests, reading and checking replies.
 *
 * A connection owns an output buffer of requests not yet sent, an input
 * buffer of reply bytes not yet parsed, and a ring of the requests in
 * flight (with a ring of the keys they asked for), answered in order as the
 * protocol requires.  Every reply is matched against the oldest request in
 * flight; a reply that does not fit it puts the stream out of step, and the
 * connection is closed and reopened (conn_fail), its requests counted as
 * errors, with their wait until then in the histogram like an error
 * reply's.  Refused or dropped connections are retried after a back-off.
 *
 * Nothing here blocks and nothing is shared with other threads except the
 * log-once flags: the caller holds its thread's lock.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include "conn.h"
#include "options.h"
#include "proto.h"
#include "tally.h"
#include "thread.h"
#include "util.h"

#define WARMUP_DEPTH 16		/* warm-up sets in flight per connection */
#define BACKOFF_MIN_NS (10 * 1000000LL)
#define BACKOFF_MAX_NS (1000 * 1000000LL)
#define VERIFY_LOG_MAX 10	/* mismatches shown */

atomic_int g_connected;
atomic_int g_settled;
atomic_ullong g_warm_done;
/* Each kind of trouble is logged once per process. */
static atomic_int g_verify_logged;
static atomic_int g_proto_logged;
static atomic_int g_server_logged;
static atomic_int g_conn_logged;

static void count_error(struct conn *c, const struct req *r, int64_t now);

/*
 * Key index k as text: PREFIX and the decimal index.  With --key-size the
 * key is padded with "-xxx..." to a length drawn from k (so a key always
 * has the same length), never shorter than PREFIX and the index.
 */
static size_t key_str(char *p, uint64_t k)
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

/* ------------------------------------------------------------ connection */

/*
 * Edge-triggered: epoll reports a connection once per arrival of data
 * instead of polling every ready socket again on the next epoll_wait, which
 * costs a tcp_poll per reply.  conn_read therefore reads until a recv
 * comes back short (the socket is then empty; data arriving later is a new
 * edge).
 */
static void conn_epoll(struct conn *c, int op, int out)
{
	struct epoll_event ev = { .events = EPOLLIN | EPOLLET | (out ? EPOLLOUT : 0),
				  .data.ptr = c };

	if (epoll_ctl(c->t->epfd, op, c->fd, &ev) && op != EPOLL_CTL_DEL)
		die("epoll_ctl: %s", strerror(errno));
	c->epout = out;
}

/* The connection's first attempt has ended (it is up, or it failed). */
static void conn_settle(struct conn *c)
{
	if (c->settled)
		return;
	c->settled = 1;
	atomic_fetch_add(&g_settled, 1);
}

static void conn_up(struct conn *c)
{
	c->state = CS_UP;
	atomic_store_explicit(&g_connected, 1, memory_order_relaxed);
	conn_settle(c);
}

static void conn_fail(struct conn *c, const char *why, int err, int64_t now)
{
	struct thread *t = c->t;

	if (!atomic_exchange(&g_conn_logged, 1))
		fprintf(stderr, "loadgen: %s %s: %s (counted, retrying with back-off; logged once)\n",
			why, cfg.servers[c->server].name,
			err ? strerror(err) : "closed by server");
	t->tally->all.conn_errors++;
	t->tally->srv[c->server].conn_errors++;
	/*
	 * Requests in flight are lost: errors, each waited until now (the
	 * clock read here: a closed-loop request may have been written after
	 * the caller's 'now').
	 */
	if (c->rcount && t->phase != PH_WARMUP)
		now = now_ns();
	for (unsigned i = 0; i < c->rcount; i++) {
		if (t->phase == PH_WARMUP)
			t->tally->all.errors++;
		else
			count_error(c, &c->reqs[(c->rhead + i) % c->rcap], now);
	}
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
	conn_settle(c);
	c->retry_at = now + c->backoff;
	c->backoff *= 2;
	if (c->backoff > BACKOFF_MAX_NS)
		c->backoff = BACKOFF_MAX_NS;
}

void conn_init(struct conn *c, struct thread *t, int server)
{
	unsigned rcap = (unsigned)cfg.pipeline;

	if (rcap < WARMUP_DEPTH)
		rcap = WARMUP_DEPTH;
	c->t = t;
	c->server = server;
	c->fd = -1;
	c->state = CS_DOWN;
	c->in_cap = 64 * 1024;
	c->in = xrealloc(NULL, c->in_cap);
	c->out_cap = 16 * 1024;
	c->out = xrealloc(NULL, c->out_cap);
	c->rcap = rcap;
	c->reqs = xcalloc(rcap, sizeof(*c->reqs));
	c->kcap = rcap * (unsigned)cfg.multiget;
	c->keyring = xcalloc(c->kcap, sizeof(*c->keyring));
	c->backoff = BACKOFF_MIN_NS;
}

static void conn_start(struct conn *c, int64_t now)
{
	const struct server *srv = &cfg.servers[c->server];
	int one = 1;
	int fd = socket(srv->addr.ss_family,
			SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

	if (fd < 0) {
		c->fd = -1;
		conn_fail(c, "socket", errno, now);
		return;
	}
	if (srv->addr.ss_family != AF_UNIX)
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	c->fd = fd;
	if (connect(fd, (const struct sockaddr *)&srv->addr, srv->addrlen) == 0) {
		conn_up(c);
		conn_epoll(c, EPOLL_CTL_ADD, 0);
	} else if (errno == EINPROGRESS) {
		c->state = CS_CONNECTING;
		conn_epoll(c, EPOLL_CTL_ADD, 1);
	} else {
		/*
		 * EAGAIN is no connection in progress: on a unix socket the
		 * server's listen queue is full (on TCP, no local port is
		 * free).  It fails like a refusal and is retried after the
		 * back-off; epoll would report the unconnected socket
		 * writable at once, as if it had connected.
		 */
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

/* The key of a get (ROLE_GET, also deletes and touches) or a set. */
static uint64_t pick_key(struct thread *t, int role)
{
	return cfg.key_base + keydist_sample(&t->keys[role], &t->rng);
}

/* --expiry-range: the expiry of the next set or touch, in seconds */
static unsigned pick_expiry(struct thread *t)
{
	if (cfg.exp_min == cfg.exp_max)
		return (unsigned)cfg.exp_max;
	return (unsigned)cfg.exp_min +
	       (unsigned)rng_below(&t->rng, (uint64_t)(cfg.exp_max - cfg.exp_min + 1));
}

/*
 * --data-size-list: the length of the next set's value, drawn with the
 * list's weights.  The formula's bytes do not depend on the length (byte i
 * is a function of the key and i), so a hit of any listed length can be
 * checked (verify).
 */
static uint32_t pick_size(struct thread *t)
{
	uint64_t u = rng_below(&t->rng, cfg.size_cum[cfg.nsizes - 1]);
	int i = 0;

	while (u >= cfg.size_cum[i])
		i++;
	return cfg.sizes[i];
}

/* "set KEY 0 EXPIRY LEN\r\nVALUE\r\n" */
static void put_set(struct conn *c, uint64_t k)
{
	char key[MAX_KEY + 24];
	size_t kl = key_str(key, k);
	uint32_t vl = cfg.nsizes ? pick_size(c->t) :
		      gen_value_len(&cfg.gen, key, kl);
	char *p;

	out_reserve(c, kl + 50 + vl);
	p = c->out + c->out_len;
	memcpy(p, "set ", 4);
	p += 4;
	memcpy(p, key, kl);
	p += kl;
	memcpy(p, " 0 ", 3);
	p += 3;
	p += u64_to_str(p, pick_expiry(c->t));
	*p++ = ' ';
	p += u64_to_str(p, vl);
	*p++ = '\r';
	*p++ = '\n';
	gen_value_fill(&cfg.gen, key, kl, 0, p, vl);
	p += vl;
	*p++ = '\r';
	*p++ = '\n';
	c->out_len = (size_t)(p - c->out);
}

/* "WORD KEY[TAIL]\r\n"; returns where the next byte goes. */
static char *put_line(char *p, const char *word, size_t wl, uint64_t k,
		      const char *tail, size_t tl)
{
	memcpy(p, word, wl);
	p += wl;
	p += key_str(p, k);
	memcpy(p, tail, tl);
	p += tl;
	*p++ = '\r';
	*p++ = '\n';
	return p;
}

static void ring_push(struct conn *c, uint64_t k)
{
	c->keyring[c->ktail] = k;
	c->ktail = (c->ktail + 1) % c->kcap;
}

/*
 * Queue one request on c (the caller checked that there is room).  A get
 * asks for nkeys keys: one "get K1 K2 ..." line, or with --meta one
 * "mg K v f" line per key (one reply each, in order).  key is the key of
 * a set, delete or touch.
 */
static void issue(struct conn *c, int op, int64_t t_start, int64_t now,
		  uint64_t key, unsigned nkeys)
{
	struct thread *t = c->t;
	struct req *r = &c->reqs[(c->rhead + c->rcount) % c->rcap];
	char *p;

	memset(r, 0, sizeof(*r));
	r->t_start = t_start;
	r->t_sent = now;
	r->key_off = c->ktail;
	r->op = (uint8_t)op;
	r->nkeys = 1;
	if (op != OP_GET)
		ring_push(c, key);
	switch (op) {
	case OP_SET:
		put_set(c, key);
		break;
	case OP_DELETE:
		out_reserve(c, MAX_KEY + 40);
		p = put_line(c->out + c->out_len, "delete ", 7, key, "", 0);
		c->out_len = (size_t)(p - c->out);
		break;
	case OP_TOUCH: {
		char tail[16] = " ";
		size_t tl = 1 + u64_to_str(tail + 1, pick_expiry(t));

		out_reserve(c, MAX_KEY + 40);
		p = put_line(c->out + c->out_len, "touch ", 6, key, tail, tl);
		c->out_len = (size_t)(p - c->out);
		break;
	}
	default:
		r->nkeys = (uint16_t)nkeys;
		out_reserve(c, 8 + (size_t)nkeys * (MAX_KEY + 16));
		p = c->out + c->out_len;
		if (!cfg.meta) {
			memcpy(p, "get", 3);
			p += 3;
		}
		for (unsigned i = 0; i < nkeys; i++) {
			uint64_t k = pick_key(t, ROLE_GET);

			ring_push(c, k);
			if (cfg.meta) {
				p = put_line(p, "mg ", 3, k, " v f", 4);
			} else {
				*p++ = ' ';
				p += key_str(p, k);
			}
		}
		if (!cfg.meta) {
			*p++ = '\r';
			*p++ = '\n';
		}
		c->out_len = (size_t)(p - c->out);
	}
	c->rcount++;
	t->outstanding++;
}

/* The next command of the measured mix. */
static int pick_op(struct thread *t)
{
	double u;
	int op;

	if (cfg.mix[OP_GET] >= 1.0)
		return OP_GET;
	u = rng_double(&t->rng);
	for (op = 0; op < OP_COUNT - 1; op++) {
		if (u < cfg.mix[op])
			break;
		u -= cfg.mix[op];
	}
	while (cfg.mix[op] <= 0)	/* rounding at the top end */
		op--;
	return op;
}

static unsigned pick_nkeys(struct thread *t)
{
	if (cfg.multiget_min == cfg.multiget)
		return (unsigned)cfg.multiget;
	return (unsigned)cfg.multiget_min +
	       (unsigned)rng_below(&t->rng, (uint64_t)(cfg.multiget - cfg.multiget_min + 1));
}

static void issue_run(struct conn *c, int64_t t_start, int64_t now)
{
	struct thread *t = c->t;
	int op = pick_op(t);

	if (op == OP_GET)
		issue(c, op, t_start, now, 0, pick_nkeys(t));
	else
		issue(c, op, t_start, now,
		      pick_key(t, op == OP_SET ? ROLE_SET : ROLE_GET), 1);
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
			uint64_t k = t->wu_next++;

			issue(c, OP_SET, now, now, cfg.key_base + (cfg.warmup_random ?
			      perm_map(&cfg.wu_perm, k) : k), 1);
		}
		return;
	}
	/* nothing starts at or after the end of the run */
	if (t->phase != PH_RUN || now >= t->t_stop)
		return;
	if (cfg.rate > 0) {
		while (c->rcount < (unsigned)cfg.pipeline && t->quota &&
		       c->next_send <= now && c->next_send < t->t_stop) {
			issue_run(c, c->next_send, now);
			c->next_send += arrival_gap(&t->rng, t->interval_ns,
						    cfg.arrivals == ARRIVE_POISSON);
		}
	} else {
		while (c->rcount < (unsigned)cfg.pipeline && t->quota)
			issue_run(c, now, now);
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
		c->t->tally->all.bytes_sent += (uint64_t)n;
	}
	c->out_off = c->out_len = 0;
	if (c->epout)
		conn_epoll(c, EPOLL_CTL_MOD, 0);
}

/* what is wrong with a hit: its bytes from off on (off < 0: its flags) */
static void verify_fail(struct thread *t, const struct proto_reply *pr,
			const char *what, long off, size_t want)
{
	int n;

	t->tally->all.verify_errors++;
	t->tally->cmd[OP_GET].verify_errors++;
	n = atomic_fetch_add(&g_verify_logged, 1);
	if (n < VERIFY_LOG_MAX) {
		fprintf(stderr, "loadgen: verify: key %.*s: %s", (int)pr->keylen,
			pr->key, what);
		if (off >= 0 && cfg.nsizes && pr->datalen != want)
			fprintf(stderr, " (length %zu, not in --data-size-list)",
				pr->datalen);
		else if (off >= 0)
			fprintf(stderr, " at offset %ld (length %zu, expected %zu)",
				off, pr->datalen, want);
		else
			fprintf(stderr, " %u, expected 0", pr->flags);
		fputc('\n', stderr);
	} else if (n == VERIFY_LOG_MAX) {
		fprintf(stderr, "loadgen: verify: further mismatches are counted, not shown\n");
	}
}

static int size_listed(size_t len)
{
	for (int i = 0; i < cfg.nsizes; i++)
		if (cfg.sizes[i] == len)
			return 1;
	return 0;
}

/*
 * Check a hit against the formula.  With --data-size-list its length is
 * any of the list's (each set drew one), and its bytes are the formula's
 * up to that length.
 */
static void verify(struct thread *t, const struct proto_reply *pr)
{
	struct gen_params g = cfg.gen;
	size_t want;
	long off;

	if (cfg.nsizes) {
		if (!size_listed(pr->datalen)) {
			verify_fail(t, pr, "wrong length", 0, (size_t)-1);
			return;
		}
		g.min_size = g.max_size = (uint32_t)pr->datalen;
	}
	want = gen_value_len(&g, pr->key, pr->keylen);
	off = gen_value_check(&g, pr->key, pr->keylen, pr->data, pr->datalen);
	if (off >= 0) {
		size_t n = pr->datalen < want ? pr->datalen : want;

		verify_fail(t, pr, pr->datalen != want && (size_t)off == n ?
			    "wrong length" : "wrong byte", off, want);
	} else if (pr->flags != 0) {
		verify_fail(t, pr, "flags", -1, want);
	}
}

/* Does the key in a VALUE line equal key index k? */
static int key_is(const struct proto_reply *pr, uint64_t k)
{
	char key[MAX_KEY + 24];
	size_t kl = key_str(key, k);

	return kl == pr->keylen && !memcmp(key, pr->key, kl);
}

/*
 * Request r ended at now: its latency, from its intended send time (in
 * open loop; the actual one in closed loop), and with --uncorrected also
 * from its actual send.
 */
static void record(struct thread *t, const struct req *r, int64_t now)
{
	hist_record(&t->tally->hist[r->op], now - r->t_start);
	if (cfg.uncorrected)
		hist_record(&t->tally->uhist, now - r->t_sent);
}

/*
 * One failed request of the measured run, failed at now: an error reply or
 * a lost connection.  Its wait up to the failure goes into the histogram
 * (from its intended send time in open loop), or a stall that ends in a
 * reset would leave its slowest requests out of the tail.
 */
static void count_error(struct conn *c, const struct req *r, int64_t now)
{
	struct thread *t = c->t;

	t->tally->srv[c->server].errors++;
	t->tally->all.errors++;
	t->tally->cmd[r->op].errors++;
	record(t, r, now);
}

/*
 * The reply to r is complete: ok, or an error reply.  hit says, for a
 * delete or touch, whether the key was there.
 */
static void req_done(struct conn *c, struct req *r, int64_t now, int ok, int hit)
{
	struct thread *t = c->t;
	struct stats *all = &t->tally->all, *cs = &t->tally->cmd[r->op];

	c->rhead = (c->rhead + 1) % c->rcap;
	c->rcount--;
	t->outstanding--;
	/* the server answers: the next failure waits the shortest back-off */
	if (ok)
		c->backoff = BACKOFF_MIN_NS;
	if (t->phase == PH_WARMUP) {
		atomic_fetch_add_explicit(&g_warm_done, 1, memory_order_relaxed);
		if (!ok)
			all->errors++;
		return;
	}
	if (!ok) {
		count_error(c, r, now);
		return;
	}
	all->ops++;
	t->tally->srv[c->server].ops++;
	cs->ops++;
	switch (r->op) {
	case OP_GET:
		all->gets++;
		all->hits += r->hits;
		all->misses += (uint64_t)(r->nkeys - r->hits);
		all->misses_purged += r->purged;
		all->hits_rebuilt += r->rebuilt;
		cs->hits += r->hits;
		cs->misses += (uint64_t)(r->nkeys - r->hits);
		cs->misses_purged += r->purged;
		cs->hits_rebuilt += r->rebuilt;
		break;
	case OP_SET:
		all->sets++;
		break;
	case OP_DELETE:
		all->deletes++;
		break;
	case OP_TOUCH:
		all->touches++;
		break;
	}
	if (r->op != OP_GET && r->op != OP_SET) {
		cs->hits += (uint64_t)hit;
		cs->misses += (uint64_t)!hit;
	}
	record(t, r, now);
}

/* A VALUE (or VA) for r's next key; returns -1 when the stream is out of step. */
static int got_value(struct conn *c, struct req *r, struct proto_reply *pr)
{
	struct thread *t = c->t;
	char key[MAX_KEY + 24];

	if (pr->kind == PR_META_VALUE) {
		/* mg answers every key in order; VA carries no key */
		pr->key = key;
		pr->keylen = key_str(key, c->keyring[(r->key_off + r->next) % c->kcap]);
		r->rebuilt += (uint16_t)pr->purged;
	} else {
		while (r->next < r->nkeys &&
		       !key_is(pr, c->keyring[(r->key_off + r->next) % c->kcap]))
			r->next++;
		if (r->next == r->nkeys) {
			log_line_once(&g_proto_logged, "reply for a key not requested",
				      pr->line, pr->linelen);
			return -1;
		}
	}
	r->next++;
	r->hits++;
	if (cfg.verify && t->phase == PH_RUN)
		verify(t, pr);
	return 0;
}

/* Handle one reply element; returns -1 when the stream is out of step. */
static int handle_reply(struct conn *c, struct proto_reply *pr, int64_t now)
{
	struct req *r;
	int meta_get;

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
	meta_get = r->op == OP_GET && cfg.meta;
	switch (pr->kind) {
	case PR_VALUE:
		if (r->op != OP_GET || meta_get)
			break;
		return got_value(c, r, pr);
	case PR_END:
		if (r->op != OP_GET || meta_get)
			break;
		req_done(c, r, now, 1, 0);
		return 0;
	case PR_META_VALUE:
	case PR_META_MISS:
		if (!meta_get)
			break;
		if (pr->kind == PR_META_VALUE) {
			if (got_value(c, r, pr))
				return -1;
		} else {
			r->next++;
			r->purged += (uint16_t)pr->purged;
		}
		if (r->next == r->nkeys)
			req_done(c, r, now, !r->failed, 0);
		return 0;
	case PR_STORED:
		if (r->op != OP_SET)
			break;
		req_done(c, r, now, 1, 0);
		return 0;
	case PR_DELETED:
		if (r->op != OP_DELETE)
			break;
		req_done(c, r, now, 1, 1);
		return 0;
	case PR_TOUCHED:
		if (r->op != OP_TOUCH)
			break;
		req_done(c, r, now, 1, 1);
		return 0;
	case PR_NOT_FOUND:
		if (r->op == OP_DELETE || r->op == OP_TOUCH) {
			req_done(c, r, now, 1, 0);
			return 0;
		}
		/* fall through */
	case PR_NOT_STORED:
	case PR_EXISTS:
		if (r->op != OP_SET)
			break;
		log_line_once(&g_server_logged, "set not stored", pr->line, pr->linelen);
		req_done(c, r, now, 0, 0);
		return 0;
	case PR_ERROR:
	case PR_CLIENT_ERROR:
	case PR_SERVER_ERROR:
		log_line_once(&g_server_logged, "error reply", pr->line, pr->linelen);
		if (meta_get && r->next + 1 < r->nkeys) {
			/* every mg line has its own reply: wait for the rest */
			r->next++;
			r->failed = 1;
			return 0;
		}
		req_done(c, r, now, 0, 0);
		return 0;
	default:
		break;
	}
	log_line_once(&g_proto_logged, "unexpected reply", pr->line, pr->linelen);
	return -1;
}

static void conn_read(struct conn *c, int64_t now)
{
	size_t off;
	int full;

again:
	off = 0;
	full = 0;
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
		/* a recv that fills the buffer may have left bytes behind */
		full = (size_t)n == c->in_cap - c->in_len;
		c->in_len += (size_t)n;
		c->t->tally->all.bytes_received += (uint64_t)n;
		break;
	}
	/*
	 * The replies in these bytes arrived now, not when epoll_wait
	 * returned: the connections handled before this one in the batch
	 * (reading, verifying, sending) took time that is not theirs.
	 */
	now = now_ns();
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
				c->t->tally->all.errors++;
			conn_fail(c, "protocol error on", EPROTO, now);
			return;
		}
		off += used;
	}
	if (off) {
		memmove(c->in, c->in + off, c->in_len - off);
		c->in_len -= off;
	}
	if (full)
		goto again;
}

/*
 * Put c in its thread's timers for the moment the loop must look at it
 * without an event: a down connection at its retry, an open-loop one with
 * room in its pipeline at its next intended send.  Anything else waits for
 * an event (a connect completing, a reply, room to send) and has no timer.
 */
static void conn_schedule(struct conn *c)
{
	struct thread *t = c->t;
	int64_t when = INT64_MAX;

	if (c->state == CS_DOWN)
		when = c->retry_at;
	else if (c->state == CS_UP && t->phase == PH_RUN && cfg.rate > 0 &&
		 t->quota && c->rcount < (unsigned)cfg.pipeline &&
		 c->next_send < t->t_stop)
		when = c->next_send;
	if (when == INT64_MAX)
		heap_del(&t->timers, &c->timer);
	else
		heap_set(&t->timers, &c->timer, when);
}

/*
 * Every due send is queued (conn_fill stops at the first one in the future
 * or when the pipeline is full) and a failed connection retries after
 * now, so a kicked connection never comes back due at the same now.
 */
void conn_kick(struct conn *c, int64_t now)
{
	if (c->state == CS_DOWN && now >= c->retry_at)
		conn_start(c, now);
	if (c->state == CS_UP) {
		conn_fill(c, now);
		if (c->out_len > c->out_off)
			conn_flush(c, now);
	}
	conn_schedule(c);
}

static void conn_event_do(struct conn *c, uint32_t ev, int64_t now)
{
	if (c->state == CS_CONNECTING) {
		int err = 0;
		socklen_t len = sizeof(err);

		if (getsockopt(c->fd, SOL_SOCKET, SO_ERROR, &err, &len) || err) {
			conn_fail(c, "connect", err ? err : errno, now);
			return;
		}
		conn_up(c);
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
	/*
	 * A closed-loop request starts when it is written, which is after
	 * this connection's replies were read and checked; an open-loop one
	 * is due by the clock of this moment, not of the batch's start.
	 */
	conn_fill(c, now_ns());
	if (c->state == CS_UP && c->out_len > c->out_off)
		conn_flush(c, now);
}

void conn_event(struct conn *c, uint32_t ev, int64_t now)
{
	conn_event_do(c, ev, now);
	conn_schedule(c);
}

/*
 * In open loop, the requests due on c and not sent are those of its
 * schedule from next_send up to now: one per interval with constant
 * arrivals; with Poisson arrivals, whose gaps are not drawn before they
 * are sent, as many as the mean interval gives.
 */
void conn_census(const struct conn *c, int64_t now, struct census *s,
		 int64_t *oldest)
{
	const struct thread *t = c->t;

	if (t->phase != PH_RUN)
		return;
	s->in_flight += c->rcount;
	if (c->rcount && c->reqs[c->rhead].t_start < *oldest)
		*oldest = c->reqs[c->rhead].t_start;
	if (cfg.rate > 0 && t->quota && c->next_send <= now &&
	    c->next_send < t->t_stop) {
		s->due += (uint64_t)((now - c->next_send) / t->interval_ns) + 1;
		if (c->next_send < *oldest)
			*oldest = c->next_send;
	}
}

/*
 * Count one request the run ended without an answer to: one in flight
 * (r), or one due and never sent (r NULL, not in the uncorrected view).
 */
static void unfinished(struct conn *c, const struct req *r, int op,
		       int64_t t_start, int64_t t_end)
{
	struct thread *t = c->t;

	t->tally->srv[c->server].unfinished++;
	t->tally->all.unfinished++;
	t->tally->cmd[op].unfinished++;
	if (r) {
		record(t, r, t_end);
		return;
	}
	hist_record(&t->tally->hist[op], t_end - t_start);
}

/*
 * The measured run ends at t_end: every request still in flight on c, and
 * in open loop every request whose intended send time has passed but that
 * was never sent (the connection was full or down), is counted as
 * unfinished and its waiting up to t_end goes into the histogram.  A run
 * that ends during a stall then shows the stall in its tail instead of
 * leaving the stalled requests out.
 */
void conn_finish(struct conn *c, int64_t t_end)
{
	struct thread *t = c->t;

	if (t->phase != PH_RUN)
		return;
	for (unsigned i = 0; i < c->rcount; i++) {
		struct req *r = &c->reqs[(c->rhead + i) % c->rcap];

		unfinished(c, r, r->op, r->t_start, t_end);
	}
	if (cfg.rate <= 0)
		return;
	while (t->quota && c->next_send < t_end) {
		unfinished(c, NULL, pick_op(t), c->next_send, t_end);
		c->next_send += arrival_gap(&t->rng, t->interval_ns,
					    cfg.arrivals == ARRIVE_POISSON);
		if (t->quota != UINT64_MAX)
			t->quota--;
	}
}

void conn_free(struct conn *c)
{
	if (c->fd >= 0)
		close(c->fd);
	c->fd = -1;
	free(c->in);
	free(c->out);
	free(c->reqs);
	free(c->keyring);
}
