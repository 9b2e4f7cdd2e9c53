// SPDX-License-Identifier: GPL-2.0-only
/*
 * fetch.c - a small pool of threads that fetch from the gen and dir
 * origins.
 *
 * A get of a key the cache cannot serve parks its connection (ST_WAIT,
 * the mechanism of the upstream origin, see upstream.c and proto_text.c)
 * and hands the key to this pool; the worker goes on serving its other
 * connections.  A fetch thread asks the origin with no lock held, then
 * stores the value under cache_lock for one cache_fill (a bounded step,
 * as a write-through), and hands the answer back to each waiting
 * connection's worker (worker_post), which keeps a copy on the
 * connection and resumes it when its last fetch is answered
 * (conn_answered: the worker threads' callback, so that this pool, below
 * them, never calls up into thread.c); the get then runs again and serves
 * from the cache, or from that copy when the cache could not keep the
 * value.
 *
 * Single-flight: a fetch in progress is found by key in a small hash
 * table; a miss of the same key, from any connection or worker, waits for
 * it instead of asking the origin again (counted in fetch_coalesced).  A
 * fetch leaves the table only after its value is in the cache, so a miss
 * that comes later finds the value there.
 *
 * Locks: fetch_lock guards the queue, the table and the waiter lists; it
 * is never held with cache_lock.  A connection is touched only by its own
 * worker: the fetch thread reads c->w, which never changes.
 */
#define _GNU_SOURCE
#include "fetch.h"

#include <errno.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <unistd.h>

#include "cache.h"
#include "conn.h"
#include "daemon.h"
#include "origin.h"
#include "worker.h"

#define FLIGHT_BUCKETS 1024     /* power of two */
#ifndef FETCH_NICE
#define FETCH_NICE 10           /* fetch threads' nice, above the daemon's */
#endif

struct fetch_job;

/* One connection waiting for a fetch; its answer goes back in it. */
struct fetch_waiter {
	struct worker_call call;        /* first: the posted call */
	struct fetch_waiter *next;
	struct conn *c;
	struct fetch_job *job;
};

struct fetch_job {
	struct fetch_job *qnext;        /* queue, while waiting for a thread */
	struct fetch_job *hnext;        /* flight table chain */
	struct fetch_waiter *waiters;
	int refs;                       /* waiters not yet answered */
	int result;                     /* origin_fetch's: 1, 0 or -1 */
	bool rebuilt;                   /* it replaced a lost value */
	char *val;                      /* vlen bytes and "\r\n" */
	uint32_t vlen, flags;
	uint32_t hv;
	size_t nkey;
	char key[KEY_MAX_LENGTH + 1];
};

static pthread_mutex_t fetch_lock = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t fetch_cond = PTHREAD_COND_INITIALIZER;
static struct fetch_job *qhead, *qtail;
static struct fetch_job *flight[FLIGHT_BUCKETS];
static bool stopping;
static pthread_t *tids;
static int nthreads;

bool fetch_enabled(void)
{
	return nthreads > 0;
}

/* The fetch in progress for a key, or NULL; fetch_lock held. */
static struct fetch_job *flight_find(const char *key, size_t nkey,
				     uint32_t hv)
{
	struct fetch_job *j = flight[hv & (FLIGHT_BUCKETS - 1)];

	while (j && !(j->hv == hv && j->nkey == nkey &&
		      !memcmp(j->key, key, nkey)))
		j = j->hnext;
	return j;
}

static void flight_remove(struct fetch_job *job)
{
	struct fetch_job **pp = &flight[job->hv & (FLIGHT_BUCKETS - 1)];

	while (*pp != job)
		pp = &(*pp)->hnext;
	*pp = job->hnext;
}

/* Worker thread: one waiter's answer; resume its connection at the last. */
static void fetch_done(struct worker_call *call)
{
	struct fetch_waiter *wt = (struct fetch_waiter *)call;
	struct fetch_job *job = wt->job;
	struct conn *c = wt->c;

	if (job->result == 1)
		conn_keep_fetched(c, job->key, job->nkey, job->flags, job->val,
				  job->vlen);
	else
		conn_keep_miss(c, job->key, job->nkey);
	if (job->rebuilt)
		conn_note_rebuilt(c, job->key, job->nkey);
	conn_answered(c);       /* at the last, the worker resumes c */
	conn_unref(c);
	if (__atomic_sub_fetch(&job->refs, 1, __ATOMIC_ACQ_REL) == 0) {
		free(job->val);
		free(job);
	}
	free(wt);
}

/* Ask the origin, store the value, answer every waiter. */
static void fetch_run(struct fetch_job *job)
{
	struct fetch_waiter *wt, *next;
	uint64_t t0 = now_usec(), usec;
	struct item *it;
	bool expired;

	job->result = origin_fetch(job->key, job->nkey, &job->val, &job->vlen,
				   &job->flags);
	usec = now_usec() - t0;
	cache_wrlock();
	stats.origin_fetches++;
	if (job->result < 0)
		stats.origin_errors++;
	if (job->result == 1) {
		it = cache_lookup(job->key, job->nkey, job->hv, &expired);
		if (it && it->state == ITEM_LOST) {
			stats.rebuilds++;
			stats.rebuild_usec += usec;
			job->rebuilt = true;
		}
		cache_fill(job->key, job->nkey, job->hv, job->flags, job->val,
			   job->vlen);
	}
	cache_unlock();

	pthread_mutex_lock(&fetch_lock);
	flight_remove(job);
	__atomic_sub_fetch(&stat_fetch_active, 1, __ATOMIC_RELAXED);
	wt = job->waiters;
	job->waiters = NULL;
	pthread_mutex_unlock(&fetch_lock);
	for (; wt; wt = next) {
		next = wt->next;
		worker_post(wt->c->w, &wt->call);
	}
}

static void *fetch_main(void *arg)
{
	(void)arg;
	/*
	 * A fetch may burn CPU (gen's cost, a computation standing for a
	 * database query): it runs below the workers' priority, so that a
	 * worker woken by a client's request takes the core at once instead
	 * of queueing behind rebuilds.  Lowering one's own priority needs no
	 * privilege; on failure the thread runs at the daemon's priority.
	 */
	int nice_now;

	errno = 0;
	nice_now = getpriority(PRIO_PROCESS, (id_t)gettid());
	if (errno == 0 && setpriority(PRIO_PROCESS, (id_t)gettid(),
				      nice_now + FETCH_NICE > 19 ? 19 :
				      nice_now + FETCH_NICE) < 0)
		logmsg(1, "fetch thread: setpriority: %s", strerror(errno));
	pthread_mutex_lock(&fetch_lock);
	for (;;) {
		struct fetch_job *job;

		while (!qhead && !stopping)
			pthread_cond_wait(&fetch_cond, &fetch_lock);
		if (stopping)
			break;
		job = qhead;
		qhead = job->qnext;
		if (!qhead)
			qtail = NULL;
		__atomic_sub_fetch(&stat_fetch_queue_depth, 1, __ATOMIC_RELAXED);
		__atomic_add_fetch(&stat_fetch_active, 1, __ATOMIC_RELAXED);
		pthread_mutex_unlock(&fetch_lock);
		fetch_run(job);
		pthread_mutex_lock(&fetch_lock);
	}
	pthread_mutex_unlock(&fetch_lock);
	return NULL;
}

void fetch_get(struct conn *c, const char *key, size_t nkey)
{
	uint32_t hv = index_hash(key, nkey);
	struct fetch_waiter *wt = calloc(1, sizeof(*wt));
	struct fetch_job *job, *fresh = NULL;

	if (!wt || !(fresh = calloc(1, sizeof(*fresh)))) {
		free(wt);
		/* no memory: the get's second pass fetches inline */
		return;
	}
	wt->call.fn = fetch_done;
	wt->c = c;
	pthread_mutex_lock(&fetch_lock);
	job = flight_find(key, nkey, hv);
	if (job) {
		__atomic_add_fetch(&stat_fetch_coalesced, 1, __ATOMIC_RELAXED);
	} else {
		job = fresh;
		fresh = NULL;
		job->hv = hv;
		job->nkey = nkey;
		memcpy(job->key, key, nkey);
		job->hnext = flight[hv & (FLIGHT_BUCKETS - 1)];
		flight[hv & (FLIGHT_BUCKETS - 1)] = job;
		if (qtail)
			qtail->qnext = job;
		else
			qhead = job;
		qtail = job;
		__atomic_add_fetch(&stat_fetch_queue_depth, 1, __ATOMIC_RELAXED);
		pthread_cond_signal(&fetch_cond);
	}
	wt->job = job;
	wt->next = job->waiters;
	job->waiters = wt;
	__atomic_add_fetch(&job->refs, 1, __ATOMIC_RELAXED);
	pthread_mutex_unlock(&fetch_lock);
	free(fresh);
	c->pending++;
	conn_ref(c);
}

int fetch_init(int n)
{
	if (n <= 0 || !origin_is_sync()) {
		settings.fetch_threads = 0;
		return 0;
	}
	tids = calloc((size_t)n, sizeof(*tids));
	if (!tids)
		return -1;
	for (int i = 0; i < n; i++) {
		if (pthread_create(&tids[i], NULL, fetch_main, NULL)) {
			fetch_stop();
			return -1;
		}
		nthreads = i + 1;
	}
	return 0;
}

void fetch_stop(void)
{
	pthread_mutex_lock(&fetch_lock);
	stopping = true;
	pthread_cond_broadcast(&fetch_cond);
	pthread_mutex_unlock(&fetch_lock);
	for (int i = 0; i < nthreads; i++)
		pthread_join(tids[i], NULL);
	nthreads = 0;
	free(tids);
	tids = NULL;
}
