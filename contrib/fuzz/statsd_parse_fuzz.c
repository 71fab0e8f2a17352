/* SPDX-License-Identifier: MIT */
/*
 * contrib/fuzz/statsd_parse_fuzz.c - libFuzzer target for the statsd line
 * parser (plugins/input/statsd/parse.c)
 *
 * Each input is one datagram. Every line is parsed; a line taken is checked
 * for what the input relies on: strings inside the line, a finite value, a
 * rate in (0, 1], tags within bounds. Build: make fuzz. Run:
 *	contrib/fuzz/statsd_parse_fuzz -max_total_time=20 CORPUS_DIR
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include "../../plugins/input/statsd/parse.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(const char *p, size_t n, const char *line, size_t len)
{
	return p >= line && p + n <= line + len;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *buf = (const char *)data, *line;
	size_t pos = 0, n;

	while ((n = statsd_next_line(buf, size, &pos, &line))) {
		struct statsd_line l;

		if (statsd_parse_line(line, n, &l) != STATSD_OK)
			continue;
		if (!inside(l.name, l.name_len, line, n) || !l.name_len ||
		    !isfinite(l.value) || !(l.rate > 0 && l.rate <= 1) ||
		    l.ntags > STATSD_MAX_TAGS ||
		    (l.type == STATSD_SET &&
		     !inside(l.member, l.member_len, line, n)))
			abort();
		for (size_t i = 0; i < l.ntags; i++)
			if (!l.tags[i].key_len ||
			    !inside(l.tags[i].key, l.tags[i].key_len, line,
				    n) ||
			    !inside(l.tags[i].value, l.tags[i].value_len, line,
				    n))
				abort();
	}
	return 0;
}
