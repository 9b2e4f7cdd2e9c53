// SPDX-License-Identifier: GPL-2.0-only
/*
 * main.c - start-up, the main thread's loop (clock, volatility timer,
 * spare segments, PSI, signals) and clean shutdown.  The options are
 * options.c's, the listening sockets and accept listen.c's; the state
 * every part shares is daemon.c's.
 *
 * As root the daemon wants -u USER and drops to that user after binding.
 * The process, as memcached runs it: -d daemonizes (the command returns
 * once the daemon serves, or with the daemon's exit status when its
 * start fails), -P writes the pid file, a log file takes stdout and
 * stderr and SIGHUP reopens it (logrotate), -r raises the core limit, -k
 * locks the memory.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <fcntl.h>
#include <malloc.h>
#include <grp.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <event2/event.h>
#include <event2/thread.h>

#include "cache.h"
#include "daemon.h"
#include "listen.h"
#include "fetch.h"
#include "index.h"
#include "madvfree.h"
#include "options.h"
#include "psi.h"
#include "stats.h"
#include "store.h"
#include "thread.h"
#include "volatile_fadvise.h"

static struct event_base *main_base;

/*
 * The daemon's clock, as memcached keeps it: the wall-clock second at
 * start plus the monotonic seconds since.  A step of the wall clock (NTP,
 * an operator) then neither expires every item nor makes all data idle at
 * once (idle ages and expiry both read the clock seconds).
 */
static struct timespec mono_start;
static uint32_t wall_start;

static uint32_t clock_now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return wall_start + (uint32_t)(t.tv_sec - mono_start.tv_sec);
}

/* Once a second: the clock, then the cache's upkeep (cache_tick). */
static void clock_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;

	clock_set(clock_now());
	cache_tick(clock_secs(), (uint32_t)settings.idle_secs);
}

/* Keep a few populated spare segments ready for the workers. */
static void spare_cb(evutil_socket_t fd, short what, void *arg)
{
	(void)fd;
	(void)what;
	(void)arg;

	for (;;) {
		uint32_t s;
		size_t len;
		void *p;

		cache_wrlock();
		s = store_spare_take();
		cache_unlock();
		if (s == SEG_NONE)
			return;
		p = store_slot_ptr(s, &len);
		if (madvise(p, len, MADV_POPULATE_WRITE) < 0)
			memset(p, 0, len);   /* older kernels: touch every page */
		cache_wrlock();
		store_spare_put(s);
		cache_unlock();
	}
}

static struct event *spare_ev;

/* Called under cache_lock from a worker: wake the main thread. */
static void spare_wanted(void)
{
	event_active(spare_ev, EV_READ, 0);
}

static void signal_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)what;
	(void)arg;
	logmsg(1, "signal %d: shutting down", (int)sig);
	event_base_loopbreak(main_base);
}

static void drop_privileges(void)
{
	struct passwd *pw;

	if (getuid() != 0 && geteuid() != 0)
		return;
	if (!settings.username) {
		fprintf(stderr, "cached: can't run as root without the -u switch\n");
		exit(EX_USAGE);
	}
	pw = getpwnam(settings.username);
	if (!pw) {
		fprintf(stderr, "cached: can't find the user %s to switch to\n",
			settings.username);
		exit(EX_USAGE);
	}
	if (pw->pw_uid == 0)
		return;
	if (setgroups(0, NULL) < 0 || setgid(pw->pw_gid) < 0 ||
	    setuid(pw->pw_uid) < 0) {
		fprintf(stderr, "cached: failed to assume identity of user %s\n",
			settings.username);
		exit(EX_USAGE);
	}
}

/* ---- the process, as memcached's is run ------------------------------- */

/* logfile: stdout and stderr appended to it, stdin from /dev/null, as
 * Debian's start-memcached sets memcached up. */
static int log_open(void)
{
	int fd = open(run_opts.logfile, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);

	if (fd < 0)
		return -1;
	fflush(stdout);
	if (dup2(fd, STDOUT_FILENO) < 0 || dup2(fd, STDERR_FILENO) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	return 0;
}

/* SIGHUP: the log file again by its name (logrotate renamed it). */
static void sighup_cb(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	(void)arg;
	if (!run_opts.logfile) {
		logmsg(1, "SIGHUP: no log file to reopen");
		return;
	}
	if (log_open() < 0) {
		logmsg(0, "SIGHUP: cannot reopen the log file %s: %s; logging on to the old one",
		       run_opts.logfile, strerror(errno));
		return;
	}
	logmsg(1, "SIGHUP: log file %s reopened", run_opts.logfile);
}

static int ready_fd = -1;

/*
 * -d: fork; the parent waits until the daemon serves (daemon_ready) and
 * exits 0, or exits with the daemon's status when its start fails, so
 * that an init script or a Type=forking unit learns of a port in use.
 */
static void daemon_start(void)
{
	int p[2], st;
	pid_t pid;
	char b;

	if (pipe2(p, O_CLOEXEC) < 0 || (pid = fork()) < 0) {
		fprintf(stderr, "cached: -d: %s\n", strerror(errno));
		exit(1);
	}
	if (pid > 0) {
		ssize_t n;

		close(p[1]);
		while ((n = read(p[0], &b, 1)) < 0 && errno == EINTR)
			;
		if (n == 1)
			_exit(0);
		while (waitpid(pid, &st, 0) < 0 && errno == EINTR)
			;
		if (run_opts.logfile)
			fprintf(stderr, "cached: the daemon did not start, see %s\n",
				run_opts.logfile);
		_exit(WIFEXITED(st) && WEXITSTATUS(st) ? WEXITSTATUS(st) : 1);
	}
	close(p[0]);
	ready_fd = p[1];
	setsid();
}

/* The daemon serves: let go of the terminal, and of the parent. */
static void daemon_ready(void)
{
	int fd = open("/dev/null", O_RDWR | O_CLOEXEC);

	if (fd >= 0) {
		/* as memcached: -v keeps the terminal, a log file keeps its own */
		dup2(fd, STDIN_FILENO);
		if (!run_opts.logfile && !settings.verbose) {
			dup2(fd, STDOUT_FILENO);
			dup2(fd, STDERR_FILENO);
		}
		close(fd);
	}
	if (!run_opts.maxcore && chdir("/") < 0)
		logmsg(1, "-d: chdir /: %s", strerror(errno));
	if (write(ready_fd, "", 1) < 0)
		logmsg(1, "-d: the parent is gone");
	close(ready_fd);
	ready_fd = -1;
}

/* -P: the pid in the file, written under another name and renamed in, as
 * memcached writes it, so that a reader never finds it empty. */
static void pidfile_write(void)
{
	char tmp[4200];
	FILE *f;

	snprintf(tmp, sizeof(tmp), "%s.tmp", run_opts.pidfile);
	f = fopen(tmp, "w");
	if (!f || fprintf(f, "%ld\n", (long)getpid()) < 0 || fclose(f) != 0 ||
	    rename(tmp, run_opts.pidfile) < 0)
		fprintf(stderr, "cached: cannot write the pid file %s: %s\n",
			run_opts.pidfile, strerror(errno));
}

/* -r: the core file limit as high as it goes, as memcached raises it. */
static void core_limit(void)
{
	struct rlimit rl;

	if (getrlimit(RLIMIT_CORE, &rl) == 0) {
		struct rlimit want = { RLIM_INFINITY, RLIM_INFINITY };

		if (setrlimit(RLIMIT_CORE, &want) != 0) {
			want.rlim_cur = want.rlim_max = rl.rlim_max;
			setrlimit(RLIMIT_CORE, &want);
		}
	}
	if (getrlimit(RLIMIT_CORE, &rl) != 0 || rl.rlim_cur == 0) {
		fprintf(stderr, "cached: -r: failed to ensure corefile creation\n");
		exit(71);   /* EX_OSERR, as memcached */
	}
}

/*
 * -k: lock the daemon's pages in memory, as memcached's mlockall, but as
 * they are touched (MCL_ONFAULT): the store reserves address space for
 * --memory-max that it never touches.  As memcached, a failure (the
 * memlock limit of a user without CAP_IPC_LOCK) is a warning.
 */
static void lock_memory(void)
{
	if (mlockall(MCL_CURRENT | MCL_FUTURE | MCL_ONFAULT) != 0)
		fprintf(stderr, "cached: warning: -k invalid, mlockall() failed: %s\n",
			strerror(errno));
}

int main(int argc, char **argv)
{
	struct timeval one_sec = { 1, 0 };
	struct event *clock_ev, *sigterm_ev, *sigint_ev, *sighup_ev;
	bool vol = false;
	int sup;

	/*
	 * Buffers of large values (a connection's read buffer holds one of
	 * up to -I bytes) come from mmap and go back on free.  glibc's default
	 * raises the threshold after such a free, and the per-thread arenas
	 * then keep every freed buffer: with -m 16, 10.5 MB of anonymous
	 * memory after a mixed load, 5.7 MB with this.
	 */
	mallopt(M_MMAP_THRESHOLD, 64 * 1024);
	options_parse(argc, argv);
	if ((getuid() == 0 || geteuid() == 0) && !settings.username) {
		fprintf(stderr, "cached: can't run as root without the -u switch\n");
		return EX_USAGE;
	}
	signal(SIGPIPE, SIG_IGN);
	if (run_opts.logfile) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd >= 0) {
			dup2(fd, STDIN_FILENO);
			close(fd);
		}
		if (log_open() < 0) {
			fprintf(stderr, "cached: logfile %s: %s\n", run_opts.logfile,
				strerror(errno));
			return EX_USAGE;
		}
	}
	if (run_opts.maxcore)
		core_limit();
	if (run_opts.daemonize)
		daemon_start();
	wall_start = (uint32_t)time(NULL);
	clock_gettime(CLOCK_MONOTONIC, &mono_start);
	process_started = wall_start;
	clock_set(wall_start);
	process_started -= 2;   /* as memcached: absolute times <= start are past */

	settings.mode_eff = settings.mode;
	if (settings.mode == MODE_VOLATILE) {
		sup = vol_supported();
		if (sup == 1) {
			vol = true;
		} else {
			fprintf(stderr, "cached: this kernel has no volatile ranges on "
				"memfd (POSIX_FADV_VOLATILE); running in pinned mode\n");
			settings.mode_eff = MODE_PINNED;
		}
	}
	if (settings.mode == MODE_MADVFREE) {
		if (madv_supported()) {
			vol = true;
			store_use_madvfree();
		} else {
			fprintf(stderr, "cached: this kernel has no MADV_FREE; "
				"running in pinned mode\n");
			settings.mode_eff = MODE_PINNED;
		}
	}
	if (evthread_use_pthreads() < 0 || !(main_base = event_base_new())) {
		fprintf(stderr, "cached: libevent initialisation failed\n");
		return 1;
	}
	listen_raise_fd_limit();
	if (cache_init(settings.maxbytes, vol) < 0) {
		fprintf(stderr, "cached: cannot create the value store: %s\n",
			strerror(errno));
		return 1;
	}
	/* signals first: a SIGTERM right after the port opens stops cleanly */
	sigterm_ev = evsignal_new(main_base, SIGTERM, signal_cb, NULL);
	sigint_ev = evsignal_new(main_base, SIGINT, signal_cb, NULL);
	event_add(sigterm_ev, NULL);
	event_add(sigint_ev, NULL);
	/* SIGHUP reopens the log file; without one it changes nothing */
	sighup_ev = evsignal_new(main_base, SIGHUP, sighup_cb, NULL);
	event_add(sighup_ev, NULL);
	if (listen_open(main_base) < 0)
		return 1;
	/* as root, before -u gives it up: /run is root's */
	if (run_opts.pidfile)
		pidfile_write();
	/* a PSI trigger needs privileges that -u gives up: arm it first */
	if (settings.mode == MODE_PSI && psi_init(main_base) < 0) {
		fprintf(stderr, "cached: PSI unavailable; running in pinned mode\n");
		settings.mode_eff = MODE_PINNED;
	}
	drop_privileges();
	/* as the user it runs as, as memcached locks */
	if (run_opts.lock_memory)
		lock_memory();
	if (fetch_init(settings.fetch_threads) < 0) {
		fprintf(stderr, "cached: cannot create fetch threads\n");
		return 1;
	}
	if (threads_init(settings.num_threads) < 0) {
		fprintf(stderr, "cached: cannot create worker threads\n");
		return 1;
	}
	threads_start();

	spare_ev = event_new(main_base, -1, EV_PERSIST, spare_cb, NULL);
	event_add(spare_ev, NULL);
	store_spare_wanted = spare_wanted;
	spare_cb(-1, 0, NULL);

	clock_ev = event_new(main_base, -1, EV_PERSIST, clock_cb, NULL);
	event_add(clock_ev, &one_sec);
	logmsg(1, "listening (%s mode, %llu MB, %d threads)",
	       mode_name(settings.mode_eff),
	       (unsigned long long)(settings.maxbytes >> 20), settings.num_threads);
	if (run_opts.daemonize)
		daemon_ready();

	event_base_dispatch(main_base);

	threads_stop();
	fetch_stop();
	if (settings.socketpath)
		unlink(settings.socketpath);
	/* as memcached: a daemon removes its pid file */
	if (run_opts.daemonize && run_opts.pidfile && unlink(run_opts.pidfile) < 0)
		logmsg(1, "cannot remove the pid file %s: %s", run_opts.pidfile,
		       strerror(errno));
	logmsg(1, "stopped");
	return 0;
}
