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

/* Queue "get key" for a client's miss (the client waits: c->pending++). */
void upstream_get(struct conn *c, const char *key, size_t nkey);

/*
 * Write the key's current value through, with the client's verb for add
 * and replace (they keep their meaning upstream) and set otherwise (cas
 * uniques are local; append and prepend send the joined value).  0 when
 * queued (client waits).
 */
int upstream_set(struct conn *c, const char *key, size_t nkey, uint32_t hv,
		 int cmd);

/* Forward a delete (noreply, nobody waits). */
void upstream_delete(struct conn *c, const char *key, size_t nkey);

/* Send what was queued for this client. */
void upstream_flush(struct conn *c);

#endif
