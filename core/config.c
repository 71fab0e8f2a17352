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
#include <grp.h>
#include <libgen.h>
#include <limits.h>
#include <math.h>
#include <pwd.h>
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

static bool in_list(const char *const *names, const char *s)
{
	for (size_t i = 0; names[i]; i++) {
		if (!strcmp(names[i], s))
			return true;
	}
	return false;
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int conf_add_file(struct tally_conf *c, const char *path)
{
	struct tally_conf_text *texts;
	config_t *cfgs;
	char **paths, *p;

	p = strdup(path);
	if (!p)
		return -1;
	cfgs = realloc(c->cfgs, (c->nfiles + 1) * sizeof(*cfgs));
	if (!cfgs)
		goto out_free;
	c->cfgs = cfgs;
	texts = realloc(c->texts, (c->nfiles + 1) * sizeof(*texts));
	if (!texts)
		goto out_free;
	c->texts = texts;
	memset(&c->texts[c->nfiles], 0, sizeof(*texts));
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

/* Where a setting of file @f is: its file (maybe an include), its line. */
struct conf_at {
	const char *file;
	int line;
};

static struct conf_at conf_line_at(const struct tally_conf *c, size_t f,
				   int line)
{
	struct conf_at a = { c->paths[f], line };

	if (c->texts[f].text)
		tally_conf_text_where(&c->texts[f], line, &a.file, &a.line);
	return a;
}

static struct conf_at at(const struct tally_conf *c, size_t f,
			 const config_setting_t *s)
{
	return conf_line_at(c, f, (int)config_setting_source_line(s));
}

#define CONF_ERR_AT(c, a, ...) CONF_ERR(c, (a).file, (a).line, __VA_ARGS__)
#define CONF_WARN_AT(c, a, ...)                                               \
	CONF_WARN(c, (a).file, (a).line, __VA_ARGS__)

/*
 * Read file @i with its includes and parse it. libconfig parses the text
 * conftext.c expanded: it never opens a file itself.
 */
static int conf_parse(struct tally_conf *c, size_t i)
{
	config_t *cfg = &c->cfgs[i];
	struct tally_conf_text *t = &c->texts[i];
	int line, first_line;
	struct conf_at a, b;
	char name[256];

	if (tally_conf_text_load(t, c->paths[i]) < 0) {
		c->errors++;	/* logged */
		return -1;
	}
	if (config_read_string(cfg, t->text) == CONFIG_TRUE)
		return 0;
	a = conf_line_at(c, i, config_error_line(cfg));
	if (config_error_text(cfg) &&
	    !strcmp(config_error_text(cfg), "duplicate setting name") &&
	    tally_conf_text_duplicate(t, name, sizeof(name), &line,
				      &first_line) == 0) {
		/* libconfig does not say which */
		a = conf_line_at(c, i, line);
		b = conf_line_at(c, i, first_line);
		CONF_ERR_AT(c, a, "%s defined twice: here and at %s:%d", name,
			    b.file, b.line);
	} else if (config_error_text(cfg) &&
		   !strcmp(config_error_text(cfg),
			   "mismatched element type in array")) {
		CONF_ERR_AT(c, a,
			    "mismatched element type in array (an array "
			    "holds one type: write 1.0, not 1, beside 0.5, "
			    "or make it a list: (0.5, 1))");
	} else {
		CONF_ERR_AT(c, a, "%s", config_error_text(cfg));
	}
	/* validate nothing of a half-read file: errors would only cascade */
	config_destroy(cfg);
	config_init(cfg);
	return -1;
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
	char *user;
	char *group;
};

static const char *const conf_user_ports[] = { "ephemeral", "configured",
					       NULL };

static const struct tally_option global_options[] = {
	TALLY_OPT_DURATION("interval", struct conf_global, interval, "10", 0.001,
			 86400, "default seconds between reads and ticks"),
	TALLY_OPT_DURATION("shutdown_timeout", struct conf_global,
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
	TALLY_OPT_STRING("user", struct conf_global, user, NULL,
			 "user tallyd runs as once every socket is bound and "
			 "every plugin set up (started as root only)"),
	TALLY_OPT_STRING("group", struct conf_global, group, NULL,
			 "group tallyd runs as then (default: the user's); "
			 "the owner group of the files it creates"),
	TALLY_OPT_END,
};

#define NGLOBAL (sizeof(global_options) / sizeof(global_options[0]))

/* Each key at most once over all files; values checked by the table. */
static void conf_global(struct tally_conf *c, struct tally_loader *ld)
{
	struct conf_at seen[NGLOBAL] = { 0 };
	struct conf_global g = { 0 };

	tally_options_defaults(global_options, &g, "global");
	for (size_t f = 0; f < c->nfiles; f++) {
		config_setting_t *grp = config_lookup(&c->cfgs[f], "global");
		int n;

		if (!grp)
			continue;
		if (!config_setting_is_group(grp)) {
			CONF_ERR_AT(
				c, at(c, f, grp),
				"global must be a group: global = { ... };");
			continue;
		}
		n = config_setting_length(grp);
		for (int i = 0; i < n; i++) {
			config_setting_t *s = config_setting_get_elem(grp, i);
			const char *key = config_setting_name(s);
			struct conf_at a = at(c, f, s);
			struct tally_opt_src src = { a.file, a.line, "global",
						     &c->texts[f] };
			const struct tally_option *o;
			size_t k;

			o = tally_options_find(global_options, key);
			if (!o) {
				tally_options_unknown(a.file, a.line, "global",
						      key, NULL, global_options,
						      NULL);
				c->errors++;
				continue;
			}
			k = (size_t)(o - global_options);
			if (seen[k].file) {
				CONF_ERR_AT(c, a,
					    "global.%s set twice (first at "
					    "%s:%d)",
					    key, seen[k].file, seen[k].line);
				continue;
			}
			seen[k] = a;
			if (tally_options_apply(o, &g, s, &src) < 0)
				c->errors++;
			else if (!strcmp(key, "include_dir") && f != 0)
				CONF_WARN_AT(c, at(c, f, s),
					     "global.include_dir only has an "
					     "effect in the main file");
			else if (!strcmp(key, "log") &&
				 strcmp(g.log, "stderr") &&
				 strcmp(g.log, "syslog"))
				CONF_ERR_AT(c, at(c, f, s),
					    "global.log must be \"stderr\" or "
					    "\"syslog\"");
			else if (!strcmp(key, "log_level") &&
				 tally_log_level_parse(g.log_level) < 0)
				CONF_ERR_AT(
					c, at(c, f, s),
					"global.log_level \"%s\" is not one of "
					"error, warning, notice, info, debug",
					g.log_level);
			else if (!strcmp(key, "user") && !getpwnam(g.user))
				CONF_ERR_AT(c, at(c, f, s),
					    "global.user \"%s\": no such user "
					    "(create it, or name the user "
					    "tallyd should run as)",
					    g.user);
			else if (!strcmp(key, "group") && !getgrnam(g.group))
				CONF_ERR_AT(c, at(c, f, s),
					    "global.group \"%s\": no such "
					    "group",
					    g.group);
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
	c->user = g.user;
	c->group = g.group;
	g.user = NULL;
	g.group = NULL;
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

static const char *kind_word(enum tally_plugin_kind k)
{
	return k == TALLY_KIND_INPUT    ? "an input"
	       : k == TALLY_KIND_FILTER ? "a filter"
					: "an output";
}

/*
 * The core's options of declaration @d (tally_instance_options()): into
 * @d itself. The plugin's are left to tally_options_fill(). Problems are
 * logged and counted in c->errors.
 */
static void conf_common(struct tally_conf *c, size_t f,
			struct tally_conf_decl *d, const char *what)
{
	const struct tally_option *common = tally_instance_options(d->kind);
	const config_setting_t *g = d->setting;
	int n = config_setting_length(g);
	unsigned errors = 0;

	if (tally_options_defaults(common, d, what) < 0)
		errors++;
	for (int i = 0; i < n; i++) {
		const config_setting_t *s = config_setting_get_elem(g, i);
		const struct tally_option *o =
			tally_options_find(common, config_setting_name(s));
		struct conf_at a = at(c, f, s);
		struct tally_opt_src src = { a.file, a.line, what,
					     &c->texts[f] };

		if (o && tally_options_apply(o, d, s, &src) < 0)
			errors++;
	}
	errors += tally_options_required(common, g, d->file, d->line, what);
	c->errors += errors;
}

/*
 * Refuse a second instance of a TALLY_INPUT_ONCE plugin: both would read
 * the same devices of the node and write the same series.
 */
static void conf_once(struct tally_conf *c, struct conf_at a,
		      const struct tally_conf_decl *d, const char *what)
{
	for (size_t i = 0; i + 1 < c->ndecls; i++) {
		const struct tally_conf_decl *o = &c->decls[i];

		if (o->plugin != d->plugin || o->kind != d->kind)
			continue;
		CONF_ERR_AT(c, a,
			    "%s: plugin '%s' takes one instance per collector, "
			    "and %s.%s (%s:%d) is one: both would read the "
			    "same devices and write the same series; send one "
			    "instance to several outputs through pipelines",
			    what, d->plugin_name, tally_kind_section(o->kind),
			    o->name, o->file, o->line);
		return;
	}
}

static void conf_instances(struct tally_conf *c, struct tally_loader *ld,
			   size_t f, enum tally_plugin_kind kind)
{
	const char *section = tally_kind_section(kind);
	config_setting_t *sec = config_lookup(&c->cfgs[f], section);
	int n;

	if (!sec)
		return;
	if (!config_setting_is_group(sec)) {
		CONF_ERR_AT(c, at(c, f, sec), "%s must be a group of instances",
			    section);
		return;
	}
	n = config_setting_length(sec);
	for (int i = 0; i < n; i++) {
		config_setting_t *s = config_setting_get_elem(sec, i);
		const char *name = config_setting_name(s);
		struct conf_at a = at(c, f, s);
		struct tally_conf_decl *d, *prev, *v;
		unsigned problems = 0;
		char what[256];

		if (!config_setting_is_group(s)) {
			CONF_ERR_AT(c, a,
				    "%s.%s must be a group: %s = { plugin = "
				    "\"...\"; };",
				    section, name, name);
			continue;
		}
		prev = conf_decl_find(c, name);
		if (prev) {
			CONF_ERR_AT(c, a,
				    "instance '%s' defined twice: here and at "
				    "%s:%d",
				    name, prev->file, prev->line);
			continue;
		}
		v = realloc(c->decls, (c->ndecls + 1) * sizeof(*v));
		if (!v) {
			CONF_ERR_AT(c, a, "out of memory");
			return;
		}
		c->decls = v;
		d = &c->decls[c->ndecls];
		*d = (struct tally_conf_decl){ .name = strdup(name),
					       .kind = kind,
					       .setting = s,
					       .text = &c->texts[f],
					       .file = a.file,
					       .line = a.line };
		if (!d->name) {
			CONF_ERR_AT(c, a, "out of memory");
			return;
		}
		c->ndecls++;
		snprintf(what, sizeof(what), "%s.%s", section, name);
		/* problems here do not hide the plugin's: all are reported */
		conf_common(c, f, d, what);
		if (!d->plugin_name)
			continue;
		d->plugin = tally_loader_get(ld, d->plugin_name);
		if (!d->plugin) {
			if (errno == ENOENT)
				CONF_ERR_AT(c, a,
					    "%s: no plugin named '%s' in the "
					    "plugin path (tallyd "
					    "--list-plugins shows them)",
					    what, d->plugin_name);
			else
				CONF_ERR_AT(c, a,
					    "%s: plugin '%s' was refused (see "
					    "above)",
					    what, d->plugin_name);
			continue;
		}
		if (d->plugin->kind != kind) {
			CONF_ERR_AT(c, a, "%s: plugin '%s' is %s, not %s", what,
				    d->plugin_name, kind_word(d->plugin->kind),
				    kind_word(kind));
			d->plugin = NULL;
			continue;
		}
		/* what it may emit; its check may narrow it from its options */
		if (kind == TALLY_KIND_INPUT)
			d->emits = d->plugin->input->emits;
		if (kind == TALLY_KIND_INPUT &&
		    (d->plugin->input->flags & TALLY_INPUT_ONCE))
			conf_once(c, a, d, what);
		/* the options, then the plugin's own check, as at start-up */
		if (tally_inst_check(c, d, &problems) < 0) {
			if (errno == ENOMEM)
				CONF_ERR_AT(c, a, "out of memory");
			else
				c->errors += problems ? problems : 1;
		}
	}
}

/* Resolve a pipeline's from/through/to list. */
static void conf_pipe_list(struct tally_conf *c, size_t f,
			   struct tally_conf_pipe *p,
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
				 p->name, key, tally_kind_section(kind));
		return;
	}
	if (config_setting_type(s) == CONFIG_TYPE_STRING) {
		n = 1;
	} else if (config_setting_type(s) == CONFIG_TYPE_ARRAY ||
		   config_setting_type(s) == CONFIG_TYPE_LIST) {
		n = config_setting_length(s);
	} else {
		CONF_ERR_AT(
			c, at(c, f, s),
			"pipelines.%s: '%s' must be a list of instance names",
			p->name, key);
		return;
	}
	if (n == 0 && mandatory) {
		CONF_ERR_AT(c, at(c, f, s), "pipelines.%s: '%s' is empty",
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
			CONF_ERR_AT(c, at(c, f, s),
				    "pipelines.%s: '%s' must be a list of "
				    "instance names",
				    p->name, key);
			continue;
		}
		name = config_setting_get_string(e);
		d = conf_decl_find(c, name);
		if (!d) {
			CONF_ERR_AT(
				c, at(c, f, s),
				"pipelines.%s: %s names unknown instance '%s'",
				p->name, key, name);
			continue;
		}
		if (d->kind != kind) {
			CONF_ERR_AT(
				c, at(c, f, s),
				"pipelines.%s: '%s' in %s is %s (defined at "
				"%s:%d), not %s",
				p->name, name, key, kind_word(d->kind), d->file,
				d->line, kind_word(kind));
			continue;
		}
		for (size_t j = 0; j < *nout; j++) {
			if ((*out)[j] == d) {
				CONF_ERR_AT(c, at(c, f, s),
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
		{ TALLY_FORMS_INTERVAL,
		  "interval records (an aggregate filter's summaries)" },
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
			if (bad == TALLY_FORMS_INTERVAL) {
				CONF_ERR(c, p->file, p->line,
					 "pipelines.%s: input '%s' through "
					 "its filters brings %s, which output "
					 "'%s' (%s) does not render: send "
					 "them to an output that does (see "
					 "tallyd --list-plugins)",
					 p->name, p->from[i]->name,
					 tally_forms_text(bad, text,
							  sizeof(text)),
					 p->to[k]->name, op->name);
				continue;
			}
			CONF_ERR(c, p->file, p->line,
				 "pipelines.%s: input '%s' may send %s, which "
				 "output '%s' (%s) does not take: have the "
				 "input leave them out (statsd: types = "
				 "[\"c\", \"g\"]) or put a filter that "
				 "turns them into totals in the pipeline's "
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
	int n;

	if (!sec)
		return;
	if (!config_setting_is_group(sec)) {
		CONF_ERR_AT(c, at(c, f, sec), "pipelines must be a group");
		return;
	}
	n = config_setting_length(sec);
	for (int i = 0; i < n; i++) {
		config_setting_t *g = config_setting_get_elem(sec, i);
		const char *name = config_setting_name(g);
		struct tally_conf_pipe *p, *v;
		int m;

		if (!config_setting_is_group(g)) {
			CONF_ERR_AT(
				c, at(c, f, g),
				"pipelines.%s must be a group: %s = { from = "
				"[...]; to = [...]; };",
				name, name);
			continue;
		}
		for (size_t j = 0; j < c->npipes; j++) {
			if (!strcmp(c->pipes[j].name, name)) {
				CONF_ERR_AT(c, at(c, f, g),
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
			const config_setting_t *e =
				config_setting_get_elem(g, k);
			const char *key = config_setting_name(e);
			struct conf_at a = at(c, f, e);
			char what[256];

			if (in_list(pipe_keys, key))
				continue;
			snprintf(what, sizeof(what), "pipelines.%s", name);
			c->errors++;
			if (tally_options_nearest(key, pipe_keys, NULL, NULL))
				tally_options_unknown(a.file, a.line, what,
						      key, pipe_keys, NULL,
						      NULL);
			else
				tally_log_conf(LOG_ERR, a.file, a.line,
					       "%s: unknown option '%s' (a "
					       "pipeline takes from, through "
					       "and to)",
					       what, key);
		}
		v = realloc(c->pipes, (c->npipes + 1) * sizeof(*v));
		if (!v)
			return;
		c->pipes = v;
		p = &c->pipes[c->npipes++];
		*p = (struct tally_conf_pipe){ .name = strdup(name),
					       .file = at(c, f, g).file,
					       .line = at(c, f, g).line };
		conf_pipe_list(c, f, p, g, "from", TALLY_KIND_INPUT, &p->from,
			       &p->nfrom);
		conf_pipe_list(c, f, p, g, "through", TALLY_KIND_FILTER,
			       &p->through, &p->nthrough);
		conf_pipe_list(c, f, p, g, "to", TALLY_KIND_OUTPUT, &p->to,
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
		near = tally_options_nearest(key, conf_sections, NULL, NULL);
		if (near)
			CONF_ERR_AT(c, at(c, f, s),
				    "unknown section '%s' (did you mean '%s'?)",
				    key, near);
		else
			CONF_ERR_AT(c, at(c, f, s),
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
	for (enum tally_plugin_kind k = TALLY_KIND_INPUT;
	     k <= TALLY_KIND_OUTPUT; k++) {
		for (size_t f = 0; f < c->nfiles; f++)
			conf_instances(c, ld, f, k);
	}
	for (size_t f = 0; f < c->nfiles; f++)
		conf_pipelines(c, f);
	for (size_t i = 0; i < c->ndecls; i++) {
		if (!c->decls[i].used && c->decls[i].plugin)
			CONF_WARN(c, c->decls[i].file, c->decls[i].line,
				  "%s.%s is not used by any pipeline",
				  tally_kind_section(c->decls[i].kind),
				  c->decls[i].name);
	}
	if (c->npipes == 0 && c->errors == 0)
		CONF_WARN(c, path, 0,
			  "no pipelines: nothing will be collected");
	return c;
out_fail:
	tally_conf_free(c);
	return NULL;
}

/*
 * Whether two settings say the same thing: same type and value, the same
 * elements in the same order (lists and arrays) or the same members in any
 * order (groups). Where they come from (file, line) does not matter. Different
 * types are different even when the values compare equal ("10" and "10L"): a
 * reload then replaces an instance it could have kept, which is safe.
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
		tally_options_free(tally_instance_options(c->decls[i].kind),
				   &c->decls[i]);
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
		tally_conf_text_free(&c->texts[i]);
		free(c->paths[i]);
	}
	free(c->cfgs);
	free(c->texts);
	free(c->paths);
	free(c->log);
	free(c->log_level);
	free(c->output_dir);
	free(c->user);
	free(c->group);
	tally_labels_unref(c->labels);
	free(c);
}
