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
uint64_t stat_curr_conns, stat_total_conns, stat_rejected_conns;
uint64_t stat_listen_disabled;
uint64_t stat_conn_buffer_bytes;
uint64_t stat_bytes_read, stat_bytes_written;
uint32_t current_time;
uint32_t process_started;

static bool log_silenced;

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
