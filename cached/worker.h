/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * worker.h - a worker as the modules below the worker threads see it:
 * its event base, its link to the memcache origin, and the calls other
 * threads post to it (worker.c).  The threads themselves, their
 * connections' I/O and the accept queue are thread.c's.
 */
#ifndef WORKER_H
#define WORKER_H

#include <pthread.h>

struct event;
struct event_base;
struct upstream;

/*
 * A call another thread hands to a worker: embedded in the caller's own
 * record, so that posting never allocates and cannot fail.
 */
struct worker_call {
	struct worker_call *next;
	void (*fn)(struct worker_call *call);   /* may free call */
};

struct worker {
	struct event_base *base;
	struct upstream *up;     /* upstream.c's link, opened on first use */
	/* calls other threads asked this worker to run (worker_post) */
	struct event *posted;
	pthread_mutex_t plock;
	struct worker_call *phead, *ptail;
};

/* Create w's event base and its posted-call event; 0 or -1. */
int worker_init(struct worker *w);

/*
 * Run call->fn(call) in worker w's thread, from any thread (the fetch
 * pool hands its answers back this way).  Calls run in the order posted.
 */
void worker_post(struct worker *w, struct worker_call *call);

/* The worker's event base and upstream link. */
struct event_base *worker_base(struct worker *w);
struct upstream **worker_upstream(struct worker *w);

#endif
