/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * gen.h - the deterministic synthetic origin ("--origin gen:OPTIONS").
 *
 * The value of a key is a pure function of the key and of the options, so
 * the daemon can rebuild any object it lost to a purge and the load generator
 * can check every byte it receives without keeping a copy.  This file and
 * gen.c are the one definition of that function; cached and loadgen both
 * compile them from here (cached/lib/ holds what the daemon shares with
 * the programs that talk to it).
 *
 * The formula (docs/gen-origin.md says the same in words):
 *
 *   h      = fnv1a64(key) ^ splitmix64(seed)
 *   length = min + splitmix64(h) % (max - min + 1)
 *   byte i = ALPHABET[(splitmix64(h + 1 + i / 8) >> (8 * (i % 8))) & 63]
 *   ALPHABET = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
 *   flags  = 0
 *
 * Every byte is printable and never '\r' or '\n', so a value can be typed
 * into telnet and read back.  A byte depends only on (h, i): a slice can be
 * checked without generating the rest.
 *
 * OPTIONS is a comma-separated list of name=value:
 *   size=N or size=MIN-MAX   value length in bytes (default 100)
 *   cost=US                  CPU work per rebuild in microseconds (default 0)
 *   seed=N                   changes every value (default 0)
 */
#ifndef GEN_H
#define GEN_H

#include <stddef.h>
#include <stdint.h>

#define GEN_MAX_SIZE (64u << 20)

struct gen_params {
	uint32_t min_size;
	uint32_t max_size;
	uint32_t cost_us;
	uint64_t seed;
};

/* Default parameters: size=100, cost=0, seed=0. */
void gen_defaults(struct gen_params *p);

/*
 * Parse OPTIONS (the part after "gen:"; NULL or "" keeps the defaults).
 * Returns 0, or -1 with a one-line reason in err.
 */
int gen_parse(const char *opts, struct gen_params *p, char *err, size_t errlen);

/* The key's hash h, the root of its value. */
uint64_t gen_key_hash(const struct gen_params *p, const char *key, size_t keylen);

/* Length of the value of a key. */
uint32_t gen_value_len(const struct gen_params *p, const char *key, size_t keylen);

/* Write bytes [off, off + len) of the key's value into buf. */
void gen_value_fill(const struct gen_params *p, const char *key, size_t keylen,
		    size_t off, char *buf, size_t len);

/*
 * Check that buf holds the whole value of the key.  Returns -1 when it does,
 * else the offset of the first wrong byte (len when only the length differs).
 */
long gen_value_check(const struct gen_params *p, const char *key, size_t keylen,
		     const char *buf, size_t len);

/* Spend the configured rebuild cost in CPU work. */
void gen_burn(const struct gen_params *p);

#endif /* GEN_H */
