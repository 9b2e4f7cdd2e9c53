/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * fetch.h - the pool of threads that fetch from the synchronous origins
 * (gen and dir), so that a slow rebuild keeps only the connection that
 * asked waiting while its worker serves the others.
 */
#ifndef FETCH_H
#define FETCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct conn;

/*
 * Start n fetch threads (--fetch-threads; main thread, after the origin is
 * parsed, before the workers).  With n == 0, or an origin that is not gen
 * or dir, nothing starts, settings.fetch_threads becomes 0 and fetches
 * stay inline in the worker.  Returns 0 or -1.
 */
int fetch_init(int n);

/* True when gets hand their misses to the pool (fetch_get). */
bool fetch_enabled(void);

/* Stop and join the fetch threads; queued fetches are dropped. */
void fetch_stop(void);

/*
 * Worker thread, no cache_lock: fetch key for c's current get.  The
 * client waits (c->pending++, a reference on c) until the value is
 * stored in the cache and kept on c (conn_keep_fetched, or conn_keep_miss
 * when the origin has none or failed), in c's worker (worker_post); then,
 * its last fetch answered, the connection is resumed as after the
 * upstream origin (conn_answered).  A key already being fetched is not
 * fetched again: c waits for that fetch (single-flight).
 */
void fetch_get(struct conn *c, const char *key, size_t nkey);

#endif
