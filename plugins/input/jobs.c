/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/jobs.c - the batch jobs a collector serves:
 * tally_job_info{batchsystem,jobid,user} = 1 per job, and Omnistat's
 * rmsjob_info{jobid,user,partition,nodes,batchflag,jobstep,type} = 1
 * behind the "omnistat" option
 *
 * Named "jobs" (not "slurm"): it knows several batch systems, and what it
 * reports is the jobs, whatever runs them.
 *
 * System collector: the jobs running on the node, found in the batch
 * systems' cgroup hierarchies under the "cgroup_root" option:
 *   - Slurm, cgroup v2 (cgroup/v2 plugin):
 *	ROOT/system.slice/slurmstepd.scope/job_N/step_M/...
 *     the user is the job directory's owner when it is not root, else the
 *     owner of the first non-root process listed in a cgroup.procs file
 *     below the job (its steps' user/task_T cgroups), looked up in "proc",
 *     or root when only root's tasks run (slurmstepd, in each step's
 *     "slurm" cgroup, and step_extern's sleep are no job's tasks);
 *   - Slurm, cgroup v1: ROOT/{cpuset,memory,freezer}/slurm/uid_U/job_N/
 *     step_M, the user from uid_U (a job seen in several controllers is
 *     one job);
 *   - Flux (sdexec, systemd): ROOT/system.slice/[imp-]shell-R-ID.service,
 *     one unit per job and broker rank, ID the job id as the unit name
 *     spells it (F58 with an ASCII "f"); user as for Slurm v2.
 * A job whose directory is gone is no longer reported, and its series
 * expire at the outputs (three intervals for the prometheus output).
 * Steps give rmsjob_info's batchflag ("1" with a step_batch) and jobstep
 * (the highest numbered step); partition and nodes are not in the cgroups
 * and are left empty.
 *
 * User collector (tallyd --user): the job it serves, from the launcher's
 * variables (tally_jobid(), tally_jobid_system()); the user is the
 * collector's own; rmsjob_info's partition, nodes and jobstep from the
 * batch system's variables (SLURM_JOB_PARTITION, SLURM_JOB_NUM_NODES,
 * SLURM_STEP_ID; FLUX_JOB_NNODES), batchflag and a missing jobstep from
 * the collector's own cgroup (/proc/self/cgroup). Outside a job: nothing.
 *
 * Cost model (system collector): one readdir per level of each hierarchy
 * present per tick - the hierarchy's directory, uid_U (v1), each job's
 * directory (its steps) - and one fstatat per entry kept; a user is looked
 * up once per job (kept across ticks while the job runs): up to
 * JOBS_PROCS_DIRS directories read for cgroup.procs (for JOBS_LOOKUPS jobs
 * per read at most; a job whose user is not found yet is looked up again
 * on later reads, its user "" meanwhile), then getpwuid_r(),
 * which may ask the network (NSS): the input is blocking, its read runs on
 * a worker thread. A hierarchy that is not there costs one failed openat.
 * A user collector makes its job's labels once, in init; a read appends
 * them.
 *
 * Failure model: a cgroup root that cannot be opened is logged once (until
 * it can be opened again) and counted on every tick (cgroup_root_error);
 * an unreadable directory likewise (unreadable_dir). An entry that names a
 * job badly (job_abc, job_, uid_x) is dropped and counted
 * (odd_name), as is a job entry that is not a directory (a symlink is never
 * followed: O_NOFOLLOW; odd_entry); each reason is logged once, with the
 * first name (escaped: a name read from the tree may hold a newline). A
 * "proc" that is not a procfs (no self/cgroup) is logged once and counted
 * on every read (proc_error). At most max_jobs jobs per hierarchy and
 * tick: the rest are counted (too_many_jobs). Only known depths are walked, so a deep tree or
 * a symlink loop costs nothing more.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <pwd.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tally/io.h>
#include <tally/plugin.h>

/* Directories read below a job for a cgroup.procs naming its user. */
#define JOBS_PROCS_DIRS 32
/* How deep below a job directory they are looked for (step/user/task). */
#define JOBS_PROCS_DEPTH 3
/* Jobs whose user is looked for in their processes, per read at most. */
#define JOBS_LOOKUPS 64

/* enum jobs_step special values (numbered steps are >= 0) */
enum {
	JOBS_STEP_NONE = -1,
	JOBS_STEP_BATCH = -2,
	JOBS_STEP_EXTERN = -3,
	JOBS_STEP_INTERACTIVE = -4,
};

/**
 * struct jobs_where - what a cgroup path says about a job
 * @system: "slurm" or "flux" (static), NULL: no job in the path
 * @jobid:  the job id
 * @uid:    the owner from a Slurm v1 uid_U component, -1 unknown
 * @step:   a JOBS_STEP_* value, or the step number
 */
struct jobs_where {
	const char *system;
	char jobid[TALLY_JOBID_MAX + 1];
	long long uid;
	long long step;
};

/**
 * struct jobs_job - one job found this tick
 * @system: "slurm" or "flux" (static)
 * @id:     job id
 * @uid:    owner, -1 unknown yet
 * @user:   its name (or the uid in decimal); "" unknown
 * @batch:  a batch step was seen
 * @step:   highest numbered step seen, JOBS_STEP_NONE for none
 */
struct jobs_job {
	const char *system;
	char id[TALLY_JOBID_MAX + 1];
	long long uid;
	char user[64];
	bool batch;
	long long step;
};

/* The hierarchies a system collector reads, below cgroup_root. */
enum jobs_kind { JOBS_SLURM_V2, JOBS_SLURM_V1, JOBS_FLUX };
static const struct {
	const char *path;
	enum jobs_kind kind;
} jobs_trees[] = {
	{ "system.slice/slurmstepd.scope", JOBS_SLURM_V2 },
	{ "cpuset/slurm", JOBS_SLURM_V1 },
	{ "memory/slurm", JOBS_SLURM_V1 },
	{ "freezer/slurm", JOBS_SLURM_V1 },
	{ "system.slice", JOBS_FLUX },
};
#define JOBS_NTREES (sizeof(jobs_trees) / sizeof(jobs_trees[0]))

/* What a directory that cannot be read costs (jobs_dir_error()) */
#define JOBS_LOST_ALL "no job is reported"
#define JOBS_LOST_TREE "the jobs below it are not reported"
#define JOBS_LOST_JOB                                                    \
	"the job is reported, without its steps (and without its user "  \
	"when the path does not name it and the directory is root's)"

/* Drop reasons logged once each (bit numbers of struct jobs.logged). */
enum { JOBS_ODD_NAME, JOBS_ODD_ENTRY, JOBS_TOO_MANY, JOBS_NREASONS };
static const char *const jobs_reason[JOBS_NREASONS] = {
	"odd_name",
	"odd_entry",
	"too_many_jobs",
};

struct jobs {
	/* options */
	char *cgroup_root;
	char *proc;
	bool omnistat;
	int64_t max_jobs;
	/* state: one read at a time (the core runs one per instance) */
	struct tally_instance *inst;
	struct jobs_job *cur, *prev; /* this tick's, the last one's (sorted) */
	size_t ncur, nprev, capcur, capprev;
	unsigned logged;	   /* JOBS_* reasons logged */
	int root_err;		   /* errno of cgroup_root last logged */
	int tree_err[JOBS_NTREES]; /* likewise per hierarchy */
	bool err_now;
	unsigned lookups;
		/* owner searches this read (JOBS_LOOKUPS) */ /* a directory
								 error this tick
							       */
	int job_err;	      /* likewise for job directories */
	int proc_err;	      /* what was wrong with "proc", last logged */
	struct jobs_job self; /* user collector: its job */
	char partition[128], nodes[32], jobstep[32];
	bool outside_logged;
};

static const char jobs_info_help[] =
	"Batch jobs running on the node: 1 per job, labelled with its "
	"batch system, id and user.";
static const char jobs_rms_help[] =
	"Omnistat's job attribution: 1 per job (partition and nodes empty "
	"when not known).";

/*
 * Pure parsers of cgroup names: no I/O, no state.
 */

/*
 * One or more characters of @ok, copied to @id (TALLY_JOBID_MAX + 1
 * bytes) by the rule of every job id (tally_jobid_bound(): a longer one
 * is cut, with a hash), as a user collector does with its variable
 */
static int jobs_parse_id(const char *s, const char *ok, char *id)
{
	size_t n = strspn(s, ok);

	if (!n || s[n]) {
		errno = EINVAL;
		return -1;
	}
	tally_jobid_bound(s, n, id);
	return 0;
}

static const char jobs_digits[] = "0123456789";
static const char jobs_alnum[] = "0123456789"
				 "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
				 "abcdefghijklmnopqrstuvwxyz";

/* A decimal u32 after @prefix: 0, -1 ENOENT (not @prefix), EINVAL */
static int jobs_parse_num(const char *name, const char *prefix, long long *v)
{
	size_t pl = strlen(prefix);
	const char *p = name + pl;
	uint64_t u;

	if (strncmp(name, prefix, pl) != 0) {
		errno = ENOENT;
		return -1;
	}
	if (*p < '0' || *p > '9' || tally_parse_u64(&p, &u) < 0 || *p ||
	    u > UINT32_MAX) {
		errno = EINVAL;
		return -1;
	}
	*v = (long long)u;
	return 0;
}

/**
 * jobs_parse_slurm_job() - the id of a Slurm job cgroup name, "job_N"
 * Return: 0 with @id filled, or -1 with errno = ENOENT (not a job_ name)
 * or EINVAL (job_ followed by anything but digits).
 */
static int jobs_parse_slurm_job(const char *name, char *id)
{
	if (strncmp(name, "job_", 4) != 0) {
		errno = ENOENT;
		return -1;
	}
	return jobs_parse_id(name + 4, jobs_digits, id);
}

/**
 * jobs_parse_step() - a Slurm step cgroup name, "step_N", "step_batch",
 * "step_extern" or "step_interactive"
 * Return: 0 with *@step a JOBS_STEP_* value or the number, or -1 with
 * errno = ENOENT (not a step_ name) or EINVAL.
 */
static int jobs_parse_step(const char *name, long long *step)
{
	static const struct {
		const char *name;
		long long v;
	} named[] = {
		{ "step_batch", JOBS_STEP_BATCH },
		{ "step_extern", JOBS_STEP_EXTERN },
		{ "step_interactive", JOBS_STEP_INTERACTIVE },
	};

	for (size_t i = 0; i < sizeof(named) / sizeof(named[0]); i++)
		if (strcmp(name, named[i].name) == 0) {
			*step = named[i].v;
			return 0;
		}
	return jobs_parse_num(name, "step_", step);
}

/**
 * jobs_parse_flux_unit() - the job id of a Flux job shell's systemd unit,
 * "shell-RANK-ID.service" or "imp-shell-RANK-ID.service"
 * Return: 0 with @id filled, or -1 with errno = ENOENT (not such a name)
 * or EINVAL (the prefix with a bad rank or id).
 */
static int jobs_parse_flux_unit(const char *name, char *id)
{
	char buf[NAME_MAX + 1];
	const char *p = name;
	size_t n, len;

	if (strncmp(p, "imp-", 4) == 0)
		p += 4;
	len = strlen(p);
	if (strncmp(p, "shell-", 6) != 0 || len < 8 ||
	    strcmp(p + len - 8, ".service") != 0) {
		errno = ENOENT;
		return -1;
	}
	p += 6;
	len -= 6 + 8;
	n = strspn(p, jobs_digits);
	if (!n || n >= len || p[n] != '-' || len - n - 1 >= sizeof(buf)) {
		errno = EINVAL;
		return -1;
	}
	memcpy(buf, p + n + 1, len - n - 1);
	buf[len - n - 1] = '\0';
	return jobs_parse_id(buf, jobs_alnum, id);
}

/**
 * jobs_parse_path() - the job, owner and step a cgroup path names
 * @path: a path below the cgroup root, "/system.slice/slurmstepd.scope/
 *        job_5/step_0/user/task_0" (as /proc/PID/cgroup gives it)
 * @w:    filled: @w->system NULL when no component names a job
 *
 * Components are taken one at a time: uid_U (a Slurm v1 owner), job_N (a
 * Slurm job), step_* after it, [imp-]shell-R-ID.service (a Flux job).
 * Return: 0, or -1 with errno = EINVAL when a component names a job (or
 * its owner) badly: job_abc, job_ alone, uid_x; @w then names no job.
 */
static int jobs_parse_path(const char *path, struct jobs_where *w)
{
	char comp[NAME_MAX + 1];

	w->system = NULL;
	w->jobid[0] = '\0';
	w->uid = -1;
	w->step = JOBS_STEP_NONE;
	while (*path) {
		size_t n = strcspn(path, "/");
		long long v;

		if (n > NAME_MAX)
			goto out_inval;
		memcpy(comp, path, n);
		comp[n] = '\0';
		path += n + (path[n] == '/');
		if (!n)
			continue;
		if (w->system) {
			if (w->step == JOBS_STEP_NONE &&
			    !strcmp(w->system, "slurm") &&
			    jobs_parse_step(comp, &v) == 0)
				w->step = v;
			continue;
		}
		if (jobs_parse_num(comp, "uid_", &v) == 0) {
			w->uid = v;
			continue;
		}
		if (errno == EINVAL)
			goto out_inval;
		if (jobs_parse_slurm_job(comp, w->jobid) == 0) {
			w->system = "slurm";
			continue;
		}
		if (errno == EINVAL)
			goto out_inval;
		if (jobs_parse_flux_unit(comp, w->jobid) == 0)
			w->system = "flux";
		else if (errno == EINVAL)
			goto out_inval;
	}
	return 0;

out_inval:
	w->system = NULL;
	w->jobid[0] = '\0';
	errno = EINVAL;
	return -1;
}

/*
 * Logging and counting
 */

/*
 * Count a drop of @reason (JOBS_*), logging the first one ever. @name
 * comes from readdir (and @where may hold earlier entries): escaped, so
 * that a newline in a directory name cannot forge a log line.
 */
static void jobs_drop(struct jobs *j, int reason, const char *where,
		      const char *name)
{
	char ew[PATH_MAX], en[NAME_MAX * 4 + 1];

	tally_count_drop(j->inst, jobs_reason[reason], 1);
	if (j->logged & (1u << reason))
		return;
	j->logged |= 1u << reason;
	tally_log_peer_text(ew, sizeof(ew), where, strlen(where));
	tally_log_peer_text(en, sizeof(en), name, strlen(name));
	switch (reason) {
	case JOBS_ODD_NAME:
		tally_log(j->inst, LOG_WARNING,
			  "%s/%s: not a job name the batch system makes: "
			  "ignored (further ones counted, odd_name)",
			  ew, en);
		break;
	case JOBS_ODD_ENTRY:
		tally_log(j->inst, LOG_WARNING,
			  "%s/%s: not a directory: ignored (further ones "
			  "counted, odd_entry)",
			  ew, en);
		break;
	default:
		tally_log(j->inst, LOG_WARNING,
			  "%s: more than max_jobs (%" PRId64 ") jobs: the "
			  "rest are not reported (counted, too_many_jobs)",
			  ew, j->max_jobs);
		break;
	}
}

/*
 * Log a directory error when it changed (*@last: the last errno logged),
 * saying what it costs (@lost: "no job is reported", "its jobs are not
 * reported", "the job is reported without its steps").
 */
static void jobs_dir_error(struct jobs *j, int *last, const char *path, int e,
			   const char *reason, const char *lost)
{
	char esc[PATH_MAX];

	tally_count_drop(j->inst, reason, 1);
	j->err_now = true;
	if (*last == e)
		return;
	*last = e;
	tally_log_peer_text(esc, sizeof(esc), path, strlen(path));
	tally_log(j->inst, LOG_WARNING,
		  "%s: %s: %s (logged once, counted as %s)", esc, strerror(e),
		  lost, reason);
}

/*
 * A DIR on directory @fd, from its start: a dup shares the file position,
 * which an earlier walk of @fd left at the end. NULL with errno set.
 */
static DIR *jobs_opendir(int fd)
{
	int dfd = dup(fd), e;
	DIR *d;

	if (dfd < 0)
		return NULL;
	d = fdopendir(dfd);
	if (!d) {
		e = errno;
		close(dfd);
		errno = e;
		return NULL;
	}
	rewinddir(d);
	return d;
}

/*
 * The user of a job
 */

static void jobs_user_name(struct jobs_job *job, long long uid)
{
	struct passwd pw, *res = NULL;
	char buf[4096];

	job->uid = uid;
	if (getpwuid_r((uid_t)uid, &pw, buf, sizeof(buf), &res) == 0 && res &&
	    strlen(res->pw_name) < sizeof(job->user))
		snprintf(job->user, sizeof(job->user), "%s", res->pw_name);
	else
		snprintf(job->user, sizeof(job->user), "%lld", uid);
}

/*
 * The owner of the processes of cgroup.procs in @dirfd: the first non-root
 * one (*@uid); *@root set when a process of root's is listed.
 */
static void jobs_procs_owner(struct jobs *j, int dirfd, long long *uid,
			     bool *root)
{
	struct tally_readbuf rb = { 0 };
	const char *p;
	int fd = tally_open_file(dirfd, "cgroup.procs");

	if (fd < 0)
		return;
	if (tally_read_whole(fd, &rb) < 0)
		goto out;
	p = rb.data;
	for (;;) {
		char path[PATH_MAX];
		struct stat st;
		uint64_t pid;

		while (*p == '\n')
			p++;
		if (tally_parse_u64(&p, &pid) < 0)
			break;
		snprintf(path, sizeof(path), "%s/%" PRIu64, j->proc, pid);
		if (stat(path, &st) < 0)
			continue;
		if (st.st_uid != 0) {
			*uid = st.st_uid;
			break;
		}
		if (root)
			*root = true;
	}
out:
	tally_readbuf_free(&rb);
	close(fd);
}

/*
 * Look for the job's user in the cgroup.procs of @dirfd and of its
 * subdirectories, JOBS_PROCS_DEPTH levels deep, *@budget directories at
 * most: the first non-root process in *@uid; *@root (NULL: not asked)
 * set when a process of root's was seen. A Slurm step's "slurm" cgroup is
 * not looked in: it holds slurmstepd (root's, in every job); its
 * "user/task_T" cgroups hold the job's own processes. Those of step_extern
 * are the user's when pam_slurm_adopt put them there, and slurmstepd's
 * root-owned "sleep" else: a non-root one names the user, root's do not.
 */
static void jobs_find_owner(struct jobs *j, int dirfd, int depth, int *budget,
			    long long *uid, bool *root)
{
	struct dirent *de;
	DIR *d;

	if (*budget <= 0)
		return;
	(*budget)--;
	jobs_procs_owner(j, dirfd, uid, root);
	if (*uid > 0 || depth >= JOBS_PROCS_DEPTH)
		return;
	d = jobs_opendir(dirfd);
	if (!d)
		return;
	while (*uid <= 0 && *budget > 0 && (de = readdir(d))) {
		int sub;

		if (de->d_name[0] == '.' || !strcmp(de->d_name, "slurm") ||
		    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		sub = openat(dirfd, de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		if (sub < 0)
			continue;
		jobs_find_owner(j, sub, depth + 1, budget, uid,
				strcmp(de->d_name, "step_extern") ? root
								  : NULL);
		close(sub);
	}
	closedir(d);
}

static int jobs_cmp(const void *a, const void *b)
{
	const struct jobs_job *x = a, *y = b;
	int c = strcmp(x->system, y->system);

	if (c)
		return c;
	c = (int)strlen(x->id) - (int)strlen(y->id); /* numeric order */
	return c ? c : strcmp(x->id, y->id);
}

/* The job as the last tick knew it, or NULL. */
static const struct jobs_job *jobs_known(const struct jobs *j,
					 const struct jobs_job *key)
{
	if (!j->nprev)
		return NULL;
	return bsearch(key, j->prev, j->nprev, sizeof(*key), jobs_cmp);
}

static struct jobs_job *jobs_add(struct jobs *j)
{
	if (j->ncur == j->capcur) {
		size_t cap = j->capcur ? j->capcur * 2 : 16;
		struct jobs_job *v = realloc(j->cur, cap * sizeof(*v));

		if (!v)
			return NULL;
		j->cur = v;
		j->capcur = cap;
	}
	memset(&j->cur[j->ncur], 0, sizeof(j->cur[0]));
	return &j->cur[j->ncur++];
}

/* The steps of job directory @fd: batch flag and highest step. */
static void jobs_steps(int fd, struct jobs_job *job)
{
	struct dirent *de;
	DIR *d = jobs_opendir(fd);

	if (!d)
		return;
	while ((de = readdir(d))) {
		long long step;

		if (jobs_parse_step(de->d_name, &step) < 0)
			continue;
		if (step == JOBS_STEP_BATCH)
			job->batch = true;
		else if (step > job->step)
			job->step = step;
	}
	closedir(d);
}

/*
 * One entry @name of directory @dirfd (@where, for logs) that may be a
 * job of kind @kind; @uid its owner from the path (-1: unknown).
 * Return: 0 (kept, or not a job), -1 with errno = ENOMEM.
 */
static int jobs_entry(struct jobs *j, int dirfd, const char *where,
		      const char *name, enum jobs_kind kind, long long uid,
		      size_t *n)
{
	struct jobs_job key, *job;
	const struct jobs_job *known;
	struct stat st;
	int fd, rc;

	memset(&key, 0, sizeof(key));
	if (kind == JOBS_FLUX) {
		key.system = "flux";
		rc = jobs_parse_flux_unit(name, key.id);
	} else {
		key.system = "slurm";
		rc = jobs_parse_slurm_job(name, key.id);
	}
	if (rc < 0) {
		if (errno == EINVAL)
			jobs_drop(j, JOBS_ODD_NAME, where, name);
		return 0;
	}
	if (fstatat(dirfd, name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return 0; /* gone since readdir: the job ended */
	if (!S_ISDIR(st.st_mode)) {
		jobs_drop(j, JOBS_ODD_ENTRY, where, name);
		return 0;
	}
	if (++*n > (size_t)j->max_jobs) {
		jobs_drop(j, JOBS_TOO_MANY, where, name);
		return 0;
	}
	job = jobs_add(j);
	if (!job) {
		errno = ENOMEM;
		return -1;
	}
	*job = key;
	job->uid = -1;
	job->step = JOBS_STEP_NONE;
	fd = openat(dirfd, name,
		    O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0) {
		char path[PATH_MAX];

		snprintf(path, sizeof(path), "%s/%s", where, name);
		jobs_dir_error(j, &j->job_err, path, errno, "unreadable_dir",
			       JOBS_LOST_JOB);
	} else if (kind != JOBS_FLUX) {
		jobs_steps(fd, job);
	}
	known = jobs_known(j, job);
	if (uid >= 0) {
		if (known && known->uid == uid)
			memcpy(job->user, known->user, sizeof(job->user));
		else
			jobs_user_name(job, uid);
		job->uid = uid;
	} else if (known && known->uid >= 0) {
		job->uid = known->uid;
		memcpy(job->user, known->user, sizeof(job->user));
	} else if (st.st_uid != 0) {
		jobs_user_name(job, st.st_uid);
	} else if (fd >= 0 && j->lookups < JOBS_LOOKUPS) {
		int budget = JOBS_PROCS_DIRS;
		long long owner = -1;
		bool root = false;

		j->lookups++;
		jobs_find_owner(j, fd, 0, &budget, &owner, &root);
		if (owner > 0) {
			jobs_user_name(job, owner);
		} else if (root && strncmp(name, "imp-", 4) != 0) {
			/*
			 * Only root's processes run the job: a job of root's
			 * (a Flux IMP, which is root's in every job, tells
			 * nothing). Not kept: a task between fork and
			 * setuid is root's too, so it is looked up again.
			 */
			jobs_user_name(job, 0);
			job->uid = -1;
		}
	}
	if (fd >= 0)
		close(fd);
	return 0;
}

/*
 * The entries of directory @fd (@where): jobs of @kind, or for Slurm v1
 * the uid_U directories that hold them.
 * Return: 0, or -1 with errno = ENOMEM.
 */
static int jobs_scan_dir(struct jobs *j, int fd, const char *where,
			 enum jobs_kind kind, long long uid, size_t *n,
			 int *err)
{
	struct dirent *de;
	DIR *d = jobs_opendir(fd);
	int rc = 0;

	if (!d) {
		jobs_dir_error(j, err, where, errno, "unreadable_dir",
			       JOBS_LOST_TREE);
		return 0;
	}
	while ((de = readdir(d))) {
		char sub[PATH_MAX];
		long long v;
		int sfd;

		if (de->d_name[0] == '.')
			continue;
		if (kind != JOBS_SLURM_V1 || uid >= 0) {
			if (jobs_entry(j, fd, where, de->d_name, kind, uid, n) <
			    0) {
				rc = -1;
				break;
			}
			continue;
		}
		/* Slurm v1: uid_U, then its jobs */
		if (jobs_parse_num(de->d_name, "uid_", &v) < 0) {
			if (errno == EINVAL)
				jobs_drop(j, JOBS_ODD_NAME, where, de->d_name);
			continue;
		}
		sfd = openat(fd, de->d_name,
			     O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		snprintf(sub, sizeof(sub), "%s/%s", where, de->d_name);
		if (sfd < 0) {
			if (errno == ENOTDIR || errno == ELOOP)
				jobs_drop(j, JOBS_ODD_ENTRY, where, de->d_name);
			else if (errno != ENOENT)
				jobs_dir_error(j, err, sub, errno,
					       "unreadable_dir",
					       JOBS_LOST_TREE);
			continue;
		}
		rc = jobs_scan_dir(j, sfd, sub, kind, v, n, err);
		close(sfd);
		if (rc < 0)
			break;
	}
	closedir(d);
	return rc;
}

/* Merge the entries of one job found in several v1 controllers. */
static void jobs_dedup(struct jobs *j)
{
	size_t out = 0;

	if (j->ncur > 1)
		qsort(j->cur, j->ncur, sizeof(j->cur[0]), jobs_cmp);
	for (size_t i = 0; i < j->ncur; i++) {
		struct jobs_job *a = &j->cur[out - (out > 0)];
		struct jobs_job *b = &j->cur[i];

		if (out && jobs_cmp(a, b) == 0) {
			a->batch |= b->batch;
			if (b->step > a->step)
				a->step = b->step;
			if (a->uid < 0 && b->uid >= 0) {
				a->uid = b->uid;
				memcpy(a->user, b->user, sizeof(a->user));
			}
			continue;
		}
		if (out != i)
			j->cur[out] = *b;
		out++;
	}
	j->ncur = out;
}

/* The system collector's tick: every hierarchy, into j->cur (sorted). */
static int jobs_scan(struct jobs *j)
{
	int root, rc = 0;

	j->ncur = 0;
	j->lookups = 0;
	root = open(j->cgroup_root, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (root < 0) {
		jobs_dir_error(j, &j->root_err, j->cgroup_root, errno,
			       "cgroup_root_error", JOBS_LOST_ALL);
		return 0;
	}
	if (j->root_err) {
		tally_log(j->inst, LOG_INFO, "%s: readable again",
			  j->cgroup_root);
		j->root_err = 0;
	}
	for (size_t t = 0; t < JOBS_NTREES && rc == 0; t++) {
		char where[PATH_MAX];
		size_t n = 0;
		int fd = openat(root, jobs_trees[t].path,
				O_RDONLY | O_DIRECTORY | O_CLOEXEC);

		snprintf(where, sizeof(where), "%s/%s", j->cgroup_root,
			 jobs_trees[t].path);
		j->err_now = false;
		if (fd < 0) {
			/* no such batch system on this node: not an error */
			if (errno != ENOENT && errno != ENOTDIR)
				jobs_dir_error(j, &j->tree_err[t], where, errno,
					       "unreadable_dir",
					       JOBS_LOST_TREE);
		} else {
			rc = jobs_scan_dir(j, fd, where, jobs_trees[t].kind, -1,
					   &n, &j->tree_err[t]);
			close(fd);
		}
		/* log the next error again once this one is gone */
		if (!j->err_now)
			j->tree_err[t] = 0;
	}
	close(root);
	jobs_dedup(j);
	return rc;
}

/*
 * Emitting
 */

static int jobs_emit(struct jobs *j, const struct jobs_job *job,
		     const char *partition, const char *nodes,
		     const char *jobstep, struct tally_batch *out)
{
	struct tally_labels *ls;
	char step[24];
	int rc;

	ls = tally_labels_newv("batchsystem", job->system, "jobid", job->id,
			       "user", job->user, NULL);
	if (!ls)
		return -1;
	rc = tally_batch_add_metric(out, TALLY_INFO, "tally_job_info",
				    jobs_info_help, ls, 1, 0);
	tally_labels_unref(ls);
	if (rc < 0 || !j->omnistat)
		return rc;
	if (!jobstep) {
		step[0] = '\0';
		if (job->step >= 0)
			snprintf(step, sizeof(step), "%lld", job->step);
		jobstep = step;
	}
	ls = tally_labels_newv("jobid", job->id, "user", job->user, "partition",
			       partition, "nodes", nodes, "batchflag",
			       job->batch ? "1" : "0", "jobstep", jobstep,
			       "type", job->system, NULL);
	if (!ls)
		return -1;
	rc = tally_batch_add_metric(out, TALLY_INFO, "rmsjob_info",
				    jobs_rms_help, ls, 1, 0);
	tally_labels_unref(ls);
	return rc;
}

/* The user collector's job, from its environment and own cgroup. */
static void jobs_self_init(struct jobs *j)
{
	const char *sys = tally_jobid_system(), *v;
	struct tally_readbuf rb = { 0 };
	char path[PATH_MAX];
	struct jobs_where w;
	int fd;

	snprintf(j->self.id, sizeof(j->self.id), "%s", tally_jobid());
	j->self.system = sys;
	j->self.step = JOBS_STEP_NONE;
	jobs_user_name(&j->self, getuid());
	if (!strcmp(sys, "slurm")) {
		v = getenv("SLURM_JOB_PARTITION");
		snprintf(j->partition, sizeof(j->partition), "%s", v ? v : "");
		v = getenv("SLURM_JOB_NUM_NODES");
		if (!v)
			v = getenv("SLURM_NNODES");
		snprintf(j->nodes, sizeof(j->nodes), "%s", v ? v : "");
		v = getenv("SLURM_STEP_ID");
		snprintf(j->jobstep, sizeof(j->jobstep), "%s", v ? v : "");
	} else if (!strcmp(sys, "flux")) {
		v = getenv("FLUX_JOB_NNODES");
		snprintf(j->nodes, sizeof(j->nodes), "%s", v ? v : "");
	}
	/* the step this collector runs in: "0::/system.slice/.../job_5/
	 * step_batch/user/task_0" (v2), "4:memory:/slurm/uid_1/..." (v1) */
	snprintf(path, sizeof(path), "%s/self/cgroup", j->proc);
	fd = tally_open_file(AT_FDCWD, path);
	if (fd < 0 || tally_read_whole(fd, &rb) < 0)
		goto out;
	for (char *line = rb.data, *nl; line && *line; line = nl) {
		char *p = strchr(line, ':');

		nl = strchr(line, '\n');
		if (nl)
			*nl++ = '\0';
		if (p)
			p = strchr(p + 1, ':');
		if (!p || jobs_parse_path(p + 1, &w) < 0 || !w.system ||
		    strcmp(w.jobid, j->self.id) != 0)
			continue;
		j->self.batch = w.step == JOBS_STEP_BATCH;
		if (!j->jobstep[0] && w.step >= 0)
			snprintf(j->jobstep, sizeof(j->jobstep), "%lld",
				 w.step);
		break;
	}
out:
	tally_readbuf_free(&rb);
	if (fd >= 0)
		close(fd);
}

/*
 * Whether the "proc" option names a procfs: PROC/self/cgroup, which only
 * a procfs has, is a regular file. When it is not, what it costs is
 * logged (again when the error changes) and counted on every read
 * (proc_error), as a bad cgroup_root is.
 */
static void jobs_proc_check(struct jobs *j)
{
	char path[PATH_MAX], esc[PATH_MAX];
	const char *why;
	struct stat st;
	int e = 0;

	snprintf(path, sizeof(path), "%s/self/cgroup", j->proc);
	if (stat(j->proc, &st) < 0)
		e = errno;
	else if (!S_ISDIR(st.st_mode))
		e = ENOTDIR;
	else if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
		e = -1; /* a directory, but not a procfs */
	if (!e) {
		if (j->proc_err)
			tally_log(j->inst, LOG_INFO, "proc %s: readable again",
				  j->proc);
		j->proc_err = 0;
		return;
	}
	tally_count_drop(j->inst, "proc_error", 1);
	if (j->proc_err == e)
		return;
	j->proc_err = e;
	why = e < 0 ? "not a procfs (no self/cgroup)" : strerror(e);
	tally_log_peer_text(esc, sizeof(esc), j->proc, strlen(j->proc));
	if (tally_user_mode())
		tally_log(j->inst, LOG_WARNING,
			  "proc %s: %s: the collector's own cgroup is not "
			  "read, so rmsjob_info's batchflag is 0 and its "
			  "jobstep comes from SLURM_STEP_ID alone (logged "
			  "once, counted as proc_error)",
			  esc, why);
	else
		tally_log(j->inst, LOG_WARNING,
			  "proc %s: %s: the user of a job whose directory is "
			  "root's is not found (user=\"\"; logged once, "
			  "counted as proc_error)",
			  esc, why);
}

static int jobs_read(struct tally_instance *inst, void *state,
		     struct tally_batch *out)
{
	struct jobs *j = state;
	struct jobs_job *swap;
	size_t cap;

	j->inst = inst;
	if (tally_user_mode()) {
		if (!tally_jobid()) {
			if (!j->outside_logged)
				tally_log(inst, LOG_INFO,
					  "not inside a batch job (no "
					  "SLURM_JOB_ID, FLUX_JOB_ID, "
					  "PBS_JOBID or LSB_JOBID): no "
					  "tally_job_info");
			j->outside_logged = true;
			return 0;
		}
		jobs_proc_check(j);
		return jobs_emit(j, &j->self, j->partition, j->nodes,
				 j->jobstep, out);
	}
	jobs_proc_check(j);
	if (jobs_scan(j) < 0)
		goto out_nomem;
	for (size_t i = 0; i < j->ncur; i++)
		if (jobs_emit(j, &j->cur[i], "", "", NULL, out) < 0)
			goto out_nomem;
	/* this tick's jobs are the next one's cache of users */
	swap = j->prev;
	j->prev = j->cur;
	j->cur = swap;
	cap = j->capprev;
	j->capprev = j->capcur;
	j->capcur = cap;
	j->nprev = j->ncur;
	j->ncur = 0;
	return 0;

out_nomem:
	tally_count_drop(inst, "nomem", 1);
	tally_log(inst, LOG_ERR, "out of memory listing the jobs");
	j->ncur = 0;
	errno = ENOMEM;
	return -1;
}

/* A user collector's job is known from the start: its labels once. */
static int jobs_init(struct tally_instance *inst, void *state)
{
	struct jobs *j = state;

	j->inst = inst;
	if (tally_user_mode() && tally_jobid())
		jobs_self_init(j);
	return 0;
}

static int jobs_check(struct tally_instance *inst, void *state)
{
	struct jobs *j = state;

	if (!j->cgroup_root || j->cgroup_root[0] != '/' || !j->proc ||
	    j->proc[0] != '/') {
		tally_log(inst, LOG_ERR,
			  "cgroup_root and proc must be absolute paths");
		errno = EINVAL;
		return -1;
	}
	return 0;
}

static void jobs_fini(struct tally_instance *inst, void *state)
{
	struct jobs *j = state;

	(void)inst;
	free(j->cur);
	free(j->prev);
}

static const struct tally_option jobs_options[] = {
	TALLY_OPT_STRING("cgroup_root", struct jobs, cgroup_root,
			 "/sys/fs/cgroup",
			 "where the cgroup hierarchies are mounted (system "
			 "collector)"),
	TALLY_OPT_STRING("proc", struct jobs, proc, "/proc",
			 "procfs, for the owners of a job's processes and the "
			 "collector's own cgroup"),
	TALLY_OPT_BOOL("omnistat", struct jobs, omnistat, "false",
		       "also export Omnistat's rmsjob_info{jobid,user,"
		       "partition,nodes,batchflag,jobstep,type}"),
	TALLY_OPT_INT("max_jobs", struct jobs, max_jobs, "4096", 1, 1000000,
		      "jobs reported per cgroup hierarchy and tick; more are "
		      "counted (too_many_jobs)"),
	TALLY_OPT_END,
};

static const struct tally_input_ops jobs_ops = {
	.check = jobs_check,
	.init = jobs_init,
	.read = jobs_read,
	.fini = jobs_fini,
	/* getpwuid_r() may ask LDAP: on a worker thread */
	.flags = TALLY_INPUT_BLOCKING,
};

TALLY_PLUGIN_INPUT(jobs,
		   "the batch jobs on the node (system collector: from the "
		   "cgroups of Slurm and Flux) or the job a user collector "
		   "serves: tally_job_info, Omnistat's rmsjob_info",
		   struct jobs, jobs_options, &jobs_ops);
