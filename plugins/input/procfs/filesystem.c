/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/procfs/filesystem.c - the filesystem group
 *
 * node_exporter's filesystem collector: per mount of ROOT/self/mountinfo,
 * node_filesystem_{size,free,avail}_bytes, _files, _files_free, _readonly
 * and _device_error{device,fstype,mountpoint}, sizes from statvfs(3) of
 * ROOTFS/<mount point>. Mounts whose point matches `mount_exclude` or whose
 * type matches `fstype_exclude` (node_exporter's defaults) are skipped, and
 * a device/type/mount point seen twice (a mount stacked on itself) is
 * exported once.
 *
 * Cost model: mountinfo is kept open and re-read each tick; mounts are
 * cached by line position with their label sets and statvfs paths, and a
 * tick compares each line with the cached one, rebuilding only what
 * changed. The statvfs(3) calls of a tick go to the core's helper thread
 * in one batch (tally/statfs.h): one thread wake-up per tick.
 *
 * Failure model: statvfs(3) may hang for as long as an NFS or Lustre
 * server is away. The loop waits at most `mount_timeout` for a mount that
 * hangs for the first time; it is then reported with
 * node_filesystem_device_error 1 (and no sizes), counted as
 * "statfs_timeout", logged once, and skipped at no cost until its call
 * returns. Any other statvfs error is reported the same way (as
 * node_exporter does), logged once per mount and error.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <tally/statfs.h>

#include "procfs.h"

/**
 * struct procfs_mountinfo_row - the fields of a mountinfo line we use
 * @mountpoint: mount point, octal escapes decoded ("\040" is a space)
 * @fstype:     filesystem type ("ext4", "fuse.sshfs")
 * @device:     mount source ("/dev/vda", "server:/export"), decoded
 * @ro:         the mount's own options hold "ro"
 */
struct procfs_mountinfo_row {
	char mountpoint[PATH_MAX];
	char fstype[64];
	char device[PATH_MAX];
	bool ro;
};

/*
 * Parsers. Pure functions, unit-tested directly.
 */

/**
 * procfs_unescape() - copy a mountinfo field, decoding "\ooo" escapes
 * @s:    the field's start; it ends at a blank, newline or NUL
 * @out:  the decoded text
 * @size: room in @out
 * Return: the cursor after the field, or NULL when it is empty or does not
 * fit.
 */
static const char *procfs_unescape(const char *s, char *out, size_t size)
{
	size_t n = 0;

	s = procfs_blank(s);
	if (!*s || *s == '\n')
		return NULL;
	while (*s && *s != ' ' && *s != '\t' && *s != '\n') {
		char c = *s++;

		if (c == '\\' && s[0] >= '0' && s[0] <= '3' && s[1] >= '0' &&
		    s[1] <= '7' && s[2] >= '0' && s[2] <= '7') {
			c = (char)((s[0] - '0') * 64 + (s[1] - '0') * 8 +
				   (s[2] - '0'));
			s += 3;
		}
		if (n + 1 >= size)
			return NULL;
		out[n++] = c;
	}
	out[n] = '\0';
	return s;
}

/* Skip one blank-separated field. NULL when there is none. */
static const char *procfs_skip_field(const char *s)
{
	s = procfs_blank(s);
	if (!*s || *s == '\n')
		return NULL;
	while (*s && *s != ' ' && *s != '\t' && *s != '\n')
		s++;
	return s;
}

/**
 * procfs_parse_mountinfo() - parse one line of /proc/PID/mountinfo
 * @line: "36 35 98:0 /mnt1 /mnt/parent rw,noatime master:1 - ext3
 *        /dev/root rw,errors=continue" (proc(5))
 * @r:    result
 * Return: 0, or -1 (malformed: missing fields, no " - " separator).
 */
static int procfs_parse_mountinfo(const char *line,
				  struct procfs_mountinfo_row *r)
{
	char opts[1024];
	const char *s = line;

	/* mount id, parent id, major:minor, root */
	for (int i = 0; i < 4; i++)
		if (!(s = procfs_skip_field(s)))
			return -1;
	if (!(s = procfs_unescape(s, r->mountpoint, sizeof(r->mountpoint))))
		return -1;
	if (!(s = procfs_unescape(s, opts, sizeof(opts))))
		return -1;
	r->ro = false;
	for (char *o = opts; o;) {
		char *comma = strchr(o, ',');

		if ((comma ? (size_t)(comma - o) : strlen(o)) == 2 &&
		    !strncmp(o, "ro", 2))
			r->ro = true;
		o = comma ? comma + 1 : NULL;
	}
	/* optional fields ("shared:1"), up to the "-" separator */
	for (;;) {
		const char *f = procfs_blank(s);

		if (!(s = procfs_skip_field(s)))
			return -1;
		if (s - f == 1 && *f == '-')
			break;
	}
	if (!(s = procfs_unescape(s, r->fstype, sizeof(r->fstype))))
		return -1;
	/* an empty source prints as "none" on old kernels; keep what is */
	if (!procfs_unescape(s, r->device, sizeof(r->device)))
		return -1;
	return 0;
}

/* Cache. */

static void procfs_mount_clear(struct procfs_mount *m)
{
	free(m->line);
	free(m->path);
	tally_labels_unref(m->labels);
	memset(m, 0, sizeof(*m));
}

/* Does cached @m come from @line (up to its newline)? */
static bool procfs_mount_same(const struct procfs_mount *m, const char *line,
			      size_t len)
{
	return m->line && strlen(m->line) == len &&
	       memcmp(m->line, line, len) == 0;
}

/* Rebuild cached mount @m from @line. Return: 0, or -1 (ENOMEM). */
static int procfs_mount_build(struct tally_instance *inst, struct procfs *p,
			      struct procfs_mount *m, const char *line,
			      size_t len)
{
	static struct procfs_mountinfo_row r; /* 8 KiB: loop thread only */
	size_t plen;

	procfs_mount_clear(m);
	m->line = strndup(line, len);
	if (!m->line)
		return -1;
	m->skip = true;
	if (procfs_parse_mountinfo(m->line, &r) < 0) {
		procfs_malformed(inst, p, "self/mountinfo", line);
		return 0;
	}
	if (tally_regexlist_match(&p->mount_exclude, r.mountpoint) ||
	    tally_regexlist_match(&p->fstype_exclude, r.fstype))
		return 0;
	m->ro = r.ro;
	/* rootfs "/" (the usual case) adds nothing */
	plen = strlen(p->rootfs);
	while (plen && p->rootfs[plen - 1] == '/')
		plen--;
	m->path = malloc(plen + strlen(r.mountpoint) + 1);
	m->labels = tally_labels_newv("device", r.device, "fstype", r.fstype,
				      "mountpoint", r.mountpoint, NULL);
	if (!m->path || !m->labels) {
		procfs_mount_clear(m);
		m->skip = true;
		return -1;
	}
	memcpy(m->path, p->rootfs, plen);
	strcpy(m->path + plen, r.mountpoint);
	m->skip = false;
	return 0;
}

/* Re-read mountinfo into the cache. Return: 0, or -1 (ENOMEM). */
static int procfs_mounts_refresh(struct tally_instance *inst,
				 struct procfs *p, const char *text)
{
	bool changed = false;
	size_t i = 0;

	procfs_for_each_line(line, nl, text) {
		size_t len = (size_t)(nl - line);

		struct procfs_mount *v = procfs_grow(p->mounts, &p->nmounts, i,
						     sizeof(*p->mounts));

		if (!v)
			return -1;
		p->mounts = v;
		if (!procfs_mount_same(&p->mounts[i], line, len)) {
			changed = true;
			if (procfs_mount_build(inst, p, &p->mounts[i], line,
					       len) < 0)
				return -1;
		}
		i++;
	}
	while (p->nmounts > i) {
		procfs_mount_clear(&p->mounts[--p->nmounts]);
		changed = true;
	}
	if (!changed)
		return 0;
	/* label sets are interned: the same triple is the same pointer */
	for (size_t a = 0; a < p->nmounts; a++)
		for (size_t b = 0; b < a && !p->mounts[a].skip; b++)
			if (!p->mounts[b].skip &&
			    p->mounts[b].labels == p->mounts[a].labels)
				p->mounts[a].skip = true;
	return 0;
}

static const struct {
	const char *name, *help;
} procfs_fs_metrics[] = {
	{ "node_filesystem_size_bytes", "Filesystem size in bytes." },
	{ "node_filesystem_free_bytes", "Filesystem free space in bytes." },
	{ "node_filesystem_avail_bytes",
	  "Filesystem space available to non-root users in bytes." },
	{ "node_filesystem_files", "Filesystem total file nodes." },
	{ "node_filesystem_files_free", "Filesystem total free file nodes." },
	{ "node_filesystem_readonly", "Filesystem read-only status." },
};

int procfs_filesystem_init(struct tally_instance *inst, struct procfs *p)
{
	p->statfs = tally_statfs_new(p->mount_timeout);
	if (!p->statfs) {
		tally_log(inst, LOG_ERR, "filesystem: %s", strerror(errno));
		return -1;
	}
	return 0;
}

int procfs_read_filesystem(struct tally_instance *inst, struct procfs *p,
			   struct tally_batch *b, int64_t ts)
{
	const char *text = procfs_load(inst, p, PROCFS_MOUNTINFO);
	size_t n = 0, k = 0;

	if (!text)
		return 0;
	if (procfs_mounts_refresh(inst, p, text) < 0)
		return -1;
	if (p->nreqs < p->nmounts) {
		struct tally_statfs_req *v =
			realloc(p->reqs, p->nmounts * sizeof(*v));

		if (!v)
			return -1;
		p->reqs = v;
		p->nreqs = p->nmounts;
	}
	for (size_t i = 0; i < p->nmounts; i++)
		if (!p->mounts[i].skip)
			p->reqs[n++].path = p->mounts[i].path;
	tally_statfs_run(p->statfs, p->reqs, n);

	for (size_t i = 0; i < p->nmounts; i++) {
		struct procfs_mount *m = &p->mounts[i];
		const struct tally_statfs_req *r;
		const struct statvfs *st;
		double v[6];

		if (m->skip)
			continue;
		r = &p->reqs[k++];
		if (r->err != m->err) {
			char esc[PATH_MAX]; /* mountinfo decodes \012 */

			tally_log_peer_text(esc, sizeof(esc), m->path,
					    strlen(m->path));
			if (r->err == ETIMEDOUT) {
				tally_count_drop(inst, "statfs_timeout", 1);
				tally_log(inst, LOG_WARNING,
					  "statvfs %s: no answer within %gs, "
					  "reported as a device error and "
					  "skipped until it answers",
					  esc, p->mount_timeout);
			} else if (r->err && r->err != EBUSY) {
				tally_log(inst, LOG_WARNING,
					  "statvfs %s: %s, reported as a "
					  "device error",
					  esc, strerror(r->err));
			} else if (!r->err) {
				tally_log(inst, LOG_INFO,
					  "statvfs %s: answers again", esc);
			}
			/* a hung mount stays "timed out" while EBUSY */
			if (!(m->err == ETIMEDOUT && r->err == EBUSY))
				m->err = r->err;
		}
		if (tally_batch_add_metric(
			    b, TALLY_GAUGE, "node_filesystem_device_error",
			    "Whether an error occurred while getting "
			    "statistics for the given device.",
			    m->labels, r->err ? 1.0 : 0.0, ts) < 0)
			return -1;
		if (r->err)
			continue;
		st = &r->st;
		/* f_frsize is the unit of the block counts (as df(1)) */
		v[0] = (double)st->f_blocks * (double)st->f_frsize;
		v[1] = (double)st->f_bfree * (double)st->f_frsize;
		v[2] = (double)st->f_bavail * (double)st->f_frsize;
		v[3] = (double)st->f_files;
		v[4] = (double)st->f_ffree;
		v[5] = m->ro ? 1.0 : 0.0;
		for (int j = 0; j < 6; j++)
			if (tally_batch_add_metric(b, TALLY_GAUGE,
						   procfs_fs_metrics[j].name,
						   procfs_fs_metrics[j].help,
						   m->labels, v[j], ts) < 0)
				return -1;
	}
	return 0;
}

void procfs_filesystem_fini(struct procfs *p)
{
	for (size_t i = 0; i < p->nmounts; i++)
		procfs_mount_clear(&p->mounts[i]);
	free(p->mounts);
	free(p->reqs);
	tally_statfs_free(p->statfs);
	p->mounts = NULL;
	p->reqs = NULL;
	p->statfs = NULL;
	p->nmounts = p->nreqs = 0;
}
