/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/procfs/system.c - uname, time and os groups
 *
 * node_exporter's uname, time and os collectors:
 *   node_uname_info{domainname,machine,nodename,release,sysname,version} 1
 *   node_time_seconds, node_time_zone_offset_seconds{time_zone},
 *   node_time_clocksource_{available,current}_info{clocksource,device}
 *     (SYSFS/devices/system/clocksource/clocksourceN)
 *   node_os_info{build_id,id,...,version_id} 1, node_os_version{id,id_like,
 *     name} = VERSION_ID's major.minor, from ROOTFS/etc/os-release, else
 *     ROOTFS/usr/lib/os-release
 *
 * Cost model: uname(2) and localtime_r() each tick, compared with what the
 * cached label sets were built from; the label sets are rebuilt only when
 * they change (a new host name, a time zone change). os-release is
 * re-parsed only when its mtime changes (one stat(2) per tick). The
 * clocksource files are read each tick (two small sysfs reads) and their
 * label sets rebuilt when the text changes.
 *
 * Failure model: a missing os-release or clocksource directory is logged
 * once and its metrics left out; the other metrics of the group report.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include "procfs.h"

/* Longest os-release value kept. */
#define PROCFS_OS_VALUE_MAX 256

/* The os-release keys node_exporter labels node_os_info with. */
static const char *const procfs_os_keys[] = {
	"BUILD_ID",	 "ID",		     "ID_LIKE", "IMAGE_ID",
	"IMAGE_VERSION", "NAME",	     "PRETTY_NAME", "VARIANT",
	"VARIANT_ID",	 "VERSION",	     "VERSION_CODENAME",
	"VERSION_ID",
};
#define PROCFS_OS_NKEYS (sizeof(procfs_os_keys) / sizeof(procfs_os_keys[0]))

/*
 * Parsers. Pure functions, unit-tested directly.
 */

/**
 * procfs_os_value() - unquote an os-release value, as a shell would
 * @s:    the text after '=' up to the end of the line (length @len)
 * @out:  the value, NUL-terminated
 * @size: room in @out
 *
 * os-release(5): a value may be enclosed in double or single quotes;
 * inside double quotes (and unquoted) a backslash escapes `"`, `\`, `$`
 * and the backquote.
 * Return: 0, or -1 (an unterminated quote, or the value does not fit).
 */
static int procfs_os_value(const char *s, size_t len, char *out, size_t size)
{
	char q = 0;
	size_t n = 0;

	if (len && (s[0] == '"' || s[0] == '\'')) {
		q = s[0];
		s++;
		len--;
		if (!len || s[len - 1] != q)
			return -1;
		len--;
	}
	for (size_t i = 0; i < len; i++) {
		char c = s[i];

		if (c == '\\' && q != '\'' && i + 1 < len &&
		    strchr("\"\\$`", s[i + 1]))
			c = s[++i];
		if (n + 1 >= size)
			return -1;
		out[n++] = c;
	}
	out[n] = '\0';
	return 0;
}

/**
 * procfs_parse_os_release() - the values of node_os_info's keys
 * @text: the file's content
 * @vals: PROCFS_OS_NKEYS buffers of PROCFS_OS_VALUE_MAX bytes, set to the
 *        value of each key in procfs_os_keys[] order ("" when absent)
 *
 * Comments and blank lines are skipped, so are lines without '=' and
 * values that do not unquote (os-release is read by shells: a broken line
 * is the file's problem, the others still count).
 * Return: the number of lines skipped as malformed.
 */
static int procfs_parse_os_release(const char *text,
				   char vals[][PROCFS_OS_VALUE_MAX])
{
	int bad = 0;

	for (size_t k = 0; k < PROCFS_OS_NKEYS; k++)
		vals[k][0] = '\0';
	procfs_for_each_line(line, nl, text) {
		const char *end = nl;
		const char *s = procfs_blank(line);
		const char *eq = memchr(s, '=', (size_t)(end - s));

		if (s == end || *s == '#')
			continue;
		if (!eq) {
			bad++;
			continue;
		}
		for (size_t k = 0; k < PROCFS_OS_NKEYS; k++) {
			size_t klen = strlen(procfs_os_keys[k]);

			if ((size_t)(eq - s) != klen ||
			    strncmp(s, procfs_os_keys[k], klen) != 0)
				continue;
			if (procfs_os_value(eq + 1, (size_t)(end - eq - 1),
					    vals[k], PROCFS_OS_VALUE_MAX) < 0) {
				vals[k][0] = '\0';
				bad++;
			}
			break;
		}
	}
	return bad;
}

/**
 * procfs_os_version() - node_os_version's value from VERSION_ID
 * @id: e.g. "12", "22.04", "8.6.2203", "rolling"
 * Return: the leading major[.minor] as a number ("8.6.2203" gives 8.6),
 * 0 when it does not start with a digit (as node_exporter).
 */
static double procfs_os_version(const char *id)
{
	char buf[64];
	size_t n = 0;
	bool dot = false;

	while (id[n] && n + 1 < sizeof(buf)) {
		if (id[n] == '.' && !dot && n > 0)
			dot = true;
		else if (id[n] < '0' || id[n] > '9')
			break;
		buf[n] = id[n];
		n++;
	}
	buf[n] = '\0';
	return n ? strtod(buf, NULL) : 0.0;
}

/* Records. */

static int procfs_read_uname(struct procfs *p, struct tally_batch *b,
			     int64_t ts)
{
	static const char *const keys[] = { "domainname", "machine",
					    "nodename",	  "release",
					    "sysname",	  "version" };
	struct tally_label pairs[6];
	struct utsname u;
	const char *vals[6];

	if (uname(&u) < 0)
		return 0;
	vals[0] = u.domainname;
	vals[1] = u.machine;
	vals[2] = u.nodename;
	vals[3] = u.release;
	vals[4] = u.sysname;
	vals[5] = u.version;
	if (p->uname_labels) {
		for (size_t i = 0; i < 6; i++)
			if (strcmp(tally_labels_get(p->uname_labels, keys[i]),
				   vals[i]) != 0)
				goto rebuild;
		goto emit;
	}
rebuild:
	for (size_t i = 0; i < 6; i++) {
		pairs[i].key = keys[i];
		pairs[i].value = vals[i];
	}
	{
		struct tally_labels *l = tally_labels_new(pairs, 6);

		if (!l)
			return -1;
		tally_labels_unref(p->uname_labels);
		p->uname_labels = l;
	}
emit:
	return tally_batch_add_metric(
		b, TALLY_GAUGE, "node_uname_info",
		"Labeled system information as provided by the uname system "
		"call.",
		p->uname_labels, 1.0, ts);
}

/* Read SYSFS/devices/system/clocksource/clocksource0/@file into @out. */
static int procfs_clocksource_file(struct procfs *p, const char *file,
				   char *out, size_t size)
{
	char path[PATH_MAX];
	int fd;

	snprintf(path, sizeof(path),
		 "%s/devices/system/clocksource/clocksource0/%s", p->sysfs,
		 file);
	fd = tally_open_file(AT_FDCWD, path);
	if (fd < 0)
		return -1;
	if (tally_read_whole(fd, &p->rb) < 0) {
		close(fd);
		return -1;
	}
	close(fd);
	snprintf(out, size, "%.*s", (int)strcspn(p->rb.data, "\n"),
		 p->rb.data);
	return 0;
}

/*
 * The clocksources: label sets rebuilt when the files' text changes. No
 * clocksource directory (a container without /sys) leaves them out, as
 * node_exporter does.
 */
static int procfs_read_clocksource(struct procfs *p, struct tally_batch *b,
				   int64_t ts)
{
	char text[sizeof(p->cs_text)], cur[64], *save = NULL, *tok;
	struct tally_labels **v;
	size_t n = 0, cap = 2;

	if (procfs_clocksource_file(p, "available_clocksource", text,
				    sizeof(text) - sizeof(cur) - 1) < 0 ||
	    procfs_clocksource_file(p, "current_clocksource", cur,
				    sizeof(cur)) < 0)
		return 0;
	strcat(text, "|");
	strcat(text, cur);
	if (p->clocksources && !strcmp(text, p->cs_text))
		goto emit;
	for (size_t i = 0; i < p->nclocksources; i++)
		tally_labels_unref(p->clocksources[i]);
	free(p->clocksources);
	p->clocksources = NULL;
	p->nclocksources = 0;
	memcpy(p->cs_text, text, sizeof(text));
	for (const char *c = text; *c; c++)
		cap += *c == ' ';
	v = calloc(cap, sizeof(*v));
	if (!v)
		return -1;
	*strchr(text, '|') = '\0';
	for (tok = strtok_r(text, " ", &save); tok && n + 1 < cap;
	     tok = strtok_r(NULL, " ", &save)) {
		v[n] = tally_labels_newv("clocksource", tok, "device", "0",
					 NULL);
		if (!v[n])
			goto out_free;
		n++;
	}
	v[n] = tally_labels_newv("clocksource", cur, "device", "0", NULL);
	if (!v[n])
		goto out_free;
	p->clocksources = v;
	p->nclocksources = n + 1;
emit:
	for (size_t i = 0; i + 1 < p->nclocksources; i++)
		if (tally_batch_add_metric(
			    b, TALLY_GAUGE,
			    "node_time_clocksource_available_info",
			    "Available clocksources read from "
			    "'/sys/devices/system/clocksource'.",
			    p->clocksources[i], 1.0, ts) < 0)
			return -1;
	return tally_batch_add_metric(
		b, TALLY_GAUGE, "node_time_clocksource_current_info",
		"Current clocksource read from "
		"'/sys/devices/system/clocksource'.",
		p->clocksources[p->nclocksources - 1], 1.0, ts);
out_free:
	while (n-- > 0)
		tally_labels_unref(v[n]);
	free(v);
	p->cs_text[0] = '\0';
	return -1;
}

static int procfs_read_time(struct tally_instance *inst, struct procfs *p,
			    struct tally_batch *b, int64_t ts)
{
	struct timespec now;
	struct tm tm;
	time_t t;

	clock_gettime(CLOCK_REALTIME, &now);
	if (tally_batch_add_metric(
		    b, TALLY_GAUGE, "node_time_seconds",
		    "System time in seconds since epoch (1970).", p->empty,
		    (double)now.tv_sec + (double)now.tv_nsec / 1e9, ts) < 0)
		return -1;
	t = now.tv_sec;
	if (localtime_r(&t, &tm)) {
		const char *zone = tm.tm_zone ? tm.tm_zone : "";

		if (!p->tz_labels || p->tz_offset != tm.tm_gmtoff ||
		    strcmp(tally_labels_get(p->tz_labels, "time_zone"),
			   zone) != 0) {
			struct tally_labels *l =
				tally_labels_newv("time_zone", zone, NULL);

			if (!l)
				return -1;
			tally_labels_unref(p->tz_labels);
			p->tz_labels = l;
			p->tz_offset = tm.tm_gmtoff;
		}
		if (tally_batch_add_metric(b, TALLY_GAUGE,
					   "node_time_zone_offset_seconds",
					   "System time zone offset in seconds.",
					   p->tz_labels, (double)tm.tm_gmtoff,
					   ts) < 0)
			return -1;
	}
	return procfs_read_clocksource(p, b, ts);
}

/* Re-parse os-release when it changed; 0 also when it is missing. */
static int procfs_os_refresh(struct tally_instance *inst, struct procfs *p)
{
	static const char *const rels[] = { "etc/os-release",
					    "usr/lib/os-release" };
	static char vals[PROCFS_OS_NKEYS][PROCFS_OS_VALUE_MAX];
	struct tally_label pairs[PROCFS_OS_NKEYS];
	struct tally_labels *info, *ver;
	char path[PATH_MAX];
	struct stat st;
	int fd = -1, bad;

	for (size_t i = 0; i < 2 && fd < 0; i++) {
		snprintf(path, sizeof(path), "%s/%s", p->rootfs, rels[i]);
		if (stat(path, &st) < 0)
			continue;
		if (p->os_labels && st.st_mtim.tv_sec == p->os_mtime.tv_sec &&
		    st.st_mtim.tv_nsec == p->os_mtime.tv_nsec)
			return 0;
		fd = tally_open_file(AT_FDCWD, path);
	}
	if (fd < 0 || tally_read_whole(fd, &p->rb) < 0) {
		int err = fd < 0 ? ENOENT : errno;

		if (fd >= 0)
			close(fd);
		if (p->os_err != err)
			tally_log(inst, LOG_WARNING,
				  "%s/etc/os-release: %s, no node_os_info",
				  p->rootfs, strerror(err));
		p->os_err = err;
		return 0;
	}
	close(fd);
	/* static: 3 KiB, on the loop thread only */
	bad = procfs_parse_os_release(p->rb.data, vals);
	if (bad)
		tally_log(inst, LOG_WARNING, "%s: %d malformed lines skipped",
			  path, bad);
	for (size_t k = 0; k < PROCFS_OS_NKEYS; k++) {
		static char lower[PROCFS_OS_NKEYS][24];

		for (size_t j = 0; j < sizeof(lower[k]) - 1; j++) {
			char c = procfs_os_keys[k][j];

			lower[k][j] = c >= 'A' && c <= 'Z' ? c - 'A' + 'a' : c;
			if (!c)
				break;
		}
		pairs[k].key = lower[k];
		pairs[k].value = vals[k];
	}
	info = tally_labels_new(pairs, PROCFS_OS_NKEYS);
	/* id, id_like, name: keys 1, 2, 5 */
	ver = tally_labels_newv("id", vals[1], "id_like", vals[2], "name",
				vals[5], NULL);
	if (!info || !ver) {
		tally_labels_unref(info);
		tally_labels_unref(ver);
		return -1;
	}
	tally_labels_unref(p->os_labels);
	tally_labels_unref(p->os_version_labels);
	p->os_labels = info;
	p->os_version_labels = ver;
	p->os_version = procfs_os_version(vals[11]);
	p->os_mtime = st.st_mtim;
	if (p->os_err)
		tally_log(inst, LOG_INFO, "%s: readable again", path);
	p->os_err = 0;
	return 0;
}

static int procfs_read_os(struct tally_instance *inst, struct procfs *p,
			  struct tally_batch *b, int64_t ts)
{
	if (procfs_os_refresh(inst, p) < 0)
		return -1;
	if (!p->os_labels || p->os_err)
		return 0;
	if (tally_batch_add_metric(
		    b, TALLY_GAUGE, "node_os_info",
		    "A metric with a constant '1' value labeled by build_id, "
		    "id, id_like, image_id, image_version, name, pretty_name, "
		    "variant, variant_id, version, version_codename, "
		    "version_id.",
		    p->os_labels, 1.0, ts) < 0 ||
	    tally_batch_add_metric(
		    b, TALLY_GAUGE, "node_os_version",
		    "Metric containing the major.minor part of the OS version.",
		    p->os_version_labels, p->os_version, ts) < 0)
		return -1;
	return 0;
}

int procfs_read_system(struct tally_instance *inst, struct procfs *p,
		       struct tally_batch *b, int64_t ts)
{
	if (p->uname && procfs_read_uname(p, b, ts) < 0)
		return -1;
	if (p->time && procfs_read_time(inst, p, b, ts) < 0)
		return -1;
	if (p->os && procfs_read_os(inst, p, b, ts) < 0)
		return -1;
	return 0;
}

void procfs_system_fini(struct procfs *p)
{
	tally_labels_unref(p->uname_labels);
	tally_labels_unref(p->tz_labels);
	tally_labels_unref(p->os_labels);
	tally_labels_unref(p->os_version_labels);
	for (size_t i = 0; i < p->nclocksources; i++)
		tally_labels_unref(p->clocksources[i]);
	free(p->clocksources);
	p->uname_labels = p->tz_labels = NULL;
	p->os_labels = p->os_version_labels = NULL;
	p->clocksources = NULL;
	p->nclocksources = 0;
}
