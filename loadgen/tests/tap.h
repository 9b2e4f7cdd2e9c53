/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tap.h - the few helpers the unit tests share.  Every test prints
 * "PASS name" or "FAIL name" (argv[1], if given, prefixes the names so the
 * sanitizer build reports separately); main returns non-zero on a failure.
 */
#ifndef TAP_H
#define TAP_H

#include <stdarg.h>
#include <stdio.h>

static const char *tap_prefix = "";
static int tap_failed;
static int tap_cur_failed;

/* Record a failed check with a message; the test continues. */
static void tap_fail(const char *fmt, ...)
{
	va_list ap;

	if (tap_cur_failed++ >= 5)
		return;
	fputs("  # ", stdout);
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	fputc('\n', stdout);
}

#define CHECK(cond, ...) do { if (!(cond)) tap_fail(__VA_ARGS__); } while (0)

static void tap_run(const char *name, void (*fn)(void))
{
	tap_cur_failed = 0;
	fn();
	printf("%s %s%s\n", tap_cur_failed ? "FAIL" : "PASS", tap_prefix, name);
	fflush(stdout);
	tap_failed |= tap_cur_failed;
}

#define TAP_INIT(argc, argv) do { if ((argc) > 1) tap_prefix = (argv)[1]; } while (0)
#define RUN(fn) tap_run(#fn, fn)

#endif /* TAP_H */
