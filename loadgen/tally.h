/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * tally.h - what is counted: the counters of the whole run and of each
 * command, and a latency histogram per command.  A load thread counts
 * into its own tally; the main thread collects them (run.c) and prints
 * them (output.c).
 */
#ifndef TALLY_H
#define TALLY_H

#include <stdint.h>

#include "hist.h"
#include "options.h"

/*
 * Counters of the whole run and of each command.  The whole run's hits and
 * misses are those of the keys asked by gets; a command's own are its
 * positive and negative answers (VALUE or not, DELETED or NOT_FOUND,
 * TOUCHED or NOT_FOUND).  misses_purged and hits_rebuilt count the meta
 * replies that carry the server's P flag (purged by the kernel).
 */
struct stats {
	uint64_t ops, gets, sets, deletes, touches, hits, misses;
	uint64_t misses_purged, hits_rebuilt;
	uint64_t errors, verify_errors, conn_errors;
	uint64_t unfinished;	/* in flight or due but unsent at the end */
	uint64_t bytes_sent, bytes_received;	/* the whole run's only */
};

/*
 * What one server (one -s) did for the measured run: its requests answered,
 * failed and unfinished (their sum over the servers is the whole run's,
 * apart from replies with no request pending) and its lost connections.
 */
struct server_stats {
	uint64_t ops, errors, unfinished, conn_errors;
};

/*
 * Counters and a histogram per command, and the load threads' own work:
 * how often their loops woke up, and how many times they handled a
 * connection (an event on it, a due send or retry, the start of the run).
 */
struct tally {
	struct stats all;
	struct stats cmd[OP_COUNT];
	struct hist hist[OP_COUNT];
	struct hist uhist;	/* --uncorrected: every command, from the send */
	struct server_stats srv[MAX_SERVERS];	/* per -s */
	uint64_t wakeups, handled;
};

/*
 * What is outstanding at one moment of the run: requests in flight (sent,
 * not answered), requests due but not sent (open loop: the connection was
 * full or down), and the age of the oldest of them, from its intended or
 * actual send time.  It is a snapshot, not a sum over an interval.
 */
struct census {
	uint64_t in_flight, due;
	int64_t age;		/* ns; 0 when nothing is outstanding */
};

void stats_add(struct stats *a, const struct stats *b);
struct tally *tally_new(void);
void tally_reset(struct tally *a);
void tally_add(struct tally *a, const struct tally *b);
/* The histogram of every command together. */
void tally_merged(const struct tally *a, struct hist *h);

#endif /* TALLY_H */
