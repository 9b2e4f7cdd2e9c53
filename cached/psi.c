// SPDX-License-Identifier: GPL-2.0-only
/*
 * psi.c - memory-pressure driven dropping (--mode psi), the user-space
 * alternative that kernel-driven volatile ranges are compared with.
 *
 * Two policies.  The default, band, is the way CacheLib's MemoryMonitor
 * gives memory back (its free-memory mode): every --psi-interval the
 * daemon reads the free memory it may use (MemAvailable from
 * /proc/meminfo, or less when its cgroup, or one above it, has a
 * memory.max: that limit minus memory.current); below --psi-low it gives
 * back --psi-step percent of the band (high - low), coldest segments
 * first, and lowers its budget by as much, at most --psi-max percent of
 * the cache in all; above --psi-high it takes back a step (the budget
 * grows again, the data does not come back); inside the band it waits.
 * Given-back data is lost, as a purge loses it: rebuilt from the origin
 * or reported (`EN P`) and missed.  A PSI trigger on /proc/pressure/memory
 * ("some STALL WINDOW") wakes the monitor at once when stalls start,
 * instead of at its next poll.
 *
 * psi_band_next() is the controller alone, a pure function the unit test
 * drives.
 *
 * The other policy, trigger, is the first version: each trigger event
 * drops --psi-drop percent of the cache, and a follow-up timer reads the
 * "some" stall total once a second and drops another slice for every
 * second that still stalled at the trigger's rate, until the pressure
 * stops; nothing bounds the total.
 *
 * libevent 2.1 cannot wait for POLLPRI directly, so the trigger's fd is put
 * in a private epoll set (EPOLLPRI) and that epoll fd, which becomes
 * readable when the trigger fires, is watched by the main loop.
 */
#include "psi.h"

#include <errno.h>
#include <stdbool.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon.h"
#include "store.h"

static int psi_fd = -1, ep_fd = -1;
static struct event *psi_ev, *follow_ev, *poll_ev;
static uint64_t last_total;     /* "some" stall total at the last look, us */
static struct psi_band band;    /* the band policy's limits, bytes */
static uint64_t advised;        /* bytes given back (band policy) */

uint64_t psi_band_next(const struct psi_band *b, uint64_t given,
		       uint64_t free_bytes)
{
	if (free_bytes < b->low)
		return given + b->step < b->cap ? given + b->step : b->cap;
	if (free_bytes > b->high)
		return given > b->step ? given - b->step : 0;
	return given < b->cap ? given : b->cap;
}

/* One "Name:  N kB" figure of a meminfo file, in bytes; 0 if absent. */
static uint64_t meminfo_value(const char *path, const char *name)
{
	char line[256];
	unsigned long long kb = 0;
	size_t len = strlen(name);
	FILE *f = fopen(path, "re");

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (!strncmp(line, name, len) && line[len] == ':') {
			sscanf(line + len + 1, "%llu", &kb);
			break;
		}
	fclose(f);
	return (uint64_t)kb << 10;
}

static const char *meminfo_path(void)
{
	const char *p = getenv("CACHED_MEMINFO");   /* tests: a file of theirs */

	return p && *p ? p : "/proc/meminfo";
}

/* A cgroup v2 file's number; UINT64_MAX for "max" or when unreadable. */
static uint64_t cgroup_value(const char *dir, const char *file)
{
	char path[4096], buf[64];
	unsigned long long v;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "%s/%s", dir, file);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return UINT64_MAX;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return UINT64_MAX;
	buf[n] = '\0';
	if (sscanf(buf, "%llu", &v) != 1)
		return UINT64_MAX;
	return v;
}

/*
 * Headroom under the tightest memory.max of the daemon's cgroup and the
 * cgroups above it (cgroup v2); UINT64_MAX when none is limited.
 */
static uint64_t cgroup_headroom(void)
{
	char line[4096], dir[4096 + 32];
	uint64_t room = UINT64_MAX;
	FILE *f = fopen("/proc/self/cgroup", "re");
	char *slash;

	if (!f)
		return room;
	if (!fgets(line, sizeof(line), f) || strncmp(line, "0::/", 4)) {
		fclose(f);
		return room;
	}
	fclose(f);
	line[strcspn(line, "\n")] = '\0';
	snprintf(dir, sizeof(dir), "/sys/fs/cgroup%s", line + 3);
	for (;;) {
		uint64_t max = cgroup_value(dir, "memory.max");
		uint64_t cur = cgroup_value(dir, "memory.current");

		if (max != UINT64_MAX && cur != UINT64_MAX)
			room = cur < max ? (max - cur < room ? max - cur : room) : 0;
		slash = strrchr(dir, '/');
		if (!slash || slash - dir <= (long)strlen("/sys/fs/cgroup"))
			break;
		*slash = '\0';
	}
	return room;
}

/* Free memory the cache may count on: MemAvailable, or cgroup headroom. */
static uint64_t free_memory(void)
{
	uint64_t avail = meminfo_value(meminfo_path(), "MemAvailable");
	uint64_t room = cgroup_headroom();

	return room < avail ? room : avail;
}

/*
 * Band policy: one look at free memory, and a step if it is outside the
 * band.  The cap and the budget follow settings.maxbytes, which
 * cache_memlimit may have changed since the last poll.
 */
static void band_poll(const char *why)
{
	uint64_t free_bytes = free_memory(), next, budget, dropped = 0;
	static uint64_t applied = UINT64_MAX;   /* the budget last set */
	bool up;

	cache_wrlock();
	band.cap = settings.maxbytes / 100 * settings.psi_max_pct;
	next = psi_band_next(&band, advised, free_bytes);
	budget = settings.maxbytes > next ? settings.maxbytes - next : 0;
	stats.psi_polls++;
	stats.psi_free_bytes = free_bytes;
	if (next == advised && (!advised || budget == applied)) {
		cache_unlock();
		return;
	}
	up = next > advised;
	if (up) {
		dropped = store_give_back(budget);
		stats.psi_drops++;
	} else {
		if (next < advised)
			stats.psi_reclaims++;
		store_set_budget(budget);
	}
	applied = budget;
	advised = next;
	stats.psi_advised_bytes = next;
	cache_unlock();
	logmsg(1, "psi: %s, %llu MB free: %s to %llu MB given back (%llu bytes of cold data dropped)",
	       why, (unsigned long long)(free_bytes >> 20),
	       up ? "up" : "down", (unsigned long long)(next >> 20),
	       (unsigned long long)dropped);
}

static void poll_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	band_poll("poll");
}

/* The "some" stall total of memory, in microseconds; 0 if unreadable. */
static uint64_t some_total(void)
{
	char buf[256];
	unsigned long long total = 0;
	const char *t;
	ssize_t n;
	int fd = open("/proc/pressure/memory", O_RDONLY | O_CLOEXEC);

	if (fd < 0)
		return 0;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return 0;
	buf[n] = '\0';
	t = strstr(buf, "total=");      /* the first line is "some" */
	if (t)
		sscanf(t + 6, "%llu", &total);
	return total;
}

/* Drop one slice of the coldest data. */
static void drop_slice(const char *why)
{
	uint64_t want = settings.maxbytes / 100 * settings.psi_drop_pct, dropped;

	cache_wrlock();
	dropped = store_drop_coldest(want);
	cache_unlock();
	logmsg(1, "psi: %s, dropped %llu bytes of cold data", why,
	       (unsigned long long)dropped);
}

/* A second after a drop: drop again while the stall goes on. */
static void follow_cb(evutil_socket_t fd, short what, void *arg)
{
	/* the trigger's rate of stall, per second */
	uint64_t rate = (uint64_t)settings.psi_stall_us * 1000000 /
			settings.psi_window_us;
	uint64_t total = some_total();
	struct timeval second = { 1, 0 };
	(void)fd;
	(void)what;
	(void)arg;

	if (total - last_total < rate) {
		logmsg(1, "psi: pressure stopped");
		return;
	}
	last_total = total;
	cache_wrlock();
	stats.psi_drops++;
	cache_unlock();
	drop_slice("memory pressure goes on");
	evtimer_add(follow_ev, &second);
}

/* The trigger fired: drop a slice of the coldest data. */
static void psi_cb(evutil_socket_t fd, short what, void *arg)
{
	struct epoll_event evs[4];
	struct timeval second = { 1, 0 };
	(void)what;
	(void)arg;

	/*
	 * The kernel hands a trigger's event to the first poll that asks:
	 * here that is the main loop's check of the epoll fd, so the
	 * epoll_wait() below finds nothing.  That the epoll fd became
	 * readable is the event; the call only drains the set.
	 */
	epoll_wait(fd, evs, 4, 0);
	if (settings.psi_policy == PSI_BAND) {
		cache_wrlock();
		stats.psi_events++;
		cache_unlock();
		band_poll("memory pressure");
		return;
	}
	cache_wrlock();
	stats.psi_events++;
	stats.psi_drops++;
	cache_unlock();
	drop_slice("memory pressure");
	last_total = some_total();
	evtimer_add(follow_ev, &second);
}

/*
 * The band's defaults scale with the machine: low is an eighth of
 * MemTotal, high a quarter (CacheLib's defaults, 10 and 15 GB, are the
 * same kind of share of the 144 GB machines it was tuned on).
 */
static int band_init(struct event_base *base)
{
	struct timeval tv = { settings.psi_interval_ms / 1000,
			      settings.psi_interval_ms % 1000 * 1000 };
	uint64_t total = meminfo_value(meminfo_path(), "MemTotal");

	if (!total) {
		logmsg(0, "psi: cannot read MemTotal from %s", meminfo_path());
		return -1;
	}
	band.low = settings.psi_low ? settings.psi_low : total / 8;
	band.high = settings.psi_high ? settings.psi_high : total / 4;
	if (band.high < band.low)
		band.high = band.low;
	settings.psi_low = band.low;      /* stats settings shows what is used */
	settings.psi_high = band.high;
	band.step = (band.high - band.low) / 100 * settings.psi_step_pct;
	if (!band.step)
		band.step = 1ull << 20;
	poll_ev = event_new(base, -1, EV_PERSIST, poll_cb, NULL);
	if (!poll_ev)
		return -1;
	event_add(poll_ev, &tv);
	logmsg(1, "psi: band of %llu-%llu MB free, %llu MB a step every %u ms, at most %llu MB",
	       (unsigned long long)(band.low >> 20),
	       (unsigned long long)(band.high >> 20),
	       (unsigned long long)(band.step >> 20), settings.psi_interval_ms,
	       (unsigned long long)(band.cap >> 20));
	return 0;
}

/* The PSI trigger and its event.  Returns 0, or -1 (logged). */
static int trigger_init(struct event_base *base)
{
	char trig[64];
	struct epoll_event ev = { .events = EPOLLPRI };
	int n;

	psi_fd = open("/proc/pressure/memory", O_RDWR | O_NONBLOCK | O_CLOEXEC);
	if (psi_fd < 0) {
		logmsg(0, "psi: cannot open /proc/pressure/memory (%s)",
		       strerror(errno));
		return -1;
	}
	n = snprintf(trig, sizeof(trig), "some %u %u", settings.psi_stall_us,
		     settings.psi_window_us);
	if (write(psi_fd, trig, (size_t)n + 1) < 0) {
		logmsg(0, "psi: cannot set trigger '%s' (%s)", trig,
		       strerror(errno));
		close(psi_fd);
		psi_fd = -1;
		return -1;
	}
	ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (ep_fd < 0 || epoll_ctl(ep_fd, EPOLL_CTL_ADD, psi_fd, &ev) < 0)
		return -1;
	psi_ev = event_new(base, ep_fd, EV_READ | EV_PERSIST, psi_cb, NULL);
	follow_ev = evtimer_new(base, follow_cb, NULL);
	if (!psi_ev || !follow_ev)
		return -1;
	event_add(psi_ev, NULL);
	logmsg(1, "psi: trigger 'some %u %u' armed", settings.psi_stall_us,
	       settings.psi_window_us);
	return 0;
}

/*
 * The trigger policy needs its trigger.  The band policy polls whether or
 * not a trigger can be armed (some kernels refuse triggers to unprivileged
 * or containerised callers); it needs only a readable meminfo.
 */
int psi_init(struct event_base *base)
{
	int trig = trigger_init(base);

	if (settings.psi_policy == PSI_TRIGGER)
		return trig;
	if (trig < 0)
		logmsg(0, "psi: no trigger: the band is polled every %u ms only",
		       settings.psi_interval_ms);
	return band_init(base);
}
