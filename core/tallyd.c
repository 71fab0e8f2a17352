/* SPDX-License-Identifier: MIT */
/*
 * core/tallyd.c - the tallyd command line
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "core-internal.h"

#ifndef TALLY_SYSCONFDIR
#define TALLY_SYSCONFDIR "/etc/tally"
#endif

int tally_runtime_dir_create(void);

enum {
	OPT_CHECK = 256,
	OPT_LIST,
	OPT_DESCRIBE,
	OPT_PLUGIN_DIR,
	OPT_ONCE,
	OPT_VERSION,
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
		"                         ~/.config/tally/tally.conf)\n"
		"  -u, --user             run as a user (per-job) collector; "
		"with -- COMMAND,\n"
		"                         run COMMAND with "
		"TALLY_TRACE_ENDPOINT set, then\n"
		"                         flush and exit with its status\n"
		"  -f, --foreground       do not detach; log to stderr\n"
		"      --check-config     validate the configuration and exit\n"
		"      --once             run every input once, flush every "
		"output, exit\n"
		"      --list-plugins     list the plugins found and exit\n"
		"      --describe=NAME    document plugin NAME's options and "
		"exit\n"
		"      --plugin-dir=DIR   search DIR for plugins first "
		"(repeatable)\n"
		"      --version          print the version and exit\n"
		"  -h, --help             print this help and exit\n\n"
		"Plugin search path: --plugin-dir, TALLY_PLUGIN_PATH, "
		"global.plugin_path, %s.\n"
		"See tallyd(8) and tally.conf(5).\n",
		TALLY_SYSCONFDIR, TALLY_PLUGINDIR);
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

/* A detached daemon's pid, in the runtime directory, for scripts. */
static void tallyd_pidfile(bool create)
{
	char path[PATH_MAX];
	FILE *f;

	snprintf(path, sizeof(path), "%s/tallyd.pid", tally_runtime_dir());
	if (!create) {
		unlink(path);
		return;
	}
	f = fopen(path, "we");
	if (!f) {
		tally_log(NULL, LOG_WARNING, "cannot write %s: %s", path,
			  strerror(errno));
		return;
	}
	fprintf(f, "%ld\n", (long)getpid());
	fclose(f);
}

static void tallyd_ready(int fd, const struct tally_conf *conf)
{
	int null = open("/dev/null", O_RDWR);
	char ok = 0;

	if (!conf->log)
		tally_log_setup(TALLY_LOG_SYSLOG,
				conf->log_level
					? tally_log_level_parse(conf->log_level)
					: LOG_INFO);
	if (null >= 0) {
		dup2(null, 0);
		dup2(null, 1);
		if (!conf->log || strcmp(conf->log, "stderr"))
			dup2(null, 2);
		if (null > 2)
			close(null);
	}
	tallyd_pidfile(true);
	if (write(fd, &ok, 1) < 0)
		tally_log(NULL, LOG_WARNING, "cannot notify the parent: %s",
			  strerror(errno));
	close(fd);
}

static const char *default_config(bool user, char *buf, size_t len)
{
	const char *xdg = getenv("XDG_CONFIG_HOME");
	const char *home = getenv("HOME");

	/* no main file: the conf.d directory alone is a configuration */
	if (!user)
		return access(TALLY_SYSCONFDIR "/tally.conf", F_OK) == 0
			       ? TALLY_SYSCONFDIR "/tally.conf"
			       : TALLY_SYSCONFDIR "/conf.d";
	if (xdg && *xdg)
		snprintf(buf, len, "%s/tally/tally.conf", xdg);
	else
		snprintf(buf, len, "%s/.config/tally/tally.conf",
			 home ? home : ".");
	return buf;
}

int main(int argc, char **argv)
{
	bool user = false, foreground = false, check = false, once = false;
	bool list = false;
	const char *config = NULL, *describe = NULL, *env;
	char **command;
	int ready_fd = -1;
	char cfgbuf[PATH_MAX], cfgabs[PATH_MAX] = "";
	struct tally_loader *ld;
	struct tally_conf *conf = NULL;
	struct tally_core *core = NULL;
	int opt, ret = 1;

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

	if (!config)
		config = default_config(user, cfgbuf, sizeof(cfgbuf));
	if (config == cfgbuf || !strcmp(config, TALLY_SYSCONFDIR "/conf.d")) {
		/* a default: say where tallyd looked if there is nothing */
		if (access(config, F_OK) < 0) {
			if (user)
				fprintf(stderr,
					"tallyd: no configuration: %s does "
					"not exist (give one with -c "
					"FILE|DIR)\n",
					config);
			else
				fprintf(stderr,
					"tallyd: no configuration: neither "
					"%s/tally.conf nor %s/conf.d exists "
					"(give one with -c FILE|DIR)\n",
					TALLY_SYSCONFDIR, TALLY_SYSCONFDIR);
			goto out;
		}
	}
	conf = tally_conf_load(config, ld);
	if (!conf) {
		fprintf(stderr, "tallyd: %s: %s\n", config, strerror(errno));
		goto out;
	}
	if (check || conf->errors) {
		fprintf(stderr, "%s: %u error%s, %u warning%s\n", config,
			conf->errors, conf->errors == 1 ? "" : "s",
			conf->warnings, conf->warnings == 1 ? "" : "s");
		ret = conf->errors ? 1 : 0;
		goto out;
	}

	tally_log_setup(conf->log && !strcmp(conf->log, "syslog")
				? TALLY_LOG_SYSLOG
				: TALLY_LOG_STDERR,
			conf->log_level ? tally_log_level_parse(conf->log_level)
					: LOG_INFO);
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
	if (!once && tally_runtime_dir_create() < 0)
		goto out;
	core = tally_core_new(conf, once);
	if (!core)
		goto out;
	if (*cfgabs) {
		core->conf_path = cfgabs;
		core->ld = ld;
	}
	if (tally_core_start(core) < 0)
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
		char ep[PATH_MAX + 16];

		snprintf(ep, sizeof(ep), "ipc://%s/trace.sock",
			 tally_runtime_dir());
		setenv("TALLY_TRACE_ENDPOINT", ep, 0);
		if (tally_core_spawn(core, command) < 0) {
			tally_log(NULL, LOG_ERR, "cannot start %s: %s",
				  command[0], strerror(errno));
			goto out;
		}
	}
	if (tally_core_run(core) < 0)
		goto out;
	tally_log(NULL, LOG_INFO, "stopped");
	ret = core->failed ? 1 : command ? core->child_status : 0;
	if (!foreground)
		tallyd_pidfile(false);
out:
	if (core)
		conf = core->conf; /* a reload may have replaced it */
	tally_core_free(core);
	tally_conf_free(conf);
	tally_loader_free(ld);
	return ret;
}
