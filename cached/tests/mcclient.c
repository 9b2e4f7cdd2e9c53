// SPDX-License-Identifier: GPL-2.0-only
/*
 * mcclient.c - a tiny memcached text-protocol client for tests that run
 * where no python is (the QEMU guest).  Values come from the gen origin's
 * formula (gen.h), so every byte read back can be checked.
 *
 *   mcclient [-H host] [-p port] [-g GENOPTS] [-k PREFIX] fill N
 *   mcclient ... verify N       get every key, check every byte
 *   mcclient ... delete N       delete every key
 *   mcclient ... stats          print "stats"
 *   mcclient ... stat NAME      print one stat value
 *   mcclient ... meta LINE [DATA]  send one meta command (and the data
 *                               block of an ms), print the reply line and
 *                               the value of a VA reply
 *
 * verify prints "keys=N ok=A bad=B miss=C" and exits 1 when B > 0, or when
 * C > 0 and -s (strict) was given.
 */
#include <errno.h>
#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include "gen.h"

static int sock = -1;
static char rbuf[1 << 16];
static size_t rpos, rlen;

static int connect_to(const char *host, const char *port)
{
	struct addrinfo hints = { .ai_socktype = SOCK_STREAM }, *res, *ai;

	if (getaddrinfo(host, port, &hints, &res))
		return -1;
	for (ai = res; ai; ai = ai->ai_next) {
		sock = socket(ai->ai_family, ai->ai_socktype, ai->ai_protocol);
		if (sock >= 0 && connect(sock, ai->ai_addr, ai->ai_addrlen) == 0)
			break;
		if (sock >= 0)
			close(sock);
		sock = -1;
	}
	freeaddrinfo(res);
	return sock < 0 ? -1 : 0;
}

static void send_all(const char *p, size_t n)
{
	while (n) {
		ssize_t w = write(sock, p, n);

		if (w <= 0) {
			perror("mcclient: write");
			exit(2);
		}
		p += w;
		n -= (size_t)w;
	}
}

static int fill_rbuf(void)
{
	ssize_t n;

	if (rpos < rlen)
		return 0;
	n = read(sock, rbuf, sizeof(rbuf));
	if (n <= 0) {
		fprintf(stderr, "mcclient: connection closed\n");
		exit(2);
	}
	rpos = 0;
	rlen = (size_t)n;
	return 0;
}

/* Read one line (without CRLF) into buf. */
static void read_line(char *buf, size_t size)
{
	size_t n = 0;

	for (;;) {
		fill_rbuf();
		char c = rbuf[rpos++];

		if (c == '\n')
			break;
		if (n + 1 < size)
			buf[n++] = c;
	}
	if (n && buf[n - 1] == '\r')
		n--;
	buf[n] = '\0';
}

static void read_bytes(char *buf, size_t n)
{
	while (n) {
		fill_rbuf();
		size_t k = rlen - rpos < n ? rlen - rpos : n;

		memcpy(buf, rbuf + rpos, k);
		rpos += k;
		buf += k;
		n -= k;
	}
}

int main(int argc, char **argv)
{
	const char *host = "127.0.0.1", *port = "11211", *prefix = "key:";
	struct gen_params gp;
	char err[200], line[1024];
	int opt, strict = 0;

	gen_defaults(&gp);
	while ((opt = getopt(argc, argv, "H:p:g:k:s")) != -1) {
		switch (opt) {
		case 'H': host = optarg; break;
		case 'p': port = optarg; break;
		case 'k': prefix = optarg; break;
		case 's': strict = 1; break;
		case 'g':
			if (gen_parse(optarg, &gp, err, sizeof(err))) {
				fprintf(stderr, "mcclient: %s\n", err);
				return 64;
			}
			break;
		default:
			fprintf(stderr, "usage: mcclient [-H host] [-p port] [-g genopts] [-k prefix] [-s] fill N|verify N|delete N|stats|stat NAME|meta LINE [DATA]\n");
			return 64;
		}
	}
	if (optind >= argc) {
		fprintf(stderr, "mcclient: command missing\n");
		return 64;
	}
	if (connect_to(host, port) < 0) {
		fprintf(stderr, "mcclient: cannot connect to %s:%s\n", host, port);
		return 2;
	}
	const char *cmd = argv[optind];
	long n = optind + 1 < argc ? atol(argv[optind + 1]) : 0;

	if (!strcmp(cmd, "meta") && optind + 1 < argc) {
		/* one meta command (and an ms data block); print the reply */
		const char *req = argv[optind + 1];

		send_all(req, strlen(req));
		send_all("\r\n", 2);
		if (optind + 2 < argc) {
			send_all(argv[optind + 2], strlen(argv[optind + 2]));
			send_all("\r\n", 2);
		}
		read_line(line, sizeof(line));
		puts(line);
		if (!strncmp(line, "VA ", 3)) {
			size_t vlen = strtoul(line + 3, NULL, 10);
			char *v = malloc(vlen + 3);

			if (!v)
				return 2;
			read_bytes(v, vlen + 2);
			v[vlen] = '\0';
			puts(v);
			free(v);
		}
		return 0;
	}
	if (!strcmp(cmd, "stats") || !strcmp(cmd, "stat")) {
		const char *want = optind + 1 < argc ? argv[optind + 1] : NULL;

		send_all("stats\r\n", 7);
		for (;;) {
			read_line(line, sizeof(line));
			if (!strcmp(line, "END"))
				break;
			if (!want) {
				puts(line);
			} else if (!strncmp(line + 5, want, strlen(want)) &&
				   line[5 + strlen(want)] == ' ') {
				puts(line + 6 + strlen(want));
				return 0;
			}
		}
		return want ? 1 : 0;
	}
	if (!strcmp(cmd, "fill")) {
		char *val = malloc(gp.max_size + 2);
		long stored = 0;
		const long batch = 64;

		for (long i = 0; i < n; i += batch) {
			long j;

			for (j = i; j < n && j < i + batch; j++) {
				char key[300];
				int kl = snprintf(key, sizeof(key), "%s%ld", prefix, j);
				uint32_t len = gen_value_len(&gp, key, (size_t)kl);
				int hl = snprintf(line, sizeof(line), "set %s 0 0 %u\r\n", key, len);

				gen_value_fill(&gp, key, (size_t)kl, 0, val, len);
				memcpy(val + len, "\r\n", 2);
				send_all(line, (size_t)hl);
				send_all(val, len + 2);
			}
			for (long k = i; k < j; k++) {
				read_line(line, sizeof(line));
				if (!strcmp(line, "STORED"))
					stored++;
				else
					fprintf(stderr, "mcclient: set: %s\n", line);
			}
		}
		printf("keys=%ld stored=%ld\n", n, stored);
		return stored == n ? 0 : 1;
	}
	if (!strcmp(cmd, "delete")) {
		long deleted = 0, notfound = 0;
		const long batch = 64;

		for (long i = 0; i < n; i += batch) {
			long j;

			for (j = i; j < n && j < i + batch; j++) {
				int hl = snprintf(line, sizeof(line), "delete %s%ld\r\n", prefix, j);

				send_all(line, (size_t)hl);
			}
			for (long k = i; k < j; k++) {
				read_line(line, sizeof(line));
				if (!strcmp(line, "DELETED"))
					deleted++;
				else if (!strcmp(line, "NOT_FOUND"))
					notfound++;
				else
					fprintf(stderr, "mcclient: delete: %s\n", line);
			}
		}
		printf("keys=%ld deleted=%ld not_found=%ld\n", n, deleted, notfound);
		return deleted + notfound == n ? 0 : 1;
	}
	if (!strcmp(cmd, "verify")) {
		char *val = malloc(64u << 20);
		long ok = 0, bad = 0, miss = 0;
		const long batch = 32;

		for (long i = 0; i < n; i += batch) {
			int ql = snprintf(line, sizeof(line), "get");
			long j, hits = 0;

			for (j = i; j < n && j < i + batch; j++)
				ql += snprintf(line + ql, sizeof(line) - (size_t)ql, " %s%ld", prefix, j);
			ql += snprintf(line + ql, sizeof(line) - (size_t)ql, "\r\n");
			send_all(line, (size_t)ql);
			for (;;) {
				char key[300];
				unsigned flags, len;

				read_line(line, sizeof(line));
				if (!strcmp(line, "END"))
					break;
				if (sscanf(line, "VALUE %299s %u %u", key, &flags, &len) != 3 ||
				    len > (64u << 20) - 2) {
					fprintf(stderr, "mcclient: bad reply '%s'\n", line);
					return 2;
				}
				read_bytes(val, (size_t)len + 2);
				hits++;
				if (gen_value_check(&gp, key, strlen(key), val, len) == -1 &&
				    val[len] == '\r' && val[len + 1] == '\n') {
					ok++;
				} else {
					bad++;
					fprintf(stderr, "mcclient: wrong value for %s\n", key);
				}
			}
			miss += (j - i) - hits;
		}
		printf("keys=%ld ok=%ld bad=%ld miss=%ld\n", n, ok, bad, miss);
		return bad || (strict && miss) ? 1 : 0;
	}
	fprintf(stderr, "mcclient: unknown command %s\n", cmd);
	return 64;
}
