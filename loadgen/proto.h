/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * proto.h - incremental parser for memcached text protocol replies.
 *
 * proto_parse() looks at the unconsumed bytes of a connection's input and
 * returns one reply element at a time.  It keeps no state between calls: an
 * element that is not complete yet (a split packet) yields PROTO_MORE and is
 * parsed again from its first byte once more data has arrived, so pipelined
 * replies, split lines and split values all work the same way.
 *
 * Of the meta protocol it knows the replies of mg: "VA <bytes> <flags>"
 * followed by the data, and "EN" (a miss).  Their return flags are tokens
 * of a letter and an optional value; "f<n>" gives the client flags, and a
 * bare "P" (sent by the cached daemon) says that the value had been purged
 * by the kernel: "EN P" is a miss caused by a purge, "VA .. P" a value
 * rebuilt after one.  A VA line carries no key (key is NULL).
 */
#ifndef PROTO_H
#define PROTO_H

#include <stddef.h>
#include <stdint.h>

/* A line longer than this without "\r\n" is malformed. */
#define PROTO_MAX_LINE 2048

enum proto_kind {
	PR_VALUE,		/* VALUE <key> <flags> <bytes> [<cas>] + data */
	PR_END,
	PR_STORED,
	PR_NOT_STORED,
	PR_EXISTS,
	PR_NOT_FOUND,
	PR_DELETED,
	PR_TOUCHED,
	PR_META_VALUE,		/* VA <bytes> <flags>* + data (meta protocol) */
	PR_META_MISS,		/* EN [<flags>] */
	PR_ERROR,		/* ERROR */
	PR_CLIENT_ERROR,	/* CLIENT_ERROR <msg> */
	PR_SERVER_ERROR,	/* SERVER_ERROR <msg> */
	PR_MALFORMED,		/* anything else; line/linelen hold it */
};

struct proto_reply {
	enum proto_kind kind;
	const char *line;	/* the reply line, without "\r\n" */
	size_t linelen;
	const char *key;	/* PR_VALUE */
	size_t keylen;
	uint32_t flags;
	const char *data;
	size_t datalen;
	int purged;		/* meta: the flag P, the value had been purged */
};

/*
 * Parse one element from buf[0..len).  Returns the number of bytes it takes
 * (> 0) and fills *r, or 0 when more input is needed.  A malformed element
 * is returned as PR_MALFORMED, consuming its line when the line is complete
 * (the stream is then out of step, so callers should drop the connection).
 * A value larger than max_value is malformed as well.
 */
size_t proto_parse(const char *buf, size_t len, size_t max_value,
		   struct proto_reply *r);

const char *proto_kind_name(enum proto_kind k);

#endif /* PROTO_H */
