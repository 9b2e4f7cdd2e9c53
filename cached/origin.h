/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * origin.h - where lost or missing values come from.
 *
 *   none                no origin: a purged object is a miss
 *   gen:OPTIONS         deterministic synthetic values (gen.h)
 *   dir:PATH            the file PATH/KEY (no "..", no absolute keys)
 *                       (gen and dir: fetched by the pool of fetch.c)
 *   memcache:HOST:PORT  an upstream memcached-protocol server; misses read
 *                       through, sets write through (upstream.c), all
 *                       asynchronous in the worker's event loop
 */
#ifndef ORIGIN_H
#define ORIGIN_H

#include <stddef.h>
#include <stdint.h>

/* Parse --origin SPEC into settings.  Returns 0 or -1 with err. */
int origin_parse(const char *spec, char *err, size_t errlen);

/* True for origins that origin_fetch answers synchronously. */
int origin_is_sync(void);

/*
 * Fetch the value of a key from a synchronous origin.  Returns 1 with a
 * malloc'd *val of *vlen bytes plus "\r\n" and *flags; 0 when the origin
 * has no such key (or refuses it); -1 on error.
 */
int origin_fetch(const char *key, size_t nkey, char **val, uint32_t *vlen,
		 uint32_t *flags);

#endif
