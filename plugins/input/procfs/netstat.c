/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/procfs/netstat.c - vmstat, netstat and sockstat groups
 *
 * node_exporter's vmstat, netstat and sockstat collectors:
 *   /proc/vmstat             "key value" lines      node_vmstat_<key>
 *   /proc/net/netstat, snmp  header/value line pairs node_netstat_<Proto>_<F>
 *   /proc/net/snmp6          "Ip6InReceives value"  node_netstat_Ip6_InReceives
 *   /proc/net/sockstat[6]    "TCP: inuse 5 mem 1"    node_sockstat_TCP_inuse
 * vmstat and netstat export only the keys matching the `vmstat_fields` and
 * `netstat_fields` options (node_exporter's --collector.*.fields, same
 * defaults). Their values are untyped in node_exporter: exported as gauges,
 * which Prometheus treats the same.
 *
 * Cost model: the files are kept open and re-read each tick (procfs_load()).
 * The keys of vmstat, netstat, snmp and snmp6 come in a fixed order, so the
 * fields regex is evaluated and the metric name built once per key
 * position (struct procfs_kvcache), again only when a key changes. sockstat
 * has a dozen values: their names are formatted on the stack each tick and
 * copied into the batch's arena. A steady-state tick allocates nothing.
 *
 * Failure model: a missing file is logged once (snmp6 and sockstat6, absent
 * without IPv6, at debug level) and retried; a line or a pair of lines
 * that does not parse is dropped and counted as "malformed".
 */
#include "config.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "procfs.h"

/* Longest key kept; real ones are under 40 characters. */
#define PROCFS_KEY_MAX 128

/*
 * Parsers. Pure functions over NUL-terminated text, unit-tested directly.
 */

/* The end of the token at @s (a blank, newline or NUL). */
static const char *procfs_token_end(const char *s)
{
	while (*s && *s != ' ' && *s != '\t' && *s != '\n')
		s++;
	return s;
}

/**
 * procfs_parse_number() - a decimal integer, possibly negative
 * @pp: cursor, after optional blanks; advanced past the number on success
 * @v:  result (snmp's Tcp MaxConn is -1; the counters are u64)
 * Return: 0, or -1 (no number, or not followed by a blank or line end).
 */
static int procfs_parse_number(const char **pp, double *v)
{
	const char *s = procfs_blank(*pp);
	bool neg = *s == '-';
	uint64_t u;

	if (neg)
		s++;
	if (tally_parse_u64(&s, &u) < 0)
		return -1;
	if (*s && *s != ' ' && *s != '\t' && *s != '\n')
		return -1;
	*v = neg ? -(double)u : (double)u;
	*pp = s;
	return 0;
}

/**
 * procfs_parse_kv() - a "key value" line (/proc/vmstat, /proc/net/snmp6)
 * @line: the line, ending at NUL or newline
 * @key:  set to the key's start (in @line)
 * @len:  its length
 * @v:    the value
 * Return: 0, or -1 (malformed).
 */
static int procfs_parse_kv(const char *line, const char **key, size_t *len,
			   double *v)
{
	const char *end = procfs_token_end(line);
	const char *s = end;

	if (end == line || end - line >= PROCFS_KEY_MAX)
		return -1;
	if (procfs_parse_number(&s, v) < 0 || !procfs_eol(s))
		return -1;
	*key = line;
	*len = (size_t)(end - line);
	return 0;
}

/**
 * procfs_snmp6_split() - node_exporter's split of an snmp6 key
 * @key: e.g. "Icmp6InMsgs" (length @len)
 * Return: the length of the protocol part, through the first '6'
 * ("Icmp6"), or 0 when the key has no '6' or nothing after it (skipped,
 * as node_exporter skips it).
 */
static size_t procfs_snmp6_split(const char *key, size_t len)
{
	const char *six = memchr(key, '6', len);

	if (!six || (size_t)(six - key) + 1 >= len)
		return 0;
	return (size_t)(six - key) + 1;
}

/**
 * struct procfs_pair - cursor over a netstat/snmp line pair
 * @proto:  protocol name ("TcpExt"), in the header line
 * @plen:   its length
 * @h:      next field name in the header line
 * @v:      next value in the value line
 */
struct procfs_pair {
	const char *proto;
	size_t plen;
	const char *h, *v;
};

/**
 * procfs_pair_start() - check a header and a value line of one protocol
 * @hdr:  "TcpExt: SyncookiesSent SyncookiesRecv ..."
 * @vals: "TcpExt: 0 0 ..."
 * @c:    cursor to initialise
 * Return: 0, or -1 when the prefixes differ or are missing.
 */
static int procfs_pair_start(const char *hdr, const char *vals,
			     struct procfs_pair *c)
{
	const char *colon = hdr;

	while (*colon && *colon != ':' && *colon != ' ' && *colon != '\n')
		colon++;
	if (*colon != ':' || colon == hdr ||
	    strncmp(hdr, vals, (size_t)(colon - hdr + 1)) != 0)
		return -1;
	c->proto = hdr;
	c->plen = (size_t)(colon - hdr);
	c->h = colon + 1;
	c->v = vals + (colon - hdr) + 1;
	return 0;
}

/**
 * procfs_pair_next() - the next field of a line pair
 * @c:   cursor
 * @key: set to the field name's start (in the header line)
 * @len: its length
 * @v:   its value
 * Return: 1 (a field), 0 (both lines ended), -1 (the lines disagree: more
 * names than values or the reverse, or a value that is not a number).
 */
static int procfs_pair_next(struct procfs_pair *c, const char **key,
			    size_t *len, double *v)
{
	const char *h = procfs_blank(c->h);
	bool hend = *h == '\0' || *h == '\n';

	if (hend)
		return procfs_eol(c->v) ? 0 : -1;
	if (procfs_eol(c->v) || procfs_parse_number(&c->v, v) < 0)
		return -1;
	*key = h;
	c->h = procfs_token_end(h);
	*len = (size_t)(c->h - h);
	return 1;
}

/* Caches. */

static void procfs_kv_clear(struct procfs_kv *e)
{
	free(e->key);
	free(e->name);
	free(e->help);
	memset(e, 0, sizeof(*e));
}

static void procfs_kvcache_free(struct procfs_kvcache *c)
{
	for (size_t i = 0; i < c->n; i++)
		procfs_kv_clear(&c->v[i]);
	free(c->v);
	c->v = NULL;
	c->n = 0;
}

/**
 * procfs_kv_at() - the cached naming of the key at position @i
 * @c:      the file's cache
 * @i:      position of the key in the file
 * @key:    the key as matched by @fields ("Tcp_ActiveOpens"), length @len
 * @fields: the group's fields regex list
 * @prefix: metric name prefix ("node_vmstat_")
 * @hpre:   help text prefix ("Statistic "), followed by @hkey and "."
 * @hkey:   the key as the help text writes it ("TcpActiveOpens")
 * Return: the entry, or NULL with errno = ENOMEM.
 */
static struct procfs_kv *procfs_kv_at(struct procfs_kvcache *c, size_t i,
				      const char *key, size_t len,
				      const struct tally_regexlist *fields,
				      const char *prefix, const char *hpre,
				      const char *hkey)
{
	struct procfs_kv *e;
	size_t nlen, hlen;

	e = procfs_grow(c->v, &c->n, i, sizeof(*c->v));
	if (!e)
		return NULL;
	c->v = e;
	e = &c->v[i];
	if (e->key && strlen(e->key) == len && memcmp(e->key, key, len) == 0)
		return e;
	procfs_kv_clear(e);
	e->key = strndup(key, len);
	if (!e->key)
		return NULL;
	e->keep = tally_regexlist_match(fields, e->key);
	if (!e->keep)
		return e;
	nlen = strlen(prefix) + len + 1;
	hlen = strlen(hpre) + strlen(hkey) + 2;
	e->name = malloc(nlen);
	e->help = malloc(hlen);
	if (!e->name || !e->help) {
		procfs_kv_clear(e);
		return NULL;
	}
	snprintf(e->name, nlen, "%s%s", prefix, e->key);
	snprintf(e->help, hlen, "%s%s.", hpre, hkey);
	return e;
}

/* Records. */

int procfs_read_vmstat(struct tally_instance *inst, struct procfs *p,
		       struct tally_batch *b, int64_t ts)
{
	const char *text = procfs_load(inst, p, PROCFS_VMSTAT);
	size_t i = 0;

	if (!text)
		return 0;
	procfs_for_each_line(line, nl, text) {
		char key[PROCFS_KEY_MAX];
		struct procfs_kv *e;
		const char *k;
		size_t len;
		double v;

		if (procfs_parse_kv(line, &k, &len, &v) < 0) {
			procfs_malformed(inst, p, "vmstat", line);
			continue;
		}
		memcpy(key, k, len);
		key[len] = '\0';
		e = procfs_kv_at(&p->vm_kv, i++, k, len, &p->vmstat_fields,
				 "node_vmstat_", "/proc/vmstat information field ",
				 key);
		if (!e)
			return -1;
		if (e->keep && tally_batch_add_metric(b, TALLY_GAUGE, e->name,
						      e->help, p->empty, v,
						      ts) < 0)
			return -1;
	}
	return 0;
}

/* One field of netstat, snmp or snmp6: name it (cached) and emit it. */
static int procfs_netstat_emit(struct procfs *p, struct procfs_kvcache *c,
			       size_t i, const char *proto, size_t plen,
			       const char *field, size_t flen, double v,
			       struct tally_batch *b, int64_t ts)
{
	char key[2 * PROCFS_KEY_MAX + 2], hkey[2 * PROCFS_KEY_MAX + 2];
	struct procfs_kv *e;

	if (plen >= PROCFS_KEY_MAX || flen >= PROCFS_KEY_MAX)
		return 0;
	/* "Tcp_ActiveOpens" is matched and named; "TcpActiveOpens" helps */
	snprintf(key, sizeof(key), "%.*s_%.*s", (int)plen, proto, (int)flen,
		 field);
	snprintf(hkey, sizeof(hkey), "%.*s%.*s", (int)plen, proto, (int)flen,
		 field);
	e = procfs_kv_at(c, i, key, plen + 1 + flen, &p->netstat_fields,
			 "node_netstat_", "Statistic ", hkey);
	if (!e)
		return -1;
	if (e->keep && tally_batch_add_metric(b, TALLY_GAUGE, e->name, e->help,
					      p->empty, v, ts) < 0)
		return -1;
	return 0;
}

/* /proc/net/netstat or /proc/net/snmp: pairs of lines. */
static int procfs_read_pairs(struct tally_instance *inst, struct procfs *p,
			     enum procfs_file_id id, struct procfs_kvcache *c,
			     struct tally_batch *b, int64_t ts)
{
	const char *text = procfs_load(inst, p, id);
	size_t i = 0;

	if (!text)
		return 0;
	for (const char *hdr = text; *hdr;) {
		const char *vals = strchr(hdr, '\n');
		const char *nl;
		struct procfs_pair pc;
		const char *key;
		size_t len;
		double v;
		int r;

		if (!vals) {
			procfs_malformed(inst, p, p->files[id].rel, hdr);
			break;
		}
		vals++;
		nl = strchr(vals, '\n');
		if (procfs_pair_start(hdr, vals, &pc) < 0) {
			procfs_malformed(inst, p, p->files[id].rel, hdr);
			/* resynchronise on the next line */
			hdr = vals;
			continue;
		}
		/* check the whole pair first: a bad pair exports nothing */
		{
			struct procfs_pair chk = pc;

			while ((r = procfs_pair_next(&chk, &key, &len, &v)) > 0)
				;
		}
		if (r < 0) {
			procfs_malformed(inst, p, p->files[id].rel, hdr);
			goto next;
		}
		while (procfs_pair_next(&pc, &key, &len, &v) > 0)
			if (procfs_netstat_emit(p, c, i++, pc.proto, pc.plen,
						key, len, v, b, ts) < 0)
				return -1;
	next:
		if (!nl)
			break;
		hdr = nl + 1;
	}
	return 0;
}

static int procfs_read_snmp6(struct tally_instance *inst, struct procfs *p,
			     struct tally_batch *b, int64_t ts)
{
	const char *text = procfs_load(inst, p, PROCFS_SNMP6);
	size_t i = 0;

	if (!text)
		return 0;
	procfs_for_each_line(line, nl, text) {
		const char *k;
		size_t len, plen;
		double v;

		if (procfs_parse_kv(line, &k, &len, &v) < 0) {
			procfs_malformed(inst, p, "net/snmp6", line);
			continue;
		}
		plen = procfs_snmp6_split(k, len);
		if (plen && procfs_netstat_emit(p, &p->snmp6_kv, i++, k, plen,
						k + plen, len - plen, v, b,
						ts) < 0)
			return -1;
	}
	return 0;
}

int procfs_read_netstat(struct tally_instance *inst, struct procfs *p,
			struct tally_batch *b, int64_t ts)
{
	if (procfs_read_pairs(inst, p, PROCFS_NETSTAT, &p->netstat_kv, b, ts) <
		    0 ||
	    procfs_read_pairs(inst, p, PROCFS_SNMP, &p->snmp_kv, b, ts) < 0 ||
	    procfs_read_snmp6(inst, p, b, ts) < 0)
		return -1;
	return 0;
}

/**
 * struct procfs_sock - cursor over a sockstat line
 * @proto: "TCP", "UDP6", "sockets" (in the line), length @plen
 * @s:     the next "key value" pair
 */
struct procfs_sock {
	const char *proto;
	size_t plen;
	const char *s;
};

/**
 * procfs_sock_start() - start a sockstat line ("TCP: inuse 5 orphan 0")
 * Return: 0, or -1 (no "PROTO:" prefix).
 */
static int procfs_sock_start(const char *line, struct procfs_sock *c)
{
	const char *colon = procfs_token_end(line);

	if (colon == line || colon[-1] != ':' ||
	    colon - line >= PROCFS_KEY_MAX)
		return -1;
	c->proto = line;
	c->plen = (size_t)(colon - line - 1);
	c->s = colon;
	return 0;
}

/**
 * procfs_sock_next() - the next "key value" of a sockstat line
 * Return: 1 (@key, @len, @v set), 0 (end of line), -1 (malformed).
 */
static int procfs_sock_next(struct procfs_sock *c, const char **key,
			    size_t *len, double *v)
{
	const char *k = procfs_blank(c->s);
	const char *end;

	if (*k == '\0' || *k == '\n')
		return 0;
	end = procfs_token_end(k);
	if (end - k >= PROCFS_KEY_MAX || procfs_parse_number(&end, v) < 0)
		return -1;
	*key = k;
	*len = (size_t)(procfs_token_end(k) - k);
	c->s = end;
	return 1;
}

static int procfs_sock_emit(struct procfs *p, const struct procfs_sock *c,
			    const char *key, size_t len, double v,
			    struct tally_batch *b, int64_t ts)
{
	char name[3 * PROCFS_KEY_MAX], help[3 * PROCFS_KEY_MAX];

	snprintf(name, sizeof(name), "node_sockstat_%.*s_%.*s", (int)c->plen,
		 c->proto, (int)len, key);
	snprintf(help, sizeof(help), "Number of %.*s sockets in state %.*s.",
		 (int)c->plen, c->proto, (int)len, key);
	return tally_batch_add_metric(b, TALLY_GAUGE, name, help, p->empty, v,
				      ts);
}

static int procfs_read_sockfile(struct tally_instance *inst, struct procfs *p,
				enum procfs_file_id id, struct tally_batch *b,
				int64_t ts)
{
	const char *text = procfs_load(inst, p, id);

	if (!text)
		return 0;
	procfs_for_each_line(line, nl, text) {
		struct procfs_sock c;
		const char *key;
		size_t len;
		double v;
		int r;

		if (procfs_sock_start(line, &c) < 0) {
			procfs_malformed(inst, p, p->files[id].rel, line);
			continue;
		}
		/* check the whole line first: a bad line exports nothing */
		{
			struct procfs_sock chk = c;

			while ((r = procfs_sock_next(&chk, &key, &len, &v)) > 0)
				;
			if (r < 0) {
				procfs_malformed(inst, p, p->files[id].rel,
						 line);
				continue;
			}
		}
		while ((r = procfs_sock_next(&c, &key, &len, &v)) > 0) {
			if (c.plen == 7 && !strncmp(c.proto, "sockets", 7)) {
				/* "sockets: used N", IPv4 file only */
				if (id == PROCFS_SOCKSTAT && len == 4 &&
				    !strncmp(key, "used", 4) &&
				    tally_batch_add_metric(
					    b, TALLY_GAUGE,
					    "node_sockstat_sockets_used",
					    "Number of IPv4 sockets in use.",
					    p->empty, v, ts) < 0)
					return -1;
				continue;
			}
			if (procfs_sock_emit(p, &c, key, len, v, b, ts) < 0)
				return -1;
			/* memory in pages, also in bytes */
			if (len == 3 && !strncmp(key, "mem", 3) &&
			    procfs_sock_emit(p, &c, "mem_bytes", 9,
					     v * p->pagesize, b, ts) < 0)
				return -1;
		}
	}
	return 0;
}

int procfs_read_sockstat(struct tally_instance *inst, struct procfs *p,
			 struct tally_batch *b, int64_t ts)
{
	if (!p->pagesize) {
		long ps = sysconf(_SC_PAGESIZE);

		p->pagesize = ps > 0 ? (double)ps : 4096.0;
	}
	if (procfs_read_sockfile(inst, p, PROCFS_SOCKSTAT, b, ts) < 0 ||
	    procfs_read_sockfile(inst, p, PROCFS_SOCKSTAT6, b, ts) < 0)
		return -1;
	return 0;
}

void procfs_netstat_fini(struct procfs *p)
{
	procfs_kvcache_free(&p->vm_kv);
	procfs_kvcache_free(&p->netstat_kv);
	procfs_kvcache_free(&p->snmp_kv);
	procfs_kvcache_free(&p->snmp6_kv);
}
