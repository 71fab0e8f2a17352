/* SPDX-License-Identifier: MIT */
/*
 * t/unit/prometheus-http.c - listen/allow/Accept parsing and gzip of the
 * prometheus output
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>

#include <event2/buffer.h>
#include <zlib.h>

#include <tally/http.h>

#include "../../plugins/output/prometheus/http.h"
#include "tap.h"

static void test_listen(void)
{
	static const struct {
		const char *spec, *host;
		int port;
	} good[] = {
		{ "127.0.0.1:9464", "127.0.0.1", 9464 },
		{ "[::1]:80", "::1", 80 },
		{ "[::]:9100", "::", 9100 },
		{ ":9100", "0.0.0.0", 9100 },
		{ "*:0", "0.0.0.0", 0 },
		{ "localhost:65535", "localhost", 65535 },
		{ NULL },
	};
	static const char *const bad[] = {
		"127.0.0.1", "::1:80", "[::1]80", "[::1", "host:", "host:70000",
		"host:-1", "host:12a", "host: 1", "unix:/tmp/x", "", NULL,
	};
	struct prom_listen l;

	for (int i = 0; good[i].spec; i++) {
		ok(prom_parse_listen(good[i].spec, &l) == 0, "listen %s parses",
		   good[i].spec);
		is(l.host, good[i].host, "host");
		cmp_ok(l.port, "==", good[i].port, "port");
	}
	for (int i = 0; bad[i]; i++)
		ok(prom_parse_listen(bad[i], &l) < 0 && errno == EINVAL,
		   "listen \"%s\" refused", bad[i]);
	ok(prom_parse_listen(NULL, &l) < 0, "NULL refused");
	/* the loopback policy is the core's: t/unit/net-addr.c */
}

static struct sockaddr_storage addr(const char *s)
{
	struct sockaddr_storage ss;

	memset(&ss, 0, sizeof(ss));
	if (strchr(s, ':')) {
		struct sockaddr_in6 *a = (struct sockaddr_in6 *)&ss;

		a->sin6_family = AF_INET6;
		inet_pton(AF_INET6, s, &a->sin6_addr);
	} else {
		struct sockaddr_in *a = (struct sockaddr_in *)&ss;

		a->sin_family = AF_INET;
		inet_pton(AF_INET, s, &a->sin_addr);
	}
	return ss;
}

static void test_cidr(void)
{
	static const char *const allow[] = {
		"10.1.2.3/8", "192.168.1.7", "fd00::/8", "[::1]",
		"172.16.0.0/12",
	};
	static const struct {
		const char *peer;
		bool allowed;
	} peers[] = {
		{ "10.2.3.4", true },	   { "11.0.0.1", false },
		{ "192.168.1.7", true },   { "192.168.1.8", false },
		{ "172.31.255.255", true }, { "172.32.0.0", false },
		{ "172.15.255.255", false }, { "fd12::1", true },
		{ "fe80::1", false },	   { "::1", true },
		{ "::2", false },	   { "::ffff:10.9.9.9", true },
		{ "::ffff:11.0.0.1", false }, { "127.0.0.1", false },
		{ NULL },
	};
	static const char *const bad[] = {
		"10.0.0.0/33", "abc", "", "10.0.0.0/", "::1/129", "1.2.3.4/x",
		"1.2.3.4/-1", "[1.2.3.4", NULL,
	};
	struct prom_cidr c[5], any;
	struct sockaddr_storage ss;
	char buf[INET6_ADDRSTRLEN];

	for (int i = 0; i < 5; i++)
		ok(prom_parse_cidr(allow[i], &c[i]) == 0, "allow %s parses",
		   allow[i]);
	inet_ntop(AF_INET, c[0].addr, buf, sizeof(buf));
	is(buf, "10.0.0.0", "host bits cleared: 10.1.2.3/8 is 10.0.0.0/8");
	cmp_ok(c[1].bits, "==", 32, "single IPv4 address is a /32");
	cmp_ok(c[3].bits, "==", 128, "single IPv6 address is a /128");
	for (int i = 0; peers[i].peer; i++) {
		ss = addr(peers[i].peer);
		ok(prom_cidr_match(c, 5, (struct sockaddr *)&ss) ==
			   peers[i].allowed,
		   "%s %s", peers[i].peer,
		   peers[i].allowed ? "allowed" : "refused");
	}
	ok(!prom_cidr_match(c, 5, NULL), "no address: refused");
	for (int i = 0; bad[i]; i++)
		ok(prom_parse_cidr(bad[i], &any) < 0, "allow \"%s\" refused",
		   bad[i]);
	ok(prom_parse_cidr("0.0.0.0/0", &any) == 0, "0.0.0.0/0 parses");
	ss = addr("203.0.113.9");
	ok(prom_cidr_match(&any, 1, (struct sockaddr *)&ss),
	   "0.0.0.0/0 matches any IPv4 address");
	ss = addr("2001:db8::1");
	ok(!prom_cidr_match(&any, 1, (struct sockaddr *)&ss),
	   "but no IPv6 address");
}

static void test_accept(void)
{
	static const struct {
		const char *accept;
		bool om;
	} cases[] = {
		/* what Prometheus 2.42 sends */
		{ "application/openmetrics-text;version=1.0.0,application/"
		  "openmetrics-text;version=0.0.1;q=0.75,text/plain;"
		  "version=0.0.4;q=0.5,*/*;q=0.1",
		  true },
		{ "text/plain;version=0.0.4", false },
		{ "*/*", false },
		{ "", false },
		{ "application/openmetrics-text; version=0.0.1", true },
		{ "APPLICATION/OPENMETRICS-TEXT", true },
		{ "application/openmetrics-text;q=0", false },
		{ "application/openmetrics-text;version=1.0.0;q=0.2, "
		  "text/plain;q=0.5",
		  false },
		{ "text/plain;q=0.5, application/openmetrics-text;q=0.5", false },
		{ "text/html, application/openmetrics-text;q=0.9", true },
		{ NULL },
	};
	static const struct {
		const char *enc;
		const char *coding;
	} encs[] = {
		{ "gzip", "gzip" },
		{ "gzip, deflate", "gzip" },
		{ "deflate, gzip;q=0", NULL },
		{ "deflate, gzip; q=0.0", NULL },
		{ "identity", NULL },
		{ "br;q=1.0, gzip;q=0.8, *;q=0.1", "gzip" },
		{ "x-gzip", "x-gzip" },
		{ "X-GZIP;q=0.5", "x-gzip" },
		{ "x-gzip, gzip", "gzip" },
		{ "gzip;q=0, x-gzip", "x-gzip" },
		{ "x-gzip;q=0", NULL },
		{ "gzipx", NULL },
		{ "*", NULL },
		{ "", NULL },
		{ NULL },
	};

	for (int i = 0; cases[i].accept; i++)
		ok(prom_http_wants_openmetrics(cases[i].accept) == cases[i].om,
		   "Accept: %s -> %s", cases[i].accept,
		   cases[i].om ? "OpenMetrics" : "text");
	ok(!prom_http_wants_openmetrics(NULL), "no Accept -> text");
	for (int i = 0; encs[i].enc; i++) {
		const char *got = prom_http_gzip_coding(encs[i].enc);

		is(got ? got : "identity",
		   encs[i].coding ? encs[i].coding : "identity",
		   "Accept-Encoding: %s", encs[i].enc);
	}
	ok(!prom_http_gzip_coding(NULL), "no Accept-Encoding -> identity");
}

/* gzip, then gunzip with zlib, over several evbuffer chains */
static void test_gzip(size_t n)
{
	struct evbuffer *src = evbuffer_new(), *dst = evbuffer_new();
	char *text = malloc(n + 1), *back = malloc(n + 16), *z;
	z_stream zs = { 0 };
	size_t zn;
	int rc;

	for (size_t i = 0; i < n; i++)
		text[i] = "metric_name{label=\"value\"} 12345\n"[i % 34] +
			  (char)(i % 7 == 0);
	for (size_t off = 0; off < n; off += 4000) /* many small chains */
		evbuffer_add(src, text + off, n - off < 4000 ? n - off : 4000);
	ok(tally_http_gzip(src, dst, 1) == 0, "gzip %zu bytes", n);
	cmp_ok(evbuffer_get_length(src), "==", 0, "source drained");
	zn = evbuffer_get_length(dst);
	z = (char *)evbuffer_pullup(dst, -1);
	ok(zn >= 18 && (unsigned char)z[0] == 0x1f &&
		   (unsigned char)z[1] == 0x8b,
	   "gzip magic (RFC 1952)");
	inflateInit2(&zs, 15 + 16);
	zs.next_in = (unsigned char *)z;
	zs.avail_in = (uInt)zn;
	zs.next_out = (unsigned char *)back;
	zs.avail_out = (uInt)(n + 16);
	rc = inflate(&zs, Z_FINISH);
	ok(rc == Z_STREAM_END, "inflates to the end of the stream");
	cmp_ok(zs.total_out, "==", n, "same length back");
	ok(memcmp(back, text, n) == 0, "same bytes back");
	if (n > 100000)
		cmp_ok(zn, "<", n / 4, "repetitive text compresses");
	inflateEnd(&zs);
	evbuffer_free(src);
	evbuffer_free(dst);
	free(text);
	free(back);
}

int main(void)
{
	plan(NO_PLAN);
	test_listen();
	test_cidr();
	test_accept();
	test_gzip(0);
	test_gzip(1);
	test_gzip(1000000);
	return done_testing();
}
