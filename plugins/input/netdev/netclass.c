/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/netdev/netclass.c - /sys/class/net/<dev> attributes
 *
 * node_exporter's netclass names: node_network_up, node_network_info,
 * node_network_mtu_bytes, node_network_speed_bytes, node_network_carrier,
 * node_network_flags. The attribute files of an exported interface are
 * opened when it first appears and re-read with pread() each tick; a read
 * that fails with ENODEV (the device was deleted, maybe re-created under
 * the same name) closes them all and they are reopened on the next tick.
 *
 * Some attributes have no value in some states and fail with EINVAL
 * (speed, duplex and carrier of a link that is down, speed and duplex of
 * lo and of virtual devices): that metric is skipped, as node_exporter
 * does, and the attribute is not read again until operstate or flags
 * change (or NETDEV_INVAL_RETRY ticks pass), so that a tick repeats no
 * failed read. A speed of -1 (unknown,
 * virtual devices) is skipped too, as node_exporter does with
 * --collector.netclass.ignore-invalid-speed, its announced 2.x default.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "netdev.h"

static const char *const netdev_attr_files[NETDEV_NATTRS] = {
	[NETDEV_OPERSTATE] = "operstate",
	[NETDEV_CARRIER] = "carrier",
	[NETDEV_MTU] = "mtu",
	[NETDEV_SPEED] = "speed",
	[NETDEV_FLAGS] = "flags",
	[NETDEV_DUPLEX] = "duplex",
	[NETDEV_ADDRESS] = "address",
	[NETDEV_BROADCAST] = "broadcast",
	[NETDEV_IFALIAS] = "ifalias",
};

/* Longest attribute kept: ifalias is at most IFALIASZ - 1 = 255 bytes. */
#define NETDEV_ATTR_MAX 272

void netdev_class_close(struct netdev_if *ifc)
{
	for (int a = 0; a < NETDEV_NATTRS; a++) {
		if (ifc->fd[a] >= 0)
			close(ifc->fd[a]);
		ifc->fd[a] = NETDEV_FD_CLOSED;
	}
	ifc->sys = false;
	ifc->inval = 0;
	ifc->state[0] = '\0';
}

/* A name that cannot leave /sys/class/net (the kernel forbids these). */
static bool netdev_safe_name(const char *name)
{
	return !strchr(name, '/') && strcmp(name, ".") != 0 &&
	       strcmp(name, "..") != 0;
}

static void netdev_class_open(struct tally_instance *inst, struct netdev *nd,
			      struct netdev_if *ifc)
{
	int dfd;

	if (nd->class_net_fd < 0 || !netdev_safe_name(ifc->name)) {
		ifc->nosys = true;
		return;
	}
	dfd = openat(nd->class_net_fd, ifc->name,
		     O_PATH | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0) {
		/* not in this sysfs: another network namespace, a fixture */
		tally_log(inst, LOG_DEBUG, "%s/class/net/%s: %s", nd->sysfs,
			  ifc->name, strerror(errno));
		ifc->nosys = true;
		return;
	}
	for (int a = 0; a < NETDEV_NATTRS; a++) {
		ifc->fd[a] = tally_open_file(dfd, netdev_attr_files[a]);
		if (ifc->fd[a] < 0) {
			if (errno == EMFILE || errno == ENFILE)
				tally_log(inst, LOG_WARNING,
					  "%s/class/net/%s/%s: %s (exclude "
					  "devices or set netclass = false)",
					  nd->sysfs, ifc->name,
					  netdev_attr_files[a],
					  strerror(errno));
			ifc->fd[a] = NETDEV_FD_ABSENT;
		}
	}
	close(dfd);
	ifc->sys = true;
}

/* Parse a signed decimal, or a hexadecimal "0x..." number, whole string. */
static int netdev_attr_num(const char *s, long long *v)
{
	char *end;

	if (!*s)
		return -1;
	errno = 0;
	*v = strtoll(s, &end, 0);
	return errno || *end ? -1 : 0;
}

/*
 * Rebuild the node_network_info label set when one of its values changed
 * (rare: link events, MAC or alias changes).
 */
static int netdev_class_info(struct netdev_if *ifc,
			     char val[NETDEV_NATTRS][NETDEV_ATTR_MAX],
			     const char *adminstate)
{
	char key[6 * NETDEV_ATTR_MAX];
	struct tally_label pairs[7];
	struct tally_labels *info;
	size_t len = 0;
	const char *parts[6] = { val[NETDEV_ADDRESS], val[NETDEV_BROADCAST],
				 val[NETDEV_DUPLEX],  val[NETDEV_OPERSTATE],
				 adminstate,	      val[NETDEV_IFALIAS] };
	char *copy;

	for (int i = 0; i < 6; i++) {
		size_t n = strlen(parts[i]) + 1;

		memcpy(key + len, parts[i], n);
		len += n;
	}
	if (ifc->info && len == ifc->info_key_len &&
	    memcmp(key, ifc->info_key, len) == 0)
		return 0;
	pairs[0] = (struct tally_label){ "device", ifc->name };
	pairs[1] = (struct tally_label){ "address", parts[0] };
	pairs[2] = (struct tally_label){ "broadcast", parts[1] };
	pairs[3] = (struct tally_label){ "duplex", parts[2] };
	pairs[4] = (struct tally_label){ "operstate", parts[3] };
	pairs[5] = (struct tally_label){ "adminstate", parts[4] };
	pairs[6] = (struct tally_label){ "ifalias", parts[5] };
	info = tally_labels_new(pairs, 7);
	if (!info)
		return -1;
	copy = malloc(len);
	if (!copy) {
		tally_labels_unref(info);
		return -1;
	}
	memcpy(copy, key, len);
	tally_labels_unref(ifc->info);
	free(ifc->info_key);
	ifc->info = info;
	ifc->info_key = copy;
	ifc->info_key_len = len;
	return 0;
}

/* Operstate and flags first: a change of either retries failed reads. */
static const int netdev_read_order[NETDEV_NATTRS] = {
	NETDEV_OPERSTATE, NETDEV_FLAGS,	    NETDEV_CARRIER,
	NETDEV_MTU,	  NETDEV_SPEED,	    NETDEV_DUPLEX,
	NETDEV_ADDRESS,	  NETDEV_BROADCAST, NETDEV_IFALIAS,
};

/*
 * With operstate and flags of this tick in @val: forget which attributes
 * had no value when either changed, or after NETDEV_INVAL_RETRY ticks.
 */
static void netdev_class_state(struct netdev_if *ifc,
			       char val[NETDEV_NATTRS][NETDEV_ATTR_MAX])
{
	char state[sizeof(ifc->state)];

	snprintf(state, sizeof(state), "%.20s/%.20s", val[NETDEV_OPERSTATE],
		 val[NETDEV_FLAGS]);
	if (strcmp(state, ifc->state) != 0 ||
	    ++ifc->inval_ticks >= NETDEV_INVAL_RETRY) {
		memcpy(ifc->state, state, sizeof(state));
		ifc->inval = 0;
		ifc->inval_ticks = 0;
	}
}

static int netdev_gauge(struct tally_batch *b, const char *name,
			const char *help, struct netdev_if *ifc, double v,
			int64_t ts)
{
	return tally_batch_add_metric(b, TALLY_GAUGE, name, help, ifc->labels,
				      v, ts);
}

/**
 * netdev_class_read() - emit the /sys/class/net attributes of @ifc
 * Return: 0 (also when the device has no sysfs entry or just vanished),
 * or -1 with errno = ENOMEM.
 */
int netdev_class_read(struct tally_instance *inst, struct netdev *nd,
		      struct netdev_if *ifc, struct tally_batch *b, int64_t ts)
{
	char val[NETDEV_NATTRS][NETDEV_ATTR_MAX];
	bool have[NETDEV_NATTRS];
	long long num[NETDEV_NATTRS];
	const char *admin = "unknown";

	if (ifc->nosys)
		return 0;
	if (!ifc->sys) {
		netdev_class_open(inst, nd, ifc);
		if (!ifc->sys)
			return 0;
	}
	for (int i = 0; i < NETDEV_NATTRS; i++) {
		int a = netdev_read_order[i];

		val[a][0] = '\0';
		have[a] = false;
		if (i == 2)
			netdev_class_state(ifc, val);
		if (ifc->fd[a] < 0 || (ifc->inval & (1u << a)))
			continue;
		if (netdev_pread_small(ifc->fd[a], val[a], NETDEV_ATTR_MAX) <
		    0) {
			if (errno == ENODEV || errno == ENOENT ||
			    errno == ESTALE) {
				/* deleted, maybe re-created: reopen */
				netdev_class_close(ifc);
				return 0;
			}
			if (errno == EINVAL) /* no value in this state */
				ifc->inval |= 1u << a;
			val[a][0] = '\0';
			continue;
		}
		have[a] = true;
	}
	for (int a = NETDEV_CARRIER; a <= NETDEV_FLAGS; a++)
		if (have[a] && netdev_attr_num(val[a], &num[a]) < 0)
			have[a] = false;
	if (have[NETDEV_FLAGS])
		admin = (num[NETDEV_FLAGS] & 1) ? "up" : "down"; /* IFF_UP */

	if (have[NETDEV_OPERSTATE] &&
	    netdev_gauge(b, "node_network_up",
			 "Value is 1 if operstate is 'up', 0 otherwise.", ifc,
			 strcmp(val[NETDEV_OPERSTATE], "up") == 0, ts) < 0)
		return -1;
	if (netdev_class_info(ifc, val, admin) < 0 ||
	    tally_batch_add_metric(
		    b, TALLY_INFO, "node_network_info",
		    "Non-numeric data from /sys/class/net/<iface>, value "
		    "is always 1.",
		    ifc->info, 1, ts) < 0)
		return -1;
	if (have[NETDEV_CARRIER] &&
	    netdev_gauge(b, "node_network_carrier",
			 "Network device property: carrier", ifc,
			 (double)num[NETDEV_CARRIER], ts) < 0)
		return -1;
	if (have[NETDEV_FLAGS] &&
	    netdev_gauge(b, "node_network_flags",
			 "Network device property: flags", ifc,
			 (double)num[NETDEV_FLAGS], ts) < 0)
		return -1;
	if (have[NETDEV_MTU] &&
	    netdev_gauge(b, "node_network_mtu_bytes",
			 "Network device property: mtu_bytes", ifc,
			 (double)num[NETDEV_MTU], ts) < 0)
		return -1;
	/* Mbit/s to bytes/s; -1 means unknown (virtual devices) */
	if (have[NETDEV_SPEED] && num[NETDEV_SPEED] >= 0 &&
	    netdev_gauge(b, "node_network_speed_bytes",
			 "Network device property: speed_bytes", ifc,
			 (double)num[NETDEV_SPEED] * 125000.0, ts) < 0)
		return -1;
	return 0;
}
