/* SPDX-License-Identifier: MIT */
/*
 * contrib/fuzz/report_join_fuzz.c - libFuzzer target for the report's join
 * (plugins/output/report/join.c)
 *
 * The input is a program: its first line is parsed as a device list
 * (rj_parse_devices()), the rest as 12-byte operations: an opcode, then
 * its operands (a sample of a metric and device at a time and value, an
 * occurrence of one of a few regions on a rank, a device list, a
 * computation). Small limits make every cap, the downsampling and the
 * folding run. Checked: a result's shares and coverages are within
 * bounds, rows are sorted by time. Build: make fuzz. Run:
 *	contrib/fuzz/report_join_fuzz -max_total_time=20 CORPUS_DIR
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "../../plugins/output/report/join.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static const char *const names[] = { "a", "b", "c", "main", "io" };

static void check(const struct rj_result *r)
{
	for (size_t i = 0; i < r->nrows; i++) {
		const struct rj_row *w = &r->rows[i];

		if (!(w->share >= 0 && w->share <= 1.0000001) ||
		    (!isnan(w->node.coverage) &&
		     !(w->node.coverage >= 0 && w->node.coverage <= 1.0000001)))
			abort();
		if (i && w->name && r->rows[i - 1].total_s < w->total_s)
			abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct rj_opts o = {
		.max_samples = 8, .max_regions = 6, .max_windows = 16, .top = 3
	};
	const uint8_t *nl = memchr(data, '\n', size);
	struct rj *j;
	char line[64];
	size_t n = nl ? (size_t)(nl - data) : size;

	if (n >= sizeof(line))
		n = sizeof(line) - 1;
	memcpy(line, data, n);
	line[n] = 0;
	rj_parse_devices(line);
	if (!nl)
		return 0;
	size -= (size_t)(nl + 1 - data);
	data = nl + 1;
	j = rj_new(&o);
	if (!j)
		return 0;
	for (; size >= 12; data += 12, size -= 12) {
		int64_t t = (int64_t)data[2] << 24 | (int64_t)data[3] << 16 |
			    (int64_t)data[4] << 8 | data[5];
		int64_t u = (int64_t)data[6] << 8 | data[7];
		const struct rj_result *r;

		t *= 1000000;
		switch (data[0] % 4) {
		case 0:
			rj_sample(j, (enum rj_metric)(data[1] % 6),
				  (int)(data[1] >> 4) - 1, t,
				  (double)(int8_t)data[8] * 1.5,
				  (data[9] % 8) * 0.5);
			break;
		case 1:
			rj_occurrence(j, (int32_t)(data[1] % 5) - 1,
				      names[data[8] % 5], t,
				      t + (u - 100) * 1000000, data[9] & 1);
			break;
		case 2:
			rj_rank_devices(j, (int32_t)(data[1] % 5) - 1,
					(uint64_t)data[8] << 56 | data[9]);
			break;
		default:
			r = rj_compute(j, t, t + u * 1000000);
			if (r)
				check(r);
		}
	}
	rj_free(j);
	return 0;
}
