/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * run.h - what the main thread does with the load threads: start them,
 * wait out the warm-up and the connections, start the measured run,
 * collect their tallies, and join them.
 */
#ifndef RUN_H
#define RUN_H

#include <stdatomic.h>
#include <stdint.h>

#include "hist.h"
#include "tally.h"

extern atomic_int g_stop;	/* end the run (Ctrl-C, --connect-timeout) */
extern atomic_int g_conn_timed_out;	/* --connect-timeout ended the run */

/*
 * Start the load threads of run number run (0 the first): they connect,
 * and in the first run warm up with --warmup.  A later run's threads draw
 * other keys and commands (their seeds mix in the run number).
 */
void threads_start(int run);
/* Close and free the joined threads' connections and state. */
void threads_free(void);
/* --warmup: wait until every thread has set its share of the keys. */
void do_warmup(int tty);
/* Wait until the connections are up (see run.c). */
void wait_connections(void);
/* The measured run starts at t0 (now): the threads begin their schedules. */
void run_begin(int64_t t0);
/* Stop the run when no connection succeeded within --connect-timeout. */
void check_connect_timeout(int64_t now);
int all_done(void);
/* What is outstanding now, over all threads (see tally.h). */
void census(struct census *sum);
/* Move every thread's counters and histograms into *into (merged). */
void collect(struct tally *into);
/* How long collect held a load thread's lock, each time (main thread only). */
extern struct hist g_collect_lock;
/*
 * Join the finished threads: returns when the last one stopped; *timed_out
 * says whether --timeout ended one with requests left.
 */
int64_t threads_join(int *timed_out);

#endif /* RUN_H */
