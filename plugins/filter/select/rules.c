/* SPDX-License-Identifier: MIT */
/*
 * plugins/filter/select/rules.c - the select filter's rules (rules.h)
 */
#include "config.h"

#include <errno.h>
#include <regex.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "rules.h"

/* "key=value" split: a key and a regex (matches) or a replacement */
struct sel_pair {
	char *key;
	char *value;
	regex_t re;
	bool has_re;
};

struct sel_list {
	struct sel_pair *v;
	size_t n;
};

struct sel_rules {
	const struct tally_regexlist *keep_names, *drop_names;
	struct sel_list keep_if, drop_if, rename, rename_labels;
	const struct tally_strlist *drop_labels, *keep_labels;
	struct tally_labels *add_labels;
};

static void list_free(struct sel_list *l)
{
	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].has_re)
			regfree(&l->v[i].re);
		free(l->v[i].key);
	}
	free(l->v);
}

/* Parse "key=value" entries; with @regex, compile value anchored. */
static int list_parse(struct sel_list *l, const struct tally_strlist *src,
		      const char *what, bool regex, char *errbuf,
		      size_t errsize)
{
	if (!src || !src->n)
		return 0;
	l->v = calloc(src->n, sizeof(*l->v));
	if (!l->v) {
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < src->n; i++) {
		struct sel_pair *p = &l->v[l->n];
		char *eq;

		p->key = strdup(src->v[i]);
		if (!p->key) {
			errno = ENOMEM;
			return -1;
		}
		l->n++;
		eq = strchr(p->key, '=');
		if (!eq || eq == p->key || (!regex && !eq[1])) {
			snprintf(errbuf, errsize,
				 "%s: \"%s\": write KEY=%s", what, src->v[i],
				 regex ? "REGEX" : "NEW");
			errno = EINVAL;
			return -1;
		}
		*eq = '\0';
		p->value = eq + 1;
		if (regex) {
			size_t len = strlen(p->value) + 5;
			char *anch = malloc(len);
			char msg[128];
			int rc;

			if (!anch) {
				errno = ENOMEM;
				return -1;
			}
			snprintf(anch, len, "^(%s)$", p->value);
			rc = tally_regcomp(&p->re, anch, REG_NOSUB, msg,
					   sizeof(msg));
			free(anch);
			if (rc < 0) {
				snprintf(errbuf, errsize,
					 "%s: \"%s\": not a valid regular "
					 "expression: %s",
					 what, src->v[i],
					 msg[0] ? msg : strerror(errno));
				errno = EINVAL;
				return -1;
			}
			p->has_re = true;
		}
	}
	return 0;
}

struct sel_rules *sel_rules_new(const struct sel_opts *o, char *errbuf,
				size_t errsize)
{
	struct sel_rules *r = calloc(1, sizeof(*r));

	if (!r) {
		errno = ENOMEM;
		return NULL;
	}
	r->keep_names = o->keep_names;
	r->drop_names = o->drop_names;
	r->drop_labels = o->drop_labels;
	r->keep_labels = o->keep_labels;
	if (list_parse(&r->keep_if, o->keep_if, "keep_if", true, errbuf,
		       errsize) < 0 ||
	    list_parse(&r->drop_if, o->drop_if, "drop_if", true, errbuf,
		       errsize) < 0 ||
	    list_parse(&r->rename, o->rename, "rename", false, errbuf,
		       errsize) < 0 ||
	    list_parse(&r->rename_labels, o->rename_labels, "rename_labels",
		       false, errbuf, errsize) < 0) {
		int e = errno;

		sel_rules_free(r);
		errno = e;
		return NULL;
	}
	r->add_labels = o->add_labels ? tally_labels_ref(o->add_labels) : NULL;
	return r;
}

void sel_rules_free(struct sel_rules *r)
{
	if (!r)
		return;
	list_free(&r->keep_if);
	list_free(&r->drop_if);
	list_free(&r->rename);
	list_free(&r->rename_labels);
	tally_labels_unref(r->add_labels);
	free(r);
}

bool sel_rules_rewrites(const struct sel_rules *r)
{
	return r->rename.n || r->rename_labels.n ||
	       (r->drop_labels && r->drop_labels->n) ||
	       (r->keep_labels && r->keep_labels->n) ||
	       (r->add_labels && tally_labels_count(r->add_labels));
}

static bool re_any(const struct tally_regexlist *l, const char *s)
{
	for (size_t i = 0; l && i < l->n; i++) {
		if (regexec(&l->re[i], s, 0, NULL, 0) == 0)
			return true;
	}
	return false;
}

static bool pair_matches(const struct sel_pair *p,
			 const struct tally_labels *ls)
{
	const char *v = tally_labels_get(ls, p->key);

	return v && regexec(&p->re, v, 0, NULL, 0) == 0;
}

bool sel_rules_keep(const struct sel_rules *r, const struct tally_record *rec)
{
	const char *name = rec->kind == TALLY_REC_METRIC ? rec->metric.name
			   : rec->kind == TALLY_REC_SPAN ? rec->span.name
							 : NULL;

	if (!name)
		return true;
	if (r->keep_names && r->keep_names->n && !re_any(r->keep_names, name))
		return false;
	if (re_any(r->drop_names, name))
		return false;
	if (rec->kind != TALLY_REC_METRIC)
		return true;
	for (size_t i = 0; i < r->keep_if.n; i++) {
		if (!pair_matches(&r->keep_if.v[i], rec->metric.labels))
			return false;
	}
	for (size_t i = 0; i < r->drop_if.n; i++) {
		if (pair_matches(&r->drop_if.v[i], rec->metric.labels))
			return false;
	}
	return true;
}

static bool listed(const struct tally_strlist *l, const char *key)
{
	for (size_t i = 0; l && i < l->n; i++) {
		if (!strcmp(l->v[i], key))
			return true;
	}
	return false;
}

int sel_rules_rewrite(const struct sel_rules *r, const struct tally_metric *m,
		      const char **name, struct tally_labels **labels)
{
	size_t n = tally_labels_count(m->labels), k = 0;
	const struct tally_label *all = tally_labels_pairs(m->labels);
	size_t na = r->add_labels ? tally_labels_count(r->add_labels) : 0;
	struct tally_label *out;
	struct tally_labels *ls;

	*name = m->name;
	for (size_t i = 0; i < r->rename.n; i++) {
		if (!strcmp(r->rename.v[i].key, m->name)) {
			*name = r->rename.v[i].value;
			break;
		}
	}
	out = malloc((n + na + 1) * sizeof(*out));
	if (!out) {
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < n; i++) {
		struct tally_label l = all[i];
		bool dup = false;

		if (listed(r->drop_labels, l.key) ||
		    (r->keep_labels && r->keep_labels->n &&
		     !listed(r->keep_labels, l.key)))
			continue;
		for (size_t j = 0; j < r->rename_labels.n; j++) {
			if (!strcmp(r->rename_labels.v[j].key, l.key)) {
				l.key = r->rename_labels.v[j].value;
				break;
			}
		}
		/* a rename onto a key already there: the first one stays */
		for (size_t j = 0; j < k; j++)
			dup = dup || !strcmp(out[j].key, l.key);
		if (!dup)
			out[k++] = l;
	}
	for (size_t i = 0; i < na; i++) {
		const struct tally_label *a = tally_labels_at(r->add_labels, i);
		bool have = false;

		for (size_t j = 0; j < k; j++)
			have = have || !strcmp(out[j].key, a->key);
		if (!have)
			out[k++] = *a;
	}
	ls = tally_labels_new(out, k);
	free(out);
	if (!ls)
		return -1;
	*labels = ls;
	return 0;
}
