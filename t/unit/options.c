/* SPDX-License-Identifier: MIT */
/* t/unit/options.c - option tables applied from libconfig settings */
#include <errno.h>
#include <math.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <libconfig.h>
#include <regex.h>

#include "../../core/core-internal.h"
#include "tap.h"

struct opts {
	char *root;
	int64_t count;
	double ratio;
	bool flag;
	struct tally_strlist devs;
	int mode;
	struct tally_regexlist match;
	struct tally_numbers buckets;
	struct tally_numbers pct;
	uint64_t size;
	double timeout;
	int64_t big;
};

static const char *const modes[] = { "innermost", "outermost", NULL };

static const struct tally_option table[] = {
	TALLY_OPT_STRING("root", struct opts, root, "/proc", "root dir"),
	TALLY_OPT_INT("count", struct opts, count, "3", 1, 10, "count"),
	TALLY_OPT_DOUBLE("ratio", struct opts, ratio, "0.5", 0, 1, "ratio"),
	TALLY_OPT_BOOL("flag", struct opts, flag, "true", "flag"),
	TALLY_OPT_LIST("devs", struct opts, devs, "eth0,ib0", "devices"),
	TALLY_OPT_ENUM("mode", struct opts, mode, "outermost", modes, "mode"),
	TALLY_OPT_REGEXLIST("match", struct opts, match, "^lo$", "devices"),
	TALLY_OPT_NUMBERS_INCREASING("buckets", struct opts, buckets,
				     "0.1,1,10", 0, 1e12, "bucket bounds"),
	TALLY_OPT_NUMBERS("pct", struct opts, pct, "50,99.9", 0, 100,
			  "percentiles"),
	TALLY_OPT_SIZE("size", struct opts, size, "64MiB", 1, 1099511627776.0,
		       "bytes"),
	TALLY_OPT_DURATION("timeout", struct opts, timeout, "30s", 0.001,
			   86400, "seconds"),
	TALLY_OPT_INT("big", struct opts, big, "0", 1, 0, "any integer"),
	TALLY_OPT_END,
};

/* Apply the setting @key of @text to @o; returns tally_options_set(). */
static int apply(struct opts *o, const char *text, const char *key)
{
	config_t cfg;
	int r;

	config_init(&cfg);
	if (config_read_string(&cfg, text) != CONFIG_TRUE) {
		config_destroy(&cfg);
		return -2;
	}
	r = tally_options_set(tally_options_find(table, key), o,
			      config_lookup(&cfg, key), "test.conf", 1,
			      "inputs.t");
	config_destroy(&cfg);
	return r;
}

/*
 * Apply @text (one setting) as tallyd does, with its source text: what
 * tally_options_apply() returns; its message (without the newline) in
 * @msg, "" when none.
 */
static int apply_text(struct opts *o, const char *text, char *msg,
		      size_t size)
{
	struct tally_conf_text t;
	struct tally_opt_src src = { "test.conf", 1, "inputs.t", NULL };
	config_t cfg;
	FILE *tmp = tmpfile();
	int saved = dup(2), r = -2;
	size_t n;

	config_init(&cfg);
	if (tally_conf_text_parse(&t, "test.conf", text, strlen(text)) < 0)
		goto out;
	src.text = &t;
	if (config_read_string(&cfg, t.text) == CONFIG_TRUE) {
		config_setting_t *s = config_setting_get_elem(
			config_root_setting(&cfg), 0);

		fflush(stderr);
		dup2(fileno(tmp), 2);
		r = tally_options_apply(
			tally_options_find(table, config_setting_name(s)), o, s,
			&src);
		fflush(stderr);
		dup2(saved, 2);
	}
	tally_conf_text_free(&t);
out:
	config_destroy(&cfg);
	close(saved);
	rewind(tmp);
	n = fread(msg, 1, size - 1, tmp);
	msg[n] = '\0';
	if (n && msg[n - 1] == '\n')
		msg[n - 1] = '\0';
	fclose(tmp);
	return r;
}

#define E "test.conf:1: error: inputs.t: option "

/* Values the configuration gives and what each option makes of them. */
static void test_typed(void)
{
	static const struct {
		const char *text;
		const char *msg;	/* NULL: accepted */
		double v[4];	/* numbers; [0]: size, timeout, big */
		size_t n;
	} cases[] = {
#define BAD(text, msg) { text, msg, { 0 }, 0 }
#define ONE(text, v) { text, NULL, { v }, 1 }
		/* lists of numbers: arrays, lists, one number */
		{ "buckets = [0.5, 1.0, 2.5];", NULL, { 0.5, 1, 2.5 }, 3 },
		{ "buckets = (0.5, 1, 10);", NULL, { 0.5, 1, 10 }, 3 },
		{ "buckets = 5;", NULL, { 5 }, 1 },
		{ "buckets = [];", NULL, { 0 }, 0 },
		{ "buckets = [1, 4294967296];", NULL, { 1, 4294967296.0 }, 2 },
		BAD("buckets = [1.0, 0.5];",
		    E "'buckets' element 2 = 0.5 is not above element 1 = 1.0 "
		      "(the values must increase)"),
		BAD("buckets = [1, 1];",
		    E "'buckets' element 2 = 1 is not above element 1 = 1 (the "
		      "values must increase)"),
		BAD("pct = [50, 150];",
		    E "'pct' element 2 = 150 is out of range [0, 100]"),
		BAD("pct = [50, 99999999999999999999];",
		    E "'pct' element 2 = 99999999999999999999 is out of range "
		      "[0, 100]"),
		BAD("pct = (50, 4294967346);",
		    E "'pct' element 2 = 4294967346 is out of range [0, 100]"),
		BAD("pct = [1e400];",
		    E "'pct' element 1 = 1e400 is out of range [0, 100]"),
		BAD("pct = [\"50\"];",
		    E "'pct' must be a number or a list of numbers"),
		BAD("pct = \"50\";",
		    E "'pct' must be a number or a list of numbers"),
		BAD("pct = { a = 1; };",
		    E "'pct' must be a number or a list of numbers"),
		/* sizes */
		ONE("size = \"64MiB\";", 67108864),
		ONE("size = \"1k\";", 1024),
		ONE("size = \"1.5K\";", 1536),
		ONE("size = \" 2 GB \";", 2e9),
		ONE("size = 4096;", 4096),
		ONE("size = 4294967296;", 4294967296.0),
		ONE("size = 1.5e3;", 1500),
		BAD("size = \"2TiB\";",
		    E "'size' = \"2TiB\" is out of range [1, 1TiB]"),
		BAD("size = 0;", E "'size' = 0 is out of range [1, 1TiB]"),
		BAD("size = -5;", E "'size' = -5 is out of range [1, 1TiB]"),
		BAD("size = \"99999999999999999999\";",
		    E "'size' = \"99999999999999999999\" is out of range [1, "
		      "1TiB]"),
		BAD("size = \"64 mb\";",
		    E "'size' = \"64 mb\" is not a size: give bytes, or a number "
		    "and a unit: K, M, G, T, P or KiB, MiB, GiB, TiB, PiB "
		      "(powers of 1024); kB, MB, GB, TB, PB (powers of 1000)"),
		BAD("size = true;",
		    E "'size' must be a size: bytes, or a string such as "
		      "\"64MiB\""),
		/* durations */
		ONE("timeout = \"250ms\";", 0.25),
		ONE("timeout = \"5m\";", 300),
		ONE("timeout = \"1h30m\";", 5400),
		ONE("timeout = 30;", 30),
		ONE("timeout = 0.5;", 0.5),
		BAD("timeout = \"2d\";",
		    E "'timeout' = \"2d\" is out of range [1ms, 1d]"),
		BAD("timeout = 0;",
		    E "'timeout' = 0 is out of range [1ms, 1d]"),
		BAD("timeout = \"5 minutes\";",
		    E "'timeout' = \"5 minutes\" is not a duration: give "
		    "seconds, or numbers with units d, h, m, s, ms, us, ns "
		      "(\"250ms\", \"1h30m\")"),
		BAD("timeout = \"-1s\";",
		    E "'timeout' = \"-1s\" is not a duration: give seconds, or "
		    "numbers with units d, h, m, s, ms, us, ns (\"250ms\", "
		      "\"1h30m\")"),
		BAD("timeout = [1];",
		    E "'timeout' must be a duration: seconds, or a string such "
		      "as \"30s\""),
		/* integers as written, not as libconfig 1.5 keeps them */
		ONE("big = 9223372036854775807;", 9223372036854775807.0),
		{ "big = -9223372036854775808;", NULL,
		  { -9223372036854775808.0 }, 0 },
		ONE("big = 0xffffffff;", 4294967295.0),
		ONE("big = 5000000000L;", 5000000000.0),
		BAD("big = 99999999999999999999;",
		    E "'big' = 99999999999999999999 is out of range "
		      "[-9223372036854775808, 9223372036854775807]"),
		BAD("count = 4294967297;",
		    E "'count' = 4294967297 is out of range [1, 10]"),
		BAD("count = 0x10;",
		    E "'count' = 0x10 is out of range [1, 10]"),
		BAD("ratio = 4294967296;",
		    E "'ratio' = 4294967296 is out of range [0, 1]"),
		BAD("ratio = 1.5;", E "'ratio' = 1.5 is out of range [0, 1]"),
		{ NULL },
	};
	struct opts o = { 0 };
	char msg[512];

	tally_options_defaults(table, &o, "t");
	ok(o.buckets.n == 3 && o.buckets.v[2] == 10, "numbers default");
	ok(o.pct.n == 2 && o.pct.v[1] == 99.9, "numbers default, decimals");
	cmp_ok(o.size, "==", 67108864, "size default 64MiB");
	cmp_ok(o.timeout, "==", 30, "duration default 30s");
	for (int i = 0; cases[i].text; i++) {
		int r = apply_text(&o, cases[i].text, msg, sizeof(msg));
		const char *key = cases[i].text;

		if (cases[i].msg) {
			ok(r < 0, "refused: %s", cases[i].text);
			is(msg, cases[i].msg, "message");
			continue;
		}
		if (!ok(r == 0 && !*msg, "accepted: %s", cases[i].text))
			diag("returned %d: %s", r, msg);
		if (!strncmp(key, "buckets", 7)) {
			cmp_ok(o.buckets.n, "==", cases[i].n, "count");
			for (size_t k = 0; k < cases[i].n && k < o.buckets.n;
			     k++)
				cmp_ok(o.buckets.v[k], "==", cases[i].v[k],
				       "value %zu", k);
		} else if (!strncmp(key, "size", 4)) {
			cmp_ok((double)o.size, "==", cases[i].v[0], "bytes");
		} else if (!strncmp(key, "timeout", 7)) {
			cmp_ok(o.timeout, "==", cases[i].v[0], "seconds");
		} else if (!strncmp(key, "big", 3)) {
			cmp_ok((double)o.big, "==", cases[i].v[0], "value");
		}
	}
	ok(apply_text(&o, "big = -9223372036854775808;", msg, sizeof(msg)) ==
			   0 &&
		   o.big == INT64_MIN,
	   "INT64_MIN exactly");
	ok(apply_text(&o, "big = 9223372036854775807;", msg, sizeof(msg)) ==
			   0 &&
		   o.big == INT64_MAX,
	   "INT64_MAX exactly");
	tally_options_free(table, &o);
	ok(o.buckets.n == 0 && o.buckets.v == NULL, "free clears numbers");
}

/* The size and duration grammars of tally/config.h, on their own. */
static void test_grammars(void)
{
	static const struct {
		const char *s;
		int err;	/* 0, EINVAL or ERANGE */
		uint64_t bytes;
	} sizes[] = {
		{ "0", 0, 0 },		{ "512", 0, 512 },
		{ "512B", 0, 512 },	{ "1k", 0, 1024 },
		{ "1K", 0, 1024 },	{ "1KiB", 0, 1024 },
		{ "1kB", 0, 1000 },	{ "1KB", 0, 1000 },
		{ "64MiB", 0, 64ull << 20 },
		{ "64M", 0, 64ull << 20 },
		{ "64MB", 0, 64000000 },
		{ "2G", 0, 2ull << 30 }, { "2GB", 0, 2000000000 },
		{ "3T", 0, 3ull << 40 }, { "3TB", 0, 3000000000000ull },
		{ "1P", 0, 1ull << 50 }, { "1PB", 0, 1000000000000000ull },
		{ "1.5K", 0, 1536 },	{ "0.1K", 0, 102 },
		{ ".5K", 0, 512 },	{ "2.", 0, 2 },
		{ " 4 KiB ", 0, 4096 },
		{ "18446744073709551615", 0, UINT64_MAX },
		{ "18446744073709551616", ERANGE, 0 },
		{ "16384P", ERANGE, 0 },	{ "15.999P", 0, 18013272609575141ull },
		{ "", EINVAL, 0 },		{ "K", EINVAL, 0 },
		{ "-1K", EINVAL, 0 },	{ "+1K", EINVAL, 0 },
		{ "1e3", EINVAL, 0 },	{ "1 K B", EINVAL, 0 },
		{ "1Kb", EINVAL, 0 },	{ "1kib", EINVAL, 0 },
		{ "1m", EINVAL, 0 },	{ "1.2.3", EINVAL, 0 },
		{ "0x10", EINVAL, 0 },	{ ".", EINVAL, 0 },
		{ NULL },
	};
	static const struct {
		const char *s;
		int err;
		double seconds;
	} durations[] = {
		{ "30s", 0, 30 },	{ "5m", 0, 300 },
		{ "250ms", 0, 0.25 },	{ "1h", 0, 3600 },
		{ "2d", 0, 172800 },	{ "100us", 0, 1e-4 },
		{ "5ns", 0, 5e-9 },	{ "1h30m", 0, 5400 },
		{ "1m 30s", 0, 90 },	{ "1.5h", 0, 5400 },
		{ "30", 0, 30 },	{ " 0.25 ", 0, 0.25 },
		{ "0s", 0, 0 },		{ "1h1h", 0, 7200 },
		{ "", EINVAL, 0 },		{ "s", EINVAL, 0 },
		{ "-5s", EINVAL, 0 },	{ "5 minutes", EINVAL, 0 },
		{ "5sec", EINVAL, 0 },	{ "1h30", EINVAL, 0 },
		{ "1e3s", EINVAL, 0 },	{ "5S", EINVAL, 0 },
		{ "5M", EINVAL, 0 },	{ "1 h 2", EINVAL, 0 },
		{ NULL },
	};

	for (int i = 0; sizes[i].s; i++) {
		uint64_t b = 12345;
		int r;

		errno = 0;
		r = tally_parse_size(sizes[i].s, &b);
		if (sizes[i].err) {
			ok(r < 0 && errno == sizes[i].err && b == 12345,
			   "size \"%s\" refused (%s)", sizes[i].s,
			   sizes[i].err == ERANGE ? "ERANGE" : "EINVAL");
		} else {
			ok(r == 0, "size \"%s\" parses", sizes[i].s);
			cmp_ok(b, "==", sizes[i].bytes, "  = %llu bytes",
			       (unsigned long long)sizes[i].bytes);
		}
	}
	for (int i = 0; durations[i].s; i++) {
		double d = -1;
		int r;

		errno = 0;
		r = tally_parse_duration(durations[i].s, &d);
		if (durations[i].err) {
			ok(r < 0 && errno == durations[i].err && d == -1,
			   "duration \"%s\" refused", durations[i].s);
		} else {
			ok(r == 0, "duration \"%s\" parses", durations[i].s);
			ok(fabs(d - durations[i].seconds) <=
				   1e-12 * durations[i].seconds,
			   "  = %g s", durations[i].seconds);
		}
	}
}

/* --describe's lines for the typed options. */
static void test_describe(void)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	tally_options_describe(table, f);
	fclose(f);
	ok(strstr(buf, "  buckets                  list of numbers              "
		       "bucket bounds (default: 0.1,1,10) (range 0..1000000000000) "
		       "(increasing)\n") != NULL,
	   "describe: numbers, increasing");
	ok(strstr(buf, "  size                     size                         "
		       "bytes (default: 64MiB) (range 1..1TiB)\n") != NULL,
	   "describe: size range in units");
	ok(strstr(buf, "  timeout                  duration                     "
		       "seconds (default: 30s) (range 1ms..1d)\n") != NULL,
	   "describe: duration range in units");
	if (!ok(strstr(buf, "  count                    integer                      "
			    "count (default: 3) (range 1..10)\n") != NULL,
		"describe: integer"))
		diag("%s", buf);
	free(buf);
}

/* Whether @re (tally_regcomp()) matches @s; -1 if it does not compile. */
static int rx_match(const char *re, const char *s)
{
	regex_t r;
	int m;

	if (tally_regcomp(&r, re, REG_NOSUB, NULL, 0) < 0)
		return -1;
	m = regexec(&r, s, 0, NULL, 0) == 0;
	regfree(&r);
	return m;
}

/* Whether @re is refused, with a message holding @why. */
static bool rx_refused(const char *re, const char *why)
{
	char err[256];
	regex_t r;

	errno = 0;
	if (tally_regcomp(&r, re, REG_NOSUB, err, sizeof(err)) == 0) {
		regfree(&r);
		return false;
	}
	if (errno != EINVAL || !strstr(err, why)) {
		diag("%s: errno %d, \"%s\"", re, errno, err);
		return false;
	}
	return true;
}

/*
 * node_exporter's (Go RE2) expressions: the Perl classes POSIX ERE lacks
 * are translated, what cannot be is refused with the reason.
 */
static void test_regcomp(void)
{
	/* node_exporter 1.5's --collector.diskstats.device-exclude */
	static const char disk[] =
		"^(ram|loop|fd|(h|s|v|xv)d[a-z]|nvme\\d+n\\d+p)\\d+$";
	/* --collector.filesystem.mount-points-exclude (1.5.0, Debian) */
	static const char mnt[] = "^/(dev|proc|run|sys|mnt|media|"
				  "var/lib/docker/.+|"
				  "var/lib/containers/storage/.+)($|/)";
	/* --collector.systemd.unit-exclude */
	static const char unit[] =
		".+\\.(automount|device|mount|scope|slice|target)";
	regex_t plain;

	/* what regcomp alone does with \d: a plain d, the bug */
	ok(regcomp(&plain, disk, REG_EXTENDED | REG_NOSUB) == 0 &&
		   regexec(&plain, "sda1", 0, NULL, 0) != 0,
	   "POSIX regcomp alone: the diskstats default misses sda1");
	regfree(&plain);
	ok(rx_match(disk, "sda1") == 1 && rx_match(disk, "nvme0n1p1") == 1 &&
		   rx_match(disk, "ram0") == 1 && rx_match(disk, "loop12") == 1 &&
		   rx_match(disk, "xvda3") == 1,
	   "diskstats device-exclude: partitions, ram, loop excluded");
	ok(rx_match(disk, "sda") == 0 && rx_match(disk, "nvme0n1") == 0 &&
		   rx_match(disk, "dm-0") == 0 && rx_match(disk, "md127") == 0 &&
		   rx_match(disk, "sdd") == 0,
	   "diskstats device-exclude: whole disks kept (sdd: no d class)");
	ok(rx_match(mnt, "/proc/sys/fs") == 1 && rx_match(mnt, "/run") == 1 &&
		   rx_match(mnt, "/var/lib/docker/overlay2/x") == 1 &&
		   rx_match(mnt, "/") == 0 && rx_match(mnt, "/home") == 0 &&
		   rx_match(mnt, "/var/lib/docker") == 0,
	   "filesystem mount-points-exclude");
	ok(rx_match(unit, "tmp.mount") == 1 && rx_match(unit, "tmpmount") == 0 &&
		   rx_match(unit, "ssh.service") == 0,
	   "systemd unit-exclude: \\. stays a literal dot");
	ok(rx_match("^lo$", "lo") == 1 && rx_match("^lo$", "lo0") == 0,
	   "netdev device-exclude ^lo$");

	ok(rx_match("^\\s*\\w+\\s*$", " eth_0 ") == 1 &&
		   rx_match("^\\s*\\w+\\s*$", "eth-0") == 0,
	   "\\s and \\w outside brackets");
	ok(rx_match("^\\D\\S\\W$", "1b-") == 0 &&
		   rx_match("^\\D\\S\\W$", "a b") == 0 &&
		   rx_match("^\\D\\S\\W$", "a1_") == 0 &&
		   rx_match("^\\D\\S\\W$", "a1-") == 1 &&
		   rx_match("^\\D+$", "a1") == 0,
	   "\\D \\S \\W: the negations");
	ok(rx_match("^[\\d.]+$", "10.0.0.1") == 1 &&
		   rx_match("^[\\d.]+$", "10.0.0.a") == 0 &&
		   rx_match("^[^\\d]+$", "abc") == 1 &&
		   rx_match("^[^\\d]+$", "a1") == 0,
	   "\\d inside brackets, and negated brackets");
	ok(rx_match("^[\\w-]+$", "eth-0_a") == 1 &&
		   rx_match("^[\\w-]+$", "eth 0") == 0 &&
		   rx_match("^[\\s]$", "\t") == 1,
	   "\\w and \\s inside brackets");
	ok(rx_match("^[\\]\\-\\^\\\\]+$", "]-^\\") == 1 &&
		   rx_match("^[\\]\\-\\^\\\\]+$", "a") == 0 &&
		   rx_match("^[a\\.]$", "\\") == 0 && rx_match("^[a\\.]$", ".") == 1,
	   "escaped ] - ^ \\ . inside brackets are those characters");
	ok(rx_match("^[[:digit:]x]+$", "12x") == 1 &&
		   rx_match("^[]a]$", "]") == 1,
	   "POSIX classes and a leading ] inside brackets kept");
	ok(rx_match("^a\\\\d$", "a\\d") == 1 && rx_match("^a\\\\d$", "a\\1") == 0,
	   "\\\\ stays an escaped backslash: \\\\d is a backslash and a d");
	ok(rx_match("^a{2}$", "aa") == 1 && rx_match("^a\\tb$", "a\tb") == 1,
	   "repetitions and \\t");
	ok(rx_refused("(?i)sda", "(?"), "(?i) refused");
	ok(rx_refused("^(?:sd|hd)a$", "(?"), "(?:...) refused");
	ok(rx_refused("a.*?b", "lazy"), "*? refused");
	ok(rx_refused("a+?", "lazy") && rx_refused("a??", "lazy") &&
		   rx_refused("a{1,3}?", "lazy"),
	   "+? ?? {n,m}? refused");
	ok(rx_refused("[\\D]", "inside brackets"), "\\D inside brackets refused");
	ok(rx_refused("\\pL", "not POSIX") && rx_refused("\\Aa\\z", "not POSIX"),
	   "\\p, \\A, \\z refused");
	ok(rx_refused("(", "Unmatched ("), "invalid expressions: regerror's text");
}

int main(void)
{
	static const struct {
		const char *a, *b;
		unsigned d;
	} dist[] = {
		{ "interval", "interval", 0 }, { "intervl", "interval", 1 },
		{ "rooot", "root", 1 },	       { "exlude", "exclude", 1 },
		{ "listen", "lisetn", 2 },     { "", "abc", 3 },
		{ NULL, NULL, 0 },
	};
	struct opts o = { 0 };

	plan(NO_PLAN);

	for (int i = 0; dist[i].a; i++)
		cmp_ok(tally_edit_distance(dist[i].a, dist[i].b), "==",
		       dist[i].d, "distance %s -> %s", dist[i].a, dist[i].b);

	ok(tally_options_defaults(table, &o, "t") == 0, "defaults apply");
	is(o.root, "/proc", "string default");
	cmp_ok(o.count, "==", 3, "int default");
	cmp_ok(o.ratio, "==", 0.5, "double default");
	ok(o.flag, "bool default");
	cmp_ok(o.devs.n, "==", 2, "list default has two entries");
	is(o.devs.v[1], "ib0", "list default second entry");
	cmp_ok(o.mode, "==", 1, "enum default index");

	ok(apply(&o, "root = \"/host/proc\";", "root") == 0, "set a string");
	is(o.root, "/host/proc", "string replaced");
	ok(apply(&o, "count = 7;", "count") == 0, "set an int");
	cmp_ok(o.count, "==", 7, "int value");
	errno = 0;
	ok(apply(&o, "count = 11;", "count") < 0 && errno == ERANGE,
	   "int above max refused with ERANGE");
	cmp_ok(o.count, "==", 7, "refused value leaves the field alone");
	ok(apply(&o, "count = \"7\";", "count") < 0 && errno == EINVAL,
	   "string for an int refused with EINVAL");
	ok(apply(&o, "ratio = 1;", "ratio") == 0, "an integer for a double");
	cmp_ok(o.ratio, "==", 1.0, "double from integer");
	ok(apply(&o, "ratio = 1.5;", "ratio") < 0, "double above max refused");
	ok(apply(&o, "flag = false;", "flag") == 0 && !o.flag, "set a bool");
	ok(apply(&o, "flag = 1;", "flag") < 0, "an int for a bool refused");
	ok(apply(&o, "devs = \"lo\";", "devs") == 0, "a string as a list");
	ok(o.devs.n == 1 && !strcmp(o.devs.v[0], "lo"), "one-element list");
	ok(apply(&o, "devs = [\"a\", \"b\", \"c\"];", "devs") == 0,
	   "an array of strings");
	cmp_ok(o.devs.n, "==", 3, "three elements");
	ok(tally_strlist_contains(&o.devs, "b"), "list contains b");
	ok(!tally_strlist_contains(&o.devs, "d"), "list lacks d");
	ok(apply(&o, "devs = [1, 2];", "devs") < 0, "a list of ints refused");
	cmp_ok(o.devs.n, "==", 3, "refused list leaves the old one");
	ok(apply(&o, "mode = \"innermost\";", "mode") == 0 && o.mode == 0,
	   "enum by name");
	ok(apply(&o, "mode = \"middle\";", "mode") < 0 && errno == EINVAL,
	   "unknown enum choice refused");

	ok(tally_regexlist_match(&o.match, "lo") &&
		   !tally_regexlist_match(&o.match, "lo0"),
	   "regex list default compiled and anchored");
	ok(apply(&o, "match = [\"^eth[0-9]+$\", \"^ib\"];", "match") == 0,
	   "set a regex list");
	ok(tally_regexlist_match(&o.match, "eth12") &&
		   tally_regexlist_match(&o.match, "ib0") &&
		   !tally_regexlist_match(&o.match, "lo"),
	   "the new list replaced the default");
	errno = 0;
	ok(apply(&o, "match = [\"ok\", \"(unclosed\"];", "match") < 0 &&
		   errno == EINVAL,
	   "a bad regular expression is a configuration error");
	ok(tally_regexlist_match(&o.match, "eth12") && o.match.n == 2,
	   "a refused list leaves the old one");

	tally_options_free(table, &o);
	ok(o.root == NULL && o.devs.n == 0 && o.match.n == 0,
	   "free clears strings and lists");

	tally_log_setup(TALLY_LOG_STDERR, LOG_INFO);
	test_typed();
	test_grammars();
	test_describe();
	test_regcomp();
	return done_testing();
}
