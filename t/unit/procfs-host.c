/* SPDX-License-Identifier: MIT */
/*
 * t/unit/procfs-host.c - the parsers of the procfs input's host groups
 * (netstat, sockstat, vmstat, diskstats, filesystem, os), table-driven,
 * and the core's statvfs pool (tally/statfs.h) with a call that hangs;
 * no allocation in a steady-state tick with every group on
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
#include <time.h>
#include <unistd.h>

#include "tap.h"

#include "../../plugins/input/procfs/procfs.c"
#include "../../plugins/input/procfs/netstat.c"
#include "../../plugins/input/procfs/diskstats.c"
#include "../../plugins/input/procfs/filesystem.c"
#include "../../plugins/input/procfs/system.c"

#include "procfs-util.h"

static void test_kv(void)
{
	static const struct {
		const char *line;
		int ret;
		const char *key;
		double v;
	} cases[] = {
		{ "pgfault 569700835\n", 0, "pgfault", 569700835 },
		{ "Ip6InReceives                   \t100", 0, "Ip6InReceives",
		  100 },
		{ "nr_dirty_threshold 18446744073709551615", 0,
		  "nr_dirty_threshold", 18446744073709551615.0 },
		{ "oom_kill -3", 0, "oom_kill", -3 },
		{ "pgfault", -1, NULL, 0 },
		{ "pgfault x", -1, NULL, 0 },
		{ "pgfault 1 2", -1, NULL, 0 },
		{ "pgfault 12x", -1, NULL, 0 },
		{ "", -1, NULL, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const char *key = NULL;
		size_t len = 0;
		double v = 0;
		int ret = procfs_parse_kv(cases[i].line, &key, &len, &v);

		cmp_ok(ret, "==", cases[i].ret, "kv '%s'", cases[i].line);
		if (ret == 0) {
			ok(len == strlen(cases[i].key) &&
				   !strncmp(key, cases[i].key, len),
			   "kv key %s", cases[i].key);
			ok(v == cases[i].v, "kv value %g", cases[i].v);
		}
	}
}

static void test_snmp6_split(void)
{
	static const struct {
		const char *key;
		size_t plen;
	} cases[] = {
		{ "Ip6InReceives", 3 },	   { "Icmp6InMsgs", 5 },
		{ "UdpLite6InErrors", 8 }, { "Udp6", 0 },
		{ "NoSix", 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		cmp_ok(procfs_snmp6_split(cases[i].key, strlen(cases[i].key)),
		       "==", cases[i].plen, "snmp6 split %s", cases[i].key);
}

static void test_pairs(void)
{
	struct procfs_pair c;
	const char *key;
	size_t len;
	double v;

	ok(procfs_pair_start("Tcp: RtoAlgorithm MaxConn ActiveOpens\n",
			     "Tcp: 1 -1 500\n", &c) == 0,
	   "pair: same prefix");
	ok(c.plen == 3 && !strncmp(c.proto, "Tcp", 3), "pair: protocol Tcp");
	ok(procfs_pair_next(&c, &key, &len, &v) == 1 && len == 12 &&
		   !strncmp(key, "RtoAlgorithm", 12) && v == 1,
	   "pair: RtoAlgorithm 1");
	ok(procfs_pair_next(&c, &key, &len, &v) == 1 && v == -1,
	   "pair: MaxConn -1 (signed)");
	ok(procfs_pair_next(&c, &key, &len, &v) == 1 && v == 500 &&
		   len == 11,
	   "pair: ActiveOpens 500");
	ok(procfs_pair_next(&c, &key, &len, &v) == 0, "pair: both end");

	ok(procfs_pair_start("Tcp: A B\n", "Udp: 1 2\n", &c) < 0,
	   "pair: different protocols refused");
	ok(procfs_pair_start("no colon here\n", "no colon here\n", &c) < 0,
	   "pair: no protocol refused");
	ok(procfs_pair_start("Ip: A B\n", "Ip: 1 2 3\n", &c) == 0 &&
		   procfs_pair_next(&c, &key, &len, &v) == 1 &&
		   procfs_pair_next(&c, &key, &len, &v) == 1 &&
		   procfs_pair_next(&c, &key, &len, &v) < 0,
	   "pair: more values than names is malformed");
	ok(procfs_pair_start("Ip: A B\n", "Ip: 1\n", &c) == 0 &&
		   procfs_pair_next(&c, &key, &len, &v) == 1 &&
		   procfs_pair_next(&c, &key, &len, &v) < 0,
	   "pair: more names than values is malformed");
	ok(procfs_pair_start("Ip: A\n", "Ip: x\n", &c) == 0 &&
		   procfs_pair_next(&c, &key, &len, &v) < 0,
	   "pair: a value that is not a number is malformed");
}

static void test_sockstat(void)
{
	struct procfs_sock c;
	const char *key;
	size_t len;
	double v;

	ok(procfs_sock_start("TCP: inuse 12 orphan 1 mem 3\n", &c) == 0 &&
		   c.plen == 3 && !strncmp(c.proto, "TCP", 3),
	   "sockstat: TCP line");
	ok(procfs_sock_next(&c, &key, &len, &v) == 1 && len == 5 &&
		   !strncmp(key, "inuse", 5) && v == 12,
	   "sockstat: inuse 12");
	ok(procfs_sock_next(&c, &key, &len, &v) == 1 && v == 1,
	   "sockstat: orphan 1");
	ok(procfs_sock_next(&c, &key, &len, &v) == 1 && len == 3 && v == 3,
	   "sockstat: mem 3");
	ok(procfs_sock_next(&c, &key, &len, &v) == 0, "sockstat: end");
	ok(procfs_sock_start("FRAG6: inuse 0 memory 0", &c) == 0 &&
		   c.plen == 5,
	   "sockstat: FRAG6, no newline");
	ok(procfs_sock_start("garbage\n", &c) < 0, "sockstat: no colon");
	ok(procfs_sock_start("TCP: inuse x\n", &c) == 0 &&
		   procfs_sock_next(&c, &key, &len, &v) < 0,
	   "sockstat: a value that is not a number");
	ok(procfs_sock_start("TCP: inuse\n", &c) == 0 &&
		   procfs_sock_next(&c, &key, &len, &v) < 0,
	   "sockstat: a key without value");
}

static void test_diskstats(void)
{
	static const struct {
		const char *line;
		int ret;
		const char *name;
		unsigned major, minor, n;
		uint64_t v[17];
	} cases[] = {
		/* Linux 4.x: 11 counters */
		{ "   8       0 sda 1000 10 20000 500 2000 20 40000 1500 0 "
		  "1800 2000\n",
		  0, "sda", 8, 0, 11,
		  { 1000, 10, 20000, 500, 2000, 20, 40000, 1500, 0, 1800,
		    2000 } },
		/* Linux 4.18+: 15 (discards) */
		{ " 253       0 dm-0 2500 0 550000 1500 4500 0 780000 6000 1 "
		  "2800 7500 3 0 24 1",
		  0, "dm-0", 253, 0, 15,
		  { 2500, 0, 550000, 1500, 4500, 0, 780000, 6000, 1, 2800,
		    7500, 3, 0, 24, 1 } },
		/* Linux 5.5+ (6.x): 17 (flushes) */
		{ " 259       0 nvme0n1 3000 0 600000 1200 4000 100 800000 "
		  "2500 2 3000 3700 10 1 2048 4 20 6\n",
		  0, "nvme0n1", 259, 0, 17,
		  { 3000, 0, 600000, 1200, 4000, 100, 800000, 2500, 2, 3000,
		    3700, 10, 1, 2048, 4, 20, 6 } },
		/* a future kernel's 18th counter is ignored */
		{ "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18", 0,
		  "sda", 8, 0, 17,
		  { 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16,
		    17 } },
		{ "8 16 sdb 1 2 3", -1, NULL, 0, 0, 0, { 0 } },
		{ "8 16 sdb 1 2 3 4 5 6 7 8 9 10 x", -1, NULL, 0, 0, 0, { 0 } },
		{ "8 sdb 1 2 3 4 5 6 7 8 9 10 11", -1, NULL, 0, 0, 0, { 0 } },
		{ "", -1, NULL, 0, 0, 0, { 0 } },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct procfs_disk_row r;
		int ret = procfs_parse_diskstats(cases[i].line, &r);

		cmp_ok(ret, "==", cases[i].ret, "diskstats '%s'",
		       cases[i].line);
		if (ret < 0)
			continue;
		is(r.name, cases[i].name, "diskstats name");
		ok(r.major == cases[i].major && r.minor == cases[i].minor,
		   "diskstats %u:%u", cases[i].major, cases[i].minor);
		cmp_ok(r.n, "==", cases[i].n, "diskstats %u counters",
		       cases[i].n);
		ok(!memcmp(r.v, cases[i].v, cases[i].n * sizeof(r.v[0])),
		   "diskstats counters of %s", cases[i].name);
	}
}

static void test_udev(void)
{
	const char *t = "S:disk/by-id/x\nE:ID_MODEL=Samsung SSD\n"
			"E:ID_MODEL_ENC=Samsung\\x20SSD\nE:ID_WWN=eui.1";
	char v[64];

	procfs_udev_value(t, "ID_MODEL", v, sizeof(v));
	is(v, "Samsung SSD", "udev: ID_MODEL, not ID_MODEL_ENC");
	procfs_udev_value(t, "ID_WWN", v, sizeof(v));
	is(v, "eui.1", "udev: last line without newline");
	procfs_udev_value(t, "ID_PATH", v, sizeof(v));
	is(v, "", "udev: absent is empty");
	procfs_udev_value(t, "ID_MODEL", v, 7);
	is(v, "Samsun", "udev: cut to the buffer");
}

static void test_mountinfo(void)
{
	static const struct {
		const char *line;
		int ret;
		const char *mountpoint, *fstype, *device;
		bool ro;
	} cases[] = {
		{ "22 1 254:0 / / rw,relatime shared:1 - ext4 /dev/vda1 rw\n",
		  0, "/", "ext4", "/dev/vda1", false },
		/* spaces and tabs are octal escapes; two optional fields */
		{ "30 22 0:40 / /mnt/my\\040data rw,relatime shared:20 "
		  "master:1 - tmpfs tmp\\040fs rw,size=1024k",
		  0, "/mnt/my data", "tmpfs", "tmp fs", false },
		{ "31 22 253:0 / /srv/tab\\011back\\134slash ro,relatime - "
		  "xfs /dev/mapper/vg-lv rw",
		  0, "/srv/tab\tback\\slash", "xfs", "/dev/mapper/vg-lv",
		  true },
		/* "ro" is an option, not a prefix: "rootcontext" is not */
		{ "32 22 0:42 / /home rw,rootcontext=x - nfs4 srv:/home ro",
		  0, "/home", "nfs4", "srv:/home", false },
		/* a backslash not followed by three octal digits stays */
		{ "33 22 0:43 / /a\\9b rw - fuse.sshfs u@h:/ rw", 0, "/a\\9b",
		  "fuse.sshfs", "u@h:/", false },
		{ "34 22 0:44 / /x rw shared:1", -1, NULL, NULL, NULL, false },
		{ "35 22 0:45 / /x rw - tmpfs", -1, NULL, NULL, NULL, false },
		{ "36 22", -1, NULL, NULL, NULL, false },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct procfs_mountinfo_row r;
		int ret = procfs_parse_mountinfo(cases[i].line, &r);

		cmp_ok(ret, "==", cases[i].ret, "mountinfo '%s'",
		       cases[i].line);
		if (ret < 0)
			continue;
		is(r.mountpoint, cases[i].mountpoint, "mount point");
		is(r.fstype, cases[i].fstype, "type");
		is(r.device, cases[i].device, "device");
		ok(r.ro == cases[i].ro, "read-only %d", cases[i].ro);
	}
}

static void test_os_release(void)
{
	static char vals[PROCFS_OS_NKEYS][PROCFS_OS_VALUE_MAX];
	static const struct {
		const char *in;
		int ret;
		const char *out;
	} values[] = {
		{ "plain", 0, "plain" },
		{ "\"double quoted\"", 0, "double quoted" },
		{ "'single \\\"kept\\\"'", 0, "single \\\"kept\\\"" },
		{ "\"esc \\\" \\\\ \\$ \\` \\n\"", 0, "esc \" \\ $ ` \\n" },
		{ "\"unterminated", -1, NULL },
		{ "\"", -1, NULL },
		{ "", 0, "" },
	};
	int bad;

	for (size_t i = 0; i < sizeof(values) / sizeof(values[0]); i++) {
		char out[64];
		int ret = procfs_os_value(values[i].in, strlen(values[i].in),
					  out, sizeof(out));

		cmp_ok(ret, "==", values[i].ret, "os value %s", values[i].in);
		if (ret == 0)
			is(out, values[i].out, "os value unquoted");
	}
	bad = procfs_parse_os_release("# c\nNAME=\"Debian GNU/Linux\"\n"
				      "ID=debian\n\nbogus\nVERSION_ID=\"12\"\n"
				      "ID_LIKE=\"x\n",
				      vals);
	cmp_ok(bad, "==", 2, "os-release: two bad lines");
	is(vals[5], "Debian GNU/Linux", "os-release NAME");
	is(vals[1], "debian", "os-release ID");
	is(vals[11], "12", "os-release VERSION_ID");
	is(vals[2], "", "os-release ID_LIKE (unterminated) empty");
	ok(procfs_os_version("12") == 12, "version 12");
	ok(procfs_os_version("22.04") == 22.04, "version 22.04");
	ok(procfs_os_version("8.6.2203") == 8.6, "version 8.6.2203 is 8.6");
	ok(procfs_os_version("rolling") == 0, "version rolling is 0");
	ok(procfs_os_version("") == 0, "no version is 0");
}

/* One pattern for a regexlist option, as the core would compile it. */
static void one_regex(struct tally_regexlist *l, regex_t *re, const char *src)
{
	if (regcomp(re, src, REG_EXTENDED | REG_NOSUB) != 0)
		bail_out("regcomp %s", src);
	l->n = 1;
	l->re = re;
}

/* Every host group on: a steady-state tick allocates nothing either. */
static void test_host_no_alloc(void)
{
	static regex_t res[5];
	struct procfs p = { 0 };
	struct tally_batch *b;
	long before, during;

	if (!alloc_count_available()) {
		skip(2, "allocation counting unavailable under sanitizers");
		return;
	}
	if (!mkdtemp(tmpdir))
		bail_out("mkdtemp: %s", strerror(errno));
	put("stat", "cpu0 1 2 3 4 5 6 7 8 9 10\nctxt 5\n");
	put("meminfo", "MemTotal: 1 kB\n");
	put("loadavg", "0.1 0.2 0.3 1/1 1\n");
	put("vmstat", "pgfault 5\noom_kill 1\nnr_free_pages 3\n");
	put("net/netstat", "TcpExt: ListenDrops TW\nTcpExt: 1 2\n");
	put("net/snmp", "Tcp: ActiveOpens MaxConn\nTcp: 3 -1\n");
	put("net/snmp6", "Ip6InOctets 7\nUdp6InErrors 0\n");
	put("net/sockstat", "sockets: used 3\nTCP: inuse 1 mem 2\n");
	put("net/sockstat6", "TCP6: inuse 1\n");
	put("diskstats", "8 0 sda 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17\n"
			 "259 0 nvme0n1 1 2 3 4 5 6 7 8 9 10 11\n");
	put("self/mountinfo", "1 0 8:1 / / rw - ext4 /dev/sda1 rw\n"
			      "2 1 0:4 / /run/a\\040b rw - tmpfs tmpfs rw\n");
	put("etc/os-release", "ID=debian\nVERSION_ID=\"12\"\n");
	p.root = p.rootfs = p.sysfs = p.udev_data = tmpdir;
	p.vmstat = p.netstat = p.sockstat = p.diskstats = p.filesystem = true;
	p.uname = p.time = p.os = true;
	p.mount_timeout = 1.0;
	one_regex(&p.vmstat_fields, &res[0], PROCFS_VMSTAT_FIELDS);
	one_regex(&p.netstat_fields, &res[1], PROCFS_NETSTAT_FIELDS);
	one_regex(&p.mount_exclude, &res[2], PROCFS_MOUNT_EXCLUDE);
	one_regex(&p.fstype_exclude, &res[3], PROCFS_FSTYPE_EXCLUDE);
	one_regex(&p.device_exclude, &res[4], PROCFS_DEVICE_EXCLUDE);
	ok(procfs_init(NULL, &p) == 0, "init with every host group");
	for (int i = 0; i < 3; i++) { /* warm up caches and the free list */
		b = tally_batch_new();
		procfs_read(NULL, &p, b);
		tally_batch_unref(b);
	}
	b = tally_batch_new();
	before = alloc_count();
	procfs_read(NULL, &p, b);
	during = alloc_count() - before;
	ok(find(b, "node_filesystem_size_bytes", NULL, NULL, NULL, NULL) &&
		   find(b, "node_disk_io_now", NULL, NULL, NULL, NULL) && find(b, "node_os_info", NULL, NULL, NULL, NULL) &&
		   find(b, "node_sockstat_TCP_mem_bytes", NULL, NULL, NULL, NULL) &&
		   find(b, "node_netstat_Tcp_ActiveOpens", NULL, NULL, NULL, NULL) &&
		   find(b, "node_vmstat_pgfault", NULL, NULL, NULL, NULL),
	   "every group reports");
	tally_batch_unref(b);
	cmp_ok(during, "==", 0, "steady-state tick of the host groups "
				"allocates nothing");
	procfs_fini(NULL, &p);
	for (int i = 0; i < 5; i++)
		regfree(&res[i]);
	rmtree("");
}

/* The core's statvfs pool: a hung call costs one timeout, then EBUSY. */
static void test_statfs_pool(void)
{
	char flag[] = "/tmp/tally-unit-hang-XXXXXX";
	char hook[128];
	struct tally_statfs_req r[3];
	struct tally_statfs *fs;
	int fd = mkstemp(flag);
	int64_t t0, dt;

	if (fd < 0)
		bail_out("mkstemp: %s", strerror(errno));
	close(fd);
	snprintf(hook, sizeof(hook), "/tmp:%s", flag);
	setenv("TALLY_TEST_STATFS_HANG", hook, 1);
	fs = tally_statfs_new(0.2);
	unsetenv("TALLY_TEST_STATFS_HANG");
	ok(fs != NULL, "statfs pool");
	r[0].path = "/";
	r[1].path = "/tmp";
	r[2].path = "/nonexistent-tally-path";
	t0 = tally_monotonic_ns();
	ok(tally_statfs_run(fs, r, 3) == 0, "run with a hung path");
	dt = tally_monotonic_ns() - t0;
	cmp_ok(r[0].err, "==", 0, "/ answers");
	ok(r[0].st.f_blocks > 0, "/ has blocks");
	cmp_ok(r[1].err, "==", ETIMEDOUT, "/tmp hangs: ETIMEDOUT");
	cmp_ok(r[2].err, "==", ENOENT, "the path after the hung one answers");
	ok(dt >= 200000000, "the loop waited the timeout (%lld ns)",
	   (long long)dt);
	cmp_ok(tally_statfs_hung(fs), "==", 1, "one call hung");

	ok(tally_statfs_run(fs, r, 3) == 0, "second run");
	cmp_ok(r[1].err, "==", EBUSY, "a hung path is EBUSY at once");
	cmp_ok(r[0].err, "==", 0, "/ still answers");

	unlink(flag);
	/* wait (bounded) for the hung call to return */
	for (int i = 0; i < 500 && tally_statfs_hung(fs); i++) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };

		nanosleep(&ts, NULL);
	}
	cmp_ok(tally_statfs_hung(fs), "==", 0, "the hung call returned");
	ok(tally_statfs_run(fs, r, 3) == 0, "third run");
	cmp_ok(r[1].err, "==", 0, "/tmp answers again");
	tally_statfs_free(fs);

	/* freed while a call hangs: the thread frees what is left */
	fd = open(flag, O_CREAT | O_WRONLY, 0600);
	close(fd);
	setenv("TALLY_TEST_STATFS_HANG", hook, 1);
	fs = tally_statfs_new(0.05);
	unsetenv("TALLY_TEST_STATFS_HANG");
	ok(tally_statfs_run(fs, &r[1], 1) == 0 && r[1].err == ETIMEDOUT,
	   "hung again");
	tally_statfs_free(fs);
	unlink(flag);
	ok(1, "freed with a hung call (the sanitizers check the rest)");
}

int main(void)
{
	plan(NO_PLAN);
	test_kv();
	test_snmp6_split();
	test_pairs();
	test_sockstat();
	test_diskstats();
	test_udev();
	test_mountinfo();
	test_os_release();
	test_host_no_alloc();
	test_statfs_pool();
	return done_testing();
}
