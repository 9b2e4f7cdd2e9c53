// SPDX-License-Identifier: GPL-2.0-only
/*
 * run.c - the load threads and the main thread's view of them.
 *
 * Every load thread runs one epoll loop over its own connections, a timerfd
 * for the open-loop schedule and back-offs, and an eventfd through which
 * the main thread wakes it when the phase changes (warm-up, wait, run).
 * A thread's counters and histogram are guarded by its mutex, which the
 * thread holds while it works and releases around epoll_wait; the main
 * thread takes it once per interval to swap in an empty spare tally
 * (collect), so the load threads never wait on each other and wait for
 * the main thread only as long as the swap takes.
 *
 * Where the threads run is the scheduler's choice unless --pin puts thread
 * i on the i-th allowed CPU; --sched-batch keeps a woken load thread from
 * preempting a server thread that shares its core.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/timerfd.h>
#include <time.h>
#include <unistd.h>

#include "conn.h"
#include "options.h"
#include "run.h"
#include "tally.h"
#include "thread.h"
#include "util.h"

atomic_int g_stop;
atomic_int g_conn_timed_out;
static struct thread *threads;
static atomic_int g_phase;	/* PH_RUN: the main thread started the run */
static atomic_llong g_t0;	/* its start */
static int64_t g_start;		/* when the threads were started */

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

/*
 * No open-loop interval or offset exceeds this (about three years, more
 * than the longest --duration): a request scheduled later is never due.
 */
#define SCHEDULE_MAX_NS 100000000000000000LL

static void thread_start_run(struct thread *t)
{
	int64_t t0 = atomic_load(&g_t0);

	t->phase = PH_RUN;
	if (cfg.run_limit > 0)
		t->t_stop = t0 + (int64_t)(cfg.run_limit * 1e9);
	for (int i = 0; i < t->nconns; i++) {
		int g = t->id * cfg.conns + i;
		/*
		 * The schedules are spread over one period: connection g
		 * starts g intervals of the total rate after t0.  (As the
		 * connection's period times g / connections, in 64 bits, it
		 * overflowed at low rates over many connections.)
		 */
		double off = cfg.rate > 0 ? 1e9 * g / cfg.rate : 0;

		t->conns[i].next_send = t0 + (off < SCHEDULE_MAX_NS ?
					      (int64_t)off : SCHEDULE_MAX_NS);
	}
	/* every connection starts its requests, or its schedule */
	for (int i = 0; i < t->nconns; i++) {
		t->tally->handled++;
		conn_kick(&t->conns[i], now_ns());
	}
}

/*
 * --pin: run thread i on the i-th CPU of those the process may use (modulo
 * their number), the placement memcaslap gives its threads.
 */
static void thread_pin(struct thread *t)
{
	cpu_set_t allowed, one;
	int n = 0, want, err;

	if (sched_getaffinity(0, sizeof(allowed), &allowed))
		die("--pin: %s", strerror(errno));
	want = t->id % CPU_COUNT(&allowed);
	for (int cpu = 0; cpu < CPU_SETSIZE; cpu++) {
		if (!CPU_ISSET(cpu, &allowed) || n++ != want)
			continue;
		CPU_ZERO(&one);
		CPU_SET(cpu, &one);
		err = pthread_setaffinity_np(pthread_self(), sizeof(one), &one);
		if (err)
			die("--pin: CPU %d: %s", cpu, strerror(err));
		return;
	}
}

#define CENSUS_SLICE 256	/* connections a census looks at in one go */

/*
 * Go on with the census the main thread asked for: look at the next
 * CENSUS_SLICE connections, and publish the census when all have been
 * seen.  In slices, a thread with thousands of connections never holds
 * back its sends for the whole walk; its loop does not sleep while a
 * census is under way.
 */
static void census_step(struct thread *t)
{
	unsigned want = atomic_load(&t->census_want);
	int64_t now = now_ns();
	int end;

	if (t->census_pos >= t->nconns) {
		if (want == t->census_seq)
			return;
		t->census_seq = want;
		t->census_pos = 0;
		memset(&t->census_acc, 0, sizeof(t->census_acc));
		t->census_oldest = INT64_MAX;
	}
	end = t->census_pos + CENSUS_SLICE;
	if (end > t->nconns)
		end = t->nconns;
	for (; t->census_pos < end; t->census_pos++)
		conn_census(&t->conns[t->census_pos], now,
			    &t->census_acc, &t->census_oldest);
	if (t->census_pos < t->nconns)
		return;
	if (t->census_acc.due > t->quota)
		t->census_acc.due = t->quota;
	t->census_acc.age = t->census_oldest == INT64_MAX ? 0 :
			    now_ns() - t->census_oldest;
	t->census = t->census_acc;
	atomic_store(&t->census_done, t->census_seq);
}

static void *thread_main(void *arg)
{
	struct thread *t = arg;
	struct epoll_event evs[256];

	if (cfg.pin)
		thread_pin(t);
	/*
	 * --sched-batch: the scheduler disfavours a SCHED_BATCH thread at
	 * wake-up (sched(7)), so a load thread woken by a reply seldom
	 * preempts the running thread.  Otherwise, on cores shared with the
	 * server, many replies cut a server thread off in the middle of its
	 * batch (memcached -t 2 in the bench, host kernel 6.18: 0.19
	 * involuntary context switches per request with loadgen, 0.07 with
	 * memcaslap, whose busier threads seldom win a wake-up preemption;
	 * 0.06-0.13 with this).
	 */
	if (cfg.sched_batch) {
		struct sched_param sp = { 0 };

		if (sched_setscheduler(0, SCHED_BATCH, &sp))
			die("--sched-batch: %s", strerror(errno));
	}
	pthread_mutex_lock(&t->lock);	/* a failure counts in t->tally */
	for (int i = 0; i < t->nconns; i++) {
		t->tally->handled++;
		conn_kick(&t->conns[i], now_ns());
	}
	pthread_mutex_unlock(&t->lock);
	while (!atomic_load_explicit(&g_stop, memory_order_relaxed)) {
		int64_t now = now_ns(), wake;
		int n, timeout_ms = 100;
		struct heap_node *due;

		pthread_mutex_lock(&t->lock);
		if (t->phase == PH_WARMUP && t->wu_next >= t->wu_end &&
		    !t->outstanding)
			t->phase = PH_WAIT;
		if (t->phase == PH_WAIT && atomic_load(&g_phase) == PH_RUN)
			thread_start_run(t);
		if (t->phase == PH_RUN) {
			if (now >= t->t_stop) {
				t->t_end = t->t_stop;
				/* --ops not done: --timeout gave up on it */
				t->timed_out = cfg.limit_is_timeout &&
					       (t->quota || t->outstanding);
				pthread_mutex_unlock(&t->lock);
				break;
			}
			if (!t->quota && !t->outstanding) {
				t->t_end = now;
				pthread_mutex_unlock(&t->lock);
				break;
			}
		}
		/*
		 * The connections whose send or retry is due, and no other:
		 * the rest wait for an event.  (Walking every connection on
		 * every wake-up cost 400 visits per request with 400
		 * connections, and with 5,000 at 20,000 ops/s the walk could
		 * not keep the schedule: a p50 of 0.23 s.)
		 */
		while ((due = heap_top(&t->timers)) &&
		       heap_top_key(&t->timers) <= now) {
			t->tally->handled++;
			conn_kick(conn_of_timer(due), now);
		}
		census_step(t);
		if (t->census_pos < t->nconns)
			timeout_ms = 0;
		wake = heap_top_key(&t->timers);
		pthread_mutex_unlock(&t->lock);
		if (t->t_stop < wake)
			wake = t->t_stop;
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
		t->tally->wakeups++;
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
			t->tally->handled++;
			conn_event(evs[i].data.ptr, evs[i].events, now);
		}
		pthread_mutex_unlock(&t->lock);
	}
	pthread_mutex_lock(&t->lock);
	if (!t->t_end)
		t->t_end = now_ns();
	for (int i = 0; i < t->nconns; i++)
		conn_finish(&t->conns[i], t->t_end);
	pthread_mutex_unlock(&t->lock);
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

static void thread_init(struct thread *t, int id, int run)
{
	struct epoll_event ev = { .events = EPOLLIN, .data.ptr = NULL };

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
	rng_seed(&t->rng, cfg.seed * 1000003 + (uint64_t)id + 1 +
		 (uint64_t)run * 0x9e3779b97f4a7c15ULL);
	for (int role = 0; role < ROLE_COUNT; role++) {
		const struct dist_spec *d = &cfg.dist[role];
		int kind = d->kind == KD_ZIPF && cfg.scramble ? KD_SCRAMBLED : d->kind;

		/* sequential: each thread starts at its share of the keys */
		keydist_init(&t->keys[role], kind, cfg.keys, d->param,
			     cfg.keys * (uint64_t)id / (uint64_t)cfg.threads);
	}
	if (cfg.rate > 0) {
		/* converted only when it fits: 1e-300 ops/s is infinity */
		double iv = 1e9 * cfg.threads * cfg.conns / cfg.rate;

		t->interval_ns = iv < SCHEDULE_MAX_NS ? (int64_t)iv : SCHEDULE_MAX_NS;
	}
	if (t->interval_ns < 1)
		t->interval_ns = 1;
	t->quota = UINT64_MAX;
	t->t_stop = INT64_MAX;
	if (cfg.ops)
		t->quota = cfg.ops / (uint64_t)cfg.threads +
			   ((uint64_t)id < cfg.ops % (uint64_t)cfg.threads);
	t->phase = cfg.warmup && !run ? PH_WARMUP : PH_WAIT;
	t->wu_next = cfg.keys * (uint64_t)id / (uint64_t)cfg.threads;
	t->wu_end = cfg.keys * (uint64_t)(id + 1) / (uint64_t)cfg.threads;
	pthread_mutex_init(&t->lock, NULL);
	t->tally = tally_new();
	t->spare = tally_new();
	t->nconns = cfg.conns;
	t->census_pos = cfg.conns;	/* no census under way */
	t->conns = xcalloc((size_t)cfg.conns, sizeof(*t->conns));
	if (heap_init(&t->timers, (unsigned)cfg.conns))
		die("out of memory");
	for (int i = 0; i < cfg.conns; i++)
		conn_init(&t->conns[i], t, (id * cfg.conns + i) % cfg.nservers);
}

void threads_start(int run)
{
	/* how long collect held the locks, over every run */
	if (!run)
		hist_init(&g_collect_lock);
	g_start = now_ns();
	atomic_store(&g_settled, 0);
	atomic_store(&g_connected, 0);
	atomic_store(&g_phase, cfg.warmup && !run ? PH_WARMUP : PH_WAIT);
	threads = xcalloc((size_t)cfg.threads, sizeof(*threads));
	for (int i = 0; i < cfg.threads; i++)
		thread_init(&threads[i], i, run);
	for (int i = 0; i < cfg.threads; i++)
		if (pthread_create(&threads[i].tid, NULL, thread_main, &threads[i]))
			die("pthread_create failed");
}

void run_begin(int64_t t0)
{
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
}

void threads_free(void)
{
	for (int i = 0; i < cfg.threads; i++) {
		struct thread *t = &threads[i];

		for (int j = 0; j < t->nconns; j++)
			conn_free(&t->conns[j]);
		free(t->conns);
		heap_free(&t->timers);
		close(t->epfd);
		close(t->tfd);
		close(t->wakefd);
		pthread_mutex_destroy(&t->lock);
		free(t->tally);
		free(t->spare);
	}
	free(threads);
	threads = NULL;
}

int64_t threads_join(int *timed_out)
{
	int64_t t_end = 0;

	*timed_out = 0;
	for (int i = 0; i < cfg.threads; i++) {
		pthread_join(threads[i].tid, NULL);
		if (threads[i].t_end > t_end)
			t_end = threads[i].t_end;
		*timed_out |= threads[i].timed_out;
	}
	return t_end;
}

struct hist g_collect_lock;

/*
 * Move every thread's counters and histograms into *into (merged).
 *
 * A load thread waits for its lock while the reporting thread holds it,
 * and in open loop that wait is charged to the server.  So, as
 * HdrHistogram's Recorder does, only a swap happens under the lock: the
 * thread's empty spare tally becomes its current one.  The full one is
 * merged and cleared afterwards, and becomes the spare.  Merging and
 * clearing four histograms under the lock had held it for a median of
 * 50-90 us per collection on a 2-core host.  The spare is the reporting
 * thread's alone; collect runs on the main thread only.
 */
void collect(struct tally *into)
{
	tally_reset(into);
	for (int i = 0; i < cfg.threads; i++) {
		struct thread *t = &threads[i];
		struct tally *full;
		int64_t held;

		pthread_mutex_lock(&t->lock);
		held = now_ns();
		full = t->tally;
		t->tally = t->spare;
		held = now_ns() - held;
		pthread_mutex_unlock(&t->lock);
		hist_record(&g_collect_lock, held);
		tally_add(into, full);
		tally_reset(full);
		t->spare = full;
	}
}

/*
 * What is outstanding now over all threads (their sums; the oldest
 * request's age).  Each load thread takes its census between its other
 * work, so this waits for them, up to 20 ms: a thread that has not
 * answered by then (the host did not run it) gives its last census.
 */
void census(struct census *sum)
{
	static unsigned seq;
	int64_t deadline = now_ns() + 20000000LL;

	seq++;
	for (int i = 0; i < cfg.threads; i++) {
		atomic_store(&threads[i].census_want, seq);
		thread_wake(&threads[i]);
	}
	for (int i = 0; i < cfg.threads; i++)
		while (atomic_load(&threads[i].census_done) != seq &&
		       !atomic_load(&threads[i].done) && now_ns() < deadline)
			sleep_ns(100000LL);
	memset(sum, 0, sizeof(*sum));
	for (int i = 0; i < cfg.threads; i++) {
		struct thread *t = &threads[i];

		pthread_mutex_lock(&t->lock);
		sum->in_flight += t->census.in_flight;
		sum->due += t->census.due;
		if (t->census.age > sum->age)
			sum->age = t->census.age;
		pthread_mutex_unlock(&t->lock);
	}
}

/* Stop the run when the server was never reachable within the timeout. */
void check_connect_timeout(int64_t now)
{
	if (cfg.connect_timeout <= 0 || atomic_load(&g_connected) ||
	    atomic_load(&g_stop) ||
	    now - g_start < (int64_t)(cfg.connect_timeout * 1e9))
		return;
	fprintf(stderr, "loadgen: no connection to %s within %g s, giving up\n",
		cfg.server, cfg.connect_timeout);
	atomic_store(&g_conn_timed_out, 1);
	atomic_store(&g_stop, 1);
}

int all_done(void)
{
	for (int i = 0; i < cfg.threads; i++)
		if (!atomic_load(&threads[i].done))
			return 0;
	return 1;
}

/*
 * The measured run (its clock, and the open-loop schedule) starts once
 * every connection has been established or has failed once, or when
 * --connect-timeout has passed with some established.  Before, the clock
 * started as the threads began to connect: a connection whose SYN was
 * dropped (a full listen queue) came up a second later, and its requests
 * due in that second were charged the second as latency.
 */
void wait_connections(void)
{
	int total = cfg.threads * cfg.conns;

	while (atomic_load(&g_settled) < total && !atomic_load(&g_stop)) {
		int64_t now = now_ns();

		check_connect_timeout(now);
		if (cfg.connect_timeout > 0 && atomic_load(&g_connected) &&
		    now - g_start >= (int64_t)(cfg.connect_timeout * 1e9))
			break;
		sleep_ns(1000000LL);
	}
}

void do_warmup(int tty)
{
	int64_t start = now_ns(), next = start + 200000000LL;
	struct tally *a = tally_new();

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
	collect(a);
	if (tty)
		fputs("\r\033[K", stderr);
	if (!cfg.quiet)
		fprintf(stderr, "warmup: %llu keys set in %.2f s, %llu errors%s\n",
			(unsigned long long)atomic_load(&g_warm_done),
			(double)(now_ns() - start) / 1e9,
			(unsigned long long)a->all.errors,
			atomic_load(&g_conn_timed_out) ? " (timed out: no connection)" :
			atomic_load(&g_stop) ? " (interrupted)" : "");
	free(a);
}

