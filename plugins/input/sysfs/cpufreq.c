/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/sysfs/cpufreq.c - the cpufreq group
 *
 * node_exporter's cpufreq collector, from
 * /sys/devices/system/cpu/cpuN/cpufreq (kHz * 1000), label cpu="N":
 *   cpuinfo_cur_freq  node_cpu_frequency_hertz (readable by root only on
 *                     most drivers: absent otherwise, as node_exporter)
 *   cpuinfo_max_freq  node_cpu_frequency_max_hertz
 *   cpuinfo_min_freq  node_cpu_frequency_min_hertz
 *   scaling_cur_freq  node_cpu_scaling_frequency_hertz
 *   scaling_max_freq  node_cpu_scaling_frequency_max_hertz
 *   scaling_min_freq  node_cpu_scaling_frequency_min_hertz
 * A CPU without a cpufreq directory (offline, a VM) exports nothing.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>

#include "sysfs.h"

static const struct {
	const char *file, *name, *help;
} cpufreq_files[] = {
	{ "cpuinfo_cur_freq", "node_cpu_frequency_hertz",
	  "Current cpu thread frequency in hertz." },
	{ "cpuinfo_max_freq", "node_cpu_frequency_max_hertz",
	  "Maximum cpu thread frequency in hertz." },
	{ "cpuinfo_min_freq", "node_cpu_frequency_min_hertz",
	  "Minimum cpu thread frequency in hertz." },
	{ "scaling_cur_freq", "node_cpu_scaling_frequency_hertz",
	  "Current scaled CPU thread frequency in hertz." },
	{ "scaling_max_freq", "node_cpu_scaling_frequency_max_hertz",
	  "Maximum scaled CPU thread frequency in hertz." },
	{ "scaling_min_freq", "node_cpu_scaling_frequency_min_hertz",
	  "Minimum scaled CPU thread frequency in hertz." },
};

int sysfs_scan_cpufreq(struct tally_instance *inst, struct sysfs *s)
{
	char dir[PATH_MAX], path[PATH_MAX];
	char **names;
	int n;

	sysfs_fmt(dir, sizeof(dir), "%s/devices/system/cpu", s->root);
	n = sysfs_scandir(dir, "cpu", &names);
	if (n < 0) {
		if (errno == ENOMEM)
			return -1;
		tally_log(inst, LOG_DEBUG, "%s: %s, no cpufreq metrics", dir,
			  strerror(errno));
		return 0;
	}
	for (int i = 0; i < n; i++) {
		const char *cpu = sysfs_numbered(names[i], "cpu");
		struct tally_labels *l = tally_labels_newv("cpu", cpu, NULL);
		int ret = 0;

		if (!l) {
			sysfs_free_names(names);
			return -1;
		}
		for (size_t f = 0;
		     f < sizeof(cpufreq_files) / sizeof(cpufreq_files[0]) &&
		     ret == 0;
		     f++) {
			sysfs_fmt(path, sizeof(path), "%s/%s/cpufreq/%s", dir,
				 names[i], cpufreq_files[f].file);
			ret = sysfs_add(s, path, 1000.0, 1, TALLY_GAUGE,
					cpufreq_files[f].name,
					cpufreq_files[f].help, l);
		}
		tally_labels_unref(l);
		if (ret < 0) {
			sysfs_free_names(names);
			return -1;
		}
	}
	sysfs_free_names(names);
	return 0;
}
