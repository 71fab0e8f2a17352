/* SPDX-License-Identifier: MIT */
/*
 * contrib/bench/prom-render.c - time the prometheus output's scrape render
 *
 *   prom-render [-n SERIES] [-f FAMILIES] [-r RUNS] [-o] [-z]
 *
 * Fills the prometheus output's series store (the plugin's own store.c)
 * with SERIES gauges (default 100000) spread over FAMILIES families (100),
 * each with three labels and a non-integer value, then renders the
 * exposition RUNS times (21) and prints the median and worst render time.
 * -o renders OpenMetrics instead of text 0.0.4, -z also gzips each render.
 *
 * Reference measured in the same run on the same series: a plain renderer
 * that formats every line with snprintf("%s{%s} %.17g\n") into an
 * evbuffer, i.e. what a scrape costs when nothing is cached. The design
 * target is 100k series in <= 30 ms (DESIGN.md §9).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>

#include <tally/http.h>
#include <tally/labels.h>
#include <tally/record.h>

#include "../../plugins/output/prometheus/http.h"
#include "../../plugins/output/prometheus/store.h"

static int64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (int64_t)ts.tv_sec * 1000000000LL + ts.tv_nsec;
}

static int cmp_i64(const void *a, const void *b)
{
	int64_t x = *(const int64_t *)a, y = *(const int64_t *)b;

	return (x > y) - (x < y);
}

struct ref_series {
	char name[48];
	char labels[128];
	double value;
};

int main(int argc, char **argv)
{
	long n = 100000, nfam = 100, runs = 21;
	bool om = false, gz = false;
	struct prom_store_opts o = {
		.expire_ns = 3600LL * 1000000000LL,
		.expire_factor = 3,
		.grace_ns = 15LL * 1000000000LL,
		.span_metrics = PROM_SPANS_TALLY,
	};
	struct prom_store *s;
	struct ref_series *ref;
	int64_t *t, *tr, *tz = NULL, t0;
	size_t bytes = 0, zbytes = 0;
	int c;

	while ((c = getopt(argc, argv, "n:f:r:oz")) != -1) {
		switch (c) {
		case 'n':
			n = atol(optarg);
			break;
		case 'f':
			nfam = atol(optarg);
			break;
		case 'r':
			runs = atol(optarg);
			break;
		case 'o':
			om = true;
			break;
		case 'z':
			gz = true;
			break;
		default:
			fprintf(stderr,
				"usage: %s [-n SERIES] [-f FAMILIES] "
				"[-r RUNS] [-o] [-z]\n",
				argv[0]);
			return 2;
		}
	}
	if (n < 1 || nfam < 1 || nfam > n || runs < 1) {
		fprintf(stderr, "prom-render: bad arguments\n");
		return 2;
	}
	s = prom_store_new(&o, NULL);
	ref = calloc((size_t)n, sizeof(*ref));
	t = calloc((size_t)runs, sizeof(*t));
	tr = calloc((size_t)runs, sizeof(*tr));
	if (gz)
		tz = calloc((size_t)runs, sizeof(*tz));
	if (!s || !ref || !t || !tr || (gz && !tz)) {
		perror("prom-render");
		return 1;
	}

	/*
	 * Fill: one batch per family, as an input's tick would send. Batches
	 * are built first so that only prom_store_apply() is timed: once for
	 * new series, once more with new values for the same series (the
	 * steady state of a periodic input).
	 */
	struct tally_batch **bs = calloc((size_t)nfam, sizeof(*bs));

	srand(1);
	for (long f = 0, i = 0; f < nfam; f++) {
		long per = n / nfam + (f < n % nfam);
		char name[48], node[24], dev[24], mode[24];

		bs[f] = tally_batch_new();
		snprintf(name, sizeof(name), "bench_metric_%03ld", f);
		for (long k = 0; k < per; k++, i++) {
			double v = rand() / 1000.0 + 0.001;
			struct tally_labels *ls;

			snprintf(node, sizeof(node), "n%04ld", k / 100);
			snprintf(dev, sizeof(dev), "dev%ld", k % 100 / 10);
			snprintf(mode, sizeof(mode), "m%ld", k % 10);
			ls = tally_labels_newv("device", dev, "mode", mode,
					       "node", node, NULL);
			tally_batch_add_metric(bs[f], TALLY_GAUGE, name,
					       "a benchmark gauge", ls, v, 0);
			tally_labels_unref(ls);
			snprintf(ref[i].name, sizeof(ref[i].name), "%s", name);
			snprintf(ref[i].labels, sizeof(ref[i].labels),
				 "device=\"%s\",mode=\"%s\",node=\"%s\"", dev,
				 mode, node);
			ref[i].value = v;
		}
	}
	t0 = now_ns();
	for (long f = 0; f < nfam; f++)
		prom_store_apply(s, bs[f], 0);
	printf("apply, new series: %ld series in %ld families: %.1f ms "
	       "(%.0f ns/series)\n",
	       n, nfam, (now_ns() - t0) / 1e6, (double)(now_ns() - t0) / n);
	for (long f = 0; f < nfam; f++) {
		struct tally_batch *b = tally_batch_new();

		for (size_t j = 0; j < tally_batch_count(bs[f]); j++) {
			const struct tally_metric *m =
				&tally_batch_at(bs[f], j)->metric;

			tally_batch_add_metric(b, TALLY_GAUGE, m->name, m->help,
					       m->labels, m->value * 1.5, 0);
		}
		tally_batch_unref(bs[f]);
		bs[f] = b;
	}
	t0 = now_ns();
	for (long f = 0; f < nfam; f++)
		prom_store_apply(s, bs[f], 0);
	printf("apply, updates: %.1f ms (%.0f ns/series)\n",
	       (now_ns() - t0) / 1e6, (double)(now_ns() - t0) / n);
	for (long f = 0; f < nfam; f++)
		tally_batch_unref(bs[f]);
	free(bs);
	for (long i = 0; i < n; i++)
		ref[i].value *= 1.5;

	/* A first render sorts the new series once; not counted. */
	{
		struct evbuffer *out = evbuffer_new();

		prom_store_render(s, out, PROM_FMT_TEXT, 1, 0);
		evbuffer_free(out);
	}
	for (long r = 0; r < runs; r++) {
		struct evbuffer *out = evbuffer_new();

		t0 = now_ns();
		prom_store_render(s, out,
				  om ? PROM_FMT_OPENMETRICS : PROM_FMT_TEXT, 1,
				  0);
		t[r] = now_ns() - t0;
		bytes = evbuffer_get_length(out);
		if (gz) {
			struct evbuffer *z = evbuffer_new();

			t0 = now_ns();
			tally_http_gzip(out, z, 1);
			tz[r] = now_ns() - t0;
			zbytes = evbuffer_get_length(z);
			evbuffer_free(z);
		}
		evbuffer_free(out);

		/* reference: format every line at scrape time */
		out = evbuffer_new();
		t0 = now_ns();
		for (long i = 0; i < n; i++) {
			if (i == 0 || strcmp(ref[i].name, ref[i - 1].name))
				evbuffer_add_printf(
					out,
					"# HELP %s a benchmark gauge\n"
					"# TYPE %s gauge\n",
					ref[i].name, ref[i].name);
			evbuffer_add_printf(out, "%s{%s} %.17g\n", ref[i].name,
					    ref[i].labels, ref[i].value);
		}
		tr[r] = now_ns() - t0;
		evbuffer_free(out);
	}
	qsort(t, (size_t)runs, sizeof(*t), cmp_i64);
	qsort(tr, (size_t)runs, sizeof(*tr), cmp_i64);
	printf("render (%s): %zu bytes, median %.2f ms, max %.2f ms "
	       "(%.0f ns/series), %ld runs\n",
	       om ? "OpenMetrics" : "text 0.0.4", bytes, t[runs / 2] / 1e6,
	       t[runs - 1] / 1e6, (double)t[runs / 2] / n, runs);
	printf("reference (snprintf per line, unsorted): median %.2f ms\n",
	       tr[runs / 2] / 1e6);
	printf("ratio render/reference: %.3f; target <= 30 ms for 100k "
	       "series: %s\n",
	       (double)t[runs / 2] / (double)tr[runs / 2],
	       n == 100000 ? (t[runs / 2] <= 30000000 ? "met" : "MISSED")
			   : "n/a (not 100k)");
	if (gz) {
		qsort(tz, (size_t)runs, sizeof(*tz), cmp_i64);
		printf("gzip: %zu -> %zu bytes, median %.2f ms\n", bytes,
		       zbytes, tz[runs / 2] / 1e6);
	}
	prom_store_free(s);
	free(ref);
	free(t);
	free(tr);
	free(tz);
	return 0;
}
