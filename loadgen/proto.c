// SPDX-License-Identifier: GPL-2.0-only
/*
 * proto.c - memcached text protocol reply parser; see proto.h.
 */
#include "proto.h"

#include <string.h>

static const struct {
	const char *word;
	size_t len;
	enum proto_kind kind;
	int has_msg;
} words[] = {
	{ "END", 3, PR_END, 0 },
	{ "STORED", 6, PR_STORED, 0 },
	{ "NOT_STORED", 10, PR_NOT_STORED, 0 },
	{ "EXISTS", 6, PR_EXISTS, 0 },
	{ "NOT_FOUND", 9, PR_NOT_FOUND, 0 },
	{ "DELETED", 7, PR_DELETED, 0 },
	{ "TOUCHED", 7, PR_TOUCHED, 0 },
	{ "ERROR", 5, PR_ERROR, 1 },
	{ "CLIENT_ERROR", 12, PR_CLIENT_ERROR, 1 },
	{ "SERVER_ERROR", 12, PR_SERVER_ERROR, 1 },
};

const char *proto_kind_name(enum proto_kind k)
{
	if (k == PR_VALUE)
		return "VALUE";
	if (k == PR_MALFORMED)
		return "MALFORMED";
	if (k == PR_META_VALUE)
		return "VA";
	if (k == PR_META_MISS)
		return "EN";
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
		if (words[i].kind == k)
			return words[i].word;
	return "?";
}

/* Parse a decimal field of at most 20 digits; advances *p past it. */
static int parse_num(const char **p, const char *end, uint64_t *out)
{
	const char *s = *p;
	uint64_t v = 0;
	int n = 0;

	while (s < end && *s >= '0' && *s <= '9') {
		if (++n > 20 || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
		s++;
	}
	if (!n)
		return -1;
	*p = s;
	*out = v;
	return 0;
}

static size_t malformed(const char *buf, size_t linelen, size_t taken,
			struct proto_reply *r)
{
	r->kind = PR_MALFORMED;
	r->line = buf;
	r->linelen = linelen;
	return taken;
}

/*
 * Meta return flags from p to end: " <letter>[value]" tokens.  Sets the
 * client flags and purged; returns -1 on a malformed token list.
 */
static int meta_flags(const char *p, const char *end, struct proto_reply *r)
{
	while (p < end) {
		const char *tok;
		uint64_t v;

		if (*p++ != ' ' || p >= end || *p == ' ')
			return -1;
		tok = p;
		while (p < end && *p != ' ')
			p++;
		if (!((*tok >= 'a' && *tok <= 'z') || (*tok >= 'A' && *tok <= 'Z')))
			return -1;
		if (*tok == 'f') {
			const char *q = tok + 1;

			if (parse_num(&q, p, &v) || q != p || v > UINT32_MAX)
				return -1;
			r->flags = (uint32_t)v;
		} else if (*tok == 'P' && p == tok + 1) {
			r->purged = 1;
		}
	}
	return 0;
}

size_t proto_parse(const char *buf, size_t len, size_t max_value,
		   struct proto_reply *r)
{
	const char *nl, *p, *end;
	size_t linelen;
	uint64_t flags, bytes, cas;

	memset(r, 0, sizeof(*r));
	nl = memchr(buf, '\n', len < PROTO_MAX_LINE ? len : PROTO_MAX_LINE);
	if (!nl) {
		if (len >= PROTO_MAX_LINE)
			return malformed(buf, PROTO_MAX_LINE, len, r);
		return 0;
	}
	linelen = (size_t)(nl - buf);
	if (!linelen || buf[linelen - 1] != '\r')
		return malformed(buf, linelen, linelen + 1, r);
	linelen--;
	r->line = buf;
	r->linelen = linelen;
	end = buf + linelen;

	if (linelen > 6 && !memcmp(buf, "VALUE ", 6)) {
		p = buf + 6;
		r->key = p;
		while (p < end && *p != ' ')
			p++;
		r->keylen = (size_t)(p - r->key);
		if (!r->keylen || p >= end || *p++ != ' ' ||
		    parse_num(&p, end, &flags) || flags > UINT32_MAX ||
		    p >= end || *p++ != ' ' || parse_num(&p, end, &bytes))
			return malformed(buf, linelen, linelen + 2, r);
		if (p < end && (*p++ != ' ' || parse_num(&p, end, &cas)))
			return malformed(buf, linelen, linelen + 2, r);
		if (p != end || bytes > max_value)
			return malformed(buf, linelen, linelen + 2, r);
		if (len < linelen + 2 + bytes + 2)
			return 0;
		r->data = buf + linelen + 2;
		r->datalen = (size_t)bytes;
		if (r->data[bytes] != '\r' || r->data[bytes + 1] != '\n')
			return malformed(buf, linelen, linelen + 2, r);
		r->kind = PR_VALUE;
		r->flags = (uint32_t)flags;
		return linelen + 2 + bytes + 2;
	}
	if (linelen > 3 && !memcmp(buf, "VA ", 3)) {
		p = buf + 3;
		if (parse_num(&p, end, &bytes) || meta_flags(p, end, r) ||
		    bytes > max_value)
			return malformed(buf, linelen, linelen + 2, r);
		if (len < linelen + 2 + bytes + 2)
			return 0;
		r->data = buf + linelen + 2;
		r->datalen = (size_t)bytes;
		if (r->data[bytes] != '\r' || r->data[bytes + 1] != '\n')
			return malformed(buf, linelen, linelen + 2, r);
		r->kind = PR_META_VALUE;
		return linelen + 2 + bytes + 2;
	}
	if (linelen >= 2 && !memcmp(buf, "EN", 2) &&
	    (linelen == 2 || buf[2] == ' ')) {
		if (meta_flags(buf + 2, end, r))
			return malformed(buf, linelen, linelen + 2, r);
		r->kind = PR_META_MISS;
		return linelen + 2;
	}
	for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++) {
		size_t wl = words[i].len;

		if (linelen < wl || memcmp(buf, words[i].word, wl))
			continue;
		if (linelen == wl || (words[i].has_msg && buf[wl] == ' ')) {
			r->kind = words[i].kind;
			return linelen + 2;
		}
	}
	return malformed(buf, linelen, linelen + 2, r);
}
