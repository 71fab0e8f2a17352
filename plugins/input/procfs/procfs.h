/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/procfs/procfs.h - state shared by the procfs input's files
 *
 *   procfs.c      options, hooks; /proc/stat, meminfo, loadavg, pressure
 *   netstat.c     vmstat, net/netstat, net/snmp, net/snmp6, net/sockstat[6]
 *   diskstats.c   /proc/diskstats (and udev's data for node_disk_info)
 *   filesystem.c  self/mountinfo + statvfs(3) off the loop thread
 *   system.c      uname(2), the clock, /etc/os-release
 *
 * Each group is switched by a boolean option named after node_exporter's
 * collector. Private to the plugin (only the descriptor is exported).
 * Everything here runs on the loop thread, one tick at a time; only the
 * statvfs(3) calls of the filesystem group run elsewhere (tally/io.h).
 */
#ifndef TALLY_PROCFS_H
#define TALLY_PROCFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

#include <tally/io.h>
#include <tally/plugin.h>

enum procfs_file_id {
	PROCFS_STAT,
	PROCFS_MEMINFO,
	PROCFS_LOADAVG,
	PROCFS_PSI_CPU,
	PROCFS_PSI_IO,
	PROCFS_PSI_MEMORY,
	PROCFS_PSI_IRQ,
	PROCFS_VMSTAT,
	PROCFS_NETSTAT,
	PROCFS_SNMP,
	PROCFS_SNMP6,
	PROCFS_SOCKSTAT,
	PROCFS_SOCKSTAT6,
	PROCFS_DISKSTATS,
	PROCFS_MOUNTINFO,
	PROCFS_NFILES,
};

/**
 * struct procfs_file - one file under the procfs root, kept open
 * @rel:      path relative to the root
 * @optional: absence is normal (PSI needs Linux >= 4.20 and CONFIG_PSI;
 *            pressure/irq needs 6.1 and CONFIG_IRQ_TIME_ACCOUNTING;
 *            net/snmp6 and sockstat6 need IPv6)
 * @fd:       open descriptor, -1 while not open
 * @err:      errno of the failure last logged (0: none), so that a file
 *            that stays broken costs one log line, not one per tick
 */
struct procfs_file {
	const char *rel;
	bool optional;
	int fd;
	int err;
};

/**
 * struct procfs_kv - naming of one "key value" counter, cached by position
 * @key:  the key as node_exporter matches its fields regex against it
 *        ("pgfault", "Tcp_ActiveOpens"); heap
 * @keep: the key matches the group's fields option
 * @name: metric name ("node_vmstat_pgfault"); heap, NULL when !@keep
 * @help: help text; heap, NULL when !@keep
 *
 * The kernel prints these files in a fixed order, so a tick compares each
 * key with the one cached at the same position and renames only on change.
 */
struct procfs_kv {
	char *key;
	bool keep;
	char *name;
	char *help;
};

/** struct procfs_kvcache - the keys of one file, by position */
struct procfs_kvcache {
	struct procfs_kv *v;
	size_t n;
};

/**
 * struct procfs_disk - one /proc/diskstats device, cached by position
 * @name:   device name (heap)
 * @major:  its major number
 * @minor:  its minor number
 * @skip:   matched device_exclude (decided when first seen)
 * @labels: {device}
 * @info:   node_disk_info's labels, NULL until built
 * @fsinfo: node_disk_filesystem_info's, NULL when udev names no filesystem
 * @dminfo: node_disk_device_mapper_info's, NULL when not device-mapper
 * @ata:    node_disk_ata_write_cache, _write_cache_enabled and
 *          _rotation_rate_rpm, from udev (bit i of @nata: @ata[i] is set)
 * @nata:   see @ata
 */
struct procfs_disk {
	char *name;
	unsigned major, minor;
	bool skip;
	struct tally_labels *labels;
	struct tally_labels *info;
	struct tally_labels *fsinfo;
	struct tally_labels *dminfo;
	double ata[3];
	unsigned nata;
};

/**
 * struct procfs_mount - one mount of self/mountinfo, cached by position
 * @line:   the mountinfo line it was built from (heap), compared each tick
 * @path:   rootfs + mount point, for statvfs(3) (heap)
 * @skip:   excluded (mount point or type), or a duplicate of an earlier
 *          device/mount point/type triple
 * @ro:     mounted read-only
 * @err:    the statvfs(3) error last logged (0: none), ETIMEDOUT while
 *          hung
 * @labels: {device, fstype, mountpoint}
 */
struct procfs_mount {
	char *line;
	char *path;
	bool skip;
	bool ro;
	int err;
	struct tally_labels *labels;
};

struct procfs_cpu;
struct procfs_mem;
struct tally_statfs;
struct tally_statfs_req;

struct procfs {
	/* options */
	char *root;			/* procfs mount point */
	char *sysfs;			/* sysfs mount point (clocksource) */
	char *rootfs;			/* the host's / (os-release, statvfs) */
	char *udev_data;		/* udev's database, node_disk_info */
	bool filesystem, diskstats, vmstat, netstat, sockstat;
	bool uname, time, os;
	struct tally_regexlist mount_exclude, fstype_exclude;
	struct tally_regexlist device_exclude;
	struct tally_regexlist vmstat_fields, netstat_fields;
	double mount_timeout;		/* seconds */

	struct procfs_file files[PROCFS_NFILES];
	struct tally_readbuf rb; /* read buffer, grows to the largest file */
	struct tally_readbuf rb2; /* for files read while rb is parsed */
	double hz;		 /* USER_HZ, the unit of /proc/stat times */
	struct tally_labels *empty;

	struct procfs_cpu *cpus; /* by CPU id; NULL entries never seen */
	size_t ncpus;

	struct procfs_mem *mem;
	size_t nmem;

	/* netstat.c */
	struct procfs_kvcache vm_kv, netstat_kv, snmp_kv, snmp6_kv;
	double pagesize;

	/* diskstats.c */
	struct procfs_disk *disks;
	size_t ndisks;

	/* filesystem.c */
	struct procfs_mount *mounts;
	size_t nmounts;
	struct tally_statfs *statfs;
	struct tally_statfs_req *reqs;
	size_t nreqs;

	/* system.c */
	struct tally_labels *uname_labels;
	struct tally_labels *tz_labels;
	long tz_offset;
	struct tally_labels *os_labels, *os_version_labels;
	double os_version;
	struct timespec os_mtime;
	int os_err;
	struct tally_labels **clocksources; /* available, then the current */
	size_t nclocksources;
	char cs_text[512];	/* the clocksource files they are built from */
};

/**
 * procfs_for_each_line() - walk the lines of a NUL-terminated text
 * @line: the name of a `const char *` loop variable: the line's start
 * @eol:  the name of a `const char *` loop variable: its '\n', or the
 *        text's terminating NUL on a last line without one
 * @text: the text; an empty text has no lines, nor has the empty rest
 *        after a final '\n'
 *
 * `continue` goes on with the next line. The text is not modified.
 */
#define procfs_for_each_line(line, eol, text)                              \
	for (const char *line = (text), *eol = strchrnul(line, '\n'); *line; \
	     line = *eol ? eol + 1 : eol, eol = strchrnul(line, '\n'))

/* procfs.c */
const char *procfs_blank(const char *s);
bool procfs_eol(const char *s);
const char *procfs_load(struct tally_instance *inst, struct procfs *p,
			enum procfs_file_id id);
void procfs_malformed(struct tally_instance *inst, struct procfs *p,
		      const char *rel, const char *line);
/**
 * procfs_grow() - make a cache indexed by line position hold index @i
 * @v:    the array, grown with realloc(3)
 * @n:    its number of entries, raised to @i + 1 when below
 * @i:    the index needed
 * @size: the size of an entry; new entries are zeroed
 * Return: the array (@v when it was large enough), or NULL with errno =
 * ENOMEM (@v and @n are left as they were).
 */
void *procfs_grow(void *v, size_t *n, size_t i, size_t size);

/* netstat.c */
int procfs_read_vmstat(struct tally_instance *inst, struct procfs *p,
		       struct tally_batch *b, int64_t ts);
int procfs_read_netstat(struct tally_instance *inst, struct procfs *p,
			struct tally_batch *b, int64_t ts);
int procfs_read_sockstat(struct tally_instance *inst, struct procfs *p,
			 struct tally_batch *b, int64_t ts);
void procfs_netstat_fini(struct procfs *p);

/* diskstats.c */
int procfs_read_diskstats(struct tally_instance *inst, struct procfs *p,
			  struct tally_batch *b, int64_t ts);
void procfs_diskstats_fini(struct procfs *p);

/* filesystem.c */
int procfs_filesystem_init(struct tally_instance *inst, struct procfs *p);
int procfs_read_filesystem(struct tally_instance *inst, struct procfs *p,
			   struct tally_batch *b, int64_t ts);
void procfs_filesystem_fini(struct procfs *p);

/* system.c */
int procfs_read_system(struct tally_instance *inst, struct procfs *p,
		       struct tally_batch *b, int64_t ts);
void procfs_system_fini(struct procfs *p);

#endif /* TALLY_PROCFS_H */
