/* SPDX-License-Identifier: MIT */
/*
 * core/net-addr.c - addresses: parsing, canonical text, the loopback
 * policy and clashes between listen addresses (tally/net.h)
 *
 * Everything here is pure: no socket, no file, no name resolution, so the
 * configuration check can use it and the unit tests can hold tables.
 */
#include "config.h"

#include <arpa/inet.h>
#include <ctype.h>
#include <errno.h>
#include <net/if.h>
#include <netinet/in.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <tally/net.h>
#include <tally/plugin.h>

/* Write a message into @err (if any) and fail with @e. */
static int __attribute__((format(printf, 4, 5)))
fail(int e, char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (err && errlen) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	errno = e;
	return -1;
}

/* Whether the policy of a user collector applies under @flags. */
static bool policy_user(unsigned flags)
{
	if (flags & TALLY_NET_AS_USER)
		return true;
	if (flags & TALLY_NET_AS_SYSTEM)
		return false;
	return tally_user_mode();
}

/*
 * The unix path rules, shared by "unix:..." and "ipc://...": absolute, or
 * "@name" for the abstract namespace; within sun_path with its NUL.
 * "//" and "/./" are folded so that one file has one text.
 * Return: 0, or -1 with errno = EINVAL (neither form) or ENAMETOOLONG.
 */
static int parse_unix_path(const char *rest, struct tally_net_addr *out)
{
	size_t len = strlen(rest), n = 0;

	if (rest[0] == '@' && rest[1]) {
		out->kind = TALLY_NET_ABSTRACT;
		rest++;
	} else if (rest[0] == '/') {
		out->kind = TALLY_NET_PATH;
	} else {
		errno = EINVAL;
		return -1;
	}
	/* "@name" takes as many bytes as "/name": the '@' is the NUL */
	if (len > TALLY_NET_PATH_MAX) {
		errno = ENAMETOOLONG;
		return -1;
	}
	for (const char *p = rest; *p; p++) {
		if (out->kind == TALLY_NET_PATH && *p == '/' && n &&
		    out->path[n - 1] == '/')
			continue;
		if (out->kind == TALLY_NET_PATH && *p == '.' && p[1] == '/' &&
		    n && out->path[n - 1] == '/') {
			p++;
			continue;
		}
		out->path[n++] = *p;
	}
	out->path[n] = '\0';
	return 0;
}

/*
 * The unix path rules with their messages, for "unix:" (@scheme, the
 * value quoted) and "ipc://" (unquoted, as ZeroMQ users write it); @rest
 * is what follows the scheme.
 */
static int unix_rules(const char *opt, const char *spec, const char *rest,
		      bool zmq, struct tally_net_addr *out, char *err,
		      size_t errlen)
{
	const char *q = zmq ? "" : "\"";
	const char *scheme = zmq ? "ipc://" : "unix:";

	if (parse_unix_path(rest, out) == 0)
		return 0;
	if (errno == ENAMETOOLONG)
		return fail(ENAMETOOLONG, err, errlen,
			    "%s %s%s%s: the socket path is %zu bytes, a unix "
			    "socket allows at most %zu; choose a shorter path",
			    opt, q, spec, q, strlen(rest), TALLY_NET_PATH_MAX);
	return fail(EINVAL, err, errlen,
		    "%s %s%s%s: the %s path must be absolute (%s/dir/file) or "
		    "abstract (%s@name)",
		    opt, q, spec, q, zmq ? "ipc" : "socket", scheme, scheme);
}

/* Fill @out->sa for a unix address already in @out->path. */
static void unix_sockaddr(struct tally_net_addr *out)
{
	struct sockaddr_un *un = (struct sockaddr_un *)&out->sa;
	size_t len = strlen(out->path);

	memset(un, 0, sizeof(*un));
	un->sun_family = AF_UNIX;
	if (out->kind == TALLY_NET_ABSTRACT) {
		/* a leading NUL, and exactly the name's length */
		memcpy(un->sun_path + 1, out->path, len);
		out->salen =
			(socklen_t)(offsetof(struct sockaddr_un, sun_path) + 1 +
				    len);
	} else {
		memcpy(un->sun_path, out->path, len);
		out->salen = (socklen_t)sizeof(*un);
	}
}

/*
 * A host name by RFC 1123, with '_' allowed (container and cluster names
 * use it, and resolvers take it): labels of 1 to 63 letters, digits, '-'
 * and '_', not starting or ending with '-'; at most 253 bytes without a
 * trailing dot. The name is stored lower case, without the trailing dot.
 */
static bool host_name(const char *s, size_t len, char *out, size_t outlen)
{
	size_t label = 0;

	if (len && s[len - 1] == '.')
		len--;
	if (!len || len > 253 || len >= outlen)
		return false;
	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];

		if (c == '.') {
			if (!label || s[i - 1] == '-')
				return false;
			label = 0;
		} else if (isalnum(c) || c == '_' || (c == '-' && label != 0)) {
			if (++label > 63)
				return false;
		} else {
			return false;
		}
		out[i] = (char)tolower(c);
	}
	if (s[len - 1] == '-')
		return false;
	out[len] = '\0';
	return true;
}

/*
 * Parse an IPv6 address with an optional "%zone" (an interface name or
 * number) into @out, canonical text in @out->host.
 */
static bool ipv6_literal(const char *s, size_t len, struct tally_net_addr *out)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->sa;
	char buf[INET6_ADDRSTRLEN + IF_NAMESIZE + 2], txt[INET6_ADDRSTRLEN];
	const char *zone;
	unsigned long scope = 0;

	if (len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	zone = strchr(buf, '%');
	if (zone) {
		char *end;

		buf[zone - buf] = '\0';
		zone++;
		if (!*zone)
			return false;
		scope = strtoul(zone, &end, 10);
		if (*end)
			scope = if_nametoindex(zone);
		if (!scope)
			return false;
	}
	memset(in6, 0, sizeof(*in6));
	if (inet_pton(AF_INET6, buf, &in6->sin6_addr) != 1)
		return false;
	in6->sin6_family = AF_INET6;
	in6->sin6_scope_id = (uint32_t)scope;
	inet_ntop(AF_INET6, &in6->sin6_addr, txt, sizeof(txt));
	if (zone)
		snprintf(out->host, sizeof(out->host), "%s%%%s", txt, zone);
	else
		snprintf(out->host, sizeof(out->host), "%s", txt);
	out->kind = TALLY_NET_IPV6;
	out->salen = sizeof(*in6);
	return true;
}

static bool ipv4_literal(const char *s, size_t len, struct tally_net_addr *out)
{
	struct sockaddr_in *in = (struct sockaddr_in *)&out->sa;
	char buf[INET_ADDRSTRLEN];

	if (len >= sizeof(buf))
		return false;
	memcpy(buf, s, len);
	buf[len] = '\0';
	memset(in, 0, sizeof(*in));
	if (inet_pton(AF_INET, buf, &in->sin_addr) != 1)
		return false;
	in->sin_family = AF_INET;
	inet_ntop(AF_INET, &in->sin_addr, out->host, sizeof(out->host));
	out->kind = TALLY_NET_IPV4;
	out->salen = sizeof(*in);
	return true;
}

/* The IPv6 wildcard for "*": tally_net_bind() binds it dual-stack. */
static void any_sockaddr(struct tally_net_addr *out)
{
	struct sockaddr_in6 *in6 = (struct sockaddr_in6 *)&out->sa;

	memset(in6, 0, sizeof(*in6));
	in6->sin6_family = AF_INET6;
	in6->sin6_addr = in6addr_any;
	out->kind = TALLY_NET_ANY;
	out->salen = sizeof(*in6);
	strcpy(out->host, "*");
}

static void set_port(struct tally_net_addr *out, uint16_t port)
{
	out->port = port;
	if (out->sa.ss_family == AF_INET)
		((struct sockaddr_in *)&out->sa)->sin_port = htons(port);
	else if (out->sa.ss_family == AF_INET6)
		((struct sockaddr_in6 *)&out->sa)->sin6_port = htons(port);
}

/*
 * A decimal port, strictly: digits only (no sign, no blank, no 0x).
 * Return: 0..65535, -1 when not a number, -2 when out of range.
 */
static long parse_port(const char *s)
{
	size_t n = strspn(s, "0123456789");
	long v = 0;

	if (!n || s[n])
		return -1;
	for (size_t i = 0; i < n; i++) {
		v = v * 10 + (s[i] - '0');
		if (v > 65535)
			return -2;
	}
	return v;
}

/* The forms an option accepts, for messages. */
static const char *forms(unsigned flags)
{
	if (flags & TALLY_NET_LISTEN)
		return flags & TALLY_NET_UNIX
			       ? "host:port, [ipv6]:port, *:port or unix:/path"
			       : "host:port, [ipv6]:port or *:port";
	return flags & TALLY_NET_UNIX ? "host:port, [ipv6]:port or unix:/path"
				      : "host:port or [ipv6]:port";
}

int tally_net_addr_parse(const char *opt, const char *spec, unsigned flags,
			 struct tally_net_addr *out, char *err, size_t errlen)
{
	bool listen = flags & TALLY_NET_LISTEN;
	const char *colon, *host;
	struct tally_net_addr a;
	size_t hl;
	long port;

	memset(&a, 0, sizeof(a));
	a.flags = flags;
	a.socktype = flags & TALLY_NET_UDP ? SOCK_DGRAM : SOCK_STREAM;
	if (!spec || !*spec)
		return fail(EINVAL, err, errlen, "%s \"\": empty: write %s",
			    opt, forms(flags));
	if (!strncmp(spec, "unix:", 5)) {
		if (!(flags & TALLY_NET_UNIX))
			return fail(EINVAL, err, errlen,
				    "%s \"%s\": unix sockets are not offered "
				    "here: write %s",
				    opt, spec, forms(flags));
		if (unix_rules(opt, spec, spec + 5, false, &a, err, errlen) < 0)
			return -1;
		unix_sockaddr(&a);
		goto out_ok;
	}
	if (strstr(spec, "://"))
		return fail(EINVAL, err, errlen,
			    "%s \"%s\": no scheme (\"tcp://\"): write %s",
			    opt, spec, forms(flags));
	if (spec[0] == '[') {
		const char *rb = strchr(spec, ']');

		if (!rb)
			return fail(EINVAL, err, errlen,
				    "%s \"%s\": no \"]\" after the IPv6 "
				    "address: write [ipv6]:port",
				    opt, spec);
		if (rb[1] != ':')
			return fail(EINVAL, err, errlen,
				    "%s \"%s\": no port after \"]\": write "
				    "[ipv6]:port",
				    opt, spec);
		host = spec + 1;
		hl = (size_t)(rb - host);
		colon = rb + 1;
		if (!ipv6_literal(host, hl, &a))
			return fail(EINVAL, err, errlen,
				    "%s \"%s\": \"%.*s\" is not an IPv6 "
				    "address",
				    opt, spec, (int)hl, host);
	} else {
		colon = strrchr(spec, ':');
		if (!colon)
			return fail(EINVAL, err, errlen,
				    "%s \"%s\": no port: write %s", opt, spec,
				    forms(flags));
		host = spec;
		hl = (size_t)(colon - spec);
		if (memchr(host, ':', hl))
			return fail(EINVAL, err, errlen,
				    "%s \"%s\": an IPv6 address goes in "
				    "brackets: write [ipv6]:port",
				    opt, spec);
		if (!hl || (hl == 1 && *host == '*')) {
			if (!listen)
				return fail(EINVAL, err, errlen,
					    "%s \"%s\": a server needs a host "
					    "name or address",
					    opt, spec);
			any_sockaddr(&a);
		} else if (ipv4_literal(host, hl, &a)) {
			/* numeric: done */
		} else if (strspn(host, "0123456789.") == hl) {
			return fail(EINVAL, err, errlen,
				    "%s \"%s\": \"%.*s\" is not an IPv4 "
				    "address",
				    opt, spec, (int)hl, host);
		} else if (host_name(host, hl, a.host, sizeof(a.host))) {
			a.kind = TALLY_NET_NAME;
		} else {
			return fail(EINVAL, err, errlen,
				    "%s \"%s\": \"%.*s\" is not a valid host "
				    "name",
				    opt, spec, (int)hl, host);
		}
	}
	port = parse_port(colon + 1);
	if (port == -1)
		return fail(EINVAL, err, errlen,
			    "%s \"%s\": port \"%s\" is not a number from %d "
			    "to 65535%s",
			    opt, spec, colon + 1, listen ? 0 : 1,
			    listen ? " (0: any free port)" : "");
	if (port == -2 || (port == 0 && !listen))
		return fail(EINVAL, err, errlen,
			    "%s \"%s\": port %s is out of range: use %d to "
			    "65535%s",
			    opt, spec, colon + 1, listen ? 0 : 1,
			    listen ? " (0: any free port)" : "");
	set_port(&a, (uint16_t)port);
out_ok:
	if (listen && !tally_net_listen_permitted(&a, policy_user(flags)))
		return fail(EPERM, err, errlen,
			    "%s \"%s\": a user collector listens on loopback "
			    "addresses only (127.0.0.1, [::1], localhost) or "
			    "unix sockets",
			    opt, spec);
	*out = a;
	return 0;
}

int tally_net_zmq_parse(const char *opt, const char *ep, unsigned flags,
			struct tally_net_addr *out, char *err, size_t errlen)
{
	bool listen = flags & TALLY_NET_LISTEN;
	const char *rest, *colon, *host;
	struct tally_net_addr a;
	size_t hl;
	long port;

	memset(&a, 0, sizeof(a));
	a.flags = flags & ~TALLY_NET_UDP;
	a.zmq = true;
	a.socktype = SOCK_STREAM;
	if (!ep || !*ep)
		return fail(EINVAL, err, errlen,
			    "%s is empty: use ipc:///path or tcp://host:port",
			    opt);
	if (!strncmp(ep, "ipc://", 6)) {
		if (unix_rules(opt, ep, ep + 6, true, &a, err, errlen) < 0)
			return -1;
		unix_sockaddr(&a);
		goto out_ok;
	}
	if (strncmp(ep, "tcp://", 6))
		return fail(EINVAL, err, errlen,
			    "%s %s: use ipc:///path or tcp://host:port", opt,
			    ep);
	rest = ep + 6;
	colon = strrchr(rest, ':');
	port = colon ? parse_port(colon + 1) : -1;
	if (colon && listen && !strcmp(colon + 1, "*"))
		port = 0;
	if (!colon || colon == rest || port < 0 || (port == 0 && !listen))
		return fail(EINVAL, err, errlen,
			    "%s %s: use tcp://host:port with a port from 1 to "
			    "65535%s",
			    opt, ep, listen ? ", or * for any free port" : "");
	host = rest;
	hl = (size_t)(colon - rest);
	if (host[0] == '[' && host[hl - 1] == ']') {
		if (!ipv6_literal(host + 1, hl - 2, &a))
			return fail(EINVAL, err, errlen,
				    "%s %s: \"%.*s\" is not an IPv6 address",
				    opt, ep, (int)hl - 2, host + 1);
	} else if (hl == 1 && *host == '*' && listen) {
		any_sockaddr(&a);
	} else if (ipv4_literal(host, hl, &a)) {
		/* numeric: done */
	} else if (hl < sizeof(a.host) && !memchr(host, ':', hl) &&
		   !memchr(host, '/', hl) && !memchr(host, '*', hl) &&
		   !memchr(host, ' ', hl) && !memchr(host, '\t', hl)) {
		/* a host or an interface name: libzmq binds either */
		for (size_t i = 0; i < hl; i++)
			a.host[i] = (char)tolower((unsigned char)host[i]);
		a.host[hl] = '\0';
		a.kind = TALLY_NET_NAME;
	} else {
		return fail(EINVAL, err, errlen,
			    "%s %s: \"%.*s\" is not a host, address or "
			    "interface name",
			    opt, ep, (int)hl, host);
	}
	set_port(&a, (uint16_t)port);
out_ok:
	if (listen && !tally_net_listen_permitted(&a, policy_user(flags)))
		return fail(EPERM, err, errlen,
			    "%s %s: a user collector listens on loopback only "
			    "(tcp://127.0.0.1:PORT)",
			    opt, ep);
	*out = a;
	return 0;
}

const char *tally_net_addr_format(const struct tally_net_addr *a, char *buf,
				  size_t len)
{
	char port[8];

	if (a->port || !a->zmq)
		snprintf(port, sizeof(port), "%u", a->port);
	else
		strcpy(port, "*");
	switch (a->kind) {
	case TALLY_NET_PATH:
		snprintf(buf, len, "%s%s",
			 a->zmq ? "ipc://" : "unix:", a->path);
		break;
	case TALLY_NET_ABSTRACT:
		snprintf(buf, len, "%s@%s",
			 a->zmq ? "ipc://" : "unix:", a->path);
		break;
	case TALLY_NET_IPV6:
		snprintf(buf, len, "%s[%s]:%s", a->zmq ? "tcp://" : "", a->host,
			 port);
		break;
	default:
		snprintf(buf, len, "%s%s:%s", a->zmq ? "tcp://" : "", a->host,
			 port);
		break;
	}
	return buf;
}

static bool v4_loopback(const struct in_addr *in)
{
	return (ntohl(in->s_addr) >> 24) == 127;
}

static bool v6_loopback(const struct in6_addr *in6)
{
	if (IN6_IS_ADDR_LOOPBACK(in6))
		return true;
	/* ::ffff:127.x.y.z, what a dual-stack socket sees of 127.x.y.z */
	return IN6_IS_ADDR_V4MAPPED(in6) && in6->s6_addr[12] == 127;
}

bool tally_net_sockaddr_loopback(const struct sockaddr *sa)
{
	if (!sa)
		return false;
	switch (sa->sa_family) {
	case AF_INET:
		return v4_loopback(&((const struct sockaddr_in *)sa)->sin_addr);
	case AF_INET6:
		return v6_loopback(
			&((const struct sockaddr_in6 *)sa)->sin6_addr);
	case AF_UNIX:
		return true;
	default:
		return false;
	}
}

/* "localhost" and "*.localhost" (RFC 6761 6.3); stored lower case. */
static bool name_localhost(const char *host)
{
	size_t n = strlen(host);

	return !strcmp(host, "localhost") ||
	       (n > 10 && !strcmp(host + n - 10, ".localhost"));
}

bool tally_net_addr_loopback(const struct tally_net_addr *a)
{
	switch (a->kind) {
	case TALLY_NET_PATH:
	case TALLY_NET_ABSTRACT:
		return true;
	case TALLY_NET_IPV4:
	case TALLY_NET_IPV6:
		return tally_net_sockaddr_loopback(
			(const struct sockaddr *)&a->sa);
	case TALLY_NET_NAME:
		/* libzmq binds an interface by its name: "lo" is loopback */
		return name_localhost(a->host) ||
		       (a->zmq && !strcmp(a->host, "lo"));
	default:
		return false;
	}
}

bool tally_net_listen_permitted(const struct tally_net_addr *a, bool user)
{
	return !user || tally_net_addr_loopback(a);
}

/*
 * What a listen address occupies, for clashes: per family nothing, every
 * address ("*"), or one address (its canonical text); or a name.
 */
struct net_span {
	const char *v4; /* NULL: none, "": every address, else one */
	const char *v6;
	const char *name;
};

static struct net_span net_span_of(const struct tally_net_addr *a)
{
	struct net_span s = { NULL, NULL, NULL };

	switch (a->kind) {
	case TALLY_NET_ANY:
		s.v4 = s.v6 = "";
		break;
	case TALLY_NET_IPV4:
		s.v4 = strcmp(a->host, "0.0.0.0") ? a->host : "";
		break;
	case TALLY_NET_IPV6:
		/* [::] is bound dual-stack (the kernel's default) */
		if (!strcmp(a->host, "::"))
			s.v4 = s.v6 = "";
		else
			s.v6 = a->host;
		break;
	case TALLY_NET_NAME:
		if (name_localhost(a->host)) {
			s.v4 = "127.0.0.1";
			s.v6 = "::1";
		} else {
			s.name = a->host;
		}
		break;
	default:
		break;
	}
	return s;
}

static bool span_overlap(const char *x, const char *y)
{
	return x && y && (!*x || !*y || !strcmp(x, y));
}

bool tally_net_addr_clash(const struct tally_net_addr *a,
			  const struct tally_net_addr *b)
{
	bool ua = a->kind == TALLY_NET_PATH || a->kind == TALLY_NET_ABSTRACT;
	bool ub = b->kind == TALLY_NET_PATH || b->kind == TALLY_NET_ABSTRACT;
	struct net_span sa, sb;

	if (ua || ub)
		return a->kind == b->kind && !strcmp(a->path, b->path);
	if (a->socktype != b->socktype || !a->port || a->port != b->port)
		return false;
	sa = net_span_of(a);
	sb = net_span_of(b);
	return span_overlap(sa.v4, sb.v4) || span_overlap(sa.v6, sb.v6) ||
	       (sa.name && sb.name && !strcmp(sa.name, sb.name));
}

unsigned tally_net_unix_mode(bool group)
{
	if (group)
		return 0660;
	return tally_user_mode() ? 0600 : 0666;
}
