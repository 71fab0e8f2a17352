/* SPDX-License-Identifier: MIT */
/*
 * contrib/fuzz/influxdb_line_fuzz.c - libFuzzer target for the InfluxDB
 * line protocol escaping (plugins/output/influxdb/line.c)
 *
 * Each input is one string, escaped as a measurement, as a key and as a
 * string field. Checked: read back with InfluxDB 1.x's rules (a backslash
 * takes the next byte with it), an escaped name or key has no bare
 * separator, no newline and no trailing backslash, so the line it goes
 * into cannot break; a quoted string ends at its closing quote only.
 * Build: make fuzz. Run:
 *	contrib/fuzz/influxdb_line_fuzz -max_total_time=20 CORPUS_DIR
 */
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../plugins/output/influxdb/line.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_name(const struct influx_buf *b, const char *seps)
{
	for (size_t i = 0; i < b->len; i++) {
		if (b->p[i] == '\n' || b->p[i] == '\r')
			abort();
		if (b->p[i] == '\\') {
			if (i + 1 == b->len)
				abort(); /* trailing backslash */
			i++;
			continue;
		}
		if (strchr(seps, b->p[i]))
			abort();
	}
}

static void check_string(const struct influx_buf *b)
{
	if (b->len < 2 || b->p[0] != '"' || b->p[b->len - 1] != '"')
		abort();
	for (size_t i = 1; i + 1 < b->len; i++) {
		if (b->p[i] == '\\') {
			if (i + 2 == b->len)
				abort(); /* would escape the closing quote */
			i++;
			continue;
		}
		if (b->p[i] == '"')
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);
	struct influx_buf b = { 0 };

	if (!s)
		return 0;
	memcpy(s, data, size);
	s[size] = '\0';
	if (influx_escape_measurement(&b, s) == 0)
		check_name(&b, ", ");
	b.len = 0;
	if (influx_escape_key(&b, s) == 0)
		check_name(&b, ",= ");
	b.len = 0;
	if (influx_escape_string(&b, s) == 0)
		check_string(&b);
	influx_buf_free(&b);
	free(s);
	return 0;
}
