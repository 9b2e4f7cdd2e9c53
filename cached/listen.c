// SPDX-License-Identifier: GPL-2.0-only
/*
 * listen.c - the listening sockets and accept, in the main thread's event
 * loop: TCP on each address of -l (with -p, or a port of its own) or a
 * UNIX socket with -s (mode -a), a listen queue of -b, the -c connection limit
 * ("ERROR Too many open connections"), and the pause when descriptors
 * run out.  An accepted socket goes to a worker (thread_dispatch,
 * thread.c); from there on it is the worker's.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <event2/event.h>

#include "listen.h"

#include "conn.h"
#include "daemon.h"
#include "thread.h"

/*
 * Out of descriptors (EMFILE, ENFILE): as memcached does, stop accepting
 * instead of spinning on a listening socket that stays readable, and try
 * again every ACCEPT_RETRY_MS; connections wait in the kernel's backlog
 * meanwhile.  Counted in listen_disabled_num.
 */
#define MAX_LISTENERS 16
#define ACCEPT_RETRY_MS 10
static struct event *listen_evs[MAX_LISTENERS];
static int nlisten_evs;
static struct event_base *listen_base;
static struct event *accept_retry_ev;
static bool accept_paused;
static uint64_t paused_at;     /* now_usec() at the pause */

static void accept_resume_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;
	accept_paused = false;
	__atomic_fetch_add(&stat_listen_disabled_us, now_usec() - paused_at, __ATOMIC_RELAXED);
	__atomic_store_n(&stat_accepting, 1, __ATOMIC_RELAXED);
	for (int i = 0; i < nlisten_evs; i++)
		event_add(listen_evs[i], NULL);
}

static void accept_pause(void)
{
	struct timeval tv = { 0, ACCEPT_RETRY_MS * 1000 };

	if (accept_paused)
		return;
	accept_paused = true;
	paused_at = now_usec();
	__atomic_store_n(&stat_accepting, 0, __ATOMIC_RELAXED);
	for (int i = 0; i < nlisten_evs; i++)
		event_del(listen_evs[i]);
	__atomic_fetch_add(&stat_listen_disabled, 1, __ATOMIC_RELAXED);
	logmsg(1, "out of file descriptors (-c %d): accepting paused",
	       settings.maxconns);
	evtimer_add(accept_retry_ev, &tv);
}

/*
 * -c connections need as many descriptors, plus the daemon's own (memfd,
 * listeners, event loops, upstream connections): raise the soft limit to
 * that if it is lower, as far as the hard limit allows.  Past the limit
 * accept fails with EMFILE and accept_pause() takes over.
 */
#define FD_RESERVE 64

void listen_raise_fd_limit(void)
{
	struct rlimit rl;
	rlim_t need = (rlim_t)settings.maxconns + FD_RESERVE +
		      4 * (rlim_t)settings.num_threads;

	if (getrlimit(RLIMIT_NOFILE, &rl) < 0 || rl.rlim_cur >= need)
		return;
	rl.rlim_cur = rl.rlim_max == RLIM_INFINITY || rl.rlim_max >= need ?
		      need : rl.rlim_max;
	setrlimit(RLIMIT_NOFILE, &rl);
	if (rl.rlim_cur < need)
		logmsg(0, "-c %d needs %llu descriptors, the limit is %llu: accepting pauses when they run out",
		       settings.maxconns, (unsigned long long)need,
		       (unsigned long long)rl.rlim_cur);
}

static void accept_cb(evutil_socket_t lfd, short what, void *arg);

static void listen_on(int fd)
{
	struct event *ev = event_new(listen_base, fd, EV_READ | EV_PERSIST,
				     accept_cb, NULL);

	if (!ev || nlisten_evs == MAX_LISTENERS) {
		fprintf(stderr, "cached: too many listening sockets\n");
		exit(1);
	}
	listen_evs[nlisten_evs++] = ev;
	__atomic_store_n(&stat_listeners, (uint32_t)nlisten_evs, __ATOMIC_RELAXED);
	event_add(ev, NULL);
	conns_add_listener(fd);
}

static void accept_cb(evutil_socket_t lfd, short what, void *arg)
{
	(void)what;
	(void)arg;

	for (int i = 0; i < 64; i++) {
		int fd = accept4(lfd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
		int one = 1;

		if (fd < 0) {
			if (errno == EMFILE || errno == ENFILE)
				accept_pause();
			return;
		}
		if (__atomic_load_n(&stat_curr_conns, __ATOMIC_RELAXED) >=
		    (uint64_t)settings.maxconns) {
			static const char msg[] = "ERROR Too many open connections\r\n";

			if (write(fd, msg, sizeof(msg) - 1) < 0) {
				/* the client is gone anyway */
			}
			close(fd);
			__atomic_fetch_add(&stat_rejected_conns, 1, __ATOMIC_RELAXED);
			logmsg(1, "connection refused: -c %d reached", settings.maxconns);
			continue;
		}
		setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
		__atomic_fetch_add(&stat_curr_conns, 1, __ATOMIC_RELAXED);
		__atomic_fetch_add(&stat_total_conns, 1, __ATOMIC_RELAXED);
		thread_dispatch(fd);
	}
}

/*
 * TCP listeners on one address of -l: HOST, HOST:PORT, [IPV6] or
 * [IPV6]:PORT, as memcached takes them (a notls: prefix, which says this
 * one has no TLS, is dropped: none has); * or nothing is every address.
 * Returns the number of sockets, or -1 after printing why.
 */
static int listen_tcp(const char *spec)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM, .ai_flags = AI_PASSIVE };
	struct addrinfo *res, *ai;
	char host[256], port[16];
	const char *colon;
	int rc, n = 0;

	if (!strncmp(spec, "notls:", 6))
		spec += 6;
	snprintf(port, sizeof(port), "%d", settings.port);
	if (spec[0] == '[') {
		const char *end = strchr(spec, ']');

		if (!end || (end[1] && (end[1] != ':' || !end[2])) ||
		    (size_t)(end - spec) > sizeof(host)) {
			fprintf(stderr, "cached: bad listen address %s\n", spec);
			return -1;
		}
		snprintf(host, sizeof(host), "%.*s", (int)(end - spec - 1), spec + 1);
		if (end[1])
			snprintf(port, sizeof(port), "%s", end + 2);
	} else if ((colon = strchr(spec, ':')) && !strchr(colon + 1, ':')) {
		snprintf(host, sizeof(host), "%.*s", (int)(colon - spec), spec);
		snprintf(port, sizeof(port), "%s", colon + 1);
	} else {
		snprintf(host, sizeof(host), "%s", spec);
	}
	rc = getaddrinfo(strcmp(host, "*") && host[0] ? host : NULL, port, &hints, &res);
	if (rc) {
		fprintf(stderr, "cached: bad listen address %s: %s\n", spec, gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai; ai = ai->ai_next) {
		int fd = socket(ai->ai_family, ai->ai_socktype | SOCK_NONBLOCK | SOCK_CLOEXEC,
				ai->ai_protocol);
		int one = 1;

		if (fd < 0)
			continue;
		setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
		if (ai->ai_family == AF_INET6)
			setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
		if (bind(fd, ai->ai_addr, ai->ai_addrlen) < 0 ||
		    listen(fd, settings.backlog) < 0) {
			fprintf(stderr, "cached: cannot listen on %s port %s: %s\n",
				host, port, strerror(errno));
			close(fd);
			freeaddrinfo(res);
			return -1;
		}
		listen_on(fd);
		n++;
	}
	freeaddrinfo(res);
	return n;
}

/* -l ADDR[,ADDR...] (memcached also takes ; between them). */
static int listen_list(const char *list)
{
	char *copy = strdup(list), *save = NULL, *spec;
	int n = 0, r = 0;

	if (!copy)
		return -1;
	for (spec = strtok_r(copy, ",;", &save); spec && r >= 0;
	     spec = strtok_r(NULL, ",;", &save)) {
		r = listen_tcp(spec);
		n += r > 0 ? r : 0;
	}
	free(copy);
	if (r >= 0 && !n)
		fprintf(stderr, "cached: no address to listen on in %s\n", list);
	return r < 0 || !n ? -1 : 0;
}

/* Listening sockets: TCP on -l/-p, or the UNIX socket with -s. */
int listen_open(struct event_base *base)
{
	listen_base = base;
	accept_retry_ev = evtimer_new(base, accept_resume_cb, NULL);
	if (!accept_retry_ev)
		return -1;
	if (settings.socketpath) {
		struct sockaddr_un sa = { .sun_family = AF_UNIX };
		struct stat st;
		int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);

		if (strlen(settings.socketpath) >= sizeof(sa.sun_path)) {
			fprintf(stderr, "cached: socket path too long\n");
			return -1;
		}
		strcpy(sa.sun_path, settings.socketpath);
		/*
		 * A socket left behind is replaced; anything else stays, and
		 * the bind below fails on it, as in memcached
		 */
		if (lstat(settings.socketpath, &st) == 0 && S_ISSOCK(st.st_mode))
			unlink(settings.socketpath);
		if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0 ||
		    listen(fd, settings.backlog) < 0) {
			fprintf(stderr, "cached: unix socket %s: %s\n",
				settings.socketpath, strerror(errno));
			return -1;
		}
		chmod(settings.socketpath, (mode_t)settings.access_mask);   /* -a */
		listen_on(fd);
		return 0;
	}

	return listen_list(settings.inter);
}
