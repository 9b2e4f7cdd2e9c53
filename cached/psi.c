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
 * their items become lost and are rebuilt or missed like purged ones).  The
 * kernel signals a trigger at most once per window, so a follow-up timer
 * then reads the "some" stall total once a second and drops another slice
 * for every second that still stalled at the trigger's rate, until the
 * pressure stops.
 */
#include "psi.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/epoll.h>
#include <unistd.h>

#include <event2/event.h>

#include "daemon.h"
#include "store.h"

static int psi_fd = -1, ep_fd = -1;
static struct event *psi_ev, *follow_ev;
static uint64_t last_total;     /* "some" stall total at the last look, us */

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
	cache_wrlock();
	stats.psi_events++;
	stats.psi_drops++;
	cache_unlock();
	drop_slice("memory pressure");
	last_total = some_total();
	evtimer_add(follow_ev, &second);
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
	follow_ev = evtimer_new(base, follow_cb, NULL);
	if (!psi_ev || !follow_ev)
		return -1;
	event_add(psi_ev, NULL);
	logmsg(1, "psi: trigger 'some %u %u' armed", settings.psi_stall_us,
	       settings.psi_window_us);
	return 0;
}
