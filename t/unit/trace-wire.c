/* SPDX-License-Identifier: MIT */
/*
 * t/unit/trace-wire.c - libtally-trace's encoder and environment probes
 *
 * The expected messages are the test vectors of doc/wire-format.md, read
 * from the file itself: they were written by hand from the field table
 * (and checked against Python's struct module), not produced by this
 * encoder. The environment cases follow DESIGN §5 and tally-trace(3).
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <tally/mode.h>

#include "trace-internal.h"
#include "tap.h"

struct vector {
	char name[64];
	uint8_t b[TALLY_WIRE_MAX_MSG + 16];
	size_t len;
};

static struct vector vectors[32];
static int nvectors;

/* The doc's format: "# vector NAME" in a ``` block, then hex pairs before
 * any '#' on each following line of that block. */
static void load_vectors(const char *path)
{
	FILE *f = fopen(path, "r");
	char line[512];
	struct vector *v = NULL;

	if (!f)
		bail_out("open %s: %s", path, strerror(errno));
	while (fgets(line, sizeof(line), f)) {
		char name[64];

		if (!strncmp(line, "```", 3)) {
			v = NULL;
			continue;
		}
		if (sscanf(line, "# vector %63s", name) == 1) {
			if (nvectors ==
			    (int)(sizeof(vectors) / sizeof(*vectors)))
				bail_out("too many vectors in %s", path);
			v = &vectors[nvectors++];
			snprintf(v->name, sizeof(v->name), "%s", name);
			continue;
		}
		if (!v)
			continue;
		for (char *p = line; *p && *p != '#'; p++) {
			unsigned x;

			if (p[0] == ' ' || p[0] == '\n')
				continue;
			if (sscanf(p, "%2x", &x) != 1 || v->len >= sizeof(v->b))
				bail_out("bad hex in vector %s: %s", v->name,
					 line);
			v->b[v->len++] = (uint8_t)x;
			p++;
		}
	}
	fclose(f);
}

static const struct vector *vec(const char *name)
{
	for (int i = 0; i < nvectors; i++)
		if (!strcmp(vectors[i].name, name))
			return &vectors[i];
	bail_out("vector %s missing from doc/wire-format.md", name);
}

static void hexdiff(const uint8_t *got, size_t glen, const struct vector *v)
{
	for (size_t i = 0; i < glen && i < v->len; i++)
		if (got[i] != v->b[i]) {
			diag("first difference at byte %zu: got %02x want %02x",
			     i, got[i], v->b[i]);
			return;
		}
	diag("lengths: got %zu want %zu", glen, v->len);
}

static void check(const char *name, const uint8_t *m, size_t n)
{
	const struct vector *v = vec(name);

	if (!ok(n == v->len && !memcmp(m, v->b, n), "encodes %s (%zu bytes)",
		name, v->len))
		hexdiff(m, n, v);
}

/* The valid vectors, one buffer reused as libtally-trace does. */
static void test_vectors(void)
{
	struct tt_source s = {
		.pid = 4242,
		.tid = 4243,
		.rank = 3,
		.trace = "job42",
		.trace_len = 5,
		.host = "n01",
		.host_len = 3,
	};
	struct tt_source nohost = s;
	uint8_t m[TALLY_WIRE_MAX_MSG];
	size_t n;

	nohost.rank = -1;
	nohost.host = "";
	nohost.host_len = 0;

	tt_msg_init(m, &s);
	n = tt_msg_fill(m, &s, TALLY_WIRE_BEGIN, 0, 1722000000123456789LL, 1, 0,
			"solver", 6);
	check("begin-root", m, n);
	/* same buffer, next event: only the variable fields are rewritten */
	n = tt_msg_fill(m, &s, TALLY_WIRE_END, 7, 1722000000623456789LL, 2, 1,
			"", 0);
	check("end-dropped", m, n);
	n = tt_msg_fill(m, &s, TALLY_WIRE_END, 0, 1722000001000000000LL, 1, 0,
			"solver", 6);
	check("end-root", m, n);
	/* close: 1234 queued since begin-root, 7 drops unreported */
	n = tt_msg_fill(m, &s, TALLY_WIRE_CLOSE, 7, 1722000002000000000LL, 1234,
			1722000000123456789ULL, "", 0);
	check("close", m, n);

	tt_msg_init(m, &nohost);
	n = tt_msg_fill(m, &nohost, TALLY_WIRE_BEGIN, 0, 1722000000200000000LL,
			2, 1, "\xc3\xa9tape", 6);
	check("begin-nested", m, n);

	/* the invalid vectors are begin-root with one change: make sure the
	 * doc's table matches its blocks (the decoder tests rely on them) */
	cmp_ok(vec("bad-truncated")->len, "==", 51, "bad-truncated: 51 bytes");
	cmp_ok(vec("bad-length-short")->len, "==", 67,
	       "bad-length-short: 67 bytes");
	ok(!memcmp(vec("bad-utf8")->b, vec("begin-root")->b, 57) &&
		   vec("bad-utf8")->b[57] == 0xff,
	   "bad-utf8 differs from begin-root at byte 57 only (prefix)");
}

static void test_max_message(void)
{
	static char big[TALLY_WIRE_MAX_STR];
	struct tt_source s = {
		.pid = 1,
		.tid = 1,
		.rank = 0,
		.trace = big,
		.trace_len = TALLY_WIRE_MAX_STR,
		.host = big,
		.host_len = TALLY_WIRE_MAX_STR,
	};
	static uint8_t m[TALLY_WIRE_MAX_MSG];
	size_t n;

	memset(big, 'x', sizeof(big));
	tt_msg_init(m, &s);
	n = tt_msg_fill(m, &s, TALLY_WIRE_BEGIN, 0, 0, 1, 0, big,
			TALLY_WIRE_MAX_STR);
	cmp_ok(n, "==", 3124, "three 1024-byte strings: 3124 bytes");
	cmp_ok(tally_wire_get16(m + 44), "==", 1024, "trace_len 1024");
	cmp_ok(tally_wire_get16(m + 46), "==", 1024, "name_len 1024");
	cmp_ok(tally_wire_get16(m + 48), "==", 1024, "host_len 1024");
}

static void test_utf8_clip(void)
{
	/* "aé€𝄞": 1 + 2 + 3 + 4 bytes, sequences start at 0, 1, 3, 6 */
	const char *s = "a\xc3\xa9\xe2\x82\xac\xf0\x9d\x84\x9e";
	static const struct {
		size_t max, want;
	} cases[] = {
		{ 10, 10 }, { 20, 10 }, { 9, 6 }, { 8, 6 }, { 7, 6 }, { 6, 6 },
		{ 5, 3 },   { 4, 3 },	{ 3, 3 }, { 2, 1 }, { 1, 1 }, { 0, 0 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++)
		cmp_ok(tally_utf8_clip(s, 10, cases[i].max), "==", cases[i].want,
		       "clip 10 bytes of UTF-8 to %zu: %zu", cases[i].max,
		       cases[i].want);
}

/*
 * Ill-formed UTF-8 becomes U+FFFD per maximal subpart; the expected
 * strings are what Python's bytes.decode("utf-8", "replace") gives (the
 * Python client's rule), computed with Python.
 */
#define FFFD "\xef\xbf\xbd"
static void test_utf8_fix(void)
{
	static const struct {
		const char *in, *want;
	} cases[] = {
		{ "plain", "plain" },
		{ "\xc3\xa9t\xe2\x82\xac\xf0\x9f\x98\x80",
		  "\xc3\xa9t\xe2\x82\xac\xf0\x9f\x98\x80" },
		{ "bad\xffutf8", "bad" FFFD "utf8" },
		{ "\xe2\x82", FFFD },		    /* truncated: one */
		{ "\xff\xfe", FFFD FFFD },	    /* never valid: each */
		{ "\xc0\xaf", FFFD FFFD },	    /* overlong 2-byte */
		{ "\xe0\x80\xaf", FFFD FFFD FFFD }, /* overlong 3-byte */
		{ "\xed\xa0\x80", FFFD FFFD FFFD }, /* surrogate U+D800 */
		{ "\xf4\x90\x80\x80", FFFD FFFD FFFD FFFD }, /* > U+10FFFF */
		{ "\xf0\x9f\x98", FFFD },		     /* 4-byte, cut */
		{ "a\x80\x62", "a" FFFD "b" },	       /* lone continuation */
		{ "\xc3\xa9t\xc3", "\xc3\xa9t" FFFD }, /* cut at the end */
		{ "\xf8\x88\x80\x80\x80", FFFD FFFD FFFD FFFD FFFD },
	};
	static char big[1100], fixed[1024];
	char out[64];
	size_t n;

	for (size_t i = 0; i < sizeof(cases) / sizeof(*cases); i++) {
		size_t len = strlen(cases[i].in);

		n = tally_utf8_fix(cases[i].in, len, out, sizeof(out) - 1);
		out[n] = '\0';
		is(out, cases[i].want, "fix case %zu", i);
		ok(tally_utf8_valid(cases[i].in, len) ==
			   !strcmp(cases[i].in, cases[i].want),
		   "valid case %zu: %s", i,
		   strcmp(cases[i].in, cases[i].want) ? "no" : "yes");
	}
	/* at the 1024-byte limit a U+FFFD goes in whole or not at all */
	memset(big, 'a', sizeof(big));
	big[1023] = '\xff';
	n = tally_utf8_fix(big, 1024, fixed, sizeof(fixed));
	cmp_ok(n, "==", 1023, "1023 bytes + U+FFFD: the U+FFFD does not fit");
	big[1023] = 'a';
	big[1021] = '\xff';
	n = tally_utf8_fix(big, 1022, fixed, sizeof(fixed));
	ok(n == 1024 && !memcmp(fixed + 1021, FFFD, 3),
	   "1021 bytes + U+FFFD: exactly 1024");
	cmp_ok(tally_utf8_fix(big, 1022, fixed, 0), "==", 0, "nothing fits in 0");
}

static const char *const all_vars[] = {
	"PMIX_RANK",
	"OMPI_COMM_WORLD_RANK",
	"PMI_RANK",
	"SLURM_PROCID",
	"FLUX_TASK_RANK",
	"SLURM_JOB_ID",
	"FLUX_JOB_ID",
	"PBS_JOBID",
	"LSB_JOBID",
	"TALLY_TRACE_ID",
	"TALLY_TRACE_ENDPOINT",
	"TALLY_RUNTIME_DIR",
	"XDG_RUNTIME_DIR",
	NULL,
};

static void clear_env(void)
{
	for (int i = 0; all_vars[i]; i++)
		unsetenv(all_vars[i]);
}

static void test_rank(void)
{
	/* applied in order: each step sets one variable, then checks */
	static const struct {
		const char *var, *value;
		int32_t want;
		const char *what;
	} steps[] = {
		{ NULL, NULL, -1, "no launcher: rank -1" },
		{ "FLUX_TASK_RANK", "7", 7, "FLUX_TASK_RANK=7" },
		{ "SLURM_PROCID", "5", 5,
		  "SLURM_PROCID before FLUX_TASK_RANK" },
		{ "PMI_RANK", "4", 4, "PMI_RANK before SLURM_PROCID" },
		{ "OMPI_COMM_WORLD_RANK", "3", 3,
		  "OMPI_COMM_WORLD_RANK before PMI_RANK" },
		{ "PMIX_RANK", "0", 0, "PMIX_RANK first, 0 is a rank" },
		{ "PMIX_RANK", "x1", 3, "garbage PMIX_RANK skipped" },
		{ "PMIX_RANK", "-2", 3, "negative PMIX_RANK skipped" },
		{ "PMIX_RANK", "12abc", 3, "trailing garbage skipped" },
		{ "PMIX_RANK", "2147483648", 3, "rank beyond int32 skipped" },
		{ "PMIX_RANK", "2147483647", 2147483647, "INT32_MAX accepted" },
	};

	clear_env();
	for (size_t i = 0; i < sizeof(steps) / sizeof(*steps); i++) {
		if (steps[i].var)
			setenv(steps[i].var, steps[i].value, 1);
		cmp_ok(tt_env_rank(), "==", steps[i].want, "%s", steps[i].what);
	}
}

static void test_trace_id(void)
{
	char want[TALLY_JOBID_MAX + 1], jobbuf[TALLY_JOBID_MAX + 1], *id;
	char longid[100];

	clear_env();
	snprintf(want, sizeof(want), "pid-%ld", (long)getpid());
	id = tt_default_trace_id();
	is(id, want, "outside a job: pid-<pid>");
	free(id);

	setenv("LSB_JOBID", "77", 1);
	setenv("PBS_JOBID", "66.pbs", 1);
	id = tt_default_trace_id();
	is(id, "66.pbs", "PBS_JOBID before LSB_JOBID");
	free(id);
	setenv("FLUX_JOB_ID", "f2bXz", 1);
	setenv("SLURM_JOB_ID", "", 1);
	id = tt_default_trace_id();
	is(id, "f2bXz", "empty SLURM_JOB_ID ignored, FLUX_JOB_ID next");
	free(id);
	setenv("SLURM_JOB_ID", "1234", 1);
	id = tt_default_trace_id();
	is(id, "1234", "SLURM_JOB_ID first");
	free(id);
	is(tt_env_jobid(jobbuf), "1234", "tt_env_jobid agrees");
	/* tallyd bounds a long id (core/mode.c): the client the same way */
	memset(longid, '9', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	setenv("SLURM_JOB_ID", longid, 1);
	tally_jobid_bound(longid, strlen(longid), want);
	is(tt_env_jobid(jobbuf), want, "a long id is bounded as tallyd does");
	id = tt_default_trace_id();
	is(id, want, "and so is the trace id made of it");
	free(id);
	setenv("SLURM_JOB_ID", "1234", 1);
	setenv("TALLY_TRACE_ID", "mine", 1);
	id = tt_default_trace_id();
	is(id, "mine", "TALLY_TRACE_ID overrides the job");
	free(id);
}

/* A listening-or-not AF_UNIX socket file, as a collector leaves it. */
static void make_socket(const char *path)
{
	struct sockaddr_un sa = { .sun_family = AF_UNIX };
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	snprintf(sa.sun_path, sizeof(sa.sun_path), "%s", path);
	if (fd < 0 || bind(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0)
		bail_out("bind %s: %s", path, strerror(errno));
	close(fd);
}

static void mkdir_p(const char *path)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		mkdir(tmp, 0700);
		*p = '/';
	}
	mkdir(tmp, 0700);
}

static void expect_endpoint(const char *want, const char *what)
{
	char *ep = tt_discover_endpoint();

	is(ep, want, "%s", what);
	free(ep);
}

static void expect_system(const char *what)
{
	expect_endpoint("ipc:///run/tally/trace.sock", what);
}

static void test_discovery(void)
{
	char dir[] = "/tmp/tally-trace-wire-XXXXXX";
	char p[PATH_MAX], want[PATH_MAX + 8];
	char longid[100], jobdir[TALLY_JOBID_MAX + 1];
	char shortdir[] = "/tmp/tjXXXXXX";

	if (!mkdtemp(dir))
		bail_out("mkdtemp: %s", strerror(errno));
	clear_env();
	/*
	 * /tmp/tally-UID is where a real user collector of ours may run while
	 * the test does: look for it in a /tmp of the test's own instead.
	 */
	tt_tmp_dir = dir;

	expect_system("nothing running: the system collector");

	setenv("TALLY_TRACE_ENDPOINT", "tcp://127.0.0.1:5999", 1);
	expect_endpoint("tcp://127.0.0.1:5999", "TALLY_TRACE_ENDPOINT wins");
	unsetenv("TALLY_TRACE_ENDPOINT");

	setenv("XDG_RUNTIME_DIR", dir, 1);
	snprintf(p, sizeof(p), "%s/tally", dir);
	mkdir_p(p);
	expect_system("runtime dir without socket: system");
	snprintf(p, sizeof(p), "%s/tally/trace.sock", dir);
	make_socket(p);
	snprintf(want, sizeof(want), "ipc://%s", p);
	expect_endpoint(want, "user collector outside a job");

	setenv("SLURM_JOB_ID", "99", 1);
	expect_system("in job 99: another collector's socket unused");
	snprintf(p, sizeof(p), "%s/tally/job-98", dir);
	mkdir_p(p);
	snprintf(p, sizeof(p), "%s/tally/job-98/trace.sock", dir);
	make_socket(p);
	expect_system("job 98's collector unused by job 99");
	snprintf(p, sizeof(p), "%s/tally/job-99", dir);
	mkdir_p(p);
	snprintf(p, sizeof(p), "%s/tally/job-99/trace.sock", dir);
	/* a regular file is not a collector */
	fclose(fopen(p, "w"));
	expect_system("a regular file named trace.sock is ignored");
	unlink(p);
	make_socket(p);
	snprintf(want, sizeof(want), "ipc://%s", p);
	expect_endpoint(want, "the job's user collector");

	/* the directory names tallyd --user makes of odd and long ids */
	setenv("SLURM_JOB_ID", "../x", 1);
	snprintf(p, sizeof(p), "%s/tally/job-_._x", dir);
	mkdir_p(p);
	snprintf(p, sizeof(p), "%s/tally/job-_._x/trace.sock", dir);
	make_socket(p);
	snprintf(want, sizeof(want), "ipc://%s", p);
	expect_endpoint(want, "an id with '/': the directory tallyd makes");
	/* a short base: the 64-byte name must fit a socket path */
	if (!mkdtemp(shortdir))
		bail_out("mkdtemp: %s", strerror(errno));
	setenv("XDG_RUNTIME_DIR", shortdir, 1);
	memset(longid, '5', sizeof(longid) - 1);
	longid[sizeof(longid) - 1] = '\0';
	setenv("SLURM_JOB_ID", longid, 1);
	tally_jobid_path(longid, jobdir, sizeof(jobdir));
	snprintf(p, sizeof(p), "%s/tally/job-%s", shortdir, jobdir);
	mkdir_p(p);
	snprintf(p, sizeof(p), "%s/tally/job-%s/trace.sock", shortdir,
		 jobdir);
	make_socket(p);
	snprintf(want, sizeof(want), "ipc://%s", p);
	expect_endpoint(want, "a long id: the bounded directory name");
	unlink(p);
	snprintf(p, sizeof(p), "%s/tally/job-%s", shortdir, jobdir);
	rmdir(p);
	snprintf(p, sizeof(p), "%s/tally", shortdir);
	rmdir(p);
	rmdir(shortdir);
	setenv("XDG_RUNTIME_DIR", dir, 1);
	setenv("SLURM_JOB_ID", "99", 1);
	snprintf(p, sizeof(p), "%s/tally/job-99/trace.sock", dir);
	snprintf(want, sizeof(want), "ipc://%s", p);

	snprintf(p, sizeof(p), "%s/rt", dir);
	mkdir_p(p);
	snprintf(p, sizeof(p), "%s/rt/trace.sock", dir);
	make_socket(p);
	setenv("TALLY_RUNTIME_DIR", dir, 1);
	expect_endpoint(want, "TALLY_RUNTIME_DIR without socket: skipped");
	snprintf(p, sizeof(p), "%s/rt", dir);
	setenv("TALLY_RUNTIME_DIR", p, 1);
	snprintf(want, sizeof(want), "ipc://%s/rt/trace.sock", dir);
	expect_endpoint(want, "TALLY_RUNTIME_DIR's socket first");

	/* without XDG_RUNTIME_DIR: /tmp/tally-UID[/job-ID] */
	clear_env();
	snprintf(p, sizeof(p), "%s/tally-%u/job-99", dir, (unsigned)getuid());
	mkdir_p(p);
	expect_system("no XDG_RUNTIME_DIR, no socket in /tmp: system");
	for (int job = 0; job < 2; job++) {
		snprintf(p, sizeof(p), "%s/tally-%u%s/trace.sock", dir,
			 (unsigned)getuid(), job ? "/job-99" : "");
		make_socket(p);
		snprintf(want, sizeof(want), "ipc://%s", p);
		expect_endpoint(want, job ? "no XDG_RUNTIME_DIR, job 99: "
					    "/tmp/tally-UID/job-99"
					  : "no XDG_RUNTIME_DIR, no job: "
					    "/tmp/tally-UID");
		setenv("SLURM_JOB_ID", "99", 1);
		if (!job)
			expect_system("in job 99: not the socket outside it");
	}
	tt_tmp_dir = "/tmp";

	clear_env();
	snprintf(p, sizeof(p), "rm -rf '%s'", dir);
	if (system(p) != 0)
		diag("could not remove %s", dir);
}


/* The version-2 vectors, built with the encoder's item helpers. */
static void test_v2_vectors(void)
{
	struct tt_source s = {
		.pid = 4242,
		.tid = 4243,
		.rank = 3,
		.trace = "job42",
		.trace_len = 5,
		.host = "n01",
		.host_len = 3,
	};
	static const uint8_t peer[] = { 4, 1, 'p', 'e', 'e', 'r', '2' };
	uint8_t m[TALLY_WIRE_MAX_MSG2], ann[TT_ANNOUNCE_MAX];
	int64_t one = 1, bytes = 4096;
	double ratio = 0.5, depth = 3.5;
	uint8_t yes = 1;
	uint64_t bits;
	size_t n, x, an;

	tt_msg_init(m, &s);
	n = tt_msg_fill(m, &s, TALLY_WIRE_BEGIN, 0, 1722000000123456789LL, 1, 0,
			"solver", 6);
	x = tt_item_attr(m + n, TALLY_WIRE_ITEM_SOURCE, "local_rank", 10,
			 TALLY_WIRE_T_INT64, &one, 8);
	x += tt_item_attr(m + n + x, TALLY_WIRE_ITEM_SOURCE,
			  "rocr_visible_devices", 20, TALLY_WIRE_T_STRING,
			  "0,1", 3);
	check("v2-begin-source", m, tt_msg_v2(m, n, x));

	/* the announcement from the environment: the same two items */
	unsetenv("OMPI_COMM_WORLD_LOCAL_RANK");
	unsetenv("MPI_LOCALRANKID");
	unsetenv("PMI_LOCAL_RANK");
	unsetenv("SLURM_LOCALID");
	unsetenv("FLUX_TASK_LOCAL_ID");
	unsetenv("PALS_LOCAL_RANKID");
	unsetenv("HIP_VISIBLE_DEVICES");
	unsetenv("CUDA_VISIBLE_DEVICES");
	unsetenv("ROCR_VISIBLE_DEVICES");
	cmp_ok(tt_env_announce(ann), "==", 0, "nothing to announce");
	setenv("PALS_LOCAL_RANKID", "1", 1);
	setenv("ROCR_VISIBLE_DEVICES", "0,1", 1);
	an = tt_env_announce(ann);
	ok(an == x && !memcmp(ann, m + n, x),
	   "local rank and ROCR_VISIBLE_DEVICES announced as in the vector");
	unsetenv("PALS_LOCAL_RANKID");
	unsetenv("ROCR_VISIBLE_DEVICES");

	/* after a v2 message, a plain one is v1 again */
	n = tt_msg_fill(m, &s, TALLY_WIRE_END, 0, 1722000001000000000LL, 1, 0,
			"solver", 6);
	check("end-root", m, n);
	x = tt_item_attr(m + n, TALLY_WIRE_ITEM_ATTR, "bytes", 5,
			 TALLY_WIRE_T_INT64, &bytes, 8);
	x += tt_item_attr(m + n + x, TALLY_WIRE_ITEM_ATTR, "ratio", 5,
			  TALLY_WIRE_T_DOUBLE, &ratio, 8);
	x += tt_item_attr(m + n + x, TALLY_WIRE_ITEM_ATTR, "file", 4,
			  TALLY_WIRE_T_STRING, "ckpt.h5", 7);
	x += tt_item_attr(m + n + x, TALLY_WIRE_ITEM_ATTR, "ok", 2,
			  TALLY_WIRE_T_BOOL, &yes, 1);
	check("v2-end-attrs", m, tt_msg_v2(m, n, x));

	n = tt_msg_fill(m, &s, TALLY_WIRE_COUNTER, 0, 1722000001500000000LL, 0,
			0, "", 0);
	x = tt_item_counter(m + n, TALLY_WIRE_DELTA, "mpi_bytes", 9, 1, peer,
			    sizeof(peer), 1, 1048576);
	memcpy(&bits, &depth, 8);
	x += tt_item_counter(m + n + x, TALLY_WIRE_GAUGE, "queue_depth", 11, 0,
			     (const uint8_t *)"", 0, 0, bits);
	check("v2-counter", m, tt_msg_v2(m, n, x));
}

int main(void)
{
	plan(NO_PLAN);
	load_vectors(TOP_SRCDIR "/doc/wire-format.md");
	test_vectors();
	test_v2_vectors();
	test_max_message();
	test_utf8_clip();
	test_utf8_fix();
	test_rank();
	test_trace_id();
	test_discovery();
	return done_testing();
}
