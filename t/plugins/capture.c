/* SPDX-License-Identifier: MIT */
/*
 * t/plugins/capture.c - test-only output: every record it receives, one
 * line each, in a text file that tests compare with exact expected text
 *
 * Lines (labels sorted by key, label values escaped as in the Prometheus
 * text format, "{}" omitted for an empty set; numbers with %.17g, except
 * NaN, +Inf and -Inf, spelled as Prometheus does):
 *	counter|gauge|info NAME{k="v",...} VALUE
 *	histogram NAME{...} count=N sum=V buckets=LE:C,...,+Inf:C
 *	summary NAME{...} count=N sum=V quantiles=Q:V,...
 *	delta counter|gauge NAME{...} VALUE rate=R
 *	observation histogram|summary NAME{...} VALUE rate=R
 *	set gauge NAME{...} member=M
 *	interval TYPE NAME{...} VALUE seconds=S count=C sum=S min=V max=V
 *	     median=V[ quantiles=Q:V,...][ buckets=LE:C,...][ flags=F]
 *	     (F: '|'-joined set, seeded)
 *	span begin|end trace=T name=N id=ID parent=P depth=D host=H pid=P
 *	     tid=T rank=R flags=F
 * (a span is one line; F is 0 or a '|'-joined list of abandoned,
 * orphan_end, evicted, fragment, resumed, last, lost_end). Options add to each
 * line:
 *	source = true:     "SOURCE: " in front (the batch's input instance)
 *	attrs = true:      " attrs={k="v",...}" after a span's flags, then
 *	                   " values=k=V,..." if it has typed values (strings
 *	                   quoted, bools true/false, doubles %.17g)
 *	timestamps = true: " ts=NS" at the end, then " begin=NS" on span ends
 * The file is truncated at init and flushed after every batch, so a test
 * can read it while tallyd runs. stall = true makes every write fail with
 * EAGAIN, to test that a stuck output delays nothing else. The output
 * takes every sample form (deltas, observations, set members, interval
 * records), and acts
 * as a push output for static labels: with static_labels = true, metric
 * labels are printed merged with tally_output_labels() (global.labels,
 * the output's labels, host = the host name).
 * The core's events: reopen (SIGHUP) opens the path again, appending; end
 * writes "end command N" or "end request N" (N: records written so far)
 * to end_file when set, a path resolved by tally_output_path() (relative:
 * in the output directory). With events = true, the file gets a line
 * "reopen" after a reopen, and the end line too.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/exposition.h>
#include <tally/plugin.h>

struct capture {
	char *path;		/* output file */
	bool stall;		/* refuse every batch with EAGAIN */
	bool timestamps;	/* append ts= (and begin=) */
	bool source;		/* prefix the batch's source instance */
	bool attrs;		/* print span attributes */
	char *end_file;		/* end op: write its line here */
	bool events;		/* write reopen and end lines to the file */
	bool static_labels;	/* merge tally_output_labels() in */
	struct tally_instance *inst;
	FILE *f;
	uint64_t records;	/* written so far */
	char *esc;		/* escape buffer, grown as needed */
	size_t esc_size;
};

static const char *const capture_metric_types[] = {
	[TALLY_COUNTER] = "counter",
	[TALLY_GAUGE] = "gauge",
	[TALLY_HISTOGRAM] = "histogram",
	[TALLY_SUMMARY] = "summary",
	[TALLY_INFO] = "info",
};

static int capture_init(struct tally_instance *inst, void *state)
{
	struct capture *c = state;

	c->inst = inst;
	c->f = fopen(c->path, "w");
	if (!c->f) {
		tally_log(inst, LOG_ERR, "open %s: %s", c->path,
			  strerror(errno));
		return -1;
	}
	return 0;
}

/* Print a number as the file format says: %.17g, Prometheus' NaN/Inf. */
static void capture_num(FILE *f, double v)
{
	if (isnan(v))
		fputs("NaN", f);
	else if (isinf(v))
		fputs(v > 0 ? "+Inf" : "-Inf", f);
	else
		fprintf(f, "%.17g", v);
}

/* Print {k="v",...}, nothing for an empty set; -1/ENOMEM on failure. */
static int capture_labels(struct capture *c, const struct tally_labels *ls)
{
	size_t n = tally_labels_count(ls);

	for (size_t i = 0; i < n; i++) {
		const struct tally_label *l = tally_labels_at(ls, i);
		size_t len;

		len = tally_expo_escape_label_value(c->esc, c->esc_size,
						    l->value);
		if (len >= c->esc_size) {
			char *p = realloc(c->esc, len + 1);

			if (!p) {
				errno = ENOMEM;
				return -1;
			}
			c->esc = p;
			c->esc_size = len + 1;
			tally_expo_escape_label_value(c->esc, c->esc_size,
						      l->value);
		}
		fprintf(c->f, "%s%s=\"%s\"", i ? "," : "{", l->key, c->esc);
	}
	if (n)
		fputc('}', c->f);
	return 0;
}

/* The rest of an interval record's line (see the top of the file). */
static int capture_interval(FILE *f, const struct tally_metric *m)
{
	const struct tally_interval *iv = m->interval;
	const struct {
		const char *key;
		double v;
	} figs[] = {
		{ " ", m->value },	  { " seconds=", iv->seconds },
		{ " count=", iv->count }, { " sum=", iv->sum },
		{ " min=", iv->min },	  { " max=", iv->max },
		{ " median=", iv->median },
	};

	for (size_t i = 0; i < sizeof(figs) / sizeof(figs[0]); i++) {
		fputs(figs[i].key, f);
		capture_num(f, figs[i].v);
	}
	for (uint32_t i = 0; i < iv->nquantiles; i++) {
		fputs(i ? "," : " quantiles=", f);
		capture_num(f, iv->quantiles[i].q);
		fputc(':', f);
		capture_num(f, iv->quantiles[i].value);
	}
	for (uint32_t i = 0; i < iv->nbuckets; i++) {
		fputs(i ? "," : " buckets=", f);
		capture_num(f, iv->buckets[i].le);
		fprintf(f, ":%" PRIu64, iv->buckets[i].count);
	}
	if (iv->flags)
		fprintf(f, " flags=%s%s%s",
			iv->flags & TALLY_INTERVAL_SET ? "set" : "",
			(iv->flags & TALLY_INTERVAL_SET) &&
					(iv->flags & TALLY_INTERVAL_SEEDED)
				? "|"
				: "",
			iv->flags & TALLY_INTERVAL_SEEDED ? "seeded" : "");
	return 0;
}

static int capture_metric(struct capture *c, const struct tally_metric *m)
{
	const char *type = m->type >= TALLY_COUNTER && m->type <= TALLY_INFO
				   ? capture_metric_types[m->type]
				   : "unknown";

	static const char *const forms[] = {
		[TALLY_FORM_DELTA] = "delta ",
		[TALLY_FORM_OBSERVATION] = "observation ",
		[TALLY_FORM_SET_MEMBER] = "set ",
		[TALLY_FORM_INTERVAL] = "interval ",
	};

	fprintf(c->f, "%s%s %s",
		m->form > 0 && m->form <= TALLY_FORM_INTERVAL ? forms[m->form]
							      : "",
		type, m->name);
	if (c->static_labels) {
		struct tally_labels *ls = tally_labels_merge(
			m->labels, tally_output_labels(c->inst));
		int rc = ls ? capture_labels(c, ls) : -1;

		tally_labels_unref(ls);
		if (rc < 0)
			return -1;
	} else if (capture_labels(c, m->labels) < 0) {
		return -1;
	}
	if (m->form == TALLY_FORM_SET_MEMBER) {
		fprintf(c->f, " member=%s", m->member);
		return 0;
	}
	if (m->form == TALLY_FORM_INTERVAL)
		return capture_interval(c->f, m);
	if (m->form != TALLY_FORM_CUMULATIVE) {
		fputc(' ', c->f);
		capture_num(c->f, m->value);
		fputs(" rate=", c->f);
		capture_num(c->f, m->sample_rate);
		return 0;
	}
	switch (m->type) {
	case TALLY_HISTOGRAM:
	case TALLY_SUMMARY:
		fprintf(c->f, " count=%" PRIu64 " sum=", m->count);
		capture_num(c->f, m->sum);
		fputs(m->type == TALLY_HISTOGRAM ? " buckets=" : " quantiles=",
		      c->f);
		for (size_t i = 0; i < m->n; i++) {
			if (i)
				fputc(',', c->f);
			if (m->type == TALLY_HISTOGRAM) {
				capture_num(c->f, m->buckets[i].le);
				fprintf(c->f, ":%" PRIu64,
					m->buckets[i].count);
			} else {
				capture_num(c->f, m->quantiles[i].q);
				fputc(':', c->f);
				capture_num(c->f, m->quantiles[i].value);
			}
		}
		break;
	default:
		fputc(' ', c->f);
		capture_num(c->f, m->value);
	}
	return 0;
}

static int capture_span(struct capture *c, const struct tally_span *s)
{
	const char *sep = "";

	fprintf(c->f,
		"span %s trace=%s name=%s id=%" PRIu64 " parent=%" PRIu64
		" depth=%" PRIu32 " host=%s pid=%" PRIu32 " tid=%" PRIu32
		" rank=%" PRId32 " flags=",
		s->phase == TALLY_SPAN_BEGIN ? "begin" : "end", s->trace,
		s->name, s->span_id, s->parent_id, s->depth,
		s->src.host ? s->src.host : "", s->src.pid, s->src.tid,
		s->src.rank);
	if (!s->flags)
		fputc('0', c->f);
	for (uint32_t bit = 1; bit; bit <<= 1) {
		const char *name = tally_span_flag_name(bit);

		if ((s->flags & bit) && name) {
			fprintf(c->f, "%s%s", sep, name);
			sep = "|";
		}
	}
	if (c->attrs) {
		fputs(" attrs=", c->f);
		if (tally_labels_count(s->attrs) == 0)
			fputs("{}", c->f);
		else if (capture_labels(c, s->attrs) < 0)
			return -1;
		for (uint32_t i = 0; i < s->nvalues; i++) {
			const struct tally_attr *v = &s->values[i];

			fprintf(c->f, "%s%s=", i ? "," : " values=", v->key);
			if (v->type == TALLY_ATTR_T_INT)
				fprintf(c->f, "%" PRId64, v->i);
			else if (v->type == TALLY_ATTR_T_DOUBLE)
				capture_num(c->f, v->d);
			else if (v->type == TALLY_ATTR_T_BOOL)
				fputs(v->b ? "true" : "false", c->f);
			else
				fprintf(c->f, "\"%s\"", v->s);
		}
	}
	return 0;
}

static int capture_write(struct tally_instance *inst, void *state,
			 struct tally_batch *b)
{
	struct capture *c = state;
	size_t n = tally_batch_count(b);

	if (c->stall) {
		errno = EAGAIN;
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		const struct tally_record *r = tally_batch_at(b, i);
		int ret;

		if (c->source)
			fprintf(c->f, "%s: ", tally_batch_source(b));
		if (r->kind == TALLY_REC_METRIC)
			ret = capture_metric(c, &r->metric);
		else if (r->kind == TALLY_REC_SPAN)
			ret = capture_span(c, &r->span);
		else
			ret = fprintf(c->f, "unknown kind=%d", (int)r->kind);
		if (ret < 0)
			return -1;
		if (c->timestamps) {
			fprintf(c->f, " ts=%" PRId64, r->ts_ns);
			if (r->kind == TALLY_REC_SPAN &&
			    r->span.phase == TALLY_SPAN_END)
				fprintf(c->f, " begin=%" PRId64,
					r->span.begin_ns);
		}
		fputc('\n', c->f);
		c->records++;
	}
	/* One flush per batch: a test reading the file sees whole batches. */
	if (fflush(c->f) == EOF) {
		tally_log(inst, LOG_ERR, "write %s: %s", c->path,
			  strerror(errno));
		return -1;
	}
	return 0;
}

static int capture_flush(struct tally_instance *inst, void *state)
{
	struct capture *c = state;

	return fflush(c->f) == EOF ? -1 : 0;
}

static int capture_reopen(struct tally_instance *inst, void *state)
{
	struct capture *c = state;
	FILE *f = fopen(c->path, "a");

	if (!f)
		return -1;
	fclose(c->f);
	c->f = f;
	if (c->events)
		fputs("reopen\n", c->f);
	return fflush(c->f) == EOF ? -1 : 0;
}

static int capture_end(struct tally_instance *inst, void *state,
		       enum tally_end why)
{
	struct capture *c = state;
	const char *what = why == TALLY_END_COMMAND ? "command" : "request";
	char *path;
	FILE *f;
	int ret;

	if (c->events) {
		fprintf(c->f, "end %s %" PRIu64 "\n", what, c->records);
		if (fflush(c->f) == EOF)
			return -1;
	}
	if (!c->end_file)
		return 0;
	path = tally_output_path(inst, c->end_file);
	if (!path)
		return -1;
	f = fopen(path, "w");
	free(path);
	if (!f)
		return -1;
	fprintf(f, "end %s %" PRIu64 "\n", what, c->records);
	ret = fclose(f) == EOF ? -1 : 0;
	return ret;
}

static void capture_fini(struct tally_instance *inst, void *state)
{
	struct capture *c = state;

	if (c->f)
		fclose(c->f);
	free(c->esc);
}

static const struct tally_option capture_options[] = {
	TALLY_OPT_STRING_REQ("path", struct capture, path,
			     "file to write (truncated at start)"),
	TALLY_OPT_BOOL("stall", struct capture, stall, "false",
		       "refuse every batch with EAGAIN (a stuck output)"),
	TALLY_OPT_BOOL("timestamps", struct capture, timestamps, "false",
		       "append ts=NS to each line, and begin=NS to span ends"),
	TALLY_OPT_BOOL("source", struct capture, source, "false",
		       "prefix each line with the batch's input instance"),
	TALLY_OPT_BOOL("attrs", struct capture, attrs, "false",
		       "append attrs={...} to span lines"),
	TALLY_OPT_STRING("end_file", struct capture, end_file, NULL,
			 "end op: write \"end command|request N\" here "
			 "(relative: in the output directory)"),
	TALLY_OPT_BOOL("events", struct capture, events, "false",
		       "write a line \"reopen\" after a reopen, and the end "
		       "op's line, to the file"),
	TALLY_OPT_BOOL("static_labels", struct capture, static_labels, "false",
		       "print metric labels with the output's static labels"),
	TALLY_OPT_END
};

static const struct tally_output_ops capture_ops = {
	.init = capture_init,
	.write = capture_write,
	.flush = capture_flush,
	.fini = capture_fini,
	.reopen = capture_reopen,
	.end = capture_end,
	.accepts = TALLY_FORMS_STATSD | TALLY_FORMS_INTERVAL,
	.host_label = "host",
};

TALLY_PLUGIN_OUTPUT(capture, "test only: write every record received as "
			     "one line of text",
		    struct capture, capture_options, &capture_ops);
