// SPDX-License-Identifier: GPL-2.0-only
/*
 * util.c - the helpers every part of loadgen uses (see util.h).
 */
#define _GNU_SOURCE
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <time.h>

#include "util.h"

int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

void sleep_ns(int64_t ns)
{
	struct timespec ts = { ns / 1000000000LL, ns % 1000000000LL };

	if (ns > 0)
		nanosleep(&ts, NULL);
}

double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
}

void die_usage(const char *fmt, ...)
{
	va_list ap;

	fputs("loadgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputs(" (see loadgen --help)\n", stderr);
	exit(EX_USAGE);
}

void die(const char *fmt, ...)
{
	va_list ap;

	fputs("loadgen: ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	exit(1);
}

void *xrealloc(void *p, size_t n)
{
	p = realloc(p, n);
	if (!p)
		die("out of memory");
	return p;
}

void *xcalloc(size_t a, size_t b)
{
	void *p = calloc(a, b);

	if (!p)
		die("out of memory");
	return p;
}

void log_line_once(atomic_int *flag, const char *what,
		   const char *line, size_t len)
{
	char buf[256];
	size_t o = 0;

	if (atomic_exchange(flag, 1))
		return;
	for (size_t i = 0; i < len && o < sizeof(buf) - 5; i++) {
		unsigned char c = (unsigned char)line[i];

		if (c >= 32 && c < 127 && c != '\\') {
			buf[o++] = (char)c;
		} else {
			snprintf(buf + o, 5, "\\x%02x", c);
			o += 4;
		}
	}
	buf[o] = 0;
	fprintf(stderr, "loadgen: %s: \"%s\"%s (logged once)\n", what, buf,
		len > 60 && o >= sizeof(buf) - 5 ? "..." : "");
}

size_t u64_to_str(char *p, uint64_t v)
{
	char tmp[24];
	size_t n = 0, i;

	do {
		tmp[n++] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	for (i = 0; i < n; i++)
		p[i] = tmp[n - 1 - i];
	return n;
}
