/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/sysfs/sysfs.c - hardware sensors, thermal zones, CPU
 * frequencies and memory ECC errors from /sys
 *
 * Names, labels, units and help texts are node_exporter 1.5's (its hwmon,
 * thermal_zone, cpufreq and edac collectors; see sysfs.h for the files).
 *
 * Cost model: the directories are scanned at the first tick and again
 * every `rescan_interval` seconds (hardware comes and goes rarely); a scan
 * opens every value file once and builds the metric's name, help text and
 * label set. A tick is then one pread() per value into one buffer, and the
 * names are copied into the batch's arena: no allocation in steady state.
 *
 * Failure model: a group whose directory is absent (a VM without hwmon, a
 * kernel without EDAC) exports nothing, logged once at info level. A value
 * file whose read fails (EIO, ENODATA from a sensor that is absent or
 * faulty: common with hwmon drivers) or that is not a number is skipped
 * for the tick, counted as "unreadable" or "malformed", and logged once
 * until it reads again. A file that disappears (ENODEV: the device went)
 * is skipped until the next scan.
 */
#include "config.h"

#include <dirent.h>
#include <stdarg.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "sysfs.h"

int sysfs_add(struct sysfs *s, const char *path, double mul, double div,
	      enum tally_metric_type type, const char *name, const char *help,
	      struct tally_labels *labels)
{
	struct sysfs_value *v;
	int fd = -1;

	if (path) {
		fd = tally_open_file(AT_FDCWD, path);
		if (fd < 0)
			return 0; /* absent, a directory, root-only */
	}
	if (s->n == s->cap) {
		size_t cap = s->cap ? 2 * s->cap : 32;
		struct sysfs_value *nv = realloc(s->v, cap * sizeof(*nv));

		if (!nv)
			goto out_close;
		s->v = nv;
		s->cap = cap;
	}
	v = &s->v[s->n];
	memset(v, 0, sizeof(*v));
	v->fd = fd;
	v->mul = mul;
	v->div = div;
	v->type = type;
	v->name = strdup(name);
	v->help = strdup(help);
	v->path = strdup(path ? path : "");
	if (!v->name || !v->help || !v->path) {
		free(v->name);
		free(v->help);
		free(v->path);
		goto out_close;
	}
	v->labels = tally_labels_ref(labels);
	s->n++;
	return 0;
out_close:
	if (fd >= 0)
		close(fd);
	errno = ENOMEM;
	return -1;
}

int sysfs_fmt(char *out, size_t size, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(out, size, fmt, ap);
	va_end(ap);
	return n < 0 || (size_t)n >= size ? -1 : 0;
}

int sysfs_read_attr(const char *path, char out[SYSFS_ATTR_MAX])
{
	int fd = tally_open_file(AT_FDCWD, path);
	ssize_t n;

	if (fd < 0)
		return -1;
	n = pread(fd, out, SYSFS_ATTR_MAX - 1, 0);
	close(fd);
	if (n < 0)
		return -1;
	out[n] = '\0';
	out[strcspn(out, "\n")] = '\0';
	return 0;
}

const char *sysfs_numbered(const char *name, const char *prefix)
{
	size_t n = strlen(prefix);
	const char *d = name + n;

	if (strncmp(name, prefix, n) != 0 || !*d)
		return NULL;
	for (const char *c = d; *c; c++)
		if (*c < '0' || *c > '9')
			return NULL;
	return d;
}

/* scandir(3) filter and order need the prefix: kept here, loop thread. */
static const char *sysfs_prefix;

static int sysfs_filter(const struct dirent *e)
{
	if (!sysfs_prefix)
		return strcmp(e->d_name, ".") != 0 &&
		       strcmp(e->d_name, "..") != 0;
	return sysfs_numbered(e->d_name, sysfs_prefix) != NULL;
}

static int sysfs_order(const struct dirent **a, const struct dirent **b)
{
	if (sysfs_prefix) {
		unsigned long na = strtoul((*a)->d_name + strlen(sysfs_prefix),
					   NULL, 10);
		unsigned long nb = strtoul((*b)->d_name + strlen(sysfs_prefix),
					   NULL, 10);

		if (na != nb)
			return na < nb ? -1 : 1;
	}
	return strcmp((*a)->d_name, (*b)->d_name);
}

int sysfs_scandir(const char *dir, const char *prefix, char ***names)
{
	struct dirent **ents;
	char **v;
	int n;

	sysfs_prefix = prefix;
	n = scandir(dir, &ents, sysfs_filter, sysfs_order);
	if (n < 0)
		return -1;
	v = calloc((size_t)n + 1, sizeof(*v));
	for (int i = 0; i < n; i++) {
		if (v && !(v[i] = strdup(ents[i]->d_name))) {
			sysfs_free_names(v);
			v = NULL;
		}
		free(ents[i]);
	}
	free(ents);
	if (!v) {
		errno = ENOMEM;
		return -1;
	}
	*names = v;
	return n;
}

void sysfs_free_names(char **names)
{
	if (!names)
		return;
	for (char **p = names; *p; p++)
		free(*p);
	free(names);
}

static void sysfs_clear(struct sysfs *s)
{
	for (size_t i = 0; i < s->n; i++) {
		struct sysfs_value *v = &s->v[i];

		if (v->fd >= 0)
			close(v->fd);
		free(v->name);
		free(v->help);
		free(v->path);
		tally_labels_unref(v->labels);
	}
	s->n = 0;
}

/* Rebuild the table from the directories. Return: 0, or -1 (ENOMEM). */
static int sysfs_scan(struct tally_instance *inst, struct sysfs *s)
{
	sysfs_clear(s);
	if (s->hwmon && sysfs_scan_hwmon(inst, s) < 0)
		return -1;
	if (s->thermal_zone && sysfs_scan_thermal(inst, s) < 0)
		return -1;
	if (s->cpufreq && sysfs_scan_cpufreq(inst, s) < 0)
		return -1;
	if (s->edac && sysfs_scan_edac(inst, s) < 0)
		return -1;
	return 0;
}

/**
 * sysfs_parse_value() - the number of an attribute's text
 * @text: e.g. "45000\n", "-2500"
 * @v:    result
 * Return: 0, or -1 (not a number, or trailing garbage).
 */
static int sysfs_parse_value(const char *text, double *v)
{
	char *end;

	*v = strtod(text, &end);
	if (end == text)
		return -1;
	while (*end == ' ' || *end == '\n' || *end == '\t')
		end++;
	return *end ? -1 : 0;
}

static void sysfs_failed(struct tally_instance *inst, struct sysfs_value *v,
			 int err)
{
	char esc[PATH_MAX];

	if (v->err == err)
		return;
	v->err = err;
	tally_count_drop(inst, err == EINVAL ? "malformed" : "unreadable", 1);
	/* the path holds names read from sysfs (chips, sensors) */
	tally_log_peer_text(esc, sizeof(esc), v->path, strlen(v->path));
	tally_log(inst, LOG_INFO, "%s: %s, skipped until it reads again", esc,
		  err == EINVAL ? "not a number" : strerror(err));
}

static int sysfs_read(struct tally_instance *inst, void *state,
		      struct tally_batch *out)
{
	struct sysfs *s = state;
	int64_t ts = tally_now_ns(), now = tally_monotonic_ns();

	if (!s->scanned_ns || now - s->scanned_ns >= s->rescan * 1e9) {
		s->scanned_ns = now ? now : 1;
		if (sysfs_scan(inst, s) < 0)
			return -1;
	}
	for (size_t i = 0; i < s->n; i++) {
		struct sysfs_value *v = &s->v[i];
		double x = v->mul;

		if (v->fd >= 0) {
			if (tally_read_whole(v->fd, &s->rb) < 0) {
				if (errno == ENOMEM)
					return -1;
				sysfs_failed(inst, v, errno);
				continue;
			}
			if (sysfs_parse_value(s->rb.data, &x) < 0) {
				sysfs_failed(inst, v, EINVAL);
				continue;
			}
			if (v->err) {
				char esc[PATH_MAX];

				tally_log_peer_text(esc, sizeof(esc), v->path,
						    strlen(v->path));
				tally_log(inst, LOG_INFO, "%s: reads again",
					  esc);
			}
			v->err = 0;
			x = x * v->mul / v->div;
		}
		if (tally_batch_add_metric(out, v->type, v->name, v->help,
					   v->labels, x, ts) < 0)
			return -1;
	}
	return 0;
}

static int sysfs_init(struct tally_instance *inst, void *state)
{
	struct sysfs *s = state;

	if (!s->root || !s->root[0]) {
		tally_log(inst, LOG_ERR, "root must not be empty");
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static void sysfs_fini(struct tally_instance *inst, void *state)
{
	struct sysfs *s = state;

	sysfs_clear(s);
	free(s->v);
	s->v = NULL;
	s->cap = 0;
	tally_readbuf_free(&s->rb);
}

static const struct tally_option sysfs_options[] = {
	TALLY_OPT_STRING("root", struct sysfs, root, "/sys",
			 "sysfs mount point to read (containers: /host/sys)"),
	TALLY_OPT_BOOL("hwmon", struct sysfs, hwmon, "true",
		       "node_hwmon_*: ROOT/class/hwmon sensors"),
	TALLY_OPT_BOOL("thermal_zone", struct sysfs, thermal_zone, "true",
		       "node_thermal_zone_temp, node_cooling_device_*: "
		       "ROOT/class/thermal"),
	TALLY_OPT_BOOL("cpufreq", struct sysfs, cpufreq, "true",
		       "node_cpu_*frequency*_hertz: "
		       "ROOT/devices/system/cpu/cpuN/cpufreq"),
	TALLY_OPT_BOOL("edac", struct sysfs, edac, "true",
		       "node_edac_*: ROOT/devices/system/edac/mc"),
	TALLY_OPT_DURATION("rescan_interval", struct sysfs, rescan, "60s",
			   0.001, 86400,
			   "time between scans of the directories for "
			   "sensors, zones, CPUs and memory controllers"),
	TALLY_OPT_END,
};

static const struct tally_input_ops sysfs_ops = {
	.init = sysfs_init,
	.read = sysfs_read,
	.fini = sysfs_fini,
};

TALLY_PLUGIN_INPUT(sysfs,
		   "hardware sensors, thermal zones, CPU frequencies and "
		   "memory ECC errors from /sys",
		   struct sysfs, sysfs_options, &sysfs_ops);
