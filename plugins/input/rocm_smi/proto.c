/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/rocm_smi/proto.c - the helper protocol's lines, the metric
 * table, unit conversions and the card order (pure code, see proto.h)
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/utf8.h>

#include "proto.h"

/* clang-format off */
const struct rocm_metric rocm_metrics[ROCM_M_COUNT] = {
	[ROCM_M_NUM_GPUS] = { "rocm_num_gpus",
		"Number of GPUs the ROCm SMI library sees", NULL },
	[ROCM_M_VERSION_INFO] = { "rocm_version_info",
		"GPU driver, VBIOS and product (value 1)", NULL },
	[ROCM_M_UTILIZATION] = { "rocm_utilization_percentage",
		"GPU busy (%)", NULL },
	[ROCM_M_VRAM_TOTAL] = { "rocm_vram_total_bytes",
		"VRAM total memory (bytes)", NULL },
	[ROCM_M_VRAM_USED] = { "rocm_vram_used_percentage",
		"VRAM memory in use (%)", NULL },
	[ROCM_M_VRAM_BUSY] = { "rocm_vram_busy_percentage",
		"Memory controller busy (%)", NULL },
	[ROCM_M_POWER] = { "rocm_average_socket_power_watts",
		"Average socket power (W)", NULL },
	[ROCM_M_ENERGY] = { "rocm_energy_joules",
		"Energy consumed since the driver loaded (J)", NULL },
	[ROCM_M_SCLK] = { "rocm_sclk_clock_mhz",
		"Current GPU (sclk) clock (MHz)", NULL },
	[ROCM_M_MCLK] = { "rocm_mclk_clock_mhz",
		"Current memory (mclk) clock (MHz)", NULL },
	[ROCM_M_TEMP] = { "rocm_temperature_celsius",
		"GPU temperature, the first sensor that reads of edge, "
		"junction, memory (Celsius)", "location" },
	[ROCM_M_TEMP_MEM] = { "rocm_temperature_memory_celsius",
		"GPU memory temperature, the first memory sensor that reads "
		"(Celsius)", "location" },
	[ROCM_M_TEMP_SENSOR] = { "rocm_temperature_sensor_celsius",
		"GPU temperature of every sensor that reads (Celsius)",
		"location" },
	[ROCM_M_POWER_CAP] = { "rocm_power_cap_watts",
		"Socket power cap (W)", NULL },
#define RAS(i, b)                                                             \
	[ROCM_M_RAS + 2 * (i)] = { "rocm_ras_" b "_correctable_count",        \
		"Correctable ECC errors of the " b " block", NULL },          \
	[ROCM_M_RAS + 2 * (i) + 1] = { "rocm_ras_" b "_uncorrectable_count",  \
		"Uncorrectable ECC errors of the " b " block", NULL }
	RAS(0, "umc"), RAS(1, "sdma"), RAS(2, "gfx"), RAS(3, "mmhub"),
	RAS(4, "pcie_bif"), RAS(5, "hdp"), RAS(6, "xgmi_wafl"),
#undef RAS
};
/* clang-format on */

const char *const rocm_version_labels[4] = {
	"driver_ver",
	"vbios",
	"type",
	"schema",
};

const char *const rocm_bad_reason[ROCM_BAD_COUNT] = {
	[ROCM_BAD_NONE] = "none",
	[ROCM_BAD_MALFORMED] = "malformed",
	[ROCM_BAD_UTF8] = "invalid_utf8",
	[ROCM_BAD_CARD] = "card_out_of_range",
	[ROCM_BAD_VALUE] = "not_finite",
	[ROCM_BAD_TEMPERATURE] = "invalid_temperature",
	[ROCM_BAD_PERCENT] = "invalid_percentage",
	[ROCM_BAD_NEGATIVE] = "negative_value",
	[ROCM_BAD_UNREQUESTED] = "not_requested",
	[ROCM_BAD_SKIPPED] = "skipped_metric",
	[ROCM_BAD_DUPLICATE] = "duplicate_series",
};

const char *const rocm_temp_locations[ROCM_TEMP_LOCATIONS] = {
	"edge", "junction", "vram", "hbm_0", "hbm_1", "hbm_2", "hbm_3",
};

int rocm_temp_location(const char *loc)
{
	for (int i = 0; i < ROCM_TEMP_LOCATIONS; i++)
		if (!strcmp(rocm_temp_locations[i], loc))
			return i;
	return -1;
}

const char *const rocm_ras_blocks[ROCM_RAS_BLOCKS] = {
	"umc", "sdma", "gfx", "mmhub", "pcie_bif", "hdp", "xgmi_wafl",
};

/* rsmi_gpu_block_t (rocm_smi.h), stable since ROCm 3 */
const uint64_t rocm_ras_bits[ROCM_RAS_BLOCKS] = {
	0x1, 0x2, 0x4, 0x8, 0x20, 0x40, 0x80,
};

int rocm_metric_find(const char *name)
{
	for (int i = 0; i < ROCM_M_COUNT; i++)
		if (!strcmp(rocm_metrics[i].name, name))
			return i;
	return -1;
}

double rocm_uw_to_w(uint64_t uw)
{
	return (double)uw / 1e6;
}

double rocm_mc_to_c(int64_t mc)
{
	return (double)mc / 1e3;
}

int rocm_temp_valid(double c)
{
	return c > 0 && c <= 500;
}

double rocm_hz_to_mhz(uint64_t hz)
{
	return (double)hz / 1e6;
}

double rocm_energy_j(uint64_t count, float res_uj)
{
	return (double)count * (double)res_uj / 1e6;
}

int rocm_used_pct(uint64_t used, uint64_t total, double *pct)
{
	if (!total) {
		errno = EDOM;
		return -1;
	}
	*pct = 100.0 * (double)used / (double)total;
	return 0;
}

char *rocm_proto_clean(char *s)
{
	char *p = s, *end;

	for (unsigned char *c = (unsigned char *)s; *c; c++)
		if (*c < 0x20 || *c >= 0x7f)
			*c = '_';
	while (*p == ' ')
		p++;
	memmove(s, p, strlen(p) + 1);
	end = s + strlen(s);
	while (end > s && end[-1] == ' ')
		*--end = '\0';
	return s;
}

int rocm_proto_keyword(const char *line)
{
	static const char *const kw[] = {
		"m\t",	  "end\t",  "hello\t", "ready\t",
		"fail\t", "skip\t", "note\t",
	};

	for (size_t i = 0; i < sizeof(kw) / sizeof(kw[0]); i++)
		if (!strncmp(line, kw[i], strlen(kw[i])))
			return 1;
	return 0;
}

/* Split @line at tabs into at most @max fields. Return: the count. */
static unsigned proto_split(char *line, char **f, unsigned max)
{
	unsigned n = 0;

	for (char *p = line;;) {
		char *tab = strchr(p, '\t');

		if (n == max)
			return max + 1;
		f[n++] = p;
		if (!tab)
			return n;
		*tab = '\0';
		p = tab + 1;
	}
}

static int proto_u64(const char *s, uint64_t *v)
{
	char *end;

	if (*s < '0' || *s > '9')
		return -1;
	errno = 0;
	*v = strtoull(s, &end, 10);
	return *end || errno ? -1 : 0;
}

static int proto_card(const char *s, int *card)
{
	uint64_t v;

	if (!strcmp(s, "-")) {
		*card = -1;
		return 0;
	}
	if (proto_u64(s, &v) < 0 || v > 4095)
		return -1;
	*card = (int)v;
	return 0;
}

static int proto_sample(char **f, unsigned n, uint32_t ngpus,
			struct rocm_msg *m)
{
	int id = rocm_metric_find(f[1]);
	const char *v;
	char *end;

	m->bad = ROCM_BAD_MALFORMED;
	if (id < 0 || proto_card(f[2], &m->card) < 0)
		return -1;
	if ((id == ROCM_M_NUM_GPUS) != (m->card < 0))
		return -1;
	/* %.17g's shape: no blank or '+' first, no hex (strtod takes them) */
	v = f[3] + (f[3][0] == '-');
	if (*v == ' ' || *v == '\t' || *v == '+' ||
	    (v[0] == '0' && (v[1] == 'x' || v[1] == 'X')))
		return -1;
	errno = 0;
	m->value = strtod(f[3], &end);
	if (!*f[3] || *end || (errno == ERANGE && isfinite(m->value)))
		return -1;
	m->name = f[1];
	m->nlabels = n - 4;
	for (unsigned i = 0; i < m->nlabels; i++) {
		char *eq = strchr(f[4 + i], '=');

		if (!eq)
			return -1;
		*eq = '\0';
		m->key[i] = f[4 + i];
		m->val[i] = eq + 1;
	}
	/* exactly the labels the metric takes, in table order */
	if (id == ROCM_M_VERSION_INFO) {
		if (m->nlabels != 4)
			return -1;
		for (unsigned i = 0; i < 4; i++)
			if (strcmp(m->key[i], rocm_version_labels[i]))
				return -1;
	} else if (rocm_metrics[id].label) {
		if (m->nlabels != 1 ||
		    strcmp(m->key[0], rocm_metrics[id].label) ||
		    rocm_temp_location(m->val[0]) < 0)
			return -1;
	} else if (m->nlabels) {
		return -1;
	}
	/* well formed; now what it says */
	if (ngpus && m->card >= 0 && (uint32_t)m->card >= ngpus) {
		m->bad = ROCM_BAD_CARD;
		return -1;
	}
	if (!isfinite(m->value)) {
		m->bad = ROCM_BAD_VALUE;
		return -1;
	}
	if ((id == ROCM_M_TEMP || id == ROCM_M_TEMP_MEM ||
	     id == ROCM_M_TEMP_SENSOR) &&
	    !rocm_temp_valid(m->value)) {
		m->bad = ROCM_BAD_TEMPERATURE;
		return -1;
	}
	if (id == ROCM_M_UTILIZATION || id == ROCM_M_VRAM_USED ||
	    id == ROCM_M_VRAM_BUSY) {
		if (m->value < 0 || m->value > 100) {
			m->bad = ROCM_BAD_PERCENT;
			return -1;
		}
	} else if (m->value < 0) {
		/* watts, joules, bytes, MHz, counts: none below 0 */
		m->bad = ROCM_BAD_NEGATIVE;
		return -1;
	}
	m->bad = ROCM_BAD_NONE;
	return 0;
}

/* UTF-8, and no control character but the field separator */
static int proto_text_ok(const char *line)
{
	size_t len = strlen(line);

	for (size_t i = 0; i < len; i++)
		if (((unsigned char)line[i] < 0x20 && line[i] != '\t') ||
		    line[i] == 0x7f)
			return 0;
	return tally_utf8_valid(line, len);
}

int rocm_proto_parse(char *line, uint32_t ngpus, struct rocm_msg *m)
{
	char *f[4 + ROCM_PROTO_MAX_LABELS];
	unsigned n;
	uint64_t v;

	memset(m, 0, sizeof(*m));
	m->card = -1;
	if (!proto_text_ok(line)) {
		m->bad = ROCM_BAD_UTF8;
		goto bad;
	}
	m->bad = ROCM_BAD_MALFORMED;
	n = proto_split(line, f, 4 + ROCM_PROTO_MAX_LABELS);
	if (n > 4 + ROCM_PROTO_MAX_LABELS)
		goto bad;
	if (!strcmp(f[0], "m") && n >= 4) {
		m->type = ROCM_MSG_SAMPLE;
		if (proto_sample(f, n, ngpus, m) < 0)
			goto bad;
	} else if (!strcmp(f[0], "end") && n == 2) {
		m->type = ROCM_MSG_END;
		if (proto_u64(f[1], &m->n) < 0)
			goto bad;
	} else if (!strcmp(f[0], "hello") && n == 3) {
		m->type = ROCM_MSG_HELLO;
		if (proto_u64(f[1], &m->n) < 0 || proto_u64(f[2], &v) < 0 ||
		    !v || v > 0x7fffffff)
			goto bad;
		m->pid = (long)v;
	} else if (!strcmp(f[0], "ready") && n == 3) {
		m->type = ROCM_MSG_READY;
		if (proto_u64(f[1], &m->n) < 0 || m->n > 4096)
			goto bad;
		m->name = f[2];
	} else if (!strcmp(f[0], "fail") && n == 2 && *f[1]) {
		m->type = ROCM_MSG_FAIL;
		m->name = f[1];
	} else if (!strcmp(f[0], "note") && n == 2 && *f[1]) {
		m->type = ROCM_MSG_NOTE;
		m->name = f[1];
	} else if (!strcmp(f[0], "skip") && n == 4) {
		m->type = ROCM_MSG_SKIP;
		if (proto_card(f[1], &m->card) < 0 || m->card < 0 ||
		    rocm_metric_find(f[2]) < 0)
			goto bad;
		if (ngpus && (uint32_t)m->card >= ngpus) {
			m->bad = ROCM_BAD_CARD;
			goto bad;
		}
		m->name = f[2];
		m->why = f[3];
	} else {
		goto bad;
	}
	m->bad = ROCM_BAD_NONE;
	return 0;
bad:
	errno = EINVAL;
	return -1;
}

int rocm_kfd_parse_properties(const char *text, struct rocm_kfd_node *node)
{
	int have = 0;

	node->domain = 0;
	for (const char *p = text; p && *p;
	     p = strchr(p, '\n'), p = p ? p + 1 : p) {
		unsigned long long v;
		char key[32];

		if (sscanf(p, "%31s %llu", key, &v) != 2)
			continue;
		if (!strcmp(key, "location_id")) {
			node->location_id = (uint32_t)v;
			have = 1;
		} else if (!strcmp(key, "domain")) {
			node->domain = (uint32_t)v;
		}
	}
	if (!have) {
		errno = EINVAL;
		return -1;
	}
	return 0;
}

/* Does library device key @key name GPU node @nd? */
static int card_match(const struct rocm_kfd_node *nd, uint64_t key,
		      int by_gpu_id)
{
	if (by_gpu_id)
		return key == nd->gpu_id;
	/* 5.x libraries leave the domain out of the id: 0 matches any */
	if ((key >> 32) && (key >> 32) != nd->domain)
		return 0;
	return (key & 0xffff) == nd->location_id;
}

int rocm_card_order(const struct rocm_kfd_node *nodes, size_t nnodes,
		    const uint64_t *bdfid, size_t ndev, int by_gpu_id,
		    int *card)
{
	int ok = 1;

	for (size_t d = 0; d < ndev; d++) {
		int rank = 0, found = -1;

		for (size_t i = 0; i < nnodes; i++) {
			if (!nodes[i].gpu_id)
				continue;
			if (card_match(&nodes[i], bdfid[d], by_gpu_id)) {
				found = found < 0 ? rank : -2;
			}
			rank++;
		}
		card[d] = found;
		if (found < 0)
			ok = 0;
	}
	for (size_t d = 0; ok && d < ndev; d++)
		for (size_t e = d + 1; e < ndev; e++)
			if (card[d] == card[e])
				ok = 0;
	if (ok)
		return 0;
	for (size_t d = 0; d < ndev; d++)
		card[d] = (int)d;
	errno = ENOENT;
	return -1;
}
