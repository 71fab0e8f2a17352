/* SPDX-License-Identifier: MIT */
/*
 * t/unit/jobs.c - the jobs input's pure parsers: cgroup names and paths of
 * Slurm (cgroup v1 and v2) and Flux jobs, good and odd
 */
#include "config.h"

#include <errno.h>
#include <string.h>

#include "tap.h"

#include "../../plugins/input/jobs.c"

static void test_names(void)
{
	char id[TALLY_JOBID_MAX + 1], big[TALLY_JOBID_MAX + 16];
	char want[TALLY_JOBID_MAX + 1];
	long long v;

	ok(jobs_parse_slurm_job("job_4242", id) == 0, "job_4242 parses");
	is(id, "4242", "its id");
	errno = 0;
	ok(jobs_parse_slurm_job("job_abc", id) < 0 && errno == EINVAL,
	   "job_abc: EINVAL");
	errno = 0;
	ok(jobs_parse_slurm_job("job_", id) < 0 && errno == EINVAL,
	   "job_ alone: EINVAL");
	errno = 0;
	ok(jobs_parse_slurm_job("job_12x", id) < 0 && errno == EINVAL,
	   "job_12x: EINVAL");
	errno = 0;
	ok(jobs_parse_slurm_job("system", id) < 0 && errno == ENOENT,
	   "system: not a job (ENOENT)");
	memset(big, '7', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "job_", 4);
	tally_jobid_bound(big + 4, strlen(big + 4), want);
	ok(jobs_parse_slurm_job(big, id) == 0 && !strcmp(id, want) &&
		   strlen(id) == TALLY_JOBID_MAX,
	   "a 75-digit id: bounded as every job id (tally_jobid_bound)");
	big[4 + TALLY_JOBID_MAX] = '\0';
	ok(jobs_parse_slurm_job(big, id) == 0 && !strcmp(id, big + 4),
	   "a 64-digit id is kept whole");

	ok(jobs_parse_step("step_batch", &v) == 0 && v == JOBS_STEP_BATCH,
	   "step_batch");
	ok(jobs_parse_step("step_extern", &v) == 0 && v == JOBS_STEP_EXTERN,
	   "step_extern");
	ok(jobs_parse_step("step_12", &v) == 0 && v == 12, "step_12");
	errno = 0;
	ok(jobs_parse_step("step_x", &v) < 0 && errno == EINVAL,
	   "step_x: EINVAL");
	errno = 0;
	ok(jobs_parse_step("user", &v) < 0 && errno == ENOENT,
	   "user: not a step");

	ok(jobs_parse_num("uid_1000", "uid_", &v) == 0 && v == 1000,
	   "uid_1000");
	errno = 0;
	ok(jobs_parse_num("uid_4294967296", "uid_", &v) < 0 && errno == EINVAL,
	   "uid_ beyond 32 bits: EINVAL");
	errno = 0;
	ok(jobs_parse_num("uid_-1", "uid_", &v) < 0 && errno == EINVAL,
	   "uid_-1: EINVAL");
	errno = 0;
	ok(jobs_parse_num("uid_ 5", "uid_", &v) < 0 && errno == EINVAL,
	   "uid_ with a blank: EINVAL");

	ok(jobs_parse_flux_unit("imp-shell-0-f2UqXcM5p.service", id) == 0,
	   "imp-shell-0-ID.service parses");
	is(id, "f2UqXcM5p", "its id");
	ok(jobs_parse_flux_unit("shell-12-fABC.service", id) == 0,
	   "shell-12-ID.service parses");
	is(id, "fABC", "its id");
	errno = 0;
	ok(jobs_parse_flux_unit("imp-shell-0-.service", id) < 0 &&
		   errno == EINVAL,
	   "no id: EINVAL");
	errno = 0;
	ok(jobs_parse_flux_unit("shell-x-fA.service", id) < 0 &&
		   errno == EINVAL,
	   "a rank that is not a number: EINVAL");
	errno = 0;
	ok(jobs_parse_flux_unit("shell-0-f/A.service", id) < 0 &&
		   errno == EINVAL,
	   "an id with a slash: EINVAL");
	errno = 0;
	ok(jobs_parse_flux_unit("sshd.service", id) < 0 && errno == ENOENT,
	   "sshd.service: not a job (ENOENT)");
	errno = 0;
	ok(jobs_parse_flux_unit("shell-0-fA.scope", id) < 0 && errno == ENOENT,
	   "a .scope: not a job shell");
}

static void test_paths(void)
{
	struct jobs_where w;
	char deep[8192];

	ok(jobs_parse_path("/system.slice/slurmstepd.scope/job_77/"
			   "step_batch/user/task_0",
			   &w) == 0,
	   "v2 path parses");
	is(w.system, "slurm", "v2: slurm");
	is(w.jobid, "77", "v2: job id");
	cmp_ok(w.uid, "==", -1, "v2: no owner in the path");
	cmp_ok(w.step, "==", JOBS_STEP_BATCH, "v2: batch step");

	ok(jobs_parse_path("/slurm/uid_1001/job_5/step_3/task_0", &w) == 0,
	   "v1 path parses");
	is(w.jobid, "5", "v1: job id");
	cmp_ok(w.uid, "==", 1001, "v1: owner from uid_");
	cmp_ok(w.step, "==", 3, "v1: step 3");

	ok(jobs_parse_path("/system.slice/imp-shell-0-fXyZ.service", &w) == 0,
	   "flux path parses");
	is(w.system, "flux", "flux: flux");
	is(w.jobid, "fXyZ", "flux: job id");

	ok(jobs_parse_path("/user.slice/user-1000.slice/session-2.scope", &w) ==
			   0 &&
		   !w.system,
	   "a login session: no job");
	ok(jobs_parse_path("/", &w) == 0 && !w.system, "the root: no job");
	ok(jobs_parse_path("", &w) == 0 && !w.system, "empty: no job");
	ok(jobs_parse_path("//system.slice///slurmstepd.scope/job_9//", &w) ==
			   0 &&
		   !strcmp(w.jobid, "9"),
	   "doubled slashes");
	errno = 0;
	ok(jobs_parse_path("/system.slice/slurmstepd.scope/job_abc/step_0",
			   &w) < 0 &&
		   errno == EINVAL && !w.system,
	   "job_abc in a path: EINVAL, no job");
	errno = 0;
	ok(jobs_parse_path("/slurm/uid_x/job_1", &w) < 0 && errno == EINVAL,
	   "uid_x in a path: EINVAL");
	ok(jobs_parse_path("/a/job_1/job_2/step_0", &w) == 0 &&
		   !strcmp(w.jobid, "1") && w.step == 0,
	   "the first job component wins");
	/* a very deep path: walked component by component, no recursion */
	deep[0] = '\0';
	for (int i = 0; i < 1000; i++)
		strcat(deep, "/d");
	strcat(deep, "/job_3");
	ok(jobs_parse_path(deep, &w) == 0 && !strcmp(w.jobid, "3"),
	   "a 1000-level path");
	memset(deep, 'a', 300);
	deep[300] = '\0';
	errno = 0;
	ok(jobs_parse_path(deep, &w) < 0 && errno == EINVAL,
	   "a component longer than NAME_MAX: EINVAL");
}

int main(void)
{
	test_names();
	test_paths();
	return done_testing();
}
