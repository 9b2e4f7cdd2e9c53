// SPDX-License-Identifier: GPL-2.0-only
/*
 * test_proto.c - the reply parser on whole, pipelined and split input, and
 * the shared value formula as loadgen uses it for --verify.
 */
#include <stdlib.h>
#include <string.h>

#include "gen.h"
#include "proto.h"
#include "zipf.h"
#include "tap.h"

struct elem {
	enum proto_kind kind;
	char key[64];
	uint32_t flags;
	size_t datalen;
	char data[64];
	int purged;
};

/* Parse everything parseable in buf; returns the element count. */
static int parse_all(const char *buf, size_t len, struct elem *out, int max,
		     size_t *used_total)
{
	size_t off = 0;
	int n = 0;

	while (off < len && n < max) {
		struct proto_reply r;
		size_t used = proto_parse(buf + off, len - off, 1 << 20, &r);

		if (!used)
			break;
		memset(&out[n], 0, sizeof(out[n]));
		out[n].kind = r.kind;
		out[n].purged = r.purged;
		if (r.kind == PR_VALUE || r.kind == PR_META_VALUE) {
			if (r.key)
				memcpy(out[n].key, r.key, r.keylen < 63 ? r.keylen : 63);
			out[n].flags = r.flags;
			out[n].datalen = r.datalen;
			memcpy(out[n].data, r.data, r.datalen < 63 ? r.datalen : 63);
		}
		n++;
		off += used;
	}
	*used_total = off;
	return n;
}

static const char stream[] =
	"VALUE key:1 0 5\r\nhello\r\n"
	"VALUE key:22 42 12 7\r\nab\r\ncd\r\nef\r\n\r\n"	/* data holds CRLFs */
	"END\r\n"
	"STORED\r\n"
	"END\r\n"
	"NOT_STORED\r\n"
	"SERVER_ERROR out of memory storing object\r\n"
	"CLIENT_ERROR bad data chunk\r\n"
	"ERROR\r\n"
	"VALUE k 0 0\r\n\r\n"
	"END\r\n"
	"EXISTS\r\nNOT_FOUND\r\nDELETED\r\n"
	"TOUCHED\r\n"
	"VA 5 f0\r\nhello\r\n"		/* meta: mg KEY v f */
	"EN\r\n"
	"EN P\r\n"				/* a miss caused by a purge */
	"VA 4 f7 P\r\nok\r\n\r\n";		/* rebuilt after a purge */

static const enum proto_kind stream_kinds[] = {
	PR_VALUE, PR_VALUE, PR_END, PR_STORED, PR_END, PR_NOT_STORED,
	PR_SERVER_ERROR, PR_CLIENT_ERROR, PR_ERROR, PR_VALUE, PR_END,
	PR_EXISTS, PR_NOT_FOUND, PR_DELETED, PR_TOUCHED, PR_META_VALUE,
	PR_META_MISS, PR_META_MISS, PR_META_VALUE,
};
#define NKINDS (int)(sizeof(stream_kinds) / sizeof(stream_kinds[0]))

static void check_stream(const struct elem *e, int n, const char *how)
{
	CHECK(n == NKINDS, "%s: %d elements, want %d", how, n, NKINDS);
	for (int i = 0; i < n && i < NKINDS; i++)
		CHECK(e[i].kind == stream_kinds[i], "%s: element %d is %s, want %s",
		      how, i, proto_kind_name(e[i].kind),
		      proto_kind_name(stream_kinds[i]));
	if (n < 2)
		return;
	CHECK(!strcmp(e[0].key, "key:1") && e[0].datalen == 5 &&
	      !memcmp(e[0].data, "hello", 5) && e[0].flags == 0, "%s: first value", how);
	CHECK(!strcmp(e[1].key, "key:22") && e[1].flags == 42 &&
	      e[1].datalen == 12 && !memcmp(e[1].data, "ab\r\ncd\r\nef\r\n", 12),
	      "%s: value with CRLF in data", how);
	if (n < NKINDS)
		return;
	CHECK(e[15].datalen == 5 && !memcmp(e[15].data, "hello", 5) &&
	      e[15].flags == 0 && !e[15].purged && !e[15].key[0], "%s: VA", how);
	CHECK(!e[16].purged && e[17].purged, "%s: EN and EN P", how);
	CHECK(e[18].datalen == 4 && !memcmp(e[18].data, "ok\r\n", 4) &&
	      e[18].flags == 7 && e[18].purged, "%s: VA with f7 P", how);
}

static void test_pipelined(void)
{
	struct elem e[32];
	size_t used;
	int n = parse_all(stream, sizeof(stream) - 1, e, 32, &used);

	check_stream(e, n, "whole");
	CHECK(used == sizeof(stream) - 1, "consumed all");
}

/*
 * Feed the stream in chunks the way a connection does: append, parse what
 * is complete, keep the rest.  Every chunking must give the same elements.
 */
static void feed_chunks(size_t (*next_chunk)(void *), void *arg, const char *how)
{
	char buf[sizeof(stream)];
	struct elem e[32];
	size_t have = 0, fed = 0, len = sizeof(stream) - 1;
	int n = 0;

	while (fed < len) {
		size_t c = next_chunk(arg), used;

		if (c > len - fed)
			c = len - fed;
		memcpy(buf + have, stream + fed, c);
		have += c;
		fed += c;
		n += parse_all(buf, have, e + n, 32 - n, &used);
		memmove(buf, buf + used, have - used);
		have -= used;
	}
	CHECK(have == 0, "%s: %zu bytes left", how, have);
	check_stream(e, n, how);
}

static size_t one_byte(void *arg)
{
	(void)arg;
	return 1;
}

static size_t random_chunk(void *arg)
{
	return 1 + rng_below(arg, 23);
}

static void test_split_bytewise(void)
{
	feed_chunks(one_byte, NULL, "byte by byte");
}

static void test_split_random(void)
{
	struct rng r;

	rng_seed(&r, 11);
	for (int i = 0; i < 200; i++)
		feed_chunks(random_chunk, &r, "random chunks");
}

static void test_split_every_point(void)
{
	/* every two-way split of the stream */
	for (size_t cut = 1; cut < sizeof(stream) - 1; cut++) {
		char buf[sizeof(stream)];
		struct elem e[32];
		size_t used;
		int n;

		memcpy(buf, stream, cut);
		n = parse_all(buf, cut, e, 32, &used);
		memmove(buf, buf + used, cut - used);
		memcpy(buf + (cut - used), stream + cut, sizeof(stream) - 1 - cut);
		n += parse_all(buf, cut - used + sizeof(stream) - 1 - cut, e + n,
			       32 - n, &used);
		check_stream(e, n, "two-way split");
		if (tap_cur_failed)
			break;
	}
}

static void test_incomplete(void)
{
	static const char *partial[] = {
		"", "E", "EN", "END", "END\r", "VALUE k 0 5\r\nhel",
		"VALUE k 0 5\r\nhello", "VALUE k 0 5\r\nhello\r", "VALUE k 0 5",
		"STORED\r",
	};
	struct proto_reply r;

	for (size_t i = 0; i < sizeof(partial) / sizeof(partial[0]); i++)
		CHECK(proto_parse(partial[i], strlen(partial[i]), 1 << 20, &r) == 0,
		      "'%s' needs more", partial[i]);
}

static void test_malformed(void)
{
	static const char *bad[] = {
		"GARBAGE\r\n", "VALUE k x 5\r\nhello\r\n", "VALUE k 0\r\n",
		"VALUE  0 5\r\nhello\r\n", "VALUE k 0 5 \r\nhello\r\n",
		"VALUE k 0 5\r\nhelloXY", "END\n", "\r\n", "ENDX\r\n",
		"STORED extra\r\n", "VALUE k 0 99999999999\r\n",
		"VALUE k 99999999999 1\r\nx\r\n",
	};
	struct proto_reply r;
	char longline[PROTO_MAX_LINE + 10];

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t used = proto_parse(bad[i], strlen(bad[i]), 1 << 20, &r);

		CHECK(used > 0 && r.kind == PR_MALFORMED, "'%s' is malformed (used %zu, %s)",
		      bad[i], used, proto_kind_name(r.kind));
		CHECK(r.line == bad[i] && r.linelen <= strlen(bad[i]),
		      "'%s': offending line reported", bad[i]);
	}
	memset(longline, 'A', sizeof(longline));
	CHECK(proto_parse(longline, sizeof(longline), 1 << 20, &r) > 0 &&
	      r.kind == PR_MALFORMED, "endless line is malformed");
	/* a value above the limit is refused before its data arrives */
	CHECK(proto_parse("VALUE k 0 2000\r\n", 16, 1000, &r) > 0 &&
	      r.kind == PR_MALFORMED, "value above the limit");
}

static void test_meta_malformed(void)
{
	static const char *bad[] = {
		"VA x\r\nhello\r\n", "VA\r\n", "VA 5 f\r\nhello\r\n",
		"VA 5  f0\r\nhello\r\n", "VA 5 f0 \r\nhello\r\n",
		"VA 5 1\r\nhello\r\n", "VA 5 fx\r\nhello\r\n",
		"VA 5 f0\r\nhelloXY", "EN  P\r\n", "ENX\r\n", "EN 7\r\n",
		"VA 5 f99999999999\r\nhello\r\n",
	};
	struct proto_reply r;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		size_t used = proto_parse(bad[i], strlen(bad[i]), 1 << 20, &r);

		CHECK(used > 0 && r.kind == PR_MALFORMED, "'%s' is malformed (used %zu, %s)",
		      bad[i], used, proto_kind_name(r.kind));
	}
	/* other return flags are skipped; P only counts as a bare token */
	CHECK(proto_parse("EN Pq\r\n", 7, 100, &r) == 7 && r.kind == PR_META_MISS &&
	      !r.purged, "EN Pq is not P");
	CHECK(proto_parse("VA 2 t-1 f3 c99 P\r\nab\r\n", 23, 100, &r) == 23 &&
	      r.kind == PR_META_VALUE && r.flags == 3 && r.purged, "VA with more flags");
	CHECK(proto_parse("VA 2000 f0\r\n", 12, 1000, &r) > 0 &&
	      r.kind == PR_MALFORMED, "VA above the limit");
}

static void test_cas_and_messages(void)
{
	struct proto_reply r;
	const char *v = "VALUE key:9 3 2 123456789\r\nok\r\n";
	const char *e = "SERVER_ERROR object too large for cache\r\nEND\r\n";

	CHECK(proto_parse(v, strlen(v), 100, &r) == strlen(v) && r.kind == PR_VALUE &&
	      r.flags == 3 && r.datalen == 2, "VALUE with cas");
	CHECK(proto_parse(e, strlen(e), 100, &r) == 41 && r.kind == PR_SERVER_ERROR &&
	      r.linelen == 39, "SERVER_ERROR message line");
}

static void test_gen_verify(void)
{
	struct gen_params p;
	char err[128], buf[5000];
	const char *key = "key:12345";
	uint32_t len;

	CHECK(gen_parse("size=100-4096,seed=7", &p, err, sizeof(err)) == 0,
	      "gen_parse: %s", err);
	len = gen_value_len(&p, key, strlen(key));
	CHECK(len >= 100 && len <= 4096, "length in range");
	gen_value_fill(&p, key, strlen(key), 0, buf, len);
	CHECK(gen_value_check(&p, key, strlen(key), buf, len) == -1, "own value checks");
	buf[len / 2] ^= 1;
	CHECK(gen_value_check(&p, key, strlen(key), buf, len) == (long)(len / 2),
	      "flipped byte found at its offset");
	buf[len / 2] ^= 1;
	CHECK(gen_value_check(&p, key, strlen(key), buf, len - 1) == (long)(len - 1),
	      "short value found");
	CHECK(gen_value_check(&p, "key:12346", 9, buf, len) >= 0,
	      "another key's value does not check");
	CHECK(gen_parse("size=0", &p, err, sizeof(err)) == -1, "bad gen option refused");
}

int main(int argc, char **argv)
{
	TAP_INIT(argc, argv);
	RUN(test_pipelined);
	RUN(test_split_bytewise);
	RUN(test_split_random);
	RUN(test_split_every_point);
	RUN(test_incomplete);
	RUN(test_malformed);
	RUN(test_meta_malformed);
	RUN(test_cas_and_messages);
	RUN(test_gen_verify);
	return tap_failed;
}
