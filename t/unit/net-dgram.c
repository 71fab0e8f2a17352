/* SPDX-License-Identifier: MIT */
/*
 * t/unit/net-dgram.c - the datagram sender (tally/net.h): whole records
 * packed into datagrams up to the size, a record too long dropped and
 * counted, a refused datagram counted, names refused
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

#include <event2/buffer.h>

#include <tally/net.h>

#include "tap.h"

static struct tally_net_addr addr(const char *spec)
{
	struct tally_net_addr a;
	char err[TALLY_NET_ERRLEN];

	if (tally_net_addr_parse("server", spec, TALLY_NET_UDP, &a, err,
				 sizeof(err)) < 0)
		bail_out("%s", err);
	return a;
}

/* The next datagram on @fd, as a string (static buffer), "" if none. */
static const char *next_dgram(int fd)
{
	static char buf[2048];
	ssize_t r = recv(fd, buf, sizeof(buf) - 1, MSG_DONTWAIT);

	buf[r > 0 ? r : 0] = '\0';
	return buf;
}

int main(void)
{
	struct sockaddr_in in = { .sin_family = AF_INET };
	socklen_t sl = sizeof(in);
	struct tally_net_dgram_stats st;
	struct tally_net_dgram *d;
	struct evbuffer *b = evbuffer_new();
	struct tally_net_addr a;
	char spec[64];
	int fd;

	plan(NO_PLAN);
	fd = socket(AF_INET, SOCK_DGRAM, 0);
	in.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&in, sizeof(in)) < 0 ||
	    getsockname(fd, (struct sockaddr *)&in, &sl) < 0)
		bail_out("bind: %s", strerror(errno));
	snprintf(spec, sizeof(spec), "127.0.0.1:%u", ntohs(in.sin_port));
	a = addr(spec);
	d = tally_net_dgram_new(NULL, "server \"test\"", &a, 16);
	ok(d != NULL, "datagram sender of 16 bytes");

	/* 6 + 6 fit in 16, the third starts a new datagram; 20 is too long */
	evbuffer_add_printf(b, "a 1 1\nb 2 2\nc 3 3\n"
			       "a-very-long-line 1\nd 4 4\ne 5 5");
	ok(tally_net_dgram_send(d, b, '\n') == 0, "send");
	cmp_ok(evbuffer_get_length(b), "==", 0, "the buffer is emptied");
	is(next_dgram(fd), "a 1 1\nb 2 2\n", "datagram 1: two whole lines");
	is(next_dgram(fd), "c 3 3\n", "datagram 2: the line that did not fit");
	is(next_dgram(fd), "d 4 4\ne 5 5", "datagram 3: after the long one, "
					 "the last line without its newline");
	is(next_dgram(fd), "", "nothing else");
	tally_net_dgram_get_stats(d, &st);
	cmp_ok(st.datagrams, "==", 3, "3 datagrams");
	cmp_ok(st.oversize, "==", 1, "the long line dropped, counted");
	cmp_ok(st.send_errors, "==", 0, "no send error");
	cmp_ok(st.bytes, "==", 12 + 6 + 11, "bytes");

	/* nobody listens: the ICMP error fails a later send, counted */
	close(fd);
	for (int i = 0; i < 3; i++) {
		evbuffer_add_printf(b, "x 1 1\n");
		tally_net_dgram_send(d, b, '\n');
	}
	tally_net_dgram_get_stats(d, &st);
	cmp_ok(st.send_errors, ">=", 1, "refused datagrams are counted");
	tally_net_dgram_free(d);
	tally_net_dgram_free(NULL);

	a = addr("localhost:2003");
	ok(!tally_net_dgram_new(NULL, "x", &a, 1432) && errno == EINVAL,
	   "a host name is refused: EINVAL");
	evbuffer_free(b);
	return done_testing();
}
