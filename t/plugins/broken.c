/* SPDX-License-Identifier: MIT */
/*
 * t/plugins/broken.c - test-only plugins the loader must refuse
 *
 * Built four times (t/plugins/local.mk), each with one BROKEN_* macro, into
 * a plugin that is valid but for one defect:
 *	badabi.la    abi = TALLY_PLUGIN_ABI + 1 (built for a newer tally)
 *	badsize.la   size larger than this tally's descriptor (a header with
 *	             more fields)
 *	misnamed.la  descriptor name "someone_else", not the file's name
 *	noops.la     an output without the mandatory write op
 * The descriptor is written out by hand, not with TALLY_PLUGIN_OUTPUT, so
 * that abi and size can lie. Each must be refused with one log line naming
 * the file and that defect.
 */
#include "config.h"

#include <tally/plugin.h>

#define BROKEN_ABI	TALLY_PLUGIN_ABI
#define BROKEN_SIZE	sizeof(struct tally_plugin)
#define BROKEN_WRITE	broken_write

#if defined(BROKEN_BADABI)
#define BROKEN_NAME	"badabi"
#undef BROKEN_ABI
#define BROKEN_ABI	(TALLY_PLUGIN_ABI + 1)
#elif defined(BROKEN_BADSIZE)
#define BROKEN_NAME	"badsize"
#undef BROKEN_SIZE
#define BROKEN_SIZE	(sizeof(struct tally_plugin) + sizeof(void *))
#elif defined(BROKEN_MISNAMED)
#define BROKEN_NAME	"someone_else"
#elif defined(BROKEN_NOOPS)
#define BROKEN_NAME	"noops"
#undef BROKEN_WRITE
#define BROKEN_WRITE	NULL
#else
#error "define one of BROKEN_BADABI, BROKEN_BADSIZE, BROKEN_MISNAMED, BROKEN_NOOPS"
#endif

struct broken {
	int unused;
};

/* Unused in noops.la, which leaves write NULL. */
static __attribute__((unused)) int broken_write(struct tally_instance *inst,
						void *state,
						struct tally_batch *b)
{
	return 0;
}

static const struct tally_option broken_options[] = {
	TALLY_OPT_END
};

static const struct tally_output_ops broken_ops = {
	.write = BROKEN_WRITE,
};

__attribute__((visibility("default")))
const struct tally_plugin tally_plugin = {
	.abi = BROKEN_ABI,
	.size = BROKEN_SIZE,
	.name = BROKEN_NAME,
	.kind = TALLY_KIND_OUTPUT,
	.description = "test only: a plugin the loader must refuse",
	.state_size = sizeof(struct broken),
	.options = broken_options,
	.output = &broken_ops,
};
