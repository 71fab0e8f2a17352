/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/select.c - keep, drop and rewrite records by name and
 * label (Telegraf's namepass/tagexclude, collectd's chains)
 *
 * The glue between the pipeline and plugins/filter/select/rules.c: a
 * batch whose records are all kept unchanged is passed on as it is; one
 * with records dropped is borrowed without them (tally_batch_select());
 * with rewrites, each kept metric is borrowed and given its new name and
 * label set. Records dropped on purpose are counted as the event
 * "filtered_out". See doc/plugins/select.md.
 */
#include "config.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <tally/plugin.h>

#include "select/rules.h"

struct select {
	struct tally_regexlist keep_names;
	struct tally_regexlist drop_names;
	struct tally_strlist keep_if;
	struct tally_strlist drop_if;
	struct tally_strlist rename;
	struct tally_strlist drop_labels;
	struct tally_strlist keep_labels;
	struct tally_strlist rename_labels;
	struct tally_labels *add_labels;

	struct sel_rules *rules;
	bool rewrites;
	struct tally_keep keep; /* per record of the batch being decided */
};

static struct sel_rules *select_rules(struct tally_instance *inst,
				      struct select *s)
{
	struct sel_opts o = {
		.keep_names = &s->keep_names,
		.drop_names = &s->drop_names,
		.keep_if = &s->keep_if,
		.drop_if = &s->drop_if,
		.rename = &s->rename,
		.drop_labels = &s->drop_labels,
		.keep_labels = &s->keep_labels,
		.rename_labels = &s->rename_labels,
		.add_labels = s->add_labels,
	};
	char err[256] = "";
	struct sel_rules *r = sel_rules_new(&o, err, sizeof(err));

	if (!r)
		tally_log(inst, LOG_ERR, "%s",
			  errno == EINVAL ? err : strerror(errno));
	return r;
}

static int select_check(struct tally_instance *inst, void *state)
{
	struct sel_rules *r = select_rules(inst, state);

	sel_rules_free(r);
	return r ? 0 : -1;
}

static int select_init(struct tally_instance *inst, void *state)
{
	struct select *s = state;

	s->rules = select_rules(inst, s);
	if (!s->rules)
		return -1;
	s->rewrites = sel_rules_rewrites(s->rules);
	return 0;
}

/* The kept records of @in, rewritten, in a new batch; NULL/ENOMEM. */
static struct tally_batch *select_rewrite(struct select *s,
					  struct tally_batch *in)
{
	struct tally_batch *out = tally_batch_new();
	size_t n = tally_batch_count(in);

	if (!out)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		struct tally_record *r;
		struct tally_labels *ls;
		const char *name;

		if (!s->keep.flags[i])
			continue;
		r = tally_batch_append_from(out, in, i);
		if (!r)
			goto out_unref;
		if (r->kind != TALLY_REC_METRIC)
			continue;
		if (sel_rules_rewrite(s->rules, &r->metric, &name, &ls) < 0)
			goto out_unref;
		tally_labels_unref(r->metric.labels);
		r->metric.labels = ls;
		if (name != r->metric.name) {
			r->metric.name = tally_batch_strdup(out, name);
			if (!r->metric.name)
				goto out_unref;
		}
	}
	return out;
out_unref:
	tally_batch_unref(out);
	errno = ENOMEM;
	return NULL;
}

static struct tally_batch *select_process(struct tally_instance *inst,
					  void *state, struct tally_batch *in)
{
	struct select *s = state;
	const struct tally_record *recs = tally_batch_records(in);
	size_t n = tally_batch_count(in), dropped = 0;
	struct tally_batch *out;

	if (!tally_keep_reserve(&s->keep, n)) {
		tally_count_drop(inst, "nomem", n);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		s->keep.flags[i] = sel_rules_keep(s->rules, &recs[i]);
		dropped += !s->keep.flags[i];
	}
	if (dropped)
		tally_count_event(inst, "filtered_out", dropped);
	if (dropped == n) {
		errno = 0; /* dropped on purpose, counted */
		return NULL;
	}
	if (s->rewrites)
		out = select_rewrite(s, in);
	else if (!dropped)
		return tally_batch_ref(in);
	else
		out = tally_batch_select(in, s->keep.flags);
	if (!out)
		tally_count_drop(inst, "nomem", n - dropped);
	return out;
}

static void select_fini(struct tally_instance *inst, void *state)
{
	struct select *s = state;

	(void)inst;
	sel_rules_free(s->rules);
	tally_keep_free(&s->keep);
}

static const struct tally_option select_options[] = {
	TALLY_OPT_REGEXLIST("keep_names", struct select, keep_names, NULL,
			    "keep only records whose name (a span's region) "
			    "matches one of these extended regular "
			    "expressions (unanchored: ^...$ for a whole name)"),
	TALLY_OPT_REGEXLIST("drop_names", struct select, drop_names, NULL,
			    "drop records whose name matches one of these"),
	TALLY_OPT_LIST("keep_if", struct select, keep_if, NULL,
		       "\"KEY=REGEX\": keep only metrics with every such "
		       "label, its whole value matching"),
	TALLY_OPT_LIST("drop_if", struct select, drop_if, NULL,
		       "\"KEY=REGEX\": drop metrics with any such label"),
	TALLY_OPT_LIST("rename", struct select, rename, NULL,
		       "\"OLD=NEW\": metric names to change (whole names)"),
	TALLY_OPT_LIST("drop_labels", struct select, drop_labels, NULL,
		       "label keys removed from metrics"),
	TALLY_OPT_LIST("keep_labels", struct select, keep_labels, NULL,
		       "label keys kept on metrics (empty: all)"),
	TALLY_OPT_LIST("rename_labels", struct select, rename_labels, NULL,
		       "\"OLD=NEW\": label keys to change"),
	TALLY_OPT_LABELS("add_labels", struct select, add_labels,
			 "labels added to metrics that lack the key"),
	TALLY_OPT_END
};

static const struct tally_filter_ops select_ops = {
	.check = select_check,
	.init = select_init,
	.process = select_process,
	.fini = select_fini,
};

TALLY_PLUGIN_FILTER(select,
		    "keep or drop records by name and label, rename metrics "
		    "and labels, add static labels",
		    struct select, select_options, &select_ops);
