/* SPDX-License-Identifier: MIT */
/*
 * core/priv.c - global.user and global.group: the identity a system
 * collector runs as once it is set up
 *
 * tallyd starts as root (ports below 1024, the trace socket in /run/tally,
 * GPU helpers), and gives root up once every instance has started: every
 * socket is bound, every plugin's privileged set-up (its helper process,
 * its files) is done. What it made before that and must still manage
 * after (the runtime directory, the pid file, socket files and their lock
 * files) is given to the new identity, so that a reload can replace them
 * and the exit remove them. The drop is checked: tallyd refuses to go on
 * if it could get root back.
 */
#include "config.h"

#include <errno.h>
#include <grp.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "core-internal.h"

static bool priv_set;		/* global.user or global.group given */
static bool priv_has_user;	/* global.user given */
static char priv_user[256];	/* its name, for initgroups() */
static char priv_group[256];	/* the group's name, for logs */
static uid_t priv_uid;
static gid_t priv_gid;
/* groups of the socket files made before the drop, kept after it */
#define PRIV_MAX_KEEP 16
static gid_t priv_keep[PRIV_MAX_KEEP];
static size_t priv_nkeep;

int tally_priv_setup(const struct tally_conf *conf)
{
	struct passwd *pw = NULL;
	struct group *gr = NULL;

	priv_set = false;
	priv_has_user = false;
	priv_nkeep = 0;
	if (!conf->user && !conf->group)
		return 0;
	if (geteuid() != 0) {
		tally_log(NULL, LOG_ERR,
			  "global.%s is set, but tallyd runs as uid %u: only "
			  "root can change its user or group (start tallyd "
			  "as root, or remove global.user and global.group "
			  "to run as this user)",
			  conf->user ? "user" : "group", (unsigned)geteuid());
		errno = EPERM;
		return -1;
	}
	/* --check-config found them; they may have gone since */
	if (conf->user && !(pw = getpwnam(conf->user))) {
		tally_log(NULL, LOG_ERR, "global.user \"%s\": no such user",
			  conf->user);
		errno = ENOENT;
		return -1;
	}
	if (conf->group && !(gr = getgrnam(conf->group))) {
		tally_log(NULL, LOG_ERR, "global.group \"%s\": no such group",
			  conf->group);
		errno = ENOENT;
		return -1;
	}
	priv_has_user = pw != NULL;
	priv_uid = pw ? pw->pw_uid : geteuid();
	priv_gid = gr ? gr->gr_gid : pw ? pw->pw_gid : getegid();
	snprintf(priv_user, sizeof(priv_user), "%s", pw ? pw->pw_name : "");
	if (gr) {
		snprintf(priv_group, sizeof(priv_group), "%s", gr->gr_name);
	} else {
		struct group *g = getgrgid(priv_gid);

		snprintf(priv_group, sizeof(priv_group), "%s",
			 g ? g->gr_name : "?");
	}
	priv_set = true;
	return 0;
}

uid_t tally_priv_uid(void)
{
	return priv_set ? priv_uid : geteuid();
}

gid_t tally_priv_gid(void)
{
	return priv_set ? priv_gid : getegid();
}

bool tally_priv_owner(uid_t uid)
{
	return uid == geteuid() || (priv_set && uid == priv_uid);
}

int tally_priv_chown(const char *path, int fd)
{
	int rc;

	if (!priv_set || geteuid() != 0)
		return 0;
	rc = fd >= 0 ? fchown(fd, priv_uid, priv_gid)
		     : lchown(path, priv_uid, priv_gid);
	if (rc < 0) {
		int e = errno;

		tally_log(NULL, LOG_WARNING,
			  "cannot give %s to uid %u gid %u: %s (tallyd may "
			  "not be able to replace it once it runs as %s)",
			  path, (unsigned)priv_uid, (unsigned)priv_gid,
			  strerror(e), priv_has_user ? priv_user : priv_group);
		errno = e;
		return -1;
	}
	return 0;
}

void tally_priv_keep_group(gid_t gid)
{
	if (!priv_set || geteuid() != 0 || gid == priv_gid)
		return;
	for (size_t i = 0; i < priv_nkeep; i++)
		if (priv_keep[i] == gid)
			return;
	if (priv_nkeep < PRIV_MAX_KEEP)
		priv_keep[priv_nkeep++] = gid;
}

/*
 * The supplementary groups: the user's (initgroups()), or global.group's
 * alone, and the groups kept for socket files. Return: 0, or -1 with errno
 * and @why.
 */
static int priv_groups(char *why, size_t size)
{
	gid_t *v = NULL;
	int n, err;

	if (priv_has_user ? initgroups(priv_user, priv_gid) < 0
			  : setgroups(1, &priv_gid) < 0) {
		err = errno;
		snprintf(why, size, "%s: %s",
			 priv_has_user ? "initgroups" : "setgroups",
			 strerror(err));
		errno = err;
		return -1;
	}
	if (!priv_nkeep)
		return 0;
	n = getgroups(0, NULL);
	if (n >= 0)
		v = calloc((size_t)n + priv_nkeep, sizeof(*v));
	if (!v || getgroups(n, v) != n) {
		err = v ? errno : ENOMEM;
		snprintf(why, size, "getgroups: %s", strerror(err));
		free(v);
		errno = err;
		return -1;
	}
	for (size_t i = 0; i < priv_nkeep; i++) {
		int j;

		for (j = 0; j < n && v[j] != priv_keep[i]; j++)
			;
		if (j == n)
			v[n++] = priv_keep[i];
	}
	if (setgroups((size_t)n, v) < 0) {
		err = errno;
		snprintf(why, size, "setgroups: %s", strerror(err));
		free(v);
		errno = err;
		return -1;
	}
	free(v);
	return 0;
}

/* Whether the drop holds: every id is the new one, root cannot come back. */
static int priv_verify(char *why, size_t size)
{
	uid_t r, e, s;
	gid_t rg, eg, sg;

	if (getresuid(&r, &e, &s) < 0 || getresgid(&rg, &eg, &sg) < 0) {
		snprintf(why, size, "cannot read the ids: %s", strerror(errno));
		return -1;
	}
	if (priv_has_user && (r != priv_uid || e != priv_uid || s != priv_uid)) {
		snprintf(why, size, "uids are %u/%u/%u, not %u", (unsigned)r,
			 (unsigned)e, (unsigned)s, (unsigned)priv_uid);
		return -1;
	}
	if (rg != priv_gid || eg != priv_gid || sg != priv_gid) {
		snprintf(why, size, "gids are %u/%u/%u, not %u", (unsigned)rg,
			 (unsigned)eg, (unsigned)sg, (unsigned)priv_gid);
		return -1;
	}
	if (priv_has_user && priv_uid != 0 && setuid(0) == 0) {
		snprintf(why, size, "setuid(0) still works");
		return -1;
	}
	return 0;
}

int tally_priv_drop(void)
{
	const char *rundir = tally_runtime_dir();
	char why[128] = "";
	struct stat st;
	int ngroups;

	if (!priv_set)
		return 0;
	/* what tallyd made there it must still replace and remove */
	if (stat(rundir, &st) == 0 && st.st_uid == geteuid())
		tally_priv_chown(rundir, -1);
	if (priv_groups(why, sizeof(why)) < 0)
		goto out_err;
	if (setresgid(priv_gid, priv_gid, priv_gid) < 0) {
		snprintf(why, sizeof(why), "setresgid(%u): %s",
			 (unsigned)priv_gid, strerror(errno));
		goto out_err;
	}
	if (priv_has_user && setresuid(priv_uid, priv_uid, priv_uid) < 0) {
		snprintf(why, sizeof(why), "setresuid(%u): %s",
			 (unsigned)priv_uid, strerror(errno));
		goto out_err;
	}
	if (priv_verify(why, sizeof(why)) < 0)
		goto out_err;
	ngroups = getgroups(0, NULL);
	tally_log(NULL, LOG_NOTICE,
		  "set up: now running as user %s (uid %u), group %s (gid %u), "
		  "%d supplementary group%s%s",
		  priv_has_user ? priv_user : "root", (unsigned)geteuid(),
		  priv_group, (unsigned)priv_gid, ngroups,
		  ngroups == 1 ? "" : "s",
		  priv_nkeep ? " (with the groups of its socket files, so "
			       "that a reload can make them again)"
			     : "");
	return 0;

out_err:
	tally_log(NULL, LOG_ERR, "cannot drop privileges to %s %s: %s",
		  priv_has_user ? "user" : "group",
		  priv_has_user ? priv_user : priv_group, why);
	errno = EPERM;
	return -1;
}
