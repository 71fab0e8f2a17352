/* SPDX-License-Identifier: MIT */
/*
 * core/tallyd.c - the tallyd command line
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <tally/io.h>

#include "core-internal.h"
#include "core/builtin-conf.h"

#ifndef TALLY_SYSCONFDIR
#define TALLY_SYSCONFDIR "/etc/tally"
#endif

enum {
	OPT_CHECK = 256,
	OPT_LIST,
	OPT_DESCRIBE,
	OPT_PLUGIN_DIR,
	OPT_ONCE,
	OPT_VERSION,
	OPT_PID_FILE,
};

static const struct option tallyd_longopts[] = {
	{ "config", required_argument, NULL, 'c' },
	{ "user", no_argument, NULL, 'u' },
	{ "foreground", no_argument, NULL, 'f' },
	{ "check-config", no_argument, NULL, OPT_CHECK },
	{ "list-plugins", no_argument, NULL, OPT_LIST },
	{ "describe", required_argument, NULL, OPT_DESCRIBE },
	{ "plugin-dir", required_argument, NULL, OPT_PLUGIN_DIR },
	{ "once", no_argument, NULL, OPT_ONCE },
	{ "pid-file", required_argument, NULL, OPT_PID_FILE },
	{ "version", no_argument, NULL, OPT_VERSION },
	{ "help", no_argument, NULL, 'h' },
	{ NULL, 0, NULL, 0 },
};

static void tallyd_usage(FILE *out)
{
	fprintf(out,
		"Usage: tallyd [OPTION]...\n"
		"       tallyd --user [OPTION]... -- COMMAND [ARG]...\n"
		"Collect host, GPU and application-trace telemetry through "
		"configured pipelines.\n\n"
		"  -c, --config=PATH      configuration file (its conf.d is "
		"read too) or a\n"
		"                         directory of *.conf files\n"
		"                         (default: %s/tally.conf, else its\n"
		"                         conf.d; with --user:\n"
		"                         ~/.config/tally/tally.conf, else\n"
		"                         %s/user.conf, else\n"
		"                         its conf.d, else built in)\n"
		"  -u, --user             run as a user (per-job) collector; "
		"with -- COMMAND,\n"
		"                         run COMMAND with "
		"TALLY_TRACE_ENDPOINT set, then\n"
		"                         write the final files, flush and "
		"exit with its\n"
		"                         status\n"
		"  -f, --foreground       do not detach; log to stderr\n"
		"      --check-config     validate the configuration and exit\n"
		"      --once             run every input once, flush every "
		"output, exit\n"
		"      --list-plugins     list the plugins found and exit\n"
		"      --describe=NAME    document plugin NAME's options and "
		"exit\n"
		"      --plugin-dir=DIR   search DIR for plugins first "
		"(repeatable)\n"
		"      --pid-file=PATH    write and lock a pid file (default "
		"when detached:\n"
		"                         RUNDIR/tallyd.pid)\n"
		"      --version          print the version and exit\n"
		"  -h, --help             print this help and exit\n\n"
		"Plugin search path: --plugin-dir, TALLY_PLUGIN_PATH, "
		"global.plugin_path, %s.\n"
		"See tallyd(8) and tally.conf(5).\n",
		TALLY_SYSCONFDIR, TALLY_SYSCONFDIR, TALLY_PLUGINDIR);
}

/*
 * Detach, but let the parent exit only once the daemon is up, with its
 * status: a daemon that fails to start (a port taken, a bad endpoint) must
 * fail the command that started it, and say why on its terminal. The
 * parent waits on a pipe the daemon writes one byte to when ready; an
 * early exit of the daemon closes it with nothing written.
 */
static int tallyd_detach(int *ready_fd)
{
	int p[2];
	pid_t pid;
	char st = 1;

	if (pipe(p) < 0)
		return -1;
	pid = fork();
	if (pid < 0) {
		close(p[0]);
		close(p[1]);
		return -1;
	}
	if (pid > 0) {
		close(p[1]);
		while (read(p[0], &st, 1) < 0 && errno == EINTR)
			;
		_exit(st == 0 ? 0 : 1);
	}
	close(p[0]);
	if (setsid() < 0 || chdir("/") < 0)
		return -1;
	*ready_fd = p[1];
	return 0;
}

/*
 * Where logs go: global.log, else stderr in the foreground and syslog once
 * detached. Without a syslog daemon (no /dev/log: a container, a minimal
 * node), syslog() would drop every line silently: stay on stderr and say
 * so there.
 */
static enum tally_log_target tallyd_log_start(const struct tally_conf *conf,
					      bool detached)
{
	enum tally_log_target t = TALLY_LOG_STDERR;

	if (conf->log ? !strcmp(conf->log, "syslog") : detached)
		t = TALLY_LOG_SYSLOG;
	if (t == TALLY_LOG_SYSLOG && !tally_log_syslog_available()) {
		tally_log(NULL, LOG_WARNING,
			  "no syslog daemon at %s: logging to standard error "
			  "instead",
			  _PATH_LOG);
		t = TALLY_LOG_STDERR;
	}
	tally_log_setup(t, conf->log_level
				   ? tally_log_level_parse(conf->log_level)
				   : LOG_INFO);
	return t;
}

static void tallyd_ready(int fd, const struct tally_conf *conf)
{
	int null = open("/dev/null", O_RDWR);
	char ok = 0;
	bool to_stderr = tallyd_log_start(conf, true) == TALLY_LOG_STDERR;

	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		if (!to_stderr)
			dup2(null, 2);
		if (null > 2)
			close(null);
	}
	if (write(fd, &ok, 1) < 0)
		tally_log(NULL, LOG_WARNING, "cannot notify the parent: %s",
			  strerror(errno));
	close(fd);
}

/*
 * Write the built-in configuration (the shipped conf.d, compiled in) as
 * directory @dir, unless @dir exists: a user's edits and added files stay,
 * also under a running collector. Written as DIR.tmp-PID and renamed, so
 * that two collectors starting at once never read half of it.
 * Return: 1 written, 0 it existed already, -1 with errno.
 */
static int builtin_conf_write(const char *dir)
{
	char tmp[PATH_MAX], path[PATH_MAX];
	int ret = -1, err;
	size_t i;

	if (access(dir, F_OK) == 0)
		return 0;
	if (snprintf(tmp, sizeof(tmp), "%s.tmp-%ld", dir, (long)getpid()) >=
	    (int)sizeof(tmp)) {
		errno = ENAMETOOLONG;
		return -1;
	}
	if (mkdir(tmp, 0700) < 0)
		return -1;
	for (i = 0; tally_builtin_conf[i].name; i++) {
		if (snprintf(path, sizeof(path), "%s/%s", tmp,
			     tally_builtin_conf[i].name) >= (int)sizeof(path)) {
			errno = ENAMETOOLONG;
			goto out_remove;
		}
		if (tally_write_file(path, tally_builtin_conf[i].text,
				     strlen(tally_builtin_conf[i].text)) < 0)
			goto out_remove;
	}
	if (rename(tmp, dir) == 0)
		return 1;
	if (errno == EEXIST || errno == ENOTEMPTY)
		ret = 0; /* another collector starting wrote it first */
out_remove:
	err = errno;
	while (i-- > 0) {
		if (snprintf(path, sizeof(path), "%s/%s", tmp,
			     tally_builtin_conf[i].name) < (int)sizeof(path))
			unlink(path);
	}
	rmdir(tmp);
	errno = err;
	return ret;
}

/*
 * A user collector's configuration when -c does not give one: the user's
 * own, else the site's for user collectors (SYSCONFDIR/user.conf, none is
 * installed), else the installed conf.d (the port rule keeps it off the
 * system collector's ports), else the built-in one, the shipped conf.d
 * compiled in: written to RUNDIR/conf.d, where SIGHUP reads it again and
 * where a user finds a configuration to start theirs from.
 * Return: the path, in @buf or static; NULL with errno (logged).
 */
static const char *user_config(char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");
	char mine[PATH_MAX];
	int written;

	if (xdg && *xdg)
		snprintf(mine, sizeof(mine), "%s/tally/tally.conf", xdg);
	else
		snprintf(mine, sizeof(mine), "%s/.config/tally/tally.conf",
			 home ? home : ".");
	if (access(mine, F_OK) == 0) {
		snprintf(buf, len, "%s", mine);
		return buf;
	}
	if (access(TALLY_SYSCONFDIR "/user.conf", F_OK) == 0)
		return TALLY_SYSCONFDIR "/user.conf";
	if (access(TALLY_SYSCONFDIR "/conf.d", F_OK) == 0)
		return TALLY_SYSCONFDIR "/conf.d";
	snprintf(buf, len, "%s/conf.d", tally_mode_conf_dir());
	if (tally_runtime_dir_create() < 0)
		return NULL;
	written = builtin_conf_write(buf);
	if (written < 0) {
		tally_log(NULL, LOG_ERR,
			  "cannot write the built-in configuration to %s: %s",
			  buf, strerror(errno));
		return NULL;
	}
	if (!written) {
		tally_log(NULL, LOG_NOTICE,
			  "no %s, %s/user.conf nor %s/conf.d: running %s, "
			  "written by an earlier start and kept as it is "
			  "(remove it to get the built-in configuration again)",
			  mine, TALLY_SYSCONFDIR, TALLY_SYSCONFDIR, buf);
		return buf;
	}
	tally_log(NULL, LOG_NOTICE,
		  "no %s, %s/user.conf nor %s/conf.d: running the built-in "
		  "configuration (the shipped conf.d), written to %s to start "
		  "yours from",
		  mine, TALLY_SYSCONFDIR, TALLY_SYSCONFDIR, buf);
	return buf;
}

static const char *default_config(bool user, char *buf, size_t len)
{
	/* no main file: the conf.d directory alone is a configuration */
	if (!user)
		return access(TALLY_SYSCONFDIR "/tally.conf", F_OK) == 0
			       ? TALLY_SYSCONFDIR "/tally.conf"
			       : TALLY_SYSCONFDIR "/conf.d";
	return user_config(buf, len);
}

/*
 * A telemetry problem never costs a user their job: when the collector
 * cannot start at all (a configuration error), tallyd --user -- CMD still
 * runs CMD, as itself, and says so. Return: only on failure, 127.
 */
static int tallyd_exec_bare(char **command)
{
	fprintf(stderr,
		"tallyd: error: the collector did not start (see above): "
		"running %s without it\n",
		command[0]);
	execvp(command[0], command);
	fprintf(stderr, "tallyd: cannot run %s: %s\n", command[0],
		strerror(errno));
	return 127;
}

static volatile pid_t orphan_pid;

static void pass_signal(int sig)
{
	/* its process group, as the collector did (tally_core_spawn()) */
	if (orphan_pid > 0 && kill(-orphan_pid, sig) < 0)
		kill(orphan_pid, sig);
}

/*
 * The collector stopped (a reload that could not go back) while the job's
 * command runs: wait for the command anyway, passing signals on as
 * before, and take its status. Return: the status as a shell reports it.
 */
static int tallyd_wait_command(pid_t pid, int tty)
{
	static const int sigs[] = { SIGTERM, SIGINT,  SIGQUIT,
				    SIGUSR1, SIGUSR2, SIGHUP };
	struct sigaction sa = { .sa_handler = pass_signal };
	int status;

	tally_log(NULL, LOG_ERR,
		  "the collector stopped: waiting for the command without it");
	orphan_pid = pid;
	for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
		sigaction(sigs[i], &sa, NULL);
	while (waitpid(pid, &status, 0) < 0) {
		if (errno != EINTR)
			return 1;
	}
	tally_mode_tty_give(tty, getpgrp());
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int main(int argc, char **argv)
{
	bool user = false, foreground = false, check = false, once = false;
	bool list = false;
	const char *config = NULL, *describe = NULL, *env, *pid_file = NULL;
	char pidbuf[PATH_MAX];
	char **command = NULL;
	bool spawned = false;
	int ready_fd = -1;
	char cfgbuf[PATH_MAX], cfgabs[PATH_MAX] = "";
	struct tally_loader *ld;
	struct tally_conf *conf = NULL;
	struct tally_core *core = NULL;
	unsigned nofile[2];
	int opt, ret = 1, nofile_err;
	bool interrupted = false;

	/*
	 * Any local user can connect to the system collector's trace socket:
	 * take every descriptor the hard limit allows (the command tallyd
	 * runs gets the limit back), and never die when they run out
	 * (tally/fdlimit.h).
	 */
	nofile_err = tally_fd_setup(&nofile[0], &nofile[1]) < 0 ? errno : 0;
	ld = tally_loader_new();
	if (!ld) {
		fprintf(stderr, "tallyd: cannot initialise libltdl\n");
		return 1;
	}
	while ((opt = getopt_long(argc, argv, "c:ufh", tallyd_longopts,
				  NULL)) != -1) {
		switch (opt) {
		case 'c':
			config = optarg;
			break;
		case 'u':
			user = true;
			break;
		case 'f':
			foreground = true;
			break;
		case OPT_CHECK:
			check = true;
			break;
		case OPT_LIST:
			list = true;
			break;
		case OPT_DESCRIBE:
			describe = optarg;
			break;
		case OPT_PLUGIN_DIR:
			tally_loader_add_path(ld, optarg);
			break;
		case OPT_ONCE:
			once = true;
			break;
		case OPT_PID_FILE:
			/* a detached daemon works from / */
			pid_file = optarg;
			if (*optarg != '/' && getcwd(cfgbuf, sizeof(cfgbuf)) &&
			    snprintf(pidbuf, sizeof(pidbuf), "%s/%s", cfgbuf,
				     optarg) < (int)sizeof(pidbuf))
				pid_file = pidbuf;
			break;
		case OPT_VERSION:
			printf("tallyd %s (plugin ABI %d)\n", PACKAGE_VERSION,
			       TALLY_PLUGIN_ABI);
			ret = 0;
			goto out;
		case 'h':
			tallyd_usage(stdout);
			ret = 0;
			goto out;
		default:
			tallyd_usage(stderr);
			ret = 2;
			goto out;
		}
	}
	if (optind < argc && (!user || strcmp(argv[optind - 1], "--"))) {
		fprintf(stderr,
			"tallyd: unexpected argument '%s' (a command to run "
			"goes after --user --)\n",
			argv[optind]);
		tallyd_usage(stderr);
		ret = 2;
		goto out;
	}
	command = optind < argc ? &argv[optind] : NULL;
	if (!command && optind > 1 && !strcmp(argv[optind - 1], "--")) {
		fprintf(stderr, "tallyd: no command after --\n");
		ret = 2;
		goto out;
	}
	env = getenv("TALLY_PLUGIN_PATH");
	if (env)
		tally_loader_add_path(ld, env);
	tally_mode_setup(user);
	if (command)
		tally_mode_wrap();

	if (list) {
		ret = tally_loader_list(ld, stdout) < 0 ? 1 : 0;
		goto out;
	}
	if (describe) {
		if (tally_loader_describe(ld, describe, stdout) < 0) {
			fprintf(stderr,
				"tallyd: no plugin named '%s' in the plugin "
				"path\n",
				describe);
			ret = 1;
		} else {
			ret = 0;
		}
		goto out;
	}

	if (!config) {
		config = default_config(user, cfgbuf, sizeof(cfgbuf));
		if (!config)
			goto out;
	}
	if (!user && !strcmp(config, TALLY_SYSCONFDIR "/conf.d") &&
	    access(config, F_OK) < 0) {
		/* a default: say where tallyd looked if there is nothing */
		fprintf(stderr,
			"tallyd: no configuration: neither %s/tally.conf nor "
			"%s/conf.d exists (give one with -c FILE|DIR)\n",
			TALLY_SYSCONFDIR, TALLY_SYSCONFDIR);
		goto out;
	}
	conf = tally_conf_load(config, ld);
	if (!conf) {
		fprintf(stderr, "tallyd: %s: %s\n", config, strerror(errno));
		goto out;
	}
	if (check && conf->output_dir && !conf->errors) {
		char why[PATH_MAX + 64] = "out of memory";

		/* start-up would only find out when the job ends */
		if (tally_mode_configure(conf) < 0 ||
		    tally_output_dir_check(why, sizeof(why)) < 0) {
			fprintf(stderr,
				"%s: error: global.output_dir %s cannot be "
				"created: %s\n",
				config, tally_output_dir(), why);
			conf->errors++;
		}
	}
	if (check || conf->errors) {
		fprintf(stderr, "%s: %u error%s, %u warning%s\n", config,
			conf->errors, conf->errors == 1 ? "" : "s",
			conf->warnings, conf->warnings == 1 ? "" : "s");
		ret = conf->errors ? 1 : 0;
		goto out;
	}

	tallyd_log_start(conf, false);
	/* before anything is created: what is must go to global.user */
	if (tally_priv_setup(conf) < 0)
		goto out;
	if (nofile_err)
		tally_log(NULL, LOG_WARNING,
			  "cannot raise the open files limit (%u): %s",
			  nofile[1], strerror(nofile_err));
	else if (nofile[0] != nofile[1])
		tally_log(NULL, LOG_INFO,
			  "open files limit raised from %u to %u", nofile[0],
			  nofile[1]);
	/* SIGHUP reads it again, after a detach has changed directory */
	if (!realpath(config, cfgabs))
		cfgabs[0] = '\0';
	if (command) {
		/* the job's collector lives and dies with the job's command */
		foreground = true;
		once = false;
	}
	if (!foreground && !once && tallyd_detach(&ready_fd) < 0) {
		tally_log(NULL, LOG_ERR, "cannot detach: %s", strerror(errno));
		goto out;
	}
	if (!once && (tally_runtime_dir_create() < 0 ||
		      tally_runtime_dir_lock() < 0))
		goto out;
	if (!pid_file && !foreground && !once) {
		/* a detached daemon's pid, for scripts */
		snprintf(pidbuf, sizeof(pidbuf), "%s/tallyd.pid",
			 tally_runtime_dir());
		pid_file = pidbuf;
	}
	if (pid_file && tally_pid_file_create(pid_file) < 0)
		goto out;
	if (tally_mode_configure(conf) < 0)
		goto out;
	core = tally_core_new(conf, once);
	if (!core)
		goto out;
	if (*cfgabs) {
		core->conf_path = cfgabs;
		core->ld = ld;
	}
	core->wrapping = command != NULL;
	if (tally_core_start(core) < 0)
		goto out;
	/* every socket is bound, every plugin set up: root is not needed */
	if (tally_priv_drop() < 0)
		goto out;
	tally_log(NULL, LOG_INFO, "started: %zu instance%s, %zu pipeline%s",
		  core->ninsts, core->ninsts == 1 ? "" : "s", core->npipes,
		  core->npipes == 1 ? "" : "s");
	if (ready_fd >= 0) {
		/* up: release the waiting parent, then leave the terminal */
		tallyd_ready(ready_fd, conf);
		ready_fd = -1;
	}
	if (command) {
		if (core->nleft_out)
			fprintf(stderr,
				"tallyd: warning: %zu instance%s of the "
				"collector did not start (see above): running "
				"%s with the rest\n",
				core->nleft_out,
				core->nleft_out == 1 ? "" : "s", command[0]);
		if (tally_core_spawn(core, command) < 0) {
			tally_log(NULL, LOG_ERR, "cannot start %s: %s",
				  command[0], strerror(errno));
			goto out;
		}
		spawned = true;
	}
	if (tally_core_run(core) < 0)
		goto out;
	if (command && core->child) {
		pid_t pid = core->child;
		int tty = core->child_tty;

		conf = core->conf;
		tally_core_free(core);
		core = NULL;
		ret = tallyd_wait_command(pid, tty);
		goto out;
	}
	if (command && core->end_failures)
		tally_log(NULL, LOG_ERR,
			  "stopped: the command exited with status %d; %zu "
			  "output%s could not write the job's final files "
			  "into %s (see above)",
			  core->child_status, core->end_failures,
			  core->end_failures == 1 ? "" : "s",
			  tally_output_dir());
	else if (command && tally_output_dir_used())
		tally_log(NULL, LOG_NOTICE,
			  "stopped: the command exited with status %d; the "
			  "job's final files (metrics page, ...) are in %s",
			  core->child_status, tally_output_dir());
	else
		tally_log(NULL, LOG_INFO, "stopped");
	/* the job's status is its command's, whatever became of telemetry */
	ret = command ? core->child_status : core->failed ? 1 : 0;
	/*
	 * A Ctrl-C that ended the command went to its process group only:
	 * without tallyd it would have reached tallyd's group too (a script
	 * that ran tallyd stops there). End the same way once done.
	 */
	interrupted = command && core->child_sig == SIGINT &&
		      tally_mode_tty() >= 0;
out:
	if (core)
		conf = core->conf; /* a reload may have replaced it */
	tally_core_free(core);
	tally_conf_free(conf);
	tally_mode_cleanup();
	tally_loader_free(ld);
	if (command && !check && !spawned && ret == 1)
		ret = tallyd_exec_bare(command);
	if (interrupted) {
		signal(SIGINT, SIG_DFL);
		kill(0, SIGINT);
	}
	return ret;
}
