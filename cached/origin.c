// SPDX-License-Identifier: GPL-2.0-only
/*
 * origin.c - the synchronous origins (gen and dir) and --origin parsing.
 * The memcache origin is asynchronous and lives in upstream.c.
 *
 * gen work (the configured rebuild cost) and dir reads run without
 * cache_lock held, in the fetch pool (fetch.c), for a get or mg as for
 * the rebuild of a lost key before another command decides
 * (rebuild_lost), so they stall only the connection that asked; with
 * --fetch-threads 0 they run in the worker thread, stalling its other
 * connections.  dir keys are confined to PATH: a key with a ".."
 * component, an absolute key, a key with a symlink anywhere on its path
 * (O_NOFOLLOW on every component), or a key naming a non-regular file is
 * "not found".
 */
#define _GNU_SOURCE
#include "origin.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "daemon.h"

static int dir_fd = -1;

int origin_parse(const char *spec, char *err, size_t errlen)
{
	if (!strcmp(spec, "none")) {
		settings.origin = ORIGIN_NONE;
		return 0;
	}
	if (!strncmp(spec, "gen", 3) && (spec[3] == ':' || !spec[3])) {
		settings.origin = ORIGIN_GEN;
		return gen_parse(spec[3] ? spec + 4 : "", &settings.gen, err,
				 errlen);
	}
	if (!strncmp(spec, "dir:", 4) && spec[4]) {
		settings.origin = ORIGIN_DIR;
		settings.origin_dir = strdup(spec + 4);
		dir_fd = open(spec + 4, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (dir_fd < 0) {
			snprintf(err, errlen, "origin dir '%s': %s", spec + 4,
				 strerror(errno));
			return -1;
		}
		return 0;
	}
	if (!strncmp(spec, "memcache:", 9)) {
		const char *hp = spec + 9, *colon = strrchr(hp, ':');
		char *end;
		long port;

		if (!colon || colon == hp)
			goto bad;
		port = strtol(colon + 1, &end, 10);
		if (*end || port < 1 || port > 65535)
			goto bad;
		settings.origin = ORIGIN_MEMCACHE;
		settings.origin_host = strndup(hp, (size_t)(colon - hp));
		settings.origin_port = (int)port;
		return 0;
	}
bad:
	snprintf(err, errlen,
		 "bad --origin '%s' (none|gen:OPTIONS|dir:PATH|memcache:HOST:PORT)",
		 spec);
	return -1;
}

int origin_is_sync(void)
{
	return settings.origin == ORIGIN_GEN || settings.origin == ORIGIN_DIR;
}

/* A key is a safe relative path: no "..", no leading '/', no empty part. */
static int dir_key_ok(const char *key, size_t nkey)
{
	size_t i = 0;

	if (nkey == 0 || key[0] == '/')
		return 0;
	while (i < nkey) {
		size_t j = i;

		while (j < nkey && key[j] != '/')
			j++;
		if (j == i || (j - i == 2 && key[i] == '.' && key[i + 1] == '.') ||
		    (j - i == 1 && key[i] == '.'))
			return 0;
		i = j + 1;
		if (j < nkey && i == nkey)
			return 0;
	}
	return memchr(key, '\0', nkey) == NULL;
}

/*
 * Open key under the root one component at a time, each with O_NOFOLLOW:
 * a symlink anywhere on the way, a directory's too, is refused (ELOOP, or
 * ENOTDIR for a directory component: O_NOFOLLOW | O_DIRECTORY does not
 * open a symlink), since it could lead out of the root.  Directories are
 * opened O_PATH, so that one that may be searched but not listed works
 * as with a plain open of the whole path.  The key is a checked
 * relative path (dir_key_ok).  An fd or -1 with errno.
 */
static int dir_open(const char *key, size_t nkey)
{
	char part[KEY_MAX_LENGTH + 1];
	int at = dir_fd;
	size_t i = 0;

	for (;;) {
		const char *slash = memchr(key + i, '/', nkey - i);
		size_t n = slash ? (size_t)(slash - key) - i : nkey - i;
		int fd, e;

		memcpy(part, key + i, n);
		part[n] = '\0';
		fd = openat(at, part, (slash ? O_DIRECTORY | O_PATH : O_RDONLY | O_NONBLOCK) |
			    O_NOFOLLOW | O_CLOEXEC);
		e = errno;
		if (at != dir_fd)
			close(at);
		errno = e;
		if (fd < 0 || !slash)
			return fd;
		at = fd;
		i += n + 1;
	}
}

static int dir_fetch(const char *key, size_t nkey, char **val, uint32_t *vlen)
{
	struct stat st;
	ssize_t n;
	size_t got = 0;
	char *buf;
	int fd;

	if (!dir_key_ok(key, nkey))
		return 0;
	fd = dir_open(key, nkey);
	if (fd < 0)
		return errno == ENOENT || errno == ELOOP || errno == ENOTDIR ? 0 : -1;
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode) ||
	    (uint64_t)st.st_size + nkey + 64 > settings.item_size_max) {
		close(fd);
		return 0;
	}
	buf = malloc((size_t)st.st_size + 2);
	if (!buf) {
		close(fd);
		return -1;
	}
	while (got < (size_t)st.st_size &&
	       (n = read(fd, buf + got, (size_t)st.st_size - got)) > 0)
		got += (size_t)n;
	close(fd);
	memcpy(buf + got, "\r\n", 2);
	*val = buf;
	*vlen = (uint32_t)got;
	return 1;
}

int origin_fetch(const char *key, size_t nkey, char **val, uint32_t *vlen,
		 uint32_t *flags)
{
	*flags = 0;
	if (settings.origin == ORIGIN_GEN) {
		uint32_t len = gen_value_len(&settings.gen, key, nkey);
		char *buf;

		if ((uint64_t)len + nkey + 64 > settings.item_size_max)
			return 0;
		buf = malloc((size_t)len + 2);
		if (!buf)
			return -1;
		gen_value_fill(&settings.gen, key, nkey, 0, buf, len);
		memcpy(buf + len, "\r\n", 2);
		gen_burn(&settings.gen);
		*val = buf;
		*vlen = len;
		return 1;
	}
	if (settings.origin == ORIGIN_DIR)
		return dir_fetch(key, nkey, val, vlen);
	return 0;
}
