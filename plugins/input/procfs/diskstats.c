/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/procfs/diskstats.c - the diskstats group
 *
 * node_exporter's diskstats collector: node_disk_*{device} from
 * /proc/diskstats (Documentation/admin-guide/iostats.rst). The kernel
 * prints 11 counters per device before 4.18, 15 (discards) from 4.18 and
 * 17 (flushes) from 5.5; the metrics of the counters present are exported.
 * Sectors are 512 bytes whatever the device's sector size; times are
 * milliseconds. node_disk_info{device,major,minor,path,wwn,model,serial,
 * revision} takes the last five from udev's database (UDEV_DATA/bMAJ:MIN),
 * empty where udev has no entry (a container, no udev); so do
 * node_disk_filesystem_info{device,type,usage,uuid,version} (ID_FS_*),
 * node_disk_device_mapper_info{device,name,uuid,vg_name,lv_name,lv_layer}
 * (DM_*) and node_disk_ata_{write_cache,write_cache_enabled,
 * rotation_rate_rpm} (ID_ATA_*), exported where udev has them.
 *
 * Devices matching `device_exclude` (default node_exporter's: partitions,
 * ram, loop and floppy devices) are skipped; the decision is made once per
 * device, when first seen.
 *
 * Cost model: the file is kept open and re-read each tick. Devices are
 * cached by line position (the kernel lists them in registration order),
 * with their label sets; a tick compares each name with the cached one
 * and allocates nothing unless a disk appeared or went. udev's file is
 * read once per device.
 *
 * Failure model: a line with fewer than 11 counters or a non-number is
 * dropped and counted as "malformed"; counters beyond the 17 known ones
 * (a future kernel) are ignored.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

#define PROCFS_DISK_FIELDS 17
#define PROCFS_DISK_NAME_MAX 64

/**
 * struct procfs_disk_row - one line of /proc/diskstats
 * @major, @minor: device numbers
 * @name:          device name, NUL-terminated
 * @n:             counters present (11, 15 or 17; more are ignored)
 * @v:             the counters in kernel order
 */
struct procfs_disk_row {
	unsigned major, minor;
	char name[PROCFS_DISK_NAME_MAX];
	unsigned n;
	uint64_t v[PROCFS_DISK_FIELDS];
};

/**
 * procfs_parse_diskstats() - parse one line of /proc/diskstats
 * @line: "   8       0 sda 5 0 ...", ending at NUL or newline
 * @r:    result
 * Return: 0, or -1 (malformed: fewer than 11 counters, a non-number, a
 * name longer than PROCFS_DISK_NAME_MAX - 1).
 */
static int procfs_parse_diskstats(const char *line, struct procfs_disk_row *r)
{
	const char *s = line, *name;
	uint64_t maj, min;
	size_t len;

	if (tally_parse_u64(&s, &maj) < 0 || tally_parse_u64(&s, &min) < 0 ||
	    maj > UINT_MAX || min > UINT_MAX)
		return -1;
	name = procfs_blank(s);
	len = strcspn(name, " \t\n");
	if (len == 0 || len >= PROCFS_DISK_NAME_MAX)
		return -1;
	memcpy(r->name, name, len);
	r->name[len] = '\0';
	r->major = (unsigned)maj;
	r->minor = (unsigned)min;
	s = name + len;
	r->n = 0;
	while (!procfs_eol(s)) {
		uint64_t v;

		if (tally_parse_u64(&s, &v) < 0)
			return -1;
		if (r->n < PROCFS_DISK_FIELDS)
			r->v[r->n++] = v;
	}
	return r->n >= 11 ? 0 : -1;
}

/**
 * procfs_udev_value() - one property of a udev database file
 * @text: the file ("S:disk/by-id/...\nE:ID_MODEL=Foo\n...")
 * @key:  property name, e.g. "ID_MODEL"
 * @out:  its value, "" when absent (cut to @size - 1 bytes)
 */
static void procfs_udev_value(const char *text, const char *key, char *out,
			      size_t size)
{
	size_t klen = strlen(key);

	out[0] = '\0';
	procfs_for_each_line(line, nl, text) {
		if (!strncmp(line, "E:", 2) && !strncmp(line + 2, key, klen) &&
		    line[2 + klen] == '=') {
			const char *v = line + 3 + klen;
			size_t n = (size_t)(nl - v);

			snprintf(out, size, "%.*s", (int)n, v);
			return;
		}
	}
}

/* The udev properties the diskstats group reads, in this order. */
enum {
	UDEV_PATH, UDEV_WWN, UDEV_MODEL, UDEV_SERIAL_SHORT, UDEV_REVISION, UDEV_FS_TYPE, UDEV_FS_USAGE, UDEV_FS_UUID,
	UDEV_FS_VERSION, UDEV_DM_NAME, UDEV_DM_UUID, UDEV_DM_VG_NAME,
	UDEV_DM_LV_NAME, UDEV_DM_LV_LAYER, UDEV_ATA, UDEV_ATA_WRITE_CACHE,
	UDEV_ATA_WRITE_CACHE_ENABLED, UDEV_ATA_ROTATION_RATE_RPM, UDEV_NKEYS,
};
static const char *const procfs_udev_keys[UDEV_NKEYS] = {
	"ID_PATH", "ID_WWN", "ID_MODEL", "ID_SERIAL_SHORT", "ID_REVISION", "ID_FS_TYPE", "ID_FS_USAGE",
	"ID_FS_UUID", "ID_FS_VERSION", "DM_NAME", "DM_UUID", "DM_VG_NAME",
	"DM_LV_NAME", "DM_LV_LAYER", "ID_ATA", "ID_ATA_WRITE_CACHE",
	"ID_ATA_WRITE_CACHE_ENABLED", "ID_ATA_ROTATION_RATE_RPM",
};

/* node_disk_ata_*: udev key, name, help */
static const struct {
	int key;
	const char *name, *help;
} procfs_disk_ata[3] = {
	{ UDEV_ATA_WRITE_CACHE, "node_disk_ata_write_cache",
	  "ATA disk has a write cache." },
	{ UDEV_ATA_WRITE_CACHE_ENABLED, "node_disk_ata_write_cache_enabled",
	  "ATA disk has its write cache enabled." },
	{ UDEV_ATA_ROTATION_RATE_RPM, "node_disk_ata_rotation_rate_rpm",
	  "ATA disk rotation rate in RPMs (0 for SSDs)." },
};

/*
 * What udev's database (UDEV_DATA/bMAJ:MIN) says of @d: node_disk_info's
 * labels, and node_disk_filesystem_info, _device_mapper_info and _ata_*
 * where udev has them. Read once, when the device is first seen.
 * Return: 0, or -1 (ENOMEM).
 */
static int procfs_disk_udev(struct procfs *p, struct procfs_disk *d)
{
	static char v[UDEV_NKEYS][256]; /* loop thread only */
	char path[PATH_MAX], maj[16], min[16];
	int fd;

	for (int k = 0; k < UDEV_NKEYS; k++)
		v[k][0] = '\0';
	snprintf(maj, sizeof(maj), "%u", d->major);
	snprintf(min, sizeof(min), "%u", d->minor);
	snprintf(path, sizeof(path), "%s/b%u:%u", p->udev_data, d->major,
		 d->minor);
	fd = tally_open_file(AT_FDCWD, path);
	if (fd >= 0) {
		/* p->rb holds /proc/diskstats being parsed: use rb2 */
		if (tally_read_whole(fd, &p->rb2) >= 0)
			for (int k = 0; k < UDEV_NKEYS; k++)
				procfs_udev_value(p->rb2.data,
						  procfs_udev_keys[k], v[k],
						  sizeof(v[k]));
		close(fd);
	}
	d->info = tally_labels_newv(
		"device", d->name, "major", maj, "minor", min, "model",
		v[UDEV_MODEL], "path", v[UDEV_PATH], "revision",
		v[UDEV_REVISION], "serial", v[UDEV_SERIAL_SHORT], "wwn",
		v[UDEV_WWN], NULL);
	if (!d->info)
		return -1;
	if (v[UDEV_FS_TYPE][0] &&
	    !(d->fsinfo = tally_labels_newv(
		      "device", d->name, "type", v[UDEV_FS_TYPE], "usage",
		      v[UDEV_FS_USAGE], "uuid", v[UDEV_FS_UUID], "version",
		      v[UDEV_FS_VERSION], NULL)))
		return -1;
	if (v[UDEV_DM_NAME][0] &&
	    !(d->dminfo = tally_labels_newv(
		      "device", d->name, "lv_layer", v[UDEV_DM_LV_LAYER],
		      "lv_name", v[UDEV_DM_LV_NAME], "name", v[UDEV_DM_NAME],
		      "uuid", v[UDEV_DM_UUID], "vg_name", v[UDEV_DM_VG_NAME],
		      NULL)))
		return -1;
	d->nata = 0;
	if (v[UDEV_ATA][0])
		for (int i = 0; i < 3; i++) {
			const char *t = v[procfs_disk_ata[i].key];
			char *end;

			if (!t[0])
				continue;
			d->ata[i] = strtod(t, &end);
			if (*end == '\0')
				d->nata |= 1u << i;
		}
	return 0;
}

static void procfs_disk_clear(struct procfs_disk *d)
{
	free(d->name);
	tally_labels_unref(d->labels);
	tally_labels_unref(d->info);
	tally_labels_unref(d->fsinfo);
	tally_labels_unref(d->dminfo);
	memset(d, 0, sizeof(*d));
}

/* The cached device at position @i, (re)built when the name changed. */
static struct procfs_disk *procfs_disk_at(struct procfs *p, size_t i,
					  const struct procfs_disk_row *r)
{
	struct procfs_disk *d;

	d = procfs_grow(p->disks, &p->ndisks, i, sizeof(*p->disks));
	if (!d)
		return NULL;
	p->disks = d;
	d = &p->disks[i];
	if (d->name && !strcmp(d->name, r->name) && d->major == r->major &&
	    d->minor == r->minor)
		return d;
	procfs_disk_clear(d);
	d->name = strdup(r->name);
	if (!d->name)
		return NULL;
	d->major = r->major;
	d->minor = r->minor;
	d->skip = tally_regexlist_match(&p->device_exclude, r->name);
	if (d->skip)
		return d;
	d->labels = tally_labels_newv("device", r->name, NULL);
	if (!d->labels || procfs_disk_udev(p, d) < 0) {
		procfs_disk_clear(d);
		return NULL;
	}
	return d;
}

/* Counter i of a diskstats line: name, help, unit factor, type. */
static const struct procfs_disk_metric {
	const char *name;
	const char *help;
	double scale;
	enum tally_metric_type type;
} procfs_disk_metrics[PROCFS_DISK_FIELDS] = {
	{ "node_disk_reads_completed_total",
	  "The total number of reads completed successfully.", 1,
	  TALLY_COUNTER },
	{ "node_disk_reads_merged_total", "The total number of reads merged.",
	  1, TALLY_COUNTER },
	{ "node_disk_read_bytes_total",
	  "The total number of bytes read successfully.", 512, TALLY_COUNTER },
	{ "node_disk_read_time_seconds_total",
	  "The total number of seconds spent by all reads.", 0.001,
	  TALLY_COUNTER },
	{ "node_disk_writes_completed_total",
	  "The total number of writes completed successfully.", 1,
	  TALLY_COUNTER },
	{ "node_disk_writes_merged_total", "The number of writes merged.", 1,
	  TALLY_COUNTER },
	{ "node_disk_written_bytes_total",
	  "The total number of bytes written successfully.", 512,
	  TALLY_COUNTER },
	{ "node_disk_write_time_seconds_total",
	  "This is the total number of seconds spent by all writes.", 0.001,
	  TALLY_COUNTER },
	{ "node_disk_io_now", "The number of I/Os currently in progress.", 1,
	  TALLY_GAUGE },
	{ "node_disk_io_time_seconds_total",
	  "Total seconds spent doing I/Os.", 0.001, TALLY_COUNTER },
	{ "node_disk_io_time_weighted_seconds_total",
	  "The weighted # of seconds spent doing I/Os.", 0.001,
	  TALLY_COUNTER },
	{ "node_disk_discards_completed_total",
	  "The total number of discards completed successfully.", 1,
	  TALLY_COUNTER },
	{ "node_disk_discards_merged_total",
	  "The total number of discards merged.", 1, TALLY_COUNTER },
	{ "node_disk_discarded_sectors_total",
	  "The total number of sectors discarded successfully.", 1,
	  TALLY_COUNTER },
	{ "node_disk_discard_time_seconds_total",
	  "This is the total number of seconds spent by all discards.", 0.001,
	  TALLY_COUNTER },
	{ "node_disk_flush_requests_total",
	  "The total number of flush requests completed successfully", 1,
	  TALLY_COUNTER },
	{ "node_disk_flush_requests_time_seconds_total",
	  "This is the total number of seconds spent by all flush "
	  "requests.",
	  0.001, TALLY_COUNTER },
};

int procfs_read_diskstats(struct tally_instance *inst, struct procfs *p,
			  struct tally_batch *b, int64_t ts)
{
	const char *text = procfs_load(inst, p, PROCFS_DISKSTATS);
	size_t i = 0;

	if (!text)
		return 0;
	procfs_for_each_line(line, nl, text) {
		struct procfs_disk_row r;
		struct procfs_disk *d;

		if (procfs_parse_diskstats(line, &r) < 0) {
			procfs_malformed(inst, p, "diskstats", line);
			continue;
		}
		d = procfs_disk_at(p, i++, &r);
		if (!d)
			return -1;
		if (d->skip)
			continue;
		for (unsigned f = 0; f < r.n; f++) {
			const struct procfs_disk_metric *m =
				&procfs_disk_metrics[f];

			if (tally_batch_add_metric(b, m->type, m->name, m->help,
						   d->labels,
						   (double)r.v[f] * m->scale,
						   ts) < 0)
				return -1;
		}
		if (tally_batch_add_metric(b, TALLY_GAUGE, "node_disk_info",
					   "Info of /sys/block/<block_device>.",
					   d->info, 1.0, ts) < 0)
			return -1;
		if (d->fsinfo && tally_batch_add_metric(
					 b, TALLY_GAUGE,
					 "node_disk_filesystem_info",
					 "Info about disk filesystem.",
					 d->fsinfo, 1.0, ts) < 0)
			return -1;
		if (d->dminfo && tally_batch_add_metric(
					 b, TALLY_GAUGE,
					 "node_disk_device_mapper_info",
					 "Info about disk device mapper.",
					 d->dminfo, 1.0, ts) < 0)
			return -1;
		for (int a = 0; a < 3; a++)
			if ((d->nata & (1u << a)) &&
			    tally_batch_add_metric(b, TALLY_GAUGE,
						   procfs_disk_ata[a].name,
						   procfs_disk_ata[a].help,
						   d->labels, d->ata[a], ts) < 0)
				return -1;
	}
	return 0;
}

void procfs_diskstats_fini(struct procfs *p)
{
	for (size_t i = 0; i < p->ndisks; i++)
		procfs_disk_clear(&p->disks[i]);
	free(p->disks);
	p->disks = NULL;
	p->ndisks = 0;
}
