/*
 * stats.h - the "stats" and "stats settings" replies.
 */
#ifndef STATS_H
#define STATS_H

#include <stdint.h>

struct evbuffer;

/* Append "STAT name value\r\n" lines and "END\r\n". */
void stats_emit(struct evbuffer *out);

/* The settings view. */
void stats_settings_emit(struct evbuffer *out);

/*
 * stats items, stats slabs and stats cachedump ID LIMIT, with every item
 * in class 1 (cached has no size classes); ID must be below
 * CACHEDUMP_CLASSES, as memcached checks it.
 */
#define CACHEDUMP_CLASSES 64
void stats_items_emit(struct evbuffer *out);
void stats_slabs_emit(struct evbuffer *out);
void stats_cachedump_emit(struct evbuffer *out, uint32_t id, uint32_t limit);

/* Zero the resettable counters (stats reset). */
void stats_reset(void);

#endif
