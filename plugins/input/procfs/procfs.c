/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/procfs/procfs.c - CPU, memory, load and pressure from /proc;
 * the plugin's options and hooks (the other groups: see procfs.h)
 *
 * Metric names, types and help texts are node_exporter's (collectors cpu,
 * stat, meminfo, loadavg and pressure), so Grafana's "Node Exporter Full"
 * dashboard works unchanged on tally's output.
 *
 * Cost model: every file is opened once and re-read each tick from offset 0
 * (tally_read_whole()) into one buffer that only grows; label sets are interned
 * the first time a CPU, a mode or a meminfo field is seen and reused on later
 * ticks. Names are copied into the batch (tally_batch_add_metric()), whose
 * arena the core keeps when it recycles the batch. A steady-state tick
 * therefore makes one pread() pair per file and no allocation.
 *
 * Failure model: a file that is missing, unreadable or not a regular file
 * (a directory or a FIFO planted in a container's /host/proc) is logged
 * once, skipped, and retried on later ticks; the other files still report.
 * A line that does not parse is dropped and counted as "malformed".
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tally/io.h>
#include <tally/plugin.h>

#include "procfs.h"

/*
 * /proc/stat per-CPU columns, in kernel order
 * (Documentation/filesystems/proc.rst)
 */
#define PROCFS_CPU_FIELDS 10
/* Columns 0..7 are node_cpu_seconds_total modes; 8 and 9 are guest time. */
#define PROCFS_CPU_MODES 8
/* Refuse absurd CPU ids from a corrupt file instead of allocating for them. */
#define PROCFS_MAX_CPU 65535
/* Longest meminfo field name kept; real ones are under 20 characters. */
#define PROCFS_MEMKEY_MAX 64

static const char *const procfs_cpu_modes[PROCFS_CPU_MODES] = {
	"user", "nice", "system", "idle", "iowait", "irq", "softirq", "steal",
};

/**
 * struct procfs_cpu - label sets of one CPU, indexed by CPU id
 * @mode: {cpu="N", mode="..."} per node_cpu_seconds_total mode; the guest
 *        metric reuses the "user" and "nice" sets (same labels)
 */
struct procfs_cpu {
	struct tally_labels *mode[PROCFS_CPU_MODES];
};

/**
 * struct procfs_mem - cached naming of one /proc/meminfo line
 * @key:     field as written in the file, e.g. "Active(anon)"
 * @key_len: its length
 * @kb:      the value has a "kB" unit: exported in bytes with "_bytes"
 * @name:    metric name; static storage for fields in procfs_mem_known[],
 *           else points into @text
 * @help:    help text, same storage as @name
 * @text:    for a field unknown to this build: name, NUL, help, NUL
 *
 * Indexed by line number: the kernel prints fields in a fixed order, so a
 * tick only compares each key with the cached one at the same position.
 */
struct procfs_mem {
	char key[PROCFS_MEMKEY_MAX];
	size_t key_len;
	bool kb;
	const char *name;
	const char *help;
	char *text;
};

/*
 * The /proc/meminfo fields of Linux 2.6 to 6.x (fs/proc/meminfo.c and
 * arch hooks), named as node_exporter names them, so that known fields need
 * no allocation when first seen. Fields not listed are still exported,
 * named the same way at run time.
 */
/* clang-format off */
#define PROCFS_MEM_KB(k, n)                                                   \
	{ k, true, "node_memory_" n "_bytes",                                 \
	  "Memory information field " n "_bytes." }
#define PROCFS_MEM_B(k) PROCFS_MEM_KB(#k, #k)
#define PROCFS_MEM_N(k)                                                       \
	{ #k, false, "node_memory_" #k, "Memory information field " #k "." }
/* clang-format on */
static const struct procfs_mem_known {
	const char *key;
	bool kb;
	const char *name;
	const char *help;
} procfs_mem_known[] = {
	PROCFS_MEM_B(MemTotal),
	PROCFS_MEM_B(MemFree),
	PROCFS_MEM_B(MemAvailable),
	PROCFS_MEM_B(Buffers),
	PROCFS_MEM_B(Cached),
	PROCFS_MEM_B(SwapCached),
	PROCFS_MEM_B(Active),
	PROCFS_MEM_B(Inactive),
	PROCFS_MEM_KB("Active(anon)", "Active_anon"),
	PROCFS_MEM_KB("Inactive(anon)", "Inactive_anon"),
	PROCFS_MEM_KB("Active(file)", "Active_file"),
	PROCFS_MEM_KB("Inactive(file)", "Inactive_file"),
	PROCFS_MEM_B(Unevictable),
	PROCFS_MEM_B(Mlocked),
	PROCFS_MEM_B(HighTotal),
	PROCFS_MEM_B(HighFree),
	PROCFS_MEM_B(LowTotal),
	PROCFS_MEM_B(LowFree),
	PROCFS_MEM_B(MmapCopy),
	PROCFS_MEM_B(SwapTotal),
	PROCFS_MEM_B(SwapFree),
	PROCFS_MEM_B(Zswap),
	PROCFS_MEM_B(Zswapped),
	PROCFS_MEM_B(Dirty),
	PROCFS_MEM_B(Writeback),
	PROCFS_MEM_B(AnonPages),
	PROCFS_MEM_B(Mapped),
	PROCFS_MEM_B(Shmem),
	PROCFS_MEM_B(KReclaimable),
	PROCFS_MEM_B(Slab),
	PROCFS_MEM_B(SReclaimable),
	PROCFS_MEM_B(SUnreclaim),
	PROCFS_MEM_B(KernelStack),
	PROCFS_MEM_B(ShadowCallStack),
	PROCFS_MEM_B(PageTables),
	PROCFS_MEM_B(SecPageTables),
	PROCFS_MEM_B(NFS_Unstable),
	PROCFS_MEM_B(Bounce),
	PROCFS_MEM_B(WritebackTmp),
	PROCFS_MEM_B(CommitLimit),
	PROCFS_MEM_B(Committed_AS),
	PROCFS_MEM_B(VmallocTotal),
	PROCFS_MEM_B(VmallocUsed),
	PROCFS_MEM_B(VmallocChunk),
	PROCFS_MEM_B(Percpu),
	PROCFS_MEM_B(EarlyMemtestBad),
	PROCFS_MEM_B(HardwareCorrupted),
	PROCFS_MEM_B(AnonHugePages),
	PROCFS_MEM_B(ShmemHugePages),
	PROCFS_MEM_B(ShmemPmdMapped),
	PROCFS_MEM_B(FileHugePages),
	PROCFS_MEM_B(FilePmdMapped),
	PROCFS_MEM_B(CmaTotal),
	PROCFS_MEM_B(CmaFree),
	PROCFS_MEM_B(Unaccepted),
	PROCFS_MEM_B(Balloon),
	PROCFS_MEM_B(Quicklists),
	PROCFS_MEM_N(HugePages_Total),
	PROCFS_MEM_N(HugePages_Free),
	PROCFS_MEM_N(HugePages_Rsvd),
	PROCFS_MEM_N(HugePages_Surp),
	PROCFS_MEM_B(Hugepagesize),
	PROCFS_MEM_B(Hugetlb),
	PROCFS_MEM_B(DirectMap4k),
	PROCFS_MEM_B(DirectMap2M),
	PROCFS_MEM_B(DirectMap4M),
	PROCFS_MEM_B(DirectMap1G),
};

/*
 * Parsers. Pure functions over NUL-terminated text, unit-tested directly
 * (t/unit/procfs.c includes this file).
 */

/* Skip blanks (spaces and tabs, never the newline). */
const char *procfs_blank(const char *s)
{
	while (*s == ' ' || *s == '\t')
		s++;
	return s;
}

/* The cursor is at the end of the line (only blanks left). */
bool procfs_eol(const char *s)
{
	s = procfs_blank(s);
	return *s == '\0' || *s == '\n';
}

/**
 * struct procfs_cpu_row - one "cpuN ..." line of /proc/stat
 * @id: CPU id N
 * @n:  number of time columns present (4 on 2.4 kernels, 10 since 2.6.33)
 * @v:  the columns in USER_HZ ticks
 */
struct procfs_cpu_row {
	unsigned id;
	unsigned n;
	uint64_t v[PROCFS_CPU_FIELDS];
};

/**
 * procfs_parse_cpu() - parse a per-CPU line of /proc/stat
 * @line: text starting with "cpu" and a digit, ending at NUL or newline
 * @r:    result
 *
 * Columns beyond the ten known ones (a future kernel) are ignored; fewer
 * than four, a non-number, or an id above PROCFS_MAX_CPU is malformed.
 * Return: 0, or -1 (malformed).
 */
static int procfs_parse_cpu(const char *line, struct procfs_cpu_row *r)
{
	const char *s = line + 3;
	uint64_t id;

	if (strncmp(line, "cpu", 3) != 0 || *s < '0' || *s > '9')
		return -1;
	if (tally_parse_u64(&s, &id) < 0 || id > PROCFS_MAX_CPU)
		return -1;
	if (*s != ' ' && *s != '\t')
		return -1;
	r->id = (unsigned)id;
	r->n = 0;
	while (!procfs_eol(s)) {
		uint64_t v;

		if (tally_parse_u64(&s, &v) < 0)
			return -1;
		if (r->n < PROCFS_CPU_FIELDS)
			r->v[r->n++] = v;
	}
	return r->n >= 4 ? 0 : -1;
}

/**
 * procfs_meminfo_name() - node_exporter's metric name for a meminfo field
 * @key:  field name as in the file, e.g. "Active(anon)"
 * @len:  its length
 * @kb:   the value has a "kB" unit (adds the "_bytes" suffix)
 * @out:  buffer for "node_memory_<Field>[_bytes]"
 * @size: its size
 *
 * "(x)" becomes "_x" as node_exporter does (Active(anon) -> Active_anon);
 * any other character not valid in a Prometheus name becomes '_'.
 * Return: the name's length, or -1 if it does not fit or @len is 0.
 */
static int procfs_meminfo_name(const char *key, size_t len, bool kb, char *out,
			       size_t size)
{
	static const char prefix[] = "node_memory_";
	static const char suffix[] = "_bytes";
	size_t n = sizeof(prefix) - 1;

	if (len == 0 || size < n + len + sizeof(suffix))
		return -1;
	memcpy(out, prefix, n);
	for (size_t i = 0; i < len; i++) {
		char c = key[i];

		if (c == ')')
			continue;
		if (!((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') ||
		      (c >= '0' && c <= '9') || c == '_'))
			c = '_';
		out[n++] = c;
	}
	if (kb) {
		memcpy(out + n, suffix, sizeof(suffix) - 1);
		n += sizeof(suffix) - 1;
	}
	out[n] = '\0';
	return (int)n;
}

/**
 * struct procfs_mem_row - one line of /proc/meminfo
 * @key:     start of the field name (points into the parsed text)
 * @key_len: its length
 * @value:   the number
 * @kb:      the unit is "kB"
 */
struct procfs_mem_row {
	const char *key;
	size_t key_len;
	uint64_t value;
	bool kb;
};

/**
 * procfs_parse_meminfo() - parse "Key:   value [kB]"
 * @line: the line (ends at NUL or newline)
 * @r:    result
 *
 * Return: 0, or -1 (malformed: no colon, no number, a unit other than kB,
 * or a key longer than PROCFS_MEMKEY_MAX - 1).
 */
static int procfs_parse_meminfo(const char *line, struct procfs_mem_row *r)
{
	const char *colon = line, *s;

	while (*colon && *colon != ':' && *colon != '\n')
		colon++;
	if (*colon != ':' || colon == line || colon - line >= PROCFS_MEMKEY_MAX)
		return -1;
	r->key = line;
	r->key_len = (size_t)(colon - line);
	s = colon + 1;
	if (tally_parse_u64(&s, &r->value) < 0)
		return -1;
	s = procfs_blank(s);
	r->kb = false;
	if (s[0] == 'k' && s[1] == 'B') {
		r->kb = true;
		s += 2;
	}
	return procfs_eol(s) ? 0 : -1;
}

/**
 * procfs_parse_loadavg() - the three load averages of /proc/loadavg
 * @text: file content, e.g. "0.20 0.18 0.12 1/80 11206"
 * @out:  1, 5 and 15 minute averages
 * Return: 0, or -1 (malformed).
 */
static int procfs_parse_loadavg(const char *text, double out[3])
{
	const char *s = text;

	for (int i = 0; i < 3; i++) {
		char *end;

		s = procfs_blank(s);
		if (!((*s >= '0' && *s <= '9') || *s == '.'))
			return -1;
		out[i] = strtod(s, &end);
		if (end == s || (*end != ' ' && *end != '\t' && *end != '\n' &&
				 *end != '\0'))
			return -1;
		s = end;
	}
	return 0;
}

/* struct procfs_psi - totals of one /proc/pressure file, in microseconds */
struct procfs_psi {
	bool has_some, has_full;
	uint64_t some, full;
};

/**
 * procfs_parse_psi() - parse a /proc/pressure/<resource> file
 * @text: content: "some avg10=.. avg60=.. avg300=.. total=N" and/or a
 *        "full ..." line (cpu has "full" only since 5.13, irq only "full")
 * @r:    result; lines that are absent leave has_some/has_full false
 * Return: 0, or -1 if a some/full line lacks a valid total=.
 */
static int procfs_parse_psi(const char *text, struct procfs_psi *r)
{
	r->has_some = r->has_full = false;
	r->some = r->full = 0;
	procfs_for_each_line(line, end, text) {
		bool some = strncmp(line, "some ", 5) == 0;
		bool full = strncmp(line, "full ", 5) == 0;

		if (some || full) {
			const char *t = line + 5;
			uint64_t v;

			while (t < end && strncmp(t, "total=", 6) != 0)
				t++;
			if (t >= end)
				return -1;
			t += 6;
			if (tally_parse_u64(&t, &v) < 0 || !procfs_eol(t))
				return -1;
			if (some) {
				r->has_some = true;
				r->some = v;
			} else {
				r->has_full = true;
				r->full = v;
			}
		}
	}
	return 0;
}

/* Files. */

static void procfs_file_failed(struct tally_instance *inst, struct procfs *p,
			       struct procfs_file *f, int err, const char *what)
{
	if (f->err == err)
		return;
	f->err = err;
	if (f->optional && err == ENOENT)
		tally_log(inst, LOG_DEBUG, "%s/%s: not present, skipped",
			  p->root, f->rel);
	else
		tally_log(inst, LOG_WARNING, "%s %s/%s: %s, skipped", what,
			  p->root, f->rel, strerror(err));
}

/*
 * Open one file. O_NONBLOCK because a FIFO planted where a file is expected
 * must not block the loop in open(); the S_ISREG check then refuses it (and
 * directories, which open() accepts).
 */
static int procfs_file_open(struct tally_instance *inst, struct procfs *p,
			    struct procfs_file *f)
{
	char path[PATH_MAX];
	int fd, n;

	n = snprintf(path, sizeof(path), "%s/%s", p->root, f->rel);
	if (n < 0 || (size_t)n >= sizeof(path)) {
		procfs_file_failed(inst, p, f, ENAMETOOLONG, "open");
		return -1;
	}
	fd = tally_open_file(AT_FDCWD, path);
	if (fd < 0 && errno != EINVAL) {
		procfs_file_failed(inst, p, f, errno, "open");
		return -1;
	}
	if (fd < 0) {
		/* EFTYPE does not exist on Linux: EINVAL marks "not a file" */
		if (f->err != EINVAL)
			tally_log(inst, LOG_WARNING,
				  "%s: not a regular file, skipped", path);
		f->err = EINVAL;
		return -1;
	}
	if (f->err)
		tally_log(inst, LOG_INFO, "%s: readable again", path);
	f->fd = fd;
	f->err = 0;
	return 0;
}

/*
 * Refresh one file into p->rb. Return: its text, or NULL when the file is
 * unavailable this tick (logged once per distinct failure).
 */
const char *procfs_load(struct tally_instance *inst, struct procfs *p,
			       enum procfs_file_id id)
{
	struct procfs_file *f = &p->files[id];

	if (f->fd < 0) {
		/* PSI cannot appear at runtime: do not retry ENOENT there. */
		if (f->optional && f->err == ENOENT)
			return NULL;
		if (procfs_file_open(inst, p, f) < 0)
			return NULL;
	}
	if (tally_read_whole(f->fd, &p->rb) < 0) {
		int err = errno;

		if (err == ENOMEM) {
			tally_log(inst, LOG_ERR, "%s/%s: out of memory",
				  p->root, f->rel);
			return NULL;
		}
		close(f->fd);
		f->fd = -1;
		procfs_file_failed(inst, p, f, err, "read");
		return NULL;
	}
	return p->rb.data;
}

void *procfs_grow(void *v, size_t *n, size_t i, size_t size)
{
	char *nv;

	if (i < *n)
		return v;
	nv = realloc(v, (i + 1) * size);
	if (!nv)
		return NULL;
	memset(nv + *n * size, 0, (i + 1 - *n) * size);
	*n = i + 1;
	return nv;
}

/* Records. */

void procfs_malformed(struct tally_instance *inst, struct procfs *p,
			     const char *rel, const char *line)
{
	size_t len = strcspn(line, "\n");
	char esc[80 * 4 + 4];

	tally_count_drop(inst, "malformed", 1);
	tally_log_peer_text(esc, sizeof(esc), line, len > 80 ? 80 : len);
	tally_log(inst, LOG_WARNING, "%s/%s: malformed line dropped: %s",
		  p->root, rel, esc);
}

/* The label sets of CPU @id, created the first time the CPU is seen. */
static struct procfs_cpu *procfs_cpu(struct procfs *p, unsigned id)
{
	struct procfs_cpu *c;

	if (id >= p->ncpus) {
		size_t n = p->ncpus ? p->ncpus : 8;
		struct procfs_cpu *v;

		while (n <= id)
			n *= 2;
		v = realloc(p->cpus, n * sizeof(*v));
		if (!v)
			return NULL;
		memset(v + p->ncpus, 0, (n - p->ncpus) * sizeof(*v));
		p->cpus = v;
		p->ncpus = n;
	}
	c = &p->cpus[id];
	if (!c->mode[0]) {
		char cpu[16];

		snprintf(cpu, sizeof(cpu), "%u", id);
		for (int m = 0; m < PROCFS_CPU_MODES; m++) {
			c->mode[m] = tally_labels_newv(
				"cpu", cpu, "mode", procfs_cpu_modes[m], NULL);
			if (!c->mode[m]) {
				while (m-- > 0) {
					tally_labels_unref(c->mode[m]);
					c->mode[m] = NULL;
				}
				return NULL;
			}
		}
	}
	return c;
}

static const char procfs_cpu_help[] = "Seconds the CPUs spent in each mode.";
static const char procfs_guest_help[] =
	"Seconds the CPUs spent in guests (VMs) for each mode.";

static int procfs_emit_cpu(struct procfs *p, struct tally_batch *b,
			   const struct procfs_cpu_row *r, int64_t ts)
{
	struct procfs_cpu *c = procfs_cpu(p, r->id);
	unsigned n = r->n < PROCFS_CPU_MODES ? r->n : PROCFS_CPU_MODES;

	if (!c)
		return -1;
	for (unsigned m = 0; m < n; m++)
		if (tally_batch_add_metric(b, TALLY_COUNTER,
					   "node_cpu_seconds_total",
					   procfs_cpu_help, c->mode[m],
					   (double)r->v[m] / p->hz, ts) < 0)
			return -1;
	/* guest and guest_nice, as node_exporter's mode="user"/"nice" */
	for (unsigned g = PROCFS_CPU_MODES; g < r->n; g++)
		if (tally_batch_add_metric(
			    b, TALLY_COUNTER, "node_cpu_guest_seconds_total",
			    procfs_guest_help, c->mode[g - PROCFS_CPU_MODES],
			    (double)r->v[g] / p->hz, ts) < 0)
			return -1;
	return 0;
}

/* The single-value lines of /proc/stat that node_exporter exports. */
/* clang-format off */
#define PROCFS_STAT_LINE(k, m, n, t, h)                                       \
	{ .key = k " ", .key_len = sizeof(k), .more = (m), .name = (n),        \
	  .type = (t), .help = (h) }
/* clang-format on */
static const struct procfs_stat_line {
	const char *key; /* with its trailing space */
	size_t key_len;
	bool more; /* more numbers follow the first (intr) */
	const char *name;
	enum tally_metric_type type;
	const char *help;
} procfs_stat_lines[] = {
	PROCFS_STAT_LINE("intr", true, "node_intr_total", TALLY_COUNTER,
			 "Total number of interrupts serviced."),
	PROCFS_STAT_LINE("ctxt", false, "node_context_switches_total",
			 TALLY_COUNTER, "Total number of context switches."),
	PROCFS_STAT_LINE("btime", false, "node_boot_time_seconds", TALLY_GAUGE,
			 "Node boot time, in unixtime."),
	PROCFS_STAT_LINE("processes", false, "node_forks_total", TALLY_COUNTER,
			 "Total number of forks."),
	PROCFS_STAT_LINE("procs_running", false, "node_procs_running",
			 TALLY_GAUGE, "Number of processes in runnable state."),
	PROCFS_STAT_LINE("procs_blocked", false, "node_procs_blocked",
			 TALLY_GAUGE,
			 "Number of processes blocked waiting for I/O to "
			 "complete."),
};

static int procfs_read_stat(struct tally_instance *inst, struct procfs *p,
			    struct tally_batch *b, int64_t ts)
{
	const char *text = procfs_load(inst, p, PROCFS_STAT);

	if (!text)
		return 0;
	procfs_for_each_line(line, nl, text) {

		if (line[0] == 'c' && line[1] == 'p' && line[2] == 'u' &&
		    line[3] >= '0' && line[3] <= '9') {
			struct procfs_cpu_row r;

			if (procfs_parse_cpu(line, &r) < 0)
				procfs_malformed(inst, p, "stat", line);
			else if (procfs_emit_cpu(p, b, &r, ts) < 0)
				return -1;
		} else {
			for (size_t i = 0;
			     i < sizeof(procfs_stat_lines) /
					 sizeof(procfs_stat_lines[0]);
			     i++) {
				const struct procfs_stat_line *k =
					&procfs_stat_lines[i];
				const char *s = line + k->key_len;
				uint64_t v;

				if (strncmp(line, k->key, k->key_len) != 0)
					continue;
				if (tally_parse_u64(&s, &v) < 0 ||
				    (!k->more && !procfs_eol(s)))
					procfs_malformed(inst, p, "stat", line);
				else if (tally_batch_add_metric(
						 b, k->type, k->name, k->help,
						 p->empty, (double)v, ts) < 0)
					return -1;
				break;
			}
		}
	}
	return 0;
}

/* Make cached entry @i describe @r (on the first tick or a kernel change). */
static int procfs_mem_entry(struct procfs *p, size_t i,
			    const struct procfs_mem_row *r)
{
	static const char help_prefix[] = "Memory information field ";
	const size_t plen = sizeof("node_memory_") - 1;
	char name[PROCFS_MEMKEY_MAX + 32];
	struct procfs_mem *e;
	size_t hlen;
	char *text = NULL;
	int n;

	e = procfs_grow(p->mem, &p->nmem, i, sizeof(*p->mem));
	if (!e)
		return -1;
	p->mem = e;
	e = &p->mem[i];
	for (size_t k = 0;
	     k < sizeof(procfs_mem_known) / sizeof(procfs_mem_known[0]); k++) {
		const struct procfs_mem_known *m = &procfs_mem_known[k];

		if (m->kb == r->kb && strlen(m->key) == r->key_len &&
		    memcmp(m->key, r->key, r->key_len) == 0) {
			free(e->text);
			e->text = NULL;
			e->name = m->name;
			e->help = m->help;
			goto out_key;
		}
	}
	n = procfs_meminfo_name(r->key, r->key_len, r->kb, name, sizeof(name));
	if (n < 0) {
		errno = EINVAL;
		return -1;
	}
	/* help: "Memory information field <name without node_memory_>." */
	hlen = sizeof(help_prefix) - 1 + (size_t)n - plen + 1;
	text = malloc((size_t)n + 1 + hlen + 1);
	if (!text)
		return -1;
	memcpy(text, name, (size_t)n + 1);
	snprintf(text + n + 1, hlen + 1, "%s%s.", help_prefix, name + plen);
	free(e->text);
	e->text = text;
	e->name = text;
	e->help = text + n + 1;
out_key:
	memcpy(e->key, r->key, r->key_len);
	e->key_len = r->key_len;
	e->kb = r->kb;
	return 0;
}

static int procfs_read_meminfo(struct tally_instance *inst, struct procfs *p,
			       struct tally_batch *b, int64_t ts)
{
	const char *text = procfs_load(inst, p, PROCFS_MEMINFO);
	size_t i = 0;

	if (!text)
		return 0;
	procfs_for_each_line(line, nl, text) {
		struct procfs_mem_row r;
		struct procfs_mem *e;
		double v;

		if (procfs_parse_meminfo(line, &r) < 0) {
			procfs_malformed(inst, p, "meminfo", line);
			continue;
		}
		e = i < p->nmem ? &p->mem[i] : NULL;
		if (!e || e->key_len != r.key_len || e->kb != r.kb ||
		    memcmp(e->key, r.key, r.key_len) != 0) {
			if (procfs_mem_entry(p, i, &r) < 0) {
				if (errno == ENOMEM)
					return -1;
				procfs_malformed(inst, p, "meminfo", line);
				continue;
			}
			e = &p->mem[i];
		}
		i++;
		v = r.kb ? (double)r.value * 1024.0 : (double)r.value;
		if (tally_batch_add_metric(b, TALLY_GAUGE, e->name, e->help,
					   p->empty, v, ts) < 0)
			return -1;
	}
	return 0;
}

static int procfs_read_loadavg(struct tally_instance *inst, struct procfs *p,
			       struct tally_batch *b, int64_t ts)
{
	static const char *const names[3] = { "node_load1", "node_load5",
					      "node_load15" };
	static const char *const help[3] = { "1m load average.",
					     "5m load average.",
					     "15m load average." };
	const char *text = procfs_load(inst, p, PROCFS_LOADAVG);
	double la[3];

	if (!text)
		return 0;
	if (procfs_parse_loadavg(text, la) < 0) {
		procfs_malformed(inst, p, "loadavg", text);
		return 0;
	}
	for (int i = 0; i < 3; i++)
		if (tally_batch_add_metric(b, TALLY_GAUGE, names[i], help[i],
					   p->empty, la[i], ts) < 0)
			return -1;
	return 0;
}

/*
 * PSI as node_exporter: "some" is waiting, "full" is stalled; cpu exports
 * only "some" (its system-wide "full" is always zero) and irq only "full".
 */
static const struct procfs_psi_map {
	enum procfs_file_id file;
	const char *some, *some_help;
	const char *full, *full_help;
} procfs_psi_map[] = {
	{ PROCFS_PSI_CPU, "node_pressure_cpu_waiting_seconds_total",
	  "Total time in seconds that processes have waited for CPU time", NULL,
	  NULL },
	{ PROCFS_PSI_IO, "node_pressure_io_waiting_seconds_total",
	  "Total time in seconds that processes have waited due to IO "
	  "congestion",
	  "node_pressure_io_stalled_seconds_total",
	  "Total time in seconds no process could make progress due to IO "
	  "congestion" },
	{ PROCFS_PSI_MEMORY, "node_pressure_memory_waiting_seconds_total",
	  "Total time in seconds that processes have waited for memory",
	  "node_pressure_memory_stalled_seconds_total",
	  "Total time in seconds no process could make progress due to "
	  "memory congestion" },
	{ PROCFS_PSI_IRQ, NULL, NULL, "node_pressure_irq_stalled_seconds_total",
	  "Total time in seconds no process could make progress due to IRQ "
	  "congestion" },
};

static int procfs_read_psi(struct tally_instance *inst, struct procfs *p,
			   struct tally_batch *b, int64_t ts)
{
	for (size_t i = 0;
	     i < sizeof(procfs_psi_map) / sizeof(procfs_psi_map[0]); i++) {
		const struct procfs_psi_map *m = &procfs_psi_map[i];
		const char *text = procfs_load(inst, p, m->file);
		struct procfs_psi r;

		if (!text)
			continue;
		if (procfs_parse_psi(text, &r) < 0) {
			procfs_malformed(inst, p, p->files[m->file].rel, text);
			continue;
		}
		/* microseconds to seconds, divided as node_exporter does */
		if (m->some && r.has_some &&
		    tally_batch_add_metric(
			    b, TALLY_COUNTER, m->some, m->some_help, p->empty,
			    (double)r.some / 1000.0 / 1000.0, ts) < 0)
			return -1;
		if (m->full && r.has_full &&
		    tally_batch_add_metric(
			    b, TALLY_COUNTER, m->full, m->full_help, p->empty,
			    (double)r.full / 1000.0 / 1000.0, ts) < 0)
			return -1;
	}
	return 0;
}

/* Hooks. */

static void procfs_fini(struct tally_instance *inst, void *state)
{
	struct procfs *p = state;

	for (int i = 0; i < PROCFS_NFILES; i++)
		if (p->files[i].fd >= 0)
			close(p->files[i].fd);
	for (size_t c = 0; c < p->ncpus; c++)
		for (int m = 0; m < PROCFS_CPU_MODES; m++)
			tally_labels_unref(p->cpus[c].mode[m]);
	free(p->cpus);
	for (size_t i = 0; i < p->nmem; i++)
		free(p->mem[i].text);
	free(p->mem);
	procfs_netstat_fini(p);
	procfs_diskstats_fini(p);
	procfs_filesystem_fini(p);
	procfs_system_fini(p);
	tally_readbuf_free(&p->rb);
	tally_readbuf_free(&p->rb2);
	tally_labels_unref(p->empty);
	p->cpus = NULL;
	p->mem = NULL;
	p->empty = NULL;
	p->ncpus = p->nmem = 0;
	for (int i = 0; i < PROCFS_NFILES; i++)
		p->files[i].fd = -1;
}

/* Whether file @id belongs to a group the configuration switched on. */
static bool procfs_file_wanted(const struct procfs *p, enum procfs_file_id id)
{
	switch (id) {
	case PROCFS_VMSTAT:
		return p->vmstat;
	case PROCFS_NETSTAT:
	case PROCFS_SNMP:
	case PROCFS_SNMP6:
		return p->netstat;
	case PROCFS_SOCKSTAT:
	case PROCFS_SOCKSTAT6:
		return p->sockstat;
	case PROCFS_DISKSTATS:
		return p->diskstats;
	case PROCFS_MOUNTINFO:
		return p->filesystem;
	default:
		return true;
	}
}

static int procfs_init(struct tally_instance *inst, void *state)
{
	static const struct {
		const char *rel;
		bool optional;
	} files[PROCFS_NFILES] = {
		[PROCFS_STAT] = { "stat", false },
		[PROCFS_MEMINFO] = { "meminfo", false },
		[PROCFS_LOADAVG] = { "loadavg", false },
		[PROCFS_PSI_CPU] = { "pressure/cpu", true },
		[PROCFS_PSI_IO] = { "pressure/io", true },
		[PROCFS_PSI_MEMORY] = { "pressure/memory", true },
		[PROCFS_PSI_IRQ] = { "pressure/irq", true },
		[PROCFS_VMSTAT] = { "vmstat", false },
		[PROCFS_NETSTAT] = { "net/netstat", false },
		[PROCFS_SNMP] = { "net/snmp", false },
		[PROCFS_SNMP6] = { "net/snmp6", true },
		[PROCFS_SOCKSTAT] = { "net/sockstat", false },
		[PROCFS_SOCKSTAT6] = { "net/sockstat6", true },
		[PROCFS_DISKSTATS] = { "diskstats", false },
		[PROCFS_MOUNTINFO] = { "self/mountinfo", false },
	};
	struct procfs *p = state;
	long hz = sysconf(_SC_CLK_TCK);

	if (!p->root || !p->root[0]) {
		tally_log(inst, LOG_ERR, "root must not be empty");
		errno = EINVAL;
		return -1;
	}
	p->hz = hz > 0 ? (double)hz : 100.0;
	p->empty = tally_labels_ref(tally_labels_empty());
	for (int i = 0; i < PROCFS_NFILES; i++) {
		p->files[i].rel = files[i].rel;
		p->files[i].optional = files[i].optional;
		p->files[i].fd = -1;
		p->files[i].err = 0;
		/* A failure is logged here, at start, and retried each tick. */
		if (procfs_file_wanted(p, i))
			procfs_file_open(inst, p, &p->files[i]);
	}
	if (p->filesystem && procfs_filesystem_init(inst, p) < 0) {
		procfs_fini(inst, p);
		return -1;
	}
	return 0;
}

static int procfs_read(struct tally_instance *inst, void *state,
		       struct tally_batch *out)
{
	struct procfs *p = state;
	int64_t ts = tally_now_ns();

	if (procfs_read_stat(inst, p, out, ts) < 0 ||
	    procfs_read_meminfo(inst, p, out, ts) < 0 ||
	    procfs_read_loadavg(inst, p, out, ts) < 0 ||
	    procfs_read_psi(inst, p, out, ts) < 0)
		return -1;
	if (p->vmstat && procfs_read_vmstat(inst, p, out, ts) < 0)
		return -1;
	if (p->netstat && procfs_read_netstat(inst, p, out, ts) < 0)
		return -1;
	if (p->sockstat && procfs_read_sockstat(inst, p, out, ts) < 0)
		return -1;
	if (p->diskstats && procfs_read_diskstats(inst, p, out, ts) < 0)
		return -1;
	if (p->filesystem && procfs_read_filesystem(inst, p, out, ts) < 0)
		return -1;
	if (procfs_read_system(inst, p, out, ts) < 0)
		return -1;
	return 0;
}

/* node_exporter 1.5's defaults (its flags' names in the comments). */
#define PROCFS_MOUNT_EXCLUDE                                                  \
	"^/(dev|proc|run/credentials/.+|sys|var/lib/docker/.+|"               \
	"var/lib/containers/storage/.+)($|/)"
#define PROCFS_FSTYPE_EXCLUDE                                                 \
	"^(autofs|binfmt_misc|bpf|cgroup2?|configfs|debugfs|devpts|"          \
	"devtmpfs|fusectl|hugetlbfs|iso9660|mqueue|nsfs|overlay|proc|"        \
	"procfs|pstore|rpc_pipefs|securityfs|selinuxfs|squashfs|sysfs|"       \
	"tracefs)$"
#define PROCFS_DEVICE_EXCLUDE                                                 \
	"^(ram|loop|fd|(h|s|v|xv)d[a-z]|nvme[0-9]+n[0-9]+p)[0-9]+$"
#define PROCFS_VMSTAT_FIELDS "^(oom_kill|pgpg|pswp|pg.*fault).*"
#define PROCFS_NETSTAT_FIELDS                                                 \
	"^(.*_(InErrors|InErrs)|Ip_Forwarding|Ip(6|Ext)_(InOctets|OutOctets)|" \
	"Icmp6?_(InMsgs|OutMsgs)|TcpExt_(Listen.*|Syncookies.*|"              \
	"TCPSynRetrans|TCPTimeouts)|Tcp_(ActiveOpens|InSegs|OutSegs|"         \
	"OutRsts|PassiveOpens|RetransSegs|CurrEstab)|Udp6?_(InDatagrams|"     \
	"OutDatagrams|NoPorts|RcvbufErrors|SndbufErrors))$"

static const struct tally_option procfs_options[] = {
	TALLY_OPT_STRING("root", struct procfs, root, "/proc",
			 "procfs mount point to read (containers: /host/proc)"),
	TALLY_OPT_STRING("sysfs", struct procfs, sysfs, "/sys",
			 "sysfs mount point: the time group's clocksources"),
	TALLY_OPT_STRING("rootfs", struct procfs, rootfs, "/",
			 "the host's root filesystem: mount points are "
			 "statvfs'd and os-release read below it "
			 "(containers: /host/root)"),
	TALLY_OPT_STRING("udev_data", struct procfs, udev_data,
			 "/run/udev/data",
			 "udev's database: node_disk_info's path, wwn, model, "
			 "serial and revision labels"),
	TALLY_OPT_BOOL("filesystem", struct procfs, filesystem, "true",
		       "node_filesystem_*: mounts of ROOT/self/mountinfo and "
		       "their statvfs(3)"),
	TALLY_OPT_REGEXLIST("mount_exclude", struct procfs, mount_exclude,
			    PROCFS_MOUNT_EXCLUDE,
			    "filesystem: mount points not exported "
			    "(node_exporter's mount-points-exclude)"),
	TALLY_OPT_REGEXLIST("fstype_exclude", struct procfs, fstype_exclude,
			    PROCFS_FSTYPE_EXCLUDE,
			    "filesystem: filesystem types not exported "
			    "(node_exporter's fs-types-exclude)"),
	TALLY_OPT_DURATION("mount_timeout", struct procfs, mount_timeout,
			   "1s", 0.001, 3600,
			   "filesystem: longest wait for a mount's statvfs; "
			   "past it the mount is reported with _device_error "
			   "and skipped until its call returns"),
	TALLY_OPT_BOOL("diskstats", struct procfs, diskstats, "true",
		       "node_disk_*: ROOT/diskstats"),
	TALLY_OPT_REGEXLIST("device_exclude", struct procfs, device_exclude,
			    PROCFS_DEVICE_EXCLUDE,
			    "diskstats: devices not exported (node_exporter's "
			    "diskstats device-exclude: partitions, ram, loop)"),
	TALLY_OPT_BOOL("vmstat", struct procfs, vmstat, "true",
		       "node_vmstat_*: ROOT/vmstat"),
	TALLY_OPT_REGEXLIST("vmstat_fields", struct procfs, vmstat_fields,
			    PROCFS_VMSTAT_FIELDS,
			    "vmstat: the fields exported (node_exporter's "
			    "vmstat.fields)"),
	TALLY_OPT_BOOL("netstat", struct procfs, netstat, "true",
		       "node_netstat_*: ROOT/net/netstat, snmp and snmp6"),
	TALLY_OPT_REGEXLIST("netstat_fields", struct procfs, netstat_fields,
			    PROCFS_NETSTAT_FIELDS,
			    "netstat: the Proto_Field keys exported "
			    "(node_exporter's netstat.fields)"),
	TALLY_OPT_BOOL("sockstat", struct procfs, sockstat, "true",
		       "node_sockstat_*: ROOT/net/sockstat and sockstat6"),
	TALLY_OPT_BOOL("uname", struct procfs, uname, "true",
		       "node_uname_info from uname(2)"),
	TALLY_OPT_BOOL("time", struct procfs, time, "true",
		       "node_time_seconds, node_time_zone_offset_seconds and "
		       "the clocksources of SYSFS"),
	TALLY_OPT_BOOL("os", struct procfs, os, "true",
		       "node_os_info and node_os_version from "
		       "ROOTFS/etc/os-release"),
	TALLY_OPT_END,
};

static const struct tally_input_ops procfs_ops = {
	.init = procfs_init,
	.read = procfs_read,
	.fini = procfs_fini,
};

TALLY_PLUGIN_INPUT(procfs,
		   "CPU, memory, load, pressure, disks, filesystems, network "
		   "stack and system metrics from /proc",
		   struct procfs, procfs_options, &procfs_ops);
