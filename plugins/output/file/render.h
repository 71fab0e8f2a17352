/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/file/render.h - the file output's formats, as pure code
 *
 * Records become bytes here and nowhere else: JSON lines, Chrome trace
 * event JSON and CSV. Nothing in this file does I/O; file.c decides where
 * the bytes go (which file, when, rotation) and calls these. The unit test
 * t/unit/file-render.c compares their output byte for byte.
 *
 * A file's life, as the renderer sees it:
 *	file_render_open()    its first bytes (Chrome: the JSON object's
 *	                      head with the clock anchor; JSON lines: an
 *	                      anchor line; CSV: nothing, file.c writes the
 *	                      header line into an empty file)
 *	file_render_record()  one line per record (or a few: Chrome metadata
 *	                      for a process seen first in this file; CSV
 *	                      histogram buckets)
 *	file_render_close()   its last bytes (Chrome: the regions still open,
 *	                      up to now and marked open, then the closing
 *	                      brackets)
 * Every Chrome file so stands alone: its own head, anchor and metadata.
 *
 * Not thread-safe: one renderer per output instance, on the loop thread.
 */
#ifndef FILE_RENDER_H
#define FILE_RENDER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/labels.h>
#include <tally/record.h>

/**
 * struct fbuf - a growable byte buffer
 * @data: the bytes (not NUL-terminated), NULL while empty
 * @len:  bytes held
 * @cap:  bytes allocated
 * Zero-initialise; release with fbuf_free().
 */
struct fbuf {
	char *data;
	size_t len;
	size_t cap;
};

/* Make room for @n more bytes. Return: 0, or -1 with errno = ENOMEM. */
int fbuf_reserve(struct fbuf *b, size_t n);
/* Append @n bytes. Return: 0, or -1 with errno = ENOMEM. */
int fbuf_add(struct fbuf *b, const void *p, size_t n);
void fbuf_free(struct fbuf *b);

/** enum file_format - the format option's choices, in its order */
enum file_format {
	FILE_FMT_JSONL = 0,
	FILE_FMT_CHROME,
	FILE_FMT_CSV,
};

/* The CSV header line. */
#define FILE_CSV_HEADER "timestamp,name,labels,value\n"

/**
 * struct file_render_opts - what a renderer is made with
 * @format:         enum file_format
 * @hostname:       this node's name (the clock anchor, the counter track)
 * @self_pid:       Chrome pid of the counter track (tallyd's own pid)
 * @origin_ns:      Chrome "ts" 0, CLOCK_REALTIME ns: every ts is
 *                  microseconds from it (an absolute epoch in µs does
 *                  not fit a double's precision to the ns)
 * @labels:         static labels added to every record's (borrowed, may be
 *                  NULL); a record's own label of the same key wins
 * @max_open_spans: Chrome: spans tracked until their end, to write those
 *                  still open when a file closes; beyond it a begin is
 *                  not tracked (its end is still written)
 * @max_processes:  Chrome: processes and threads named per file
 */
struct file_render_opts {
	enum file_format format;
	const char *hostname;
	uint32_t self_pid;
	int64_t origin_ns;
	const struct tally_labels *labels;
	size_t max_open_spans;
	size_t max_processes;
};

/**
 * struct file_render_stats - counts for self-metrics (monotonic)
 * @untracked:   Chrome: begins not tracked (max_open_spans reached)
 * @unnamed:     Chrome: processes or threads not named (max_processes)
 */
struct file_render_stats {
	uint64_t untracked;
	uint64_t unnamed;
};

struct file_render;

/**
 * file_render_new() - a renderer
 * Return: the renderer, or NULL with errno = ENOMEM.
 */
struct file_render *file_render_new(const struct file_render_opts *o);
void file_render_free(struct file_render *r);

/**
 * file_render_open() - the first bytes of a new file, appended to @out
 * @real_ns: CLOCK_REALTIME now (the anchor), @mono_ns: CLOCK_MONOTONIC now
 * @restate: Chrome: the file was cut short under us (truncated): name
 *           again the processes already named in it, since what follows
 *           may refer to them; false for a new file
 * Return: 0, or -1 with errno = ENOMEM (@out may hold part of it).
 */
int file_render_open(struct file_render *r, struct fbuf *out, int64_t real_ns,
		     int64_t mono_ns, bool restate);

/**
 * file_render_record() - append @rec, rendered, to @out
 * @why: set to a static drop reason when the record is not written
 *       ("span_in_csv": CSV holds metrics only; "not_finite": a Chrome
 *       counter cannot hold NaN or infinities; "unknown_kind")
 * Return: 1 written, 0 not written (*@why says why), -1 with errno =
 * ENOMEM (@out may then hold part of a record: cut it back).
 */
int file_render_record(struct file_render *r, struct fbuf *out,
		       const struct tally_record *rec, const char **why);

/**
 * file_render_forget() - a record that will not be written (dropped) still
 * ends its span: a Chrome file must not show it open at its close
 */
void file_render_forget(struct file_render *r, const struct tally_record *rec);

/**
 * file_render_close() - the last bytes of a file, appended to @out
 * @now_ns: CLOCK_REALTIME: where regions still open end, marked open
 * Return: 0, or -1 with errno = ENOMEM.
 */
int file_render_close(struct file_render *r, struct fbuf *out, int64_t now_ns);

/** file_render_stats() - the renderer's counters */
const struct file_render_stats *file_render_stats(const struct file_render *r);

#endif /* FILE_RENDER_H */
