/* SPDX-License-Identifier: GPL-2.0-only */
/*
 * options.h - the command line and config files (options.c).
 */
#ifndef OPTIONS_H
#define OPTIONS_H

#include <stdbool.h>

#define EX_USAGE 64

/* What main.c does itself with the options: the process, not the cache. */
struct run_options {
	bool daemonize;     /* -d */
	char *pidfile;      /* -P, an absolute path */
	char *logfile;      /* logfile (config), --logfile: an absolute path */
	bool lock_memory;   /* -k */
	bool maxcore;       /* -r */
};

extern struct run_options run_opts;

/*
 * Fill settings and run_opts from argv, each --config FILE replaced by
 * the options of FILE where it stands.  A bad, unknown or refused option
 * prints one line naming it and exits EX_USAGE; -h, -V and -i print and
 * exit 0.
 */
void options_parse(int argc, char **argv);

#endif
