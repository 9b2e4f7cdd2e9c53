/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * proto_admin.h - the admin commands (proto_admin.c), called by the
 * dispatcher (proto_text.c).
 */
#ifndef PROTO_ADMIN_H
#define PROTO_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include "proto.h"

/* lru_crawler, cache_memlimit and slabs. */
void process_lru_crawler(struct conn *c, token_t *tokens, size_t ntokens);
void process_memlimit(struct conn *c, token_t *tokens, size_t ntokens);
void process_slabs(struct conn *c, token_t *tokens, size_t ntokens);
/* stats cachedump ID LIMIT, ID checked: a walk in steps. */
void process_cachedump(struct conn *c, uint32_t id, uint32_t limit);

#endif
