/* SPDX-License-Identifier: MIT */
/*
 * plugins/input/netdev/netdev.h - state shared by the netdev input's files
 *
 *   netdev.c      options, hooks, /proc/net/dev, device filters
 *   netclass.c    /sys/class/net/<dev> attributes (up, mtu, speed, info)
 *   infiniband.c  /sys/class/infiniband/<dev>/ports/<n> counters
 *
 * Private to the plugin (only the descriptor is exported from the .so).
 * Everything here runs on the instance's read thread, one tick at a time.
 */
#ifndef TALLY_NETDEV_H
#define TALLY_NETDEV_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include <tally/io.h>
#include <tally/plugin.h>

/* Interface names are at most IFNAMSIZ - 1 = 15 bytes; allow slack. */
#define NETDEV_NAME_MAX 64
/* /proc/net/dev has had 16 counter columns since Linux 2.2. */
#define NETDEV_MAX_COLS 32

/**
 * struct netdev_col - one counter column of /proc/net/dev
 * @name: metric name, static for the 16 standard columns, else @dyn
 * @help: help text, same storage as @name
 * @dyn:  for a column this build does not know (a future kernel):
 *        "name\0help\0", which @name and @help point into
 */
struct netdev_col {
	const char *name;
	const char *help;
	char *dyn;
};

/**
 * struct netdev_layout - the columns announced by /proc/net/dev's header
 * @n:      number of columns
 * @nrx:    the first @nrx are receive columns, the rest transmit
 * @col:    the columns in file order
 * @header: the header line the layout was parsed from (re-parsed only
 *          when the file's header changes)
 */
struct netdev_layout {
	unsigned n;
	unsigned nrx;
	struct netdev_col col[NETDEV_MAX_COLS];
	char *header;
};

/* Attributes of /sys/class/net/<dev> kept open, in this order. */
enum netdev_attr {
	NETDEV_OPERSTATE,
	NETDEV_CARRIER,
	NETDEV_MTU,
	NETDEV_SPEED,
	NETDEV_FLAGS,
	NETDEV_DUPLEX,
	NETDEV_ADDRESS,
	NETDEV_BROADCAST,
	NETDEV_IFALIAS,
	NETDEV_NATTRS,
};

/* struct netdev_if.fd values besides an open descriptor */
#define NETDEV_FD_CLOSED (-1) /* not opened yet, or closed after an error */
#define NETDEV_FD_ABSENT (-2) /* the file does not exist for this device */

/**
 * struct netdev_if - one network interface of /proc/net/dev
 * @name:     interface name
 * @skip:     excluded by include/exclude (decided once, when first seen)
 * @seen:     generation of the last tick that listed it
 * @labels:   {device}
 * @omni:     {device_class="net", interface} (omnistat = true), or NULL
 * @info:     node_network_info labels, rebuilt when @info_key changes
 * @info_key: the attribute values @info was built from, NUL-separated
 * @info_key_len: bytes of @info_key
 * @fd:       /sys/class/net/<dev>/<attr> descriptors (NETDEV_FD_* when not
 *            open)
 * @sys:      sysfs attributes opened (false: not yet, or retry)
 * @nosys:    /sys/class/net/<dev> does not exist (another namespace's
 *            sysfs, or a fixture without one): no attribute metrics
 * @inval:    bit (1 << enum netdev_attr) set for each attribute whose read
 *            failed with EINVAL: no value in the link's present state
 *            (speed and duplex of lo, of virtual devices, of a link without
 *            carrier); not read again until @state changes or
 *            NETDEV_INVAL_RETRY ticks have passed
 * @inval_ticks: ticks since @inval was last cleared
 * @state:    "operstate/flags" when @inval was last cleared (cut to fit)
 */
struct netdev_if {
	char name[NETDEV_NAME_MAX];
	bool skip;
	uint64_t seen;
	struct tally_labels *labels;
	struct tally_labels *omni;
	struct tally_labels *info;
	char *info_key;
	size_t info_key_len;
	int fd[NETDEV_NATTRS];
	bool sys;
	bool nosys;
	uint16_t inval;
	uint16_t inval_ticks;
	char state[48];
};

/* Ticks after which attributes that failed with EINVAL are tried again. */
#define NETDEV_INVAL_RETRY 60

struct netdev_ib_dev;

/**
 * struct netdev - the instance
 * Options (filled by the core from the option table): @root .. @omnistat.
 */
struct netdev {
	char *root;
	char *sysfs;
	struct tally_regexlist include;
	struct tally_regexlist exclude;
	bool netclass;
	bool infiniband;
	bool omnistat;

	struct tally_labels *empty;

	int dev_fd;		 /* <root>/net/dev, -1 while not open */
	int dev_err;		 /* errno of its last logged failure */
	int class_net_fd;	 /* <sysfs>/class/net (O_PATH), -1 if absent */
	struct tally_readbuf rb; /* read buffer for /proc/net/dev */
	struct netdev_layout layout;
	bool layout_ok; /* @layout matches the current header */

	uint64_t gen;	       /* tick counter, for struct netdev_if.seen */
	struct netdev_if *ifs; /* in file order */
	size_t nifs, ifs_cap;

	int ib_fd; /* <sysfs>/class/infiniband, -1 if absent */
	int ib_err;
	int64_t ib_retry_ns; /* monotonic time of the next open attempt */
	struct netdev_ib_dev *ibs;
	size_t nibs;
};

/* netdev.c */
bool netdev_wanted(const struct netdev *nd, const char *name);
ssize_t netdev_pread_small(int fd, char *buf, size_t size);

/* netclass.c */
void netdev_class_close(struct netdev_if *ifc);
int netdev_class_read(struct tally_instance *inst, struct netdev *nd,
		      struct netdev_if *ifc, struct tally_batch *b, int64_t ts);

/* infiniband.c */
int netdev_ib_read(struct tally_instance *inst, struct netdev *nd,
		   struct tally_batch *b, int64_t ts);
void netdev_ib_free_all(struct netdev *nd);

#endif /* TALLY_NETDEV_H */
