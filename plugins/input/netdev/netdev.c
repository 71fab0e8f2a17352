/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/netdev/netdev.c - network interface counters from
 * /proc/net/dev, with /sys/class/net attributes and InfiniBand counters
 *
 * Names, types and help texts are node_exporter's (collectors netdev,
 * netclass and infiniband); with omnistat = true the plugin also exports
 * Omnistat's omnistat_network_{rx,tx}_bytes{device_class,interface}.
 *
 * The counter columns come from the file's own header, as node_exporter
 * does, so a kernel that adds or drops a column changes the series instead
 * of shifting values into the wrong names. Device names are everything
 * before the last ':' of a line: old kernels print "eth0:1234" with no
 * space, and alias-style names contain ':' themselves.
 *
 * Cost model: files stay open and are re-read with pread() from offset 0;
 * per-device label sets and include/exclude decisions are made once, when a
 * device first appears, and dropped when it disappears. Names are copied
 * into the batch (tally_batch_add_metric()), whose arena the core keeps
 * when it recycles the batch, so a steady-state tick allocates nothing.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "netdev.h"

/* clang-format off */
#define NETDEV_RX(f)                                                          \
	{ false, #f, "node_network_receive_" #f "_total",                     \
	  "Network device statistic receive_" #f "." }
#define NETDEV_TX(f)                                                          \
	{ true, #f, "node_network_transmit_" #f "_total",                     \
	  "Network device statistic transmit_" #f "." }
/* clang-format on */

/*
 * The columns of /proc/net/dev since Linux 2.2 (net/core/net-procfs.c).
 * NETDEV_STD_RX_BYTES and NETDEV_STD_TX_BYTES index the byte counters.
 */
#define NETDEV_STD_RX_BYTES 0
#define NETDEV_STD_TX_BYTES 8
static const struct netdev_std_col {
	bool tx;
	const char *field;
	const char *name;
	const char *help;
} netdev_std_cols[] = {
	NETDEV_RX(bytes),      NETDEV_RX(packets),   NETDEV_RX(errs),
	NETDEV_RX(drop),       NETDEV_RX(fifo),	     NETDEV_RX(frame),
	NETDEV_RX(compressed), NETDEV_RX(multicast), NETDEV_TX(bytes),
	NETDEV_TX(packets),    NETDEV_TX(errs),	     NETDEV_TX(drop),
	NETDEV_TX(fifo),       NETDEV_TX(colls),     NETDEV_TX(carrier),
	NETDEV_TX(compressed),
};

static const char netdev_omni_rx_help[] = "Network received (bytes)";
static const char netdev_omni_tx_help[] = "Network transmitted (bytes)";

/* Helpers shared with netclass.c and infiniband.c. */

/**
 * netdev_pread_small() - read a small sysfs attribute from offset 0
 * @fd:   open attribute
 * @buf:  destination, NUL-terminated, trailing newline removed
 * @size: its size; longer content is truncated
 * Return: the length, or -1 with errno set (EINVAL: the driver has no
 * value right now, e.g. speed of a link that is down; ENODEV: the device
 * is gone).
 */
ssize_t netdev_pread_small(int fd, char *buf, size_t size)
{
	ssize_t n;

	do
		n = pread(fd, buf, size - 1, 0);
	while (n < 0 && errno == EINTR);
	if (n < 0)
		return -1;
	while (n > 0 && (buf[n - 1] == '\n' || buf[n - 1] == ' '))
		n--;
	buf[n] = '\0';
	return n;
}

/**
 * netdev_wanted() - whether the include/exclude options export @name
 *
 * Exported when @include is empty or one of its expressions matches, and
 * none of @exclude matches (exclude wins). Applied to interface names and
 * to InfiniBand device names alike: both are the "device" label.
 */
bool netdev_wanted(const struct netdev *nd, const char *name)
{
	return (nd->include.n == 0 ||
		tally_regexlist_match(&nd->include, name)) &&
	       !tally_regexlist_match(&nd->exclude, name);
}

/* /proc/net/dev parsing: pure functions, unit-tested directly. */

static void netdev_layout_clear(struct netdev_layout *l)
{
	for (unsigned i = 0; i < l->n; i++)
		free(l->col[i].dyn);
	free(l->header);
	memset(l, 0, sizeof(*l));
}

/* Name and help of column @field (receive unless @tx). */
static int netdev_col_init(struct netdev_col *c, bool tx, const char *field,
			   size_t len)
{
	const char *dir = tx ? "transmit" : "receive";
	char name[128];
	int n;

	for (size_t i = 0;
	     i < sizeof(netdev_std_cols) / sizeof(netdev_std_cols[0]); i++) {
		const struct netdev_std_col *s = &netdev_std_cols[i];

		if (s->tx == tx && strlen(s->field) == len &&
		    memcmp(s->field, field, len) == 0) {
			c->name = s->name;
			c->help = s->help;
			return 0;
		}
	}
	/* node_exporter's rule: node_network_<dir>_<field>_total */
	n = snprintf(name, sizeof(name), "%s_%.*s", dir, (int)len, field);
	if (n < 0 || (size_t)n >= sizeof(name))
		return -1;
	for (int i = 0; i < n; i++)
		if (!((name[i] >= 'a' && name[i] <= 'z') ||
		      (name[i] >= 'A' && name[i] <= 'Z') ||
		      (name[i] >= '0' && name[i] <= '9')))
			name[i] = '_';
	c->dyn = malloc((size_t)(2 * n) + sizeof("node_network__total") +
			sizeof("Network device statistic ."));
	if (!c->dyn)
		return -1;
	n = sprintf(c->dyn, "node_network_%s_total", name);
	sprintf(c->dyn + n + 1, "Network device statistic %s.", name);
	c->name = c->dyn;
	c->help = c->dyn + n + 1;
	return 0;
}

/**
 * netdev_parse_header() - the column layout from /proc/net/dev's header
 * @line: the second header line, e.g. " face |bytes packets ...|bytes ..."
 *        (ends at NUL or newline)
 * @l:    result, replaced only on success (free with netdev_layout_clear())
 * Return: 0, or -1 (not a header: fewer than two '|', no column, more
 * than NETDEV_MAX_COLS, or ENOMEM).
 */
static int netdev_parse_header(const char *line, struct netdev_layout *l)
{
	struct netdev_layout nl = { 0 };
	const char *end = line + strcspn(line, "\n");
	const char *bar1 = memchr(line, '|', (size_t)(end - line));
	const char *bar2 =
		bar1 ? memchr(bar1 + 1, '|', (size_t)(end - bar1 - 1)) : NULL;

	if (!bar2)
		return -1;
	for (int tx = 0; tx < 2; tx++) {
		const char *s = tx ? bar2 + 1 : bar1 + 1;
		const char *stop = tx ? end : bar2;

		/* a third '|' would end the transmit group too */
		if (tx) {
			const char *bar3 = memchr(s, '|', (size_t)(stop - s));

			if (bar3)
				stop = bar3;
		}
		while (s < stop) {
			const char *w;

			while (s < stop && (*s == ' ' || *s == '\t'))
				s++;
			if (s >= stop)
				break;
			w = s;
			while (s < stop && *s != ' ' && *s != '\t')
				s++;
			if (nl.n == NETDEV_MAX_COLS ||
			    netdev_col_init(&nl.col[nl.n], tx, w,
					    (size_t)(s - w)) < 0)
				goto fail;
			nl.n++;
		}
		if (!tx)
			nl.nrx = nl.n;
	}
	if (nl.n == 0)
		goto fail;
	nl.header = strndup(line, (size_t)(end - line));
	if (!nl.header)
		goto fail;
	netdev_layout_clear(l);
	*l = nl;
	return 0;
fail:
	netdev_layout_clear(&nl);
	return -1;
}

/**
 * struct netdev_row - one interface line of /proc/net/dev
 * @name: interface name
 * @n:    number of counters
 * @v:    counters, in the header's column order
 */
struct netdev_row {
	char name[NETDEV_NAME_MAX];
	unsigned n;
	uint64_t v[NETDEV_MAX_COLS];
};

/**
 * netdev_parse_line() - parse "  name: c1 c2 ..." (ends at NUL or newline)
 * @line: the line
 * @r:    result
 *
 * The name ends at the line's last ':' (counters never contain one), so
 * "eth0:1: 5 ..." is device "eth0:1" and "eth0:12345 ..." (old kernels'
 * "%6s:%8lu" with a wide counter) is device "eth0".
 * Return: 0, or -1 (no ':', empty or too long a name, a non-number).
 */
static int netdev_parse_line(const char *line, struct netdev_row *r)
{
	const char *end = line + strcspn(line, "\n");
	const char *colon = NULL, *s = line, *name_end;
	size_t len;

	for (const char *c = line; c < end; c++)
		if (*c == ':')
			colon = c;
	if (!colon)
		return -1;
	while (s < colon && (*s == ' ' || *s == '\t'))
		s++;
	name_end = colon;
	while (name_end > s && (name_end[-1] == ' ' || name_end[-1] == '\t'))
		name_end--;
	len = (size_t)(name_end - s);
	if (len == 0 || len >= NETDEV_NAME_MAX)
		return -1;
	memcpy(r->name, s, len);
	r->name[len] = '\0';
	r->n = 0;
	for (s = colon + 1;;) {
		uint64_t v;

		while (s < end && (*s == ' ' || *s == '\t'))
			s++;
		if (s >= end)
			break;
		if (r->n == NETDEV_MAX_COLS || tally_parse_u64(&s, &v) < 0 ||
		    (s < end && *s != ' ' && *s != '\t'))
			return -1;
		r->v[r->n++] = v;
	}
	return 0;
}

/* Files and devices. */

static void netdev_dev_failed(struct tally_instance *inst, struct netdev *nd,
			      int err, const char *what)
{
	if (nd->dev_err == err)
		return;
	nd->dev_err = err;
	if (err == EINVAL && strcmp(what, "open") == 0)
		tally_log(inst, LOG_WARNING,
			  "%s/net/dev: not a regular file, skipped", nd->root);
	else
		tally_log(inst, LOG_WARNING, "%s %s/net/dev: %s, skipped", what,
			  nd->root, strerror(err));
}

static const char *netdev_load(struct tally_instance *inst, struct netdev *nd)
{
	if (nd->dev_fd < 0) {
		char path[PATH_MAX];
		int n = snprintf(path, sizeof(path), "%s/net/dev", nd->root);

		if (n < 0 || (size_t)n >= sizeof(path)) {
			netdev_dev_failed(inst, nd, ENAMETOOLONG, "open");
			return NULL;
		}
		nd->dev_fd = tally_open_file(AT_FDCWD, path);
		if (nd->dev_fd < 0) {
			netdev_dev_failed(inst, nd, errno, "open");
			return NULL;
		}
		if (nd->dev_err)
			tally_log(inst, LOG_INFO, "%s: readable again", path);
		nd->dev_err = 0;
	}
	if (tally_read_whole(nd->dev_fd, &nd->rb) < 0) {
		int err = errno;

		if (err == ENOMEM)
			return NULL;
		close(nd->dev_fd);
		nd->dev_fd = -1;
		netdev_dev_failed(inst, nd, err, "read");
		return NULL;
	}
	return nd->rb.data;
}

static void netdev_if_release(struct netdev_if *ifc)
{
	netdev_class_close(ifc);
	tally_labels_unref(ifc->labels);
	tally_labels_unref(ifc->omni);
	tally_labels_unref(ifc->info);
	free(ifc->info_key);
}

/*
 * The interface named @name: the one at @hint when the order is unchanged
 * (the usual case), else a search, else a new entry.
 * Return: its index, or -1 with errno = ENOMEM.
 */
static ssize_t netdev_if_get(struct netdev *nd, const char *name, size_t hint)
{
	struct netdev_if *ifc;

	if (hint < nd->nifs && strcmp(nd->ifs[hint].name, name) == 0)
		return (ssize_t)hint;
	for (size_t i = 0; i < nd->nifs; i++)
		if (strcmp(nd->ifs[i].name, name) == 0)
			return (ssize_t)i;
	if (nd->nifs == nd->ifs_cap) {
		size_t cap = nd->ifs_cap ? nd->ifs_cap * 2 : 8;
		struct netdev_if *v = realloc(nd->ifs, cap * sizeof(*v));

		if (!v)
			return -1;
		nd->ifs = v;
		nd->ifs_cap = cap;
	}
	ifc = &nd->ifs[nd->nifs];
	memset(ifc, 0, sizeof(*ifc));
	for (int a = 0; a < NETDEV_NATTRS; a++)
		ifc->fd[a] = NETDEV_FD_CLOSED;
	snprintf(ifc->name, sizeof(ifc->name), "%s", name);
	ifc->skip = !netdev_wanted(nd, name);
	if (!ifc->skip) {
		ifc->labels = tally_labels_newv("device", name, NULL);
		if (!ifc->labels)
			return -1;
		/* Omnistat leaves out the loopback device */
		if (nd->omnistat && strcmp(name, "lo") != 0) {
			ifc->omni = tally_labels_newv("device_class", "net",
						      "interface", name, NULL);
			if (!ifc->omni) {
				tally_labels_unref(ifc->labels);
				return -1;
			}
		}
	}
	return (ssize_t)nd->nifs++;
}

/* Forget the interfaces this tick did not list: they stop being exported. */
static void netdev_if_gc(struct netdev *nd)
{
	size_t k = 0;

	for (size_t i = 0; i < nd->nifs; i++) {
		if (nd->ifs[i].seen != nd->gen) {
			netdev_if_release(&nd->ifs[i]);
			continue;
		}
		if (k != i)
			nd->ifs[k] = nd->ifs[i];
		k++;
	}
	nd->nifs = k;
}

static void netdev_malformed(struct tally_instance *inst, struct netdev *nd,
			     const char *line)
{
	size_t len = strcspn(line, "\n");
	char esc[80 * 4 + 4];

	tally_count_drop(inst, "malformed", 1);
	tally_log_peer_text(esc, sizeof(esc), line, len > 80 ? 80 : len);
	tally_log(inst, LOG_WARNING, "%s/net/dev: malformed line dropped: %s",
		  nd->root, esc);
}

static int netdev_emit_row(struct netdev *nd, struct netdev_if *ifc,
			   const struct netdev_row *r, struct tally_batch *b,
			   int64_t ts)
{
	const struct netdev_layout *l = &nd->layout;

	for (unsigned c = 0; c < l->n; c++)
		if (tally_batch_add_metric(b, TALLY_COUNTER, l->col[c].name,
					   l->col[c].help, ifc->labels,
					   (double)r->v[c], ts) < 0)
			return -1;
	return 0;
}

/* Omnistat's gauges, from the receive and transmit bytes columns. */
static int netdev_emit_omni(struct netdev *nd, struct netdev_if *ifc,
			    const struct netdev_row *r, struct tally_batch *b,
			    int64_t ts)
{
	const struct netdev_layout *l = &nd->layout;

	for (unsigned c = 0; c < l->n; c++) {
		bool tx = c >= l->nrx;

		if (l->col[c].name != netdev_std_cols[tx ? NETDEV_STD_TX_BYTES
							 : NETDEV_STD_RX_BYTES]
					      .name)
			continue;
		if (tally_batch_add_metric(b, TALLY_GAUGE,
					   tx ? "omnistat_network_tx_bytes"
					      : "omnistat_network_rx_bytes",
					   tx ? netdev_omni_tx_help
					      : netdev_omni_rx_help,
					   ifc->omni, (double)r->v[c], ts) < 0)
			return -1;
	}
	return 0;
}

static int netdev_read_dev(struct tally_instance *inst, struct netdev *nd,
			   struct tally_batch *b, int64_t ts)
{
	const char *text = netdev_load(inst, nd);
	const char *line, *hdr;
	size_t hint = 0;

	if (!text)
		return errno == ENOMEM ? -1 : 0;
	/* Two header lines: "Inter-|   Receive ...", " face |bytes ..." */
	hdr = strchr(text, '\n');
	if (!hdr)
		return 0; /* empty file (no namespace devices yet) */
	hdr++;
	if (!nd->layout_ok || !nd->layout.header ||
	    strncmp(hdr, nd->layout.header, strlen(nd->layout.header)) != 0 ||
	    (hdr[strlen(nd->layout.header)] != '\n' &&
	     hdr[strlen(nd->layout.header)] != '\0')) {
		nd->layout_ok = netdev_parse_header(hdr, &nd->layout) == 0;
		if (!nd->layout_ok) {
			netdev_malformed(inst, nd, hdr);
			return 0;
		}
	}
	line = strchr(hdr, '\n');
	while (line && *++line) {
		struct netdev_row r;
		struct netdev_if *ifc;
		ssize_t i;

		if (netdev_parse_line(line, &r) < 0 || r.n != nd->layout.n) {
			netdev_malformed(inst, nd, line);
			goto next;
		}
		i = netdev_if_get(nd, r.name, hint);
		if (i < 0)
			return -1;
		hint = (size_t)i + 1;
		ifc = &nd->ifs[i];
		if (ifc->seen == nd->gen) {
			/* the same name twice: keep the first */
			netdev_malformed(inst, nd, line);
			goto next;
		}
		ifc->seen = nd->gen;
		if (ifc->skip)
			goto next;
		if (netdev_emit_row(nd, ifc, &r, b, ts) < 0)
			return -1;
		if (nd->netclass && netdev_class_read(inst, nd, ifc, b, ts) < 0)
			return -1;
		if (ifc->omni && netdev_emit_omni(nd, ifc, &r, b, ts) < 0)
			return -1;
	next:
		line = strchr(line, '\n');
	}
	netdev_if_gc(nd);
	return 0;
}

/* Hooks. */

static void netdev_fini(struct tally_instance *inst, void *state)
{
	struct netdev *nd = state;

	for (size_t i = 0; i < nd->nifs; i++)
		netdev_if_release(&nd->ifs[i]);
	free(nd->ifs);
	nd->ifs = NULL;
	nd->nifs = nd->ifs_cap = 0;
	netdev_ib_free_all(nd);
	if (nd->ib_fd >= 0)
		close(nd->ib_fd);
	if (nd->class_net_fd >= 0)
		close(nd->class_net_fd);
	if (nd->dev_fd >= 0)
		close(nd->dev_fd);
	nd->ib_fd = nd->class_net_fd = nd->dev_fd = -1;
	netdev_layout_clear(&nd->layout);
	tally_readbuf_free(&nd->rb);
	tally_labels_unref(nd->empty);
	nd->empty = NULL;
}

static int netdev_init(struct tally_instance *inst, void *state)
{
	struct netdev *nd = state;
	char path[PATH_MAX];
	int n;

	nd->dev_fd = nd->class_net_fd = nd->ib_fd = -1;
	if (!nd->root || !nd->root[0] || !nd->sysfs || !nd->sysfs[0]) {
		tally_log(inst, LOG_ERR, "root and sysfs must not be empty");
		errno = EINVAL;
		return -1;
	}
	nd->empty = tally_labels_ref(tally_labels_empty());
	/* failures are logged here and retried each tick */
	netdev_load(inst, nd);
	if (nd->netclass) {
		n = snprintf(path, sizeof(path), "%s/class/net", nd->sysfs);
		if (n > 0 && (size_t)n < sizeof(path))
			nd->class_net_fd =
				open(path, O_PATH | O_DIRECTORY | O_CLOEXEC);
		if (nd->class_net_fd < 0)
			tally_log(inst, LOG_INFO,
				  "%s: %s, no interface attributes", path,
				  strerror(errno));
	}
	return 0;
}

static int netdev_read(struct tally_instance *inst, void *state,
		       struct tally_batch *out)
{
	struct netdev *nd = state;
	int64_t ts = tally_now_ns();

	nd->gen++; /* devices listed this tick get seen = gen */
	if (netdev_read_dev(inst, nd, out, ts) < 0)
		return -1;
	if (nd->infiniband && netdev_ib_read(inst, nd, out, ts) < 0)
		return -1;
	return 0;
}

static const struct tally_option netdev_options[] = {
	TALLY_OPT_STRING("root", struct netdev, root, "/proc",
			 "procfs mount point: reads ROOT/net/dev (containers: "
			 "/host/proc/1 for the host's network namespace)"),
	TALLY_OPT_STRING("sysfs", struct netdev, sysfs, "/sys",
			 "sysfs mount point: reads SYSFS/class/net and "
			 "SYSFS/class/infiniband"),
	TALLY_OPT_REGEXLIST(
		"include", struct netdev, include, NULL,
		"POSIX extended regular expressions: export only the "
		"devices (interfaces and InfiniBand HCAs) matching one"),
	TALLY_OPT_REGEXLIST(
		"exclude", struct netdev, exclude, NULL,
		"POSIX extended regular expressions: never export the "
		"devices matching one (wins over include)"),
	TALLY_OPT_BOOL("netclass", struct netdev, netclass, "true",
		       "export /sys/class/net attributes: up, info, mtu, "
		       "speed, carrier, flags"),
	TALLY_OPT_BOOL("infiniband", struct netdev, infiniband, "true",
		       "export InfiniBand port counters and state"),
	TALLY_OPT_BOOL("omnistat", struct netdev, omnistat, "false",
		       "also export Omnistat's omnistat_network_{rx,tx}_bytes"
		       "{device_class,interface}"),
	TALLY_OPT_END,
};

static const struct tally_input_ops netdev_ops = {
	.init = netdev_init,
	.read = netdev_read,
	.fini = netdev_fini,
};

TALLY_PLUGIN_INPUT(netdev,
		   "network interface and InfiniBand counters from /proc and "
		   "/sys",
		   struct netdev, netdev_options, &netdev_ops);
