/*
 * stats.h - the "stats" and "stats settings" replies.
 */
#ifndef STATS_H
#define STATS_H

struct evbuffer;

/* Append "STAT name value\r\n" lines and "END\r\n". */
void stats_emit(struct evbuffer *out);

/* The settings view. */
void stats_settings_emit(struct evbuffer *out);

/* Zero the resettable counters (stats reset). */
void stats_reset(void);

#endif
