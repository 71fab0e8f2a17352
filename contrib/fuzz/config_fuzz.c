/* SPDX-License-Identifier: MIT */
/*
 * contrib/fuzz/config_fuzz.c - libFuzzer target: the configuration loader
 *
 * Each input is written to a file and loaded and validated exactly as
 * tallyd --check-config does, against the plugins in TALLY_FUZZ_PLUGINS
 * (default: the build tree's test plugins), so the fuzzer reaches option
 * parsing and pipeline resolution, not only libconfig's parser.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "../../core/core-internal.h"

static struct tally_loader *fuzz_loader;
static char fuzz_path[] = "/tmp/tally-config-fuzz-XXXXXX.conf";

int LLVMFuzzerInitialize(int *argc, char ***argv);
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	const char *dirs = getenv("TALLY_FUZZ_PLUGINS");
	int fd;

	fuzz_loader = tally_loader_new();
	if (!fuzz_loader)
		abort();
	tally_loader_add_path(fuzz_loader, dirs ? dirs : "t/plugins");
	fd = mkstemps(fuzz_path, 5);
	if (fd < 0)
		abort();
	close(fd);
	/* diagnostics are the point of the loader, but not of a fuzz run */
	tally_log_setup(TALLY_LOG_STDERR, LOG_EMERG);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	FILE *f = fopen(fuzz_path, "w");
	struct tally_conf *c;

	if (!f)
		return 0;
	fwrite(data, 1, size, f);
	fclose(f);
	c = tally_conf_load(fuzz_path, fuzz_loader);
	tally_conf_free(c);
	return 0;
}
