// SPDX-License-Identifier: GPL-2.0-only
/*
 * output.c - what loadgen prints: the human summary, the progress line,
 * the interval lines, the final JSON file and the HdrHistogram log.
 *
 * Everything here works on tallies that the main thread has already
 * collected from the load threads, so nothing here takes a lock or runs
 * during a thread's loop.  A tally has counters and a histogram for each
 * command; the whole run's histogram is their merge, made here.  A command
 * is reported when it is part of the mix (--mix), whether or not it ran.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "options.h"
#include "output.h"
#include "util.h"

static double us(int64_t ns)
{
	return (double)ns / 1000.0;
}

static const char *op_name(int op)
{
	static const char *const names[OP_COUNT] = { "get", "set", "delete", "touch" };

	if (op == OP_GET && cfg.meta)
		return "mg";
	return names[op];
}

/* KB (1024 bytes) sent and received per second, as memtier_benchmark's */
static double kb_per_s(const struct stats *s, double secs)
{
	return secs > 0 ? (double)(s->bytes_sent + s->bytes_received) / 1024 / secs : 0;
}

/* hits / (hits + misses), 0 when there were none */
static double hit_ratio(const struct stats *s)
{
	uint64_t keys = s->hits + s->misses;

	return keys ? (double)s->hits / (double)keys : 0.0;
}

/* "percentiles_us":{"50":..,"99.9":..}: those of --print-percentiles */
static void json_percentiles(FILE *f, const struct hist *h)
{
	fputs("\"percentiles_us\":{", f);
	for (int i = 0; i < cfg.npct; i++)
		fprintf(f, "%s\"%.10g\":%.1f", i ? "," : "", cfg.pct[i],
			us(hist_percentile(h, cfg.pct[i])));
	fputc('}', f);
}

/* "ops":..,"hits":..,... and the percentiles: the figures of one command */
static void json_figures(FILE *f, double secs, const struct stats *s,
			 const struct hist *h)
{
	fprintf(f, "\"ops\":%llu,\"ops_per_s\":%.1f,\"hits\":%llu,\"misses\":%llu,"
		"\"errors\":%llu,\"unfinished\":%llu,\"p50_us\":%.1f,"
		"\"p90_us\":%.1f,\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f,"
		"\"mean_us\":%.1f,\"stddev_us\":%.1f",
		(unsigned long long)s->ops, secs > 0 ? (double)s->ops / secs : 0,
		(unsigned long long)s->hits, (unsigned long long)s->misses,
		(unsigned long long)s->errors, (unsigned long long)s->unfinished,
		us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
		us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)),
		us(h->max), hist_mean(h) / 1000, hist_stddev(h) / 1000);
	fputc(',', f);
	json_percentiles(f, h);
}

/* "commands":{"get":{...},...}; with_hist adds each one's histogram */
static void json_commands(FILE *f, double secs, const struct tally *a,
			  int with_hist)
{
	int first = 1;

	fputs("\"commands\":{", f);
	for (int op = 0; op < OP_COUNT; op++) {
		if (cfg.mix[op] <= 0)
			continue;
		fprintf(f, "%s\"%s\":{", first ? "" : ",", op_name(op));
		json_figures(f, secs, &a->cmd[op], &a->hist[op]);
		if (op == OP_GET)
			fprintf(f, ",\"misses_purged\":%llu,\"hits_rebuilt\":%llu",
				(unsigned long long)a->cmd[op].misses_purged,
				(unsigned long long)a->cmd[op].hits_rebuilt);
		if (with_hist) {
			fputs(",\"histogram\":", f);
			hist_write_json(&a->hist[op], f);
		}
		fputc('}', f);
		first = 0;
	}
	fputc('}', f);
}

static int cur_run;

void output_set_run(int run)
{
	cur_run = run;
}

void print_interval_json(double t, double secs, const struct tally *a,
			 const struct census *cen)
{
	const struct stats *s = &a->all;
	struct hist *h = xcalloc(1, sizeof(*h));

	tally_merged(a, h);
	if (cur_run)
		printf("{\"run\":%d,", cur_run);
	else
		putchar('{');
	printf("\"t\":%.3f,\"ops\":%llu,\"ops_per_s\":%.1f,\"gets\":%llu,"
	       "\"sets\":%llu,\"deletes\":%llu,\"touches\":%llu,\"hits\":%llu,"
	       "\"misses\":%llu,\"hit_ratio\":%.4f,\"misses_purged\":%llu,"
	       "\"misses_never_cached\":%llu,\"hits_rebuilt\":%llu,\"errors\":%llu,"
	       "\"verify_errors\":%llu,\"conn_errors\":%llu,\"unfinished\":%llu,"
	       "\"in_flight\":%llu,\"due\":%llu,\"oldest_us\":%.1f,\"kb_per_s\":%.1f,"
	       "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,"
	       "\"p999_us\":%.1f,\"max_us\":%.1f,",
	       t, (unsigned long long)s->ops, secs > 0 ? (double)s->ops / secs : 0,
	       (unsigned long long)s->gets, (unsigned long long)s->sets,
	       (unsigned long long)s->deletes, (unsigned long long)s->touches,
	       (unsigned long long)s->hits, (unsigned long long)s->misses,
	       hit_ratio(s), (unsigned long long)s->misses_purged,
	       (unsigned long long)(s->misses - s->misses_purged),
	       (unsigned long long)s->hits_rebuilt,
	       (unsigned long long)s->errors,
	       (unsigned long long)s->verify_errors,
	       (unsigned long long)s->conn_errors,
	       (unsigned long long)s->unfinished,
	       (unsigned long long)cen->in_flight, (unsigned long long)cen->due,
	       us(cen->age), kb_per_s(s, secs),
	       us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
	       us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)),
	       us(h->max));
	json_percentiles(stdout, h);
	fputc(',', stdout);
	json_commands(stdout, secs, a, 0);
	fputs("}\n", stdout);
	fflush(stdout);
	free(h);
}

void print_progress(double t, double secs, const struct tally *a,
		    const struct census *cen)
{
	const struct stats *s = &a->all;
	struct hist *h = xcalloc(1, sizeof(*h));

	tally_merged(a, h);
	fprintf(stderr, "\r[%6.1fs] %10.0f ops/s  hits %llu  misses %llu  errors %llu"
		"  p99 %.1f us  outstanding %llu (oldest %.1f ms)   ",
		t, secs > 0 ? (double)s->ops / secs : 0,
		(unsigned long long)s->hits, (unsigned long long)s->misses,
		(unsigned long long)(s->errors + s->verify_errors),
		us(hist_percentile(h, 99)),
		(unsigned long long)(cen->in_flight + cen->due),
		(double)cen->age / 1e6);
	free(h);
}

static void json_str(FILE *f, const char *s)
{
	fputc('"', f);
	for (; *s; s++) {
		if (*s == '"' || *s == '\\')
			fprintf(f, "\\%c", *s);
		else if ((unsigned char)*s < 32)
			fprintf(f, "\\u%04x", *s);
		else
			fputc(*s, f);
	}
	fputc('"', f);
}

/* "PREFIXdist":"zipf","PREFIXzipf_s":S,"PREFIXgaussian_sd":SD, */
static void json_dist(FILE *f, const char *prefix, const struct dist_spec *d)
{
	static const char *const names[] = {
		[KD_UNIFORM] = "uniform", [KD_ZIPF] = "zipf",
		[KD_SCRAMBLED] = "zipf", [KD_SEQUENTIAL] = "sequential",
		[KD_GAUSSIAN] = "gaussian",
	};

	fprintf(f, "\"%sdist\":\"%s\",\"%szipf_s\":%.4f,\"%sgaussian_sd\":%.1f,",
		prefix, names[d->kind], prefix,
		d->kind == KD_ZIPF ? d->param : 0.0, prefix,
		d->kind == KD_GAUSSIAN ? d->param : 0.0);
}

static void json_config(FILE *f)
{
	fputs("{\"server\":", f);
	json_str(f, cfg.server);
	fputs(",\"servers\":[", f);
	for (int i = 0; i < cfg.nservers; i++) {
		if (i)
			fputc(',', f);
		json_str(f, cfg.servers[i].name);
	}
	fputc(']', f);
	fprintf(f, ",\"threads\":%d,\"conns\":%d,\"pipeline\":%d,\"rate\":%.1f,"
		"\"arrivals\":\"%s\",\"duration\":%.3f,\"ops\":%llu,"
		"\"timeout\":%.3f,\"connect_timeout\":%.3f,\"keys\":%llu,"
		"\"key_prefix\":",
		cfg.threads, cfg.conns, cfg.pipeline, cfg.rate,
		cfg.arrivals == ARRIVE_POISSON ? "poisson" : "constant",
		cfg.duration, (unsigned long long)cfg.ops, cfg.timeout,
		cfg.connect_timeout,
		(unsigned long long)cfg.keys);
	json_str(f, cfg.prefix);
	fprintf(f, ",\"key_minimum\":%llu,\"key_size\":[%d,%d],"
		"\"expiry_range\":[%d,%d],",
		(unsigned long long)cfg.key_base, cfg.key_min, cfg.key_max,
		cfg.exp_min, cfg.exp_max);
	json_dist(f, "", &cfg.dist[ROLE_GET]);
	json_dist(f, "set_", &cfg.dist[ROLE_SET]);
	fprintf(f, "\"scramble\":%s,\"get_ratio\":%.4f,\"mix\":{",
		cfg.scramble ? "true" : "false", cfg.mix[OP_GET]);
	for (int op = 0; op < OP_COUNT; op++)
		fprintf(f, "%s\"%s\":%.4f", op ? "," : "", op_name(op), cfg.mix[op]);
	fputs("},\"gen\":", f);
	json_str(f, cfg.gen_str ? cfg.gen_str : "");
	fputs(",\"data_size_list\":[", f);
	for (int i = 0; i < cfg.nsizes; i++)
		fprintf(f, "%s[%u,%llu]", i ? "," : "", cfg.sizes[i],
			(unsigned long long)cfg.size_weight[i]);
	fputc(']', f);
	fprintf(f, ",\"multiget\":%d,\"multiget_min\":%d,\"meta\":%s,"
		"\"warmup\":%s,\"warmup_order\":\"%s\",\"verify\":%s,"
		"\"pin\":%s,\"sched_batch\":%s,\"uncorrected\":%s,"
		"\"run_count\":%d}",
		cfg.multiget, cfg.multiget_min, cfg.meta ? "true" : "false",
		cfg.warmup ? "true" : "false",
		cfg.warmup_random ? "random" : "sequential",
		cfg.verify ? "true" : "false", cfg.pin ? "true" : "false",
		cfg.sched_batch ? "true" : "false",
		cfg.uncorrected ? "true" : "false", cfg.run_count);
}

/*
 * The --json file's series: one object per second of the run, rendered
 * when its second ends, written with the file.
 */
static char **series;
static size_t nseries, series_cap;

void series_record(double t, double secs, const struct tally *a,
		   const struct census *cen)
{
	struct hist *h = xcalloc(1, sizeof(*h));
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		die("out of memory");
	tally_merged(a, h);
	fprintf(f, "{\"t\":%.3f,\"in_flight\":%llu,\"due\":%llu,\"oldest_us\":%.1f,"
		"\"kb_per_s\":%.1f,\"conn_errors\":%llu,", t,
		(unsigned long long)cen->in_flight, (unsigned long long)cen->due,
		us(cen->age), kb_per_s(&a->all, secs),
		(unsigned long long)a->all.conn_errors);
	json_figures(f, secs, &a->all, h);
	fputc('}', f);
	if (fclose(f) || !text)
		die("out of memory");
	if (nseries == series_cap) {
		series_cap = series_cap ? 2 * series_cap : 64;
		series = xrealloc(series, series_cap * sizeof(*series));
	}
	series[nseries++] = text;
	free(h);
}

/* connections of server i: connection g talks to server g % nservers */
static int server_conns(int i)
{
	int total = cfg.threads * cfg.conns;

	return total / cfg.nservers + (i < total % cfg.nservers);
}

/* "servers":[{"server":..,"conns":..,"ops":..,...},...], one per -s */
static void json_servers(FILE *f, const struct tally *a)
{
	fputs("\"servers\":[", f);
	for (int i = 0; i < cfg.nservers; i++) {
		const struct server_stats *v = &a->srv[i];

		fputs(i ? ",{\"server\":" : "{\"server\":", f);
		json_str(f, cfg.servers[i].name);
		fprintf(f, ",\"conns\":%d,\"ops\":%llu,\"errors\":%llu,"
			"\"unfinished\":%llu,\"conn_errors\":%llu}",
			server_conns(i), (unsigned long long)v->ops,
			(unsigned long long)v->errors,
			(unsigned long long)v->unfinished,
			(unsigned long long)v->conn_errors);
	}
	fputc(']', f);
}

/*
 * "interrupted":..,"duration_s":..,"ops":.. ... "histogram":{..}: the
 * figures of a run, or of the aggregate of several, and the series
 * recorded so far (which are taken).
 */
static void json_result(FILE *f, double secs, double cpu,
			const struct tally *a, int end)
{
	const struct stats *s = &a->all;
	struct hist *h = xcalloc(1, sizeof(*h));

	tally_merged(a, h);
	fprintf(f, "\"interrupted\":%s,\"timeout\":%s,\"duration_s\":%.3f,\"ops\":%llu,"
		"\"ops_per_s\":%.1f,\"gets\":%llu,\"sets\":%llu,\"deletes\":%llu,"
		"\"touches\":%llu,\"hits\":%llu,\"misses\":%llu,\"hit_ratio\":%.4f,"
		"\"misses_purged\":%llu,\"misses_never_cached\":%llu,"
		"\"hits_rebuilt\":%llu,\"errors\":%llu,\"verify_errors\":%llu,"
		"\"conn_errors\":%llu,\"unfinished\":%llu,\"p50_us\":%.1f,\"p90_us\":%.1f,"
		"\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f,"
		"\"mean_us\":%.1f,\"stddev_us\":%.1f,\"bytes_sent\":%llu,"
		"\"bytes_received\":%llu,\"kb_per_s\":%.1f,"
		"\"cpu_s\":%.3f,\"cpu_ms_per_1000\":%.4f,",
		end == END_INTERRUPTED ? "true" : "false",
		end == END_CONNECT_TIMEOUT ? "\"connect\"" :
		end == END_TIMEOUT ? "\"run\"" : "null",
		secs, (unsigned long long)s->ops,
		secs > 0 ? (double)s->ops / secs : 0,
		(unsigned long long)s->gets, (unsigned long long)s->sets,
		(unsigned long long)s->deletes, (unsigned long long)s->touches,
		(unsigned long long)s->hits, (unsigned long long)s->misses,
		hit_ratio(s), (unsigned long long)s->misses_purged,
		(unsigned long long)(s->misses - s->misses_purged),
		(unsigned long long)s->hits_rebuilt,
		(unsigned long long)s->errors,
		(unsigned long long)s->verify_errors,
		(unsigned long long)s->conn_errors,
		(unsigned long long)s->unfinished,
		us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
		us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)),
		us(h->max), hist_mean(h) / 1000, hist_stddev(h) / 1000,
		(unsigned long long)s->bytes_sent,
		(unsigned long long)s->bytes_received, kb_per_s(s, secs), cpu,
		s->ops ? cpu * 1e6 / (double)s->ops : 0);
	json_percentiles(f, h);
	fputc(',', f);
	json_commands(f, secs, a, 1);
	fputc(',', f);
	json_servers(f, a);
	fprintf(f, ",\"loop\":{\"wakeups\":%llu,\"handled\":%llu}",
		(unsigned long long)a->wakeups, (unsigned long long)a->handled);
	fputs(",\"uncorrected\":", f);
	if (cfg.uncorrected) {
		const struct hist *u = &a->uhist;

		fprintf(f, "{\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,"
			"\"p999_us\":%.1f,\"max_us\":%.1f,\"mean_us\":%.1f,"
			"\"stddev_us\":%.1f,",
			us(hist_percentile(u, 50)), us(hist_percentile(u, 90)),
			us(hist_percentile(u, 99)), us(hist_percentile(u, 99.9)),
			us(u->max), hist_mean(u) / 1000, hist_stddev(u) / 1000);
		json_percentiles(f, u);
		fputs(",\"histogram\":", f);
		hist_write_json(u, f);
		fputc('}', f);
	} else {
		fputs("null", f);
	}
	fputs(",\"series\":[", f);
	for (size_t i = 0; i < nseries; i++) {
		fprintf(f, "%s%s", i ? "," : "", series[i]);
		free(series[i]);
	}
	free(series);
	series = NULL;
	nseries = series_cap = 0;
	fputs("],\"histogram\":", f);
	hist_write_json(h, f);
	free(h);
}

char *json_run_text(int run, double secs, double cpu, const struct tally *a,
		    int end)
{
	char *text = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&text, &len);

	if (!f)
		die("out of memory");
	fprintf(f, "{\"run\":%d,", run);
	json_result(f, secs, cpu, a, end);
	fputc('}', f);
	if (fclose(f) || !text)
		die("out of memory");
	return text;
}

void write_json(const char *path, double secs, double cpu,
		const struct tally *a, int end, const struct hist *collect_lock,
		char **runs, int nruns, int best, int worst)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno));
		return;
	}
	fputs("{\"config\":", f);
	json_config(f);
	fputc(',', f);
	json_result(f, secs, cpu, a, end);
	fprintf(f, ",\"collect_lock\":{\"count\":%llu,\"p50_us\":%.3f,"
		"\"max_us\":%.3f}",
		(unsigned long long)collect_lock->total,
		us(hist_percentile(collect_lock, 50)), us(collect_lock->max));
	if (nruns) {
		fputs(",\"runs\":[", f);
		for (int i = 0; i < nruns; i++)
			fprintf(f, "%s%s", i ? "," : "", runs[i]);
		fprintf(f, "],\"best_run\":%d,\"worst_run\":%d", best, worst);
	}
	fputs("}\n", f);
	if (fclose(f))
		fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno));
}

/* LABEL p50 ..  p90 ..  (the --print-percentiles)  max .. */
static void print_latency(FILE *f, const char *label, const struct hist *h)
{
	fprintf(f, "%-12s", label);
	for (int i = 0; i < cfg.npct; i++)
		fprintf(f, "p%.10g %.1f  ", cfg.pct[i],
			us(hist_percentile(h, cfg.pct[i])));
	fprintf(f, "max %.1f  mean %.1f  stddev %.1f\n", us(h->max),
		hist_mean(h) / 1000, hist_stddev(h) / 1000);
}

void print_summary(FILE *f, double secs, double cpu, const struct tally *a,
		   int end)
{
	const struct stats *s = &a->all;
	struct hist *h = xcalloc(1, sizeof(*h));

	tally_merged(a, h);
	fprintf(f, "server      %s  (%d threads x %d conns, pipeline %d, %s)\n",
	       cfg.server, cfg.threads, cfg.conns, cfg.pipeline,
	       cfg.rate > 0 ? "open loop" : "closed loop");
	if (cfg.rate > 0)
		fprintf(f, "rate        %.1f ops/s offered%s\n", cfg.rate,
			cfg.arrivals == ARRIVE_POISSON ? " (Poisson arrivals)" : "");
	fprintf(f, "duration    %.3f s", secs);
	if (end == END_INTERRUPTED)
		fputs("  (interrupted)", f);
	else if (end == END_CONNECT_TIMEOUT)
		fprintf(f, "  (timed out: no connection within %g s)",
			cfg.connect_timeout);
	else if (end == END_TIMEOUT)
		fprintf(f, "  (timed out: --timeout %g s, %llu of %llu requests answered)",
			cfg.timeout, (unsigned long long)(s->ops + s->errors),
			(unsigned long long)cfg.ops);
	fputc('\n', f);
	fprintf(f, "ops         %llu  (%.1f ops/s)  gets %llu  sets %llu",
	       (unsigned long long)s->ops, secs > 0 ? (double)s->ops / secs : 0,
	       (unsigned long long)s->gets, (unsigned long long)s->sets);
	if (cfg.mix[OP_DELETE] > 0 || cfg.mix[OP_TOUCH] > 0)
		fprintf(f, "  deletes %llu  touches %llu",
			(unsigned long long)s->deletes,
			(unsigned long long)s->touches);
	fputc('\n', f);
	fprintf(f, "bytes       sent %llu  received %llu  (%.1f KB/s)\n",
		(unsigned long long)s->bytes_sent,
		(unsigned long long)s->bytes_received, kb_per_s(s, secs));
	fprintf(f, "hits        %llu  (%.1f%%)  misses %llu",
	       (unsigned long long)s->hits, 100.0 * hit_ratio(s),
	       (unsigned long long)s->misses);
	if (cfg.meta)
		fprintf(f, "  (purged %llu)  hits rebuilt after a purge %llu",
			(unsigned long long)s->misses_purged,
			(unsigned long long)s->hits_rebuilt);
	fputc('\n', f);
	fprintf(f, "errors      %llu  verify_errors %llu  conn_errors %llu\n",
	       (unsigned long long)s->errors,
	       (unsigned long long)s->verify_errors,
	       (unsigned long long)s->conn_errors);
	fprintf(f, "unfinished  %llu  (in flight or due at the end; counted in the latency)\n",
		(unsigned long long)s->unfinished);
	for (int i = 0; cfg.nservers > 1 && i < cfg.nservers; i++)
		fprintf(f, "  %-20s conns %d  ops %llu  errors %llu  unfinished %llu  conn_errors %llu\n",
			cfg.servers[i].name, server_conns(i),
			(unsigned long long)a->srv[i].ops,
			(unsigned long long)a->srv[i].errors,
			(unsigned long long)a->srv[i].unfinished,
			(unsigned long long)a->srv[i].conn_errors);
	print_latency(f, "latency us", h);
	if (cfg.uncorrected)
		print_latency(f, "uncorrected", &a->uhist);
	for (int op = 0; op < OP_COUNT; op++) {
		char label[32];
		const struct stats *c = &a->cmd[op];

		if (cfg.mix[op] <= 0)
			continue;
		snprintf(label, sizeof(label), "  %s", op_name(op));
		fprintf(f, "%-12sops %llu  hits %llu  misses %llu  errors %llu  unfinished %llu\n",
			label, (unsigned long long)c->ops,
			(unsigned long long)c->hits, (unsigned long long)c->misses,
			(unsigned long long)c->errors,
			(unsigned long long)c->unfinished);
		print_latency(f, "", &a->hist[op]);
	}
	fprintf(f, "cpu         %.3f s  (%.4f ms per 1000 requests)\n", cpu,
	       s->ops ? cpu * 1e6 / (double)s->ops : 0);
	fflush(f);
	free(h);
}

/* ------------------------------------------------- HdrHistogram's log */

static FILE *hdr_log;

/*
 * The interval log of HdrHistogram (format version 1.3): a header with the
 * start time, a legend, then one line per interval and histogram:
 * [Tag=NAME,]START,LENGTH,MAX,HISTOGRAM with START seconds since the start
 * of the measured run (which is the BaseTime), MAX in milliseconds (values
 * are recorded in nanoseconds: HdrHistogram's tools read them with an
 * output value unit ratio of 1e6 for milliseconds) and the histogram in its
 * compressed base64 form.  The untagged line is every command together.
 */
void hdr_log_open(const char *path)
{
	hdr_log = fopen(path, "w");
	if (!hdr_log)
		die("%s: %s", path, strerror(errno));
}

static void hdr_log_line(const char *tag, double start, double secs,
			 const struct hist *h)
{
	char *text = hist_encode_hdr(h);

	if (!text)
		die("out of memory");
	if (tag)
		fprintf(hdr_log, "Tag=%s,", tag);
	fprintf(hdr_log, "%.3f,%.3f,%.3f,%s\n", start, secs, (double)h->max / 1e6,
		text);
	free(text);
}

void hdr_log_interval(int64_t t0, double start, double secs,
		      const struct tally *a)
{
	static int header_done;
	struct hist *h = xcalloc(1, sizeof(*h));

	if (!header_done) {
		struct timespec real;
		double base;
		char when[64];
		time_t sec;

		/* the run's start t0 = now - start, in wall-clock time */
		clock_gettime(CLOCK_REALTIME, &real);
		base = (double)real.tv_sec + real.tv_nsec / 1e9 -
		       ((double)(now_ns() - t0) / 1e9);
		sec = (time_t)base;
		strftime(when, sizeof(when), "%a %b %d %H:%M:%S UTC %Y", gmtime(&sec));
		fprintf(hdr_log, "#[Histogram log format version 1.3]\n"
			"#[StartTime: %.3f (seconds since epoch), %s]\n"
			"#[BaseTime: %.3f (seconds since epoch)]\n"
			"\"StartTimestamp\",\"Interval_Length\",\"Interval_Max\","
			"\"Interval_Compressed_Histogram\"\n", base, when, base);
		header_done = 1;
	}
	tally_merged(a, h);
	hdr_log_line(NULL, start, secs, h);
	for (int op = 0; op < OP_COUNT; op++)
		if (cfg.mix[op] > 0)
			hdr_log_line(op_name(op), start, secs, &a->hist[op]);
	fflush(hdr_log);
	free(h);
}

void hdr_log_close(void)
{
	if (hdr_log && fclose(hdr_log))
		fprintf(stderr, "loadgen: %s: %s\n", cfg.hdr_log, strerror(errno));
	hdr_log = NULL;
}
