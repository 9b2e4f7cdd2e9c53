/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * proto_meta.h - the meta commands (proto_meta.c), called by the
 * dispatcher (proto_text.c).
 */
#ifndef PROTO_META_H
#define PROTO_META_H

#include <stddef.h>

#include "proto.h"

/* mg, ms, md, ma, me (proto_meta.c); mn is answered by the caller. */
void proto_meta(struct conn *c, token_t *tokens, size_t ntokens);

/*
 * A meta command's base64 key (flag b) decoded into out (which may be
 * src); 0 when it is not valid base64.
 */
size_t b64_decode(const char *src, size_t len, char *out);

/*
 * The first pass of an mg with the fetch pool: hand its key to the pool
 * when the cache cannot serve it (proto_collect_key).
 */
void meta_collect(struct conn *c, token_t *tokens, size_t ntokens);

/* The value block of an ms arrived (data: vlen bytes and, if well formed,
 * "\r\n"): store it and reply. */
void meta_complete_nread(struct conn *c, const char *data);

#endif
