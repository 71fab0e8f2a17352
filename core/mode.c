/* SPDX-License-Identifier: MIT */
/*
 * core/mode.c - system or user collector: its directories, the port rule
 * of its listeners, what a wrapped command is told (tally/mode.h)
 *
 * A user collector runs inside a batch job next to (maybe) the node's system
 * collector and other jobs' collectors, so everything it creates lives in a
 * per-user, per-job directory that nobody else can write, and every port it
 * listens on is one the kernel picked: the collectors never clash. What
 * they did bind is written to RUNDIR/listen, and what the job's command
 * needs (the trace endpoint) is published here by the plugin that bound
 * it, so the core knows no plugin's sockets.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <tally/hash.h>
#include <tally/io.h>

#include "core-internal.h"

#ifndef TALLY_STATEDIR
#define TALLY_STATEDIR "/var/lib/tally"
#endif

extern char **environ;

static bool mode_user;
static char mode_rundir[PATH_MAX] = "/run/tally";
/* the built-in configuration's directory: RUNDIR, or cmd-PID's parent */
static char mode_confdir[PATH_MAX] = "/run/tally";
static bool mode_rundir_env;	/* TALLY_RUNTIME_DIR: taken as is */
static bool mode_rundir_own;	/* cmd-PID: nobody else's, removed at exit */
static int mode_lock_fd = -1;	/* RUNDIR/tallyd.lock, held while running */
static const char *mode_jobid; /* NULL or mode_jobid_buf */
static const char *mode_jobid_system;
static char mode_jobid_buf[TALLY_JOBID_MAX + 1];  /* tally_jobid_bound() */
static char mode_jobid_path[TALLY_JOBID_MAX + 1]; /* for paths */
/* where tallyd was started: relative output paths are taken from there */
static char mode_startdir[PATH_MAX];
/* global.output_dir and global.user_ports, as the start found them */
static char *mode_output_dir;
static bool mode_ports_configured;
static char mode_outdir[PATH_MAX];
static bool mode_outdir_long; /* it did not fit mode_outdir */
static bool mode_outdir_used;

/*
 * What instances published: listeners (RUNDIR/listen) and variables for
 * the wrapped command. A handful of entries, looked through in order.
 */
enum pub_kind { PUB_LISTEN, PUB_ENV };

struct pub {
	struct tally_instance *inst;
	enum pub_kind kind;
	char *name; /* PUB_ENV: the variable; PUB_LISTEN: the instance */
	char *value;
};

static struct pub *pubs;
static size_t npubs;
static bool listen_written; /* RUNDIR/listen is ours to remove */

/* Launcher variables that carry the batch job id, first set wins, and
 * the batch system each one names (tally_jobid_system()). */
static const char *const jobid_vars[] = { "SLURM_JOB_ID", "FLUX_JOB_ID",
					  "PBS_JOBID", "LSB_JOBID", NULL };
static const char *const jobid_systems[] = { "slurm", "flux", "pbs", "lsf" };

static _Atomic int64_t mode_command_end_ns;

int64_t tally_command_end_ns(void)
{
	return mode_command_end_ns;
}

void tally_mode_command_ended(int64_t real_ns)
{
	mode_command_end_ns = real_ns;
}

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

const char *tally_jobid_system(void)
{
	return mode_jobid_system;
}

/* mkdir -p with @mode for the directories it creates. */
static int mkdirs(const char *path, mode_t mode)
{
	char tmp[PATH_MAX];

	if (snprintf(tmp, sizeof(tmp), "%s", path) >= (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
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

/*
 * The job id of variable @var, bounded once here (tally_jobid_bound()):
 * every label, directory and log line then shows the same id.
 */
static void mode_jobid_set(const char *var, const char *v)
{
	size_t len = strlen(v);

	tally_jobid_bound(v, len, mode_jobid_buf);
	mode_jobid = mode_jobid_buf;
	tally_jobid_path(mode_jobid, mode_jobid_path, sizeof(mode_jobid_path));
	if (len > TALLY_JOBID_MAX) {
		char esc[TALLY_JOBID_MAX * 4 + 1];

		tally_log_peer_text(esc, sizeof(esc), mode_jobid,
				    strlen(mode_jobid));
		tally_log(NULL, LOG_WARNING,
			  "%s is %zu bytes long, more than the %d a job id "
			  "may have: the job is \"%s\" (its start and a hash "
			  "of the whole) in labels, directories and logs",
			  var, len, TALLY_JOBID_MAX, esc);
	}
}

int tally_mode_setup(bool user)
{
	const char *xdg = getenv("XDG_RUNTIME_DIR");
	const char *env = getenv("TALLY_RUNTIME_DIR");

	mode_user = user;
	mode_jobid = NULL;
	mode_jobid_system = NULL;
	snprintf(mode_rundir, sizeof(mode_rundir), "%s", "/run/tally");
	if (user) {
		for (size_t i = 0; jobid_vars[i]; i++) {
			const char *v = getenv(jobid_vars[i]);

			if (v && *v) {
				mode_jobid_set(jobid_vars[i], v);
				mode_jobid_system = jobid_systems[i];
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
				 "/job-%s", mode_jobid_path);
		}
	}
	/* tests and unusual sites can put it anywhere */
	mode_rundir_env = env && *env;
	if (mode_rundir_env)
		snprintf(mode_rundir, sizeof(mode_rundir), "%s", env);
	mode_rundir_own = false;
	snprintf(mode_confdir, sizeof(mode_confdir), "%s", mode_rundir);
	/* before a detach moves to /: a deleted one leaves the runtime dir */
	if (!getcwd(mode_startdir, sizeof(mode_startdir)))
		snprintf(mode_startdir, sizeof(mode_startdir), "%s",
			 mode_rundir);
	return 0;
}

int tally_mode_configure(const struct tally_conf *conf)
{
	char *od = NULL;

	if (conf->output_dir) {
		od = strdup(conf->output_dir);
		if (!od)
			return -1;
	}
	free(mode_output_dir);
	mode_output_dir = od;
	mode_ports_configured = conf->user_ports_configured;
	return 0;
}

void tally_mode_wrap(void)
{
	size_t len = strlen(mode_rundir);

	/*
	 * Outside a batch job, two commands of one user would share one
	 * directory: the second collector's socket and listen file would
	 * replace the first's, and its command's traces would go to the
	 * first collector. Each wrapped command gets a directory of its own.
	 */
	if (!mode_user || mode_jobid || mode_rundir_env || mode_rundir_own)
		return;
	snprintf(mode_rundir + len, sizeof(mode_rundir) - len, "/cmd-%ld",
		 (long)getpid());
	mode_rundir_own = true;
}

const char *tally_mode_conf_dir(void)
{
	return mode_confdir;
}

/*
 * Open and lock pid file @path (flock, the file stays while the lock is
 * held) and write our pid into it. A file nobody holds is a stale one, of
 * a collector that died: taken over (@stale gets its pid, or ""). Held by
 * a running collector: -1 with errno EWOULDBLOCK and its pid in @pid.
 * Return: the descriptor, or -1 with errno.
 */
static int pid_file_lock(const char *path, char *pid, size_t size)
{
	ssize_t n;
	int fd, e;

	pid[0] = '\0';
	fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (fd < 0)
		return -1;
	n = pread(fd, pid, size - 1, 0);
	pid[n > 0 ? strcspn(pid, "\n") : 0] = '\0';
	if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
		e = errno;
		/* it may have been written after our read */
		n = pread(fd, pid, size - 1, 0);
		pid[n > 0 ? strcspn(pid, "\n") : 0] = '\0';
		close(fd);
		errno = e;
		return -1;
	}
	if (ftruncate(fd, 0) < 0 || dprintf(fd, "%ld\n", (long)getpid()) < 0) {
		e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	/* tallyd removes it at exit, once it runs as global.user */
	tally_priv_chown(path, fd);
	return fd;
}

int tally_runtime_dir_lock(void)
{
	char path[PATH_MAX], pid[24];
	int fd, e;

	if (mode_lock_fd >= 0)
		return 0;
	if (snprintf(path, sizeof(path), "%s/tallyd.lock", mode_rundir) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		goto out_log;
	}
	fd = pid_file_lock(path, pid, sizeof(pid));
	if (fd < 0 && !mode_user) {
		/*
		 * A system collector starts anyway (its sockets may differ),
		 * but the directory's files are the holder's: this one
		 * neither writes nor removes RUNDIR/listen.
		 */
		if (errno == EWOULDBLOCK)
			tally_log(NULL, LOG_NOTICE,
				  "%s is another collector's (tallyd pid %s "
				  "holds %s): this one leaves its listen file "
				  "alone",
				  mode_rundir, *pid ? pid : "?", path);
		else
			tally_log(NULL, LOG_NOTICE,
				  "cannot lock %s: %s: this collector leaves "
				  "%s/listen alone",
				  path, strerror(errno), mode_rundir);
		return 0;
	}
	if (fd < 0) {
		char job[TALLY_JOBID_MAX * 4 + 1]; /* an id from outside */

		if (errno != EWOULDBLOCK)
			goto out_log;
		tally_log_peer_text(job, sizeof(job),
				    mode_jobid ? mode_jobid : "",
				    mode_jobid ? strlen(mode_jobid) : 0);
		tally_log(NULL, LOG_ERR,
			  "another collector%s%s (tallyd pid %s) runs in %s: "
			  "a second one would take over its sockets and "
			  "listen file, so this one does not start (its "
			  "applications trace to that one; "
			  "TALLY_RUNTIME_DIR=DIR runs a collector elsewhere)",
			  mode_jobid ? " of job " : "",
			  job, *pid ? pid : "?",
			  mode_rundir);
		errno = EBUSY;
		return -1;
	}
	mode_lock_fd = fd;
	return 0;
out_log:
	e = errno;
	tally_log(NULL, LOG_ERR, "cannot lock %s: %s", path, strerror(e));
	errno = e;
	return -1;
}

static int mode_pid_fd = -1;
static char mode_pid_path[PATH_MAX];

int tally_pid_file_create(const char *path)
{
	char pid[24];
	int fd, e;

	if (mode_pid_fd >= 0) {
		errno = EALREADY;
		return -1;
	}
	if (snprintf(mode_pid_path, sizeof(mode_pid_path), "%s", path) >=
	    (int)sizeof(mode_pid_path)) {
		errno = ENAMETOOLONG;
		goto out_log;
	}
	fd = pid_file_lock(path, pid, sizeof(pid));
	if (fd < 0) {
		if (errno != EWOULDBLOCK)
			goto out_log;
		tally_log(NULL, LOG_ERR,
			  "another %s collector runs (tallyd pid %s holds %s): "
			  "not starting a second one (stop it first, or give "
			  "this one another --pid-file and other sockets)",
			  mode_user ? "user" : "system", *pid ? pid : "?",
			  path);
		errno = EBUSY;
		return -1;
	}
	if (*pid && strtol(pid, NULL, 10) != (long)getpid())
		tally_log(NULL, LOG_NOTICE,
			  "pid file %s was left by tallyd pid %s, which is "
			  "gone: taken over",
			  path, pid);
	mode_pid_fd = fd;
	return 0;
out_log:
	e = errno;
	tally_log(NULL, LOG_ERR,
		  "cannot create the pid file %s: %s (give a writable "
		  "directory with --pid-file)",
		  path, strerror(e));
	mode_pid_path[0] = '\0';
	errno = e;
	return -1;
}

/* Remove the pid file if we hold it (a successor may hold a new one). */
static void pid_file_remove(void)
{
	struct stat a, b;

	if (mode_pid_fd < 0)
		return;
	if (fstat(mode_pid_fd, &a) == 0 && stat(mode_pid_path, &b) == 0 &&
	    a.st_dev == b.st_dev && a.st_ino == b.st_ino &&
	    unlink(mode_pid_path) < 0) {
		int e = errno;

		/*
		 * A directory tallyd cannot write once it dropped root: no
		 * descriptor helps, unlink needs that right when it runs.
		 * Emptied, it names no process; say so.
		 */
		tally_log(NULL, LOG_WARNING,
			  "cannot remove the pid file %s: %s (%s; give "
			  "--pid-file a directory global.user may write, or "
			  "remove it by hand)",
			  mode_pid_path, strerror(e),
			  ftruncate(mode_pid_fd, 0) == 0 ? "emptied"
							 : "left as it is");
	}
	close(mode_pid_fd);
	mode_pid_fd = -1;
}

/* Create the runtime dir when something needs it (not for --check-config). */
int tally_runtime_dir_create(void)
{
	if (mkdirs(mode_rundir, mode_user ? 0700 : 0755) < 0) {
		tally_log(NULL, LOG_ERR,
			  "cannot create runtime directory %s: %s", mode_rundir,
			  strerror(errno));
		return -1;
	}
	return 0;
}

/* Output directory */

const char *tally_output_dir(void)
{
	const char *od = mode_output_dir;
	size_t n = sizeof(mode_outdir);
	int len;

	if (od && *od == '/')
		len = snprintf(mode_outdir, n, "%s", od);
	else if (od)
		len = snprintf(mode_outdir, n, "%s/%s", mode_startdir, od);
	else if (!mode_user)
		len = snprintf(mode_outdir, n, "%s", TALLY_STATEDIR);
	else if (mode_jobid)
		len = snprintf(mode_outdir, n, "%s/tally-%s", mode_startdir,
			       mode_jobid_path);
	else /* the pid of the collector, also after a detach */
		len = snprintf(mode_outdir, n, "%s/tally-%ld", mode_startdir,
			       (long)getpid());
	/* too long for any system call: make that the one to fail */
	mode_outdir_long = len >= (int)n;
	return mode_outdir;
}

char *tally_output_path(struct tally_instance *inst, const char *path)
{
	const char *dir;
	size_t len;
	char *out;

	if (!path || !*path) {
		errno = EINVAL;
		return NULL;
	}
	if (*path == '/')
		return strdup(path);
	dir = tally_output_dir();
	len = strlen(dir) + strlen(path) + 2;
	if (mode_outdir_long || len > PATH_MAX) {
		tally_log(inst, LOG_ERR, "%s/%s: path too long", dir, path);
		errno = ENAMETOOLONG;
		return NULL;
	}
	if (mkdirs(dir, 0777) < 0) {
		int e = errno;

		tally_log(inst, LOG_ERR,
			  "cannot create the output directory %s: %s (set "
			  "global.output_dir)",
			  dir, strerror(e));
		errno = e;
		return NULL;
	}
	out = malloc(len);
	if (!out)
		return NULL;
	snprintf(out, len, "%s/%s", dir, path);
	mode_outdir_used = true;
	return out;
}

bool tally_output_dir_used(void)
{
	return mode_outdir_used;
}

int tally_output_dir_check(char *why, size_t size)
{
	const char *dir = tally_output_dir();
	char tmp[PATH_MAX];
	struct stat st;

	if (mode_outdir_long) {
		snprintf(why, size, "path too long");
		errno = ENAMETOOLONG;
		return -1;
	}
	/* the deepest part that exists must be a directory we can write */
	snprintf(tmp, sizeof(tmp), "%s", dir);
	while (stat(tmp, &st) < 0) {
		char *slash = strrchr(tmp, '/');

		if (errno != ENOENT && errno != ENOTDIR) {
			snprintf(why, size, "%s: %s", tmp, strerror(errno));
			return -1;
		}
		if (slash == tmp)
			slash++;
		*slash = '\0';
	}
	if (!S_ISDIR(st.st_mode)) {
		snprintf(why, size, "%s is not a directory", tmp);
		errno = ENOTDIR;
		return -1;
	}
	if (access(tmp, W_OK | X_OK) < 0) {
		snprintf(why, size, "%s: %s", tmp, strerror(errno));
		return -1;
	}
	return 0;
}

/* Publications */

static struct pub *pub_add(struct tally_instance *inst, enum pub_kind kind,
			   const char *name, const char *value)
{
	struct pub *v, *p;
	char *n = strdup(name), *val = strdup(value);

	v = n && val ? realloc(pubs, (npubs + 1) * sizeof(*v)) : NULL;
	if (!v) {
		free(n);
		free(val);
		errno = ENOMEM;
		return NULL;
	}
	pubs = v;
	p = &pubs[npubs++];
	*p = (struct pub){
		.inst = inst, .kind = kind, .name = n, .value = val
	};
	return p;
}

/* Write RUNDIR/listen from the entries, whole. */
static int listen_write(void)
{
	char path[PATH_MAX];
	size_t n = 0, len = 0;
	char *text;
	FILE *f;
	int e;

	if (snprintf(path, sizeof(path), "%s/listen", mode_rundir) >=
	    (int)sizeof(path)) {
		errno = ENAMETOOLONG;
		goto out_err;
	}
	if (mode_lock_fd < 0)
		return 0; /* the directory is another collector's */
	for (size_t i = 0; i < npubs; i++)
		n += pubs[i].kind == PUB_LISTEN;
	if (!n) {
		if (listen_written)
			unlink(path);
		listen_written = false;
		return 0;
	}
	f = open_memstream(&text, &len);
	if (!f)
		goto out_err;
	for (size_t i = 0; i < npubs; i++) {
		if (pubs[i].kind == PUB_LISTEN)
			fprintf(f, "%s %s\n", pubs[i].name, pubs[i].value);
	}
	if (fclose(f) != 0) {
		free(text);
		errno = ENOMEM;
		goto out_err;
	}
	e = tally_write_file(path, text, len);
	free(text);
	if (e < 0)
		goto out_err;
	listen_written = true;
	return 0;
out_err:
	e = errno;
	tally_log(NULL, LOG_WARNING, "cannot write %s: %s", path, strerror(e));
	errno = e;
	return -1;
}

unsigned tally_listen_port(struct tally_instance *inst, unsigned port)
{
	if (!mode_user || !port || mode_ports_configured)
		return port;
	tally_log(inst, LOG_INFO,
		  "port %u: a user collector listens on a port the kernel "
		  "chooses, so that it never clashes with the node's "
		  "collector or another job's (global.user_ports = "
		  "\"configured\" binds %u); the address is in %s/listen",
		  port, port, mode_rundir);
	return 0;
}

int tally_listen_publish(struct tally_instance *inst, const char *addr)
{
	struct tally_core *core = inst->core;

	if (!addr) {
		errno = EINVAL;
		return -1;
	}
	if (!pub_add(inst, PUB_LISTEN, inst->name, addr))
		return -1;
	/* --once creates no runtime directory: nobody could connect */
	if (core && core->once)
		return 0;
	return listen_write();
}

static bool env_name_ok(const char *s)
{
	if (!s || !(*s == '_' || (*s >= 'A' && *s <= 'Z') ||
		    (*s >= 'a' && *s <= 'z')))
		return false;
	for (s++; *s; s++) {
		if (!(*s == '_' || (*s >= 'A' && *s <= 'Z') ||
		      (*s >= 'a' && *s <= 'z') || (*s >= '0' && *s <= '9')))
			return false;
	}
	return true;
}

int tally_instance_export_env(struct tally_instance *inst, const char *name,
			      const char *value)
{
	if (!env_name_ok(name) || !value) {
		errno = EINVAL;
		return -1;
	}
	for (size_t i = 0; i < npubs; i++) {
		struct pub *p = &pubs[i];
		char *v;

		if (p->kind != PUB_ENV || strcmp(p->name, name))
			continue;
		if (p->inst != inst) {
			tally_log(inst, LOG_NOTICE,
				  "%s=%s not exported: %s exports %s=%s", name,
				  value, p->inst->label, name, p->value);
			errno = EEXIST;
			return -1;
		}
		v = strdup(value);
		if (!v)
			return -1;
		free(p->value);
		p->value = v;
		return 0;
	}
	return pub_add(inst, PUB_ENV, name, value) ? 0 : -1;
}

void tally_mode_forget(struct tally_instance *inst)
{
	size_t k = 0;
	bool listen = false;

	for (size_t i = 0; i < npubs; i++) {
		if (pubs[i].inst != inst) {
			pubs[k++] = pubs[i];
			continue;
		}
		listen |= pubs[i].kind == PUB_LISTEN;
		free(pubs[i].name);
		free(pubs[i].value);
	}
	npubs = k;
	if (listen && listen_written)
		listen_write();
	if (!npubs) {
		free(pubs);
		pubs = NULL;
	}
}

/* Remove cmd-PID: the files this collector left (lock files), then it. */
static void rundir_remove(void)
{
	DIR *d = opendir(mode_rundir);
	struct dirent *e;

	while (d && (e = readdir(d))) {
		if (e->d_type != DT_DIR)
			unlinkat(dirfd(d), e->d_name, 0);
	}
	if (d)
		closedir(d);
	rmdir(mode_rundir);
}

void tally_mode_cleanup(void)
{
	char path[PATH_MAX];

	if (listen_written && snprintf(path, sizeof(path), "%s/listen",
				       mode_rundir) < (int)sizeof(path))
		unlink(path);
	listen_written = false;
	/*
	 * A shared directory's lock files stay: removing one while another
	 * collector opens it would let a third one lock a new file. cmd-PID
	 * is this collector's alone, and goes whole.
	 */
	if (mode_rundir_own)
		rundir_remove();
	if (mode_lock_fd >= 0)
		close(mode_lock_fd);
	mode_lock_fd = -1;
	pid_file_remove();
	free(mode_output_dir);
	mode_output_dir = NULL;
}

/* The wrapped command's terminal */

int tally_mode_tty(void)
{
	for (int fd = 0; fd <= 2; fd++) {
		if (isatty(fd) && tcgetpgrp(fd) == getpgrp())
			return fd;
	}
	return -1;
}

void tally_mode_tty_give(int fd, pid_t pgrp)
{
	sigset_t ttou, old;

	if (fd < 0)
		return;
	sigemptyset(&ttou);
	sigaddset(&ttou, SIGTTOU);
	sigprocmask(SIG_BLOCK, &ttou, &old);
	tcsetpgrp(fd, pgrp);
	sigprocmask(SIG_SETMASK, &old, NULL);
}

/* The wrapped command's environment */

const char *tally_mode_trace_id(char *buf, size_t size)
{
	if (mode_jobid)
		return mode_jobid;
	snprintf(buf, size, "tallyd-%ld", (long)getpid());
	return buf;
}

/* Whether "NAME=..." entry @e names @name. */
static bool env_is(const char *e, const char *name)
{
	size_t n = strlen(name);

	return !strncmp(e, name, n) && e[n] == '=';
}

/* Whether an exported variable replaces environ's entry @e. */
static bool env_replaced(const char *e)
{
	for (size_t i = 0; i < npubs; i++) {
		if (pubs[i].kind == PUB_ENV && env_is(e, pubs[i].name))
			return true;
	}
	return false;
}

static char *env_pair(const char *name, const char *value)
{
	size_t len = strlen(name) + strlen(value) + 2;
	char *s = malloc(len);

	if (s)
		snprintf(s, len, "%s=%s", name, value);
	return s;
}

char **tally_mode_env(void)
{
	const char *tid = getenv("TALLY_TRACE_ID");
	bool set_tid = !tid || !*tid;
	char idbuf[32];
	size_t n = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	env = calloc(n + npubs + 2, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		if (env_replaced(environ[i]) ||
		    (set_tid && env_is(environ[i], "TALLY_TRACE_ID")))
			continue;
		if (!(env[k++] = strdup(environ[i])))
			goto out_free;
	}
	for (size_t i = 0; i < npubs; i++) {
		if (pubs[i].kind == PUB_ENV &&
		    !(env[k++] = env_pair(pubs[i].name, pubs[i].value)))
			goto out_free;
	}
	/*
	 * One trace for the whole command: without it, ranks started outside
	 * a batch system would each default to their own "pid-N". A trace id
	 * the user set is theirs to keep.
	 */
	if (set_tid &&
	    !(env[k++] = env_pair("TALLY_TRACE_ID",
				  tally_mode_trace_id(idbuf, sizeof(idbuf)))))
		goto out_free;
	return env;
out_free:
	tally_mode_env_free(env);
	errno = ENOMEM;
	return NULL;
}

void tally_mode_env_free(char **env)
{
	if (!env)
		return;
	for (size_t i = 0; env[i]; i++)
		free(env[i]);
	free(env);
}
