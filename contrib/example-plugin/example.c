/* SPDX-License-Identifier: MIT */
/*
 * example.c - an input plugin built outside tally's tree: the number in a
 * file, as a gauge
 *
 * Each read opens PATH, parses the first number in it and emits
 *	NAME{path="PATH"} VALUE * SCALE
 * A file that cannot be read or holds no number emits nothing for that
 * read: the failure is counted in tallyd's self-metrics
 * (tally_dropped_total{reason="unreadable" or "bad_value"}) and logged
 * once until the file is good again. Cost: one open, read and close per
 * interval; nothing is allocated after init but the batch records.
 *
 * Built with its Makefile against an installed tally (pkg-config
 * tally-plugin); see doc/plugin-guide.md in tally's sources.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <tally/io.h>
#include <tally/log.h>
#include <tally/plugin.h>

struct example {
	/* options, filled by tallyd from the option table below */
	char *path;
	char *name;
	double scale;

	/* state */
	struct tally_labels *labels;	/* {path="PATH"} */
	struct tally_readbuf rb;	/* the file's text, reused */
	bool failing;			/* the last read failed (logged) */
};

/* Parse the first number of @text. Return: 0, or -1 (no number). */
static int example_parse(const char *text, double *v)
{
	char *end;

	*v = strtod(text, &end);
	return end == text ? -1 : 0;
}

/* Log a failure once, count it every time. */
static void example_fail(struct tally_instance *inst, struct example *e,
			 const char *reason, const char *what)
{
	tally_count_drop(inst, reason, 1);
	if (!e->failing)
		tally_log(inst, LOG_WARNING, "%s: %s (logged once)", e->path,
			  what);
	e->failing = true;
}

static int example_init(struct tally_instance *inst, void *state)
{
	struct example *e = state;

	(void)inst;
	e->labels = tally_labels_newv("path", e->path, NULL);
	return e->labels ? 0 : -1;
}

static int example_read(struct tally_instance *inst, void *state,
			struct tally_batch *out)
{
	struct example *e = state;
	int fd = tally_open_file(AT_FDCWD, e->path);
	ssize_t n = -1;
	double v;

	if (fd >= 0) {
		n = tally_read_whole(fd, &e->rb);
		close(fd);
	}
	if (n < 0) {
		example_fail(inst, e, "unreadable", strerror(errno));
		return 0; /* nothing this time; the input keeps running */
	}
	if (example_parse(e->rb.data, &v) < 0) {
		example_fail(inst, e, "bad_value", "no number in the file");
		return 0;
	}
	if (e->failing)
		tally_log(inst, LOG_INFO, "%s: readable again", e->path);
	e->failing = false;
	return tally_batch_add_metric(out, TALLY_GAUGE, e->name,
				      "The number in the file, scaled.",
				      e->labels, v * e->scale,
				      tally_now_ns());
}

static void example_fini(struct tally_instance *inst, void *state)
{
	struct example *e = state;

	(void)inst;
	tally_labels_unref(e->labels);
	tally_readbuf_free(&e->rb);
}

static const struct tally_option example_options[] = {
	TALLY_OPT_STRING_REQ("path", struct example, path,
			     "the file whose first number is read"),
	TALLY_OPT_STRING("name", struct example, name, "example_value",
			 "metric name"),
	TALLY_OPT_DOUBLE("scale", struct example, scale, "1", -1e300, 1e300,
			 "factor applied to the number (units: to base units)"),
	TALLY_OPT_END,
};

static const struct tally_input_ops example_ops = {
	.init = example_init,
	.read = example_read,
	.fini = example_fini,
};

TALLY_PLUGIN_INPUT(example, "the number in a file, as a gauge",
		   struct example, example_options, &example_ops);
