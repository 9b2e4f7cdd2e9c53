// SPDX-License-Identifier: GPL-2.0-only
/*
 * clockstep.c - LD_PRELOAD shim for tests: the wall clock (time(),
 * gettimeofday(), clock_gettime(CLOCK_REALTIME)) runs CLOCKSTEP_FILE's
 * number of seconds ahead, read on every call, so a test can step the
 * wall clock of one process without touching the machine's.  Monotonic
 * clocks are left alone.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/time.h>
#include <time.h>

static long step(void)
{
	const char *path = getenv("CLOCKSTEP_FILE");
	long s = 0;
	FILE *f;

	if (!path || !(f = fopen(path, "r")))
		return 0;
	if (fscanf(f, "%ld", &s) != 1)
		s = 0;
	fclose(f);
	return s;
}

int clock_gettime(clockid_t id, struct timespec *ts)
{
	static int (*real)(clockid_t, struct timespec *);
	int r;

	if (!real)
		real = (int (*)(clockid_t, struct timespec *))dlsym(RTLD_NEXT, "clock_gettime");
	r = real(id, ts);
	if (r == 0 && (id == CLOCK_REALTIME || id == CLOCK_REALTIME_COARSE))
		ts->tv_sec += step();
	return r;
}

time_t time(time_t *t)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	if (t)
		*t = ts.tv_sec;
	return ts.tv_sec;
}

int gettimeofday(struct timeval *tv, void *tz)
{
	struct timespec ts;

	(void)tz;
	clock_gettime(CLOCK_REALTIME, &ts);
	tv->tv_sec = ts.tv_sec;
	tv->tv_usec = ts.tv_nsec / 1000;
	return 0;
}
