/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/file/file.c - records into a file: JSON lines, Chrome
 * trace event JSON, CSV
 *
 * The loop glue around render.c: write() renders records into a bounded
 * queue of byte segments in memory and returns; the bytes reach the file
 * from a timer (every flush_interval, or at once when 64 KiB wait), with
 * append-only write(2)s, never from write() itself. A segment ends where a
 * file ends (rotation by size, reopen on SIGHUP): the writer closes the
 * file there, moves it aside and opens the next one, whose segment starts
 * with its own head (Chrome: anchor and metadata), so every file stands
 * alone.
 *
 * A file that cannot be opened or written (missing directory, read-only,
 * full disk) keeps its bytes queued up to buffer_size and is retried on
 * every flush; records beyond are dropped and counted, nothing else in
 * tallyd waits for it. flush (shutdown) and fini fsync the file; fini
 * closes a Chrome file properly (regions still open written up to then).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <event2/event.h>

#include <tally/mode.h>
#include <tally/plugin.h>

#include "render.h"

/* Pending bytes that make the writer run at once rather than on its timer. */
#define FILE_KICK_BYTES 65536

/* Seconds between attempts to resolve a path tally_output_path() refused. */
#define FILE_RESOLVE_RETRY_NS (30 * 1000000000LL)

/* What the writer does once a segment is written. */
enum seg_after {
	SEG_GO_ON = 0,	/* more of the same file follows */
	SEG_ROTATE,	/* close, move aside (PATH.1...), open a new file */
	SEG_REOPEN,	/* close, open the path again (SIGHUP) */
};

struct fseg {
	struct fseg *next;
	struct fbuf b;
	size_t off;		/* bytes of b already written */
	size_t records;		/* records rendered into b */
	enum seg_after after;
};

struct file {
	/* options */
	char *path_opt;
	int format;
	uint64_t max_size;
	int64_t max_files;
	uint64_t buffer_size;
	double flush_interval;
	int64_t max_open_spans;
	/* state */
	struct tally_instance *inst;
	char *path;		/* resolved; NULL while it cannot be */
	int64_t resolve_at;	/* next attempt to resolve it (monotonic) */
	int fd;
	uint64_t file_size;	/* bytes in the open file, as written */
	/* a write failed: the next open carries on in the same file */
	bool resume;
	dev_t dev;		/* the file last opened */
	ino_t ino;
	size_t file_records;	/* records in the file the tail goes to */
	struct fseg *head, *tail;
	size_t pending;		/* bytes queued, not yet written */
	struct file_render *r;
	struct file_render_stats seen;
	struct event *timer, *kick;
	struct timeval tv;	/* flush_interval */
	bool warned_spans;	/* csv: spans dropped, said once */
	int last_errno;		/* of the last failure logged, 0 once fine */
};

static const char *const file_formats[] = { "jsonl", "chrome", "csv", NULL };

static struct fseg *seg_new(struct file *f)
{
	struct fseg *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	if (f->tail)
		f->tail->next = s;
	else
		f->head = s;
	f->tail = s;
	return s;
}

static void seg_free(struct fseg *s)
{
	fbuf_free(&s->b);
	free(s);
}

/* Log a failure once until the next success (or a different failure). */
static void file_fail(struct file *f, const char *what, int err)
{
	if (f->last_errno != err)
		tally_log(f->inst, LOG_ERR,
			  "%s %s: %s: records are held (up to buffer_size "
			  "%llu bytes) and the file tried again every "
			  "flush_interval; beyond that they are dropped and "
			  "counted",
			  what, f->path ? f->path : f->path_opt, strerror(err),
			  (unsigned long long)f->buffer_size);
	f->last_errno = err;
}

static void file_ok(struct file *f)
{
	if (f->last_errno)
		tally_log(f->inst, LOG_NOTICE, "writing to %s again", f->path);
	f->last_errno = 0;
}

/* Move PATH aside: PATH.N-1 to PATH.N, ..., PATH to PATH.1. */
static void file_shift(struct file *f)
{
	size_t n = strlen(f->path) + 24;
	char *a = malloc(n), *b = malloc(n);

	if (!a || !b)
		goto out_free;
	for (int64_t i = f->max_files - 1; i >= 1; i--) {
		snprintf(a, n, "%s.%lld", f->path, (long long)i);
		snprintf(b, n, "%s.%lld", f->path, (long long)i + 1);
		if (rename(a, b) < 0 && errno != ENOENT)
			tally_log(f->inst, LOG_WARNING, "rename %s to %s: %s",
				  a, b, strerror(errno));
	}
	snprintf(b, n, "%s.1", f->path);
	if (rename(f->path, b) < 0 && errno != ENOENT)
		tally_log(f->inst, LOG_WARNING, "rename %s to %s: %s", f->path,
			  b, strerror(errno));
out_free:
	free(a);
	free(b);
}

/* Write all of @p to the open file. Return: 0, or -1 with errno. */
static int file_put(struct file *f, const char *p, size_t n, size_t *done)
{
	while (*done < n) {
		ssize_t w = write(f->fd, p + *done, n - *done);

		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return -1;
		*done += (size_t)w;
		f->file_size += (uint64_t)w;
	}
	return 0;
}

/*
 * Open the path for appending. A Chrome file must begin with its head: an
 * existing non-empty one (a previous run's, or nobody moved it at SIGHUP)
 * is moved aside first. An empty CSV file gets its header line.
 */
static int file_open(struct file *f)
{
	int flags = O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC;
	struct stat st;
	size_t done = 0;

	if (!f->path) {
		int64_t now = tally_monotonic_ns();

		if (now < f->resolve_at) {
			errno = ENOENT;
			return -1;
		}
		f->resolve_at = now + FILE_RESOLVE_RETRY_NS;
		f->path = tally_output_path(f->inst, f->path_opt);
		if (!f->path)
			return -1;
	}
	f->fd = open(f->path, flags, 0666);
	/*
	 * Our own file, closed after a failed write (a full disk): write on
	 * where it stopped, rather than move it aside as a stranger's.
	 */
	if (f->fd >= 0 && f->format == FILE_FMT_CHROME &&
	    fstat(f->fd, &st) == 0 && st.st_size > 0 &&
	    !(f->resume && st.st_dev == f->dev && st.st_ino == f->ino)) {
		close(f->fd);
		file_shift(f);
		f->fd = open(f->path, flags | O_TRUNC, 0666);
	}
	if (f->fd < 0) {
		tally_count_event(f->inst, "open_errors", 1);
		file_fail(f, "open", errno);
		return -1;
	}
	if (fstat(f->fd, &st) < 0) {
		st.st_size = 0;
		st.st_dev = 0;
		st.st_ino = 0;
	}
	f->file_size = (uint64_t)st.st_size;
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	f->resume = false;
	if (f->format == FILE_FMT_CSV && st.st_size == 0 &&
	    file_put(f, FILE_CSV_HEADER, sizeof(FILE_CSV_HEADER) - 1, &done) <
		    0) {
		/* the header is written again at the next open */
		tally_count_event(f->inst, "write_errors", 1);
		file_fail(f, "write", errno);
		close(f->fd);
		f->fd = -1;
		return -1;
	}
	return 0;
}

static void file_close(struct file *f, bool sync)
{
	if (f->fd < 0)
		return;
	if (sync && fdatasync(f->fd) < 0 && errno != EINVAL)
		tally_log(f->inst, LOG_WARNING, "fsync %s: %s", f->path,
			  strerror(errno));
	if (close(f->fd) < 0)
		tally_log(f->inst, LOG_WARNING, "close %s: %s", f->path,
			  strerror(errno));
	f->fd = -1;
}

/*
 * The file was cut short under us (logrotate's copytruncate): whatever we
 * write next lands at its start. A Chrome file cannot be continued that
 * way; it gets a new head (and its processes named again) so that it
 * stays valid JSON from its first byte.
 */
static int file_truncated(struct file *f, uint64_t size)
{
	struct fbuf head = { 0 };
	size_t done = 0;
	int ret = 0;

	tally_count_event(f->inst, "truncated", 1);
	if (f->format != FILE_FMT_CHROME) {
		tally_log(f->inst, LOG_NOTICE,
			  "%s was truncated (logrotate copytruncate?): "
			  "writing on at its new end",
			  f->path);
		f->file_size = size;
		if (f->format == FILE_FMT_CSV && size == 0)
			ret = file_put(f, FILE_CSV_HEADER,
				       sizeof(FILE_CSV_HEADER) - 1, &done);
		return ret;
	}
	tally_log(f->inst, LOG_ERR,
		  "%s was truncated under tallyd (logrotate copytruncate?): "
		  "copytruncate cannot keep a chrome file valid JSON, and "
		  "what was copied ends unclosed; rotate it with logrotate's "
		  "create and a postrotate SIGHUP instead (doc/plugins/"
		  "file.md). Starting the file anew with its own head",
		  f->path);
	f->file_size = size;
	if (file_render_open(f->r, &head, tally_now_ns(), tally_monotonic_ns(),
			     true) < 0 ||
	    file_put(f, head.data, head.len, &done) < 0)
		ret = -1;
	fbuf_free(&head);
	return ret;
}

/*
 * The writer: queued segments to their files, in order, until done or a
 * failure (kept for the next call). Return: 0 when everything is written,
 * -1 with errno otherwise.
 */
static int file_drain(struct file *f)
{
	bool checked = false;
	struct stat st;

	while (f->head) {
		struct fseg *s = f->head;
		size_t before = s->off;

		if (s->off == s->b.len && s->after == SEG_GO_ON &&
		    s == f->tail)
			break;
		if (f->fd < 0 && file_open(f) < 0)
			return -1;
		if (!checked && fstat(f->fd, &st) == 0 &&
		    (uint64_t)st.st_size < f->file_size) {
			if (file_truncated(f, (uint64_t)st.st_size) < 0)
				goto out_write;
		}
		checked = true;
		if (file_put(f, s->b.data, s->b.len, &s->off) < 0) {
			f->pending -= s->off - before;
			goto out_write;
		}
		f->pending -= s->off - before;
		file_ok(f);
		if (s->after == SEG_GO_ON && s == f->tail) {
			s->b.len = s->off = s->records = 0;
			break;
		}
		if (s->after != SEG_GO_ON) {
			file_close(f, false);
			if (s->after == SEG_ROTATE) {
				file_shift(f);
				tally_count_event(f->inst, "rotations", 1);
			}
			checked = false;
		}
		f->head = s->next;
		if (!f->head)
			f->tail = NULL;
		seg_free(s);
	}
	return 0;

out_write:
	tally_count_event(f->inst, "write_errors", 1);
	file_fail(f, "write", errno);
	/* the file is opened again next time: a full disk may be freed,
	 * a file removed under us is made anew */
	file_close(f, false);
	f->resume = true;
	return -1;
}

/* Run the writer in flush_interval, unless it is due already. */
static void file_arm(struct file *f)
{
	if (!evtimer_pending(f->timer, NULL))
		evtimer_add(f->timer, &f->tv);
}

/*
 * The writer's timer: armed while bytes wait (a failing file is so tried
 * again every flush_interval), never when there is nothing to write, so
 * that an idle output does not wake tallyd up.
 */
static void file_timer(evutil_socket_t fd, short what, void *arg)
{
	struct file *f = arg;

	if (file_drain(f) < 0 && f->pending)
		file_arm(f);
}

/*
 * A new tail segment for the next file, beginning with that file's head.
 * The current tail ends the current file (@after says how).
 * Return: 0, or -1 with errno = ENOMEM (nothing changed).
 */
static int file_next(struct file *f, enum seg_after after, int64_t now)
{
	struct fseg *t = f->tail;
	size_t mark = t ? t->b.len : 0;
	struct fbuf next = { 0 };

	if (t && file_render_close(f->r, &t->b, now) < 0)
		goto out_nomem;
	if (file_render_open(f->r, &next, now, tally_monotonic_ns(), false) <
	    0)
		goto out_nomem;
	if (!seg_new(f))
		goto out_nomem;
	f->tail->b = next;
	if (t) {
		t->after = after;
		f->pending += t->b.len - mark;
	}
	f->pending += next.len;
	f->file_records = 0;
	return 0;

out_nomem:
	if (t)
		t->b.len = mark;
	fbuf_free(&next);
	errno = ENOMEM;
	return -1;
}

/* Bytes in the file the tail segment goes to. */
static uint64_t file_tail_bytes(const struct file *f)
{
	const struct fseg *t = f->tail;

	if (t == f->head && f->fd >= 0)
		return f->file_size + (t->b.len - t->off);
	return t->b.len - t->off;
}

static void file_count_stats(struct file *f)
{
	const struct file_render_stats *st = file_render_stats(f->r);

	if (st->untracked != f->seen.untracked)
		tally_count_event(f->inst, "spans_untracked",
				  st->untracked - f->seen.untracked);
	if (st->unnamed != f->seen.unnamed)
		tally_count_event(f->inst, "processes_unnamed",
				  st->unnamed - f->seen.unnamed);
	f->seen = *st;
}

static int file_write(struct tally_instance *inst, void *state,
		      struct tally_batch *b)
{
	struct file *f = state;
	size_t n = tally_batch_count(b);

	for (size_t i = 0; i < n; i++) {
		const struct tally_record *rec = tally_batch_at(b, i);
		const char *why;
		size_t mark;
		int rc;

		if (f->pending >= f->buffer_size) {
			file_render_forget(f->r, rec);
			tally_count_drop(inst, "buffer_full", 1);
			continue;
		}
		if (f->max_size && f->file_records &&
		    file_tail_bytes(f) >= f->max_size &&
		    file_next(f, SEG_ROTATE, tally_now_ns()) < 0) {
			tally_count_drop(inst, "no_memory", 1);
			continue;
		}
		mark = f->tail->b.len;
		rc = file_render_record(f->r, &f->tail->b, rec, &why);
		if (rc < 0) {
			f->tail->b.len = mark;
			file_render_forget(f->r, rec);
			tally_count_drop(inst, "no_memory", 1);
			continue;
		}
		if (rc == 0) {
			tally_count_drop(inst, why, 1);
			if (!f->warned_spans && !strcmp(why, "span_in_csv"))
				tally_log(inst, LOG_WARNING,
					  "spans are not written to a csv "
					  "file (metrics only): they are "
					  "dropped and counted; send them to "
					  "a jsonl or chrome file");
			f->warned_spans |= !strcmp(why, "span_in_csv");
			continue;
		}
		f->pending += f->tail->b.len - mark;
		f->tail->records++;
		f->file_records++;
	}
	file_count_stats(f);
	if (f->pending >= FILE_KICK_BYTES && !f->last_errno)
		event_active(f->kick, EV_TIMEOUT, 0);
	else if (f->pending)
		file_arm(f);
	return 0;
}

static int file_flush(struct tally_instance *inst, void *state)
{
	struct file *f = state;

	if (file_drain(f) < 0)
		return -1;
	if (f->fd >= 0 && fdatasync(f->fd) < 0 && errno != EINVAL)
		return -1;
	return 0;
}

/*
 * SIGHUP: logrotate moved the file away (its `create` then made a new,
 * empty one): end the old file (a Chrome file is closed properly, in the
 * file moved away) and write on in a new one. A file nobody moved is left
 * alone, so that a SIGHUP that reloads the configuration does not cut a
 * Chrome trace in two.
 */
static int file_reopen(struct tally_instance *inst, void *state)
{
	struct file *f = state;
	struct stat a, b;

	if (f->fd >= 0 && f->head == f->tail && f->path &&
	    fstat(f->fd, &a) == 0 && stat(f->path, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino)
		return 0;
	if (f->format == FILE_FMT_CHROME) {
		if (file_next(f, SEG_REOPEN, tally_now_ns()) < 0)
			return -1;
	} else {
		f->tail->after = SEG_REOPEN;
		if (!seg_new(f)) {
			f->tail->after = SEG_GO_ON;
			errno = ENOMEM;
			return -1;
		}
		f->file_records = 0;
	}
	if (file_drain(f) < 0 && f->last_errno)
		return 0; /* logged, and retried on the next flush */
	tally_log(inst, LOG_INFO, "reopened %s", f->path);
	return 0;
}

/* end op: what was sent so far is in the file (the end of a wrapped
 * command, or SIGUSR1); fini closes it. */
static int file_end(struct tally_instance *inst, void *state,
		    enum tally_end why)
{
	struct file *f = state;

	/* a file that cannot be written is logged already */
	if (file_drain(f) < 0 && !f->last_errno)
		return -1;
	return 0;
}

/* Options only: no file is touched (--check-config). */
static int file_check(struct tally_instance *inst, void *state)
{
	struct file *f = state;
	size_t n = f->path_opt ? strlen(f->path_opt) : 0;
	int rc = 0;

	if (!n || f->path_opt[n - 1] == '/') {
		tally_log(inst, LOG_ERR,
			  "path \"%s\": a file name is needed (relative: in "
			  "the output directory)",
			  f->path_opt ? f->path_opt : "");
		rc = -1;
	}
	if (f->max_size && f->max_size < 4096) {
		tally_log(inst, LOG_ERR,
			  "max_size %llu: at least 4096 bytes, or 0 to never "
			  "rotate",
			  (unsigned long long)f->max_size);
		rc = -1;
	}
	if (rc < 0)
		errno = EINVAL;
	return rc;
}

static int file_init(struct tally_instance *inst, void *state)
{
	struct file *f = state;
	struct event_base *base = tally_instance_base(inst);
	char host[256] = "";
	int64_t now = tally_now_ns();
	struct file_render_opts ro = {
		.format = (enum file_format)f->format,
		.hostname = host,
		.self_pid = (uint32_t)getpid(),
		/* a whole second: ts 0 reads as a round time */
		.origin_ns = now - now % 1000000000,
		.labels = tally_output_labels(inst),
		.max_open_spans = (size_t)f->max_open_spans,
		.max_processes = 65536,
	};

	f->inst = inst;
	f->fd = -1;
	if (gethostname(host, sizeof(host) - 1) < 0)
		snprintf(host, sizeof(host), "localhost");
	f->r = file_render_new(&ro);
	if (!f->r)
		goto out_nomem;
	if (file_next(f, SEG_GO_ON, now) < 0)
		goto out_nomem;
	f->tv = tally_timeval(f->flush_interval);
	f->timer = evtimer_new(base, file_timer, f);
	f->kick = event_new(base, -1, 0, file_timer, f);
	if (!f->timer || !f->kick)
		goto out_nomem;
	/* a path that cannot be opened yet is no reason not to start */
	f->path = tally_output_path(inst, f->path_opt);
	if (!f->path)
		f->resolve_at = tally_monotonic_ns() + FILE_RESOLVE_RETRY_NS;
	else if (file_open(f) == 0)
		tally_log(inst, LOG_INFO, "writing %s to %s",
			  file_formats[f->format], f->path);
	if (f->fd >= 0 && f->file_size > 0 && f->format != FILE_FMT_CHROME)
		f->file_records = 1; /* appended to: it may rotate at once */
	if (f->pending)
		file_arm(f); /* a Chrome file's head: there at once */
	return 0;

out_nomem:
	tally_log(inst, LOG_ERR, "out of memory");
	if (f->kick)
		event_free(f->kick);
	if (f->timer)
		event_free(f->timer);
	f->kick = f->timer = NULL;
	while (f->head) {
		struct fseg *s = f->head;

		f->head = s->next;
		seg_free(s);
	}
	f->tail = NULL;
	file_render_free(f->r);
	f->r = NULL;
	errno = ENOMEM;
	return -1;
}

static void file_fini(struct tally_instance *inst, void *state)
{
	struct file *f = state;
	size_t lost = 0;

	if (f->kick)
		event_free(f->kick);
	if (f->timer)
		event_free(f->timer);
	if (f->tail) {
		size_t mark = f->tail->b.len;

		if (file_render_close(f->r, &f->tail->b, tally_now_ns()) < 0)
			tally_log(inst, LOG_ERR, "out of memory closing %s",
				  f->path ? f->path : f->path_opt);
		f->pending += f->tail->b.len - mark;
	}
	if (file_drain(f) < 0) {
		for (struct fseg *s = f->head; s; s = s->next)
			lost += s->records;
		tally_count_drop(inst, "write_failed", lost);
		tally_log(inst, LOG_ERR,
			  "%s: %zu records not written at exit (%s)",
			  f->path ? f->path : f->path_opt, lost,
			  strerror(f->last_errno ? f->last_errno : errno));
	}
	file_close(f, true);
	while (f->head) {
		struct fseg *s = f->head;

		f->head = s->next;
		seg_free(s);
	}
	file_render_free(f->r);
	free(f->path);
}

static const struct tally_option file_options[] = {
	TALLY_OPT_STRING_REQ("path", struct file, path_opt,
			     "file to write; relative: in the output "
			     "directory (tallyd --user: the job's)"),
	TALLY_OPT_ENUM("format", struct file, format, "jsonl", file_formats,
		       "jsonl (metrics and spans, one JSON object a line), "
		       "chrome (trace event JSON for Perfetto, metrics as "
		       "counter tracks) or csv (metrics: "
		       "timestamp,name,labels,value)"),
	TALLY_OPT_SIZE("max_size", struct file, max_size, "0", 0, 1e18,
		       "start a new file once this size is reached (\"64MiB\"); "
		       "the full one becomes PATH.1, PATH.1 PATH.2...; 0: "
		       "never"),
	TALLY_OPT_INT("max_files", struct file, max_files, "5", 1, 1000,
		      "files moved aside kept (PATH.1 to PATH.N); the oldest "
		      "goes"),
	TALLY_OPT_SIZE("buffer_size", struct file, buffer_size, "4MiB", 65536,
		       1e12,
		       "bytes held in memory while the file cannot be written "
		       "(full disk, missing directory); records beyond are "
		       "dropped and counted"),
	TALLY_OPT_DURATION("flush_interval", struct file, flush_interval, "1s",
			   0.01, 3600,
			   "how often held records are written (at once from "
			   "64 KiB)"),
	TALLY_OPT_INT("max_open_spans", struct file, max_open_spans, "100000",
		      1, 100000000,
		      "chrome: spans tracked until their end, so that those "
		      "still open when a file closes are written; beyond it "
		      "only ends are"),
	TALLY_OPT_END
};

static const struct tally_output_ops file_ops = {
	.check = file_check,
	.init = file_init,
	.write = file_write,
	.flush = file_flush,
	.fini = file_fini,
	.reopen = file_reopen,
	.end = file_end,
};

TALLY_PLUGIN_OUTPUT(file,
		    "records into a file: JSON lines, Chrome trace JSON "
		    "(Perfetto) or CSV, rotated by size, reopened on SIGHUP",
		    struct file, file_options, &file_ops);
