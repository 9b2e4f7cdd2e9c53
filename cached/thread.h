/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * thread.h - worker threads, each running its own libevent event_base
 * with the connections the main thread handed to it: the top of the
 * connection layer (it runs the protocol, proto_text.h, on each
 * connection; what the modules below see of a worker is worker.h).
 */
#ifndef THREAD_H
#define THREAD_H

struct conn;

/*
 * Create n workers (not started), and register with conn.c what runs
 * when a connection's origin requests are answered.  Returns 0 or -1.
 */
int threads_init(int n);

/* Start the worker threads. */
void threads_start(void);

/* Give an accepted socket to the next worker. */
void thread_dispatch(int fd);

/* Stop every worker's loop and join the threads. */
void threads_stop(void);

/* Run a connection again after its wait ended (its worker's thread). */
void conn_resume(struct conn *c);

#endif
