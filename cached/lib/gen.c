// SPDX-License-Identifier: GPL-2.0-only
/*
 * gen.c - the deterministic synthetic origin; see gen.h for the formula.
 */
#include "gen.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static const char gen_alphabet[] =
	"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

static uint64_t splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static uint64_t fnv1a64(const char *s, size_t n)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	while (n--) {
		h ^= (unsigned char)*s++;
		h *= 0x100000001b3ULL;
	}
	return h;
}

void gen_defaults(struct gen_params *p)
{
	p->min_size = 100;
	p->max_size = 100;
	p->cost_us = 0;
	p->seed = 0;
}

/* Parse a decimal number that must end exactly at *end or at ',' or '-'. */
static int parse_u64(const char *s, const char **end, uint64_t *out)
{
	char *e;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*out = strtoull(s, &e, 10);
	if (errno)
		return -1;
	*end = e;
	return 0;
}

int gen_parse(const char *opts, struct gen_params *p, char *err, size_t errlen)
{
	const char *s = opts;

	gen_defaults(p);
	while (s && *s) {
		const char *eq = strchr(s, '=');
		const char *end;
		uint64_t a, b;
		size_t nlen;

		if (!eq) {
			snprintf(err, errlen, "gen: expected name=value at '%s'", s);
			return -1;
		}
		nlen = (size_t)(eq - s);
		if (parse_u64(eq + 1, &end, &a)) {
			snprintf(err, errlen, "gen: bad number in '%s'", s);
			return -1;
		}
		if (nlen == 4 && !strncmp(s, "size", 4)) {
			b = a;
			if (*end == '-' && parse_u64(end + 1, &end, &b)) {
				snprintf(err, errlen, "gen: bad size range in '%s'", s);
				return -1;
			}
			if (a < 1 || b < a || b > GEN_MAX_SIZE) {
				snprintf(err, errlen,
					 "gen: size must be 1..%u and MIN <= MAX",
					 GEN_MAX_SIZE);
				return -1;
			}
			p->min_size = (uint32_t)a;
			p->max_size = (uint32_t)b;
		} else if (nlen == 4 && !strncmp(s, "cost", 4)) {
			if (a > 10000000) {
				snprintf(err, errlen, "gen: cost above 10 s");
				return -1;
			}
			p->cost_us = (uint32_t)a;
		} else if (nlen == 4 && !strncmp(s, "seed", 4)) {
			p->seed = a;
		} else {
			snprintf(err, errlen, "gen: unknown option '%.*s'",
				 (int)nlen, s);
			return -1;
		}
		if (*end == ',') {
			end++;
		} else if (*end) {
			snprintf(err, errlen, "gen: junk after number in '%s'", s);
			return -1;
		}
		s = end;
	}
	return 0;
}

uint64_t gen_key_hash(const struct gen_params *p, const char *key, size_t keylen)
{
	return fnv1a64(key, keylen) ^ splitmix64(p->seed);
}

uint32_t gen_value_len(const struct gen_params *p, const char *key, size_t keylen)
{
	uint64_t span = (uint64_t)p->max_size - p->min_size + 1;

	return p->min_size +
	       (uint32_t)(splitmix64(gen_key_hash(p, key, keylen)) % span);
}

void gen_value_fill(const struct gen_params *p, const char *key, size_t keylen,
		    size_t off, char *buf, size_t len)
{
	uint64_t h = gen_key_hash(p, key, keylen);
	uint64_t word = 0;
	size_t i;

	for (i = off; i < off + len; i++) {
		if (i == off || i % 8 == 0)
			word = splitmix64(h + 1 + i / 8);
		buf[i - off] = gen_alphabet[(word >> (8 * (i % 8))) & 63];
	}
}

long gen_value_check(const struct gen_params *p, const char *key, size_t keylen,
		     const char *buf, size_t len)
{
	uint64_t h = gen_key_hash(p, key, keylen);
	size_t want = gen_value_len(p, key, keylen);
	size_t n = len < want ? len : want;
	uint64_t word = 0;
	size_t i;

	for (i = 0; i < n; i++) {
		if (i % 8 == 0)
			word = splitmix64(h + 1 + i / 8);
		if (buf[i] != gen_alphabet[(word >> (8 * (i % 8))) & 63])
			return (long)i;
	}
	return len == want ? -1 : (long)n;
}

void gen_burn(const struct gen_params *p)
{
	struct timespec start, now;
	volatile uint64_t sink = 0;
	uint64_t x = 1;
	long elapsed_us;

	if (!p->cost_us)
		return;
	clock_gettime(CLOCK_MONOTONIC, &start);
	do {
		for (int i = 0; i < 64; i++)
			x = splitmix64(x);
		sink = x;
		clock_gettime(CLOCK_MONOTONIC, &now);
		elapsed_us = (now.tv_sec - start.tv_sec) * 1000000L +
			     (now.tv_nsec - start.tv_nsec) / 1000;
	} while (elapsed_us < (long)p->cost_us);
	(void)sink;
}
