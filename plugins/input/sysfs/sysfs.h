/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/sysfs/sysfs.h - state shared by the sysfs input's files
 *
 *   sysfs.c    options, hooks, the value table read each tick
 *   hwmon.c    /sys/class/hwmon: node_hwmon_*
 *   thermal.c  /sys/class/thermal: node_thermal_zone_temp, node_cooling_*
 *   cpufreq.c  /sys/devices/system/cpu/cpuN/cpufreq: node_cpu_*frequency*
 *   edac.c     /sys/devices/system/edac/mc: node_edac_*
 *
 * Each group (node_exporter's hwmon, thermal_zone, cpufreq and edac
 * collectors) only discovers files: it adds one struct sysfs_value per
 * metric to the table, which sysfs.c reads each tick. Private to the
 * plugin; everything runs on the loop thread.
 */
#ifndef TALLY_SYSFS_H
#define TALLY_SYSFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <tally/io.h>
#include <tally/plugin.h>

/* Longest attribute kept (a sensor value, a label, a type name). */
#define SYSFS_ATTR_MAX 128

/**
 * struct sysfs_value - one metric read from one file each tick
 * @fd:     the attribute, kept open and re-read from offset 0; -1 for a
 *          constant (an info metric: @mul is its value)
 * @mul:    the file's number is multiplied by @mul, then divided by @div,
 *          in that order and as node_exporter does (millidegrees * 0.001,
 *          microwatts / 1e6), so that values match it bit for bit
 * @div:    see @mul
 * @type:   TALLY_GAUGE or TALLY_COUNTER
 * @name:   metric name (heap)
 * @help:   help text (heap)
 * @labels: label set
 * @path:   the file, for log lines (heap)
 * @err:    errno of the read failure last logged (0: none); EINVAL for a
 *          value that is not a number
 */
struct sysfs_value {
	int fd;
	double mul, div;
	enum tally_metric_type type;
	char *name;
	char *help;
	struct tally_labels *labels;
	char *path;
	int err;
};

struct sysfs {
	/* options */
	char *root; /* sysfs mount point */
	bool hwmon, thermal_zone, cpufreq, edac;
	double rescan; /* seconds between directory scans */

	struct sysfs_value *v;
	size_t n, cap;
	int64_t scanned_ns; /* CLOCK_MONOTONIC of the last scan, 0: never */
	struct tally_readbuf rb;
};

/**
 * sysfs_add() - add a metric to the table
 * @s:      the state
 * @path:   the file to read each tick, or NULL for a constant (@mul)
 * @mul:    multiplier (or the constant)
 * @div:    divisor
 * @type:   TALLY_GAUGE or TALLY_COUNTER
 * @name:   metric name (copied)
 * @help:   help text (copied)
 * @labels: label set (the table takes a reference)
 *
 * A file that cannot be opened (absent, root-only) adds nothing.
 * Return: 0 (added or skipped), or -1 with errno = ENOMEM.
 */
int sysfs_add(struct sysfs *s, const char *path, double mul, double div,
	      enum tally_metric_type type, const char *name, const char *help,
	      struct tally_labels *labels);

/**
 * sysfs_read_attr() - read a small attribute file whole, newline cut
 * @path: the file
 * @out:  its text (at most SYSFS_ATTR_MAX - 1 bytes)
 * Return: 0, or -1 with errno (open or read).
 */
int sysfs_read_attr(const char *path, char out[SYSFS_ATTR_MAX]);

/**
 * sysfs_numbered() - "prefixN" names: N, or NULL when @name is not one
 * @name:   a directory entry, e.g. "thermal_zone3"
 * @prefix: e.g. "thermal_zone"
 */
const char *sysfs_numbered(const char *name, const char *prefix);

/**
 * sysfs_scandir() - the entries of @dir matching "prefixN", by N
 * @dir:    directory path
 * @prefix: entry name prefix; NULL for every entry but "." and ".."
 *          (sorted by name)
 * @names:  set to a NULL-terminated array of names (free each and it)
 * Return: the number of entries, or -1 with errno (ENOENT: no such dir).
 */
int sysfs_scandir(const char *dir, const char *prefix, char ***names);

/**
 * sysfs_fmt() - snprintf(3) into @out, for paths and names
 * Return: 0, or -1 when the text was cut to fit (a path that long is
 * not opened: the open fails on the cut path, or finds nothing).
 */
int sysfs_fmt(char *out, size_t size, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/** sysfs_free_names() - free what sysfs_scandir() returned */
void sysfs_free_names(char **names);

int sysfs_scan_hwmon(struct tally_instance *inst, struct sysfs *s);
int sysfs_scan_thermal(struct tally_instance *inst, struct sysfs *s);
int sysfs_scan_cpufreq(struct tally_instance *inst, struct sysfs *s);
int sysfs_scan_edac(struct tally_instance *inst, struct sysfs *s);

#endif /* TALLY_SYSFS_H */
