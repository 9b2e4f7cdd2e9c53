// SPDX-License-Identifier: GPL-2.0-only
/*
 * conn.c - a client connection: buffers, output, fetched values,
 * references, the answered callback and the registry (see conn.h).
 *
 * Buffers: the read buffer holds at most one command line (<= --input-limit for
 * a multi-get) or one value (<= -I) and shrinks back after a big value;
 * the values an origin fetched for one get are bounded by FETCHED_MAX.
 * Both are counted in stat conn_buffer_bytes.
 *
 * Output: replies are appended to c->out; c->commit is the head of it
 * that may be sent (see proto_text.c for when memcached would send).
 *
 * Lifetime: a connection holds one reference for its socket and one per
 * origin request or queued reply; the last conn_unref frees it.  A
 * connection is used by its own worker only; stats conns, from any
 * worker, walks the registry under reg_lock and reads each connection's
 * fd, state and last_cmd (relaxed atomic loads), then asks the sockets'
 * addresses after dropping the lock.
 */
#include "conn.h"

#include <arpa/inet.h>
#include <assert.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <event2/buffer.h>

#include "daemon.h"

/* ---- lifetime --------------------------------------------------------- */

static void (*answered_fn)(struct conn *c);

struct conn *conn_alloc(size_t size)
{
	struct conn *c = calloc(1, size < sizeof(*c) ? sizeof(*c) : size);

	if (c) {
		c->refs = 1;
		__atomic_fetch_add(&stat_conn_structs, 1, __ATOMIC_RELAXED);
	}
	return c;
}

void conn_ref(struct conn *c)
{
	c->refs++;
}

void conn_unref(struct conn *c)
{
	if (--c->refs == 0) {
		conn_free_buffers(c);
		free(c);
		__atomic_fetch_sub(&stat_conn_structs, 1, __ATOMIC_RELAXED);
	}
}

void conn_on_answered(void (*fn)(struct conn *c))
{
	answered_fn = fn;
}

void conn_answered(struct conn *c)
{
	assert(answered_fn);
	if (--c->pending == 0)
		answered_fn(c);
}

/* ---- buffers ---------------------------------------------------------- */

/* Bytes of connection read buffers and fetched values (stat conn_buffer_bytes). */
static void count_buffer(int64_t delta)
{
	__atomic_fetch_add(&stat_conn_buffer_bytes, (uint64_t)delta, __ATOMIC_RELAXED);
}

int conn_init_buffers(struct conn *c)
{
	c->rbuf = malloc(RBUF_INIT);
	c->rsize = c->rbuf ? RBUF_INIT : 0;
	count_buffer((int64_t)c->rsize);
	c->rstart = c->rend = 0;
	c->out = evbuffer_new();
	c->gbuf = evbuffer_new();
	c->state = ST_CMD;
	if (!c->rbuf || !c->out || !c->gbuf) {
		conn_free_buffers(c);
		return -1;
	}
	return 0;
}

void conn_free_buffers(struct conn *c)
{
	free(c->rbuf);
	c->rbuf = NULL;
	count_buffer(-(int64_t)c->rsize);
	c->rsize = 0;
	if (c->out)
		evbuffer_free(c->out);
	if (c->gbuf)
		evbuffer_free(c->gbuf);
	c->out = c->gbuf = NULL;
	free(c->reply);
	c->reply = NULL;
	conn_drop_fetched(c);
}

/* Fetched values kept for one get, at most: beyond, keys may miss. */
#define FETCHED_MAX (64u << 20)

/* Keep an origin's answer for key on c; data NULL: it has no value. */
static struct fetched *keep(struct conn *c, const char *key, size_t nkey,
			    uint32_t flags, const char *data, uint32_t vlen)
{
	size_t size = sizeof(struct fetched) + nkey + (data ? vlen + 2 : 0);
	struct fetched *f;

	if (c->fetched_bytes + size > FETCHED_MAX)
		return NULL;
	f = malloc(size);
	if (!f)
		return NULL;
	f->flags = flags;
	f->vlen = data ? vlen : 0;
	f->none = !data;
	f->rebuilt = false;
	f->nkey = nkey;
	memcpy(f->data, key, nkey);
	if (data)
		memcpy(f->data + nkey, data, (size_t)vlen + 2);
	f->next = c->fetched;
	c->fetched = f;
	c->fetched_bytes += size;
	count_buffer((int64_t)size);
	return f;
}

void conn_keep_fetched(struct conn *c, const char *key, size_t nkey,
		       uint32_t flags, const char *data, uint32_t vlen)
{
	keep(c, key, nkey, flags, data, vlen);
}

void conn_keep_miss(struct conn *c, const char *key, size_t nkey)
{
	keep(c, key, nkey, 0, NULL, 0);
}

void conn_drop_fetched(struct conn *c)
{
	struct fetched *f;

	while ((f = c->fetched)) {
		c->fetched = f->next;
		free(f);
	}
	count_buffer(-(int64_t)c->fetched_bytes);
	c->fetched_bytes = 0;
}

/* The newest answer an origin gave for key during this get, or NULL. */
const struct fetched *conn_find_fetched(const struct conn *c,
					const char *key, size_t nkey)
{
	const struct fetched *f;

	for (f = c->fetched; f; f = f->next)
		if (f->nkey == nkey && !memcmp(f->data, key, nkey))
			return f;
	return NULL;
}

void conn_note_rebuilt(struct conn *c, const char *key, size_t nkey)
{
	struct fetched *f;

	for (f = c->fetched; f; f = f->next)
		if (f->nkey == nkey && !memcmp(f->data, key, nkey)) {
			f->rebuilt = true;
			return;
		}
}

/* Compact, then grow the read buffer so want bytes fit after rend. */
int conn_rbuf_reserve(struct conn *c, size_t want)
{
	if (c->rstart == c->rend && c->rsize > 4 * RBUF_INIT && want <= RBUF_INIT) {
		char *nb = malloc(RBUF_INIT);   /* shrink after a big value */

		if (nb) {
			free(c->rbuf);
			c->rbuf = nb;
			count_buffer((int64_t)RBUF_INIT - (int64_t)c->rsize);
			c->rsize = RBUF_INIT;
		}
		c->rstart = c->rend = 0;
	}
	if (c->rsize - c->rend >= want)
		return 0;
	if (c->rstart) {
		memmove(c->rbuf, c->rbuf + c->rstart, c->rend - c->rstart);
		c->rend -= c->rstart;
		c->rstart = 0;
	}
	if (c->rsize - c->rend < want) {
		size_t ns = c->rsize * 2;
		char *nb;

		if (ns < c->rend + want)
			ns = c->rend + want;
		nb = realloc(c->rbuf, ns);
		if (!nb)
			return -1;
		c->rbuf = nb;
		count_buffer((int64_t)ns - (int64_t)c->rsize);
		c->rsize = ns;
	}
	return 0;
}

/* ---- output ----------------------------------------------------------- */

/* A one-line reply, unless the command said noreply. */
void out_string(struct conn *c, const char *s)
{
	if (c->noreply) {
		c->noreply = false;
		return;
	}
	evbuffer_add(c->out, s, strlen(s));
	evbuffer_add(c->out, "\r\n", 2);
}

/* Everything queued so far may be sent. */
void out_commit(struct conn *c)
{
	c->commit = evbuffer_get_length(c->out);
}


/* ---- registry (stats conns) ------------------------------------------ */

/* Open connections and listeners, for stats conns. */
static pthread_mutex_t reg_lock = PTHREAD_MUTEX_INITIALIZER;
static struct conn *reg_head;
#define MAX_LISTENERS 16
static int listeners[MAX_LISTENERS];
static uint32_t listeners_since[MAX_LISTENERS];
static int nlisteners;

void conn_register(struct conn *c)
{
	pthread_mutex_lock(&reg_lock);
	c->reg_prev = NULL;
	c->reg_next = reg_head;
	if (reg_head)
		reg_head->reg_prev = c;
	reg_head = c;
	pthread_mutex_unlock(&reg_lock);
}

void conn_unregister(struct conn *c)
{
	pthread_mutex_lock(&reg_lock);
	if (c->reg_prev)
		c->reg_prev->reg_next = c->reg_next;
	else
		reg_head = c->reg_next;
	if (c->reg_next)
		c->reg_next->reg_prev = c->reg_prev;
	pthread_mutex_unlock(&reg_lock);
}

void conns_add_listener(int fd)
{
	pthread_mutex_lock(&reg_lock);
	if (nlisteners < MAX_LISTENERS) {
		listeners[nlisteners] = fd;
		listeners_since[nlisteners++] = clock_secs();
	}
	pthread_mutex_unlock(&reg_lock);
}

/* "tcp:1.2.3.4:5", "tcp6:[::1]:5" or "unix:PATH", as memcached names them. */
static void addr_text(const struct sockaddr_storage *ss, socklen_t len,
		      char *buf, size_t size)
{
	char ip[INET6_ADDRSTRLEN];

	if (ss->ss_family == AF_INET) {
		const struct sockaddr_in *a = (const struct sockaddr_in *)ss;

		inet_ntop(AF_INET, &a->sin_addr, ip, sizeof(ip));
		snprintf(buf, size, "tcp:%s:%u", ip, ntohs(a->sin_port));
	} else if (ss->ss_family == AF_INET6) {
		const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;

		inet_ntop(AF_INET6, &a->sin6_addr, ip, sizeof(ip));
		snprintf(buf, size, "tcp6:[%s]:%u", ip, ntohs(a->sin6_port));
	} else if (ss->ss_family == AF_UNIX) {
		const struct sockaddr_un *a = (const struct sockaddr_un *)ss;
		size_t n = len > offsetof(struct sockaddr_un, sun_path) ?
			   len - offsetof(struct sockaddr_un, sun_path) : 0;

		snprintf(buf, size, "unix:%.*s", (int)strnlen(a->sun_path, n),
			 a->sun_path);
	} else {
		snprintf(buf, size, "?:<AF %d>", ss->ss_family);
	}
}

static void sock_text(int fd, bool peer, char *buf, size_t size)
{
	struct sockaddr_storage ss;
	socklen_t len = sizeof(ss);
	int r;

	memset(&ss, 0, sizeof(ss));
	r = peer ? getpeername(fd, (struct sockaddr *)&ss, &len) :
		   getsockname(fd, (struct sockaddr *)&ss, &len);
	if (r < 0)
		len = 0, ss.ss_family = AF_UNSPEC;
	addr_text(&ss, len, buf, size);
}

static const char *state_text(const struct conn *c, const struct conn *self)
{
	if (c == self)
		return "conn_parse_cmd";
	switch (__atomic_load_n(&c->state, __ATOMIC_RELAXED)) {
	case ST_NREAD:
		return "conn_nread";
	case ST_SWALLOW:
		return "conn_swallow";
	case ST_WAIT:
		return "conn_io_queue";
	case ST_CLOSE:
		return "conn_closing";
	default:
		return "conn_read";
	}
}

struct conn_line {
	int fd;
	const char *state;      /* NULL for a listener */
	uint32_t since;
};

static int by_fd(const void *a, const void *b)
{
	const struct conn_line *x = a, *y = b;

	return (x->fd > y->fd) - (x->fd < y->fd);
}

/*
 * What each line needs is collected under reg_lock; the two system calls
 * per connection (its addresses) are made after it is dropped, so that
 * the workers' accepts and closes never wait for them.  A connection
 * that closes meanwhile may show its successor's addresses (or none), as
 * memcached's unlocked walk of its connections may.
 */
void conns_emit(struct evbuffer *out, struct conn *self)
{
	struct conn_line *v = NULL;
	size_t n = 0, cap;
	uint32_t now = clock_secs();
	char addr[128], laddr[128];

	pthread_mutex_lock(&reg_lock);
	cap = (size_t)nlisteners;
	for (struct conn *c = reg_head; c; c = c->reg_next)
		cap++;
	v = malloc((cap ? cap : 1) * sizeof(*v));
	if (!v) {
		pthread_mutex_unlock(&reg_lock);
		goto out;
	}
	for (int i = 0; i < nlisteners; i++)
		v[n++] = (struct conn_line){ listeners[i], NULL, listeners_since[i] };
	for (struct conn *c = reg_head; c; c = c->reg_next)
		v[n++] = (struct conn_line){ c->fd, state_text(c, self),
			__atomic_load_n(&c->last_cmd, __ATOMIC_RELAXED) };
	pthread_mutex_unlock(&reg_lock);
	qsort(v, n, sizeof(*v), by_fd);
	for (size_t i = 0; i < n; i++) {
		int fd = v[i].fd;

		sock_text(fd, v[i].state != NULL, addr, sizeof(addr));
		evbuffer_add_printf(out, "STAT %d:addr %s\r\n", fd, addr);
		if (v[i].state) {
			sock_text(fd, false, laddr, sizeof(laddr));
			evbuffer_add_printf(out, "STAT %d:listen_addr %s\r\n", fd, laddr);
		}
		evbuffer_add_printf(out, "STAT %d:state %s\r\n", fd,
				    v[i].state ? v[i].state : "conn_listening");
		evbuffer_add_printf(out, "STAT %d:secs_since_last_cmd %u\r\n", fd,
				    now >= v[i].since ? now - v[i].since : 0);
	}
out:
	free(v);
	evbuffer_add(out, "END\r\n", 5);
}
