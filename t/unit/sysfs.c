/* SPDX-License-Identifier: MIT */
/*
 * t/unit/sysfs.c - the sysfs input's pure parts: hwmon file names and
 * naming as node_exporter 1.5 does it, attribute values, numbered entries;
 * no allocation in a steady-state tick on the fixture tree
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <string.h>

#include "tap.h"

#include "../../plugins/input/sysfs/sysfs.c"
#include "../../plugins/input/sysfs/hwmon.c"
#include "../../plugins/input/sysfs/thermal.c"
#include "../../plugins/input/sysfs/cpufreq.c"
#include "../../plugins/input/sysfs/edac.c"

#include "procfs-util.h"

static void test_clean(void)
{
	static const struct {
		const char *in, *out;
	} cases[] = {
		{ "coretemp", "coretemp" },
		{ "0000:00:18.3", "0000:00:18_3" },
		{ "Package id 0", "package_id_0" },
		{ "__x-y__", "x_y" },
		{ "  ", "" },
		{ "NCT6775", "nct6775" },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char out[64];

		hwmon_clean(cases[i].in, out, sizeof(out));
		is(out, cases[i].out, "clean '%s'", cases[i].in);
	}
}

static void test_split(void)
{
	static const struct {
		const char *name;
		int ret;
		const char *type;
		unsigned num;
		const char *element;
	} cases[] = {
		{ "temp1_input", 0, "temp", 1, "input" },
		{ "temp12_crit_alarm", 0, "temp", 12, "crit_alarm" },
		{ "fan2_min", 0, "fan", 2, "min" },
		{ "pwm1", 0, "pwm", 1, "" },
		{ "in0_label", 0, "in", 0, "label" },
		{ "update_interval", 0, "update_interval", 0, "" },
		{ "beep_enable", 0, "beep_enable", 0, "" },
		{ "intrusion0_alarm", 0, "intrusion", 0, "alarm" },
		{ "name", -1, NULL, 0, NULL },
		{ "uevent", -1, NULL, 0, NULL },
		{ "device", -1, NULL, 0, NULL },
		{ "temp1_", -1, NULL, 0, NULL },
		{ "1temp", -1, NULL, 0, NULL },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct hwmon_file f;
		int ret = hwmon_split(cases[i].name, &f);

		cmp_ok(ret, "==", cases[i].ret, "split %s", cases[i].name);
		if (ret < 0)
			continue;
		is(f.type, cases[i].type, "type of %s", cases[i].name);
		cmp_ok(f.num, "==", cases[i].num, "number of %s",
		       cases[i].name);
		is(f.element, cases[i].element, "element of %s",
		   cases[i].name);
	}
}

static void test_metric(void)
{
	static const struct {
		const char *type, *element;
		bool bare;
		const char *name, *help;
		double mul, div;
		bool ctr;
	} cases[] = {
		{ "temp", "input", false, "node_hwmon_temp_celsius",
		  "Hardware monitor for temperature (input)", 0.001, 1, false },
		{ "temp", "", false, "node_hwmon_temp_celsius",
		  "Hardware monitor for temperature (input)", 0.001, 1, false },
		{ "temp", "input", true, "node_hwmon_temp_input_celsius",
		  "Hardware monitor for temperature (input)", 0.001, 1, false },
		{ "temp", "crit_alarm", false,
		  "node_hwmon_temp_crit_alarm_celsius",
		  "Hardware monitor for temperature (crit_alarm)", 0.001, 1,
		  false },
		{ "temp", "type", false, "node_hwmon_temp_type",
		  "Hardware monitor temp element type", 1, 1, false },
		{ "temp", "fault", false, "node_hwmon_temp_fault",
		  "Hardware sensor fault status (temp)", 1, 1, false },
		{ "fan", "input", false, "node_hwmon_fan_rpm",
		  "Hardware monitor for fan revolutions per minute (input)", 1,
		  1, false },
		{ "fan", "pulses", false, "node_hwmon_fan_pulses",
		  "Hardware monitor fan element pulses", 1, 1, false },
		{ "fan", "beep", false, "node_hwmon_fan_beep_enabled",
		  "Hardware monitor sensor has beeping enabled", 1, 1, false },
		{ "in", "min", false, "node_hwmon_in_min_volts",
		  "Hardware monitor for voltage (min)", 0.001, 1, false },
		{ "curr", "input", false, "node_hwmon_curr_amps",
		  "Hardware monitor for current (input)", 0.001, 1, false },
		{ "power", "average", false, "node_hwmon_power_average_watt",
		  "Hardware monitor for power usage in watts (average)", 1, 1e6,
		  false },
		{ "power", "accuracy", false, "node_hwmon_power_accuracy",
		  "Hardware monitor power meter accuracy, as a ratio", 1, 1e6,
		  false },
		{ "power", "average_interval", false,
		  "node_hwmon_power_average_interval_seconds",
		  "Hardware monitor power usage update interval "
		  "(average_interval)",
		  0.001, 1, false },
		{ "energy", "input", false, "node_hwmon_energy_joule_total",
		  "Hardware monitor for joules used so far (input)", 1, 1e6,
		  true },
		{ "pwm", "", false, "node_hwmon_pwm",
		  "Hardware monitor pwm element ", 1, 1, false },
		{ "humidity", "input", false, "node_hwmon_humidity",
		  "Hardware monitor for humidity, as a ratio (multiply with "
		  "100.0 to get the humidity as a percentage) (input)",
		  1, 1e6, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		char name[256], help[256];
		double mul, div;
		bool ctr;

		hwmon_metric(cases[i].type, cases[i].element, cases[i].bare,
			     name, sizeof(name), help, sizeof(help), &mul, &div,
			     &ctr);
		is(name, cases[i].name, "%s %s name", cases[i].type,
		   cases[i].element);
		is(help, cases[i].help, "%s %s help", cases[i].type,
		   cases[i].element);
		ok(mul == cases[i].mul && div == cases[i].div &&
			   ctr == cases[i].ctr,
		   "%s %s unit", cases[i].type, cases[i].element);
	}
}

static void test_values(void)
{
	double v;

	ok(sysfs_parse_value("45000\n", &v) == 0 && v == 45000, "45000");
	ok(sysfs_parse_value("-2500", &v) == 0 && v == -2500, "-2500");
	ok(sysfs_parse_value("1.5 \n", &v) == 0 && v == 1.5, "1.5");
	ok(sysfs_parse_value("", &v) < 0, "empty is not a number");
	ok(sysfs_parse_value("12ab", &v) < 0, "trailing garbage");
	ok(sysfs_parse_value("performance powersave", &v) < 0, "words");
	ok(38125 * 0.001 == 38.125, "millidegrees times 0.001 (exact here)");
	is(sysfs_numbered("thermal_zone12", "thermal_zone"), "12",
	   "numbered");
	ok(sysfs_numbered("thermal_zone", "thermal_zone") == NULL,
	   "no number");
	ok(sysfs_numbered("cpufreq", "cpu") == NULL, "cpufreq is no cpu");
	ok(sysfs_numbered("cpu1x", "cpu") == NULL, "cpu1x is no cpu");
}

/* The fixture tree, every group: a steady-state tick allocates nothing. */
static void test_no_alloc(void)
{
	const char *top = getenv("top_srcdir");
	struct sysfs s = { 0 };
	struct tally_batch *b;
	char root[4096];
	long before, during;

	if (!alloc_count_available()) {
		skip(3, "allocation counting unavailable under sanitizers");
		return;
	}
	snprintf(root, sizeof(root), "%s/t/fixtures/sys-host",
		 top ? top : "..");
	s.root = root;
	s.hwmon = s.thermal_zone = s.cpufreq = s.edac = true;
	s.rescan = 3600;
	ok(sysfs_init(NULL, &s) == 0, "init on the fixture");
	for (int i = 0; i < 3; i++) {
		b = tally_batch_new();
		sysfs_read(NULL, &s, b);
		tally_batch_unref(b);
	}
	b = tally_batch_new();
	before = alloc_count();
	sysfs_read(NULL, &s, b);
	during = alloc_count() - before;
	cmp_ok(tally_batch_count(b), "==", 56, "the fixture's 56 series");
	tally_batch_unref(b);
	cmp_ok(during, "==", 0, "steady-state tick allocates nothing");
	sysfs_fini(NULL, &s);
}

int main(void)
{
	plan(NO_PLAN);
	test_clean();
	test_split();
	test_metric();
	test_values();
	test_no_alloc();
	return done_testing();
}
