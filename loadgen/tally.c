// SPDX-License-Identifier: GPL-2.0-only
/*
 * tally.c - adding up counters and histograms (see tally.h).
 */
#include <string.h>

#include "tally.h"
#include "util.h"

void stats_add(struct stats *a, const struct stats *b)
{
	a->ops += b->ops;
	a->gets += b->gets;
	a->sets += b->sets;
	a->deletes += b->deletes;
	a->touches += b->touches;
	a->hits += b->hits;
	a->misses += b->misses;
	a->misses_purged += b->misses_purged;
	a->hits_rebuilt += b->hits_rebuilt;
	a->errors += b->errors;
	a->verify_errors += b->verify_errors;
	a->conn_errors += b->conn_errors;
	a->unfinished += b->unfinished;
	a->bytes_sent += b->bytes_sent;
	a->bytes_received += b->bytes_received;
}

struct tally *tally_new(void)
{
	struct tally *a = xcalloc(1, sizeof(*a));

	tally_reset(a);
	return a;
}

void tally_reset(struct tally *a)
{
	memset(&a->all, 0, sizeof(a->all));
	memset(a->cmd, 0, sizeof(a->cmd));
	memset(a->srv, 0, sizeof(a->srv));
	a->wakeups = a->handled = 0;
	for (int op = 0; op < OP_COUNT; op++)
		hist_reset(&a->hist[op]);
	hist_reset(&a->uhist);
}

void tally_add(struct tally *a, const struct tally *b)
{
	stats_add(&a->all, &b->all);
	a->wakeups += b->wakeups;
	a->handled += b->handled;
	for (int i = 0; i < cfg.nservers; i++) {
		a->srv[i].ops += b->srv[i].ops;
		a->srv[i].errors += b->srv[i].errors;
		a->srv[i].unfinished += b->srv[i].unfinished;
		a->srv[i].conn_errors += b->srv[i].conn_errors;
	}
	for (int op = 0; op < OP_COUNT; op++) {
		stats_add(&a->cmd[op], &b->cmd[op]);
		if (b->hist[op].total)
			hist_merge(&a->hist[op], &b->hist[op]);
	}
	if (b->uhist.total)
		hist_merge(&a->uhist, &b->uhist);
}

void tally_merged(const struct tally *a, struct hist *h)
{
	hist_reset(h);
	for (int op = 0; op < OP_COUNT; op++)
		if (a->hist[op].total)
			hist_merge(h, &a->hist[op]);
}
