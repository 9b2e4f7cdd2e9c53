/*
 * thread.h - worker threads, each running its own libevent event_base
 * with the connections the main thread handed to it.
 */
#ifndef THREAD_H
#define THREAD_H

struct conn;
struct upstream;

struct worker;

/* Create n workers (not started).  Returns 0 or -1. */
int threads_init(int n);

/* Start the worker threads. */
void threads_start(void);

/* Give an accepted socket to the next worker. */
void thread_dispatch(int fd);

/* Stop every worker's loop and join the threads. */
void threads_stop(void);

/* Re-run a connection after the upstream answered it (worker thread). */
void conn_resume(struct conn *c);

/*
 * A call another thread hands to a worker: embedded in the caller's own
 * record, so that posting never allocates and cannot fail.
 */
struct worker_call {
	struct worker_call *next;
	void (*fn)(struct worker_call *call);   /* may free call */
};

/*
 * Run call->fn(call) in worker w's thread, from any thread (the fetch
 * pool hands its answers back this way).  Calls run in the order posted.
 */
void worker_post(struct worker *w, struct worker_call *call);

/* The worker's event base and upstream link. */
struct event_base *worker_base(struct worker *w);
struct upstream **worker_upstream(struct worker *w);

/*
 * stats conns: every listening socket and connection, by descriptor, in
 * memcached's format; self (the connection asking) is conn_parse_cmd.
 */
struct evbuffer;
void conns_emit(struct evbuffer *out, struct conn *self);

/* Register a listening socket for stats conns (main thread, at start). */
void conns_add_listener(int fd);

/* Take a reference for an upstream request. */
void conn_ref(struct conn *c);

/* Drop a reference taken for an upstream request; frees dead conns. */
void conn_unref(struct conn *c);

#endif
