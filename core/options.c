/* SPDX-License-Identifier: MIT */
/*
 * core/options.c - option tables: defaults, type checks, storage, freeing
 *
 * The option table is the only place a plugin declares its configuration,
 * so everything about turning a libconfig setting into a field of the
 * plugin's state struct lives here, once.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <tally/config.h>
#include <tally/exposition.h>
#include <tally/labels.h>
#include <tally/utf8.h>

#include "core-internal.h"

#define FIELD(state, opt, type) ((type *)((char *)(state) + (opt)->offset))

const char *tally_options_type_name(enum tally_opt_type t)
{
	switch (t) {
	case TALLY_OPT_T_STRING:
		return "string";
	case TALLY_OPT_T_INT:
		return "integer";
	case TALLY_OPT_T_DOUBLE:
		return "number";
	case TALLY_OPT_T_BOOL:
		return "boolean";
	case TALLY_OPT_T_LIST:
		return "list of strings";
	case TALLY_OPT_T_ENUM:
		return "choice";
	case TALLY_OPT_T_REGEXLIST:
		return "list of regular expressions";
	case TALLY_OPT_T_LABELS:
		return "group of labels";
	default:
		return "?";
	}
}

const struct tally_option *tally_options_find(const struct tally_option *opts,
					      const char *name)
{
	for (; opts && opts->name; opts++) {
		if (!strcmp(opts->name, name))
			return opts;
	}
	return NULL;
}

unsigned tally_edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);
	unsigned row[64], prev, tmp;

	/* option names are short; anything longer is simply "far" */
	if (la >= 64 || lb >= 64)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = (unsigned)j;
	for (size_t i = 1; i <= la; i++) {
		prev = row[0];
		row[0] = (unsigned)i;
		for (size_t j = 1; j <= lb; j++) {
			unsigned best = prev + (a[i - 1] != b[j - 1]);

			if (row[j] + 1 < best)
				best = row[j] + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			tmp = row[j];
			row[j] = best;
			prev = tmp;
		}
	}
	return row[lb];
}

static void list_free(struct tally_strlist *l)
{
	for (size_t i = 0; i < l->n; i++)
		free(l->v[i]);
	free(l->v);
	l->v = NULL;
	l->n = 0;
}

/* Split a default like "eth0,ib0" into a list. */
static int list_from_csv(struct tally_strlist *l, const char *csv)
{
	struct tally_strlist tmp = { 0 };
	const char *p = csv;

	while (*p) {
		size_t len = strcspn(p, ",");
		char **v = realloc(tmp.v, (tmp.n + 1) * sizeof(*v));

		if (!v)
			goto out_nomem;
		tmp.v = v;
		tmp.v[tmp.n] = strndup(p, len);
		if (!tmp.v[tmp.n])
			goto out_nomem;
		tmp.n++;
		p += len;
		if (*p == ',')
			p++;
	}
	list_free(l);
	*l = tmp;
	return 0;
out_nomem:
	list_free(&tmp);
	errno = ENOMEM;
	return -1;
}

static void regexlist_free(struct tally_regexlist *rl)
{
	for (size_t i = 0; i < rl->n; i++) {
		regfree(&rl->re[i]);
		free(rl->src[i]);
	}
	free(rl->re);
	free(rl->src);
	memset(rl, 0, sizeof(*rl));
}

/*
 * Compile every string of @l (consumed: its strings move into the result)
 * into @out. On a bad expression, report it and return -1 with EINVAL.
 */
static int regexlist_compile(struct tally_regexlist *out,
			     struct tally_strlist *l, const char *file,
			     int line, const char *what, const char *key)
{
	struct tally_regexlist tmp = { 0 };

	tmp.re = calloc(l->n ? l->n : 1, sizeof(*tmp.re));
	if (!tmp.re) {
		list_free(l);
		errno = ENOMEM;
		return -1;
	}
	for (size_t i = 0; i < l->n; i++) {
		int rc = regcomp(&tmp.re[i], l->v[i], REG_EXTENDED | REG_NOSUB);

		if (rc) {
			char msg[256];

			regerror(rc, &tmp.re[i], msg, sizeof(msg));
			tally_log_conf(LOG_ERR, file, line,
				       "%s: option '%s': bad regular "
				       "expression \"%s\": %s",
				       what, key, l->v[i], msg);
			tmp.src = l->v;
			tmp.n = i;
			l->v = NULL;
			for (size_t j = i; j < l->n; j++)
				free(tmp.src[j]);
			l->n = 0;
			regexlist_free(&tmp);
			errno = EINVAL;
			return -1;
		}
	}
	tmp.src = l->v;
	tmp.n = l->n;
	l->v = NULL;
	l->n = 0;
	regexlist_free(out);
	*out = tmp;
	return 0;
}

bool tally_regexlist_match(const struct tally_regexlist *list, const char *s)
{
	for (size_t i = 0; list && i < list->n; i++) {
		if (regexec(&list->re[i], s, 0, NULL, 0) == 0)
			return true;
	}
	return false;
}

static int enum_index(const struct tally_option *o, const char *s)
{
	for (int i = 0; o->choices && o->choices[i]; i++) {
		if (!strcmp(o->choices[i], s))
			return i;
	}
	return -1;
}

static bool in_range(const struct tally_option *o, double v)
{
	return o->min > o->max || (v >= o->min && v <= o->max);
}

/* Store a value given as text (defaults). */
static int option_from_text(const struct tally_option *o, void *state,
			    const char *text)
{
	char *end, *s;
	int idx;

	switch (o->type) {
	case TALLY_OPT_T_STRING:
		s = strdup(text);
		if (!s)
			return -1;
		free(*FIELD(state, o, char *));
		*FIELD(state, o, char *) = s;
		return 0;
	case TALLY_OPT_T_INT:
		errno = 0;
		*FIELD(state, o, int64_t) = strtoll(text, &end, 0);
		break;
	case TALLY_OPT_T_DOUBLE:
		errno = 0;
		*FIELD(state, o, double) = strtod(text, &end);
		break;
	case TALLY_OPT_T_BOOL:
		*FIELD(state, o, bool) = !strcmp(text, "true");
		return 0;
	case TALLY_OPT_T_LIST:
		return list_from_csv(FIELD(state, o, struct tally_strlist),
				     text);
	case TALLY_OPT_T_REGEXLIST: {
		struct tally_strlist l = { 0 };

		if (list_from_csv(&l, text) < 0)
			return -1;
		return regexlist_compile(FIELD(state, o,
					       struct tally_regexlist),
					 &l, NULL, 0, "default", o->name);
	}
	case TALLY_OPT_T_ENUM:
		idx = enum_index(o, text);
		if (idx < 0)
			goto out_inval;
		*FIELD(state, o, int) = idx;
		return 0;
	default:
		goto out_inval;
	}
	if (errno || *end)
		goto out_inval;
	return 0;
out_inval:
	errno = EINVAL;
	return -1;
}

int tally_options_defaults(const struct tally_option *opts, void *state,
			   const char *what)
{
	for (const struct tally_option *o = opts; o && o->name; o++) {
		if (!o->def)
			continue;
		if (option_from_text(o, state, o->def) < 0) {
			/* a plugin bug, caught the first time it is used */
			tally_log_conf(LOG_ERR, NULL, 0,
				       "%s: bad default '%s' for option '%s'",
				       what, o->def, o->name);
			return -1;
		}
	}
	return 0;
}

static int set_list(const struct tally_option *o, struct tally_strlist *dst,
		    const config_setting_t *s, const char *file, int line,
		    const char *what)
{
	struct tally_strlist tmp = { 0 };
	int n;

	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		tmp.v = calloc(1, sizeof(char *));
		if (!tmp.v || !(tmp.v[0] = strdup(config_setting_get_string(s))))
			goto out_nomem;
		tmp.n = 1;
		goto out_store;
	}
	if (!config_setting_is_aggregate(s) ||
	    config_setting_type(s) == CONFIG_TYPE_GROUP)
		goto out_type;
	n = config_setting_length(s);
	tmp.v = calloc(n ? (size_t)n : 1, sizeof(char *));
	if (!tmp.v)
		goto out_nomem;
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, i);

		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			list_free(&tmp);
			goto out_type;
		}
		tmp.v[i] = strdup(config_setting_get_string(e));
		if (!tmp.v[i])
			goto out_nomem;
		tmp.n++;
	}
out_store:
	list_free(dst);
	*dst = tmp;
	return 0;
out_type:
	tally_log_conf(LOG_ERR, file, line,
		       "%s: option '%s' must be a string or a list of strings",
		       what, o->name);
	errno = EINVAL;
	return -1;
out_nomem:
	list_free(&tmp);
	errno = ENOMEM;
	return -1;
}

/*
 * labels = { key = "value"; ... }: every key a label name Prometheus
 * accepts as it is (outputs would otherwise sanitize two keys into one),
 * every value a string of valid UTF-8. Interned into *@dst.
 */
static int set_labels(const struct tally_option *o, struct tally_labels **dst,
		      const config_setting_t *s, const char *file, int line,
		      const char *what)
{
	struct tally_label *pairs;
	struct tally_labels *ls;
	int n = config_setting_length(s);

	pairs = calloc(n ? (size_t)n : 1, sizeof(*pairs));
	if (!pairs) {
		errno = ENOMEM;
		return -1;
	}
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_get_elem(s, i);
		int eline = (int)config_setting_source_line(e);
		const char *v;

		pairs[i].key = config_setting_name(e);
		if (!tally_expo_valid_label_name(pairs[i].key)) {
			tally_log_conf(LOG_ERR, file, eline,
				       "%s: %s: '%s' is not a label name "
				       "([a-zA-Z_][a-zA-Z0-9_]*, no leading "
				       "__)",
				       what, o->name, pairs[i].key);
			goto out_inval;
		}
		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			tally_log_conf(LOG_ERR, file, eline,
				       "%s: %s: the value of '%s' must be a "
				       "string",
				       what, o->name, pairs[i].key);
			goto out_inval;
		}
		v = config_setting_get_string(e);
		if (!tally_utf8_valid(v, strlen(v))) {
			tally_log_conf(LOG_ERR, file, eline,
				       "%s: %s: the value of '%s' is not valid "
				       "UTF-8",
				       what, o->name, pairs[i].key);
			goto out_inval;
		}
		pairs[i].value = v;
	}
	ls = tally_labels_new(pairs, (size_t)n);
	free(pairs);
	if (!ls)
		return -1;
	tally_labels_unref(*dst);
	*dst = ls;
	return 0;
out_inval:
	free(pairs);
	errno = EINVAL;
	return -1;
}

int tally_options_set(const struct tally_option *o, void *state,
		      const config_setting_t *s, const char *file, int line,
		      const char *what)
{
	int type = config_setting_type(s);
	long long iv;
	double dv;
	int idx;

	switch (o->type) {
	case TALLY_OPT_T_STRING:
		if (type != CONFIG_TYPE_STRING)
			break;
		return option_from_text(o, state, config_setting_get_string(s));
	case TALLY_OPT_T_INT:
		if (type != CONFIG_TYPE_INT && type != CONFIG_TYPE_INT64)
			break;
		iv = config_setting_get_int64(s);
		if (!in_range(o, (double)iv)) {
			tally_log_conf(LOG_ERR, file, line,
				       "%s: option '%s' = %lld is out of range "
				       "[%.15g, %.15g]",
				       what, o->name, iv, o->min, o->max);
			errno = ERANGE;
			return -1;
		}
		*FIELD(state, o, int64_t) = iv;
		return 0;
	case TALLY_OPT_T_DOUBLE:
		if (type == CONFIG_TYPE_INT || type == CONFIG_TYPE_INT64)
			dv = (double)config_setting_get_int64(s);
		else if (type == CONFIG_TYPE_FLOAT)
			dv = config_setting_get_float(s);
		else
			break;
		if (!isfinite(dv) || !in_range(o, dv)) {
			tally_log_conf(LOG_ERR, file, line,
				       "%s: option '%s' = %g is out of range "
				       "[%.15g, %.15g]",
				       what, o->name, dv, o->min, o->max);
			errno = ERANGE;
			return -1;
		}
		*FIELD(state, o, double) = dv;
		return 0;
	case TALLY_OPT_T_BOOL:
		if (type != CONFIG_TYPE_BOOL)
			break;
		*FIELD(state, o, bool) = config_setting_get_bool(s);
		return 0;
	case TALLY_OPT_T_LIST:
		return set_list(o, FIELD(state, o, struct tally_strlist), s,
				file, line, what);
	case TALLY_OPT_T_REGEXLIST: {
		struct tally_strlist l = { 0 };

		if (set_list(o, &l, s, file, line, what) < 0)
			return -1;
		return regexlist_compile(FIELD(state, o,
					       struct tally_regexlist),
					 &l, file, line, what, o->name);
	}
	case TALLY_OPT_T_ENUM:
		if (type != CONFIG_TYPE_STRING)
			break;
		idx = enum_index(o, config_setting_get_string(s));
		if (idx < 0) {
			char choices[256] = "";

			for (int i = 0; o->choices && o->choices[i]; i++) {
				if (i)
					strncat(choices, ", ",
						sizeof(choices) -
							strlen(choices) - 1);
				strncat(choices, o->choices[i],
					sizeof(choices) - strlen(choices) - 1);
			}
			tally_log_conf(LOG_ERR, file, line,
				       "%s: option '%s' = \"%s\" is not one of: "
				       "%s",
				       what, o->name,
				       config_setting_get_string(s), choices);
			errno = EINVAL;
			return -1;
		}
		*FIELD(state, o, int) = idx;
		return 0;
	case TALLY_OPT_T_LABELS:
		if (type != CONFIG_TYPE_GROUP)
			break;
		return set_labels(o, FIELD(state, o, struct tally_labels *), s,
				  file, line, what);
	default:
		break;
	}
	tally_log_conf(LOG_ERR, file, line, "%s: option '%s' must be of type %s", what,
		       o->name, tally_options_type_name(o->type));
	errno = EINVAL;
	return -1;
}

void tally_options_free(const struct tally_option *opts, void *state)
{
	if (!state)
		return;
	for (const struct tally_option *o = opts; o && o->name; o++) {
		if (o->type == TALLY_OPT_T_STRING) {
			free(*FIELD(state, o, char *));
			*FIELD(state, o, char *) = NULL;
		} else if (o->type == TALLY_OPT_T_LIST) {
			list_free(FIELD(state, o, struct tally_strlist));
		} else if (o->type == TALLY_OPT_T_REGEXLIST) {
			regexlist_free(FIELD(state, o, struct tally_regexlist));
		} else if (o->type == TALLY_OPT_T_LABELS) {
			tally_labels_unref(
				*FIELD(state, o, struct tally_labels *));
			*FIELD(state, o, struct tally_labels *) = NULL;
		}
	}
}

bool tally_strlist_contains(const struct tally_strlist *list, const char *s)
{
	for (size_t i = 0; list && i < list->n; i++) {
		if (!strcmp(list->v[i], s))
			return true;
	}
	return false;
}
