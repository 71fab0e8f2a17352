/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/netdev/infiniband.c - InfiniBand port counters and state
 * from /sys/class/infiniband/<dev>/ports/<n>/
 *
 * node_exporter's infiniband names (node_infiniband_*{device,port}) for the
 * standard counters/ and the pre-4.5 counters_ext/ files
 * (Documentation/ABI/stable/sysfs-class-infiniband), plus the port's
 * state, physical state and rate, and node_infiniband_info per device.
 *
 * port_rcv_data, port_xmit_data and their _64 variants count octets
 * divided by 4 (the IBA PortCounters "data" unit is a 4-byte word): they
 * are multiplied by 4 into bytes. Counters are exported as read, never
 * unwrapped: one that goes down (HCA reset, counters cleared with
 * perfquery -x) is a reset to the reader.
 *
 * The device list is re-read each tick with getdents64() on a descriptor
 * kept open (no allocation); a new device is discovered then (its files
 * opened, its labels interned), a vanished one forgotten. Reads failing
 * with ENODEV mean the device went away between the listing and the read.
 */
#include "config.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netdev.h"

/* clang-format off */
#define NETDEV_IB(file, m, n, h) { file, m, "node_infiniband_" n, h }
/* clang-format on */

/* Counter files per port, node_exporter's names and help texts. */
static const struct netdev_ib_counter {
	const char *file; /* relative to ports/<n>/ */
	unsigned mult;	  /* 4 for the 4-byte-word data counters */
	const char *name;
	const char *help;
} netdev_ib_counters[] = {
	NETDEV_IB("counters/excessive_buffer_overrun_errors", 1,
		  "excessive_buffer_overrun_errors_total",
		  "Number of times that OverrunErrors consecutive flow control "
		  "update periods occurred, each having at least one overrun "
		  "error."),
	NETDEV_IB("counters/link_downed", 1, "link_downed_total",
		  "Number of times the link failed to recover from an error "
		  "state and went down"),
	NETDEV_IB("counters/link_error_recovery", 1,
		  "link_error_recovery_total",
		  "Number of times the link successfully recovered from an "
		  "error state"),
	NETDEV_IB("counters/local_link_integrity_errors", 1,
		  "local_link_integrity_errors_total",
		  "Number of times that the count of local physical errors "
		  "exceeded the threshold specified by LocalPhyErrors."),
	NETDEV_IB("counters/multicast_rcv_packets", 1,
		  "multicast_packets_received_total",
		  "Number of multicast packets received (including errors)"),
	NETDEV_IB("counters/multicast_xmit_packets", 1,
		  "multicast_packets_transmitted_total",
		  "Number of multicast packets transmitted (including errors)"),
	NETDEV_IB("counters/port_rcv_constraint_errors", 1,
		  "port_constraint_errors_received_total",
		  "Number of packets received on the switch physical port that "
		  "are discarded"),
	NETDEV_IB("counters/port_xmit_constraint_errors", 1,
		  "port_constraint_errors_transmitted_total",
		  "Number of packets not transmitted from the switch physical "
		  "port"),
	NETDEV_IB("counters/port_rcv_data", 4, "port_data_received_bytes_total",
		  "Number of data octets received on all links"),
	NETDEV_IB("counters/port_xmit_data", 4,
		  "port_data_transmitted_bytes_total",
		  "Number of data octets transmitted on all links"),
	NETDEV_IB("counters/port_rcv_discards", 1,
		  "port_discards_received_total",
		  "Number of inbound packets discarded by the port because the "
		  "port is down or congested"),
	NETDEV_IB("counters/port_xmit_discards", 1,
		  "port_discards_transmitted_total",
		  "Number of outbound packets discarded by the port because "
		  "the port is down or congested"),
	NETDEV_IB("counters/port_rcv_errors", 1, "port_errors_received_total",
		  "Number of packets containing an error that were received "
		  "on this port"),
	NETDEV_IB("counters/port_rcv_packets", 1, "port_packets_received_total",
		  "Number of packets received on all VLs by this port "
		  "(including errors)"),
	NETDEV_IB("counters/port_xmit_packets", 1,
		  "port_packets_transmitted_total",
		  "Number of packets transmitted on all VLs from this port "
		  "(including errors)"),
	NETDEV_IB("counters/port_xmit_wait", 1, "port_transmit_wait_total",
		  "Number of ticks during which the port had data to transmit "
		  "but no data was sent during the entire tick"),
	NETDEV_IB("counters/unicast_rcv_packets", 1,
		  "unicast_packets_received_total",
		  "Number of unicast packets received (including errors)"),
	NETDEV_IB("counters/unicast_xmit_packets", 1,
		  "unicast_packets_transmitted_total",
		  "Number of unicast packets transmitted (including errors)"),
	NETDEV_IB("counters/port_rcv_remote_physical_errors", 1,
		  "port_receive_remote_physical_errors_total",
		  "Number of packets marked with the EBP (End of Bad Packet) "
		  "delimiter received on the port."),
	NETDEV_IB("counters/port_rcv_switch_relay_errors", 1,
		  "port_receive_switch_relay_errors_total",
		  "Number of packets that could not be forwarded by the "
		  "switch."),
	NETDEV_IB("counters/symbol_error", 1, "symbol_error_total",
		  "Number of minor link errors detected on one or more "
		  "physical lanes."),
	NETDEV_IB("counters/VL15_dropped", 1, "vl15_dropped_total",
		  "Number of incoming VL15 packets dropped due to resource "
		  "limitations."),
	/* counters_ext/: 64-bit counters of kernels before 4.5 */
	NETDEV_IB("counters_ext/port_multicast_rcv_packets", 1,
		  "legacy_multicast_packets_received_total",
		  "Number of multicast packets received"),
	NETDEV_IB("counters_ext/port_multicast_xmit_packets", 1,
		  "legacy_multicast_packets_transmitted_total",
		  "Number of multicast packets transmitted"),
	NETDEV_IB("counters_ext/port_rcv_data_64", 4,
		  "legacy_data_received_bytes_total",
		  "Number of data octets received on all links"),
	NETDEV_IB("counters_ext/port_rcv_packets_64", 1,
		  "legacy_packets_received_total",
		  "Number of data packets received on all links"),
	NETDEV_IB("counters_ext/port_unicast_rcv_packets", 1,
		  "legacy_unicast_packets_received_total",
		  "Number of unicast packets received"),
	NETDEV_IB("counters_ext/port_unicast_xmit_packets", 1,
		  "legacy_unicast_packets_transmitted_total",
		  "Number of unicast packets transmitted"),
	NETDEV_IB("counters_ext/port_xmit_data_64", 4,
		  "legacy_data_transmitted_bytes_total",
		  "Number of data octets transmitted on all links"),
	NETDEV_IB("counters_ext/port_xmit_packets_64", 1,
		  "legacy_packets_transmitted_total",
		  "Number of data packets received on all links"),
};

#define NETDEV_IB_NCOUNTERS \
	(sizeof(netdev_ib_counters) / sizeof(netdev_ib_counters[0]))
/* Indexes of the data counters in netdev_ib_counters, for Omnistat. */
#define NETDEV_IB_RCV_DATA  8
#define NETDEV_IB_XMIT_DATA 9

/* How often a missing /sys/class/infiniband is looked for again. */
#define NETDEV_IB_RETRY_NS (30 * (int64_t)1000000000)

/* Port attributes besides the counters. */
enum { NETDEV_IB_STATE, NETDEV_IB_PHYS, NETDEV_IB_RATE, NETDEV_IB_NATTRS };
static const char *const netdev_ib_attr_files[NETDEV_IB_NATTRS] = {
	"state", "phys_state", "rate"
};

/**
 * struct netdev_ib_port - one port of an HCA
 * @num:    port number
 * @labels: {device, port}
 * @omni:   {device_class="infiniband", interface="<dev>:<port>"} or NULL
 * @fd:     counter files, in netdev_ib_counters order (NETDEV_FD_ABSENT
 *          for those this driver lacks)
 * @attr:   state, phys_state, rate
 */
struct netdev_ib_port {
	unsigned num;
	struct tally_labels *labels;
	struct tally_labels *omni;
	int fd[NETDEV_IB_NCOUNTERS];
	int attr[NETDEV_IB_NATTRS];
};

/**
 * struct netdev_ib_dev - one HCA of /sys/class/infiniband
 * @name:   device name, e.g. "mlx5_0"
 * @skip:   excluded by include/exclude
 * @broken: discovery failed; retried each tick
 * @logged: that failure was logged (once until it works)
 * @gone:   a read failed with ENODEV: forget it at the end of this tick
 * @seen:   generation of the last listing that had it
 * @info:   node_infiniband_info labels
 * @ports:  ports sorted by number
 */
struct netdev_ib_dev {
	char name[NETDEV_NAME_MAX];
	bool skip;
	bool broken;
	bool logged;
	bool gone;
	uint64_t seen;
	struct tally_labels *info;
	struct netdev_ib_port *ports;
	size_t nports;
};

/**
 * netdev_ib_state() - the number of "4: ACTIVE" or "5: LinkUp"
 * Return: 0, or -1 (no number before a ':').
 */
static int netdev_ib_state(const char *s, uint64_t *v)
{
	if (tally_parse_u64(&s, v) < 0 || *s != ':')
		return -1;
	return 0;
}

/**
 * netdev_ib_rate() - bytes per second of "100 Gb/sec (4X EDR)"
 * Return: 0, or -1 (not "<number> Gb/sec...").
 */
static int netdev_ib_rate(const char *s, double *v)
{
	char *end;
	double gbit;

	if (*s < '0' || *s > '9')
		return -1;
	gbit = strtod(s, &end);
	if (end == s || strncmp(end, " Gb/sec", 7) != 0)
		return -1;
	*v = gbit * 125000000.0; /* Gbit/s to bytes/s, as node_exporter */
	return 0;
}

static void netdev_ib_port_release(struct netdev_ib_port *p)
{
	for (size_t c = 0; c < NETDEV_IB_NCOUNTERS; c++)
		if (p->fd[c] >= 0)
			close(p->fd[c]);
	for (int a = 0; a < NETDEV_IB_NATTRS; a++)
		if (p->attr[a] >= 0)
			close(p->attr[a]);
	tally_labels_unref(p->labels);
	tally_labels_unref(p->omni);
}

static void netdev_ib_dev_release(struct netdev_ib_dev *d)
{
	for (size_t i = 0; i < d->nports; i++)
		netdev_ib_port_release(&d->ports[i]);
	free(d->ports);
	d->ports = NULL;
	d->nports = 0;
	tally_labels_unref(d->info);
	d->info = NULL;
}

void netdev_ib_free_all(struct netdev *nd)
{
	for (size_t i = 0; i < nd->nibs; i++)
		netdev_ib_dev_release(&nd->ibs[i]);
	free(nd->ibs);
	nd->ibs = NULL;
	nd->nibs = 0;
}

/*
 * Call @fn for every entry of the directory @fd (from its start), with a
 * stack buffer: getdents64() needs no allocation, unlike readdir().
 * Return: 0, or -1 with errno set.
 */
static int netdev_ib_list(int fd, int (*fn)(void *ctx, const char *name),
			  void *ctx)
{
	char buf[4096] __attribute__((aligned(8)));

	if (lseek(fd, 0, SEEK_SET) < 0)
		return -1;
	for (;;) {
		ssize_t n = getdents64(fd, buf, sizeof(buf));

		if (n < 0)
			return -1;
		if (n == 0)
			return 0;
		for (ssize_t off = 0; off < n;) {
			struct dirent64 *e = (struct dirent64 *)(buf + off);

			off += e->d_reclen;
			if (e->d_name[0] == '.' &&
			    (e->d_name[1] == '\0' ||
			     (e->d_name[1] == '.' && e->d_name[2] == '\0')))
				continue;
			if (fn(ctx, e->d_name) < 0)
				return -1;
		}
	}
}

/* A one-time read of a small file below @dirfd ("" when absent). */
static void netdev_ib_read_once(int dirfd, const char *rel, char *buf,
				size_t size)
{
	int fd = tally_open_file(dirfd, rel);

	buf[0] = '\0';
	if (fd < 0)
		return;
	if (netdev_pread_small(fd, buf, size) < 0)
		buf[0] = '\0';
	close(fd);
}

struct netdev_ib_ports_ctx {
	struct netdev_ib_dev *d;
	int err;
};

static int netdev_ib_add_port(void *arg, const char *name)
{
	struct netdev_ib_ports_ctx *ctx = arg;
	struct netdev_ib_dev *d = ctx->d;
	struct netdev_ib_port *v, *p;
	const char *s = name;
	uint64_t num;
	size_t at;

	if (tally_parse_u64(&s, &num) < 0 || *s || num > UINT_MAX)
		return 0; /* not a port directory */
	v = realloc(d->ports, (d->nports + 1) * sizeof(*v));
	if (!v)
		return -1;
	d->ports = v;
	for (at = d->nports; at > 0 && v[at - 1].num > num; at--)
		;
	memmove(&v[at + 1], &v[at], (d->nports - at) * sizeof(*v));
	p = &v[at];
	memset(p, 0, sizeof(*p));
	p->num = (unsigned)num;
	for (size_t c = 0; c < NETDEV_IB_NCOUNTERS; c++)
		p->fd[c] = NETDEV_FD_ABSENT;
	for (int a = 0; a < NETDEV_IB_NATTRS; a++)
		p->attr[a] = NETDEV_FD_ABSENT;
	d->nports++;
	return 0;
}

/* Open the files of port @p of @d (below the device's ports/ dir). */
static int netdev_ib_open_port(struct netdev *nd, struct netdev_ib_dev *d,
			       struct netdev_ib_port *p, int ports_fd)
{
	char num[16], iface[NETDEV_NAME_MAX + 16];
	int pfd;

	snprintf(num, sizeof(num), "%u", p->num);
	pfd = openat(ports_fd, num, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (pfd < 0)
		return -1;
	for (size_t c = 0; c < NETDEV_IB_NCOUNTERS; c++) {
		p->fd[c] = tally_open_file(pfd, netdev_ib_counters[c].file);
		if (p->fd[c] < 0)
			p->fd[c] =
				NETDEV_FD_ABSENT; /* not kept by this driver */
	}
	for (int a = 0; a < NETDEV_IB_NATTRS; a++) {
		p->attr[a] = tally_open_file(pfd, netdev_ib_attr_files[a]);
		if (p->attr[a] < 0)
			p->attr[a] = NETDEV_FD_ABSENT;
	}
	close(pfd);
	p->labels = tally_labels_newv("device", d->name, "port", num, NULL);
	if (!p->labels)
		return -1;
	if (nd->omnistat) {
		snprintf(iface, sizeof(iface), "%s:%u", d->name, p->num);
		p->omni = tally_labels_newv("device_class", "infiniband",
					    "interface", iface, NULL);
		if (!p->omni)
			return -1;
	}
	return 0;
}

/*
 * Open everything of device @d: info files (read once: they do not change
 * while the device exists), then each port's files.
 * Return: 0, or -1 with errno set (logged by the caller).
 */
static int netdev_ib_discover(struct netdev *nd, struct netdev_ib_dev *d)
{
	char board[128], fw[128], hca[128];
	struct netdev_ib_ports_ctx ctx = { d, 0 };
	int dfd, pdirfd = -1, ret = -1;

	if (strchr(d->name, '/')) {
		errno = EINVAL;
		return -1;
	}
	dfd = openat(nd->ib_fd, d->name, O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -1;
	netdev_ib_read_once(dfd, "board_id", board, sizeof(board));
	netdev_ib_read_once(dfd, "fw_ver", fw, sizeof(fw));
	netdev_ib_read_once(dfd, "hca_type", hca, sizeof(hca));
	d->info = tally_labels_newv("device", d->name, "board_id", board,
				    "firmware_version", fw, "hca_type", hca,
				    NULL);
	if (!d->info)
		goto out;
	pdirfd = openat(dfd, "ports", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (pdirfd < 0 || netdev_ib_list(pdirfd, netdev_ib_add_port, &ctx) < 0)
		goto out;
	for (size_t i = 0; i < d->nports; i++)
		if (netdev_ib_open_port(nd, d, &d->ports[i], pdirfd) < 0)
			goto out;
	ret = 0;
out:
	if (ret < 0) {
		int err = errno;

		netdev_ib_dev_release(d);
		errno = err;
	}
	if (pdirfd >= 0)
		close(pdirfd);
	close(dfd);
	return ret;
}

struct netdev_ib_list_ctx {
	struct tally_instance *inst;
	struct netdev *nd;
};

/* One entry of the device listing: mark it seen, discover it if new. */
static int netdev_ib_seen(void *arg, const char *name)
{
	struct netdev_ib_list_ctx *ctx = arg;
	struct netdev *nd = ctx->nd;
	struct netdev_ib_dev *d = NULL, *v;
	size_t at;

	if (strlen(name) >= NETDEV_NAME_MAX)
		return 0;
	for (at = 0; at < nd->nibs; at++) {
		int c = strcmp(nd->ibs[at].name, name);

		if (c == 0)
			d = &nd->ibs[at];
		if (c >= 0)
			break;
	}
	if (!d) {
		/* keep the array sorted by name: a stable output order */
		v = realloc(nd->ibs, (nd->nibs + 1) * sizeof(*v));
		if (!v)
			return -1;
		nd->ibs = v;
		memmove(&v[at + 1], &v[at], (nd->nibs - at) * sizeof(*v));
		d = &v[at];
		memset(d, 0, sizeof(*d));
		snprintf(d->name, sizeof(d->name), "%s", name);
		d->skip = !netdev_wanted(nd, name);
		d->broken = !d->skip;
		nd->nibs++;
	}
	d->seen = nd->gen;
	if (d->broken) {
		if (netdev_ib_discover(nd, d) == 0) {
			d->broken = d->logged = false;
		} else if (errno == ENOMEM) {
			return -1;
		} else if (!d->logged) {
			char esc[NAME_MAX * 4 + 1];
			int e = errno;

			tally_log_peer_text(esc, sizeof(esc), name,
					    strlen(name));
			tally_log(ctx->inst, LOG_WARNING,
				  "%s/class/infiniband/%s: %s, skipped",
				  nd->sysfs, esc, strerror(e));
			d->logged = true;
		}
	}
	return 0;
}

/* Drop the devices not listed this tick, or whose files went away. */
static void netdev_ib_gc(struct netdev *nd)
{
	size_t k = 0;

	for (size_t i = 0; i < nd->nibs; i++) {
		struct netdev_ib_dev *d = &nd->ibs[i];

		if (d->seen != nd->gen || d->gone) {
			netdev_ib_dev_release(d);
			continue;
		}
		if (k != i)
			nd->ibs[k] = *d;
		k++;
	}
	nd->nibs = k;
}

static int netdev_ib_read_port(struct netdev *nd, struct netdev_ib_dev *d,
			       struct netdev_ib_port *p, struct tally_batch *b,
			       int64_t ts)
{
	static const char *const attr_names[NETDEV_IB_NATTRS] = {
		"node_infiniband_state_id",
		"node_infiniband_physical_state_id",
		"node_infiniband_rate_bytes_per_second",
	};
	static const char *const attr_help[NETDEV_IB_NATTRS] = {
		"State of the InfiniBand port (0: no change, 1: down, 2: init, "
		"3: armed, 4: active, 5: act defer)",
		"Physical state of the InfiniBand port (0: no change, 1: "
		"sleep, 2: polling, 3: disable, 4: shift, 5: link up, 6: link "
		"error recover, 7: phytest)",
		"Maximum signal transfer rate",
	};
	double data[2];
	bool have_data[2] = { false, false };
	char buf[64];

	for (int a = 0; a < NETDEV_IB_NATTRS; a++) {
		uint64_t u;
		double v;

		if (p->attr[a] < 0)
			continue;
		if (netdev_pread_small(p->attr[a], buf, sizeof(buf)) < 0) {
			if (errno == ENODEV || errno == ENOENT)
				goto gone;
			continue;
		}
		if (a == NETDEV_IB_RATE) {
			if (netdev_ib_rate(buf, &v) < 0)
				continue;
		} else {
			if (netdev_ib_state(buf, &u) < 0)
				continue;
			v = (double)u;
		}
		if (tally_batch_add_metric(b, TALLY_GAUGE, attr_names[a],
					   attr_help[a], p->labels, v, ts) < 0)
			return -1;
	}
	for (size_t c = 0; c < NETDEV_IB_NCOUNTERS; c++) {
		const struct netdev_ib_counter *k = &netdev_ib_counters[c];
		const char *s = buf;
		uint64_t u;
		double v;

		if (p->fd[c] < 0)
			continue;
		if (netdev_pread_small(p->fd[c], buf, sizeof(buf)) < 0) {
			if (errno == ENODEV || errno == ENOENT)
				goto gone;
			continue; /* EINVAL, EOPNOTSUPP: no value now */
		}
		/* "N/A (no PMA)" from HCAs without a performance agent */
		if (tally_parse_u64(&s, &u) < 0 || *s)
			continue;
		v = (double)u * k->mult;
		if (c == NETDEV_IB_RCV_DATA || c == NETDEV_IB_XMIT_DATA) {
			data[c - NETDEV_IB_RCV_DATA] = v;
			have_data[c - NETDEV_IB_RCV_DATA] = true;
		}
		if (tally_batch_add_metric(b, TALLY_COUNTER, k->name, k->help,
					   p->labels, v, ts) < 0)
			return -1;
	}
	if (p->omni && have_data[0] &&
	    tally_batch_add_metric(b, TALLY_GAUGE, "omnistat_network_rx_bytes",
				   "Network received (bytes)", p->omni, data[0],
				   ts) < 0)
		return -1;
	if (p->omni && have_data[1] &&
	    tally_batch_add_metric(b, TALLY_GAUGE, "omnistat_network_tx_bytes",
				   "Network transmitted (bytes)", p->omni,
				   data[1], ts) < 0)
		return -1;
	return 0;
gone:
	d->gone = true;
	return 0;
}

/**
 * netdev_ib_read() - list the HCAs and emit their ports' metrics
 * Return: 0 (no InfiniBand is not an error), or -1 with errno = ENOMEM.
 */
int netdev_ib_read(struct tally_instance *inst, struct netdev *nd,
		   struct tally_batch *b, int64_t ts)
{
	struct netdev_ib_list_ctx ctx = { inst, nd };

	if (nd->ib_fd < 0) {
		char path[PATH_MAX];
		int64_t now = tally_monotonic_ns();
		int n = snprintf(path, sizeof(path), "%s/class/infiniband",
				 nd->sysfs);

		if (n < 0 || (size_t)n >= sizeof(path))
			return 0;
		/*
		 * ib_core may load after tallyd starts: retry, but at most
		 * every NETDEV_IB_RETRY_NS (a failed sysfs lookup costs as
		 * much as reading a device's attributes).
		 */
		if (nd->ib_retry_ns && now < nd->ib_retry_ns)
			return 0;
		nd->ib_retry_ns = now + NETDEV_IB_RETRY_NS;
		nd->ib_fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (nd->ib_fd < 0) {
			if (errno != ENOENT && errno != nd->ib_err)
				tally_log(inst, LOG_WARNING, "open %s: %s",
					  path, strerror(errno));
			nd->ib_err = errno;
			return 0;
		}
		nd->ib_err = 0;
	}
	if (netdev_ib_list(nd->ib_fd, netdev_ib_seen, &ctx) < 0) {
		if (errno == ENOMEM)
			return -1;
		/* the directory itself went away (ib_core unloaded) */
		close(nd->ib_fd);
		nd->ib_fd = -1;
		netdev_ib_free_all(nd);
		return 0;
	}
	for (size_t i = 0; i < nd->nibs; i++) {
		struct netdev_ib_dev *d = &nd->ibs[i];

		if (d->seen != nd->gen || d->skip || d->broken)
			continue;
		if (tally_batch_add_metric(
			    b, TALLY_INFO, "node_infiniband_info",
			    "Non-numeric data from "
			    "/sys/class/infiniband/<device>, value is "
			    "always 1.",
			    d->info, 1, ts) < 0)
			return -1;
		for (size_t k = 0; k < d->nports && !d->gone; k++)
			if (netdev_ib_read_port(nd, d, &d->ports[k], b, ts) < 0)
				return -1;
	}
	netdev_ib_gc(nd);
	return 0;
}
