/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/sysfs/hwmon.c - the hwmon group: /sys/class/hwmon
 *
 * node_exporter's hwmon collector. Each hwmonN directory is one chip,
 * labelled chip= with a stable name: "<bus>_<device>" from where its
 * device link points (platform_coretemp_0, pci0000:00_0000:00:18_3), else
 * its name file (acpitz), else hwmonN; lower case, characters outside
 * [a-z0-9:_] made '_'. Its sensor files (in the directory and in device/,
 * for old drivers), named <type><N>[_<element>] (temp1_input, fan2_min,
 * in0_label), give one metric per element, sensor="<type><N>":
 *   temp -> node_hwmon_temp[_<element>]_celsius (millidegrees * 0.001)
 *   in, cpu -> _volts (mV * 0.001), curr -> _amps (mA * 0.001),
 *   power -> _watt (uW / 1e6), energy -> _joule_total (uJ / 1e6),
 *   fan -> _rpm (input, min, max, target), humidity (m% / 1e6),
 *   <element> fault and alarm as they are, beep as _beep_enabled, the
 *   rest (pwm, intrusion, ...) node_hwmon_<type>[_<element>] as read.
 * node_hwmon_chip_names{chip,chip_name} gives the name file of a chip,
 * node_hwmon_sensor_label{chip,label,sensor} the label file of a sensor.
 * "_input" is the sensor's value and adds nothing to the name, unless the
 * sensor also has a file without element (then it is "_input").
 *
 * Pure parts (the file name split, the name cleaning) are unit-tested.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "sysfs.h"

/* The sensor types node_exporter reads; other files are not sensors. */
static const char *const hwmon_types[] = {
	"vrm",	"beep_enable", "update_interval", "in",	    "cpu",
	"fan",	"pwm",	       "temp",		  "curr",   "power",
	"energy", "humidity",  "intrusion",
};

/**
 * hwmon_clean() - node_exporter's name cleaning
 * @in:   text (a chip name, a device path element, an element)
 * @out:  lower case, each character outside [a-z0-9:_] made '_', leading
 *        and trailing '_' removed
 * @size: room in @out (the text is cut to fit)
 */
static void hwmon_clean(const char *in, char *out, size_t size)
{
	size_t n = 0, start = 0;

	for (; *in && n + 1 < size; in++) {
		char c = *in;

		if (c >= 'A' && c <= 'Z')
			c = (char)(c - 'A' + 'a');
		if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == ':' || c == '_'))
			c = '_';
		out[n++] = c;
	}
	while (n && out[n - 1] == '_')
		n--;
	out[n] = '\0';
	while (out[start] == '_')
		start++;
	memmove(out, out + start, n - start + 1);
}

/**
 * struct hwmon_file - a sensor file name split as node_exporter splits it
 * @type:    "temp", "update_interval"
 * @num:     the number after the type (0 when none)
 * @element: after the first '_' that follows the number ("input",
 *           "crit_alarm"); "" when none
 */
struct hwmon_file {
	char type[32];
	unsigned num;
	char element[64];
};

/**
 * hwmon_split() - split "<type><N>[_<element>]" for a known sensor type
 * @name: a file name, e.g. "temp1_crit_alarm"
 * @f:    result
 *
 * The type is every character up to the first digit ("update_interval"
 * has no number, "pwm1_enable" is pwm, 1, enable); without digits an
 * element is never split off (node_exporter's regular expression).
 * Return: 0, or -1 when it is not one of the sensor types read.
 */
static int hwmon_split(const char *name, struct hwmon_file *f)
{
	size_t t = strcspn(name, "0123456789");
	const char *s = name + t;
	bool known = false;

	if (t == 0 || t >= sizeof(f->type))
		return -1;
	memcpy(f->type, name, t);
	f->type[t] = '\0';
	for (size_t i = 0; i < sizeof(hwmon_types) / sizeof(hwmon_types[0]);
	     i++)
		known = known || !strcmp(f->type, hwmon_types[i]);
	if (!known)
		return -1;
	f->num = 0;
	while (*s >= '0' && *s <= '9') {
		if (f->num > 100000)
			return -1;
		f->num = f->num * 10 + (unsigned)(*s++ - '0');
	}
	f->element[0] = '\0';
	if (*s == '\0')
		return 0;
	if (*s != '_' || !s[1] || strlen(s + 1) >= sizeof(f->element))
		return -1;
	strcpy(f->element, s + 1);
	return 0;
}

/* The chip label of hwmon directory @dir (a resolved path). */
static void hwmon_chip(const char *dir, char *out, size_t size)
{
	char path[PATH_MAX], real[PATH_MAX], attr[SYSFS_ATTR_MAX];
	char *base, *slash;

	sysfs_fmt(path, sizeof(path), "%s/device", dir);
	if (realpath(path, real)) {
		char dev[128], bus[128];

		base = strrchr(real, '/');
		if (base) {
			*base = '\0';
			hwmon_clean(base + 1, dev, sizeof(dev));
			slash = strrchr(real, '/');
			hwmon_clean(slash ? slash + 1 : real, bus, sizeof(bus));
			if (bus[0] && dev[0]) {
				sysfs_fmt(out, size, "%s_%s", bus, dev);
				return;
			}
			if (dev[0]) {
				sysfs_fmt(out, size, "%s", dev);
				return;
			}
		}
	}
	sysfs_fmt(path, sizeof(path), "%s/name", dir);
	if (sysfs_read_attr(path, attr) == 0) {
		hwmon_clean(attr, out, size);
		if (out[0])
			return;
	}
	base = strrchr(dir, '/');
	hwmon_clean(base ? base + 1 : dir, out, size);
}

/**
 * struct hwmon_elem - one sensor file found in a chip's directories
 * @sensor: "<type><N>"
 * @f:      its split name
 * @path:   the file
 */
struct hwmon_elem {
	char sensor[48];
	struct hwmon_file f;
	char path[PATH_MAX];
};

static int hwmon_elem_cmp(const void *a, const void *b)
{
	const struct hwmon_elem *x = a, *y = b;
	int c = strcmp(x->sensor, y->sensor);

	return c ? c : strcmp(x->f.element, y->f.element);
}

/* Collect the sensor files of @dir into @v (grown). */
static int hwmon_collect(const char *dir, struct hwmon_elem **v, size_t *n)
{
	char **names;
	int cnt = sysfs_scandir(dir, NULL, &names);

	if (cnt < 0)
		return errno == ENOMEM ? -1 : 0;
	for (int i = 0; i < cnt; i++) {
		struct hwmon_elem e;
		struct hwmon_elem *nv;
		bool dup = false;

		if (hwmon_split(names[i], &e.f) < 0)
			continue;
		sysfs_fmt(e.sensor, sizeof(e.sensor), "%s%u", e.f.type, e.f.num);
		sysfs_fmt(e.path, sizeof(e.path), "%s/%s", dir, names[i]);
		for (size_t j = 0; j < *n && !dup; j++)
			dup = !strcmp((*v)[j].sensor, e.sensor) &&
			      !strcmp((*v)[j].f.element, e.f.element);
		if (dup)
			continue;
		nv = realloc(*v, (*n + 1) * sizeof(**v));
		if (!nv) {
			sysfs_free_names(names);
			return -1;
		}
		*v = nv;
		(*v)[(*n)++] = e;
	}
	sysfs_free_names(names);
	return 0;
}

/**
 * hwmon_metric() - name, help and scaling of one sensor element
 * @type:    sensor type ("temp")
 * @element: element ("max", "" for none)
 * @bare:    the sensor has a file without element (then "input" is named)
 * @name:    out: metric name
 * @help:    out: help text
 * @mul:     out: multiplier
 * @div:     out: divisor
 * @ctr:     out: the metric is a counter
 */
static void hwmon_metric(const char *type, const char *element, bool bare,
			 char *name, size_t nsize, char *help, size_t hsize,
			 double *mul, double *div, bool *ctr)
{
	char base[128], el[64];
	const char *he = element;

	hwmon_clean(element, el, sizeof(el));
	if (!strcmp(element, "input"))
		sysfs_fmt(base, sizeof(base), "node_hwmon_%s%s", type,
			 bare ? "_input" : "");
	else if (element[0])
		sysfs_fmt(base, sizeof(base), "node_hwmon_%s_%s", type, el);
	else
		sysfs_fmt(base, sizeof(base), "node_hwmon_%s", type);
	*mul = *div = 1;
	*ctr = false;
	if (!strcmp(element, "fault") || !strcmp(element, "alarm")) {
		sysfs_fmt(name, nsize, "%s", base);
		sysfs_fmt(help, hsize, "Hardware sensor %s status (%s)", element,
			 type);
	} else if (!strcmp(element, "beep")) {
		sysfs_fmt(name, nsize, "%s_enabled", base);
		sysfs_fmt(help, hsize,
			 "Hardware monitor sensor has beeping enabled");
	} else if (!strcmp(type, "in") || !strcmp(type, "cpu")) {
		sysfs_fmt(name, nsize, "%s_volts", base);
		sysfs_fmt(help, hsize, "Hardware monitor for voltage (%s)", he);
		*mul = 0.001;
	} else if (!strcmp(type, "temp") && strcmp(element, "type") != 0) {
		sysfs_fmt(name, nsize, "%s_celsius", base);
		sysfs_fmt(help, hsize, "Hardware monitor for temperature (%s)",
			 he[0] ? he : "input");
		*mul = 0.001;
	} else if (!strcmp(type, "curr")) {
		sysfs_fmt(name, nsize, "%s_amps", base);
		sysfs_fmt(help, hsize, "Hardware monitor for current (%s)", he);
		*mul = 0.001;
	} else if (!strcmp(type, "energy")) {
		sysfs_fmt(name, nsize, "%s_joule_total", base);
		sysfs_fmt(help, hsize,
			 "Hardware monitor for joules used so far (%s)", he);
		*div = 1000000.0;
		*ctr = true;
	} else if (!strcmp(type, "power") && !strcmp(element, "accuracy")) {
		sysfs_fmt(name, nsize, "%s", base);
		sysfs_fmt(help, hsize,
			 "Hardware monitor power meter accuracy, as a ratio");
		*div = 1000000.0;
	} else if (!strcmp(type, "power") &&
		   (!strcmp(element, "average_interval") ||
		    !strcmp(element, "average_interval_min") ||
		    !strcmp(element, "average_interval_max"))) {
		sysfs_fmt(name, nsize, "%s_seconds", base);
		sysfs_fmt(help, hsize,
			 "Hardware monitor power usage update interval (%s)",
			 he);
		*mul = 0.001;
	} else if (!strcmp(type, "power")) {
		sysfs_fmt(name, nsize, "%s_watt", base);
		sysfs_fmt(help, hsize,
			 "Hardware monitor for power usage in watts (%s)", he);
		*div = 1000000.0;
	} else if (!strcmp(type, "humidity")) {
		sysfs_fmt(name, nsize, "%s", base);
		sysfs_fmt(help, hsize,
			 "Hardware monitor for humidity, as a ratio (multiply "
			 "with 100.0 to get the humidity as a percentage) (%s)",
			 he);
		*div = 1000000.0;
	} else if (!strcmp(type, "fan") &&
		   (!strcmp(element, "input") || !strcmp(element, "min") ||
		    !strcmp(element, "max") || !strcmp(element, "target"))) {
		sysfs_fmt(name, nsize, "%s_rpm", base);
		sysfs_fmt(help, hsize,
			 "Hardware monitor for fan revolutions per minute (%s)",
			 he);
	} else {
		sysfs_fmt(name, nsize, "%s", base);
		sysfs_fmt(help, hsize, "Hardware monitor %s element %s", type,
			 he);
	}
}

/* One sensor: elements @e[0..n) share its name. */
static int hwmon_sensor(struct sysfs *s, const char *chip,
			const struct hwmon_elem *e, size_t n)
{
	const char *type = e[0].f.type;
	struct tally_labels *labels;
	bool bare = false;
	int ret = 0;

	for (size_t i = 0; i < n; i++)
		bare = bare || !e[i].f.element[0];
	labels = tally_labels_newv("chip", chip, "sensor", e[0].sensor, NULL);
	if (!labels)
		return -1;
	for (size_t i = 0; i < n && ret == 0; i++) {
		const struct hwmon_elem *x = &e[i];
		char name[256], help[256], label[SYSFS_ATTR_MAX];
		double mul, div;
		bool ctr;

		if (!strcmp(x->f.element, "label")) {
			struct tally_labels *l;

			if (sysfs_read_attr(x->path, label) < 0 || !label[0])
				continue;
			l = tally_labels_newv("chip", chip, "label", label,
					      "sensor", x->sensor, NULL);
			if (!l) {
				ret = -1;
				break;
			}
			ret = sysfs_add(s, NULL, 1, 1, TALLY_GAUGE,
					"node_hwmon_sensor_label",
					"Label for given chip and sensor", l);
			tally_labels_unref(l);
			continue;
		}
		if (!strcmp(type, "beep_enable"))
			ret = sysfs_add(s, x->path, 1, 1, TALLY_GAUGE,
					"node_hwmon_beep_enabled",
					"Hardware beep enabled", labels);
		else if (!strcmp(type, "vrm"))
			ret = sysfs_add(s, x->path, 1, 1, TALLY_GAUGE,
					"node_hwmon_voltage_regulator_version",
					"Hardware voltage regulator", labels);
		else if (!strcmp(type, "update_interval"))
			ret = sysfs_add(s, x->path, 0.001, 1, TALLY_GAUGE,
					"node_hwmon_update_interval_seconds",
					"Hardware monitor update interval",
					labels);
		else {
			hwmon_metric(type, x->f.element, bare, name,
				     sizeof(name), help, sizeof(help), &mul,
				     &div, &ctr);
			ret = sysfs_add(s, x->path, mul, div,
					ctr ? TALLY_COUNTER : TALLY_GAUGE, name,
					help, labels);
		}
	}
	tally_labels_unref(labels);
	return ret;
}

/* One chip: directory @dir (resolved). */
static int hwmon_chip_scan(struct sysfs *s, const char *dir)
{
	char chip[128], path[PATH_MAX], attr[SYSFS_ATTR_MAX];
	struct hwmon_elem *v = NULL;
	size_t n = 0;
	int ret = 0;

	hwmon_chip(dir, chip, sizeof(chip));
	if (!chip[0])
		return 0;
	sysfs_fmt(path, sizeof(path), "%s/name", dir);
	if (sysfs_read_attr(path, attr) == 0) {
		char clean[128];
		struct tally_labels *l;

		hwmon_clean(attr, clean, sizeof(clean));
		if (clean[0]) {
			l = tally_labels_newv("chip", chip, "chip_name", clean,
					      NULL);
			if (!l)
				return -1;
			ret = sysfs_add(s, NULL, 1, 1, TALLY_GAUGE,
					"node_hwmon_chip_names",
					"Annotation metric for human-readable "
					"chip names",
					l);
			tally_labels_unref(l);
			if (ret < 0)
				return -1;
		}
	}
	sysfs_fmt(path, sizeof(path), "%s/device", dir);
	if (hwmon_collect(dir, &v, &n) < 0 || hwmon_collect(path, &v, &n) < 0)
		goto out_nomem;
	qsort(v, n, sizeof(*v), hwmon_elem_cmp);
	for (size_t i = 0; i < n && ret == 0;) {
		size_t j = i;

		while (j < n && !strcmp(v[j].sensor, v[i].sensor))
			j++;
		ret = hwmon_sensor(s, chip, &v[i], j - i);
		i = j;
	}
	free(v);
	return ret;
out_nomem:
	free(v);
	errno = ENOMEM;
	return -1;
}

int sysfs_scan_hwmon(struct tally_instance *inst, struct sysfs *s)
{
	char dir[PATH_MAX], path[PATH_MAX], real[PATH_MAX];
	char **names;
	int n;

	sysfs_fmt(dir, sizeof(dir), "%s/class/hwmon", s->root);
	n = sysfs_scandir(dir, "hwmon", &names);
	if (n < 0) {
		if (errno == ENOMEM)
			return -1;
		tally_log(inst, LOG_DEBUG, "%s: %s, no hwmon metrics", dir,
			  strerror(errno));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		sysfs_fmt(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!realpath(path, real))
			continue;
		if (hwmon_chip_scan(s, real) < 0) {
			sysfs_free_names(names);
			return -1;
		}
	}
	sysfs_free_names(names);
	return 0;
}
