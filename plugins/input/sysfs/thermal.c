/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/sysfs/thermal.c - the thermal_zone group: /sys/class/thermal
 *
 * node_exporter's thermal_zone collector:
 *   node_thermal_zone_temp{type,zone} - thermal_zoneN/temp, millidegrees
 *     / 1000 (zone="N", type from thermal_zoneN/type)
 *   node_cooling_device_cur_state{name,type}, _max_state - cooling_deviceN
 * A zone or device without its type or value file is skipped.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "sysfs.h"

static int thermal_zone(struct sysfs *s, const char *dir, const char *n)
{
	char path[PATH_MAX], type[SYSFS_ATTR_MAX];
	struct tally_labels *l;
	int ret;

	sysfs_fmt(path, sizeof(path), "%s/thermal_zone%s/type", dir, n);
	if (sysfs_read_attr(path, type) < 0)
		return 0;
	l = tally_labels_newv("type", type, "zone", n, NULL);
	if (!l)
		return -1;
	sysfs_fmt(path, sizeof(path), "%s/thermal_zone%s/temp", dir, n);
	ret = sysfs_add(s, path, 1, 1000.0, TALLY_GAUGE,
			"node_thermal_zone_temp", "Zone temperature in Celsius",
			l);
	tally_labels_unref(l);
	return ret;
}

static int thermal_cooling(struct sysfs *s, const char *dir, const char *n)
{
	char path[PATH_MAX], type[SYSFS_ATTR_MAX];
	struct tally_labels *l;
	int ret;

	sysfs_fmt(path, sizeof(path), "%s/cooling_device%s/type", dir, n);
	if (sysfs_read_attr(path, type) < 0)
		return 0;
	l = tally_labels_newv("name", n, "type", type, NULL);
	if (!l)
		return -1;
	sysfs_fmt(path, sizeof(path), "%s/cooling_device%s/cur_state", dir, n);
	ret = sysfs_add(s, path, 1, 1, TALLY_GAUGE,
			"node_cooling_device_cur_state",
			"Current throttle state of the cooling device", l);
	sysfs_fmt(path, sizeof(path), "%s/cooling_device%s/max_state", dir, n);
	if (ret == 0)
		ret = sysfs_add(s, path, 1, 1, TALLY_GAUGE,
				"node_cooling_device_max_state",
				"Maximum throttle state of the cooling device",
				l);
	tally_labels_unref(l);
	return ret;
}

int sysfs_scan_thermal(struct tally_instance *inst, struct sysfs *s)
{
	static const char *const prefixes[2] = { "thermal_zone",
						 "cooling_device" };
	char dir[PATH_MAX];

	sysfs_fmt(dir, sizeof(dir), "%s/class/thermal", s->root);
	for (int k = 0; k < 2; k++) {
		char **names;
		int n = sysfs_scandir(dir, prefixes[k], &names);

		if (n < 0) {
			if (errno == ENOMEM)
				return -1;
			tally_log(inst, LOG_DEBUG, "%s: %s, no thermal metrics",
				  dir, strerror(errno));
			return 0;
		}
		for (int i = 0; i < n; i++) {
			const char *num = sysfs_numbered(names[i], prefixes[k]);

			if ((k ? thermal_cooling(s, dir, num)
			       : thermal_zone(s, dir, num)) < 0) {
				sysfs_free_names(names);
				return -1;
			}
		}
		sysfs_free_names(names);
	}
	return 0;
}
