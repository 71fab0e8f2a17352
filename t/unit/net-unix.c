/* SPDX-License-Identifier: MIT */
/*
 * t/unit/net-unix.c - binding unix sockets: modes, the lock, stale files
 * replaced, live sockets and other users' files left alone (tally/net.h)
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

#include <tally/net.h>

#include "tap.h"

#define L (TALLY_NET_LISTEN | TALLY_NET_UNIX | TALLY_NET_AS_SYSTEM)

static const char *dir;

static void addr_of(struct tally_net_addr *a, const char *name, bool dgram)
{
	char spec[200];

	if (name[0] == '@')
		snprintf(spec, sizeof(spec), "unix:%s", name);
	else
		snprintf(spec, sizeof(spec), "unix:%s/%s", dir, name);
	if (tally_net_addr_parse("listen", spec,
				 L | (dgram ? TALLY_NET_UDP : 0), a, NULL,
				 0) < 0)
		bail_out("cannot parse %s", spec);
}

/* Connect a client to @a: 0 connected, else the errno. */
static int try_connect(const struct tally_net_addr *a)
{
	int fd = socket(AF_UNIX, a->socktype | SOCK_CLOEXEC, 0), rc, err;

	rc = connect(fd, (const struct sockaddr *)&a->sa, a->salen);
	err = errno;
	close(fd);
	return rc == 0 ? 0 : err;
}

static unsigned mode_of(const char *path)
{
	struct stat st;

	return stat(path, &st) == 0 ? (unsigned)(st.st_mode & 07777) : 0;
}

/* A socket file nobody listens on, as a dead collector leaves it. */
static void make_stale(const struct tally_net_addr *a)
{
	int fd = socket(AF_UNIX, SOCK_STREAM, 0);

	if (bind(fd, (const struct sockaddr *)&a->sa, a->salen) < 0)
		bail_out("bind %s: %s", a->path, strerror(errno));
	close(fd);
}

/* A stale socket file of another user (nobody, 65534): needs root. */
static void make_theirs(struct tally_net_addr *a, const char *name)
{
	addr_of(a, name, false);
	make_stale(a);
	if (chown(a->path, 65534, 65534) < 0)
		bail_out("chown: %s", strerror(errno));
}

static void test_bind_modes(void)
{
	struct tally_net_addr a;
	struct tally_net_unix u;
	char lock[300];

	addr_of(&a, "s600.sock", false);
	ok(tally_net_unix_bind(NULL, "listen \"s600\"", &a, 0600, (gid_t)-1,
			       &u) == 0,
	   "binds a stream socket");
	ok(u.fd >= 0 && u.lock_fd >= 0 && u.file, "socket, lock and file");
	cmp_ok(mode_of(a.path), "==", 0600, "mode 0600");
	snprintf(lock, sizeof(lock), "%s.lock", a.path);
	ok(access(lock, F_OK) == 0, "lock file PATH.lock");
	ok(fcntl(u.fd, F_GETFL) & O_NONBLOCK, "non-blocking");
	ok(fcntl(u.fd, F_GETFD) & FD_CLOEXEC, "close-on-exec");
	cmp_ok(try_connect(&a), "==", 0, "a client connects");
	tally_net_unix_close(&u);
	ok(access(a.path, F_OK) < 0 && errno == ENOENT,
	   "close removes the socket file");
	ok(access(lock, F_OK) == 0, "the lock file stays");
	cmp_ok(u.fd, "==", -1, "closed");
	tally_net_unix_close(&u); /* idempotent */

	addr_of(&a, "s660.sock", false);
	ok(tally_net_unix_bind(NULL, "x", &a, 0660, getgid(), &u) == 0 &&
		   mode_of(a.path) == 0660,
	   "mode 0660 with a group");
	tally_net_unix_close(&u);

	addr_of(&a, "d.sock", true);
	ok(tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &u) == 0 &&
		   mode_of(a.path) == 0600,
	   "binds a datagram socket, mode 0600");
	{
		int c = socket(AF_UNIX, SOCK_DGRAM, 0);
		char buf[8] = "";

		sendto(c, "hi", 2, 0, (struct sockaddr *)&a.sa, a.salen);
		ok(recv(u.fd, buf, sizeof(buf), 0) == 2 && !strcmp(buf, "hi"),
		   "a datagram arrives");
		close(c);
	}
	tally_net_unix_close(&u);
}

static void test_no_stealing(void)
{
	struct tally_net_addr a;
	struct tally_net_unix u, v;
	int fd;

	/* a second tallyd while the first runs: the lock says no */
	addr_of(&a, "busy.sock", false);
	tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &u);
	errno = 0;
	ok(tally_net_unix_bind(NULL, "endpoint ipc:///busy", &a, 0600,
			       (gid_t)-1, &v) == -1 &&
		   errno == EADDRINUSE,
	   "a path whose lock is held: EADDRINUSE");
	cmp_ok(v.fd, "==", -1, "nothing left open");
	cmp_ok(try_connect(&a), "==", 0, "the first socket still serves");
	tally_net_unix_close(&u);

	/* a live socket bound without the lock (another program) */
	addr_of(&a, "live.sock", false);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	bind(fd, (struct sockaddr *)&a.sa, a.salen);
	listen(fd, 4);
	errno = 0;
	ok(tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &u) == -1 &&
		   errno == EADDRINUSE,
	   "a live socket is never taken over: EADDRINUSE");
	cmp_ok(try_connect(&a), "==", 0, "and it still serves");
	close(fd);
	unlink(a.path);

	/* a stale one is replaced */
	addr_of(&a, "stale.sock", false);
	make_stale(&a);
	cmp_ok(try_connect(&a), "==", ECONNREFUSED, "stale: refused");
	ok(tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &u) == 0,
	   "a stale socket file is replaced");
	cmp_ok(try_connect(&a), "==", 0, "the new socket serves");
	tally_net_unix_close(&u);

	/* not a socket */
	addr_of(&a, "file.sock", false);
	fd = open(a.path, O_CREAT | O_WRONLY, 0644);
	close(fd);
	errno = 0;
	ok(tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &u) == -1 &&
		   errno == EEXIST,
	   "a regular file at the path: EEXIST");
	ok(access(a.path, F_OK) == 0, "and it is left alone");

	/* a lock file that is a symlink is not followed */
	addr_of(&a, "link.sock", false);
	{
		char lock[300], target[300];

		snprintf(lock, sizeof(lock), "%s.lock", a.path);
		snprintf(target, sizeof(target), "%s/elsewhere", dir);
		if (symlink(target, lock) < 0)
			bail_out("symlink: %s", strerror(errno));
		ok(tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &u) ==
			   -1,
		   "a symlinked lock file: refused");
		ok(access(target, F_OK) < 0, "its target was not created");
	}

	/* close does not remove a file that is no longer ours */
	addr_of(&a, "moved.sock", false);
	tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &u);
	unlink(a.path);
	make_stale(&a);
	tally_net_unix_close(&u);
	ok(access(a.path, F_OK) == 0,
	   "close leaves a socket file someone else made since");
	unlink(a.path);

	/* abstract names: no file, but no stealing either */
	addr_of(&a, "@tally-net-unix-test", false);
	ok(tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &u) == 0 &&
		   !u.file && u.lock_fd < 0,
	   "an abstract socket: no file, no lock");
	errno = 0;
	ok(tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &v) == -1 &&
		   errno == EADDRINUSE,
	   "an abstract name in use: EADDRINUSE");
	tally_net_unix_close(&u);
}

/* Needs root: a file owned by another user. */
static void test_other_user(void)
{
	struct tally_net_addr a;
	struct tally_net_unix u;
	char lock[300];

	if (geteuid() != 0) {
		skip(5, "needs root to make a file another user owns");
		return;
	}
	make_theirs(&a, "theirs.sock");
	errno = 0;
	ok(tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &u) == -1 &&
		   errno == EPERM,
	   "another user's stale socket is not replaced: EPERM");
	ok(access(a.path, F_OK) == 0, "and it is still there");
	unlink(a.path);

	addr_of(&a, "theirlock.sock", false);
	snprintf(lock, sizeof(lock), "%s.lock", a.path);
	close(open(lock, O_CREAT | O_WRONLY, 0644));
	if (chown(lock, 65534, 65534) < 0)
		bail_out("chown: %s", strerror(errno));
	errno = 0;
	ok(tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &u) == -1 &&
		   errno == EPERM,
	   "a lock file another user owns: EPERM");
	ok(access(a.path, F_OK) < 0, "no socket made");
	unlink(lock);
	ok(tally_net_unix_bind(NULL, "x", &a, 0600, (gid_t)-1, &u) == 0,
	   "binds once the lock file is gone");
	tally_net_unix_close(&u);
}

static void test_bind_helper(void)
{
	struct tally_net_addr a;
	struct tally_net_unix u;
	int fds[4];
	char name[300];

	addr_of(&a, "b.sock", false);
	cmp_ok(tally_net_bind(NULL, "x", &a, fds, 4, &u), "==", 1,
	       "tally_net_bind on a unix address");
	ok(u.fd == -1 && u.file, "the fd is the caller's, the file @u's");
	ok(tally_net_sockname(fds[0], name, sizeof(name)) == 0 &&
		   !strncmp(name, "unix:/", 6) && strstr(name, "/b.sock"),
	   "sockname: %s", name);
	close(fds[0]);
	tally_net_unix_close(&u);
	ok(access(a.path, F_OK) < 0, "file removed");
}

/* tally_net_unix_reserve() refuses @a with errno @err and reason @want. */
static void reserve_refused(const struct tally_net_addr *a, int err,
			    const char *want, const char *name)
{
	struct tally_net_unix u;
	char why[TALLY_NET_ERRLEN];

	errno = 0;
	ok(tally_net_unix_reserve(NULL, a, 0600, (gid_t)-1, &u, why,
				  sizeof(why)) == -1 &&
		   errno == err,
	   "%s: refused, errno %s", name, strerror(err));
	is(why, want, "%s: the reason", name);
	cmp_ok(u.fd, "==", -1, "%s: nothing left open", name);
}

/* tally_net_unix_reserve(): the reason handed back, the fd handed over */
static void test_reserve(void)
{
	struct tally_net_addr a;
	struct tally_net_unix u, v;
	char want[400];
	int fd;

	/* a path, reserved and its listening socket taken by its user */
	addr_of(&a, "r.sock", false);
	ok(tally_net_unix_reserve(NULL, &a, 0600, (gid_t)-1, &u, NULL, 0) == 0,
	   "reserve binds (no reason buffer needed)");
	fd = u.fd;
	u.fd = -1; /* as libzmq takes it with ZMQ_USE_FD */
	cmp_ok(try_connect(&a), "==", 0, "the socket handed over serves");

	/* a second collector: the lock's reason, returned, not logged */
	snprintf(want, sizeof(want),
		 "in use by another tallyd (%s.lock is locked): not taking it "
		 "over",
		 a.path);
	reserve_refused(&a, EADDRINUSE, want, "a held path");

	tally_net_unix_close(&u);
	ok(fcntl(fd, F_GETFD) >= 0, "close leaves the fd it gave away open");
	ok(access(a.path, F_OK) < 0 && errno == ENOENT,
	   "but removes the file and releases the lock");
	close(fd);
	ok(tally_net_unix_reserve(NULL, &a, 0600, (gid_t)-1, &v, NULL, 0) == 0,
	   "so the path can be reserved again");
	tally_net_unix_close(&v);

	/* a live socket bound without the lock (another program) */
	addr_of(&a, "rlive.sock", false);
	fd = socket(AF_UNIX, SOCK_STREAM, 0);
	bind(fd, (struct sockaddr *)&a.sa, a.salen);
	listen(fd, 4);
	reserve_refused(&a, EADDRINUSE,
			"a collector is listening there: not taking it over",
			"a live socket");
	close(fd);
	unlink(a.path);

	/* not a socket */
	addr_of(&a, "rfile.sock", false);
	close(open(a.path, O_CREAT | O_WRONLY, 0644));
	snprintf(want, sizeof(want), "%s exists and is not a socket", a.path);
	reserve_refused(&a, EEXIST, want, "a regular file");

	if (geteuid() != 0) {
		skip(3, "needs root to make a socket another user owns");
		return;
	}
	make_theirs(&a, "rtheirs.sock");
	snprintf(want, sizeof(want),
		 "%s is a socket of another user (uid 65534): not taking it "
		 "over",
		 a.path);
	reserve_refused(&a, EPERM, want, "another user's stale socket");
	unlink(a.path);
}

int main(void)
{
	plan(NO_PLAN);
	dir = tap_tmpdir("tally-net-unix");
	test_bind_modes();
	test_no_stealing();
	test_other_user();
	test_bind_helper();
	test_reserve();
	return done_testing();
}
