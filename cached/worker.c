// SPDX-License-Identifier: GPL-2.0-only
/*
 * worker.c - a worker's event base and the calls other threads post to
 * it (see worker.h).
 *
 * A posted call is queued under plock and the worker is woken with
 * event_active() on its posted event (libevent is set up for pthreads);
 * the worker runs every queued call in the order posted.  The call's
 * record belongs to the caller (the fetch pool's waiter), so posting
 * never allocates.
 */
#include "worker.h"

#include <stddef.h>

#include <event2/event.h>

/* Run the calls other threads posted, in the order they were posted. */
static void posted_cb(evutil_socket_t fd, short what, void *arg)
{
	struct worker *w = arg;
	struct worker_call *p;
	(void)fd;
	(void)what;

	pthread_mutex_lock(&w->plock);
	p = w->phead;
	w->phead = w->ptail = NULL;
	pthread_mutex_unlock(&w->plock);
	while (p) {
		struct worker_call *next = p->next;

		p->fn(p);       /* may free p */
		p = next;
	}
}

void worker_post(struct worker *w, struct worker_call *call)
{
	call->next = NULL;
	pthread_mutex_lock(&w->plock);
	if (w->ptail)
		w->ptail->next = call;
	else
		w->phead = call;
	w->ptail = call;
	pthread_mutex_unlock(&w->plock);
	event_active(w->posted, EV_READ, 0);
}

struct event_base *worker_base(struct worker *w)
{
	return w->base;
}

struct upstream **worker_upstream(struct worker *w)
{
	return &w->up;
}

int worker_init(struct worker *w)
{
	w->base = event_base_new();
	if (!w->base)
		return -1;
	w->posted = event_new(w->base, -1, EV_PERSIST, posted_cb, w);
	if (!w->posted)
		return -1;
	event_add(w->posted, NULL);
	pthread_mutex_init(&w->plock, NULL);
	return 0;
}
