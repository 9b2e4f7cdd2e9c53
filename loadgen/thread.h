/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * thread.h - the state of one load thread: its connections, its event
 * loop's descriptors, its random choices, its phase and its tally.
 * run.c runs the thread; conn.c works on its connections, with the
 * thread's lock held.
 */
#ifndef THREAD_H
#define THREAD_H

#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>

#include "heap.h"
#include "options.h"
#include "tally.h"
#include "zipf.h"

struct conn;

enum { PH_WARMUP, PH_WAIT, PH_RUN };

struct thread {
	int id;
	pthread_t tid;
	int epfd, tfd;
	int wakefd;		/* eventfd: the main thread changed the phase */
	int64_t timer_armed;
	struct conn *conns;
	int nconns;
	struct heap timers;	/* connections with a send or retry due */
	struct rng rng;
	struct keydist keys[ROLE_COUNT];	/* --dist, --set-dist */
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
	/*
	 * A census of what is outstanding, taken when the main thread asks
	 * (census_want) a slice of connections at a time (census_pos <
	 * nconns while one is under way), then published in census with
	 * census_done set to the request's number.
	 */
	atomic_uint census_want;
	unsigned census_seq;
	int census_pos;
	struct census census_acc;
	int64_t census_oldest;
	struct census census;
	atomic_uint census_done;
	atomic_int done;
};

#endif /* THREAD_H */
