/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * util.h - the helpers every part of loadgen uses: the clock, exiting with
 * a message, allocation that cannot fail, numbers as text, logging a
 * reply line once.  They know nothing of the configuration.
 */
#ifndef UTIL_H
#define UTIL_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

/* Exit status (the lowest that applies; see --help) */
#define EX_VERIFY 1		/* values failed verification, or fatal (die) */
#define EX_NONE 2		/* no request completed */
#define EX_FAILED 3		/* requests failed */
#define EX_TIMEOUT 4		/* --timeout ended an --ops run */
#define EX_USAGE 64		/* bad arguments (die_usage) */

/* CLOCK_MONOTONIC in nanoseconds */
int64_t now_ns(void);
void sleep_ns(int64_t ns);
/* The process's user + system CPU time in seconds (getrusage). */
double cpu_seconds(void);

/* "loadgen: MESSAGE (see loadgen --help)", exit status 64 */
void die_usage(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
/* "loadgen: MESSAGE", exit status 1 */
void die(const char *fmt, ...) __attribute__((noreturn, format(printf, 1, 2)));
void *xrealloc(void *p, size_t n);
void *xcalloc(size_t a, size_t b);

/* Log a reply line once per *flag, with non-printables escaped. */
void log_line_once(atomic_int *flag, const char *what, const char *line,
		   size_t len);
/* v in decimal at p (no NUL); returns the length. */
size_t u64_to_str(char *p, uint64_t v);

#endif /* UTIL_H */
