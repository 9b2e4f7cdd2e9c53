/*
 * upstream.c - placeholder until the asynchronous origin is written.
 */
#include "upstream.h"

void upstream_get(struct conn *c, const char *key, size_t nkey)
{
	(void)c; (void)key; (void)nkey;
}

int upstream_set(struct conn *c, const char *key, size_t nkey, uint32_t hv)
{
	(void)c; (void)key; (void)nkey; (void)hv;
	return -1;
}

void upstream_delete(struct conn *c, const char *key, size_t nkey)
{
	(void)c; (void)key; (void)nkey;
}

void upstream_flush(struct conn *c)
{
	(void)c;
}
