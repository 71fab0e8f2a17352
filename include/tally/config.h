/* SPDX-License-Identifier: MIT */
/*
 * tally/config.h - option tables: how a plugin declares its configuration
 *
 * A plugin never reads the configuration file itself. It declares each
 * option once, in a NULL-terminated table of struct tally_option; the core
 * then, for every instance in the configuration:
 *   - rejects unknown keys (suggesting the nearest valid one), wrong types,
 *     out-of-range values and missing required options, each with file:line;
 *   - applies the default of every option not given;
 *   - stores each value at its offset in the instance's state struct, whose
 *     size the plugin descriptor carries (tally/plugin.h);
 *   - prints the table as documentation (tallyd --describe NAME).
 *
 * Field types by option type:
 *   TALLY_OPT_T_STRING  char *             (core-owned, freed after fini)
 *   TALLY_OPT_T_INT     int64_t
 *   TALLY_OPT_T_DOUBLE  double             (an integer is accepted too)
 *   TALLY_OPT_T_BOOL    bool
 *   TALLY_OPT_T_LIST    struct tally_strlist (a single string is accepted
 *                       as a one-element list)
 *   TALLY_OPT_T_ENUM    int                (index into @choices)
 *   TALLY_OPT_T_REGEXLIST struct tally_regexlist (POSIX extended regular
 *                       expressions, compiled by the core: a bad one is a
 *                       configuration error with file:line)
 *   TALLY_OPT_T_LABELS  struct tally_labels * (a group of string values,
 *                       labels = { cluster = "frontier"; }: keys valid
 *                       Prometheus label names, values UTF-8; interned,
 *                       core-owned; NULL when not set)
 *   TALLY_OPT_T_NUMBERS struct tally_numbers (histogram buckets,
 *                       percentiles: a list of numbers, integers or not;
 *                       a single number is a one-element list)
 *   TALLY_OPT_T_SIZE    uint64_t, bytes (see "Sizes" below)
 *   TALLY_OPT_T_DURATION double, seconds (see "Durations" below)
 *
 * Integers are read as written, up to 64 bits, with or without libconfig's
 * L suffix; hexadecimal ones (0x1F) are unsigned. A value beyond 64 bits
 * or outside the option's range is an error quoting what was written.
 *
 * Sizes: a non-negative integer or number is bytes (a fraction of a byte
 * is dropped). A string is a decimal number (digits, optionally a point
 * and decimals; no sign, no exponent), optional blanks, and an optional
 * unit, case as written here:
 *   B                       1
 *   K or k, M, G, T, P      powers of 1024 (as KiB, MiB, GiB, TiB, PiB)
 *   KiB, MiB, GiB, TiB, PiB powers of 1024
 *   kB or KB, MB, GB, TB, PB powers of 1000
 * "64MiB" is 67108864 bytes, "1k" 1024, "1.5K" 1536, "2GB" 2000000000;
 * the result is rounded down to a whole byte and must fit in 64 bits.
 * @min and @max are bytes.
 *
 * Durations: a non-negative integer or number is seconds. A string is one
 * or more decimal numbers (as for sizes), each followed by a unit, blanks
 * allowed between them: d (86400 s), h (3600 s), m (60 s), s, ms, us, ns.
 * "30s", "5m", "250ms", "1h30m", "1.5h" are durations; a string holding a
 * number alone ("30") is seconds too. @min and @max are seconds.
 *
 * Values are filled before the plugin's init() runs and stay valid until
 * after its fini() returns. Tables are read-only and thread-safe.
 */
#ifndef TALLY_CONFIG_H
#define TALLY_CONFIG_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <regex.h>

#ifdef __cplusplus
extern "C" {
#endif

/** enum tally_opt_type - the type of an option's value */
enum tally_opt_type {
	TALLY_OPT_T_END = 0,
	TALLY_OPT_T_STRING,
	TALLY_OPT_T_INT,
	TALLY_OPT_T_DOUBLE,
	TALLY_OPT_T_BOOL,
	TALLY_OPT_T_LIST,
	TALLY_OPT_T_ENUM,
	TALLY_OPT_T_REGEXLIST,
	TALLY_OPT_T_LABELS,
	TALLY_OPT_T_NUMBERS,
	TALLY_OPT_T_SIZE,
	TALLY_OPT_T_DURATION,
};

/* struct tally_option.flags */
#define TALLY_OPT_REQUIRED	0x1u /* no default: the config must set it */
/*
 * The value (a string or a list) holds addresses this instance binds:
 * TALLY_OPT_BINDS in `listen` syntax ("host:port", "[ipv6]:port",
 * "*:port", "unix:/path"; UDP when the table's enum option "protocol"
 * chooses "udp"), TALLY_OPT_BINDS_ZMQ a ZeroMQ endpoint ("ipc:///path",
 * "tcp://host:port"). tallyd --check-config refuses two instances that
 * would bind the same address (tally_net_addr_clash() in tally/net.h),
 * naming both file:line places; the plugin still checks the syntax.
 */
#define TALLY_OPT_BINDS		0x2u
#define TALLY_OPT_BINDS_ZMQ	0x4u
#define TALLY_OPT_INCREASING	0x8u /* NUMBERS: each above the last */

/**
 * struct tally_strlist - a list of strings option value
 * @n: number of strings
 * @v: @n NUL-terminated strings (core-owned)
 */
struct tally_strlist {
	size_t n;
	char **v;
};

/**
 * struct tally_regexlist - a list of compiled regular expressions
 * @n:   number of expressions
 * @src: their source text (core-owned)
 * @re:  compiled with tally_regcomp(REG_NOSUB): node_exporter's and
 *       Prometheus' \d, \s, \w are understood (core-owned)
 */
struct tally_regexlist {
	size_t n;
	char **src;
	regex_t *re;
};

/**
 * struct tally_numbers - a list of numbers option value
 * @n: number of values
 * @v: @n finite values, in the order written (core-owned)
 */
struct tally_numbers {
	size_t n;
	double *v;
};

/**
 * struct tally_option - one entry of a plugin's option table
 * @name:    key in the configuration (lower_snake_case, see the option
 *           naming conventions in the design brief)
 * @type:    enum tally_opt_type; TALLY_OPT_T_END terminates the table
 * @offset:  offsetof() the field in the plugin's state struct
 * @def:     default value written as it would appear in the config
 *           ("/proc", "10", "1.5", "true", "eth0,ib0" for lists, a choice
 *           name for enums, "0.1,0.5,1" for numbers, "64MiB" for sizes,
 *           "30s" for durations), or NULL for no default (field left zero)
 * @min:     inclusive minimum for INT/DOUBLE, each value of NUMBERS, SIZE
 *           (bytes) and DURATION (seconds); ignored when min > max
 * @max:     inclusive maximum, likewise
 * @choices: NULL-terminated choice names for ENUM
 * @flags:   TALLY_OPT_* flags
 * @doc:     one-line description, printed by tallyd --describe
 */
struct tally_option {
	const char *name;
	enum tally_opt_type type;
	size_t offset;
	const char *def;
	double min;
	double max;
	const char *const *choices;
	unsigned flags;
	const char *doc;
};

/* Table builders: one line per option, fields named, see STYLE.md. */
#define TALLY_OPT_STRING(key, st, field, dflt, help)                        \
	{ .name = (key), .type = TALLY_OPT_T_STRING,                          \
	  .offset = offsetof(st, field), .def = (dflt), .min = 1, .max = 0, \
	  .doc = (help) }
#define TALLY_OPT_INT(key, st, field, dflt, lo, hi, help)                   \
	{ .name = (key), .type = TALLY_OPT_T_INT,                             \
	  .offset = offsetof(st, field), .def = (dflt), .min = (lo),        \
	  .max = (hi), .doc = (help) }
#define TALLY_OPT_DOUBLE(key, st, field, dflt, lo, hi, help)                \
	{ .name = (key), .type = TALLY_OPT_T_DOUBLE,                          \
	  .offset = offsetof(st, field), .def = (dflt), .min = (lo),        \
	  .max = (hi), .doc = (help) }
#define TALLY_OPT_BOOL(key, st, field, dflt, help)                          \
	{ .name = (key), .type = TALLY_OPT_T_BOOL,                            \
	  .offset = offsetof(st, field), .def = (dflt), .min = 1, .max = 0, \
	  .doc = (help) }
#define TALLY_OPT_LIST(key, st, field, dflt, help)                          \
	{ .name = (key), .type = TALLY_OPT_T_LIST,                            \
	  .offset = offsetof(st, field), .def = (dflt), .min = 1, .max = 0, \
	  .doc = (help) }
#define TALLY_OPT_ENUM(key, st, field, dflt, names, help)                   \
	{ .name = (key), .type = TALLY_OPT_T_ENUM,                            \
	  .offset = offsetof(st, field), .def = (dflt), .min = 1, .max = 0, \
	  .choices = (names), .doc = (help) }
#define TALLY_OPT_REGEXLIST(key, st, field, dflt, help)                       \
	{ .name = (key), .type = TALLY_OPT_T_REGEXLIST,                       \
	  .offset = offsetof(st, field), .def = (dflt), .min = 1, .max = 0,   \
	  .doc = (help) }
/* A group of static labels; no default (NULL: none). */
#define TALLY_OPT_LABELS(key, st, field, help)                     \
	{                                                          \
		.name = (key), .type = TALLY_OPT_T_LABELS,         \
		.offset = offsetof(st, field), .min = 1, .max = 0, \
		.doc = (help)                                      \
	}
/* Numbers: @lo and @hi bound each value. */
#define TALLY_OPT_NUMBERS(key, st, field, dflt, lo, hi, help)               \
	{ .name = (key), .type = TALLY_OPT_T_NUMBERS,                         \
	  .offset = offsetof(st, field), .def = (dflt), .min = (lo),        \
	  .max = (hi), .doc = (help) }
/* Numbers each above the one before (histogram bucket bounds). */
#define TALLY_OPT_NUMBERS_INCREASING(key, st, field, dflt, lo, hi, help)    \
	{ .name = (key), .type = TALLY_OPT_T_NUMBERS,                         \
	  .offset = offsetof(st, field), .def = (dflt), .min = (lo),        \
	  .max = (hi), .flags = TALLY_OPT_INCREASING, .doc = (help) }
/* A size in bytes: @lo and @hi are bytes. */
#define TALLY_OPT_SIZE(key, st, field, dflt, lo, hi, help)                  \
	{ .name = (key), .type = TALLY_OPT_T_SIZE,                            \
	  .offset = offsetof(st, field), .def = (dflt), .min = (lo),        \
	  .max = (hi), .doc = (help) }
/* A duration in seconds: @lo and @hi are seconds. */
#define TALLY_OPT_DURATION(key, st, field, dflt, lo, hi, help)              \
	{ .name = (key), .type = TALLY_OPT_T_DURATION,                        \
	  .offset = offsetof(st, field), .def = (dflt), .min = (lo),        \
	  .max = (hi), .doc = (help) }
/* A string option the configuration must set (no default). */
#define TALLY_OPT_STRING_REQ(key, st, field, help)                          \
	{ .name = (key), .type = TALLY_OPT_T_STRING,                          \
	  .offset = offsetof(st, field), .min = 1, .max = 0,                \
	  .flags = TALLY_OPT_REQUIRED, .doc = (help) }
/* `listen`: a list of addresses the instance binds (TALLY_OPT_BINDS). */
#define TALLY_OPT_LISTEN(key, st, field, dflt, help)                        \
	{ .name = (key), .type = TALLY_OPT_T_LIST,                            \
	  .offset = offsetof(st, field), .def = (dflt), .min = 1, .max = 0, \
	  .flags = TALLY_OPT_BINDS, .doc = (help) }
/* `endpoint`: a ZeroMQ endpoint the instance binds (TALLY_OPT_BINDS_ZMQ). */
#define TALLY_OPT_ENDPOINT(key, st, field, dflt, help)                      \
	{ .name = (key), .type = TALLY_OPT_T_STRING,                          \
	  .offset = offsetof(st, field), .def = (dflt), .min = 1, .max = 0, \
	  .flags = TALLY_OPT_BINDS_ZMQ, .doc = (help) }
#define TALLY_OPT_END { .name = NULL, .type = TALLY_OPT_T_END }

/**
 * tally_strlist_contains() - whether @list holds @s (strcmp)
 * Return: true or false; false for an empty list.
 */
bool tally_strlist_contains(const struct tally_strlist *list, const char *s);

/**
 * tally_regcomp() - compile a regular expression written for node_exporter
 * or Prometheus (Go's RE2 syntax) with POSIX regcomp(REG_EXTENDED | @cflags)
 * @re:      the compiled expression, as regcomp() fills it (regfree() it)
 * @src:     the expression; NUL-terminated
 * @cflags:  more regcomp() flags (REG_NOSUB, REG_ICASE...)
 * @err:     on failure, what is wrong, NUL-terminated (may be NULL)
 * @errsize: size of @err
 *
 * POSIX ERE has no Perl classes: glibc reads \d as a plain "d", so a
 * node_exporter default such as "^(ram|loop|nvme\d+n\d+p)\d+$" would
 * silently match nothing. They are translated into bracket expressions,
 * outside and inside brackets: \d [0-9], \s [[:space:]], \w [[:alnum:]_],
 * \D \S \W their negations (outside brackets only), \t \n \r \f \v the
 * characters; inside brackets an escaped character (\. \\ \-...) is that
 * character. Other escapes outside brackets are left as they are (\. \\
 * \/ \b...). What RE2 has and POSIX cannot say is refused: (?flags),
 * (?:...) and (?P<name>...) groups, lazy quantifiers (*? +? ?? {n,m}?),
 * \A \z \C \p \P \Q \E \x, and \D \S \W inside brackets.
 * Return: 0, or -1 with errno = EINVAL (refused or not a valid expression,
 * @err says why) or ENOMEM. Thread-safe.
 */
int tally_regcomp(regex_t *re, const char *src, int cflags, char *err,
		  size_t errsize);

/**
 * tally_regexlist_match() - whether any expression of @list matches @s
 * Return: true or false; false for an empty list. Thread-safe (regexec).
 */
bool tally_regexlist_match(const struct tally_regexlist *list, const char *s);

#ifdef __cplusplus
}
#endif
#endif /* TALLY_CONFIG_H */
