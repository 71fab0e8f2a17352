/* SPDX-License-Identifier: MIT */
/*
 * plugins/output/prometheus/http.c - listen/allow/Accept parsing (http.h)
 */
#include "config.h"

#include <arpa/inet.h>
#include <errno.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/socket.h>

#include <event2/buffer.h>

#include "http.h"

int prom_parse_listen(const char *spec, struct prom_listen *out)
{
	struct prom_listen l;

	if (!spec ||
	    tally_net_addr_parse("listen", spec,
				 TALLY_NET_LISTEN | TALLY_NET_AS_SYSTEM,
				 &l.addr, NULL, 0) < 0) {
		errno = EINVAL;
		return -1;
	}
	snprintf(l.host, sizeof(l.host), "%s",
		 l.addr.kind == TALLY_NET_ANY ? "0.0.0.0" : l.addr.host);
	l.port = l.addr.port;
	*out = l;
	return 0;
}

int prom_parse_cidr(const char *s, struct prom_cidr *out)
{
	char buf[INET6_ADDRSTRLEN + 8];
	const char *slash;
	size_t n;
	int max;

	if (!s)
		goto out_inval;
	slash = strchr(s, '/');
	n = slash ? (size_t)(slash - s) : strlen(s);
	if (n >= 2 && s[0] == '[' && s[n - 1] == ']') {
		s++;
		n -= 2;
	}
	if (n == 0 || n >= sizeof(buf))
		goto out_inval;
	memcpy(buf, s, n);
	buf[n] = '\0';
	memset(out, 0, sizeof(*out));
	if (inet_pton(AF_INET, buf, out->addr) == 1) {
		out->family = AF_INET;
		max = 32;
	} else if (inet_pton(AF_INET6, buf, out->addr) == 1) {
		out->family = AF_INET6;
		max = 128;
	} else {
		goto out_inval;
	}
	out->bits = max;
	if (slash) {
		char *end;
		long b;

		if (slash[1] < '0' || slash[1] > '9')
			goto out_inval;
		errno = 0;
		b = strtol(slash + 1, &end, 10);
		if (errno || *end || b > max)
			goto out_inval;
		out->bits = (int)b;
	}
	/* Clear host bits, so "10.1.2.3/8" means 10.0.0.0/8. */
	for (int i = 0; i < max / 8; i++) {
		int keep = out->bits - 8 * i;

		if (keep <= 0)
			out->addr[i] = 0;
		else if (keep < 8)
			out->addr[i] &= (unsigned char)(0xff << (8 - keep));
	}
	return 0;

out_inval:
	errno = EINVAL;
	return -1;
}

static bool prefix_equal(const unsigned char *a, const unsigned char *b,
			 int bits)
{
	int full = bits / 8, rest = bits % 8;

	if (memcmp(a, b, (size_t)full) != 0)
		return false;
	if (!rest)
		return true;
	return ((a[full] ^ b[full]) & (0xff << (8 - rest)) & 0xff) == 0;
}

bool prom_cidr_match(const struct prom_cidr *c, size_t n,
		     const struct sockaddr *sa)
{
	const unsigned char *a4 = NULL, *a6 = NULL;

	if (!sa)
		return false;
	if (sa->sa_family == AF_INET) {
		a4 = (const unsigned char *)&(
			     (const struct sockaddr_in *)(const void *)sa)
			     ->sin_addr;
	} else if (sa->sa_family == AF_INET6) {
		const struct in6_addr *x =
			&((const struct sockaddr_in6 *)(const void *)sa)
				 ->sin6_addr;

		a6 = x->s6_addr;
		if (IN6_IS_ADDR_V4MAPPED(x))
			a4 = x->s6_addr + 12;
	} else {
		return false;
	}
	for (size_t i = 0; i < n; i++) {
		if (c[i].family == AF_INET && a4 &&
		    prefix_equal(a4, c[i].addr, c[i].bits))
			return true;
		if (c[i].family == AF_INET6 && a6 &&
		    prefix_equal(a6, c[i].addr, c[i].bits))
			return true;
	}
	return false;
}

/*
 * Walk a comma-separated header value (RFC 9110 lists): for each element,
 * call @fn with its token (up to ';' or whitespace) and its q value (1
 * unless a valid q parameter says otherwise).
 */
static void each_element(const char *s,
			 void (*fn)(const char *tok, size_t n, double q,
				    void *arg),
			 void *arg)
{
	while (s && *s) {
		const char *e = strchr(s, ','), *t, *p;
		size_t len;
		double q = 1.0;

		if (!e)
			e = s + strlen(s);
		while (s < e && (*s == ' ' || *s == '\t'))
			s++;
		t = s;
		while (s < e && *s != ';' && *s != ' ' && *s != '\t')
			s++;
		len = (size_t)(s - t);
		for (p = s; p < e; p++) {
			if (*p != ';')
				continue;
			p++;
			while (p < e && (*p == ' ' || *p == '\t'))
				p++;
			if (e - p >= 2 && (p[0] == 'q' || p[0] == 'Q') &&
			    p[1] == '=') {
				char *end;
				double v = strtod(p + 2, &end);

				if (end > p + 2 && v >= 0 && v <= 1)
					q = v;
			}
		}
		if (len)
			fn(t, len, q, arg);
		s = *e ? e + 1 : e;
	}
}

static bool tok_is(const char *t, size_t n, const char *want)
{
	return n == strlen(want) && strncasecmp(t, want, n) == 0;
}

struct accept_q {
	double om, text;
};

static void accept_fn(const char *t, size_t n, double q, void *arg)
{
	struct accept_q *a = arg;

	if (tok_is(t, n, "application/openmetrics-text")) {
		if (q > a->om)
			a->om = q;
	} else if (tok_is(t, n, "text/plain") || tok_is(t, n, "text/*") ||
		   tok_is(t, n, "*/*")) {
		if (q > a->text)
			a->text = q;
	}
}

bool prom_http_wants_openmetrics(const char *accept)
{
	struct accept_q a = { 0, 0 };

	each_element(accept, accept_fn, &a);
	return a.om > 0 && a.om > a.text;
}

struct gzip_q {
	bool gzip, xgzip;
};

static void gzip_fn(const char *t, size_t n, double q, void *arg)
{
	struct gzip_q *g = arg;

	if (q <= 0)
		return;
	if (tok_is(t, n, "gzip"))
		g->gzip = true;
	else if (tok_is(t, n, "x-gzip"))
		g->xgzip = true;
}

const char *prom_http_gzip_coding(const char *accept_encoding)
{
	struct gzip_q g = { false, false };

	each_element(accept_encoding, gzip_fn, &g);
	return g.gzip ? "gzip" : g.xgzip ? "x-gzip" : NULL;
}
