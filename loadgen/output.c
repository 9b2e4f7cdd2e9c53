/*
 * output.c - what loadgen prints: the human summary, the progress line,
 * the interval lines and the final JSON file.
 *
 * Everything here works on counters and histograms that the main thread
 * has already collected from the load threads, so nothing here takes a
 * lock or runs during a thread's loop.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/resource.h>

#include "loadgen.h"

double us(int64_t ns)
{
	return (double)ns / 1000.0;
}

void print_interval_json(double t, double secs, const struct stats *s,
				const struct hist *h)
{
	printf("{\"t\":%.3f,\"ops\":%llu,\"ops_per_s\":%.1f,\"gets\":%llu,"
	       "\"sets\":%llu,\"hits\":%llu,\"misses\":%llu,\"errors\":%llu,"
	       "\"verify_errors\":%llu,\"conn_errors\":%llu,\"unfinished\":%llu,"
	       "\"p50_us\":%.1f,\"p90_us\":%.1f,\"p99_us\":%.1f,"
	       "\"p999_us\":%.1f,\"max_us\":%.1f}\n",
	       t, (unsigned long long)s->ops, secs > 0 ? (double)s->ops / secs : 0,
	       (unsigned long long)s->gets, (unsigned long long)s->sets,
	       (unsigned long long)s->hits, (unsigned long long)s->misses,
	       (unsigned long long)s->errors,
	       (unsigned long long)s->verify_errors,
	       (unsigned long long)s->conn_errors,
	       (unsigned long long)s->unfinished,
	       us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
	       us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)),
	       us(h->max));
	fflush(stdout);
}

void print_progress(double t, double secs, const struct stats *s,
			   const struct hist *h)
{
	fprintf(stderr, "\r[%6.1fs] %10.0f ops/s  hits %llu  misses %llu  errors %llu"
		"  p99 %.1f us   ",
		t, secs > 0 ? (double)s->ops / secs : 0,
		(unsigned long long)s->hits, (unsigned long long)s->misses,
		(unsigned long long)(s->errors + s->verify_errors),
		us(hist_percentile(h, 99)));
}

double cpu_seconds(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 +
	       (double)ru.ru_stime.tv_sec + ru.ru_stime.tv_usec / 1e6;
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

void write_json(const char *path, double secs, double cpu,
		       const struct stats *s, const struct hist *h, int interrupted)
{
	FILE *f = fopen(path, "w");

	if (!f) {
		fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno));
		return;
	}
	fputs("{\"config\":{\"server\":", f);
	json_str(f, cfg.server);
	fprintf(f, ",\"threads\":%d,\"conns\":%d,\"pipeline\":%d,\"rate\":%.1f,"
		"\"duration\":%.3f,\"ops\":%llu,\"keys\":%llu,\"key_prefix\":",
		cfg.threads, cfg.conns, cfg.pipeline, cfg.rate, cfg.duration,
		(unsigned long long)cfg.ops, (unsigned long long)cfg.keys);
	json_str(f, cfg.prefix);
	fprintf(f, ",\"dist\":\"%s\",\"zipf_s\":%.4f,\"get_ratio\":%.4f,\"gen\":",
		cfg.zipf ? "zipf" : "uniform", cfg.zipf ? cfg.zipf_s : 0.0,
		cfg.get_ratio);
	json_str(f, cfg.gen_str ? cfg.gen_str : "");
	fprintf(f, ",\"multiget\":%d,\"warmup\":%s,\"verify\":%s},",
		cfg.multiget, cfg.warmup ? "true" : "false",
		cfg.verify ? "true" : "false");
	fprintf(f, "\"interrupted\":%s,\"duration_s\":%.3f,\"ops\":%llu,"
		"\"ops_per_s\":%.1f,\"gets\":%llu,\"sets\":%llu,\"hits\":%llu,"
		"\"misses\":%llu,\"errors\":%llu,\"verify_errors\":%llu,"
		"\"conn_errors\":%llu,\"unfinished\":%llu,\"p50_us\":%.1f,\"p90_us\":%.1f,"
		"\"p99_us\":%.1f,\"p999_us\":%.1f,\"max_us\":%.1f,"
		"\"mean_us\":%.1f,\"cpu_s\":%.3f,\"cpu_ms_per_1000\":%.4f,"
		"\"histogram\":",
		interrupted ? "true" : "false", secs, (unsigned long long)s->ops,
		secs > 0 ? (double)s->ops / secs : 0,
		(unsigned long long)s->gets, (unsigned long long)s->sets,
		(unsigned long long)s->hits, (unsigned long long)s->misses,
		(unsigned long long)s->errors,
		(unsigned long long)s->verify_errors,
		(unsigned long long)s->conn_errors,
		(unsigned long long)s->unfinished,
		us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
		us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)),
		us(h->max), us((int64_t)hist_mean(h)), cpu,
		s->ops ? cpu * 1e6 / (double)s->ops : 0);
	hist_write_json(h, f);
	fputs("}\n", f);
	if (fclose(f))
		fprintf(stderr, "loadgen: %s: %s\n", path, strerror(errno));
}

void print_summary(FILE *f, double secs, double cpu, const struct stats *s,
			  const struct hist *h, int interrupted)
{
	uint64_t keys = s->hits + s->misses;

	fprintf(f, "server      %s  (%d threads x %d conns, pipeline %d, %s)\n",
	       cfg.server, cfg.threads, cfg.conns, cfg.pipeline,
	       cfg.rate > 0 ? "open loop" : "closed loop");
	if (cfg.rate > 0)
		fprintf(f, "rate        %.1f ops/s offered\n", cfg.rate);
	fprintf(f, "duration    %.3f s%s\n", secs, interrupted ? "  (interrupted)" : "");
	fprintf(f, "ops         %llu  (%.1f ops/s)  gets %llu  sets %llu\n",
	       (unsigned long long)s->ops, secs > 0 ? (double)s->ops / secs : 0,
	       (unsigned long long)s->gets, (unsigned long long)s->sets);
	fprintf(f, "hits        %llu  (%.1f%%)  misses %llu\n",
	       (unsigned long long)s->hits,
	       keys ? 100.0 * (double)s->hits / (double)keys : 0.0,
	       (unsigned long long)s->misses);
	fprintf(f, "errors      %llu  verify_errors %llu  conn_errors %llu\n",
	       (unsigned long long)s->errors,
	       (unsigned long long)s->verify_errors,
	       (unsigned long long)s->conn_errors);
	fprintf(f, "unfinished  %llu  (in flight or due at the end; counted in the latency)\n",
		(unsigned long long)s->unfinished);
	fprintf(f, "latency us  p50 %.1f  p90 %.1f  p99 %.1f  p99.9 %.1f  max %.1f\n",
	       us(hist_percentile(h, 50)), us(hist_percentile(h, 90)),
	       us(hist_percentile(h, 99)), us(hist_percentile(h, 99.9)),
	       us(h->max));
	fprintf(f, "cpu         %.3f s  (%.4f ms per 1000 requests)\n", cpu,
	       s->ops ? cpu * 1e6 / (double)s->ops : 0);
	fflush(f);
}
