/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * upstream.h - the memcache:HOST:PORT origin: one pipelined connection per
 * worker thread, driven by the worker's event loop, so a slow upstream
 * stalls only the clients waiting on it.
 */
#ifndef UPSTREAM_H
#define UPSTREAM_H

#include <stddef.h>
#include <stdint.h>

struct conn;

/* Queue "gets key" for a client's miss (the client waits: c->pending++). */
void upstream_get(struct conn *c, const char *key, size_t nkey);

/*
 * Write the key's current value through, with the client's verb for add
 * and replace (they keep their meaning upstream) and set otherwise
 * (append and prepend send the joined value).  A cas (text cas, ms with
 * C) goes as "cas ... c->upcas": the origin stores only if its value is
 * still the one this cache last read or wrote.  Each write is followed by
 * a pipelined "gets key" that records the origin's cas of the value
 * written in its item (or drops the item if the origin holds another
 * value).  0 when queued (client
 * waits); 1 when a cas was not sent because c->upcas is 0 (the origin's
 * cas is unknown: the caller refuses it as EXISTS); -1 on failure.
 */
int upstream_set(struct conn *c, const char *key, size_t nkey, uint32_t hv,
		 int cmd);

/*
 * The origin's cas of the key's cached value, learnt by the "gets" that
 * fetched it or that followed its write-through; 0 when unknown.  Cache
 * lock held.
 */
uint64_t upstream_cas_of(const char *key, size_t nkey, uint32_t hv);

/* Forward a delete (noreply, nobody waits). */
void upstream_delete(struct conn *c, const char *key, size_t nkey);

/* Send what was queued for this client. */
void upstream_flush(struct conn *c);

#endif
