/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * listen.h - the listening sockets and accept (main thread).
 */
#ifndef LISTEN_H
#define LISTEN_H

struct event_base;

/*
 * Raise the soft limit on descriptors to what -c connections need, as far
 * as the hard limit allows (logged when it falls short).
 */
void listen_raise_fd_limit(void);

/*
 * Open the listeners of the settings in base's loop and accept on them.
 * Returns 0, or -1 after printing why.
 */
int listen_open(struct event_base *base);

#endif
