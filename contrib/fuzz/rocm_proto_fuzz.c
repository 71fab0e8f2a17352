/* SPDX-License-Identifier: MIT */
/*
 * contrib/fuzz/rocm_proto_fuzz.c - libFuzzer target for the rocm_smi
 * helper protocol decoder (plugins/input/rocm_smi/proto.c)
 *
 * The first byte is the GPU count the helper announced (0: before
 * "ready"); the rest is what the helper wrote, cut into lines at '\n' and
 * at ROCM_PROTO_LINE_MAX as the input does. Each line taken is checked for
 * what the input relies on: a known metric with exactly its labels, a
 * card below the GPU count, a finite value, a temperature in range, every
 * string inside the line and UTF-8 without control characters; a line
 * refused says why. Build: make fuzz. Run:
 *	contrib/fuzz/rocm_proto_fuzz -max_total_time=20 CORPUS_DIR
 */
#include <math.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <tally/utf8.h>

#include "../../plugins/input/rocm_smi/proto.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int inside(const char *p, const char *buf)
{
	return p >= buf && p < buf + ROCM_PROTO_LINE_MAX;
}

static void text_ok(const char *p, const char *buf)
{
	if (!p || !inside(p, buf) || !tally_utf8_valid(p, strlen(p)))
		abort();
	for (; *p; p++)
		if ((unsigned char)*p < 0x20 || *p == 0x7f)
			abort();
}

static void check(const struct rocm_msg *m, uint32_t ngpus, const char *buf)
{
	int id;

	switch (m->type) {
	case ROCM_MSG_SAMPLE:
		text_ok(m->name, buf);
		id = rocm_metric_find(m->name);
		if (id < 0 || !isfinite(m->value) ||
		    m->nlabels > ROCM_PROTO_MAX_LABELS ||
		    (id == ROCM_M_NUM_GPUS) != (m->card < 0) ||
		    (ngpus && m->card >= 0 && (uint32_t)m->card >= ngpus))
			abort();
		if ((id == ROCM_M_TEMP || id == ROCM_M_TEMP_MEM ||
		     id == ROCM_M_TEMP_SENSOR) &&
		    !rocm_temp_valid(m->value))
			abort();
		for (unsigned i = 0; i < m->nlabels; i++) {
			text_ok(m->key[i], buf);
			text_ok(m->val[i], buf);
		}
		break;
	case ROCM_MSG_SKIP:
		text_ok(m->why, buf);
		/* fall through */
	case ROCM_MSG_READY:
	case ROCM_MSG_FAIL:
	case ROCM_MSG_NOTE:
		text_ok(m->name, buf);
		break;
	case ROCM_MSG_HELLO:
		if (m->pid <= 0)
			abort();
		break;
	case ROCM_MSG_END:
		break;
	default:
		abort();
	}
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char buf[ROCM_PROTO_LINE_MAX];
	uint32_t ngpus;
	size_t pos = 1;

	if (!size)
		return 0;
	ngpus = data[0] % 9;
	while (pos < size) {
		const uint8_t *nl = memchr(data + pos, '\n', size - pos);
		size_t len = nl ? (size_t)(nl - data) - pos : size - pos;
		struct rocm_msg m;

		if (len >= sizeof(buf))
			len = sizeof(buf) - 1;
		memcpy(buf, data + pos, len);
		buf[len] = '\0';
		pos += len + (nl && data + pos + len == nl ? 1 : 0);
		if (rocm_proto_parse(buf, ngpus, &m) == 0) {
			if (m.bad != ROCM_BAD_NONE)
				abort();
			check(&m, ngpus, buf);
		} else if (m.bad <= ROCM_BAD_NONE || m.bad >= ROCM_BAD_COUNT) {
			abort();
		}
	}
	return 0;
}
