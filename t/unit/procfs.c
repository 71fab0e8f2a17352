/* SPDX-License-Identifier: MIT */
/*
 * t/unit/procfs.c - the procfs input: its parsers, then the plugin on
 * fixture trees written by the test, over several ticks
 *
 * Expected values are written out by hand from the fixture text. Dividing
 * two exactly representable integers is correctly rounded in IEEE 754, so
 * 2646 ticks / 100 Hz compares equal to the literal 26.46.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "tap.h"

#include "../../plugins/input/procfs/procfs.c"
#include "../../plugins/input/procfs/netstat.c"
#include "../../plugins/input/procfs/diskstats.c"
#include "../../plugins/input/procfs/filesystem.c"
#include "../../plugins/input/procfs/system.c"

#include "procfs-util.h"

static void test_u64(void)
{
	static const struct {
		const char *in;
		int ret;
		uint64_t v;
		size_t used;
	} cases[] = {
		{ "0", 0, 0, 1 },
		{ "  42 rest", 0, 42, 4 },
		{ "\t7", 0, 7, 2 },
		{ "18446744073709551615", 0, UINT64_MAX, 20 },
		{ "18446744073709551616", -1, 0, 0 },
		{ "x1", -1, 0, 0 },
		{ "", -1, 0, 0 },
		{ "-1", -1, 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *s = cases[i].in;
		uint64_t v = 0;
		int ret = tally_parse_u64(&s, &v);

		cmp_ok(ret, "==", cases[i].ret, "u64 '%s' returns %d",
		       cases[i].in, cases[i].ret);
		if (ret == 0) {
			cmp_ok(v, "==", cases[i].v, "u64 '%s' value",
			       cases[i].in);
			cmp_ok(s - cases[i].in, "==", cases[i].used,
			       "u64 '%s' consumes %zu chars", cases[i].in,
			       cases[i].used);
		}
	}
}

static void test_parse_cpu(void)
{
	static const struct {
		const char *line;
		int ret;
		unsigned id, n;
		uint64_t v[10];
	} cases[] = {
		/* Linux >= 2.6.33: ten columns */
		{ "cpu0 660 1 642 33869 17 2 4 3 5 6\n",
		  0,
		  0,
		  10,
		  { 660, 1, 642, 33869, 17, 2, 4, 3, 5, 6 } },
		/* 2.6.9: seven columns, no steal/guest */
		{ "cpu12 10 20 30 40 50 60 70",
		  0,
		  12,
		  7,
		  { 10, 20, 30, 40, 50, 60, 70 } },
		/* 2.4: four columns */
		{ "cpu3 1 2 3 4\n", 0, 3, 4, { 1, 2, 3, 4 } },
		/* a future column is ignored */
		{ "cpu1 1 2 3 4 5 6 7 8 9 10 11\n",
		  0,
		  1,
		  10,
		  { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10 } },
		{ "cpu65535 1 2 3 4", 0, 65535, 4, { 1, 2, 3, 4 } },
		{ .line = "cpu  1 2 3 4 5 6 7 8 9 10",
		  .ret = -1 },				   /* the aggregate */
		{ .line = "cpu65536 1 2 3 4", .ret = -1 }, /* absurd id */
		{ .line = "cpu2 1 2 3", .ret = -1 },	   /* too few */
		{ .line = "cpu2 1 2 x 4", .ret = -1 },
		{ .line = "cpu2x 1 2 3 4", .ret = -1 },
		{ .line = "cpu2 1 2 3 18446744073709551616", .ret = -1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct procfs_cpu_row r;
		int ret = procfs_parse_cpu(cases[i].line, &r);

		cmp_ok(ret, "==", cases[i].ret, "cpu line %zu returns %d", i,
		       cases[i].ret);
		if (ret != 0 || cases[i].ret != 0)
			continue;
		cmp_ok(r.id, "==", cases[i].id, "cpu line %zu id", i);
		cmp_ok(r.n, "==", cases[i].n, "cpu line %zu columns", i);
		for (unsigned k = 0; k < r.n && k < cases[i].n; k++)
			if (r.v[k] != cases[i].v[k])
				ok(0, "cpu line %zu column %u: %llu != %llu", i,
				   k, (unsigned long long)r.v[k],
				   (unsigned long long)cases[i].v[k]);
	}
}

static void test_meminfo(void)
{
	static const struct {
		const char *line;
		int ret;
		const char *name;
		uint64_t value;
	} cases[] = {
		{ "MemTotal:       24598232 kB\n", 0,
		  "node_memory_MemTotal_bytes", 24598232 },
		{ "Active(anon):      20 kB", 0,
		  "node_memory_Active_anon_bytes", 20 },
		{ "HugePages_Total:       0\n", 0,
		  "node_memory_HugePages_Total", 0 },
		{ "NFS_Unstable:  0 kB", 0, "node_memory_NFS_Unstable_bytes",
		  0 },
		{ "Odd-name(x y):  5 kB", 0, "node_memory_Odd_name_x_y_bytes",
		  5 },
		{ .line = "Broken 12 kB", .ret = -1 },
		{ .line = ":12 kB", .ret = -1 },
		{ .line = "MemFree:", .ret = -1 },
		{ .line = "MemFree:  12 MB", .ret = -1 },
		{ .line = "MemFree:  12 kB extra", .ret = -1 },
		{ .line = "AVeryLongFieldNameThatNoKernelWouldEverPrintInMeminf"
			  "o"
			  "AtAllReally: 1",
		  .ret = -1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct procfs_mem_row r;
		char name[128];
		int ret = procfs_parse_meminfo(cases[i].line, &r);

		cmp_ok(ret, "==", cases[i].ret,
		       "meminfo line '%.20s' returns %d", cases[i].line,
		       cases[i].ret);
		if (ret != 0 || cases[i].ret != 0)
			continue;
		cmp_ok(r.value, "==", cases[i].value, "meminfo '%.20s' value",
		       cases[i].line);
		ok(procfs_meminfo_name(r.key, r.key_len, r.kb, name,
				       sizeof(name)) > 0,
		   "meminfo '%.20s' has a name", cases[i].line);
		is(name, cases[i].name, "meminfo name");
	}
}

static void test_loadavg(void)
{
	double la[3];

	ok(procfs_parse_loadavg("0.20 0.18 12.50 1/80 11206\n", la) == 0,
	   "loadavg parses");
	cmp_ok(la[0], "==", 0.20, "load1");
	cmp_ok(la[1], "==", 0.18, "load5");
	cmp_ok(la[2], "==", 12.50, "load15");
	ok(procfs_parse_loadavg("0.20 0.18\n", la) < 0, "two values rejected");
	ok(procfs_parse_loadavg("0.20 abc 1.0 1/2 3\n", la) < 0,
	   "a word rejected");
	ok(procfs_parse_loadavg("", la) < 0, "empty file rejected");
}

static void test_psi(void)
{
	struct procfs_psi r;

	ok(procfs_parse_psi("some avg10=4.80 avg60=1.19 avg300=0.59 "
			    "total=4506187\n"
			    "full avg10=0.00 avg60=0.00 avg300=0.00 total=7\n",
			    &r) == 0,
	   "psi some+full parses");
	ok(r.has_some && r.has_full, "both lines seen");
	cmp_ok(r.some, "==", 4506187, "some total");
	cmp_ok(r.full, "==", 7, "full total");
	ok(procfs_parse_psi("some avg10=0.00 avg60=0.00 avg300=0.00 total=9\n",
			    &r) == 0 &&
		   r.has_some && !r.has_full && r.some == 9,
	   "cpu before 5.13: some only");
	ok(procfs_parse_psi("full avg10=0.00 avg60=0.00 avg300=0.00 total=3\n",
			    &r) == 0 &&
		   !r.has_some && r.has_full && r.full == 3,
	   "irq: full only");
	ok(procfs_parse_psi("some avg10=0.00 avg60=0.00 avg300=0.00\n", &r) < 0,
	   "missing total rejected");
	ok(procfs_parse_psi("some total=12x\n", &r) < 0, "bad total rejected");
}

#define CPU(b, id, mode) \
	val(b, "node_cpu_seconds_total", "cpu", id, "mode", mode)
#define G(b, name) val(b, name, NULL, NULL, NULL, NULL)

static struct tally_batch *tick(struct procfs *p)
{
	struct tally_batch *b = tally_batch_new();

	if (!b)
		bail_out("tally_batch_new: %s", strerror(errno));
	ok(procfs_read(NULL, p, b) == 0, "read returns 0");
	return b;
}

static void test_plugin(void)
{
	struct procfs p = { 0 };
	struct tally_batch *b;
	const struct tally_record *r;
	long hz = sysconf(_SC_CLK_TCK);
	char path[512];

	if (hz != 100) {
		skip(1, "USER_HZ is %ld, the fixture assumes 100", hz);
		return;
	}
	/* cpu2 is offline: a hole, not a zero series */
	put("stat", "cpu  3000 30 1000 90000 100 0 60 9 0 0\n"
		    "cpu0 2646 10 500 45000 50 0 30 4 7 1\n"
		    "cpu1 354 20 500 45000 50 0 30 5 0 0\n"
		    "cpu3 1 2 3 4 5 6 7 8 9 10\n"
		    "intr 132826 0 0 0 1 16\n"
		    "ctxt 296842\n"
		    "btime 1795965488\n"
		    "processes 6251\n"
		    "procs_running 3\n"
		    "procs_blocked 1\n"
		    "softirq 88701 0 8198 4 1652 40661 0 2 19291 0 18893\n");
	put("meminfo", "MemTotal:       24598232 kB\n"
		       "MemFree:        23000000 kB\n"
		       "Active(anon):         20 kB\n"
		       "HugePages_Total:       4\n"
		       "Brand(new):            3 kB\n");
	put("loadavg", "0.00 0.04 12.50 1/92 6251\n");
	put("pressure/cpu", "some avg10=4.80 avg60=1.19 avg300=0.59 "
			    "total=1500000\n");
	put("pressure/io", "some avg10=0.72 avg60=0.19 avg300=0.46 "
			   "total=4121874\n"
			   "full avg10=0.45 avg60=0.12 avg300=0.43 "
			   "total=250000\n");
	/* pressure/memory and pressure/irq are absent: no series, no error */

	p.root = tmpdir;
	ok(procfs_init(NULL, &p) == 0, "init on a fixture tree");

	b = tick(&p);
	cmp_ok(CPU(b, "0", "user"), "==", 26.46, "cpu0 user 2646 ticks");
	cmp_ok(CPU(b, "0", "nice"), "==", 0.1, "cpu0 nice");
	cmp_ok(CPU(b, "0", "system"), "==", 5, "cpu0 system");
	cmp_ok(CPU(b, "0", "idle"), "==", 450, "cpu0 idle");
	cmp_ok(CPU(b, "0", "iowait"), "==", 0.5, "cpu0 iowait");
	cmp_ok(CPU(b, "0", "irq"), "==", 0, "cpu0 irq");
	cmp_ok(CPU(b, "0", "softirq"), "==", 0.3, "cpu0 softirq");
	cmp_ok(CPU(b, "0", "steal"), "==", 0.04, "cpu0 steal");
	cmp_ok(val(b, "node_cpu_guest_seconds_total", "cpu", "0", "mode",
		   "user"),
	       "==", 0.07, "cpu0 guest");
	cmp_ok(val(b, "node_cpu_guest_seconds_total", "cpu", "0", "mode",
		   "nice"),
	       "==", 0.01, "cpu0 guest_nice");
	cmp_ok(CPU(b, "1", "user"), "==", 3.54, "cpu1 user");
	cmp_ok(CPU(b, "3", "steal"), "==", 0.08, "cpu3 by id, not position");
	cmp_ok(count(b, "node_cpu_seconds_total"), "==", 24,
	       "8 modes x 3 online CPUs, no aggregate");
	cmp_ok(count(b, "node_cpu_guest_seconds_total"), "==", 6,
	       "2 guest modes x 3 CPUs");
	ok(!find(b, "node_cpu_seconds_total", "cpu", "2", "mode", "user"),
	   "offline cpu2 exports nothing");
	r = find(b, "node_cpu_seconds_total", "cpu", "0", "mode", "idle");
	ok(r && r->metric.type == TALLY_COUNTER, "cpu seconds is a counter");
	is(r ? r->metric.help : NULL, "Seconds the CPUs spent in each mode.",
	   "cpu help");
	cmp_ok(G(b, "node_intr_total"), "==", 132826, "intr");
	cmp_ok(G(b, "node_context_switches_total"), "==", 296842, "ctxt");
	cmp_ok(G(b, "node_boot_time_seconds"), "==", 1795965488, "btime");
	cmp_ok(G(b, "node_forks_total"), "==", 6251, "processes");
	cmp_ok(G(b, "node_procs_running"), "==", 3, "procs_running");
	cmp_ok(G(b, "node_procs_blocked"), "==", 1, "procs_blocked");
	r = find(b, "node_procs_running", NULL, NULL, NULL, NULL);
	ok(r && r->metric.type == TALLY_GAUGE, "procs_running is a gauge");

	cmp_ok(G(b, "node_memory_MemTotal_bytes"), "==", 24598232.0 * 1024,
	       "MemTotal in bytes");
	cmp_ok(G(b, "node_memory_Active_anon_bytes"), "==", 20480,
	       "Active(anon) renamed");
	cmp_ok(G(b, "node_memory_HugePages_Total"), "==", 4,
	       "unitless field kept as is");
	cmp_ok(G(b, "node_memory_Brand_new_bytes"), "==", 3072,
	       "a field unknown to this build is exported too");
	r = find(b, "node_memory_Brand_new_bytes", NULL, NULL, NULL, NULL);
	is(r ? r->metric.help : NULL,
	   "Memory information field Brand_new_bytes.", "its help text");
	r = find(b, "node_memory_MemFree_bytes", NULL, NULL, NULL, NULL);
	is(r ? r->metric.help : NULL, "Memory information field MemFree_bytes.",
	   "meminfo help as node_exporter");
	ok(r && r->metric.type == TALLY_GAUGE, "meminfo is a gauge");

	cmp_ok(G(b, "node_load1"), "==", 0.0, "load1");
	cmp_ok(G(b, "node_load5"), "==", 0.04, "load5");
	cmp_ok(G(b, "node_load15"), "==", 12.5, "load15");

	cmp_ok(G(b, "node_pressure_cpu_waiting_seconds_total"), "==", 1.5,
	       "cpu some total in seconds");
	cmp_ok(fabs(G(b, "node_pressure_io_waiting_seconds_total") - 4.121874),
	       "<", 1e-12, "io some total in seconds");
	cmp_ok(G(b, "node_pressure_io_stalled_seconds_total"), "==", 0.25,
	       "io full total in seconds");
	ok(!find(b, "node_pressure_memory_waiting_seconds_total", NULL, NULL,
		 NULL, NULL),
	   "absent pressure/memory exports nothing");
	ok(!find(b, "node_pressure_cpu_stalled_seconds_total", NULL, NULL, NULL,
		 NULL),
	   "no cpu stalled series (node_exporter has none)");
	tally_batch_unref(b);

	/*
	 * Tick 2: cpu1 went offline, cpu0's counters went down (a reset is
	 * exported as read, never unwrapped), a meminfo field disappeared and
	 * another appeared in the middle.
	 */
	put("stat", "cpu  1 1 1 1\n"
		    "cpu0 5 0 0 7 0 0 0 0 0 0\n"
		    "cpu3 1 2 3 4 5 6 7 8 9 10\n"
		    "ctxt 10\n");
	put("meminfo", "MemTotal:       24598232 kB\n"
		       "Shmem:             100 kB\n"
		       "HugePages_Total:       4\n");
	b = tick(&p);
	cmp_ok(count(b, "node_cpu_seconds_total"), "==", 16,
	       "cpu1 gone: 2 CPUs left");
	ok(!find(b, "node_cpu_seconds_total", "cpu", "1", "mode", "user"),
	   "cpu1 stops being exported");
	cmp_ok(CPU(b, "0", "user"), "==", 0.05, "counter went down: as read");
	cmp_ok(G(b, "node_context_switches_total"), "==", 10,
	       "ctxt went down: as read");
	ok(!find(b, "node_intr_total", NULL, NULL, NULL, NULL),
	   "line gone: series gone");
	cmp_ok(G(b, "node_memory_Shmem_bytes"), "==", 102400, "new field");
	ok(!find(b, "node_memory_MemFree_bytes", NULL, NULL, NULL, NULL) &&
		   !find(b, "node_memory_Brand_new_bytes", NULL, NULL, NULL,
			 NULL),
	   "removed fields gone");
	cmp_ok(G(b, "node_memory_HugePages_Total"), "==", 4,
	       "field after the change still right");
	tally_batch_unref(b);

	/*
	 * Tick 3: files that exist but cannot be read. meminfo becomes a
	 * directory (open() succeeds on one), loadavg a FIFO (open() would
	 * block without O_NONBLOCK), and a line of stat is garbage.
	 */
	snprintf(path, sizeof(path), "%s/meminfo", tmpdir);
	unlink(path);
	mkdir(path, 0755);
	close(p.files[PROCFS_MEMINFO].fd);
	p.files[PROCFS_MEMINFO].fd = -1; /* as after a failed read */
	snprintf(path, sizeof(path), "%s/loadavg", tmpdir);
	unlink(path);
	if (mkfifo(path, 0644) < 0)
		bail_out("mkfifo %s: %s", path, strerror(errno));
	close(p.files[PROCFS_LOADAVG].fd);
	p.files[PROCFS_LOADAVG].fd = -1;
	put("stat", "cpu0 5 0 0 7 0 0 0 0 0 0\n"
		    "cpu9 1 2 x\n"
		    "ctxt 11\n");
	b = tick(&p);
	ok(!find(b, "node_memory_MemTotal_bytes", NULL, NULL, NULL, NULL),
	   "directory meminfo: no memory series");
	ok(!find(b, "node_load1", NULL, NULL, NULL, NULL),
	   "FIFO loadavg: no load series, and no hang");
	cmp_ok(p.files[PROCFS_MEMINFO].err, "==", EINVAL,
	       "meminfo failure remembered (logged once)");
	cmp_ok(G(b, "node_context_switches_total"), "==", 11,
	       "the other files still report");
	cmp_ok(count(b, "node_cpu_seconds_total"), "==", 8,
	       "malformed cpu9 line dropped, cpu0 kept");
	cmp_ok(G(b, "node_pressure_io_stalled_seconds_total"), "==", 0.25,
	       "pressure still reported");
	tally_batch_unref(b);

	/* Tick 4: the files are back and picked up again. */
	snprintf(path, sizeof(path), "%s/meminfo", tmpdir);
	rmdir(path);
	put("meminfo", "MemTotal:       1 kB\n");
	snprintf(path, sizeof(path), "%s/loadavg", tmpdir);
	unlink(path);
	put("loadavg", "1.00 2.00 3.00 1/1 1\n");
	b = tick(&p);
	cmp_ok(G(b, "node_memory_MemTotal_bytes"), "==", 1024,
	       "meminfo readable again");
	cmp_ok(G(b, "node_load15"), "==", 3, "loadavg readable again");
	tally_batch_unref(b);

	procfs_fini(NULL, &p);
}

/* Steady state: a tick allocates nothing the batch does not. */
static void test_no_alloc(void)
{
	struct procfs p = { 0 };
	struct tally_batch *b;
	long before, during;
	char stat[1024];
	size_t len = 0;

	if (!alloc_count_available()) {
		skip(3, "allocation counting unavailable under sanitizers");
		return;
	}
	/* 16 CPUs: 160 records, their names in several arena chunks */
	for (int c = 0; c < 16; c++)
		len += (size_t)snprintf(stat + len, sizeof(stat) - len,
					"cpu%d 1 2 3 4 5 6 7 8 9 10\n", c);
	snprintf(stat + len, sizeof(stat) - len, "ctxt 5\n");
	put("stat", "%s", stat);
	put("meminfo", "MemTotal: 1 kB\nActive(anon): 2 kB\n"
		       "HugePages_Total: 0\nBrand(new): 5 kB\n");
	put("loadavg", "0.1 0.2 0.3 1/1 1\n");
	p.root = tmpdir;
	procfs_init(NULL, &p);
	for (int i = 0; i < 3; i++) { /* warm up caches and the free list */
		b = tally_batch_new();
		procfs_read(NULL, &p, b);
		tally_batch_unref(b);
	}
	b = tally_batch_new();
	before = alloc_count();
	procfs_read(NULL, &p, b);
	during = alloc_count() - before;
	cmp_ok(tally_batch_count(b), ">", 160, "steady-state tick has records");
	cmp_ok(names_bytes(b), ">", 2 * ARENA_CHUNK_BYTES,
	       "their names span several arena chunks");
	tally_batch_unref(b);
	cmp_ok(during, "==", 0, "steady-state tick allocates nothing");
	procfs_fini(NULL, &p);
}

int main(void)
{
	plan(NO_PLAN);
	if (!mkdtemp(tmpdir))
		bail_out("mkdtemp: %s", strerror(errno));
	test_u64();
	test_parse_cpu();
	test_meminfo();
	test_loadavg();
	test_psi();
	test_plugin();
	test_no_alloc();
	rmtree("");
	return done_testing();
}
