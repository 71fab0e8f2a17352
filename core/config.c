/* SPDX-License-Identifier: MIT */
/*
 * core/config.c - read the configuration files and validate all of it
 *
 * Validation is complete before anything starts: every problem is reported
 * with file:line, not just the first, so one run of --check-config shows a
 * user everything to fix. Nothing here opens a socket or a file other than
 * the configuration and the plugins it names.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "core-internal.h"

#define CONF_ERR(c, file, line, ...)                                          \
	do {                                                                  \
		(c)->errors++;                                                \
		tally_log_conf(LOG_ERR, file, line, __VA_ARGS__);             \
	} while (0)
#define CONF_WARN(c, file, line, ...)                                         \
	do {                                                                  \
		(c)->warnings++;                                              \
		tally_log_conf(LOG_WARNING, file, line, __VA_ARGS__);         \
	} while (0)

static const char *const conf_sections[] = { "global",	"inputs",
					      "filters", "outputs",
					      "pipelines", NULL };

static const char *const pipe_keys[] = { "from", "through", "to", NULL };

/* The nearest name of @names to @word, or NULL if none is close. */
static const char *nearest(const char *word, const char *const *names,
			   const struct tally_option *opts)
{
	const char *best = NULL;
	unsigned bestd = 3;	/* at most two edits away */

	for (size_t i = 0; names && names[i]; i++) {
		unsigned d = tally_edit_distance(word, names[i]);

		if (d < bestd) {
			bestd = d;
			best = names[i];
		}
	}
	for (; opts && opts->name; opts++) {
		unsigned d = tally_edit_distance(word, opts->name);

		if (d < bestd) {
			bestd = d;
			best = opts->name;
		}
	}
	return best;
}

static bool in_list(const char *const *names, const char *s)
{
	for (size_t i = 0; names[i]; i++) {
		if (!strcmp(names[i], s))
			return true;
	}
	return false;
}

/* Report an unknown key with the nearest valid one; the caller counts it. */
static void unknown_key(const char *file, int line, const char *what,
			const char *key, const char *const *names,
			const struct tally_option *opts)
{
	const char *near = nearest(key, names, opts);

	if (near)
		tally_log_conf(LOG_ERR, file, line,
			       "%s: unknown option '%s' (did you mean '%s'?)",
			       what, key, near);
	else
		tally_log_conf(LOG_ERR, file, line, "%s: unknown option '%s'",
			       what, key);
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int conf_add_file(struct tally_conf *c, const char *path)
{
	config_t *cfgs;
	char **paths, *p;

	p = strdup(path);
	if (!p)
		return -1;
	cfgs = realloc(c->cfgs, (c->nfiles + 1) * sizeof(*cfgs));
	if (!cfgs)
		goto out_free;
	c->cfgs = cfgs;
	paths = realloc(c->paths, (c->nfiles + 1) * sizeof(*paths));
	if (!paths)
		goto out_free;
	c->paths = paths;
	config_init(&c->cfgs[c->nfiles]);
	c->paths[c->nfiles++] = p;
	return 0;
out_free:
	free(p);
	errno = ENOMEM;
	return -1;
}

static bool same_file(const char *path, const struct stat *st)
{
	struct stat o;

	return stat(path, &o) == 0 && o.st_dev == st->st_dev &&
	       o.st_ino == st->st_ino;
}

/* Every *.conf of @dir in lexical order. Missing dir: 0 if !required. */
static int conf_add_dir(struct tally_conf *c, const char *dir, bool required)
{
	char **names = NULL, path[PATH_MAX];
	size_t n = 0;
	struct dirent *de;
	int ret = 0;
	DIR *d;

	d = opendir(dir);
	if (!d) {
		if (!required && errno == ENOENT)
			return 0;
		CONF_ERR(c, dir, 0, "cannot read include directory: %s",
			 strerror(errno));
		return 0;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char **v;

		if (len < 6 || de->d_name[0] == '.' ||
		    strcmp(de->d_name + len - 5, ".conf"))
			continue;
		v = realloc(names, (n + 1) * sizeof(*v));
		if (!v)
			goto out_nomem;
		names = v;
		names[n] = strdup(de->d_name);
		if (!names[n])
			goto out_nomem;
		n++;
	}
	closedir(d);
	d = NULL;
	if (n)
		qsort(names, n, sizeof(*names), cmp_str);
	for (size_t i = 0; i < n && ret == 0; i++) {
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		/* a FIFO would block the read, a directory cannot be parsed */
		if (stat(path, &st) < 0 || !S_ISREG(st.st_mode)) {
			CONF_WARN(c, path, 0, "not a regular file, skipped");
			continue;
		}
		/* include_dir = "." must not read the main file again */
		if (c->nfiles && same_file(c->paths[0], &st))
			continue;
		ret = conf_add_file(c, path);
	}
	goto out;
out_nomem:
	errno = ENOMEM;
	ret = -1;
out:
	if (d)
		closedir(d);
	for (size_t i = 0; i < n; i++)
		free(names[i]);
	free(names);
	return ret;
}

static int conf_parse(struct tally_conf *c, size_t i)
{
	config_t *cfg = &c->cfgs[i];
	char dir[PATH_MAX];

	FILE *f;
	int ok;

	snprintf(dir, sizeof(dir), "%s", c->paths[i]);
	config_set_include_dir(cfg, dirname(dir));
	/* open it ourselves: libconfig's I/O errors leave errno stale */
	f = fopen(c->paths[i], "re");
	if (!f) {
		CONF_ERR(c, c->paths[i], 0, "cannot read: %s", strerror(errno));
		return -1;
	}
	ok = config_read(cfg, f);
	fclose(f);
	if (ok == CONFIG_TRUE)
		return 0;
	if (config_error_type(cfg) == CONFIG_ERR_FILE_IO)
		CONF_ERR(c, c->paths[i], 0, "cannot read");
	else
		CONF_ERR(c,
			 config_error_file(cfg) ? config_error_file(cfg)
						: c->paths[i],
			 config_error_line(cfg), "%s", config_error_text(cfg));
	/* validate nothing of a half-read file: errors would only cascade */
	config_destroy(cfg);
	config_init(cfg);
	return -1;
}

static int sline(const config_setting_t *s)
{
	return (int)config_setting_source_line(s);
}

/* global: declared with an option table like any plugin's */
struct conf_global {
	double interval;
	double shutdown_timeout;
	struct tally_strlist plugin_path;
	char *include_dir;
	char *log;
	char *log_level;
	char *output_dir;
	int user_ports;
	struct tally_labels *labels;
};

static const char *const conf_user_ports[] = { "ephemeral", "configured",
					       NULL };

static const struct tally_option global_options[] = {
	TALLY_OPT_DOUBLE("interval", struct conf_global, interval, "10", 0.001,
			 86400, "default seconds between reads and ticks"),
	TALLY_OPT_DOUBLE("shutdown_timeout", struct conf_global,
			 shutdown_timeout, "5", 0.001, 3600,
			 "seconds a stopping tallyd waits for outputs"),
	TALLY_OPT_LIST("plugin_path", struct conf_global, plugin_path, NULL,
		       "plugin directories, after the command line's"),
	TALLY_OPT_STRING("include_dir", struct conf_global, include_dir, NULL,
			 "main file only: directory of further *.conf files"),
	TALLY_OPT_STRING("log", struct conf_global, log, NULL,
			 "\"stderr\" or \"syslog\""),
	TALLY_OPT_STRING("log_level", struct conf_global, log_level, NULL,
			 "error, warning, notice, info or debug"),
	TALLY_OPT_STRING("output_dir", struct conf_global, output_dir, NULL,
			 "directory of the files outputs keep (relative: to "
			 "where tallyd started); default: tally-JOBID (user "
			 "mode), " TALLY_STATEDIR " (system)"),
	TALLY_OPT_ENUM("user_ports", struct conf_global, user_ports,
		       "ephemeral", conf_user_ports,
		       "user mode: listeners bind ports the kernel chooses "
		       "(ephemeral, listed in RUNDIR/listen) or the "
		       "configured ones"),
	TALLY_OPT_LABELS("labels", struct conf_global, labels,
			 "static labels every output adds to what it writes "
			 "(a record's own labels win)"),
	TALLY_OPT_END,
};

#define NGLOBAL (sizeof(global_options) / sizeof(global_options[0]))

/* Each key at most once over all files; values checked by the table. */
static void conf_global(struct tally_conf *c, struct tally_loader *ld)
{
	const config_setting_t *seen[NGLOBAL] = { 0 };
	const char *seen_file[NGLOBAL] = { 0 };
	struct conf_global g = { 0 };

	tally_options_defaults(global_options, &g, "global");
	for (size_t f = 0; f < c->nfiles; f++) {
		config_setting_t *grp = config_lookup(&c->cfgs[f], "global");
		int n;

		if (!grp)
			continue;
		if (!config_setting_is_group(grp)) {
			CONF_ERR(c, c->paths[f], sline(grp),
				 "global must be a group: global = { ... };");
			continue;
		}
		n = config_setting_length(grp);
		for (int i = 0; i < n; i++) {
			config_setting_t *s = config_setting_get_elem(grp, i);
			const char *key = config_setting_name(s);
			const struct tally_option *o;
			size_t k;

			o = tally_options_find(global_options, key);
			if (!o) {
				unknown_key(c->paths[f], sline(s), "global",
					    key, NULL, global_options);
				c->errors++;
				continue;
			}
			k = (size_t)(o - global_options);
			if (seen[k]) {
				CONF_ERR(c, c->paths[f], sline(s),
					 "global.%s set twice (first at %s:%d)",
					 key, seen_file[k], sline(seen[k]));
				continue;
			}
			seen[k] = s;
			seen_file[k] = c->paths[f];
			if (tally_options_set(o, &g, s, c->paths[f], sline(s),
					      "global") < 0)
				c->errors++;
			else if (!strcmp(key, "include_dir") && f != 0)
				CONF_WARN(c, c->paths[f], sline(s),
					  "global.include_dir only has an "
					  "effect in the main file");
			else if (!strcmp(key, "log") && strcmp(g.log, "stderr") &&
				 strcmp(g.log, "syslog"))
				CONF_ERR(c, c->paths[f], sline(s),
					 "global.log must be \"stderr\" or "
					 "\"syslog\"");
			else if (!strcmp(key, "log_level") &&
				 tally_log_level_parse(g.log_level) < 0)
				CONF_ERR(c, c->paths[f], sline(s),
					 "global.log_level \"%s\" is not one of "
					 "error, warning, notice, info, debug",
					 g.log_level);
		}
	}
	c->interval = g.interval;
	c->shutdown_timeout = g.shutdown_timeout;
	for (size_t i = 0; i < g.plugin_path.n; i++)
		tally_loader_add_path(ld, g.plugin_path.v[i]);
	c->log = g.log;
	c->log_level = g.log_level;
	c->output_dir = g.output_dir;
	c->user_ports_configured = g.user_ports == 1;
	c->labels = g.labels;
	g.log = NULL;
	g.log_level = NULL;
	g.output_dir = NULL;
	g.labels = NULL;
	tally_options_free(global_options, &g);
}

static struct tally_conf_decl *conf_decl_find(struct tally_conf *c,
					      const char *name)
{
	for (size_t i = 0; i < c->ndecls; i++) {
		if (!strcmp(c->decls[i].name, name))
			return &c->decls[i];
	}
	return NULL;
}

static const char *kind_section(enum tally_plugin_kind k)
{
	return k == TALLY_KIND_INPUT    ? "inputs"
	       : k == TALLY_KIND_FILTER ? "filters"
					: "outputs";
}

static const char *kind_word(enum tally_plugin_kind k)
{
	return k == TALLY_KIND_INPUT    ? "an input"
	       : k == TALLY_KIND_FILTER ? "a filter"
					: "an output";
}

/* Options every output has, handled by the core, filling its declaration. */
static const struct tally_option output_common[] = {
	TALLY_OPT_INT("queue_size", struct tally_conf_decl, queue_size, NULL, 1,
		      1 << 20, "batches queued while the output is busy"),
	TALLY_OPT_INT("queue_records", struct tally_conf_decl, queue_records,
		      NULL, 1, 1 << 30,
		      "records queued while the output is busy"),
	TALLY_OPT_LABELS("labels", struct tally_conf_decl, labels,
			 "static labels the output adds"),
	TALLY_OPT_END,
};

/*
 * Fill @state from the instance's settings after applying defaults. Used
 * both to validate (then freed) and to configure the running instance.
 * Every problem is reported and counted in c->errors. Returns the number
 * of problems found.
 */
static unsigned conf_fill(struct tally_conf *c, struct tally_conf_decl *d,
			  void *state)
{
	const struct tally_option *opts = d->plugin->options;
	const config_setting_t *g = d->setting;
	char what[256];
	unsigned errors = 0;
	int n = config_setting_length(g);

	snprintf(what, sizeof(what), "%s.%s", kind_section(d->kind), d->name);
	if (tally_options_defaults(opts, state, what) < 0)
		errors++;
	for (int i = 0; i < n; i++) {
		const config_setting_t *s = config_setting_get_elem(g, i);
		const char *key = config_setting_name(s);
		const struct tally_option *o;

		if (!strcmp(key, "plugin"))
			continue;
		if (!strcmp(key, "interval") && d->kind != TALLY_KIND_OUTPUT) {
			static const struct tally_option iv = TALLY_OPT_DOUBLE(
				"interval", struct tally_conf_decl, interval,
				NULL, 0.001, 86400, "");

			if (tally_options_set(&iv, d, s, d->file, sline(s),
					      what) < 0)
				errors++;
			continue;
		}
		o = d->kind == TALLY_KIND_OUTPUT
			    ? tally_options_find(output_common, key)
			    : NULL;
		if (o) {
			if (tally_options_set(o, d, s, d->file, sline(s),
					      what) < 0)
				errors++;
			continue;
		}
		o = tally_options_find(opts, key);
		if (!o) {
			static const char *const in_common[] = { "plugin",
								 "interval",
								 NULL };
			static const char *const out_common[] = {
				"plugin", "queue_size", "queue_records",
				"labels", NULL
			};

			unknown_key(d->file, sline(s), what, key,
				    d->kind == TALLY_KIND_OUTPUT ? out_common
								 : in_common,
				    opts);
			errors++;
			continue;
		}
		if (tally_options_set(o, state, s, d->file, sline(s), what) < 0)
			errors++;
	}
	for (const struct tally_option *o = opts; o->name; o++) {
		if ((o->flags & TALLY_OPT_REQUIRED) &&
		    !config_setting_get_member(g, o->name)) {
			tally_log_conf(LOG_ERR, d->file, d->line,
				       "%s: missing required option '%s' (%s)",
				       what, o->name, o->doc ? o->doc : "");
			errors++;
		}
	}
	c->errors += errors;
	return errors;
}

int tally_conf_fill_state(struct tally_conf *c, struct tally_conf_decl *d,
			  void *state)
{
	if (conf_fill(c, d, state)) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static void conf_instances(struct tally_conf *c, struct tally_loader *ld,
			   size_t f, enum tally_plugin_kind kind)
{
	config_setting_t *sec = config_lookup(&c->cfgs[f], kind_section(kind));
	const char *file = c->paths[f];
	int n;

	if (!sec)
		return;
	if (!config_setting_is_group(sec)) {
		CONF_ERR(c, file, sline(sec), "%s must be a group of instances",
			 kind_section(kind));
		return;
	}
	n = config_setting_length(sec);
	for (int i = 0; i < n; i++) {
		config_setting_t *s = config_setting_get_elem(sec, i);
		const char *name = config_setting_name(s);
		struct tally_conf_decl *d, *prev, *v;
		const char *pname;
		void *state;

		if (!config_setting_is_group(s)) {
			CONF_ERR(c, file, sline(s),
				 "%s.%s must be a group: %s = { plugin = "
				 "\"...\"; };",
				 kind_section(kind), name, name);
			continue;
		}
		prev = conf_decl_find(c, name);
		if (prev) {
			CONF_ERR(c, file, sline(s),
				 "instance '%s' defined twice: here and at "
				 "%s:%d",
				 name, prev->file, prev->line);
			continue;
		}
		if (!config_setting_lookup_string(s, "plugin", &pname)) {
			CONF_ERR(c, file, sline(s),
				 "%s.%s: missing required option 'plugin' "
				 "(a string)",
				 kind_section(kind), name);
			continue;
		}
		v = realloc(c->decls, (c->ndecls + 1) * sizeof(*v));
		if (!v) {
			CONF_ERR(c, file, sline(s), "out of memory");
			return;
		}
		c->decls = v;
		d = &c->decls[c->ndecls];
		*d = (struct tally_conf_decl){ .name = strdup(name),
					       .kind = kind,
					       .setting = s,
					       .file = file,
					       .line = sline(s),
					       .queue_size = 1024,
					       .queue_records =
						       TALLY_QUEUE_RECORDS };
		if (!d->name) {
			CONF_ERR(c, file, sline(s), "out of memory");
			return;
		}
		c->ndecls++;
		d->plugin = tally_loader_get(ld, pname);
		if (!d->plugin) {
			if (errno == ENOENT)
				CONF_ERR(c, file, sline(s),
					 "%s.%s: no plugin named '%s' in the "
					 "plugin path (tallyd --list-plugins "
					 "shows them)",
					 kind_section(kind), name, pname);
			else
				CONF_ERR(c, file, sline(s),
					 "%s.%s: plugin '%s' was refused (see "
					 "above)",
					 kind_section(kind), name, pname);
			continue;
		}
		if (d->plugin->kind != kind) {
			CONF_ERR(c, file, sline(s),
				 "%s.%s: plugin '%s' is %s, not %s",
				 kind_section(kind), name, pname,
				 kind_word(d->plugin->kind), kind_word(kind));
			d->plugin = NULL;
			continue;
		}
		/* what it may emit; its check may narrow it from its options */
		if (kind == TALLY_KIND_INPUT)
			d->emits = d->plugin->input->emits;
		/* validate by filling a scratch state */
		state = calloc(1, d->plugin->state_size ? d->plugin->state_size
							: 1);
		if (!state) {
			CONF_ERR(c, file, sline(s), "out of memory");
			continue;
		}
		if (conf_fill(c, d, state) == 0) {
			/* the plugin's own checks, with this file:line */
			char label[256];
			struct tally_instance tmp = {
				.plugin = d->plugin,
				.name = d->name,
				.label = label,
				.cfile = file,
				.cline = sline(s),
				.setup = true,
				.state = state,
				.interval = d->interval > 0 ? d->interval
							    : c->interval,
				.decl = d,
			};

			snprintf(label, sizeof(label), "%s.%s",
				 kind_section(kind), name);
			if (tally_instance_check(&tmp) < 0)
				c->errors++;
			tally_conf_binds_add(c, d, label, state);
		}
		tally_options_free(d->plugin->options, state);
		free(state);
	}
}

/* Resolve a pipeline's from/through/to list. */
static void conf_pipe_list(struct tally_conf *c, struct tally_conf_pipe *p,
			   const config_setting_t *g, const char *key,
			   enum tally_plugin_kind kind,
			   struct tally_conf_decl ***out, size_t *nout)
{
	const config_setting_t *s = config_setting_get_member(g, key);
	bool mandatory = kind != TALLY_KIND_FILTER;
	int n;

	if (!s) {
		if (mandatory)
			CONF_ERR(c, p->file, p->line,
				 "pipelines.%s: missing '%s' (a list of %s)",
				 p->name, key, kind_section(kind));
		return;
	}
	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		n = 1;
	} else if (config_setting_type(s) == CONFIG_TYPE_ARRAY ||
		   config_setting_type(s) == CONFIG_TYPE_LIST) {
		n = config_setting_length(s);
	} else {
		CONF_ERR(c, p->file, sline(s),
			 "pipelines.%s: '%s' must be a list of instance names",
			 p->name, key);
		return;
	}
	if (n == 0 && mandatory) {
		CONF_ERR(c, p->file, sline(s), "pipelines.%s: '%s' is empty",
			 p->name, key);
		return;
	}
	*out = calloc(n ? (size_t)n : 1, sizeof(**out));
	if (!*out)
		return;
	for (int i = 0; i < n; i++) {
		const config_setting_t *e = config_setting_type(s) ==
							    CONFIG_TYPE_STRING
						    ? s
						    : config_setting_get_elem(
							      s, i);
		struct tally_conf_decl *d;
		const char *name;

		if (config_setting_type(e) != CONFIG_TYPE_STRING) {
			CONF_ERR(c, p->file, sline(s),
				 "pipelines.%s: '%s' must be a list of "
				 "instance names",
				 p->name, key);
			continue;
		}
		name = config_setting_get_string(e);
		d = conf_decl_find(c, name);
		if (!d) {
			CONF_ERR(c, p->file, sline(s),
				 "pipelines.%s: %s names unknown instance '%s'",
				 p->name, key, name);
			continue;
		}
		if (d->kind != kind) {
			CONF_ERR(c, p->file, sline(s),
				 "pipelines.%s: '%s' in %s is %s (defined at "
				 "%s:%d), not %s",
				 p->name, name, key, kind_word(d->kind),
				 d->file, d->line, kind_word(kind));
			continue;
		}
		for (size_t j = 0; j < *nout; j++) {
			if ((*out)[j] == d) {
				CONF_ERR(c, p->file, sline(s),
					 "pipelines.%s: '%s' named twice in "
					 "%s",
					 p->name, name, key);
				d = NULL;
				break;
			}
		}
		if (!d)
			continue;
		d->used = true;
		(*out)[(*nout)++] = d;
	}
}

const char *tally_forms_text(unsigned forms, char *buf, size_t size)
{
	static const struct {
		unsigned bit;
		const char *text;
	} names[] = {
		{ TALLY_FORMS_DELTA,
		  "deltas (counter increments, gauge adjustments)" },
		{ TALLY_FORMS_OBSERVATION, "observations (timer values)" },
		{ TALLY_FORMS_SET_MEMBER, "set members" },
	};
	size_t len = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (!(forms & names[i].bit))
			continue;
		len += (size_t)snprintf(buf + len, len < size ? size - len : 0,
					"%s%s", len ? ", " : "", names[i].text);
	}
	return buf;
}

/*
 * Whether every output of @p takes every sample form the pipeline can
 * bring it: what each input may emit, less what the filters absorb, plus
 * what they emit themselves (struct tally_*_ops emits/absorbs/accepts).
 */
static void conf_pipe_forms(struct tally_conf *c,
			    const struct tally_conf_pipe *p)
{
	char text[256];

	for (size_t i = 0; i < p->nfrom; i++) {
		unsigned forms;

		if (!p->from[i] || !p->from[i]->plugin)
			continue;
		forms = p->from[i]->emits;
		for (size_t k = 0; k < p->nthrough; k++) {
			const struct tally_plugin *fp = p->through[k]->plugin;

			if (fp)
				forms = (forms & ~fp->filter->absorbs) |
					fp->filter->emits;
		}
		for (size_t k = 0; k < p->nto; k++) {
			const struct tally_plugin *op = p->to[k]->plugin;
			unsigned bad;

			if (!op)
				continue;
			bad = forms & ~op->output->accepts;
			if (!bad)
				continue;
			CONF_ERR(c, p->file, p->line,
				 "pipelines.%s: input '%s' may send %s, which "
				 "output '%s' (%s) does not take: add an "
				 "aggregate filter to the pipeline's "
				 "'through'",
				 p->name, p->from[i]->name,
				 tally_forms_text(bad, text, sizeof(text)),
				 p->to[k]->name, op->name);
		}
	}
}

static void conf_pipelines(struct tally_conf *c, size_t f)
{
	config_setting_t *sec = config_lookup(&c->cfgs[f], "pipelines");
	const char *file = c->paths[f];
	int n;

	if (!sec)
		return;
	if (!config_setting_is_group(sec)) {
		CONF_ERR(c, file, sline(sec), "pipelines must be a group");
		return;
	}
	n = config_setting_length(sec);
	for (int i = 0; i < n; i++) {
		config_setting_t *g = config_setting_get_elem(sec, i);
		const char *name = config_setting_name(g);
		struct tally_conf_pipe *p, *v;
		int m;

		if (!config_setting_is_group(g)) {
			CONF_ERR(c, file, sline(g),
				 "pipelines.%s must be a group: %s = { from = "
				 "[...]; to = [...]; };",
				 name, name);
			continue;
		}
		for (size_t j = 0; j < c->npipes; j++) {
			if (!strcmp(c->pipes[j].name, name)) {
				CONF_ERR(c, file, sline(g),
					 "pipeline '%s' defined twice: here "
					 "and at %s:%d",
					 name, c->pipes[j].file,
					 c->pipes[j].line);
				name = NULL;
				break;
			}
		}
		if (!name)
			continue;
		m = config_setting_length(g);
		for (int k = 0; k < m; k++) {
			const char *key = config_setting_name(
				config_setting_get_elem(g, k));
			char what[256];

			if (in_list(pipe_keys, key))
				continue;
			snprintf(what, sizeof(what), "pipelines.%s", name);
			c->errors++;
			unknown_key(file,
				    sline(config_setting_get_elem(g, k)), what,
				    key, pipe_keys, NULL);
		}
		v = realloc(c->pipes, (c->npipes + 1) * sizeof(*v));
		if (!v)
			return;
		c->pipes = v;
		p = &c->pipes[c->npipes++];
		*p = (struct tally_conf_pipe){ .name = strdup(name),
					       .file = file,
					       .line = sline(g) };
		conf_pipe_list(c, p, g, "from", TALLY_KIND_INPUT, &p->from,
			       &p->nfrom);
		conf_pipe_list(c, p, g, "through", TALLY_KIND_FILTER,
			       &p->through, &p->nthrough);
		conf_pipe_list(c, p, g, "to", TALLY_KIND_OUTPUT, &p->to,
			       &p->nto);
		conf_pipe_forms(c, p);
	}
}

static void conf_sections_check(struct tally_conf *c, size_t f)
{
	config_setting_t *root = config_root_setting(&c->cfgs[f]);
	int n = config_setting_length(root);

	for (int i = 0; i < n; i++) {
		config_setting_t *s = config_setting_get_elem(root, i);
		const char *key = config_setting_name(s);
		const char *near;

		if (in_list(conf_sections, key))
			continue;
		near = nearest(key, conf_sections, NULL);
		if (near)
			CONF_ERR(c, c->paths[f], sline(s),
				 "unknown section '%s' (did you mean '%s'?)",
				 key, near);
		else
			CONF_ERR(c, c->paths[f], sline(s),
				 "unknown section '%s' (sections: global, "
				 "inputs, filters, outputs, pipelines)",
				 key);
	}
}

struct tally_conf *tally_conf_load(const char *path, struct tally_loader *ld)
{
	struct tally_conf *c = calloc(1, sizeof(*c));
	size_t parsed;
	struct stat st;

	if (!c) {
		errno = ENOMEM;
		return NULL;
	}
	c->interval = 10.0;
	c->shutdown_timeout = 5.0;
	if (stat(path, &st) < 0) {
		CONF_ERR(c, path, 0, "cannot read: %s", strerror(errno));
		return c;
	}
	if (!S_ISDIR(st.st_mode) && !S_ISREG(st.st_mode)) {
		CONF_ERR(c, path, 0, "not a regular file or a directory");
		return c;
	}
	if (S_ISDIR(st.st_mode)) {
		/* a directory is a set of files, no main file */
		if (conf_add_dir(c, path, true) < 0)
			goto out_fail;
		if (c->nfiles == 0)
			CONF_ERR(c, path, 0, "no *.conf file in directory");
	} else if (conf_add_file(c, path) < 0) {
		goto out_fail;
	}
	for (size_t i = 0; i < c->nfiles; i++)
		conf_parse(c, i);
	if (!S_ISDIR(st.st_mode)) {
		/* the main file names the include directory; default conf.d */
		char dir[PATH_MAX], incpath[PATH_MAX];
		const char *inc = NULL;

		config_lookup_string(&c->cfgs[0], "global.include_dir", &inc);
		snprintf(dir, sizeof(dir), "%s", path);
		if (!inc)
			snprintf(incpath, sizeof(incpath), "%s/conf.d",
				 dirname(dir));
		else if (inc[0] == '/')
			snprintf(incpath, sizeof(incpath), "%s", inc);
		else
			snprintf(incpath, sizeof(incpath), "%s/%s",
				 dirname(dir), inc);
		parsed = c->nfiles;
		if (conf_add_dir(c, incpath, inc != NULL) < 0)
			goto out_fail;
		for (size_t i = parsed; i < c->nfiles; i++)
			conf_parse(c, i);
	}
	conf_global(c, ld);
	for (size_t f = 0; f < c->nfiles; f++)
		conf_sections_check(c, f);
	for (enum tally_plugin_kind k = TALLY_KIND_INPUT; k <= TALLY_KIND_OUTPUT;
	     k++) {
		for (size_t f = 0; f < c->nfiles; f++)
			conf_instances(c, ld, f, k);
	}
	for (size_t f = 0; f < c->nfiles; f++)
		conf_pipelines(c, f);
	for (size_t i = 0; i < c->ndecls; i++) {
		if (!c->decls[i].used && c->decls[i].plugin)
			CONF_WARN(c, c->decls[i].file, c->decls[i].line,
				  "%s.%s is not used by any pipeline",
				  kind_section(c->decls[i].kind),
				  c->decls[i].name);
	}
	if (c->npipes == 0 && c->errors == 0)
		CONF_WARN(c, path, 0, "no pipelines: nothing will be collected");
	return c;
out_fail:
	tally_conf_free(c);
	return NULL;
}

/*
 * Whether two settings say the same thing: same type and value, the same
 * elements in the same order (lists and arrays) or the same members in any
 * order (groups). Where they come from (file, line) does not matter. Different types are different
 * even when the values compare equal ("10" and "10L"): a reload then
 * replaces an instance it could have kept, which is safe.
 */
static bool conf_setting_same(const config_setting_t *a,
			      const config_setting_t *b)
{
	int t = config_setting_type(a), n;
	double x, y;

	if (t != config_setting_type(b))
		return false;
	switch (t) {
	case CONFIG_TYPE_INT:
		return config_setting_get_int(a) == config_setting_get_int(b);
	case CONFIG_TYPE_INT64:
		return config_setting_get_int64(a) ==
		       config_setting_get_int64(b);
	case CONFIG_TYPE_FLOAT:
		x = config_setting_get_float(a);
		y = config_setting_get_float(b);
		return x == y || (isnan(x) && isnan(y));
	case CONFIG_TYPE_BOOL:
		return config_setting_get_bool(a) == config_setting_get_bool(b);
	case CONFIG_TYPE_STRING:
		return !strcmp(config_setting_get_string(a),
			       config_setting_get_string(b));
	case CONFIG_TYPE_GROUP:
	case CONFIG_TYPE_ARRAY:
	case CONFIG_TYPE_LIST:
		n = config_setting_length(a);
		if (n != config_setting_length(b))
			return false;
		for (int i = 0; i < n; i++) {
			const config_setting_t *ea, *eb;

			/* a group's members by name, in any order */
			ea = config_setting_get_elem(a, i);
			eb = t == CONFIG_TYPE_GROUP
				     ? config_setting_get_member(
					       b, config_setting_name(ea))
				     : config_setting_get_elem(b, i);
			if (!eb || !conf_setting_same(ea, eb))
				return false;
		}
		return true;
	}
	return false;
}

bool tally_conf_decl_same(const struct tally_conf *ca,
			  const struct tally_conf_decl *a,
			  const struct tally_conf *cb,
			  const struct tally_conf_decl *b)
{
	double ia = a->interval > 0 ? a->interval : ca->interval;
	double ib = b->interval > 0 ? b->interval : cb->interval;

	/* outputs run on their inputs' batches: an interval is not theirs */
	return a->kind == b->kind && a->plugin == b->plugin &&
	       !strcmp(a->name, b->name) &&
	       (a->kind == TALLY_KIND_OUTPUT || ia == ib) &&
	       a->queue_size == b->queue_size &&
	       a->queue_records == b->queue_records &&
	       /* interned: equal sets are one pointer */
	       a->labels == b->labels &&
	       (a->kind != TALLY_KIND_OUTPUT || ca->labels == cb->labels) &&
	       conf_setting_same(a->setting, b->setting);
}

void tally_conf_free(struct tally_conf *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->ndecls; i++) {
		free(c->decls[i].name);
		tally_labels_unref(c->decls[i].labels);
	}
	free(c->decls);
	for (size_t i = 0; i < c->npipes; i++) {
		free(c->pipes[i].name);
		free(c->pipes[i].from);
		free(c->pipes[i].through);
		free(c->pipes[i].to);
	}
	free(c->pipes);
	tally_conf_binds_free(c);
	for (size_t i = 0; i < c->nfiles; i++) {
		config_destroy(&c->cfgs[i]);
		free(c->paths[i]);
	}
	free(c->cfgs);
	free(c->paths);
	free(c->log);
	free(c->log_level);
	free(c->output_dir);
	tally_labels_unref(c->labels);
	free(c);
}
