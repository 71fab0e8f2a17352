/* SPDX-License-Identifier: MIT */
/*
 * core/net-bind.c - binding listen addresses, and naming bound sockets
 * (tally/net.h)
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <tally/log.h>
#include <tally/mode.h>
#include <tally/plugin.h>

#include "net-internal.h"

/* Most addresses one listen address binds (a name's, "localhost": 2). */
#define NET_BIND_MAX 8

static bool bind_user_policy(const struct tally_net_addr *a)
{
	if (a->flags & TALLY_NET_AS_USER)
		return true;
	if (a->flags & TALLY_NET_AS_SYSTEM)
		return false;
	return tally_user_mode();
}

/*
 * Bind one socket address; streams listen. IPv6 wildcards are dual-stack,
 * other IPv6 addresses IPv6 only (so that [::1] and 127.0.0.1 can be two
 * sockets of one name).
 * Return: the socket, or -1 with errno (nothing logged).
 */
static int bind_one(const struct sockaddr *sa, socklen_t len, int socktype)
{
	int fd = tally_net_socket(sa->sa_family, socktype), on = 1, err;

	if (fd < 0)
		return -1;
	if (sa->sa_family == AF_INET6) {
		const struct sockaddr_in6 *in6 =
			(const struct sockaddr_in6 *)sa;
		int v6only = !IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr);

		if (setsockopt(fd, IPPROTO_IPV6, IPV6_V6ONLY, &v6only,
			       sizeof(v6only)) < 0)
			goto out_close;
	}
	/* a restart must not wait for TIME_WAIT; UDP must not share */
	if (socktype == SOCK_STREAM &&
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on)) < 0)
		goto out_close;
	if (bind(fd, sa, len) < 0)
		goto out_close;
	if (socktype == SOCK_STREAM && listen(fd, SOMAXCONN) < 0)
		goto out_close;
	return fd;

out_close:
	err = errno;
	close(fd);
	errno = err;
	return -1;
}

/* The port (network order) a socket was bound to, or 0. */
static in_port_t first_port(int fd)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return 0;
	return ss.ss_family == AF_INET
		       ? ((struct sockaddr_in *)&ss)->sin_port
		       : ((struct sockaddr_in6 *)&ss)->sin6_port;
}

static void set_sockaddr_port(struct sockaddr_storage *ss, in_port_t port)
{
	if (ss->ss_family == AF_INET)
		((struct sockaddr_in *)ss)->sin_port = port;
	else
		((struct sockaddr_in6 *)ss)->sin6_port = port;
}

static void close_all(int *fds, size_t n)
{
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
}

static int bind_addr(struct tally_instance *inst, const char *what,
		     const struct tally_net_addr *a, int *fds, size_t maxfds,
		     struct tally_net_unix *u);

/* Record each bound address for scripts (RUNDIR/listen). */
static void bind_publish(struct tally_instance *inst, const int *fds, int n)
{
	char name[300];

	for (int i = 0; inst && i < n; i++)
		if (tally_net_sockname(fds[i], name, sizeof(name)) == 0)
			tally_listen_publish(inst, name);
}

int tally_net_bind(struct tally_instance *inst, const char *what,
		   const struct tally_net_addr *a, int *fds, size_t maxfds,
		   struct tally_net_unix *u)
{
	struct tally_net_addr local = *a;
	int n;

	/* the port rule: a user collector's TCP/UDP ports are the kernel's */
	if (a->kind != TALLY_NET_PATH && a->kind != TALLY_NET_ABSTRACT) {
		local.port = (uint16_t)tally_listen_port(inst, a->port);
		if (a->kind != TALLY_NET_NAME) /* a name's come from lookup */
			set_sockaddr_port(&local.sa, htons(local.port));
	}
	n = bind_addr(inst, what, &local, fds, maxfds, u);
	if (n > 0)
		bind_publish(inst, fds, n);
	return n;
}

static int bind_addr(struct tally_instance *inst, const char *what,
		     const struct tally_net_addr *a, int *fds, size_t maxfds,
		     struct tally_net_unix *u)
{
	struct sockaddr_storage sas[NET_BIND_MAX];
	socklen_t lens[NET_BIND_MAX];
	int n = 0, nsa, err = 0;

	if (!maxfds || !(a->flags & TALLY_NET_LISTEN)) {
		errno = EINVAL;
		return -1;
	}
	switch (a->kind) {
	case TALLY_NET_PATH:
	case TALLY_NET_ABSTRACT:
		if (!u) {
			errno = EINVAL;
			return -1;
		}
		if (tally_net_unix_bind(inst, what, a,
					tally_net_unix_mode(false), (gid_t)-1,
					u) < 0)
			return -1;
		/* the fd is the caller's; @u keeps the file and the lock */
		fds[0] = u->fd;
		u->fd = -1;
		return 1;
	case TALLY_NET_ANY:
		fds[0] = bind_one((const struct sockaddr *)&a->sa, a->salen,
				  a->socktype);
		if (fds[0] < 0 && errno == EAFNOSUPPORT) {
			/* a host without IPv6: every IPv4 address then */
			struct sockaddr_in in = { .sin_family = AF_INET,
						  .sin_port = htons(a->port) };

			fds[0] = bind_one((struct sockaddr *)&in, sizeof(in),
					  a->socktype);
		}
		if (fds[0] < 0)
			goto out_bind;
		return 1;
	case TALLY_NET_IPV4:
	case TALLY_NET_IPV6:
		fds[0] = bind_one((const struct sockaddr *)&a->sa, a->salen,
				  a->socktype);
		if (fds[0] < 0)
			goto out_bind;
		return 1;
	case TALLY_NET_NAME:
		break;
	default:
		errno = EINVAL;
		return -1;
	}
	nsa = tally_net_hosts_lookup(a->host, a->port, sas, lens, NET_BIND_MAX);
	if (nsa < 0) {
		if (errno == ENOENT)
			tally_log(inst, LOG_ERR,
				  "%s: %s is not in the hosts file: a listen "
				  "address is local, write it as a number "
				  "(127.0.0.1, [::1]) or *",
				  what, a->host);
		return -1;
	}
	for (int i = 0; i < nsa; i++) {
		char txt[INET6_ADDRSTRLEN];

		if (bind_user_policy(a) &&
		    !tally_net_sockaddr_loopback((struct sockaddr *)&sas[i])) {
			close_all(fds, (size_t)n);
			tally_log(inst, LOG_ERR,
				  "%s: %s resolves to an address off "
				  "loopback: a user collector listens on "
				  "loopback addresses only",
				  what, a->host);
			errno = EPERM;
			return -1;
		}
		if ((size_t)n == maxfds)
			break;
		/* port 0: every address of the name on the port chosen first */
		if (!a->port && n)
			set_sockaddr_port(&sas[i], first_port(fds[0]));
		fds[n] = bind_one((struct sockaddr *)&sas[i], lens[i],
				  a->socktype);
		if (fds[n] >= 0) {
			n++;
			continue;
		}
		/* an address the host lacks (::1 without IPv6) is skipped */
		err = errno;
		if (err == EADDRNOTAVAIL || err == EAFNOSUPPORT)
			continue;
		close_all(fds, (size_t)n);
		inet_ntop(sas[i].ss_family,
			  sas[i].ss_family == AF_INET
				  ? (void *)&((struct sockaddr_in *)&sas[i])
					    ->sin_addr
				  : (void *)&((struct sockaddr_in6 *)&sas[i])
					    ->sin6_addr,
			  txt, sizeof(txt));
		tally_log(inst, LOG_ERR, "%s: cannot bind %s: %s", what, txt,
			  strerror(err));
		errno = err;
		return -1;
	}
	if (n)
		return n;
	errno = err ? err : EADDRNOTAVAIL;
out_bind:
	err = errno;
	tally_log(inst, LOG_ERR, "%s: cannot bind: %s", what, strerror(err));
	errno = err;
	return -1;
}

int tally_net_format_sockaddr(const struct sockaddr *sa, socklen_t sl,
			      char *buf, size_t len)
{
	char txt[INET6_ADDRSTRLEN];

	switch (sa->sa_family) {
	case AF_INET: {
		const struct sockaddr_in *in = (const struct sockaddr_in *)sa;

		inet_ntop(AF_INET, &in->sin_addr, txt, sizeof(txt));
		snprintf(buf, len, "%s:%u", txt, ntohs(in->sin_port));
		return 0;
	}
	case AF_INET6: {
		const struct sockaddr_in6 *in6 =
			(const struct sockaddr_in6 *)sa;

		inet_ntop(AF_INET6, &in6->sin6_addr, txt, sizeof(txt));
		snprintf(buf, len, "[%s]:%u", txt, ntohs(in6->sin6_port));
		return 0;
	}
	case AF_UNIX: {
		const struct sockaddr_un *un = (const struct sockaddr_un *)sa;
		size_t n = sl > offsetof(struct sockaddr_un, sun_path)
				   ? sl - offsetof(struct sockaddr_un, sun_path)
				   : 0;

		if (n && !un->sun_path[0]) /* abstract: @name */
			snprintf(buf, len, "unix:@%.*s", (int)(n - 1),
				 un->sun_path + 1);
		else
			snprintf(buf, len, "unix:%.*s",
				 (int)strnlen(un->sun_path, n), un->sun_path);
		return 0;
	}
	default:
		errno = EAFNOSUPPORT;
		return -1;
	}
}

int tally_net_sockname(int fd, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);

	if (getsockname(fd, (struct sockaddr *)&ss, &sl) < 0)
		return -1;
	return tally_net_format_sockaddr((struct sockaddr *)&ss, sl, buf, len);
}
