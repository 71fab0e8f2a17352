/* SPDX-License-Identifier: MIT */
/*
 * core/mode.c - system or user collector: runtime directory and job id
 *
 * A user collector runs inside a batch job next to (maybe) the node's system
 * collector, so everything it creates lives in a per-user, per-job directory
 * that nobody else can write: the two never clash.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core-internal.h"

static bool mode_user;
static char mode_rundir[PATH_MAX] = "/run/tally";
static const char *mode_jobid;

/* Launcher variables that carry the batch job id, first set wins. */
static const char *const jobid_vars[] = { "SLURM_JOB_ID", "FLUX_JOB_ID",
					  "PBS_JOBID", "LSB_JOBID", NULL };

int tally_user_mode(void)
{
	return mode_user;
}

const char *tally_runtime_dir(void)
{
	return mode_rundir;
}

const char *tally_jobid(void)
{
	return mode_jobid;
}

/* mkdir -p with @mode for the directories it creates. */
static int mkdirs(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];

	snprintf(tmp, sizeof(tmp), "%s", path);
	for (char *p = tmp + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(tmp, mode) < 0 && errno != EEXIST)
			return -1;
		*p = '/';
	}
	if (mkdir(tmp, mode) < 0 && errno != EEXIST)
		return -1;
	return 0;
}

int tally_mode_setup(bool user)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	const char *env = getenv("TALLY_RUNTIME_DIR");

	mode_user = user;
	if (user) {
		for (size_t i = 0; jobid_vars[i]; i++) {
			const char *v = getenv(jobid_vars[i]);

			if (v && *v) {
				mode_jobid = v;
				break;
			}
		}
		if (xdg && *xdg)
			snprintf(mode_rundir, sizeof(mode_rundir), "%s/tally",
				 xdg);
		else
			snprintf(mode_rundir, sizeof(mode_rundir),
				 "/tmp/tally-%u", (unsigned)getuid());
		if (mode_jobid) {
			size_t len = strlen(mode_rundir);

			snprintf(mode_rundir + len, sizeof(mode_rundir) - len,
				 "/job-%s", mode_jobid);
		}
	}
	/* tests and unusual sites can put it anywhere */
	if (env && *env)
		snprintf(mode_rundir, sizeof(mode_rundir), "%s", env);
	return 0;
}

/* Create the runtime dir when something needs it (not for --check-config). */
int tally_runtime_dir_create(void);
int tally_runtime_dir_create(void)
{
	if (mkdirs(mode_rundir, mode_user ? 0700 : 0755) < 0) {
		tally_log(NULL, LOG_ERR, "cannot create runtime directory %s: %s",
			  mode_rundir, strerror(errno));
		return -1;
	}
	return 0;
}
