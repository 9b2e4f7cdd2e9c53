// SPDX-License-Identifier: GPL-2.0-only
/*
 * daemon.c - the state every part of the daemon shares (daemon.h):
 * settings, global and connection counters, cache_lock, the clock
 * seconds, and logging.
 *
 * Design: this file sits below everything else in cached/ and calls
 * nothing of the daemon's own, so index, store, cache, the protocol and
 * the threads can all use it without depending on main.c, and the test
 * harnesses (tests/unit.c, fuzz_store.c, fuzz_proto.c) link it instead of
 * defining the same globals again.  main.c fills settings from the
 * command line and runs the clock; nothing here starts anything.
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>

#include "daemon.h"

struct settings settings;
struct stats stats;
pthread_rwlock_t cache_lock = PTHREAD_RWLOCK_WRITER_NONRECURSIVE_INITIALIZER_NP;
uint32_t cache_unlock_pending;
void (*cache_unlock_work)(void);
uint64_t stat_curr_conns, stat_total_conns, stat_rejected_conns;
uint64_t stat_listen_disabled;
uint64_t stat_listen_disabled_us;
uint32_t stat_accepting = 1;
uint32_t stat_listeners;
uint64_t stat_conn_structs;
uint64_t stat_conn_buffer_bytes;
uint64_t stat_bytes_read, stat_bytes_written;
uint64_t stat_unlocked_unmarks;
uint64_t stat_punches, stat_punches_queued;
uint32_t current_time;
uint32_t process_started;

static bool log_silenced;

/*
 * Wait slots: a thread claims one at its first wait and keeps it.  Past
 * the last slot threads share it; the adds are atomic, so sharing costs
 * only the cache line.
 */
#define LOCK_WAIT_SLOTS 128
static struct lock_waits lock_wait_slots[LOCK_WAIT_SLOTS];
static unsigned int lock_wait_slots_used;
static __thread struct lock_waits *my_lock_waits;

void cache_lock_waited(bool write, uint64_t start_ns)
{
	uint64_t ns = now_nsec() - start_ns;
	struct lock_waits *w = my_lock_waits;

	if (!w) {
		unsigned int i = __atomic_fetch_add(&lock_wait_slots_used, 1,
						    __ATOMIC_RELAXED);

		w = &lock_wait_slots[i < LOCK_WAIT_SLOTS ? i : LOCK_WAIT_SLOTS - 1];
		my_lock_waits = w;
	}
	__atomic_fetch_add(write ? &w->wr_waits : &w->rd_waits, 1, __ATOMIC_RELAXED);
	__atomic_fetch_add(write ? &w->wr_wait_ns : &w->rd_wait_ns, ns, __ATOMIC_RELAXED);
}

void cache_lock_waits_sum(struct lock_waits *sum)
{
	*sum = (struct lock_waits){ 0 };
	for (unsigned int i = 0; i < LOCK_WAIT_SLOTS; i++) {
		struct lock_waits *w = &lock_wait_slots[i];

		sum->rd_waits += __atomic_load_n(&w->rd_waits, __ATOMIC_RELAXED);
		sum->wr_waits += __atomic_load_n(&w->wr_waits, __ATOMIC_RELAXED);
		sum->rd_wait_ns += __atomic_load_n(&w->rd_wait_ns, __ATOMIC_RELAXED);
		sum->wr_wait_ns += __atomic_load_n(&w->wr_wait_ns, __ATOMIC_RELAXED);
	}
}

void cache_lock_waits_reset(void)
{
	for (unsigned int i = 0; i < LOCK_WAIT_SLOTS; i++) {
		struct lock_waits *w = &lock_wait_slots[i];

		__atomic_store_n(&w->rd_waits, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&w->wr_waits, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&w->rd_wait_ns, 0, __ATOMIC_RELAXED);
		__atomic_store_n(&w->wr_wait_ns, 0, __ATOMIC_RELAXED);
	}
}

void log_silence(void)
{
	log_silenced = true;
}

void logmsg(int level, const char *fmt, ...)
{
	va_list ap;

	if (log_silenced || settings.verbose < level)
		return;
	va_start(ap, fmt);
	fprintf(stderr, "cached: ");
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
	va_end(ap);
}
