/*
 * psi.h - --mode psi: a PSI trigger on /proc/pressure/memory in the main
 * event loop; while it fires, the coldest data is punched out.
 */
#ifndef PSI_H
#define PSI_H

struct event_base;

/* Arm the trigger.  Returns 0, or -1 (logged) when PSI is unavailable. */
int psi_init(struct event_base *base);

#endif
