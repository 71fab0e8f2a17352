/* SPDX-License-Identifier: MIT */
/*
 * core/loader.c - find, open and check plugins
 *
 * Plugins are loaded on demand, by name, from the first directory of the
 * search path that has one (PATH semantics: --plugin-dir, TALLY_PLUGIN_PATH,
 * global.plugin_path, then the install dir). Loading only what the
 * configuration names keeps the footprint small: a GPU plugin pulls in a
 * large vendor library that a host-only config should never map.
 *
 * Every refusal is one log line naming the file and the reason.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <ltdl.h>

#include "core-internal.h"

struct loaded {
	const struct tally_plugin *desc;
	lt_dlhandle handle;
	char *path;
};

struct tally_loader {
	char **dirs;
	size_t ndirs;
	struct loaded *loaded;
	size_t nloaded;
};

static int ltdl_users;

/* The search path: the added directories, then always the install dir. */
static const char *loader_dir(const struct tally_loader *ld, size_t i)
{
	if (i < ld->ndirs)
		return ld->dirs[i];
	return i == ld->ndirs ? TALLY_PLUGINDIR : NULL;
}

struct tally_loader *tally_loader_new(void)
{
	struct tally_loader *ld = calloc(1, sizeof(*ld));

	if (!ld) {
		errno = ENOMEM;
		return NULL;
	}
	if (ltdl_users++ == 0 && lt_dlinit() != 0) {
		ltdl_users--;
		free(ld);
		errno = EIO;
		return NULL;
	}
	return ld;
}

void tally_loader_free(struct tally_loader *ld)
{
	if (!ld)
		return;
	for (size_t i = 0; i < ld->nloaded; i++) {
		/*
		 * Sanitizer builds keep plugins mapped so leak reports can
		 * still name the plugin's functions.
		 */
		if (!getenv("TALLY_NO_DLCLOSE"))
			lt_dlclose(ld->loaded[i].handle);
		free(ld->loaded[i].path);
	}
	free(ld->loaded);
	for (size_t i = 0; i < ld->ndirs; i++)
		free(ld->dirs[i]);
	free(ld->dirs);
	free(ld);
	if (--ltdl_users == 0)
		lt_dlexit();
}

int tally_loader_add_path(struct tally_loader *ld, const char *dirs)
{
	const char *p = dirs;

	while (p && *p) {
		size_t len = strcspn(p, ":");
		char **v;

		if (len) {
			v = realloc(ld->dirs, (ld->ndirs + 1) * sizeof(*v));
			if (!v)
				goto out_nomem;
			ld->dirs = v;
			ld->dirs[ld->ndirs] = strndup(p, len);
			if (!ld->dirs[ld->ndirs])
				goto out_nomem;
			ld->ndirs++;
		}
		p += len;
		if (*p == ':')
			p++;
	}
	return 0;
out_nomem:
	errno = ENOMEM;
	return -1;
}

static bool name_valid(const char *name)
{
	if (!*name || strlen(name) > 64)
		return false;
	for (const char *p = name; *p; p++) {
		if (!((*p >= 'a' && *p <= 'z') || (*p >= '0' && *p <= '9') ||
		      *p == '_'))
			return false;
	}
	return true;
}

int tally_plugin_check(const struct tally_plugin *p, const char *want_name,
		       const char **why)
{
	if (p->abi != TALLY_PLUGIN_ABI) {
		*why = "ABI version mismatch (rebuild the plugin against this "
		       "tally)";
		return -1;
	}
	if (p->size != sizeof(struct tally_plugin)) {
		*why = "descriptor size mismatch (rebuild the plugin against "
		       "this tally)";
		return -1;
	}
	if (!p->name || (want_name && strcmp(p->name, want_name))) {
		*why = "plugin name does not match the file name";
		return -1;
	}
	if (!p->options) {
		*why = "missing option table";
		return -1;
	}
	switch (p->kind) {
	case TALLY_KIND_INPUT:
		if (!p->input || (!p->input->read && !p->input->start))
			goto out_op;
		if (p->input->handoff && !p->input->discard) {
			*why = "op handoff without op discard";
			return -1;
		}
		return 0;
	case TALLY_KIND_FILTER:
		if (!p->filter || !p->filter->process)
			goto out_op;
		return 0;
	case TALLY_KIND_OUTPUT:
		if (!p->output || !p->output->write)
			goto out_op;
		return 0;
	}
	*why = "unknown plugin kind";
	return -1;
out_op:
	*why = p->kind == TALLY_KIND_INPUT ? "missing mandatory op read or start"
	       : p->kind == TALLY_KIND_FILTER ? "missing mandatory op process"
					      : "missing mandatory op write";
	return -1;
}

/* The file a base path resolves to, for messages: .la first, as ltdl does. */
static bool plugin_file(const char *dir, const char *name, char *out,
			size_t len)
{
	static const char *const exts[] = { ".la", ".so" };

	for (size_t i = 0; i < 2; i++) {
		snprintf(out, len, "%s/%s%s", dir, name, exts[i]);
		if (access(out, R_OK) == 0)
			return true;
	}
	return false;
}

static const struct loaded *loader_find(struct tally_loader *ld,
					const char *name)
{
	for (size_t i = 0; i < ld->nloaded; i++) {
		if (!strcmp(ld->loaded[i].desc->name, name))
			return &ld->loaded[i];
	}
	return NULL;
}

/* Open @file, check it and register it. Logs and returns NULL on refusal. */
static const struct tally_plugin *loader_open(struct tally_loader *ld,
					      const char *file,
					      const char *name)
{
	const struct tally_plugin *p;
	const struct loaded *dup;
	const char *why;
	struct loaded *v;
	lt_dlhandle h;
	char *path;

	h = lt_dlopen(file);
	if (!h) {
		const char *err = lt_dlerror();

		/* ltdl says "file not found" for a file it cannot parse */
		tally_log(NULL, LOG_ERR,
			  "%s: refused: cannot load: %s", file,
			  !err || !strcmp(err, "file not found")
				  ? "not a loadable shared object or libtool "
				    "archive"
				  : err);
		errno = EINVAL;
		return NULL;
	}
	p = lt_dlsym(h, TALLY_PLUGIN_SYMBOL);
	if (!p) {
		why = "no tally_plugin descriptor";
		goto out_refuse;
	}
	if (tally_plugin_check(p, name, &why) < 0)
		goto out_refuse;
	dup = loader_find(ld, p->name);
	if (dup) {
		tally_log(NULL, LOG_ERR,
			  "%s: refused: duplicate plugin name '%s' (already "
			  "loaded from %s)",
			  file, p->name, dup->path);
		lt_dlclose(h);
		errno = EEXIST;
		return NULL;
	}
	path = strdup(file);
	v = realloc(ld->loaded, (ld->nloaded + 1) * sizeof(*v));
	if (!path || !v) {
		free(path);
		if (v)
			ld->loaded = v;
		lt_dlclose(h);
		errno = ENOMEM;
		return NULL;
	}
	ld->loaded = v;
	ld->loaded[ld->nloaded++] = (struct loaded){ .desc = p, .handle = h,
						     .path = path };
	return p;
out_refuse:
	tally_log(NULL, LOG_ERR, "%s: refused: %s", file, why);
	lt_dlclose(h);
	errno = EINVAL;
	return NULL;
}

const struct tally_plugin *tally_loader_get(struct tally_loader *ld,
					    const char *name)
{
	const struct loaded *l = loader_find(ld, name);
	char file[PATH_MAX];

	if (l)
		return l->desc;
	if (!name_valid(name)) {
		errno = ENOENT;
		return NULL;
	}
	for (size_t i = 0; loader_dir(ld, i); i++) {
		if (plugin_file(loader_dir(ld, i), name, file, sizeof(file)))
			return loader_open(ld, file, name);
	}
	errno = ENOENT;
	return NULL;
}

static const char *kind_name(enum tally_plugin_kind k)
{
	return k == TALLY_KIND_INPUT    ? "input"
	       : k == TALLY_KIND_FILTER ? "filter"
	       : k == TALLY_KIND_OUTPUT ? "output"
					: "?";
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Plugin names in @dir (from *.la, or *.so without a .la), sorted. */
static size_t dir_plugins(const char *dir, char ***out)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	char **v = NULL;
	size_t n = 0;

	if (!d)
		return 0;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char **nv, *name;

		if (len < 4 || (strcmp(de->d_name + len - 3, ".la") &&
				strcmp(de->d_name + len - 3, ".so")))
			continue;
		name = strndup(de->d_name, len - 3);
		if (!name)
			break;
		for (size_t i = 0; i < n; i++) {
			if (!strcmp(v[i], name)) {
				free(name);
				name = NULL;
				break;
			}
		}
		if (!name)
			continue;
		nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			free(name);
			break;
		}
		v = nv;
		v[n++] = name;
	}
	closedir(d);
	if (n)
		qsort(v, n, sizeof(*v), cmp_str);
	*out = v;
	return n;
}

int tally_loader_list(struct tally_loader *ld, FILE *out)
{
	char file[PATH_MAX];
	int refused = 0;

	for (size_t i = 0; loader_dir(ld, i); i++) {
		char **names = NULL;
		size_t n = dir_plugins(loader_dir(ld, i), &names);

		for (size_t j = 0; j < n; j++) {
			const struct tally_plugin *p;

			if (!plugin_file(loader_dir(ld, i), names[j], file,
					 sizeof(file)))
				continue;
			p = loader_open(ld, file, names[j]);
			if (p)
				fprintf(out, "%-12s %-7s %s\n", p->name,
					kind_name(p->kind), p->description);
			else
				refused++;
			free(names[j]);
		}
		free(names);
	}
	return refused ? -1 : 0;
}

int tally_loader_describe(struct tally_loader *ld, const char *name,
			  FILE *out)
{
	const struct tally_plugin *p = tally_loader_get(ld, name);
	unsigned emits;
	char forms[256];

	if (!p)
		return -1;
	emits = p->kind == TALLY_KIND_INPUT    ? p->input->emits
		: p->kind == TALLY_KIND_FILTER ? p->filter->emits
					       : 0;
	fprintf(out, "%s (%s): %s\n", p->name, kind_name(p->kind),
		p->description);
	/* the non-cumulative samples it sends, absorbs or takes */
	if (emits)
		fprintf(out, "sends: %s\n",
			tally_forms_text(emits, forms, sizeof(forms)));
	if (p->kind == TALLY_KIND_FILTER && p->filter->absorbs)
		fprintf(out, "aggregates: %s\n",
			tally_forms_text(p->filter->absorbs, forms,
					 sizeof(forms)));
	if (p->kind == TALLY_KIND_OUTPUT && p->output->accepts)
		fprintf(out, "takes: %s\n",
			tally_forms_text(p->output->accepts, forms,
					 sizeof(forms)));
	fputs("\noptions:\n", out);
	/* every instance's, then the plugin's own */
	tally_options_describe(tally_instance_options(p->kind), out);
	tally_options_describe(p->options, out);
	return 0;
}
