/* SPDX-License-Identifier: MIT */
/*
 * core/client/discover.c - what libtally-trace learns from its environment:
 * the collector endpoint, the default trace id, the launcher rank, what a
 * source announces (its local rank and GPUs)
 *
 * Runs once per tally_trace_open(), never on the event path.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tally/mode.h>

#include "trace-internal.h"

const char *tt_tmp_dir = "/tmp";

/* Launcher variables, most specific first: PMIx, Open MPI, MPICH/PMI,
 * Slurm, Flux. */
static const char *const tt_rank_vars[] = {
	"PMIX_RANK",	"OMPI_COMM_WORLD_RANK", "PMI_RANK",
	"SLURM_PROCID", "FLUX_TASK_RANK",	NULL
};

/* The first of @vars holding a non-negative decimal int32, or -1. */
static int32_t tt_env_first_int(const char *const *vars)
{
	for (size_t i = 0; vars[i]; i++) {
		const char *v = getenv(vars[i]);
		char *end;
		long r;

		if (!v || *v < '0' || *v > '9')
			continue;
		errno = 0;
		r = strtol(v, &end, 10);
		if (errno == 0 && *end == '\0' && r <= INT32_MAX)
			return (int32_t)r;
	}
	return -1;
}

int32_t tt_env_rank(void)
{
	return tt_env_first_int(tt_rank_vars);
}

/* The rank on the node: Open MPI, MPICH, PMI, Slurm, Flux, Cray PALS. */
static const char *const tt_local_rank_vars[] = {
	"OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK",
	"SLURM_LOCALID", "FLUX_TASK_LOCAL_ID", "PALS_LOCAL_RANKID", NULL
};

/* The GPUs a process sees, as source attribute names. */
static const char *const tt_gpu_vars[][2] = {
	{ "ROCR_VISIBLE_DEVICES", "rocr_visible_devices" },
	{ "HIP_VISIBLE_DEVICES", "hip_visible_devices" },
	{ "CUDA_VISIBLE_DEVICES", "cuda_visible_devices" },
};

size_t tt_env_announce(uint8_t *out)
{
	int64_t local = tt_env_first_int(tt_local_rank_vars);
	size_t n = 0;

	if (local >= 0)
		n += tt_item_attr(out, TALLY_WIRE_ITEM_SOURCE, "local_rank", 10,
				  TALLY_WIRE_T_INT64, &local, 8);
	for (size_t i = 0; i < sizeof(tt_gpu_vars) / sizeof(tt_gpu_vars[0]);
	     i++) {
		const char *v = getenv(tt_gpu_vars[i][0]);
		char fixed[TALLY_WIRE_MAX_ATTR_STR];
		size_t len;

		if (!v)
			continue;
		len = tt_clip(v, strlen(v), fixed, sizeof(fixed));
		n += tt_item_attr(out + n, TALLY_WIRE_ITEM_SOURCE,
				  tt_gpu_vars[i][1], strlen(tt_gpu_vars[i][1]),
				  TALLY_WIRE_T_STRING, fixed, len);
	}
	return n;
}

/* Same variables and order as core/mode.c, so client and collector agree
 * on the job's runtime directory. */
static const char *const tt_job_vars[] = { "SLURM_JOB_ID", "FLUX_JOB_ID",
					   "PBS_JOBID", "LSB_JOBID", NULL };

const char *tt_env_jobid(char *buf)
{
	for (size_t i = 0; tt_job_vars[i]; i++) {
		const char *v = getenv(tt_job_vars[i]);

		if (v && *v) {
			tally_jobid_bound(v, strlen(v), buf);
			return buf;
		}
	}
	return NULL;
}

char *tt_default_trace_id(void)
{
	const char *v = getenv("TALLY_TRACE_ID");
	char buf[TALLY_JOBID_MAX + 1];

	if (!v || !*v)
		v = tt_env_jobid(buf);
	if (!v) {
		snprintf(buf, sizeof(buf), "pid-%ld", (long)getpid());
		v = buf;
	}
	return strdup(v);
}

/* A collector is taken as running when its socket file exists. */
static char *tt_try_socket(const char *dir, const char *sub, const char *job)
{
	char path[PATH_MAX];
	struct stat st;
	int n;

	if (job)
		n = snprintf(path, sizeof(path), "%s%s/job-%s/trace.sock", dir,
			     sub, job);
	else
		n = snprintf(path, sizeof(path), "%s%s/trace.sock", dir, sub);
	if (n < 0 || (size_t)n >= sizeof(path))
		return NULL;
	if (stat(path, &st) < 0 || !S_ISSOCK(st.st_mode))
		return NULL;
	return strdup(path);
}

char *tt_discover_endpoint(void)
{
	const char *env = getenv("TALLY_TRACE_ENDPOINT");
	const char *rt = getenv("TALLY_RUNTIME_DIR");
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	char jobbuf[TALLY_JOBID_MAX + 1], dir[TALLY_JOBID_MAX + 1];
	const char *job = tt_env_jobid(jobbuf);
	char tmp[PATH_MAX], *path = NULL, *ep;
	size_t len;

	if (env && *env)
		return strdup(env);
	/* the directory name tallyd --user gives its job (core/jobid.c) */
	if (job) {
		tally_jobid_path(job, dir, sizeof(dir));
		job = dir;
	}
	/* tallyd --user with TALLY_RUNTIME_DIR uses that directory as is */
	if (rt && *rt)
		path = tt_try_socket(rt, "", NULL);
	if (!path && xdg && *xdg)
		path = tt_try_socket(xdg, "/tally", job);
	if (!path) {
		snprintf(tmp, sizeof(tmp), "%s/tally-%u", tt_tmp_dir,
			 (unsigned)getuid());
		path = tt_try_socket(tmp, "", job);
	}
	if (!path)
		return strdup(TT_SYSTEM_ENDPOINT);
	len = strlen(path) + sizeof("ipc://");
	ep = malloc(len);
	if (ep)
		snprintf(ep, len, "ipc://%s", path);
	free(path);
	return ep;
}
