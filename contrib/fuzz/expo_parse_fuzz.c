/* SPDX-License-Identifier: MIT */
/*
 * contrib/fuzz/expo_parse_fuzz.c - libFuzzer target for the text exposition
 * parser (core/expo-parse.c, tally_expo_parse())
 *
 * Each input is one page. A refused page must append nothing and name a
 * line within the page; a page taken must give records whose names are
 * valid metric names, whose label names are valid, whose histograms have
 * sorted buckets with non-decreasing counts and whose summaries have
 * sorted quantiles in [0, 1]. Build: make fuzz. Run:
 *	contrib/fuzz/expo_parse_fuzz -max_total_time=20 CORPUS_DIR
 */
#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tally/exposition.h>
#include <tally/labels.h>
#include <tally/record.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_record(const struct tally_record *r)
{
	const struct tally_metric *m = &r->metric;

	if (r->kind != TALLY_REC_METRIC || !tally_expo_valid_metric_name(m->name))
		abort();
	for (size_t i = 0; i < tally_labels_count(m->labels); i++) {
		const char *k = tally_labels_at(m->labels, i)->key;

		/* the parser keeps "__x" names, which the renderer renames */
		if (!tally_expo_valid_label_name(k) && strncmp(k, "__", 2))
			abort();
	}
	for (size_t i = 0; m->type == TALLY_HISTOGRAM && i < m->n; i++)
		if (isnan(m->buckets[i].le) ||
		    (i && (m->buckets[i].le <= m->buckets[i - 1].le ||
			   m->buckets[i].count < m->buckets[i - 1].count)) ||
		    m->buckets[i].count > m->count)
			abort();
	for (size_t i = 0; m->type == TALLY_SUMMARY && i < m->n; i++)
		if (!(m->quantiles[i].q >= 0 && m->quantiles[i].q <= 1) ||
		    (i && m->quantiles[i].q <= m->quantiles[i - 1].q))
			abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct tally_batch *b = tally_batch_new();
	struct tally_expo_error err;
	unsigned lines = 1;
	int n;

	if (!b)
		return 0;
	for (size_t i = 0; i < size; i++)
		lines += data[i] == '\n';
	n = tally_expo_parse(b, (const char *)data, size, size & 1 ? 0 :
			     TALLY_EXPO_PARSE_NO_TIMESTAMPS, &err);
	if (n < 0) {
		if (errno == EINVAL &&
		    (tally_batch_count(b) || !err.line || err.line > lines ||
		     !memchr(err.msg, '\0', sizeof(err.msg))))
			abort();
	} else {
		if ((size_t)n != tally_batch_count(b))
			abort();
		for (size_t i = 0; i < tally_batch_count(b); i++)
			check_record(tally_batch_at(b, i));
	}
	tally_batch_unref(b);
	return 0;
}
