/* SPDX-License-Identifier: MIT */
/*
 * core/jobid.c - one rule for a batch job id, wherever tally shows it
 *
 * Compiled into libtally (tallyd, the jobs input) and into libtally-trace
 * (the client finds its job's collector by the same directory name), so
 * that the collector and its applications cannot disagree on an id.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <tally/hash.h>
#include <tally/mode.h>
#include <tally/utf8.h>

size_t tally_jobid_bound(const char *id, size_t len, char *buf)
{
	size_t keep = len;

	if (len > TALLY_JOBID_MAX) {
		/* "-" and 8 hex digits; whole UTF-8 characters kept */
		keep = TALLY_JOBID_MAX - 9;
		if (tally_utf8_valid(id, len))
			keep = tally_utf8_clip(id, len, keep);
	}
	memcpy(buf, id, keep);
	buf[keep] = '\0';
	if (keep < len) /* cut: a hash of the whole id tells them apart */
		keep += (size_t)snprintf(
			buf + keep, TALLY_JOBID_MAX + 1 - keep, "-%08x",
			(unsigned)(tally_hash_bytes(TALLY_HASH_SEED, id, len) &
				   0xffffffffu));
	return keep;
}

size_t tally_jobid_path(const char *id, char *buf, size_t size)
{
	char out[TALLY_JOBID_MAX + 1];
	size_t n = tally_jobid_bound(id, strlen(id), out);

	for (size_t i = 0; i < n; i++) {
		unsigned char c = (unsigned char)out[i];

		if (c == '/' || c < 0x20 || c == 0x7f || (!i && c == '.'))
			out[i] = '_';
	}
	if (size)
		snprintf(buf, size, "%s", out);
	return n;
}
