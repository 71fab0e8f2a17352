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
 * empty where udev has no entry (a container, no udev).
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
	for (const char *line = text; line && *line;) {
		const char *nl = strchr(line, '\n');

		if (!strncmp(line, "E:", 2) && !strncmp(line + 2, key, klen) &&
		    line[2 + klen] == '=') {
			const char *v = line + 3 + klen;
			size_t n = nl ? (size_t)(nl - v) : strlen(v);

			snprintf(out, size, "%.*s", (int)n, v);
			return;
		}
		line = nl ? nl + 1 : NULL;
	}
}

/* node_disk_info's labels for @d, from udev's database where it has one. */
static struct tally_labels *procfs_disk_info(struct procfs *p,
					     const struct procfs_disk *d)
{
	char path[PATH_MAX], maj[16], min[16];
	char dpath[256] = "", wwn[256] = "", model[256] = "";
	char serial[256] = "", rev[256] = "";
	int fd;

	snprintf(maj, sizeof(maj), "%u", d->major);
	snprintf(min, sizeof(min), "%u", d->minor);
	snprintf(path, sizeof(path), "%s/b%u:%u", p->udev_data, d->major,
		 d->minor);
	fd = tally_open_file(AT_FDCWD, path);
	if (fd >= 0) {
		/* p->rb holds /proc/diskstats being parsed: use rb2 */
		if (tally_read_whole(fd, &p->rb2) >= 0) {
			const char *t = p->rb2.data;

			procfs_udev_value(t, "ID_PATH", dpath, sizeof(dpath));
			procfs_udev_value(t, "ID_WWN", wwn, sizeof(wwn));
			procfs_udev_value(t, "ID_MODEL", model, sizeof(model));
			procfs_udev_value(t, "ID_SERIAL_SHORT", serial,
					  sizeof(serial));
			if (!serial[0])
				procfs_udev_value(t, "SCSI_IDENT_SERIAL",
						  serial, sizeof(serial));
			procfs_udev_value(t, "ID_REVISION", rev, sizeof(rev));
		}
		close(fd);
	}
	return tally_labels_newv("device", d->name, "major", maj, "minor", min,
				 "model", model, "path", dpath, "revision",
				 rev, "serial", serial, "wwn", wwn, NULL);
}

static void procfs_disk_clear(struct procfs_disk *d)
{
	free(d->name);
	tally_labels_unref(d->labels);
	tally_labels_unref(d->info);
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
	d->info = procfs_disk_info(p, d);
	if (!d->labels || !d->info) {
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
	for (const char *line = text; *line;) {
		const char *nl = strchr(line, '\n');
		struct procfs_disk_row r;
		struct procfs_disk *d;

		if (procfs_parse_diskstats(line, &r) < 0) {
			procfs_malformed(inst, p, "diskstats", line);
			goto next;
		}
		d = procfs_disk_at(p, i++, &r);
		if (!d)
			return -1;
		if (d->skip)
			goto next;
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
	next:
		if (!nl)
			break;
		line = nl + 1;
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
