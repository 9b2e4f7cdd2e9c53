// SPDX-License-Identifier: GPL-2.0-only
/*
 * proto_admin.c - memcached 1.6's operator commands beyond the basic
 * protocol: lru_crawler (metadump lists every live item, as dump tools
 * expect), stats cachedump, and cache_memlimit (the memory limit at run
 * time).
 *
 * cached has no LRU crawler thread: metadump and cachedump walk the index
 * in steps of INDEX_WALK_STEP items, each under the shared lock, and the
 * worker's event loop runs between steps (run_stepped), so a get on any
 * worker, the scraper's own included, waits for one step at most, not for
 * the walk.  The connection that asked waits meanwhile (it reads nothing
 * more, so its replies stay in order) and gets the whole listing at the
 * end, so one metadump of a big cache takes memory for its reply (about
 * 100 bytes per item).  The other crawler commands are accepted and
 * answered as memcached answers them.
 */
#include "proto_admin.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/event.h>

#include "cache.h"
#include "conn.h"
#include "daemon.h"
#include "stats.h"
#include "store.h"
#include "worker.h"

#define MAX_SLAB_CLASS STORE_CLASSES

/*
 * A reply built by a walk in steps.  step(arg) does one step and returns
 * true when the walk is over; end(arg, out) appends the reply to out (or
 * only frees, when out is NULL: the connection closed) and frees arg.
 */
struct stepped {
	struct conn *c;
	struct event *ev;
	bool (*step)(void *arg);
	void (*end)(void *arg, struct evbuffer *out);
	void *arg;
};

static const struct timeval no_wait = { 0, 0 };

/*
 * One step per pass of the worker's event loop: a timer that is due at
 * once runs after the I/O that the pass found ready, so the connections
 * of this worker are served between any two steps.
 */
static void stepped_cb(evutil_socket_t fd, short what, void *arg)
{
	struct stepped *st = arg;
	struct conn *c = st->c;
	bool open = c->fd >= 0;

	(void)fd;
	(void)what;
	if (open && !st->step(st->arg)) {
		event_add(st->ev, &no_wait);
		return;
	}
	st->end(st->arg, open ? c->out : NULL);
	event_free(st->ev);
	free(st);
	if (open)
		conn_answered(c);
	conn_unref(c);
}

/*
 * Run a walk for c's reply: the first step at once, and when more are
 * needed, one step per pass of the event loop while c waits (as for an
 * origin, ST_WAIT).  Without a worker (the unit tests) or without memory
 * for the timer, the walk runs to its end here, still one lock hold per
 * step.
 */
static void run_stepped(struct conn *c, bool (*step)(void *arg),
			void (*end)(void *arg, struct evbuffer *out), void *arg)
{
	struct stepped *st;

	if (step(arg)) {
		end(arg, c->out);
		return;
	}
	st = c->w ? calloc(1, sizeof(*st)) : NULL;
	if (st)
		st->ev = evtimer_new(worker_base(c->w), stepped_cb, st);
	if (!st || !st->ev) {
		free(st);
		while (!step(arg))
			;
		end(arg, c->out);
		return;
	}
	st->c = c;
	st->step = step;
	st->end = end;
	st->arg = arg;
	c->pending++;
	conn_ref(c);
	c->state = ST_WAIT;
	c->wait_set = true;      /* not a get: the next get looks its keys up afresh */
	event_add(st->ev, &no_wait);
}

static bool cachedump_step(void *arg)
{
	return stats_cachedump_step(arg);
}

static void cachedump_end(void *arg, struct evbuffer *out)
{
	stats_cachedump_end(arg, out);
}

void process_cachedump(struct conn *c, uint32_t id, uint32_t limit)
{
	struct cachedump *d = stats_cachedump_new(id, limit);

	if (!d) {
		out_string(c, "SERVER_ERROR out of memory");
		return;
	}
	run_stepped(c, cachedump_step, cachedump_end, d);
}

struct metadump {
	struct evbuffer *out;
	bool classes[MAX_SLAB_CLASS];
	bool all;
	uint32_t now;
	uint64_t cursor;
};

/* memcached's uriencode: all but [A-Za-z0-9._~-] as %XX. */
static size_t uriencode(const char *src, size_t n, char *dst)
{
	static const char hex[] = "0123456789ABCDEF";
	size_t d = 0;

	for (size_t i = 0; i < n; i++) {
		unsigned char ch = (unsigned char)src[i];

		if ((ch >= 'a' && ch <= 'z') || (ch >= 'A' && ch <= 'Z') ||
		    (ch >= '0' && ch <= '9') || ch == '-' || ch == '.' ||
		    ch == '_' || ch == '~') {
			dst[d++] = (char)ch;
		} else {
			dst[d++] = '%';
			dst[d++] = hex[ch >> 4];
			dst[d++] = hex[ch & 15];
		}
	}
	dst[d] = '\0';
	return d;
}

static void dump_one(struct item *it, void *arg)
{
	struct metadump *m = arg;
	char key[KEY_MAX_LENGTH * 3 + 1];
	size_t ntotal = mc_item_size(it);
	unsigned int cls = mc_slab_class(ntotal);
	uint32_t exptime;

	if (!m->all && (cls >= MAX_SLAB_CLASS || !m->classes[cls]))
		return;
	if (!cache_alive(it, m->now) || it->state != ITEM_OK)
		return;
	exptime = item_exptime(it);
	uriencode(it->key, it->keylen, key);
	evbuffer_add_printf(m->out,
			    "key=%s exp=%ld la=%llu cas=%llu fetch=%s cls=%u size=%lu\n",
			    key, exptime == 0 ? -1L : (long)exptime,
			    (unsigned long long)item_atime(it),
			    (unsigned long long)it->cas,
			    item_fetched(it) ? "yes" : "no", cls,
			    (unsigned long)ntotal);
}

static bool metadump_step(void *arg)
{
	struct metadump *m = arg;

	return cache_walk_step(&m->cursor, dump_one, m);
}

static void metadump_end(void *arg, struct evbuffer *out)
{
	struct metadump *m = arg;

	if (out) {
		evbuffer_add_buffer(out, m->out);
		evbuffer_add(out, "END\r\n", 5);
	}
	evbuffer_free(m->out);
	free(m);
}

/* lru_crawler metadump all|hash|ID[,ID...] */
static void metadump(struct conn *c, char *which)
{
	bool classes[MAX_SLAB_CLASS] = { false };
	bool all = !strcmp(which, "all") || !strcmp(which, "hash");
	struct metadump *m;

	if (settings.no_dump) {   /* -X */
		out_string(c, "ERROR metadump not allowed");
		return;
	}
	if (evbuffer_get_length(c->out)) {
		out_string(c, "ERROR cannot pipeline other commands before metadump");
		return;
	}
	if (!all) {
		char *save = NULL;

		for (char *p = strtok_r(which, ",", &save); p;
		     p = strtok_r(NULL, ",", &save)) {
			uint32_t id;

			if (!safe_strtoul(p, &id) || id < 1 || id >= MAX_SLAB_CLASS) {
				out_string(c, "BADCLASS invalid class id");
				return;
			}
			classes[id] = true;
		}
	}
	m = calloc(1, sizeof(*m));
	if (m)
		m->out = evbuffer_new();
	if (!m || !m->out) {
		free(m);
		out_string(c, "SERVER_ERROR out of memory");
		return;
	}
	memcpy(m->classes, classes, sizeof(classes));
	m->all = all;
	m->now = clock_secs();
	run_stepped(c, metadump_step, metadump_end, m);
	out_commit(c);
}

void process_lru_crawler(struct conn *c, token_t *tokens, size_t ntokens)
{
	const char *sub = ntokens > 2 ? tokens[1].value : "";
	uint32_t v;

	if (ntokens == 4 && !strcmp(sub, "crawl")) {
		/* expired items are dropped when looked up; nothing to start */
		out_string(c, "OK");
	} else if (ntokens == 4 && !strcmp(sub, "metadump")) {
		metadump(c, tokens[2].value);
	} else if (ntokens == 4 && !strcmp(sub, "tocrawl")) {
		if (!safe_strtoul(tokens[2].value, &v))
			out_string(c, "CLIENT_ERROR bad command line format");
		else
			out_string(c, "OK");
	} else if (ntokens == 4 && !strcmp(sub, "sleep")) {
		if (!safe_strtoul(tokens[2].value, &v))
			out_string(c, "CLIENT_ERROR bad command line format");
		else if (v > 1000000)
			out_string(c, "CLIENT_ERROR sleep must be one second or less");
		else
			out_string(c, "OK");
	} else if (ntokens == 3 && (!strcmp(sub, "enable") || !strcmp(sub, "disable"))) {
		out_string(c, "OK");
	} else {
		out_string(c, "ERROR");
	}
}

/* cache_memlimit MB [noreply], memcached's replies and bounds. */
void process_memlimit(struct conn *c, token_t *tokens, size_t ntokens)
{
	uint32_t mb;
	int r;

	set_noreply_maybe(c, tokens, ntokens);
	if (!safe_strtoul(tokens[1].value, &mb)) {
		out_string(c, "ERROR");
		return;
	}
	if (mb < 8) {
		out_string(c, "MEMLIMIT_TOO_SMALL cannot set maxbytes to less than 8m");
		return;
	}
	if (mb > 1000000000) {
		out_string(c, "MEMLIMIT_ADJUST_FAILED input value is megabytes not bytes");
		return;
	}
	cache_wrlock();
	r = store_set_budget((uint64_t)mb << 20);
	if (r == 0)
		__atomic_store_n(&settings.maxbytes, (uint64_t)mb << 20,
				 __ATOMIC_RELAXED);
	cache_unlock();
	if (r == 0) {
		logmsg(1, "maxbytes adjusted to %um", mb);
		out_string(c, "OK");
	} else {
		out_string(c, "MEMLIMIT_ADJUST_FAILED out of bounds or unable to adjust");
	}
}

/* memcached's safe_strtod: a number, then nothing or a space. */
static bool safe_strtod(const char *str, double *out)
{
	char *end;
	double d;

	errno = 0;
	d = strtod(str, &end);
	if (errno == ERANGE || end == str || (*end && !isspace((unsigned char)*end)))
		return false;
	*out = d;
	return true;
}

/*
 * slabs automove 0|1|2 and slabs automove ratio R, with memcached's
 * replies (memcached-tool and its own tests send them).  cached has no
 * slab classes to move pages between, so nothing changes; stats settings
 * shows no slab_automove.  slabs reassign is not answered (ERROR).
 */
void process_slabs(struct conn *c, token_t *tokens, size_t ntokens)
{
	uint32_t level;
	double ratio;

	if (ntokens < 4 || strcmp(tokens[1].value, "automove")) {
		out_string(c, "ERROR");
		return;
	}
	set_noreply_maybe(c, tokens, ntokens);
	if (!strcmp(tokens[2].value, "ratio")) {
		if (ntokens < 5 || !safe_strtod(tokens[3].value, &ratio)) {
			out_string(c, "ERROR");
			return;
		}
	} else if (!safe_strtoul(tokens[2].value, &level)) {
		out_string(c, "CLIENT_ERROR bad command line format");
		return;
	} else if (level > 2) {
		out_string(c, "ERROR");
		return;
	}
	out_string(c, "OK");
}
