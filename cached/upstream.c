// SPDX-License-Identifier: GPL-2.0-only
/*
 * upstream.c - the memcache:HOST:PORT origin.
 *
 * Each worker thread has one connection to the upstream server (a real
 * memcached or a twemproxy pool), a bufferevent in the worker's own event
 * base, opened on first use and reopened after an error.  Requests are
 * pipelined; a FIFO of the requests sent matches the replies.  A client
 * that needs the upstream is parked (ST_WAIT, no reading) while every
 * other client of the worker keeps being served; when its last request
 * is answered it is resumed (conn_answered, which calls back the worker
 * threads: this link sits below them and sees its worker only through
 * worker.h).
 *
 *   read-through:  the first pass of a get (proto_text.c) queues one
 *                  "gets KEY" per missing or lost key; each VALUE is stored
 *                  with cache_fill(), with the upstream's cas in
 *                  it->upcas, and kept on the client's connection;
 *                  then the get runs again, and serves from that copy a
 *                  value the cache could not keep (full, or evicted by a
 *                  later key of the same get).
 *   write-through: after a store succeeded locally, "set KEY FLAGS EXP
 *                  LEN" with the stored value goes upstream ("add" or
 *                  "replace" for those, so they keep their meaning there;
 *                  a cas goes as "cas ... UPCAS" with the upstream's cas
 *                  of the value the client's cas matched, and is refused
 *                  as EXISTS without asking when that is unknown); a
 *                  "gets KEY" is pipelined right behind it, and when the
 *                  origin holds the bytes and flags written its cas
 *                  becomes the item's upcas (else another writer got in
 *                  between and the local copy is dropped); the client's
 *                  STORED is sent only after both answers, and only when
 *                  the upstream said STORED.  Else the local key is removed (the cache never
 *                  holds what the origin refused) and the client gets the
 *                  upstream's NOT_STORED, EXISTS or NOT_FOUND, or
 *                  "SERVER_ERROR origin write failed".
 *   delete:        forwarded with noreply, for every key (the origin may
 *                  hold keys the cache does not).
 *
 * Upstream input is bounded: a reply line above 2048 bytes or a value
 * above -I is a protocol error that drops the connection.
 */
#define _GNU_SOURCE
#include "upstream.h"

#include <netdb.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>

#include "cache.h"
#include "conn.h"
#include "daemon.h"
#include "store.h"
#include "worker.h"

/*
 * REQ_CHECK is the "gets KEY" pipelined after a write-through: the
 * origin's answer tells the cas of the value this cache wrote, or that
 * someone else wrote the key in between.
 */
enum req_kind { REQ_GET, REQ_SET, REQ_CHECK };

struct upreq {
	struct upreq *next;
	struct conn *c;
	enum req_kind kind;
	/* REQ_CHECK: what this cache wrote, and what the origin answered */
	char *val;              /* the value bytes written (vlen, no CRLF) */
	uint32_t vflags, vlen;
	uint64_t lcas;          /* the local cas of the item written */
	uint64_t upcas;         /* the origin's cas when its value matched */
	size_t nkey;
	char key[KEY_MAX_LENGTH + 1];
};

struct upstream {
	struct bufferevent *bev;
	struct upreq *head, *tail;
	bool in_value;          /* reading a VALUE block */
	char vkey[KEY_MAX_LENGTH + 1];
	size_t vnkey;
	uint32_t vflags, vlen;
	uint64_t vcas;          /* the origin's cas of that value, 0 if none */
};

/*
 * The check after a write-through was answered: if the origin holds the
 * bytes and flags this cache wrote, its cas becomes the item's upcas (a
 * later cas of that value goes upstream with it).  Anything else means
 * another writer got in between: the local copy is dropped and the next
 * read refetches.  Only the item written is touched (same local cas).
 */
static void check_done(struct upreq *r)
{
	uint32_t hv = index_hash(r->key, r->nkey);
	struct item *it;
	bool expired;

	if (r->c->up_failed)
		return;         /* the write itself failed and is rolled back */
	cache_wrlock();
	it = cache_lookup(r->key, r->nkey, hv, &expired);
	if (it && it->cas == r->lcas) {
		if (r->upcas)
			it->upcas = r->upcas;
		else
			cache_delete(r->key, r->nkey, hv);
	}
	cache_unlock();
}

/* One request answered (or failed): release the client when it is the last. */
static void req_done(struct upreq *r, bool failed)
{
	struct conn *c = r->c;

	if (r->kind == REQ_CHECK) {
		/* a failed check costs only the origin's cas, not the write */
		if (!failed)
			check_done(r);
		failed = false;
	}
	if (failed) {
		c->up_failed = true;
		cache_wrlock();
		stats.origin_errors++;
		cache_unlock();
	}
	conn_answered(c);       /* at the last, the worker resumes c */
	conn_unref(c);
	free(r->val);
	free(r);
}

/* Drop the link: every request in flight fails. */
static void up_reset(struct upstream *u)
{
	struct upreq *r;

	if (u->bev)
		bufferevent_free(u->bev);
	u->bev = NULL;
	u->in_value = false;
	while ((r = u->head)) {
		u->head = r->next;
		if (!u->head)
			u->tail = NULL;
		req_done(r, true);
	}
}

/* Parse as many complete replies as the input holds. */
static void up_read_cb(struct bufferevent *bev, void *arg)
{
	struct upstream *u = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	for (;;) {
		if (u->in_value) {
			size_t need = (size_t)u->vlen + 2;
			char *data;

			if (evbuffer_get_length(in) < need)
				return;
			data = (char *)evbuffer_pullup(in, (ssize_t)need);
			if (!data || data[u->vlen] != '\r' || data[u->vlen + 1] != '\n') {
				logmsg(0, "upstream: bad data block");
				up_reset(u);
				return;
			}
			if (u->head && u->head->kind == REQ_GET) {
				uint32_t hv = index_hash(u->vkey, u->vnkey);
				bool expired, had;
				struct item *it;

				cache_wrlock();
				it = cache_lookup(u->vkey, u->vnkey, hv, &expired);
				if (it && it->state == ITEM_LOST)
					stats.rebuilds++;
				had = it && cache_readable(it);
				stats.origin_fetches++;
				it = cache_fill(u->vkey, u->vnkey, hv, u->vflags, data, u->vlen);
				/* a value already cached keeps what it knew */
				if (it && !had)
					it->upcas = u->vcas;
				cache_unlock();
				conn_keep_fetched(u->head->c, u->vkey, u->vnkey,
						  u->vflags, data, u->vlen);
			} else if (u->head && u->head->kind == REQ_CHECK) {
				struct upreq *r = u->head;
				bool same = u->vnkey == r->nkey &&
					    !memcmp(u->vkey, r->key, r->nkey) &&
					    u->vflags == r->vflags && u->vlen == r->vlen &&
					    !memcmp(data, r->val, r->vlen);

				r->upcas = same ? u->vcas : 0;
			}
			evbuffer_drain(in, need);
			u->in_value = false;
			continue;
		}
		size_t len;
		char *line = evbuffer_readln(in, &len, EVBUFFER_EOL_CRLF);

		if (!line) {
			if (evbuffer_get_length(in) > 2048) {
				logmsg(0, "upstream: reply line too long");
				up_reset(u);
			}
			return;
		}
		struct upreq *r = u->head;
		char key[KEY_MAX_LENGTH + 2];
		unsigned flags, vlen;
		unsigned long long vcas = 0;
		int nf;

		if (!r) {
			logmsg(0, "upstream: unexpected reply '%.60s'", line);
			free(line);
			up_reset(u);
			return;
		}
		if ((r->kind == REQ_GET || r->kind == REQ_CHECK) &&
		    (nf = sscanf(line, "VALUE %251s %u %u %llu", key, &flags, &vlen, &vcas)) >= 3 &&
		    strlen(key) <= KEY_MAX_LENGTH && vlen <= settings.item_size_max) {
			u->vnkey = strlen(key);
			memcpy(u->vkey, key, u->vnkey);
			u->vflags = flags;
			u->vlen = vlen;
			u->vcas = nf == 4 ? vcas : 0;
			u->in_value = true;
			free(line);
			continue;
		}
		bool ok = r->kind == REQ_SET ? !strcmp(line, "STORED") : !strcmp(line, "END");

		if (r->kind == REQ_SET && !strcmp(line, "NOT_STORED"))
			r->c->up_not_stored = true;   /* add/replace said no */
		if (r->kind == REQ_SET && !strcmp(line, "EXISTS"))
			r->c->up_exists = true;       /* cas: changed upstream */
		if (r->kind == REQ_SET && !strcmp(line, "NOT_FOUND"))
			r->c->up_not_found = true;    /* cas: gone upstream */
		bool known = ok || r->kind == REQ_SET || !strncmp(line, "SERVER_ERROR", 12) ||
			     !strncmp(line, "CLIENT_ERROR", 12) || !strcmp(line, "ERROR");

		if (!known) {
			logmsg(0, "upstream: bad reply '%.60s'", line);
			free(line);
			up_reset(u);
			return;
		}
		free(line);
		u->head = r->next;
		if (!u->head)
			u->tail = NULL;
		req_done(r, !ok);
	}
}

static void up_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct upstream *u = arg;
	(void)bev;

	if (what & (BEV_EVENT_ERROR | BEV_EVENT_EOF)) {
		logmsg(1, "upstream %s:%d: connection lost", settings.origin_host,
		       settings.origin_port);
		up_reset(u);
	}
}

/* The worker's upstream link, connecting it when needed; NULL on failure. */
static struct upstream *up_get(struct conn *c)
{
	struct upstream **up = worker_upstream(c->w);
	struct upstream *u = *up;

	if (!u) {
		u = calloc(1, sizeof(*u));
		if (!u)
			return NULL;
		*up = u;
	}
	if (!u->bev) {
		struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res;
		char port[16];
		int fd, one = 1;

		snprintf(port, sizeof(port), "%d", settings.origin_port);
		if (getaddrinfo(settings.origin_host, port, &hints, &res))
			return NULL;
		u->bev = bufferevent_socket_new(worker_base(c->w), -1,
						BEV_OPT_CLOSE_ON_FREE);
		if (!u->bev) {
			freeaddrinfo(res);
			return NULL;
		}
		bufferevent_setcb(u->bev, up_read_cb, NULL, up_event_cb, u);
		bufferevent_enable(u->bev, EV_READ | EV_WRITE);
		if (bufferevent_socket_connect(u->bev, res->ai_addr,
					       (int)res->ai_addrlen) < 0) {
			freeaddrinfo(res);
			bufferevent_free(u->bev);
			u->bev = NULL;
			return NULL;
		}
		freeaddrinfo(res);
		/*
		 * Requests are small and pipelined: with Nagle's algorithm a
		 * request written while the one before is unacknowledged
		 * waits for the origin's reply, which carries the ACK, so
		 * every miss behind another paid a second round trip.
		 */
		fd = bufferevent_getfd(u->bev);
		if (fd >= 0)
			setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	}
	return u;
}

/* Queue a request whose reply the client waits for. */
static struct upreq *push(struct conn *c, enum req_kind kind)
{
	struct upstream *u = up_get(c);
	struct upreq *r;

	if (!u)
		return NULL;
	r = calloc(1, sizeof(*r));
	if (!r)
		return NULL;
	r->c = c;
	r->kind = kind;
	if (u->tail)
		u->tail->next = r;
	else
		u->head = r;
	u->tail = r;
	c->pending++;
	conn_ref(c);
	return r;
}

void upstream_get(struct conn *c, const char *key, size_t nkey)
{
	struct upstream *u = up_get(c);

	if (!u || !push(c, REQ_GET)) {
		cache_wrlock();
		stats.origin_errors++;
		cache_unlock();
		return;
	}
	evbuffer_add_printf(bufferevent_get_output(u->bev), "gets %.*s\r\n",
			    (int)nkey, key);
}

int upstream_set(struct conn *c, const char *key, size_t nkey, uint32_t hv,
		 int cmd)
{
	const char *verb = cmd == CMD_ADD ? "add" : cmd == CMD_REPLACE ? "replace" : "set";
	bool with_cas = cmd == CMD_CAS || c->cas;
	struct upstream *u;
	struct evbuffer *out;
	struct upreq *chk;
	struct item *it;
	bool expired;
	char *val = NULL;
	uint32_t vflags = 0, vlen = 0;
	uint64_t lcas = 0;
	int ret = -1;

	if (with_cas && !c->upcas)
		return 1;       /* the origin's cas is unknown: do not guess */
	u = up_get(c);
	if (!u)
		goto fail;
	out = bufferevent_get_output(u->bev);
	cache_wrlock();
	it = cache_lookup(key, nkey, hv, &expired);
	if (it && cache_readable(it)) {
		long exp = it->exptime == 0 ? 0 : it->exptime <= clock_secs() ? -1 :
			   (long)it->exptime;

		if (with_cas)
			evbuffer_add_printf(out, "cas %.*s %u %ld %u %llu\r\n",
					    (int)nkey, key, it->flags, exp, it->vlen,
					    (unsigned long long)c->upcas);
		else
			evbuffer_add_printf(out, "%s %.*s %u %ld %u\r\n", verb,
					    (int)nkey, key, it->flags, exp, it->vlen);
		evbuffer_add(out, store_ptr(it->off), it->vlen + 2);
		/* kept for the check: what the origin should now hold */
		val = malloc((size_t)it->vlen + 1);
		if (val)
			memcpy(val, store_ptr(it->off), it->vlen);
		vflags = it->flags;
		vlen = it->vlen;
		lcas = it->cas;
		ret = 0;
	}
	cache_unlock();
	if (ret == 0 && push(c, REQ_SET)) {
		/*
		 * Pipelined on the same link, so the origin answers it right
		 * after the write; without it (no memory) the item's upcas
		 * stays unknown and a cas of it is refused as EXISTS.
		 */
		if (val && (chk = push(c, REQ_CHECK))) {
			chk->val = val;
			chk->vflags = vflags;
			chk->vlen = vlen;
			chk->lcas = lcas;
			chk->nkey = nkey;
			memcpy(chk->key, key, nkey);
			evbuffer_add_printf(out, "gets %.*s\r\n", (int)nkey, key);
		} else {
			free(val);
		}
		return 0;
	}
	free(val);
fail:
	cache_wrlock();
	stats.origin_errors++;
	cache_unlock();
	return -1;
}

uint64_t upstream_cas_of(const char *key, size_t nkey, uint32_t hv)
{
	struct item *it = index_find(key, nkey, hv);

	return it && it->state == ITEM_OK ? it->upcas : 0;
}

void upstream_delete(struct conn *c, const char *key, size_t nkey)
{
	struct upstream *u = up_get(c);

	if (u)
		evbuffer_add_printf(bufferevent_get_output(u->bev),
				    "delete %.*s noreply\r\n", (int)nkey, key);
}

void upstream_flush(struct conn *c)
{
	(void)c;    /* bufferevents write on their own */
}
