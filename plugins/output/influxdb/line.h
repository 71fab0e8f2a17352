/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/influxdb/line.h - InfluxDB line protocol: escaping and
 * rendering of records into points, pure (no I/O, no loop), so that it is
 * unit-tested and fuzzed on its own
 *
 * One point per line:
 *     measurement[,tag=value...] field=value[,field=value...] timestamp
 *
 * Escaping (what InfluxDB 1.x's parser takes back exactly; checked against
 * the real server by t/t5001-influxdb.t):
 *   measurement:               ',' and ' ' get a backslash
 *   tag keys, tag values and
 *   field keys:                ',', '=' and ' ' get a backslash
 *   string field values:       '"' and '\' get a backslash, inside quotes
 * A run of backslashes that ends a measurement, tag key, tag value or
 * field key, or stands before one of the characters escaped there, cannot
 * be written so that InfluxDB 1.x reads it back (its parser takes "\\" as
 * two backslashes and "\\," as "\\" plus a separator): such a run is left
 * out. Every other backslash is written and stored as it is. Newline and
 * carriage return end a line: in names, tags and field keys they become
 * spaces (escaped); in string field values they are kept (quoted).
 * Empty tag values are left out (InfluxDB has no empty tag); a tag key or
 * measurement that is empty after this is left out (tag) or drops the
 * record (measurement, counted).
 *
 * Numbers: gauge, counter and info values, sums, durations and double
 * attributes are floats, written to round-trip exactly ("%.15g", or
 * "%.17g" where that is needed); counts, bucket counts, integer
 * attributes and the span's start are integers ("<n>i"), so that a field
 * keeps one type for ever (InfluxDB refuses a point whose field changes
 * type). NaN and +/-Inf cannot be stored: such a field is left out; a
 * point with no field left is dropped, counted.
 *
 * Thread-safety: none needed: a renderer is used by one thread.
 */
#ifndef TALLY_INFLUX_LINE_H
#define TALLY_INFLUX_LINE_H

#include <stddef.h>
#include <stdint.h>

#include <tally/labels.h>
#include <tally/record.h>

/** enum influx_precision - the unit of timestamps written */
enum influx_precision {
	INFLUX_NS = 0,
	INFLUX_US,
	INFLUX_MS,
	INFLUX_S,
};

/**
 * struct influx_buf - a growable text buffer
 * @p:   the bytes (not NUL-terminated); owned, free() it
 * @len: bytes used
 * @cap: bytes allocated
 */
struct influx_buf {
	char *p;
	size_t len;
	size_t cap;
};

/**
 * struct influx_render - settings and counters of a renderer
 * @statics:      static labels of the output (tally_output_labels(): the
 *                host tag and global.labels), sorted by key; borrowed
 * @nstatics:     their number
 * @precision:    unit of the timestamps
 * @span_measurement: measurement of span points
 * @points:       points written (counter, added to)
 * @non_finite:   records dropped: no finite value left
 * @non_finite_fields: NaN/Inf fields left out of points still written
 * @invalid:      records dropped: empty measurement after escaping
 * @no_begin:     span ends dropped: their begin time is unknown
 */
struct influx_render {
	const struct tally_label *statics;
	size_t nstatics;
	enum influx_precision precision;
	const char *span_measurement;
	uint64_t points;
	uint64_t non_finite;
	uint64_t non_finite_fields;
	uint64_t invalid;
	uint64_t no_begin;
};

/**
 * influx_escape_measurement() - append @s escaped as a measurement
 * influx_escape_key() - append @s escaped as a tag key, tag value or
 * field key
 * influx_escape_string() - append @s as a quoted string field value
 * Return: 0, or -1 with errno = ENOMEM (@b then holds a partial write:
 * cut it back to its former length).
 */
int influx_escape_measurement(struct influx_buf *b, const char *s);
int influx_escape_key(struct influx_buf *b, const char *s);
int influx_escape_string(struct influx_buf *b, const char *s);

/**
 * influx_format_float() - a finite double as InfluxDB reads it back
 * exactly: the shortest of "%.15g"/"%.17g" that round-trips
 * @out: room for 32 bytes
 * Return: the length written (NUL-terminated).
 */
size_t influx_format_float(char *out, double v);

/**
 * influx_render_record() - append the point of one record, with its
 * newline
 * @r:   renderer: settings, and counters it adds to
 * @b:   buffer
 * @rec: a metric sample (cumulative: counter, gauge, info, histogram,
 *       summary) or a span event (an end becomes a point; a begin none)
 *
 * Metric: measurement = the name; tags = the record's labels plus the
 * static ones (the record's win); fields: counter, gauge: value=<float>;
 * info: value=1; histogram: count=<n>i, sum=<float> and one integer field
 * per bucket named by its bound ("0.1", "+Inf"), as Telegraf's
 * prometheus input (metric_version 1) writes them; summary: count, sum
 * and one float field per quantile ("0.5", "0.99").
 * Span end: measurement @r->span_measurement; tags trace, region (the
 * span's name), rank (unless unknown), depth, the span's attributes
 * (jobid) and the static labels; fields duration=<seconds, float>,
 * start=<begin, ns since the epoch, integer>i, pid=<n>i and the span's
 * typed attributes (integers "i", doubles, booleans, strings); the
 * timestamp is the span's end.
 * Return: 1 (a point written), 0 (none: a begin, or a record dropped and
 * counted in @r), -1 with errno = ENOMEM (@b is as it was).
 */
int influx_render_record(struct influx_render *r, struct influx_buf *b,
			 const struct tally_record *rec);

/** influx_buf_free() - free the bytes; the buffer is empty after */
void influx_buf_free(struct influx_buf *b);

#endif /* TALLY_INFLUX_LINE_H */
