/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * proto_text.h - the memcached text protocol on a connection: the
 * classic commands and the dispatcher of every command line
 * (proto_text.c), run by the worker threads (thread.c).
 */
#ifndef PROTO_TEXT_H
#define PROTO_TEXT_H

#include "conn.h"

enum proto_ret {
	PROTO_MORE,     /* consumed what it could; read more */
	PROTO_BLOCKED,  /* stop reading until output drains / upstream answers */
	PROTO_CLOSE,    /* close the connection after flushing */
	PROTO_YIELD,    /* ran -R commands: let other connections run, then
			   call again (the rest may all be buffered already) */
};

/*
 * Process buffered input: run complete commands, append replies to c->out.
 * Never blocks; bounded work per call.
 */
enum proto_ret proto_process(struct conn *c);

#endif
