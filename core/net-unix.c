/* SPDX-License-Identifier: MIT */
/*
 * core/net-unix.c - binding unix sockets without stealing or trusting
 * what is already there (tally/net.h)
 *
 * A collector's socket path is well known (/run/tally/trace.sock, a job's
 * run directory, /tmp/omnistat_trace), so what sits there may be: nothing;
 * the stale file of a collector that died; a live collector's socket; a
 * file or socket another user planted. Only the first two are ours to
 * take. libzmq's own ipc bind unlinks whatever is there first, which would
 * steal a live collector's socket: zmq_trace binds through here and hands
 * the socket over with ZMQ_USE_FD.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <tally/log.h>

#include "core-internal.h"
#include "net-internal.h"

int tally_net_socket(int family, int socktype)
{
	return socket(family, socktype | SOCK_NONBLOCK | SOCK_CLOEXEC, 0);
}

/*
 * Is a collector listening at @a? A refused connect() means a stale file;
 * a successful or pending one, a live peer.
 * Return: 1 live, 0 stale, -1 with errno when it cannot tell.
 */
static int unix_probe(const struct tally_net_addr *a)
{
	int fd = tally_net_socket(AF_UNIX, a->socktype);
	int rc, err;

	if (fd < 0)
		return -1;
	rc = connect(fd, (const struct sockaddr *)&a->sa, a->salen);
	err = errno;
	close(fd);
	if (rc == 0 || err == EAGAIN || err == EINPROGRESS)
		return 1; /* EAGAIN: listening, its backlog full */
	if (err == ECONNREFUSED || err == ENOENT)
		return 0;
	errno = err;
	return -1;
}

/*
 * The helpers below write the reason of a failure to @why (never NULL,
 * @whylen >= 1) without touching errno, and return -1 with errno set.
 */

/* Take "PATH.lock": one tallyd at a time decides about PATH. */
static int unix_lock(struct tally_net_unix *u, char *why, size_t whylen)
{
	char lock[sizeof(u->path) + 8];
	struct stat st;
	int err;

	snprintf(lock, sizeof(lock), "%s.lock", u->path);
	u->lock_fd =
		open(lock, O_RDONLY | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0600);
	if (u->lock_fd < 0) {
		err = errno;
		snprintf(why, whylen, "cannot open %s: %s", lock,
			 strerror(err));
		goto out_err;
	}
	if (fstat(u->lock_fd, &st) < 0) {
		err = errno;
		snprintf(why, whylen, "fstat %s: %s", lock, strerror(err));
		goto out_close;
	}
	/* global.user: the identity this collector drops to owns it too */
	if (!tally_priv_owner(st.st_uid)) {
		snprintf(why, whylen,
			 "%s belongs to uid %u, not to this collector (lock "
			 "files stay after exit: one that ran with global.user "
			 "left it?): not using the path (when no tallyd uses "
			 "it, remove %s; or run with that user, or choose "
			 "another path)",
			 lock, (unsigned)st.st_uid, lock);
		err = EPERM;
		goto out_close;
	}
	if (flock(u->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		err = errno == EWOULDBLOCK ? EADDRINUSE : errno;
		if (err == EADDRINUSE)
			snprintf(why, whylen,
				 "in use by another tallyd (%s is locked): "
				 "not taking it over",
				 lock);
		else
			snprintf(why, whylen, "flock %s: %s", lock,
				 strerror(err));
		goto out_close;
	}
	/* a reload after the drop opens it again */
	if (st.st_uid != tally_priv_uid())
		tally_priv_chown(lock, u->lock_fd);
	return 0;

out_close:
	close(u->lock_fd);
	u->lock_fd = -1;
out_err:
	errno = err;
	return -1;
}

/*
 * bind() found something at the path: take it only if it is our stale
 * socket. Return: 0 (the path is free now), or -1 with errno and @why.
 */
static int unix_take_over(struct tally_instance *inst,
			  const struct tally_net_addr *a, char *why,
			  size_t whylen)
{
	struct stat st;
	int live, err;

	if (lstat(a->path, &st) < 0) {
		if (errno == ENOENT)
			return 0; /* gone meanwhile */
		err = errno;
		snprintf(why, whylen, "%s: %s", a->path, strerror(err));
		goto out_err;
	}
	if (!S_ISSOCK(st.st_mode)) {
		snprintf(why, whylen, "%s exists and is not a socket", a->path);
		err = EEXIST;
		goto out_err;
	}
	/* never connect to, nor remove, a socket another user made */
	if (!tally_priv_owner(st.st_uid)) {
		snprintf(why, whylen,
			 "%s is a socket of another user (uid %u): not taking "
			 "it over",
			 a->path, (unsigned)st.st_uid);
		err = EPERM;
		goto out_err;
	}
	live = unix_probe(a);
	if (live > 0) {
		snprintf(why, whylen,
			 "a collector is listening there: not taking it over");
		err = EADDRINUSE;
		goto out_err;
	}
	if (live < 0) {
		err = errno;
		snprintf(why, whylen, "cannot tell whether %s is in use: %s",
			 a->path, strerror(err));
		goto out_err;
	}
	tally_log(inst, LOG_INFO, "replacing stale socket file %s", a->path);
	if (unlink(a->path) < 0 && errno != ENOENT) {
		err = errno;
		snprintf(why, whylen, "cannot remove %s: %s", a->path,
			 strerror(err));
		goto out_err;
	}
	return 0;

out_err:
	errno = err;
	return -1;
}

/*
 * Give the file its group and mode, before anyone may use it. Under
 * global.user/group it belongs to that identity, its group being @gid or
 * else global.group: the collector replaces it after a reload, removes it
 * at exit, and the access a group was given follows the configured one.
 */
static int unix_protect(const struct tally_net_addr *a, unsigned mode,
			gid_t gid, char *why, size_t whylen)
{
	uid_t uid = tally_priv_uid() != geteuid() ? tally_priv_uid()
						   : (uid_t)-1;
	int err;

	if (gid == (gid_t)-1 && tally_priv_gid() != getegid())
		gid = tally_priv_gid();
	if (gid != (gid_t)-1)
		tally_priv_keep_group(gid);
	if ((gid != (gid_t)-1 || uid != (uid_t)-1) &&
	    chown(a->path, uid, gid) < 0) {
		err = errno;
		snprintf(why, whylen, "chown %s to gid %u: %s", a->path,
			 (unsigned)gid, strerror(err));
		goto out_err;
	}
	if (chmod(a->path, (mode_t)mode) < 0) {
		err = errno;
		snprintf(why, whylen, "chmod %s: %s", a->path, strerror(err));
		goto out_err;
	}
	return 0;

out_err:
	errno = err;
	return -1;
}

int tally_net_unix_reserve(struct tally_instance *inst,
			   const struct tally_net_addr *a, unsigned mode,
			   gid_t gid, struct tally_net_unix *u, char *why,
			   size_t whylen)
{
	bool file = a->kind == TALLY_NET_PATH;
	char buf[64], scratch[TALLY_NET_ERRLEN];
	const char *call = NULL;
	struct stat st;
	int err;

	if (!why || !whylen) {
		why = scratch;
		whylen = sizeof(scratch);
	}
	why[0] = '\0';
	memset(u, 0, sizeof(*u));
	u->fd = -1;
	u->lock_fd = -1;
	if (a->kind != TALLY_NET_PATH && a->kind != TALLY_NET_ABSTRACT) {
		snprintf(why, whylen, "not a unix socket address");
		errno = EINVAL;
		return -1;
	}
	snprintf(u->path, sizeof(u->path), "%s", a->path);
	if (file && unix_lock(u, why, whylen) < 0)
		return -1;
	u->fd = tally_net_socket(AF_UNIX, a->socktype);
	if (u->fd < 0) {
		call = "socket";
		goto out_sys;
	}
	if (bind(u->fd, (const struct sockaddr *)&a->sa, a->salen) < 0) {
		if (errno != EADDRINUSE)
			goto out_bind;
		if (!file) {
			snprintf(why, whylen,
				 "the abstract socket is in use: not taking "
				 "it over");
			goto out_close;
		}
		if (unix_take_over(inst, a, why, whylen) < 0)
			goto out_close;
		if (bind(u->fd, (const struct sockaddr *)&a->sa, a->salen) < 0)
			goto out_bind;
	}
	if (file) {
		u->file = true;
		if (stat(a->path, &st) < 0) {
			call = "stat";
			goto out_sys;
		}
		u->dev = st.st_dev;
		u->ino = st.st_ino;
		if (unix_protect(a, mode, gid, why, whylen) < 0)
			goto out_close;
	}
	if (a->socktype == SOCK_STREAM) {
		if (listen(u->fd, SOMAXCONN) < 0) {
			call = "listen";
			goto out_sys;
		}
	} else {
		/* sent before the mode was set: not from a permitted peer */
		while (recv(u->fd, buf, sizeof(buf), MSG_DONTWAIT) >= 0)
			;
	}
	return 0;

out_bind:
	call = "cannot bind";
out_sys:
	err = errno;
	snprintf(why, whylen, "%s: %s", call, strerror(err));
	errno = err;
out_close:
	err = errno;
	tally_net_unix_close(u);
	errno = err;
	return -1;
}

int tally_net_unix_bind(struct tally_instance *inst, const char *what,
			const struct tally_net_addr *a, unsigned mode,
			gid_t gid, struct tally_net_unix *u)
{
	char why[TALLY_NET_ERRLEN];
	int err;

	if (tally_net_unix_reserve(inst, a, mode, gid, u, why, sizeof(why)) ==
	    0)
		return 0;
	err = errno;
	tally_log(inst, LOG_ERR, "%s: %s", what, why);
	errno = err;
	return -1;
}

void tally_net_unix_close(struct tally_net_unix *u)
{
	struct stat st;

	if (u->fd >= 0)
		close(u->fd);
	u->fd = -1;
	if (u->file && stat(u->path, &st) == 0 && st.st_dev == u->dev &&
	    st.st_ino == u->ino)
		unlink(u->path);
	u->file = false;
	if (u->lock_fd >= 0)
		close(u->lock_fd);
	u->lock_fd = -1;
}
