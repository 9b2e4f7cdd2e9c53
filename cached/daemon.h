/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * daemon.h - what every part of the daemon shares: settings, counters,
 * cache_lock, the clock and logging (defined in daemon.c).
 *
 * Design: one process, one libevent event_base per worker thread (the
 * memcached model) plus the main thread, which accepts connections, hands
 * them to workers round-robin and runs the timers (clock, volatility,
 * PSI).  All cache state (index.c + store.c) sits behind one global
 * reader-writer lock, cache_lock (writers preferred).  Key-local commands
 * (a get of hot data, the common set and delete) take it shared plus
 * their key's index stripe (cache_key_lock in cache.h); what needs more
 * takes it exclusive.  It is held for short, bounded work only (no
 * system call on the hot path, no origin fetch).  Settings are written
 * once at start-up.
 */
#ifndef DAEMON_H
#define DAEMON_H

#include <pthread.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <time.h>

#include "gen.h"

#define CACHED_VERSION "1.6.18-cached-0.1"
#define KEY_MAX_LENGTH 250

enum cache_mode { MODE_PINNED, MODE_VOLATILE, MODE_PSI, MODE_MADVFREE };
/* --psi-policy: band (a free-memory band, as CacheLib's MemoryMonitor) or trigger */
enum psi_policy { PSI_BAND, PSI_TRIGGER };
enum origin_kind { ORIGIN_NONE, ORIGIN_GEN, ORIGIN_DIR, ORIGIN_MEMCACHE };

struct settings {
	int port;
	char *inter;            /* listen address */
	char *socketpath;       /* unix socket, or NULL */
	uint64_t maxbytes;      /* -m, in bytes */
	uint64_t memory_max;    /* --memory-max: cache_memlimit's ceiling */
	int maxconns;
	int num_threads;
	int fetch_threads;      /* --fetch-threads: gen/dir fetch pool */
	uint32_t item_size_max;
	int reqs_per_event;     /* -R: commands per connection per event */
	char *username;
	int verbose;
	enum cache_mode mode;        /* requested */
	enum cache_mode mode_eff;    /* in effect (volatile falls back) */
	int idle_secs;
	enum origin_kind origin;
	char *origin_spec;
	struct gen_params gen;
	char *origin_dir;
	char *origin_host;
	int origin_port;
	bool verify;
	uint32_t psi_stall_us;   /* trigger: stall per window */
	uint32_t psi_window_us;
	uint32_t psi_drop_pct;   /* percent of the cache dropped per event */
	enum psi_policy psi_policy;
	uint64_t psi_low, psi_high;  /* band of free memory, bytes (0: derived) */
	uint32_t psi_step_pct;   /* band: share of (high - low) per poll */
	uint32_t psi_max_pct;    /* band: most of the cache given back */
	uint32_t psi_interval_ms;  /* band: poll interval */
	uint64_t out_max;        /* per-connection output bound */
	uint64_t in_max;         /* --input-limit: input held without a command */
	int idle_timeout;        /* --idle-timeout: seconds, 0 = never */
	int backlog;             /* -b: the listen queue */
	int access_mask;         /* -a: the unix socket's mode */
	unsigned hashpower_init; /* -o hashpower: the index's first size (0: 16) */
	bool shutdown_command;   /* -A: the shutdown command stops the daemon */
	bool no_flush;           /* -F: flush_all refused */
	bool no_dump;            /* -X: stats cachedump, lru_crawler metadump refused */
	bool detail;             /* per-prefix stats (stats detail on, -D) */
	char prefix_delim;       /* -D, default ':' */
};

extern struct settings settings;

/* Global counters: changed under the exclusive cache_lock, or with atomic
 * adds under the shared one (the get fast path). */
struct stats {
	uint64_t curr_items, total_items;
	uint64_t cmd_get, cmd_set, cmd_flush, cmd_touch;
	uint64_t get_hits, get_misses, get_expired, get_flushed;
	uint64_t delete_hits, delete_misses;
	uint64_t incr_hits, incr_misses, decr_hits, decr_misses;
	uint64_t cas_hits, cas_misses, cas_badval;
	uint64_t touch_hits, touch_misses;
	uint64_t evictions, evicted_unfetched, expired_unfetched;
	uint64_t purged_ranges, purged_objects, rebuilds, rebuild_usec;
	uint64_t purge_misses, origin_fetches, origin_errors;
	uint64_t verify_errors, psi_events, psi_drops, psi_dropped_bytes;
	uint64_t psi_polls, psi_reclaims, psi_advised_bytes, psi_free_bytes;
	uint64_t compacted_objects, compact_checked_objects;
	uint64_t cleaned_objects, cleaned_segments;
	uint64_t marks, unmarks, mark_failures, unmark_failures;
};
extern struct stats stats;

/* Count one under the shared lock. */
#define STAT_ADD(field) __atomic_fetch_add(&stats.field, 1, __ATOMIC_RELAXED)
extern pthread_rwlock_t cache_lock;

static inline uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000u + (uint64_t)ts.tv_nsec / 1000;
}

static inline uint64_t now_nsec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/*
 * Waits for cache_lock: how often a thread found it taken (its first
 * trylock failed), per mode, and for how long in all.  Each thread counts
 * in a slot of its own (its own cache line), claimed at its first wait;
 * stats sums the slots.  The uncontended path counts nothing.
 */
struct lock_waits {
	uint64_t rd_waits, wr_waits;
	uint64_t rd_wait_ns, wr_wait_ns;
} __attribute__((aligned(64)));

/* Count one wait that began at start_ns (now_nsec()) and ends now. */
void cache_lock_waited(bool write, uint64_t start_ns);

/* The sum of every thread's waits. */
void cache_lock_waits_sum(struct lock_waits *sum);

/* Zero every thread's waits (stats reset). */
void cache_lock_waits_reset(void);

/*
 * cache_lock is held for a microsecond or so.  A thread that finds it
 * taken retries for a few microseconds before it sleeps: sleeping on the
 * futex and being woken costs more than the wait, and on a loaded machine
 * the woken thread may wait milliseconds for a CPU.  With 4 KiB values at
 * 37,000 requests/s this cut futex calls from 870 to 400 a second.
 */
#define CACHE_LOCK_SPIN 256

/* Decimal digits of v at p (no NUL); returns the end.  For replies. */
static inline char *put_u64(char *p, uint64_t v)
{
	char tmp[20];
	int n = 0;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	while (n)
		*p++ = tmp[--n];
	return p;
}

static inline void cpu_relax(void)
{
#if defined(__x86_64__) || defined(__i386__)
	__builtin_ia32_pause();
#elif defined(__aarch64__)
	__asm__ __volatile__("yield");
#endif
}

static inline void cache_lock_spin(int (*trylock)(pthread_rwlock_t *),
				   int (*lock)(pthread_rwlock_t *), bool write)
{
	uint64_t start;

	if (trylock(&cache_lock) == 0)
		return;
	start = now_nsec();
	for (int i = 1; i < CACHE_LOCK_SPIN; i++) {
		cpu_relax();
		if (trylock(&cache_lock) == 0)
			goto waited;
	}
	lock(&cache_lock);
waited:
	cache_lock_waited(write, start);
}

static inline void cache_rdlock(void)
{
	cache_lock_spin(pthread_rwlock_tryrdlock, pthread_rwlock_rdlock, false);
}

static inline void cache_wrlock(void)
{
	cache_lock_spin(pthread_rwlock_trywrlock, pthread_rwlock_wrlock, true);
}

/*
 * Work that a holder of cache_lock left to be done after it is dropped
 * (the store's hole punches): cache_unlock_pending says how much waits,
 * cache_unlock_work does it.  Set by the store.
 */
extern uint32_t cache_unlock_pending;
extern void (*cache_unlock_work)(void);

static inline void cache_unlock(void)
{
	pthread_rwlock_unlock(&cache_lock);
	if (__atomic_load_n(&cache_unlock_pending, __ATOMIC_RELAXED))
		cache_unlock_work();
}

/* Connection counters, updated atomically. */
extern uint64_t stat_curr_conns, stat_total_conns, stat_rejected_conns;
/* times a connection yielded after -R commands (stats.c) */
extern uint64_t stat_conn_yields;
/* idle connections closed after --idle-timeout (stats.c) */
extern uint64_t stat_idle_kicks;
/* connections closed for holding more than --input-limit (stats.c) */
extern uint64_t stat_input_limit_closes;
extern uint64_t stat_listen_disabled;    /* accepting paused, out of fds */
extern uint64_t stat_listen_disabled_us; /* the time accepting was paused */
extern uint32_t stat_accepting;          /* 0 while accepting is paused */
extern uint32_t stat_listeners;          /* listening sockets */
extern uint64_t stat_conn_structs;       /* struct conn allocated now */
extern uint64_t stat_conn_buffer_bytes;  /* read buffers, fetched values */
extern uint64_t stat_bytes_read, stat_bytes_written;
/* unmarks a get made without cache_lock (store.c) */
extern uint64_t stat_unlocked_unmarks;
/* hole punches made, and of them those made from the queue of released
 * segments (after cache_lock was dropped, or by an allocation) (store.c) */
extern uint64_t stat_punches, stat_punches_queued;
/* The fetch pool (fetch.c): fetches waiting for a thread, running, and
 * misses that waited for a fetch of the same key (stats.c). */
extern uint64_t stat_fetch_queue_depth, stat_fetch_active, stat_fetch_coalesced;

/*
 * Wall clock in seconds, refreshed by the main thread's timer and read by
 * every thread: through clock_secs() and clock_set(), relaxed atomics (a
 * reader may see the previous second, never a torn value).  Single-threaded
 * tests may assign current_time directly.
 */
extern uint32_t current_time;
extern uint32_t process_started;

static inline uint32_t clock_secs(void)
{
	return __atomic_load_n(&current_time, __ATOMIC_RELAXED);
}

static inline void clock_set(uint32_t t)
{
	__atomic_store_n(&current_time, t, __ATOMIC_RELAXED);
}

/* Log a line to stderr when settings.verbose >= level. */
void logmsg(int level, const char *fmt, ...)
	__attribute__((format(printf, 2, 3)));

/* Make logmsg print nothing from now on (the test harnesses). */
void log_silence(void);

#endif
