/* SPDX-License-Identifier: MIT */
/*
 * t/unit/net-addr.c - the address parser, the loopback policy and clashes
 * (tally/net.h): tables of good and bad addresses with the exact messages
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <tally/net.h>

#include "tap.h"

#define L  (TALLY_NET_LISTEN | TALLY_NET_UNIX | TALLY_NET_AS_SYSTEM)
#define LU (TALLY_NET_LISTEN | TALLY_NET_UNIX | TALLY_NET_AS_USER)
#define S  (TALLY_NET_UNIX)

static const char *fmt(const struct tally_net_addr *a)
{
	static char buf[300];

	return tally_net_addr_format(a, buf, sizeof(buf));
}

static void test_good(void)
{
	static const struct {
		const char *spec;
		unsigned flags;
		enum tally_net_kind kind;
		const char *host_or_path;
		int port;
		const char *canon;
	} cases[] = {
		{ "127.0.0.1:9464", L, TALLY_NET_IPV4, "127.0.0.1", 9464,
		  "127.0.0.1:9464" },
		{ "[::1]:80", L, TALLY_NET_IPV6, "::1", 80, "[::1]:80" },
		{ "[0:0::0:1]:80", L, TALLY_NET_IPV6, "::1", 80, "[::1]:80" },
		{ "[::]:9100", L, TALLY_NET_IPV6, "::", 9100, "[::]:9100" },
		{ "[::ffff:127.0.0.1]:1", L, TALLY_NET_IPV6,
		  "::ffff:127.0.0.1", 1, "[::ffff:127.0.0.1]:1" },
		{ "[fe80::1%1]:80", L, TALLY_NET_IPV6, "fe80::1%1", 80,
		  "[fe80::1%1]:80" },
		{ "*:9100", L, TALLY_NET_ANY, "*", 9100, "*:9100" },
		{ ":9100", L, TALLY_NET_ANY, "*", 9100, "*:9100" },
		{ "*:0", L, TALLY_NET_ANY, "*", 0, "*:0" },
		{ "0.0.0.0:65535", L, TALLY_NET_IPV4, "0.0.0.0", 65535,
		  "0.0.0.0:65535" },
		{ "LocalHost.:8125", L, TALLY_NET_NAME, "localhost", 8125,
		  "localhost:8125" },
		{ "node-17.cluster_a.example:2003", S, TALLY_NET_NAME,
		  "node-17.cluster_a.example", 2003,
		  "node-17.cluster_a.example:2003" },
		{ "carbon:2003", 0, TALLY_NET_NAME, "carbon", 2003,
		  "carbon:2003" },
		{ "10.1.2.3:1", 0, TALLY_NET_IPV4, "10.1.2.3", 1,
		  "10.1.2.3:1" },
		{ "unix:/run/tally/x.sock", L, TALLY_NET_PATH,
		  "/run/tally/x.sock", 0, "unix:/run/tally/x.sock" },
		{ "unix://run/./tally//x.sock", S, TALLY_NET_PATH,
		  "/run/tally/x.sock", 0, "unix:/run/tally/x.sock" },
		{ "unix:@tally-x", L, TALLY_NET_ABSTRACT, "tally-x", 0,
		  "unix:@tally-x" },
		{ NULL },
	};
	char err[TALLY_NET_ERRLEN];

	for (int i = 0; cases[i].spec; i++) {
		struct tally_net_addr a, b;
		bool unixy = cases[i].kind == TALLY_NET_PATH ||
			     cases[i].kind == TALLY_NET_ABSTRACT;

		err[0] = '\0';
		if (!ok(tally_net_addr_parse("listen", cases[i].spec,
					     cases[i].flags, &a, err,
					     sizeof(err)) == 0,
			"parses %s", cases[i].spec)) {
			diag("%s", err);
			continue;
		}
		cmp_ok(a.kind, "==", cases[i].kind, "%s: kind", cases[i].spec);
		is(unixy ? a.path : a.host, cases[i].host_or_path,
		   "%s: host or path", cases[i].spec);
		cmp_ok(a.port, "==", cases[i].port, "%s: port", cases[i].spec);
		is(fmt(&a), cases[i].canon, "%s: canonical text",
		   cases[i].spec);
		cmp_ok(a.socktype, "==", SOCK_STREAM, "%s: stream",
		       cases[i].spec);
		/* the canonical text parses to itself */
		ok(tally_net_addr_parse("listen", cases[i].canon,
					cases[i].flags, &b, NULL, 0) == 0 &&
			   !strcmp(fmt(&b), cases[i].canon),
		   "%s: canonical text is stable", cases[i].spec);
	}
}

static void test_sockaddr(void)
{
	struct tally_net_addr a;
	const struct sockaddr_in *in = (const struct sockaddr_in *)&a.sa;
	const struct sockaddr_in6 *in6 = (const struct sockaddr_in6 *)&a.sa;
	const struct sockaddr_un *un = (const struct sockaddr_un *)&a.sa;

	tally_net_addr_parse("server", "10.0.0.7:2003", 0, &a, NULL, 0);
	ok(in->sin_family == AF_INET && ntohs(in->sin_port) == 2003 &&
		   ntohl(in->sin_addr.s_addr) == 0x0a000007 &&
		   a.salen == sizeof(*in),
	   "IPv4 sockaddr");
	tally_net_addr_parse("listen", "*:9", L, &a, NULL, 0);
	ok(in6->sin6_family == AF_INET6 && ntohs(in6->sin6_port) == 9 &&
		   IN6_IS_ADDR_UNSPECIFIED(&in6->sin6_addr),
	   "* is the IPv6 wildcard (bound dual-stack)");
	tally_net_addr_parse("listen", "[fe80::1%7]:9", L, &a, NULL, 0);
	cmp_ok(in6->sin6_scope_id, "==", 7, "IPv6 zone as scope id");
	tally_net_addr_parse("listen", "unix:@ab", L, &a, NULL, 0);
	ok(un->sun_family == AF_UNIX && un->sun_path[0] == '\0' &&
		   !memcmp(un->sun_path + 1, "ab", 2) &&
		   a.salen == offsetof(struct sockaddr_un, sun_path) + 3,
	   "abstract sockaddr: leading NUL, exact length");
	tally_net_addr_parse("listen", "udp:1", L | TALLY_NET_UDP, &a, NULL,
			     0);
	cmp_ok(a.socktype, "==", SOCK_DGRAM, "TALLY_NET_UDP: datagrams");
}

static void test_bad(void)
{
	char p108[120], p107[120], msg108[300];
	struct {
		const char *spec;
		unsigned flags;
		int err;
		const char *msg;
	} cases[] = {
		{ "", L, EINVAL,
		  "listen \"\": empty: write host:port, [ipv6]:port, *:port "
		  "or unix:/path" },
		{ NULL, S, EINVAL,
		  "listen \"\": empty: write host:port, [ipv6]:port or "
		  "unix:/path" },
		{ "127.0.0.1", L, EINVAL,
		  "listen \"127.0.0.1\": no port: write host:port, "
		  "[ipv6]:port, *:port or unix:/path" },
		{ "carbon", 0, EINVAL,
		  "listen \"carbon\": no port: write host:port or "
		  "[ipv6]:port" },
		{ "::1:80", L, EINVAL,
		  "listen \"::1:80\": an IPv6 address goes in brackets: "
		  "write [ipv6]:port" },
		{ "[::1", L, EINVAL,
		  "listen \"[::1\": no \"]\" after the IPv6 address: write "
		  "[ipv6]:port" },
		{ "[::1]80", L, EINVAL,
		  "listen \"[::1]80\": no port after \"]\": write "
		  "[ipv6]:port" },
		{ "[1.2.3.4]:80", L, EINVAL,
		  "listen \"[1.2.3.4]:80\": \"1.2.3.4\" is not an IPv6 "
		  "address" },
		{ "[fe80::1%]:80", L, EINVAL,
		  "listen \"[fe80::1%]:80\": \"fe80::1%\" is not an IPv6 "
		  "address" },
		{ "host:", L, EINVAL,
		  "listen \"host:\": port \"\" is not a number from 0 to "
		  "65535 (0: any free port)" },
		{ "host:-1", L, EINVAL,
		  "listen \"host:-1\": port \"-1\" is not a number from 0 to "
		  "65535 (0: any free port)" },
		{ "host:+1", S, EINVAL,
		  "listen \"host:+1\": port \"+1\" is not a number from 1 to "
		  "65535" },
		{ "host: 1", L, EINVAL,
		  "listen \"host: 1\": port \" 1\" is not a number from 0 to "
		  "65535 (0: any free port)" },
		{ "host:0x10", L, EINVAL,
		  "listen \"host:0x10\": port \"0x10\" is not a number from "
		  "0 to 65535 (0: any free port)" },
		{ "host:http", L, EINVAL,
		  "listen \"host:http\": port \"http\" is not a number from "
		  "0 to 65535 (0: any free port)" },
		{ "host:70000", L, EINVAL,
		  "listen \"host:70000\": port 70000 is out of range: use 0 "
		  "to 65535 (0: any free port)" },
		{ "host:99999999999999999999", L, EINVAL,
		  "listen \"host:99999999999999999999\": port "
		  "99999999999999999999 is out of range: use 0 to 65535 (0: "
		  "any free port)" },
		{ "host:0", S, EINVAL,
		  "listen \"host:0\": port 0 is out of range: use 1 to "
		  "65535" },
		{ "300.1.1.1:80", L, EINVAL,
		  "listen \"300.1.1.1:80\": \"300.1.1.1\" is not an IPv4 "
		  "address" },
		{ "127.1:80", L, EINVAL,
		  "listen \"127.1:80\": \"127.1\" is not an IPv4 address" },
		{ "bad!host:80", L, EINVAL,
		  "listen \"bad!host:80\": \"bad!host\" is not a valid host "
		  "name" },
		{ "-a.b:80", L, EINVAL,
		  "listen \"-a.b:80\": \"-a.b\" is not a valid host name" },
		{ "a-.b:80", L, EINVAL,
		  "listen \"a-.b:80\": \"a-.b\" is not a valid host name" },
		{ "a..b:80", L, EINVAL,
		  "listen \"a..b:80\": \"a..b\" is not a valid host name" },
		{ "*:2003", S, EINVAL,
		  "listen \"*:2003\": a server needs a host name or "
		  "address" },
		{ ":2003", 0, EINVAL,
		  "listen \":2003\": a server needs a host name or address" },
		{ "unix:/x", TALLY_NET_LISTEN, EINVAL,
		  "listen \"unix:/x\": unix sockets are not offered here: "
		  "write host:port, [ipv6]:port or *:port" },
		{ "unix:rel.sock", L, EINVAL,
		  "listen \"unix:rel.sock\": the socket path must be "
		  "absolute (unix:/dir/file) or abstract (unix:@name)" },
		{ "unix:@", L, EINVAL,
		  "listen \"unix:@\": the socket path must be absolute "
		  "(unix:/dir/file) or abstract (unix:@name)" },
		{ "unix:", S, EINVAL,
		  "listen \"unix:\": the socket path must be absolute "
		  "(unix:/dir/file) or abstract (unix:@name)" },
		{ p108, L, ENAMETOOLONG, msg108 },
		/* the loopback policy of a user collector */
		{ "0.0.0.0:9464", LU, EPERM,
		  "listen \"0.0.0.0:9464\": a user collector listens on "
		  "loopback addresses only (127.0.0.1, [::1], localhost) or "
		  "unix sockets" },
		{ "*:9464", LU, EPERM,
		  "listen \"*:9464\": a user collector listens on loopback "
		  "addresses only (127.0.0.1, [::1], localhost) or unix "
		  "sockets" },
		{ NULL, 0, 0, NULL },
	};
	char err[TALLY_NET_ERRLEN];

	/* unix:/ + 107 bytes of path does not fit in sun_path, 106 does */
	snprintf(p108, sizeof(p108), "unix:/%0107d", 0);
	snprintf(p107, sizeof(p107), "unix:/%0106d", 0);
	snprintf(msg108, sizeof(msg108),
		 "listen \"%s\": the socket path is 108 bytes, a unix socket "
		 "allows at most 107; choose a shorter path",
		 p108);
	for (int i = 0; cases[i].msg; i++) {
		struct tally_net_addr a = { .port = 4242 };

		err[0] = '\0';
		errno = 0;
		ok(tally_net_addr_parse("listen", cases[i].spec,
					cases[i].flags, &a, err,
					sizeof(err)) == -1 &&
			   errno == cases[i].err,
		   "refuses \"%s\" (errno %d)", cases[i].spec ? cases[i].spec
							       : "(null)",
		   cases[i].err);
		is(err, cases[i].msg, "message for \"%s\"",
		   cases[i].spec ? cases[i].spec : "(null)");
		cmp_ok(a.port, "==", 4242, "no side effect on failure");
	}
	{
		struct tally_net_addr a;

		ok(tally_net_addr_parse("listen", p107, L, &a, err,
					sizeof(err)) == 0 &&
			   strlen(a.path) == 107,
		   "a 107-byte socket path fits");
	}
	ok(tally_net_addr_parse("server", "x", 0, &(struct tally_net_addr){ 0 },
				NULL, 0) == -1 && errno == EINVAL,
	   "a NULL message buffer is allowed");
}

static void test_loopback(void)
{
	static const struct {
		const char *spec;
		bool zmq;
		bool loopback;
	} cases[] = {
		{ "127.0.0.1:1", false, true },
		{ "127.255.0.9:1", false, true },
		{ "[::1]:1", false, true },
		{ "[::ffff:127.0.0.1]:1", false, true },
		{ "localhost:1", false, true },
		{ "LOCALHOST:1", false, true },
		{ "app.localhost:1", false, true },
		{ "unix:/tmp/x", false, true },
		{ "unix:@x", false, true },
		{ "*:1", false, false },
		{ "0.0.0.0:1", false, false },
		{ "[::]:1", false, false },
		{ "128.0.0.1:1", false, false },
		{ "10.0.0.1:1", false, false },
		{ "[::ffff:10.0.0.1]:1", false, false },
		{ "[fe80::1%1]:1", false, false },
		{ "127.example.org:1", false, false },
		{ "localhost.example:1", false, false },
		{ "lo:1", false, false }, /* a host name here */
		{ "eth0:1", false, false },
		{ "tcp://127.0.0.1:1", true, true },
		{ "tcp://127.1.2.3:1", true, true },
		{ "tcp://[::1]:1", true, true },
		{ "tcp://localhost:1", true, true },
		{ "tcp://lo:1", true, true }, /* libzmq: interface lo */
		{ "tcp://LO:1", true, true },
		{ "tcp://eth0:1", true, false },
		{ "tcp://*:1", true, false },
		{ "tcp://0.0.0.0:1", true, false },
		{ "tcp://128.0.0.1:1", true, false },
		{ "tcp://127.example.org:1", true, false },
		{ "ipc:///tmp/x", true, true },
		{ "ipc://@x", true, true },
		{ NULL },
	};

	for (int i = 0; cases[i].spec; i++) {
		struct tally_net_addr a;
		const char *spec = cases[i].spec;
		int rc = cases[i].zmq ? tally_net_zmq_parse("endpoint", spec,
							    L, &a, NULL, 0)
				      : tally_net_addr_parse("listen", spec, L,
							     &a, NULL, 0);

		if (!ok(rc == 0, "parses %s", cases[i].spec))
			continue;
		ok(tally_net_addr_loopback(&a) == cases[i].loopback,
		   "%s is %sloopback", cases[i].spec,
		   cases[i].loopback ? "" : "not ");
		ok(tally_net_listen_permitted(&a, true) == cases[i].loopback,
		   "a user collector %s listen on %s",
		   cases[i].loopback ? "may" : "may not", cases[i].spec);
		ok(tally_net_listen_permitted(&a, false),
		   "a system collector may listen on %s", cases[i].spec);
		/* the parser applies the same policy */
		rc = cases[i].zmq ? tally_net_zmq_parse("endpoint",
							cases[i].spec, LU, &a,
							NULL, 0)
				  : tally_net_addr_parse("listen",
							 cases[i].spec, LU, &a,
							 NULL, 0);
		ok((rc == 0) == cases[i].loopback &&
			   (rc == 0 || errno == EPERM),
		   "parsing %s as a user collector: %s", cases[i].spec,
		   cases[i].loopback ? "accepted" : "EPERM");
	}
}

static void test_sockaddr_loopback(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	struct sockaddr_in6 in6 = { .sin6_family = AF_INET6 };
	struct sockaddr_un un = { .sun_family = AF_UNIX };
	struct sockaddr sa = { .sa_family = AF_PACKET };

	inet_pton(AF_INET, "127.0.0.53", &in.sin_addr);
	ok(tally_net_sockaddr_loopback((struct sockaddr *)&in), "127.0.0.53");
	inet_pton(AF_INET, "192.168.1.1", &in.sin_addr);
	ok(!tally_net_sockaddr_loopback((struct sockaddr *)&in),
	   "192.168.1.1");
	inet_pton(AF_INET6, "::1", &in6.sin6_addr);
	ok(tally_net_sockaddr_loopback((struct sockaddr *)&in6), "::1");
	inet_pton(AF_INET6, "::ffff:127.0.0.1", &in6.sin6_addr);
	ok(tally_net_sockaddr_loopback((struct sockaddr *)&in6),
	   "::ffff:127.0.0.1");
	inet_pton(AF_INET6, "::2", &in6.sin6_addr);
	ok(!tally_net_sockaddr_loopback((struct sockaddr *)&in6), "::2");
	ok(tally_net_sockaddr_loopback((struct sockaddr *)&un), "AF_UNIX");
	ok(!tally_net_sockaddr_loopback(&sa), "another family");
	ok(!tally_net_sockaddr_loopback(NULL), "NULL");
}

static void test_zmq(void)
{
	static const struct {
		const char *ep;
		unsigned flags;
		enum tally_net_kind kind;
		const char *host_or_path;
		int port;
		const char *canon;
	} good[] = {
		{ "ipc:///run/tally/trace.sock", L, TALLY_NET_PATH,
		  "/run/tally/trace.sock", 0, "ipc:///run/tally/trace.sock" },
		{ "ipc:///run//tally/./trace.sock", L, TALLY_NET_PATH,
		  "/run/tally/trace.sock", 0, "ipc:///run/tally/trace.sock" },
		{ "ipc://@tally", L, TALLY_NET_ABSTRACT, "tally", 0,
		  "ipc://@tally" },
		{ "tcp://127.0.0.1:5555", L, TALLY_NET_IPV4, "127.0.0.1",
		  5555, "tcp://127.0.0.1:5555" },
		{ "tcp://127.0.0.1:*", L, TALLY_NET_IPV4, "127.0.0.1", 0,
		  "tcp://127.0.0.1:*" },
		{ "tcp://127.0.0.1:0", L, TALLY_NET_IPV4, "127.0.0.1", 0,
		  "tcp://127.0.0.1:*" },
		{ "tcp://[::1]:1", L, TALLY_NET_IPV6, "::1", 1,
		  "tcp://[::1]:1" },
		{ "tcp://*:65535", L, TALLY_NET_ANY, "*", 65535,
		  "tcp://*:65535" },
		{ "tcp://eth0:5555", L, TALLY_NET_NAME, "eth0", 5555,
		  "tcp://eth0:5555" },
		{ "tcp://root.example:5555", 0, TALLY_NET_NAME,
		  "root.example", 5555, "tcp://root.example:5555" },
		{ NULL },
	};
	char long_ep[140], long_msg[400];
	struct {
		const char *ep;
		unsigned flags;
		int err;
		const char *msg;
	} bad[] = {
		{ "", L, EINVAL,
		  "endpoint is empty: use ipc:///path or tcp://host:port" },
		{ "blah://x", L, EINVAL,
		  "endpoint blah://x: use ipc:///path or tcp://host:port" },
		{ "inproc://x", L, EINVAL,
		  "endpoint inproc://x: use ipc:///path or tcp://host:port" },
		{ "ipc://rel.sock", L, EINVAL,
		  "endpoint ipc://rel.sock: the ipc path must be absolute "
		  "(ipc:///dir/file) or abstract (ipc://@name)" },
		{ "ipc://@", L, EINVAL,
		  "endpoint ipc://@: the ipc path must be absolute "
		  "(ipc:///dir/file) or abstract (ipc://@name)" },
		{ long_ep, L, ENAMETOOLONG, long_msg },
		{ "tcp://127.0.0.1:99999", L, EINVAL,
		  "endpoint tcp://127.0.0.1:99999: use tcp://host:port with "
		  "a port from 1 to 65535, or * for any free port" },
		{ "tcp://127.0.0.1:-5", L, EINVAL,
		  "endpoint tcp://127.0.0.1:-5: use tcp://host:port with a "
		  "port from 1 to 65535, or * for any free port" },
		{ "tcp://127.0.0.1:", L, EINVAL,
		  "endpoint tcp://127.0.0.1:: use tcp://host:port with a "
		  "port from 1 to 65535, or * for any free port" },
		{ "tcp://127.0.0.1:0x10", L, EINVAL,
		  "endpoint tcp://127.0.0.1:0x10: use tcp://host:port with "
		  "a port from 1 to 65535, or * for any free port" },
		{ "tcp://127.0.0.1", L, EINVAL,
		  "endpoint tcp://127.0.0.1: use tcp://host:port with a "
		  "port from 1 to 65535, or * for any free port" },
		{ "tcp://:5", L, EINVAL,
		  "endpoint tcp://:5: use tcp://host:port with a port from "
		  "1 to 65535, or * for any free port" },
		{ "tcp://root:*", 0, EINVAL,
		  "endpoint tcp://root:*: use tcp://host:port with a port "
		  "from 1 to 65535" },
		{ "tcp://[::g]:5", L, EINVAL,
		  "endpoint tcp://[::g]:5: \"::g\" is not an IPv6 address" },
		{ "tcp://a b:5", L, EINVAL,
		  "endpoint tcp://a b:5: \"a b\" is not a host, address or "
		  "interface name" },
		{ "tcp://*:5", 0, EINVAL,
		  "endpoint tcp://*:5: \"*\" is not a host, address or "
		  "interface name" },
		{ "tcp://0.0.0.0:5555", LU, EPERM,
		  "endpoint tcp://0.0.0.0:5555: a user collector listens on "
		  "loopback only (tcp://127.0.0.1:PORT)" },
		{ NULL, 0, 0, NULL },
	};
	char err[TALLY_NET_ERRLEN];

	for (int i = 0; good[i].ep; i++) {
		struct tally_net_addr a;
		bool unixy = good[i].kind == TALLY_NET_PATH ||
			     good[i].kind == TALLY_NET_ABSTRACT;

		if (!ok(tally_net_zmq_parse("endpoint", good[i].ep,
					    good[i].flags, &a, err,
					    sizeof(err)) == 0,
			"parses %s", good[i].ep)) {
			diag("%s", err);
			continue;
		}
		cmp_ok(a.kind, "==", good[i].kind, "%s: kind", good[i].ep);
		is(unixy ? a.path : a.host, good[i].host_or_path,
		   "%s: host or path", good[i].ep);
		cmp_ok(a.port, "==", good[i].port, "%s: port", good[i].ep);
		is(fmt(&a), good[i].canon, "%s: canonical text", good[i].ep);
		ok(a.zmq, "%s: marked as a ZeroMQ endpoint", good[i].ep);
	}
	snprintf(long_ep, sizeof(long_ep), "ipc:///%0120d", 0);
	snprintf(long_msg, sizeof(long_msg),
		 "endpoint %s: the socket path is 121 bytes, a unix socket "
		 "allows at most 107; choose a shorter path",
		 long_ep);
	for (int i = 0; bad[i].msg; i++) {
		struct tally_net_addr a;

		err[0] = '\0';
		errno = 0;
		ok(tally_net_zmq_parse("endpoint", bad[i].ep, bad[i].flags, &a,
				       err, sizeof(err)) == -1 &&
			   errno == bad[i].err,
		   "refuses %s", bad[i].ep);
		is(err, bad[i].msg, "message for %s", bad[i].ep);
	}
}

static void test_clash(void)
{
	static const struct {
		const char *a, *b;
		bool clash;
	} cases[] = {
		{ "127.0.0.1:9464", "127.0.0.1:9464", true },
		{ "127.0.0.1:9464", "127.0.0.1:9465", false },
		{ "127.0.0.1:9464", "127.0.0.2:9464", false },
		{ "*:9464", "127.0.0.1:9464", true },
		{ ":9464", "[::1]:9464", true },
		{ "0.0.0.0:9464", "10.1.1.1:9464", true },
		{ "0.0.0.0:9464", "[::1]:9464", false },
		{ "[::]:9464", "10.1.1.1:9464", true },
		{ "[::]:9464", "[fe80::1%1]:9464", true },
		{ "[::1]:9464", "[0::1]:9464", true },
		{ "[::1]:9464", "127.0.0.1:9464", false },
		{ "localhost:9464", "127.0.0.1:9464", true },
		{ "localhost:9464", "[::1]:9464", true },
		{ "localhost:9464", "127.0.0.2:9464", false },
		{ "node1:9464", "NODE1.:9464", true },
		{ "node1:9464", "node2:9464", false },
		{ "node1:9464", "10.0.0.1:9464", false }, /* needs DNS */
		{ "127.0.0.1:0", "127.0.0.1:0", false },   /* any free port */
		{ "*:0", "*:0", false },
		{ "unix:/run/x", "unix:/run//./x", true },
		{ "unix:/run/x", "unix:/run/y", false },
		{ "unix:@x", "unix:@x", true },
		{ "unix:@x", "unix:/x", false },
		{ "unix:/x", "*:1", false },
		{ "ipc:///run/x", "unix:/run/x", true },
		{ "ipc:///run/x", "ipc:///run/x", true },
		{ "ipc://@x", "unix:@x", true },
		{ "tcp://127.0.0.1:5555", "tcp://*:5555", true },
		{ "tcp://127.0.0.1:5555", "127.0.0.1:5555", true },
		{ "tcp://127.0.0.1:*", "tcp://127.0.0.1:*", false },
		{ "tcp://eth0:5555", "tcp://eth0:5555", true },
		{ NULL },
	};

	for (int i = 0; cases[i].a; i++) {
		struct tally_net_addr a, b;
		int ra = strstr(cases[i].a, "://")
				 ? tally_net_zmq_parse("endpoint", cases[i].a,
						       L, &a, NULL, 0)
				 : tally_net_addr_parse("listen", cases[i].a,
							L, &a, NULL, 0);
		int rb = strstr(cases[i].b, "://")
				 ? tally_net_zmq_parse("endpoint", cases[i].b,
						       L, &b, NULL, 0)
				 : tally_net_addr_parse("listen", cases[i].b,
							L, &b, NULL, 0);

		if (!ok(ra == 0 && rb == 0, "parse %s and %s", cases[i].a,
			cases[i].b))
			continue;
		ok(tally_net_addr_clash(&a, &b) == cases[i].clash &&
			   tally_net_addr_clash(&b, &a) == cases[i].clash,
		   "%s and %s %s", cases[i].a, cases[i].b,
		   cases[i].clash ? "clash" : "do not clash");
	}
	{
		struct tally_net_addr t, u;

		tally_net_addr_parse("listen", "*:8125", L, &t, NULL, 0);
		tally_net_addr_parse("listen", "*:8125", L | TALLY_NET_UDP, &u,
				     NULL, 0);
		ok(!tally_net_addr_clash(&t, &u),
		   "TCP and UDP on one port do not clash");
		tally_net_addr_parse("listen", "unix:/x", L | TALLY_NET_UDP,
				     &u, NULL, 0);
		tally_net_addr_parse("listen", "unix:/x", L, &t, NULL, 0);
		ok(tally_net_addr_clash(&t, &u),
		   "a unix path is one file, stream or datagram");
	}
}

int main(void)
{
	plan(NO_PLAN);
	test_good();
	test_sockaddr();
	test_bad();
	test_loopback();
	test_sockaddr_loopback();
	test_zmq();
	test_clash();
	cmp_ok(tally_net_unix_mode(true), "==", 0660, "group: 0660");
	cmp_ok(tally_net_unix_mode(false), "==", 0666,
	       "system collector, no group: 0666");
	return done_testing();
}
