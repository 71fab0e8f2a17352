/* SPDX-License-Identifier: MIT */
/*
 * t/unit/rocm_smi.c - the rocm_smi helper protocol, metric table, units
 * and card order (plugins/input/rocm_smi/proto.c), without the library
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"
#include "../../plugins/input/rocm_smi/proto.h"

static int parse(const char *text, struct rocm_msg *m, char *buf, size_t n)
{
	snprintf(buf, n, "%s", text);
	return rocm_proto_parse(buf, 0, m);
}

/* Parse @text for a helper of @ngpus GPUs: the reason it is refused. */
static enum rocm_bad refused(const char *text, uint32_t ngpus)
{
	char buf[ROCM_PROTO_LINE_MAX];
	struct rocm_msg m;

	snprintf(buf, sizeof(buf), "%s", text);
	errno = 0;
	if (rocm_proto_parse(buf, ngpus, &m) == 0)
		return ROCM_BAD_NONE;
	return errno == EINVAL ? m.bad : ROCM_BAD_COUNT;
}

/* What the helper may say wrong: each dropped under its own reason. */
static void test_refused(void)
{
	static const struct {
		const char *line;
		uint32_t ngpus;
		enum rocm_bad bad;
	} t[] = {
		{ "m\trocm_utilization_percentage\t1\t5", 2, ROCM_BAD_NONE },
		{ "m\trocm_utilization_percentage\t2\t5", 2, ROCM_BAD_CARD },
		{ "m\trocm_utilization_percentage\t4095\t5", 2,
		  ROCM_BAD_CARD },
		{ "m\trocm_utilization_percentage\t4096\t5", 0,
		  ROCM_BAD_MALFORMED },
		{ "skip\t3\trocm_energy_joules\tx", 2, ROCM_BAD_CARD },
		{ "m\trocm_utilization_percentage\t0\tnan", 2, ROCM_BAD_VALUE },
		{ "m\trocm_utilization_percentage\t0\tNAN(1)", 2,
		  ROCM_BAD_VALUE },
		{ "m\trocm_utilization_percentage\t0\tinf", 2, ROCM_BAD_VALUE },
		{ "m\trocm_utilization_percentage\t0\t-Infinity", 2,
		  ROCM_BAD_VALUE },
		{ "m\trocm_utilization_percentage\t0\t1e999", 2,
		  ROCM_BAD_VALUE },
		{ "m\trocm_utilization_percentage\t0\t1e-999", 2,
		  ROCM_BAD_MALFORMED },
		{ "m\trocm_energy_joules\t0\t0x10", 2, ROCM_BAD_MALFORMED },
		{ "m\trocm_energy_joules\t0\t-0X1p4", 2, ROCM_BAD_MALFORMED },
		{ "m\trocm_sclk_clock_mhz\t0\t 100", 2, ROCM_BAD_MALFORMED },
		{ "m\trocm_sclk_clock_mhz\t0\t+100", 2, ROCM_BAD_MALFORMED },
		{ "m\trocm_sclk_clock_mhz\t0\t1.5e+02", 2, ROCM_BAD_NONE },
		{ "m\trocm_version_info\t0\t1\tdriver_ver=\xff\tvbios=a\t"
		  "type=b\tschema=1.0",
		  2, ROCM_BAD_UTF8 },
		{ "m\trocm_version_info\t0\t1\tdriver_ver=\xc0\xaf\tvbios=a\t"
		  "type=b\tschema=1.0",
		  2, ROCM_BAD_UTF8 }, /* overlong '/' */
		{ "m\trocm_version_info\t0\t1\tdriver_ver=\xed\xa0\x80\t"
		  "vbios=a\ttype=b\tschema=1.0",
		  2, ROCM_BAD_UTF8 }, /* a surrogate */
		{ "m\trocm_version_info\t0\t1\tdriver_ver=6.7\tvbios=\xc3\xa9"
		  "\ttype=b\tschema=1.0",
		  2, ROCM_BAD_NONE }, /* UTF-8 is fine */
		{ "note\tline\rforged", 2, ROCM_BAD_UTF8 },
		{ "note\tescape \x1b[2J", 2, ROCM_BAD_UTF8 },
		{ "fail\t\x80", 0, ROCM_BAD_UTF8 },
		{ "m\trocm_temperature_celsius\t0\t-5\tlocation=edge", 2,
		  ROCM_BAD_TEMPERATURE }, /* -5000 m°C */
		{ "m\trocm_temperature_celsius\t0\t0\tlocation=edge", 2,
		  ROCM_BAD_TEMPERATURE },
		{ "m\trocm_temperature_memory_celsius\t0\t65535\t"
		  "location=hbm_0",
		  2, ROCM_BAD_TEMPERATURE }, /* 0xFFFF: no reading */
		{ "m\trocm_temperature_sensor_celsius\t0\t500.5\t"
		  "location=junction",
		  2, ROCM_BAD_TEMPERATURE },
		{ "m\trocm_temperature_sensor_celsius\t0\t104\t"
		  "location=junction",
		  2, ROCM_BAD_NONE },
		{ "m\trocm_temperature_celsius\t0\tnan\tlocation=edge", 2,
		  ROCM_BAD_VALUE },
		{ "m\trocm_vram_used_percentage\t0\t-5", 2, ROCM_BAD_PERCENT },
		{ "m\trocm_utilization_percentage\t0\t100.5", 2,
		  ROCM_BAD_PERCENT },
		{ "m\trocm_utilization_percentage\t0\t100", 2, ROCM_BAD_NONE },
		{ "m\trocm_vram_busy_percentage\t0\t0", 2, ROCM_BAD_NONE },
		{ "m\trocm_average_socket_power_watts\t0\t-3", 2,
		  ROCM_BAD_NEGATIVE },
		{ "m\trocm_energy_joules\t0\t-0.5", 2, ROCM_BAD_NEGATIVE },
		{ "m\trocm_num_gpus\t-\t-1", 2, ROCM_BAD_NEGATIVE },
		{ "m\trocm_ras_umc_correctable_count\t0\t0", 2, ROCM_BAD_NONE },
		{ "m\trocm_temperature_celsius\t0\t40\tlocation=cpu", 2,
		  ROCM_BAD_MALFORMED }, /* no such sensor */
	};

	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++) {
		enum rocm_bad got = refused(t[i].line, t[i].ngpus);

		ok(got == t[i].bad, "\"%s\" (%u GPUs): %s", t[i].line,
		   (unsigned)t[i].ngpus,
		   t[i].bad ? rocm_bad_reason[t[i].bad] : "taken");
	}
	is(rocm_bad_reason[ROCM_BAD_CARD], "card_out_of_range",
	   "reason of a card out of range");
	is(rocm_bad_reason[ROCM_BAD_UTF8], "invalid_utf8",
	   "reason of a line not UTF-8");
	is(rocm_bad_reason[ROCM_BAD_VALUE], "not_finite",
	   "reason of NaN and infinities");
	is(rocm_bad_reason[ROCM_BAD_TEMPERATURE], "invalid_temperature",
	   "reason of a sensor placeholder");
	is(rocm_bad_reason[ROCM_BAD_PERCENT], "invalid_percentage",
	   "reason of a percentage out of range");
	is(rocm_bad_reason[ROCM_BAD_NEGATIVE], "negative_value",
	   "reason of a negative value");
	for (int i = 1; i < ROCM_BAD_COUNT; i++)
		ok(rocm_bad_reason[i] != NULL, "reason %d named", i);
	ok(rocm_temp_valid(0.001) && rocm_temp_valid(500) &&
		   !rocm_temp_valid(0) && !rocm_temp_valid(-5) &&
		   !rocm_temp_valid(NAN) && !rocm_temp_valid(65535),
	   "temperature range (0, 500] Celsius");
}

static void test_lines(void)
{
	static const char *const bad[] = {
		"",
		"m",
		"m\trocm_nope\t0\t1",			 /* unknown metric */
		"m\trocm_utilization_percentage\t-\t5",	 /* needs a card */
		"m\trocm_num_gpus\t0\t2",		 /* takes none */
		"m\trocm_utilization_percentage\t0\t",	 /* no value */
		"m\trocm_utilization_percentage\t0\t5x", /* not a number */
		"m\trocm_utilization_percentage\tx\t5",	 /* bad card */
		"m\trocm_utilization_percentage\t99999\t5",
		"m\trocm_utilization_percentage\t0\t5\tlocation=edge",
		"m\trocm_temperature_celsius\t0\t45", /* no location */
		"m\trocm_temperature_celsius\t0\t45\tplace=edge",
		"m\trocm_temperature_celsius\t0\t45\tlocation=",
		"m\trocm_version_info\t0\t1\tvbios=x",
		"m\trocm_version_info\t0\t1\tvbios=a\tdriver_ver=b\ttype="
		"c\tschema=d",
		/* Omnistat's labels: schema, no serial */
		"m\trocm_version_info\t0\t1\tdriver_ver=a\tvbios=b\ttype="
		"c\tserial=d",
		"end",
		"end\t-1",
		"hello\t1",
		"hello\t1\t0",
		"ready\t2",
		"ready\t99999\t5.2.3",
		"fail\t",
		"skip\t-\trocm_energy_joules\tx",
		"skip\t0\trocm_nope\tx",
		"bogus\t1",
		"m\trocm_energy_joules\t0\t1\ta=1\tb=2\tc=3\td=4\te=5",
		NULL,
	};
	struct rocm_msg m;
	char buf[ROCM_PROTO_LINE_MAX];

	ok(parse("hello\t1\t4711", &m, buf, sizeof(buf)) == 0 &&
		   m.type == ROCM_MSG_HELLO && m.n == 1 && m.pid == 4711,
	   "hello: version and pid");
	ok(parse("ready\t2\t5.2.3", &m, buf, sizeof(buf)) == 0 &&
		   m.type == ROCM_MSG_READY && m.n == 2,
	   "ready: GPUs");
	is(m.name, "5.2.3", "ready: library version");
	ok(parse("fail\tno AMD GPU found", &m, buf, sizeof(buf)) == 0 &&
		   m.type == ROCM_MSG_FAIL,
	   "fail");
	is(m.name, "no AMD GPU found", "fail: the reason");
	ok(parse("skip\t1\trocm_energy_joules\tRSMI_STATUS_NOT_SUPPORTED", &m,
		 buf, sizeof(buf)) == 0 &&
		   m.type == ROCM_MSG_SKIP && m.card == 1,
	   "skip: card");
	is(m.name, "rocm_energy_joules", "skip: metric");
	is(m.why, "RSMI_STATUS_NOT_SUPPORTED", "skip: why");
	ok(parse("m\trocm_num_gpus\t-\t2", &m, buf, sizeof(buf)) == 0 &&
		   m.type == ROCM_MSG_SAMPLE && m.card == -1 && m.value == 2 &&
		   m.nlabels == 0,
	   "sample without card");
	ok(parse("m\trocm_temperature_celsius\t1\t52.5\tlocation=junction", &m,
		 buf, sizeof(buf)) == 0 &&
		   m.card == 1 && m.value == 52.5 && m.nlabels == 1,
	   "sample with a location");
	is(m.key[0], "location", "label key");
	is(m.val[0], "junction", "label value");
	ok(parse("m\trocm_version_info\t0\t1\tdriver_ver=6.7.0\tvbios=\t"
		 "type=Instinct MI210\tschema=1.0",
		 &m, buf, sizeof(buf)) == 0 &&
		   m.nlabels == 4,
	   "version info: four labels, spaces and empty values kept");
	is(m.val[1], "", "empty vbios");
	is(m.val[2], "Instinct MI210", "type with a space");
	is(m.key[3], "schema", "Omnistat's schema label");
	is(m.val[3], "1.0", "schema 1.0");
	ok(parse("end\t3", &m, buf, sizeof(buf)) == 0 &&
		   m.type == ROCM_MSG_END && m.n == 3,
	   "end: failed queries");
	ok(parse("note\tno user namespace", &m, buf, sizeof(buf)) == 0 &&
		   m.type == ROCM_MSG_NOTE,
	   "note");
	for (int i = 0; bad[i]; i++) {
		errno = 0;
		ok(parse(bad[i], &m, buf, sizeof(buf)) == -1 && errno == EINVAL,
		   "refused: \"%s\"", bad[i]);
	}
}

static void test_keyword(void)
{
	ok(rocm_proto_keyword("m\trocm_nope"), "m: a protocol line");
	ok(rocm_proto_keyword("end\tx"), "end: a protocol line");
	ok(!rocm_proto_keyword("Exception caught: rsmi_init."),
	   "library text is not");
	ok(!rocm_proto_keyword("end"), "a keyword needs its tab");
	ok(!rocm_proto_keyword(""), "an empty line is not");
}

static void test_clean(void)
{
	char s[] = "  Instinct\tMI210\n\x01\xc3\xa9  ";

	is(rocm_proto_clean(s), "Instinct_MI210____", "clean: one field");
}

static void test_table(void)
{
	ok(rocm_metric_find("rocm_average_socket_power_watts") == ROCM_M_POWER,
	   "find by name");
	ok(rocm_metric_find("rocm_ras_xgmi_wafl_uncorrectable_count") ==
		   ROCM_M_RAS + 13,
	   "last RAS count");
	ok(rocm_metric_find("rocm_ras_umc_correctable_count") == ROCM_M_RAS,
	   "first RAS count");
	for (int i = 0; i < ROCM_M_COUNT; i++)
		ok(rocm_metrics[i].name && rocm_metrics[i].help &&
			   !strncmp(rocm_metrics[i].name, "rocm_", 5),
		   "metric %d named and documented", i);
}

static void test_units(void)
{
	double pct = -1;

	ok(rocm_uw_to_w(87000000) == 87.0, "87000000 uW = 87 W");
	ok(rocm_mc_to_c(52000) == 52.0, "52000 m°C = 52 °C");
	ok(rocm_mc_to_c(-5500) == -5.5, "negative temperature");
	ok(rocm_hz_to_mhz(1600000000ull) == 1600.0, "1.6 GHz = 1600 MHz");
	/* gpu_metrics counts 15.3 µJ ticks (the library's resolution) */
	ok(fabs(rocm_energy_j(65536000, 15.3f) - 1002.7008) < 1e-3,
	   "energy: count x resolution, µJ to J");
	ok(rocm_used_pct(6870269952ull, 68702699520ull, &pct) == 0 &&
		   fabs(pct - 10.0) < 1e-12,
	   "vram used: 10%%");
	errno = 0;
	ok(rocm_used_pct(1, 0, &pct) == -1 && errno == EDOM,
	   "vram total 0: no percentage");
}

static void test_order(void)
{
	/* node 0: CPU; node 1: bus 0x83, node 2: bus 0x03 */
	struct rocm_kfd_node nodes[3] = { { 0 } };
	uint64_t bdf[2] = { 0x0300, 0x8300 }; /* library order: by card */
	uint64_t gpu[2] = { 1717, 4242 };
	int card[2];
	static const char props[] = "cpu_cores_count 0\nsimd_count 416\n"
				    "location_id 33536\ndomain 0\n"
				    "drm_render_minor 129\n";

	ok(rocm_kfd_parse_properties(props, &nodes[1]) == 0 &&
		   nodes[1].location_id == 0x8300 && nodes[1].domain == 0,
	   "properties: location_id and domain");
	errno = 0;
	ok(rocm_kfd_parse_properties("simd_count 0\n", &nodes[0]) == -1 &&
		   errno == EINVAL,
	   "properties without location_id");
	nodes[0] = (struct rocm_kfd_node){ 0, 0, 0 };
	nodes[1].gpu_id = 4242;
	nodes[2] = (struct rocm_kfd_node){ 1717, 0, 0x0300 };

	ok(rocm_card_order(nodes, 3, bdf, 2, 0, card) == 0, "PCI match");
	ok(card[0] == 1 && card[1] == 0,
	   "KFD order: the GPU at bus 0x03 is card 1 (node 2)");
	ok(rocm_card_order(nodes, 3, gpu, 2, 1, card) == 0 && card[0] == 1 &&
		   card[1] == 0,
	   "gpu_id match gives the same order");
	bdf[1] = 0x0100000000ull | 0x8300; /* domain 1: not node 1 */
	errno = 0;
	ok(rocm_card_order(nodes, 3, bdf, 2, 0, card) == -1 &&
		   errno == ENOENT && card[0] == 0 && card[1] == 1,
	   "no match: the library's order");
	bdf[1] = 0x0300; /* two devices on one node */
	ok(rocm_card_order(nodes, 3, bdf, 2, 0, card) == -1 && card[1] == 1,
	   "a node twice: the library's order");
	ok(rocm_card_order(nodes, 0, bdf, 2, 0, card) == -1,
	   "no topology: the library's order");
}

int main(void)
{
	plan(NO_PLAN);
	test_lines();
	test_refused();
	test_keyword();
	test_clean();
	test_table();
	test_units();
	test_order();
	return done_testing();
}
