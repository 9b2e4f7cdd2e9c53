// SPDX-License-Identifier: GPL-2.0-only
/*
 * fuzz_proto.c - libFuzzer harness for the protocol parser and the item
 * semantics behind it.  The input is split at 0xff bytes into reads (so
 * framing across reads is exercised); each read goes through
 * proto_process() on a socket-less connection.  Built with clang
 * -fsanitize=fuzzer,address,undefined; see docs/cached.md.
 */
#define _GNU_SOURCE
#include <stdlib.h>
#include <string.h>

#include <event2/buffer.h>

#include "cache.h"
#include "daemon.h"
#include "proto.h"
#include "proto_text.h"

static int initialised;

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct conn c;
	size_t off = 0;

	if (!initialised) {
		log_silence();
		settings.maxbytes = 8u << 20;
		settings.item_size_max = 64 * 1024;
		settings.out_max = 1u << 20;
		settings.in_max = 1u << 20;
		settings.verify = true;
		settings.idle_secs = 1;
		current_time = process_started = 1700000000;
		if (cache_init(settings.maxbytes, false) < 0)
			abort();
		initialised = 1;
	}
	current_time++;
	memset(&c, 0, sizeof(c));
	c.fd = -1;
	if (conn_init_buffers(&c) < 0)
		abort();
	while (off < size) {
		const uint8_t *sep = memchr(data + off, 0xff, size - off);
		size_t n = sep ? (size_t)(sep - (data + off)) : size - off;

		if (conn_rbuf_reserve(&c, n + 1) < 0)
			break;
		memcpy(c.rbuf + c.rend, data + off, n);
		c.rend += n;
		off += n + (sep ? 1 : 0);
		if (proto_process(&c) == PROTO_CLOSE)
			break;
		/* what may be sent is always a head of the output */
		if (c.commit > evbuffer_get_length(c.out))
			abort();
		evbuffer_drain(c.out, evbuffer_get_length(c.out));
		c.commit = 0;
	}
	conn_free_buffers(&c);
	return 0;
}
