/*
 * proto_admin.c - memcached 1.6's operator commands beyond the basic
 * protocol: lru_crawler (metadump lists every live item, as dump tools
 * expect) and cache_memlimit (the memory limit at run time).
 *
 * cached has no LRU crawler thread: metadump walks the index in steps of
 * INDEX_WALK_STEP items, each under the shared lock, and writes the whole
 * listing into the reply, so one metadump of a big cache takes memory for
 * its reply (about 100 bytes per item) but keeps a get waiting for one
 * step at most.  The other crawler commands are accepted
 * and answered as memcached answers them.
 */
#include "proto_admin.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "cache.h"
#include "daemon.h"
#include "stats.h"
#include "store.h"

#define MAX_SLAB_CLASS 64        /* memcached's MAX_NUMBER_OF_SLAB_CLASSES */

struct metadump {
	struct evbuffer *out;
	const bool *classes;     /* NULL: every class */
	uint32_t now;
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

	if (m->classes && (cls >= MAX_SLAB_CLASS || !m->classes[cls]))
		return;
	if (!cache_alive(it, m->now) || it->state != ITEM_OK)
		return;
	uriencode(it->key, it->keylen, key);
	evbuffer_add_printf(m->out,
			    "key=%s exp=%ld la=%llu cas=%llu fetch=%s cls=%u size=%lu\n",
			    key, it->exptime == 0 ? -1L : (long)it->exptime,
			    (unsigned long long)item_atime(it),
			    (unsigned long long)it->cas,
			    item_fetched(it) ? "yes" : "no", cls,
			    (unsigned long)ntotal);
}

/* lru_crawler metadump all|hash|ID[,ID...] */
static void metadump(struct conn *c, char *which)
{
	bool classes[MAX_SLAB_CLASS] = { false };
	struct metadump m = { .now = clock_secs() };

	if (evbuffer_get_length(c->out)) {
		out_string(c, "ERROR cannot pipeline other commands before metadump");
		return;
	}
	if (strcmp(which, "all") && strcmp(which, "hash")) {
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
		m.classes = classes;
	}
	m.out = evbuffer_new();
	if (!m.out) {
		out_string(c, "SERVER_ERROR out of memory");
		return;
	}
	cache_walk(dump_one, &m, NULL);
	evbuffer_add(m.out, "END\r\n", 5);
	evbuffer_add_buffer(c->out, m.out);
	evbuffer_free(m.out);
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
