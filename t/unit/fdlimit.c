/* SPDX-License-Identifier: MIT */
/*
 * t/unit/fdlimit.c - accepting when descriptors run out (tally/fdlimit.h)
 *
 * With RLIMIT_NOFILE lowered to 32 in this process: a listener with a
 * reserve refuses connections that would leave fewer descriptors free,
 * and an accept that finds no descriptor at all (EMFILE) takes the
 * connection with the spare one, closes it, and says ECONNABORTED, which
 * libzmq and libevent take as "nothing to accept" (EMFILE made libzmq
 * 4.3.4 abort).
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <tally/fdlimit.h>

#include "../../core/core-internal.h"
#include "tap.h"

#define LIMIT 32

static struct sockaddr_un addr = { .sun_family = AF_UNIX };

static int listener(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);

	if (fd < 0 || bind(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0 ||
	    listen(fd, 64) < 0)
		bail_out("listener: %s", strerror(errno));
	return fd;
}

static int client(void)
{
	int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);

	if (fd < 0 || connect(fd, (struct sockaddr *)&addr, sizeof(addr)) < 0)
		bail_out("connect: %s", strerror(errno));
	return fd;
}

/* Whether the server closed @fd's connection: read sees end of file. */
static bool closed_by_peer(int fd)
{
	char c;

	return read(fd, &c, 1) == 0;
}

/* The lowest free descriptor number (the next open's). */
static int lowest_free(void)
{
	int fd = dup(0), n = fd;

	close(fd);
	return n;
}

static void test_reserve(int lfd)
{
	int c[LIMIT], a[LIMIT], na = 0, nc = 0, s;

	ok(tally_accept_limit(lfd, 8) == 0, "limit registered");
	ok(tally_accept_limit(-1, 8) < 0 && errno == EINVAL, "fd -1: EINVAL");
	/* accepted connections take the lowest free numbers, up to 23 */
	for (;;) {
		c[nc++] = client();
		s = tally_accept_guarded(lfd, NULL, NULL, SOCK_CLOEXEC);
		if (s < 0)
			break;
		a[na++] = s;
		if (nc == LIMIT / 2 || lowest_free() >= LIMIT)
			bail_out("accepted beyond the reserve");
	}
	ok(errno == ECONNABORTED, "refused: ECONNABORTED (%s)",
	   strerror(errno));
	cmp_ok(a[na - 1], "<", LIMIT - 8, "accepted below the reserve");
	/* the refused connection had the lowest free number: closed again */
	cmp_ok(lowest_free(), ">=", LIMIT - 8, "refused within the reserve");
	ok(closed_by_peer(c[nc - 1]), "the refused connection is closed");
	cmp_ok(tally_accept_refused(lfd), "==", 1, "one refusal counted");
	/* two peers leave: a new client takes one, the collector the other */
	close(a[--na]);
	close(a[--na]);
	c[nc++] = client();
	s = tally_accept_guarded(lfd, NULL, NULL, SOCK_CLOEXEC);
	ok(s >= 0, "a freed descriptor admits a new peer");
	a[na++] = s;
	cmp_ok(tally_accept_unlimit(lfd), "==", 1, "unlimit returns the count");
	cmp_ok(tally_accept_refused(lfd), "==", 0, "unregistered: 0");
	while (na)
		close(a[--na]);
	while (nc)
		close(c[--nc]);
}

static void test_emfile(int lfd)
{
	int fill[LIMIT], nfill = 0, c1, c2, s;

	ok(tally_accept_limit(lfd, 1) == 0, "registered again, reserve 1");
	c1 = client();
	c2 = client();
	/* take every descriptor left */
	for (;;) {
		int fd = open("/dev/null", O_RDONLY | O_CLOEXEC);

		if (fd < 0)
			break;
		fill[nfill++] = fd;
	}
	ok(errno == EMFILE, "descriptors exhausted (%d opened)", nfill);
	s = tally_accept_guarded(lfd, NULL, NULL, SOCK_CLOEXEC);
	ok(s < 0 && errno == ECONNABORTED,
	   "no descriptor: ECONNABORTED, not EMFILE (%s)", strerror(errno));
	ok(closed_by_peer(c1), "the connection was taken and closed");
	s = tally_accept_guarded(lfd, NULL, NULL, SOCK_CLOEXEC);
	ok(s < 0 && errno == ECONNABORTED,
	   "again: the spare descriptor is back for the next one");
	ok(closed_by_peer(c2), "the second connection was closed too");
	s = tally_accept_guarded(lfd, NULL, NULL, SOCK_CLOEXEC);
	/* Linux takes the descriptor before it looks for a connection */
	ok(s < 0 && errno == ECONNABORTED, "nothing pending: ECONNABORTED");
	cmp_ok(lowest_free(), "<", 0, "nothing taken: still no descriptor");
	/* an unregistered listener gets EMFILE, as from accept4 itself */
	tally_accept_unlimit(lfd);
	s = tally_accept_guarded(lfd, NULL, NULL, SOCK_CLOEXEC);
	ok(s < 0 && errno == EMFILE, "not registered: EMFILE, untouched");
	tally_accept_limit(lfd, 1);
	/* low numbers free again: a new client takes one, the accept one */
	close(fill[0]);
	close(fill[1]);
	fill[0] = fill[--nfill];
	fill[1] = fill[--nfill];
	c1 = client();
	s = tally_accept_guarded(lfd, NULL, NULL, SOCK_CLOEXEC);
	ok(s >= 0, "a free descriptor: accepted again");
	close(s);
	close(c1);
	tally_accept_unlimit(lfd);
	close(c2);
	while (nfill)
		close(fill[--nfill]);
}

int main(void)
{
	struct rlimit rl = { LIMIT, LIMIT };
	unsigned before, after;
	int lfd;

	plan(NO_PLAN);
	snprintf(addr.sun_path, sizeof(addr.sun_path), "%s/l.sock",
		 tap_tmpdir("fdlimit"));
	if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
		bail_out("setrlimit: %s", strerror(errno));
	ok(tally_fd_setup(&before, &after) == 0, "setup: spare descriptor");
	cmp_ok(before, "==", LIMIT, "soft limit before");
	cmp_ok(after, "==", LIMIT, "already at the hard limit");
	cmp_ok(tally_fd_reserve(), "==", 16, "default reserve: at least 16");
	lfd = listener();
	test_reserve(lfd);
	test_emfile(lfd);
	close(lfd);
	return done_testing();
}
