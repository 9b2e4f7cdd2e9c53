/*
 * stats.h - the "stats" and "stats settings" replies.
 */
#ifndef STATS_H
#define STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
 * slab class memcached 1.6 would give it (mc_slab_class of mc_item_size:
 * memcached's item size and its default classes); ID must be below
 * CACHEDUMP_CLASSES, as memcached checks it.
 */
#define CACHEDUMP_CLASSES 64
struct item;
size_t mc_item_size(const struct item *it);
unsigned int mc_slab_class(size_t ntotal);

/* Before a store, cache_lock held: count a dead item of the key that the
 * store replaces as reclaimed in its class (stats items reclaimed). */
void stats_note_store(const char *key, size_t nkey, uint32_t hv);
void stats_items_emit(struct evbuffer *out);
void stats_slabs_emit(struct evbuffer *out);
void stats_cachedump_emit(struct evbuffer *out, uint32_t id, uint32_t limit);

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
