/* SPDX-License-Identifier: MIT */
/*
 * t/plugins/stall.c - test-only input whose read blocks the event loop
 *
 * Not a blocking input: its read runs on the loop thread. While the file
 * `path` exists (at most 60 s), each read waits for it to go, having
 * created the file `started` first: the loop, and so every other input's
 * drain, is stalled while libzmq's I/O threads go on accepting and
 * queueing. Tests use it to make a collector fall behind on cue.
 */
#include "config.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <tally/plugin.h>

struct stall {
	char *path;    /* stall while this file exists */
	char *started; /* created when a stall begins */
};

static int stall_read(struct tally_instance *inst, void *state,
		      struct tally_batch *out)
{
	struct stall *s = state;
	struct timespec ts = { 0, 10 * 1000000 };
	int fd;

	if (access(s->path, F_OK) < 0)
		return 0;
	fd = open(s->started, O_WRONLY | O_CREAT | O_CLOEXEC, 0644);
	if (fd >= 0)
		close(fd);
	for (int i = 0; i < 6000 && access(s->path, F_OK) == 0; i++)
		nanosleep(&ts, NULL);
	return 0;
}

static const struct tally_option stall_options[] = {
	TALLY_OPT_STRING_REQ("path", struct stall, path,
			     "stall the loop while this file exists"),
	TALLY_OPT_STRING_REQ("started", struct stall, started,
			     "file created when a stall begins"),
	TALLY_OPT_END,
};

static const struct tally_input_ops stall_ops = {
	.read = stall_read,
};

TALLY_PLUGIN_INPUT(stall, "test-only: an input that stalls the event loop",
		   struct stall, stall_options, &stall_ops);
