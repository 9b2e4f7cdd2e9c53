/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * stats.h - the "stats" and "stats settings" replies.
 */
#ifndef STATS_H
#define STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "store.h"

struct evbuffer;

/* Append "STAT name value\r\n" lines and "END\r\n". */
void stats_emit(struct evbuffer *out);

/* The settings view. */
void stats_settings_emit(struct evbuffer *out);

/* A mode's name, as --mode spells it ("volatile", "pinned", ...). */
enum cache_mode;
const char *mode_name(enum cache_mode m);

/*
 * stats items, stats slabs and stats cachedump ID LIMIT, each item in the
 * slab class memcached 1.6 would give it (mc_slab_class of mc_item_size,
 * store.h); ID must be below CACHEDUMP_CLASSES, as memcached checks it.
 */
#define CACHEDUMP_CLASSES STORE_CLASSES
struct item;

/* Before a store, cache_lock held: count a dead item of the key that the
 * store replaces as reclaimed in its class (stats items reclaimed). */
void stats_note_store(const char *key, size_t nkey, uint32_t hv);
void stats_items_emit(struct evbuffer *out);
void stats_slabs_emit(struct evbuffer *out);
void stats_cachedump_emit(struct evbuffer *out, uint32_t id, uint32_t limit);

/*
 * stats cachedump in steps, for a caller that lets other work run between
 * them: stats_cachedump_new (NULL when out of memory), then
 * stats_cachedump_step until it returns true (each step walks
 * INDEX_WALK_STEP items under the shared lock, and the walk stops early
 * at LIMIT items or memcached's 2 MB bound), then stats_cachedump_end,
 * which appends the reply to out (none when out is NULL) and frees d.
 */
struct cachedump;
struct cachedump *stats_cachedump_new(uint32_t id, uint32_t limit);
bool stats_cachedump_step(struct cachedump *d);
void stats_cachedump_end(struct cachedump *d, struct evbuffer *out);

/*
 * stats detail: per-prefix counters of gets, hits, sets and deletes, as
 * memcached keeps them while detail is on (stats detail on, or -D).  A
 * key's prefix is what precedes the first delimiter; keys without one are
 * not counted.  At most PREFIX_MAX prefixes are kept: later new ones are
 * not counted, so that clients cannot grow the table without bound.
 */
#define PREFIX_MAX 10000
void stats_prefix_get(const char *key, size_t nkey, bool hit);
void stats_prefix_set(const char *key, size_t nkey);
void stats_prefix_delete(const char *key, size_t nkey);
void stats_prefix_dump(struct evbuffer *out);
void stats_prefix_clear(void);

/* Zero the resettable counters (stats reset). */
void stats_reset(void);

#endif
