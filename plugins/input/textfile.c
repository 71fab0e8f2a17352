/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/textfile.c - metrics from *.prom files, as node_exporter's
 * textfile collector reads them
 *
 * Job prolog/epilog scripts and cron jobs write *.prom files (text
 * exposition format) into a directory; every tick this input reads each of
 * them with the core's parser (tally_expo_parse()) and passes their series
 * on, with node_exporter's node_textfile_mtime_seconds{file} and
 * node_textfile_scrape_error, so that dashboards and alerts written for
 * node_exporter keep working. Its rules, checked against node_exporter 1.5:
 *
 *   - files are read in name order; only names ending in ".prom";
 *   - a file that cannot be read, is not a regular file, is bigger than
 *     max_file_size, does not parse, or holds a sample with a timestamp is
 *     skipped whole (never half-read), logged with the line and reason and
 *     counted once per version of the file (its mtime and size), and sets
 *     node_textfile_scrape_error to 1 on every tick; it gets no
 *     node_textfile_mtime_seconds;
 *   - a family without HELP gets "Metric read from FILE[, FILE...]", the
 *     files (full paths) that hold it;
 *   - across files, the first file's family wins: a later series of the
 *     same name with another type or another HELP, or with the same labels
 *     as a series already taken, is dropped, logged and counted; that does
 *     not set node_textfile_scrape_error (node_exporter's registry drops
 *     them the same way); so are series of node_textfile_mtime_seconds
 *     and node_textfile_scrape_error, the input's own (reserved_name);
 *   - every record is marked as read from its file
 *     (tally_batch_set_origin()): the prometheus output keeps another
 *     input's series of the same name and labels over it (procfs'
 *     node_load1 over a file's), and names the file when it drops it.
 *
 * A file being rewritten in place may be read half-written: as for
 * node_exporter, writers should write a temporary file and rename it.
 *
 * The reads are file I/O on a directory that may be on a network file
 * system: the input is blocking (its read runs on a worker thread), so a
 * slow directory never stalls the loop. Problems of a file are logged once
 * per version of it (its mtime and size), counted on every tick.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tally/exposition.h>
#include <tally/hash.h>
#include <tally/io.h>
#include <tally/plugin.h>

/**
 * struct textfile_seen - what was last logged about one file
 * @name:  file name in the directory
 * @mtime: its mtime (ns) when logged
 * @size:  its size when logged
 * @what:  what was logged (a static string), NULL: nothing wrong
 * @conflicts: the kinds of series conflict logged (TF_CONFLICT_* bits)
 *         for the version of the file of mtime @conflict_mtime (s)
 *
 * Problems are logged when a file (or what is wrong with it) changes,
 * not on every tick.
 */
struct textfile_seen {
	char *name;
	int64_t mtime;
	int64_t size;
	const char *what;
	unsigned conflicts;
	int64_t conflict_mtime;
};

struct textfile {
	/* options */
	char *directory;
	uint64_t max_file_size;
	/* state, touched by one read at a time (the core runs one per
	 * instance) */
	struct tally_instance *inst;
	struct textfile_seen *seen;
	size_t nseen;
	char *dir_err; /* the directory's last logged error, or NULL */
};

/* One file read and parsed this tick. */
struct tf_file {
	char *path;
	struct tally_batch *b;
	int64_t mtime_s;
};

/* A family across files: the first file's type and help win. */
struct tf_family {
	struct tally_hnode node;
	const char *name;	/* in a file batch */
	enum tally_metric_type type;
	const char *help;	/* effective: own HELP or the default */
	char *files;		/* ", "-joined paths, for the default */
	const char *dflt;	/* the default help, in the output batch */
};

/* A series taken: (name, interned labels). */
struct tf_series {
	struct tally_hnode node;
	const char *name;
	const struct tally_labels *labels;
};

struct tf_tick {
	struct tally_htable fams, series;
	struct tf_family **famv;
	size_t nfam;
	struct tf_series **serv;
	size_t nser;
};

static const char textfile_mtime[] = "node_textfile_mtime_seconds";
static const char textfile_error[] = "node_textfile_scrape_error";
static const char textfile_mtime_help[] =
	"Unixtime mtime of textfiles successfully read.";
static const char textfile_error_help[] =
	"1 if there was an error opening or reading a file, 0 otherwise";

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static struct textfile_seen *seen_get(struct textfile *t, const char *name)
{
	struct textfile_seen *s;

	for (size_t i = 0; i < t->nseen; i++)
		if (strcmp(t->seen[i].name, name) == 0)
			return &t->seen[i];
	s = realloc(t->seen, (t->nseen + 1) * sizeof(*s));
	if (!s)
		return NULL;
	t->seen = s;
	s = &t->seen[t->nseen];
	memset(s, 0, sizeof(*s));
	s->name = strdup(name);
	if (!s->name)
		return NULL;
	t->nseen++;
	return s;
}

/*
 * Whether to log @what about file @name now: when the file or the
 * problem changed since the last line. @st may be NULL (not stat'ed).
 */
static bool seen_news(struct textfile *t, const char *name,
		      const struct stat *st, const char *what)
{
	struct textfile_seen *s = seen_get(t, name);
	int64_t mt = st ? (int64_t)st->st_mtim.tv_sec * 1000000000 +
				  st->st_mtim.tv_nsec
			: -1;
	int64_t sz = st ? (int64_t)st->st_size : -1;
	bool news;

	if (!s)
		return true;
	news = s->what != what || s->mtime != mt || s->size != sz;
	s->what = what;
	s->mtime = mt;
	s->size = sz;
	return news && what;
}

/* Kinds of series conflict between files, and their drop reasons. */
enum { TF_TYPE, TF_HELP, TF_DUPLICATE, TF_RESERVED, TF_NCONFLICTS };
static const char *const tf_conflict_reason[TF_NCONFLICTS] = {
	"type_conflict",
	"help_conflict",
	"duplicate_series",
	"reserved_name",
};
static const char *const tf_conflict_text[TF_NCONFLICTS] = {
	"an earlier file has the family with another TYPE",
	"an earlier file has the family with another HELP",
	"an earlier file has the same series",
	"the textfile input's own family: a file may not write it",
};

/* Whether to log conflict @kind of file @name: once per version of the
 * file (its mtime) and kind. */
static bool conflict_news(struct textfile *t, const char *name,
			  int64_t mtime_s, int kind)
{
	struct textfile_seen *s = seen_get(t, name);

	if (!s)
		return true;
	if (s->conflict_mtime != mtime_s) {
		s->conflict_mtime = mtime_s;
		s->conflicts = 0;
	}
	if (s->conflicts & (1u << kind))
		return false;
	s->conflicts |= 1u << kind;
	return true;
}

/* Forget files that are gone, so that the list does not grow forever. */
static void seen_prune(struct textfile *t, char **names, size_t n)
{
	size_t j = 0;

	for (size_t i = 0; i < t->nseen; i++) {
		if (bsearch(&t->seen[i].name, names, n, sizeof(*names),
			    name_cmp)) {
			t->seen[j++] = t->seen[i];
		} else {
			free(t->seen[i].name);
		}
	}
	t->nseen = j;
}

/*
 * Read file @name of @dirfd whole into @out, at most @max bytes.
 * Return: 0, or -1 with errno set (EFBIG: too big, EINVAL: not a regular
 * file), *@why the reason counted.
 */
static int textfile_slurp(int dirfd, const char *name, uint64_t max,
			  struct stat *st, char **out, size_t *len,
			  const char **why)
{
	char *buf = NULL;
	size_t cap, n = 0;
	int fd, e;

	*why = "unreadable_file";
	fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -1;
	if (fstat(fd, st) < 0)
		goto out_close;
	if (!S_ISREG(st->st_mode)) {
		errno = EINVAL;
		goto out_close;
	}
	if ((uint64_t)st->st_size > max) {
		*why = "file_too_big";
		errno = EFBIG;
		goto out_close;
	}
	cap = (size_t)st->st_size + 1;
	buf = malloc(cap + 1);
	if (!buf)
		goto out_close;
	/* up to the end of the file, which may have grown since fstat */
	for (;;) {
		ssize_t r;

		if (n == cap) {
			char *nb;

			if ((uint64_t)cap > max) {
				*why = "file_too_big";
				errno = EFBIG;
				goto out_close;
			}
			cap *= 2;
			nb = realloc(buf, cap + 1);
			if (!nb)
				goto out_close;
			buf = nb;
		}
		r = read(fd, buf + n, cap - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			goto out_close;
		if (r == 0)
			break;
		n += (size_t)r;
	}
	if (n > max) {
		*why = "file_too_big";
		errno = EFBIG;
		goto out_close;
	}
	close(fd);
	*out = buf;
	*len = n;
	return 0;

out_close:
	e = errno;
	free(buf);
	close(fd);
	errno = e;
	return -1;
}

/* Read and parse one file; NULL (logged and counted) when it is skipped. */
static struct tally_batch *textfile_file(struct textfile *t, int dirfd,
					 const char *name, const char *path,
					 int64_t *mtime_s)
{
	struct tally_expo_error err;
	struct tally_batch *b;
	const char *why;
	struct stat st;
	char *text = NULL, esc[PATH_MAX], msg[sizeof(err.msg) * 4];
	size_t len = 0;

	/* file names and the file's text go into log lines escaped */
	tally_log_peer_text(esc, sizeof(esc), path, strlen(path));

	memset(&st, 0, sizeof(st));
	if (textfile_slurp(dirfd, name, t->max_file_size, &st, &text, &len,
			   &why) < 0) {
		int e = errno;

		/* one skip per version of the file, not one per tick */
		if (seen_news(t, name, st.st_mode ? &st : NULL, why)) {
			tally_count_drop(t->inst, why, 1);
			if (e == EFBIG)
				tally_log_about(t->inst, LOG_WARNING, path,
					  "%s: bigger than max_file_size "
					  "(%llu bytes): skipped",
					  esc,
					  (unsigned long long)t->max_file_size);
			else
				tally_log_about(t->inst, LOG_WARNING, path,
					  "%s: %s: skipped", esc,
					  e == EINVAL ? "not a regular file"
						      : strerror(e));
		}
		return NULL;
	}
	b = tally_batch_new();
	if (!b) {
		free(text);
		tally_count_drop(t->inst, "nomem", 1);
		return NULL;
	}
	if (tally_expo_parse(b, text, len,
			     TALLY_EXPO_PARSE_NO_TIMESTAMPS |
				     TALLY_EXPO_PARSE_FINAL_NEWLINE,
			     &err) < 0) {
		int e = errno;

		why = strstr(err.msg, "timestamp") ? "timestamps"
						   : "malformed_file";
		if (e == ENOMEM)
			why = "nomem";
		/* one skip per version of the file, not one per tick */
		if (seen_news(t, name, &st, why) || e == ENOMEM) {
			tally_count_drop(t->inst, why, 1);
			tally_log_peer_text(msg, sizeof(msg), err.msg,
					    strlen(err.msg));
			tally_log_about(t->inst, LOG_WARNING, path,
				  "%s:%u: %s: the whole file is skipped", esc,
				  err.line,
				  e == ENOMEM ? "out of memory" : msg);
		}
		tally_batch_unref(b);
		free(text);
		return NULL;
	}
	free(text);
	seen_news(t, name, &st, NULL);
	*mtime_s = (int64_t)st.st_mtim.tv_sec;
	return b;
}

static struct tf_family *fam_find(struct tf_tick *k, const char *name,
				  uint64_t h)
{
	struct tally_hnode *p;

	tally_htable_for_each_hash(&k->fams, h, p)
	{
		struct tf_family *f =
			tally_container_of(p, struct tf_family, node);

		if (strcmp(f->name, name) == 0)
			return f;
	}
	return NULL;
}

/* Note that @path holds family @m->name (first one: its type and help). */
static int fam_note(struct tf_tick *k, const struct tally_metric *m,
		    const char *path)
{
	uint64_t h = tally_hash_str(TALLY_HASH_SEED, m->name);
	struct tf_family *f = fam_find(k, m->name, h), **v;
	size_t n, pl = strlen(path);
	char *files;

	if (f) {
		/* one mention per file: files are walked one at a time */
		n = strlen(f->files);
		if (n >= pl && strcmp(f->files + n - pl, path) == 0 &&
		    (n == pl || f->files[n - pl - 1] == ' '))
			return 0;
		files = realloc(f->files, n + 2 + pl + 1);
		if (!files)
			return -1;
		memcpy(files + n, ", ", 2);
		memcpy(files + n + 2, path, pl + 1);
		f->files = files;
		return 0;
	}
	f = calloc(1, sizeof(*f));
	v = realloc(k->famv, (k->nfam + 1) * sizeof(*v));
	if (v)
		k->famv = v;
	if (!f || !v || tally_htable_reserve(&k->fams) < 0)
		goto out_free;
	f->files = strdup(path);
	if (!f->files)
		goto out_free;
	f->name = m->name;
	f->type = m->type;
	f->help = m->help;
	f->node.hash = h;
	tally_htable_insert(&k->fams, &f->node);
	k->famv[k->nfam++] = f;
	return 0;

out_free:
	free(f);
	return -1;
}

/* Whether (@name, @ls) was taken already; if not, it is now. */
static int series_taken(struct tf_tick *k, const char *name,
			const struct tally_labels *ls)
{
	uint64_t h = tally_hash_str(TALLY_HASH_SEED, name) ^
		     tally_hash_mix((uint64_t)(uintptr_t)ls);
	struct tally_hnode *p;
	struct tf_series *s, **v;

	tally_htable_for_each_hash(&k->series, h, p)
	{
		s = tally_container_of(p, struct tf_series, node);
		if (s->labels == ls && strcmp(s->name, name) == 0)
			return 1;
	}
	s = calloc(1, sizeof(*s));
	v = realloc(k->serv, (k->nser + 1) * sizeof(*v));
	if (v)
		k->serv = v;
	if (!s || !v || tally_htable_reserve(&k->series) < 0) {
		free(s);
		return -1;
	}
	s->name = name;
	s->labels = ls;
	s->node.hash = h;
	tally_htable_insert(&k->series, &s->node);
	k->serv[k->nser++] = s;
	return 0;
}

static void tick_free(struct tf_tick *k)
{
	for (size_t i = 0; i < k->nfam; i++) {
		free(k->famv[i]->files);
		free(k->famv[i]);
	}
	for (size_t i = 0; i < k->nser; i++)
		free(k->serv[i]);
	free(k->famv);
	free(k->serv);
	tally_htable_fini(&k->fams);
	tally_htable_fini(&k->series);
}

static bool help_eq(const char *a, const char *b)
{
	return a == b || (a && b && strcmp(a, b) == 0);
}

/*
 * Pass the records of @f on into @out, as node_exporter's registry would
 * gather them: a series whose family came first with another type or
 * help, or that was taken already, is dropped.
 */
static int textfile_merge(struct textfile *t, struct tf_tick *k,
			  struct tf_file *f, const char *name,
			  struct tally_batch *out)
{
	const char *origin = NULL;

	for (size_t i = 0; i < tally_batch_count(f->b); i++) {
		const struct tally_metric *m = &tally_batch_at(f->b, i)->metric;
		struct tf_family *fam =
			fam_find(k, m->name,
				 tally_hash_str(TALLY_HASH_SEED, m->name));
		struct tally_record *r;
		int rc, why = -1;

		if (!fam)
			continue; /* never: noted before */
		if (!fam->dflt) {
			char *d;

			if (asprintf(&d, "Metric read from %s", fam->files) < 0)
				return -1;
			fam->dflt = tally_batch_strdup(out, d);
			free(d);
			if (!fam->dflt)
				return -1;
			if (!fam->help)
				fam->help = fam->dflt;
		}
		if (strcmp(m->name, textfile_mtime) == 0 ||
		    strcmp(m->name, textfile_error) == 0)
			why = TF_RESERVED;
		else if (fam->type != m->type)
			why = TF_TYPE;
		else if (!help_eq(fam->help, m->help ? m->help : fam->dflt))
			why = TF_HELP;
		else if ((rc = series_taken(k, m->name, m->labels)) < 0)
			return -1;
		else if (rc)
			why = TF_DUPLICATE;
		if (why >= 0) {
			tally_count_drop(t->inst, tf_conflict_reason[why], 1);
			if (conflict_news(t, name, f->mtime_s, why)) {
				char esc[PATH_MAX];

				tally_log_peer_text(esc, sizeof(esc), f->path,
						    strlen(f->path));
				tally_log_about(t->inst, LOG_WARNING, f->path,
					  "%s: %s: %s: its series dropped "
					  "(logged once per version of the "
					  "file)",
					  esc, m->name,
					  tf_conflict_text[why]);
			}
			continue;
		}
		if (!origin) {
			origin = tally_batch_strdup(out, f->path);
			if (!origin)
				return -1;
		}
		r = tally_batch_append_from(out, f->b, i);
		if (!r)
			return -1;
		if (!m->help)
			r->metric.help = fam->dflt;
		/* read for others: another input's series wins over it */
		if (tally_batch_set_origin(out, tally_batch_count(out) - 1,
					   origin) < 0)
			return -1;
	}
	return 0;
}

/* The *.prom names of @dirfd, sorted; NULL with errno on failure. */
static char **textfile_names(int dirfd, size_t *n)
{
	DIR *d;
	struct dirent *de;
	char **v = NULL, **nv;
	size_t cap = 0;
	int fd = dup(dirfd);

	*n = 0;
	if (fd < 0)
		return NULL;
	d = fdopendir(fd);
	if (!d) {
		close(fd);
		return NULL;
	}
	while ((de = readdir(d))) {
		size_t l = strlen(de->d_name);

		if (l < 5 || strcmp(de->d_name + l - 5, ".prom") != 0)
			continue;
		if (*n == cap) {
			cap = cap ? cap * 2 : 16;
			nv = realloc(v, cap * sizeof(*v));
			if (!nv)
				goto out_free;
			v = nv;
		}
		v[*n] = strdup(de->d_name);
		if (!v[*n])
			goto out_free;
		(*n)++;
	}
	closedir(d);
	if (*n)
		qsort(v, *n, sizeof(*v), name_cmp);
	else if (!v)
		v = calloc(1, sizeof(*v));
	return v;

out_free:
	closedir(d);
	for (size_t i = 0; i < *n; i++)
		free(v[i]);
	free(v);
	errno = ENOMEM;
	return NULL;
}

static int textfile_gauge(struct tally_batch *out, const char *name,
			  const char *help, struct tally_labels *ls, double v)
{
	return tally_batch_add_metric(out, TALLY_GAUGE, name, help, ls, v, 0);
}

static int textfile_read(struct tally_instance *inst, void *state,
			 struct tally_batch *out)
{
	struct textfile *t = state;
	struct tf_tick k = { 0 };
	struct tf_file *files = NULL;
	size_t nnames = 0, nf = 0;
	char **names = NULL;
	bool errored = false;
	int dirfd, rc = -1;

	t->inst = inst;
	dirfd = open(t->directory, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dirfd >= 0)
		names = textfile_names(dirfd, &nnames);
	if (!names) {
		const char *e = strerror(errno);

		errored = true;
		tally_count_drop(inst, "directory_error", 1);
		if (!t->dir_err || strcmp(t->dir_err, e) != 0) {
			tally_log(inst, LOG_WARNING,
				  "directory %s: %s: no textfile metrics "
				  "(node_textfile_scrape_error 1)",
				  t->directory, e);
			free(t->dir_err);
			t->dir_err = strdup(e);
		}
		goto out_status;
	}
	free(t->dir_err);
	t->dir_err = NULL;
	seen_prune(t, names, nnames);
	files = calloc(nnames ? nnames : 1, sizeof(*files));
	if (!files)
		goto out_nomem;
	for (size_t i = 0; i < nnames; i++) {
		struct tf_file *f = &files[nf];

		if (asprintf(&f->path, "%s/%s", t->directory, names[i]) < 0) {
			f->path = NULL;
			goto out_nomem;
		}
		f->b = textfile_file(t, dirfd, names[i], f->path, &f->mtime_s);
		if (!f->b) {
			errored = true;
			free(f->path);
			f->path = NULL;
			continue;
		}
		/* the families each file holds, for the default HELP */
		for (size_t j = 0; j < tally_batch_count(f->b); j++)
			if (fam_note(&k, &tally_batch_at(f->b, j)->metric,
				     f->path) < 0)
				goto out_nomem;
		nf++;
	}
	for (size_t i = 0; i < nf; i++) {
		const char *base = strrchr(files[i].path, '/') + 1;

		if (textfile_merge(t, &k, &files[i], base, out) < 0)
			goto out_nomem;
	}
	for (size_t i = 0; i < nf; i++) {
		struct tally_labels *ls =
			tally_labels_newv("file", files[i].path, NULL);

		if (!ls ||
		    textfile_gauge(out, textfile_mtime, textfile_mtime_help, ls,
				   (double)files[i].mtime_s) < 0) {
			tally_labels_unref(ls);
			goto out_nomem;
		}
		tally_labels_unref(ls);
	}
out_status:
	rc = textfile_gauge(out, textfile_error, textfile_error_help, NULL,
			    errored ? 1 : 0);
	goto out_free;

out_nomem:
	tally_log(inst, LOG_ERR, "out of memory reading %s", t->directory);
	errno = ENOMEM;
	rc = -1;
out_free:
	for (size_t i = 0; files && i < nnames; i++) {
		free(files[i].path);
		tally_batch_unref(files[i].b);
	}
	free(files);
	for (size_t i = 0; i < nnames; i++)
		free(names[i]);
	free(names);
	tick_free(&k);
	if (dirfd >= 0)
		close(dirfd);
	return rc;
}

static int textfile_check(struct tally_instance *inst, void *state)
{
	struct textfile *t = state;

	if (!t->directory || t->directory[0] != '/') {
		tally_log(inst, LOG_ERR,
			  "directory \"%s\": an absolute path is needed",
			  t->directory ? t->directory : "");
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static void textfile_fini(struct tally_instance *inst, void *state)
{
	struct textfile *t = state;

	for (size_t i = 0; i < t->nseen; i++)
		free(t->seen[i].name);
	free(t->seen);
	free(t->dir_err);
}

static const struct tally_option textfile_options[] = {
	TALLY_OPT_STRING("directory", struct textfile, directory,
			 "/var/lib/prometheus/node-exporter",
			 "directory whose *.prom files are read (node_exporter's "
			 "--collector.textfile.directory; Debian's default)"),
	TALLY_OPT_SIZE("max_file_size", struct textfile, max_file_size,
		       "16MiB", 1, (double)(1ULL << 40),
		       "a bigger file is skipped (and counted, file_too_big)"),
	TALLY_OPT_END,
};

static const struct tally_input_ops textfile_ops = {
	.check = textfile_check,
	.read = textfile_read,
	.fini = textfile_fini,
	/* file I/O, maybe on a network file system: on a worker thread */
	.flags = TALLY_INPUT_BLOCKING,
};

TALLY_PLUGIN_INPUT(textfile,
		   "metrics from the *.prom files of a directory, as "
		   "node_exporter's textfile collector",
		   struct textfile, textfile_options, &textfile_ops);
