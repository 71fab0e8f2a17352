/* SPDX-License-Identifier: MIT */
/*
 * t/unit/netdev.c - the netdev input: its parsers and filters, then the
 * plugin on /proc and /sys trees written by the test, over several ticks
 *
 * Expected values are written out by hand from the text the test writes.
 */
#include "config.h"

#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "../../core/core-internal.h" /* tally_options_*(), as tallyd */
#include "tap.h"

#include "../../plugins/input/netdev/netdev.c"
#include "../../plugins/input/netdev/netclass.c"
#include "../../plugins/input/netdev/infiniband.c"

#include "procfs-util.h"

/*
 * option() - set option @key of @nd to the libconfig value @value the way
 * tallyd applies a configuration file (the core compiles regular
 * expressions and reports bad ones)
 * Return: 0, or -1 with errno set.
 */
static int option(struct netdev *nd, const char *key, const char *value)
{
	char text[256];
	config_t cfg;
	int ret = -1;

	snprintf(text, sizeof(text), "%s = %s;", key, value);
	config_init(&cfg);
	errno = EINVAL;
	if (config_read_string(&cfg, text) == CONFIG_TRUE)
		ret = tally_options_set(tally_options_find(netdev_options, key),
					nd, config_lookup(&cfg, key),
					"test.conf", 1, "inputs.test");
	config_destroy(&cfg);
	return ret;
}

#define HEADER2                                                              \
	" face |bytes    packets errs drop fifo frame compressed multicast|" \
	"bytes    packets errs drop fifo colls carrier compressed\n"
#define HEADER HEADER2 /* preceded by the first header line */
#define HEADER1                                                              \
	"Inter-|   Receive                                                |" \
	"  Transmit\n"

static void test_header(void)
{
	struct netdev_layout l = { 0 };

	ok(netdev_parse_header(HEADER2, &l) == 0, "standard header parses");
	cmp_ok(l.n, "==", 16, "16 columns");
	cmp_ok(l.nrx, "==", 8, "8 receive columns");
	is(l.col[0].name, "node_network_receive_bytes_total", "column 0");
	is(l.col[7].name, "node_network_receive_multicast_total", "column 7");
	is(l.col[8].name, "node_network_transmit_bytes_total", "column 8");
	is(l.col[13].name, "node_network_transmit_colls_total", "column 13");
	is(l.col[14].name, "node_network_transmit_carrier_total", "column 14");
	is(l.col[15].help, "Network device statistic transmit_compressed.",
	   "help text as node_exporter");
	ok(l.col[15].dyn == NULL, "standard columns use static names");

	/* Linux 2.0: no byte counters */
	ok(netdev_parse_header(" face |packets errs drop fifo frame|packets "
			       "errs drop fifo colls carrier\n",
			       &l) == 0,
	   "2.0 header parses");
	cmp_ok(l.n, "==", 11, "11 columns");
	cmp_ok(l.nrx, "==", 5, "5 receive columns");
	is(l.col[5].name, "node_network_transmit_packets_total",
	   "first transmit column");

	/* a column a future kernel might add */
	ok(netdev_parse_header(" face |bytes frobs|bytes\n", &l) == 0,
	   "unknown column parses");
	is(l.col[1].name, "node_network_receive_frobs_total",
	   "named by node_exporter's rule");
	is(l.col[1].help, "Network device statistic receive_frobs.",
	   "and its help");
	ok(l.col[1].dyn != NULL && l.col[1].name == l.col[1].dyn,
	   "owned by the layout");

	ok(netdev_parse_header("garbage without bars\n", &l) < 0,
	   "no bars: not a header");
	ok(netdev_parse_header(" face | | \n", &l) < 0, "no column");
	is(l.col[1].name, "node_network_receive_frobs_total",
	   "a failed parse keeps the previous layout");
	netdev_layout_clear(&l);
}

static void test_line(void)
{
	static const struct {
		const char *line;
		int ret;
		const char *name;
		unsigned n;
		uint64_t first, last;
	} cases[] = {
		{ "    lo:    3267      29    0    0    0     0          0    "
		  "     0     3267      29    0    0    0     0       0       "
		  "   0\n",
		  0, "lo", 16, 3267, 0 },
		{ "vlan.12: 7 1 0 0 0 0 0 0 9 2 0 0 0 0 0 5", 0, "vlan.12", 16,
		  7, 5 },
		/* a name with ':' (an alias on old kernels) */
		{ "eth0:1: 5 1 0 0 0 0 0 0 6 2 0 0 0 0 0 0", 0, "eth0:1", 16, 5,
		  0 },
		/* "%6s:%8lu": a wide first counter touches the colon */
		{ "  eth0:1234567890 2 0 0 0 0 0 0 3 4 0 0 0 0 0 9", 0, "eth0",
		  16, 1234567890, 9 },
		{ "eth0:1:18446744073709551615 2 0 0 0 0 0 0 3 4 0 0 0 0 0 9",
		  0, "eth0:1", 16, UINT64_MAX, 9 },
		/* IFNAMSIZ - 1 = 15 characters */
		{ "abcdefghijklmno:1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16", 0,
		  "abcdefghijklmno", 16, 1, 16 },
		{ .line = "nocolon 1 2 3", .ret = -1 },
		{ .line = "   : 1 2 3", .ret = -1 },
		{ .line = "eth0: 1 x 3", .ret = -1 },
		{ .line = "eth0: 1 2x 3", .ret = -1 },
		{ .line = "eth0: 18446744073709551616", .ret = -1 },
		{ .line = "a-name-that-is-far-too-long-to-be-any-interface-"
			  "name-"
			  "at-all-really: 1",
		  .ret = -1 },
	};

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		struct netdev_row r;
		int ret = netdev_parse_line(cases[i].line, &r);

		cmp_ok(ret, "==", cases[i].ret, "line %zu returns %d", i,
		       cases[i].ret);
		if (ret != 0 || cases[i].ret != 0)
			continue;
		is(r.name, cases[i].name, "line %zu device", i);
		cmp_ok(r.n, "==", cases[i].n, "line %zu counters", i);
		cmp_ok(r.v[0], "==", cases[i].first, "line %zu first", i);
		cmp_ok(r.v[r.n - 1], "==", cases[i].last, "line %zu last", i);
	}
}

static void test_ib_parsers(void)
{
	uint64_t u;
	double v;

	ok(netdev_ib_state("4: ACTIVE", &u) == 0 && u == 4, "state 4");
	ok(netdev_ib_state("5: LinkUp", &u) == 0 && u == 5, "phys_state 5");
	ok(netdev_ib_state("ACTIVE", &u) < 0, "state without a number");
	ok(netdev_ib_rate("100 Gb/sec (4X EDR)", &v) == 0 && v == 12.5e9,
	   "EDR rate in bytes/s");
	ok(netdev_ib_rate("2.5 Gb/sec (1X SDR)", &v) == 0 && v == 312500000,
	   "SDR rate in bytes/s");
	ok(netdev_ib_rate("fast", &v) < 0, "a word");
	ok(netdev_ib_rate("10 Mb/sec", &v) < 0, "another unit");
}

static void test_filters(void)
{
	struct netdev nd = { 0 };

	ok(option(&nd, "include", "[\"^eth\", \"^ib[0-9]+$\"]") == 0 &&
		   option(&nd, "exclude", "[\"^eth9$\", \"^mlx4_\"]") == 0,
	   "expressions compile");
	ok(netdev_wanted(&nd, "eth0"), "eth0 included");
	ok(netdev_wanted(&nd, "ib0"), "ib0 included");
	ok(!netdev_wanted(&nd, "ib0.8001"), "ib0.8001 not included");
	ok(!netdev_wanted(&nd, "lo"), "lo not included");
	ok(!netdev_wanted(&nd, "eth9"), "eth9 excluded (exclude wins)");
	ok(option(&nd, "include", "[]") == 0, "include emptied");
	ok(netdev_wanted(&nd, "lo"), "empty include: everything");
	ok(!netdev_wanted(&nd, "mlx4_0"), "but exclude still applies");
	errno = 0;
	ok(option(&nd, "exclude", "[\"(\"]") < 0 && errno == EINVAL,
	   "an invalid expression is a configuration error");
	tally_options_free(netdev_options, &nd);
}

static void put_netclass(const char *dev, const char *oper, const char *mtu,
			 const char *speed, const char *flags,
			 const char *duplex, const char *addr)
{
	char rel[128];

#define ATTR(f, v)                                                      \
	do {                                                            \
		snprintf(rel, sizeof(rel), "sys/class/net/%s/" f, dev); \
		put(rel, "%s\n", v);                                    \
	} while (0)
	ATTR("operstate", oper);
	ATTR("carrier", "1");
	ATTR("mtu", mtu);
	ATTR("speed", speed);
	ATTR("flags", flags);
	if (duplex)
		ATTR("duplex", duplex);
	ATTR("address", addr);
	ATTR("broadcast", "ff:ff:ff:ff:ff:ff");
	ATTR("ifalias", "");
#undef ATTR
}

static void put_ib_port(const char *dev, int port, unsigned long long rcv,
			unsigned long long xmit)
{
	char rel[160];

#define IB(f, ...)                                                          \
	do {                                                                \
		snprintf(rel, sizeof(rel),                                  \
			 "sys/class/infiniband/%s/ports/%d/" f, dev, port); \
		put(rel, __VA_ARGS__);                                      \
	} while (0)
	IB("state", "4: ACTIVE\n");
	IB("phys_state", "5: LinkUp\n");
	IB("rate", "100 Gb/sec (4X EDR)\n");
	IB("counters/port_rcv_data", "%llu\n", rcv);
	IB("counters/port_xmit_data", "%llu\n", xmit);
	IB("counters/port_rcv_packets", "%d\n", 1000);
	IB("counters/symbol_error", "%d\n", 2);
	IB("counters/VL15_dropped", "N/A (no PMA)\n");
#undef IB
}

#define DEV(b, name, dev)	 val(b, name, "device", dev, NULL, NULL)
#define PORT(b, name, dev, port) val(b, name, "device", dev, "port", port)

static size_t count_dev(struct tally_batch *b, const char *dev)
{
	size_t n = 0;

	for (size_t i = 0; i < tally_batch_count(b); i++) {
		const char *g = tally_labels_get(
			tally_batch_at(b, i)->metric.labels, "device");

		n += g && strcmp(g, dev) == 0;
	}
	return n;
}

static struct tally_batch *tick(struct netdev *nd)
{
	struct tally_batch *b = tally_batch_new();

	if (!b)
		bail_out("tally_batch_new: %s", strerror(errno));
	ok(netdev_read(NULL, nd, b) == 0, "read returns 0");
	return b;
}

/*
 * setup() - options as tallyd fills them: the defaults of the option
 * table, then @root and @sys. teardown() frees them after netdev_fini().
 */
static void setup(struct netdev *nd, const char *root, const char *sys)
{
	memset(nd, 0, sizeof(*nd));
	if (tally_options_defaults(netdev_options, nd, "inputs.test") < 0)
		bail_out("netdev option defaults: %s", strerror(errno));
	free(nd->root);
	free(nd->sysfs);
	nd->root = strdup(root);
	nd->sysfs = strdup(sys);
	if (!nd->root || !nd->sysfs)
		bail_out("out of memory");
}

static void teardown(struct netdev *nd)
{
	netdev_fini(NULL, nd);
	tally_options_free(netdev_options, nd);
}

static void test_plugin(void)
{
	char root[300], sys[300];
	struct netdev nd;
	struct tally_batch *b;
	const struct tally_record *r;

	snprintf(root, sizeof(root), "%s/proc", tmpdir);
	snprintf(sys, sizeof(sys), "%s/sys", tmpdir);
	put("proc/net/dev", HEADER1 HEADER
	    "    lo:    3267      29    0    0    0     0          0         0"
	    "     3267      29    0    0    0     0       0          0\n"
	    "  eth0:1234567890 1369 1 2 3 4 5 6 59278 676 7 8 9 10 11 12\n"
	    "eth0.100: 10 1 0 0 0 0 0 0 20 2 0 0 0 0 0 0\n"
	    "abcdefghijklmno: 1 0 0 0 0 0 0 0 2 0 0 0 0 0 0 0\n"
	    "skipme0: 1 0 0 0 0 0 0 0 2 0 0 0 0 0 0 0\n"
	    "broken: 1 2\n");
	put_netclass("eth0", "up", "1500", "10000", "0x1003", "full",
		     "52:54:00:12:34:56");
	put_netclass("lo", "unknown", "65536", "-1", "0x9", NULL,
		     "00:00:00:00:00:00");
	put("sys/class/infiniband/mlx5_0/fw_ver", "20.31.1014\n");
	put("sys/class/infiniband/mlx5_0/board_id", "MT_0000000222\n");
	put("sys/class/infiniband/mlx5_0/hca_type", "MT4123\n");
	put_ib_port("mlx5_0", 1, 1000000, 2500);
	/* an old HCA with the 64-bit counters in counters_ext */
	put("sys/class/infiniband/mlx4_0/fw_ver", "2.42.5000\n");
	put_ib_port("mlx4_0", 1, 7, 8);
	put("sys/class/infiniband/mlx4_0/ports/1/counters_ext/port_rcv_data_64",
	    "4294967296\n");

	setup(&nd, root, sys);
	nd.omnistat = true;
	if (option(&nd, "exclude", "\"^skipme\"") < 0)
		bail_out("exclude: %s", strerror(errno));
	ok(netdev_init(NULL, &nd) == 0, "init on a fixture tree");

	b = tick(&nd);
	cmp_ok(DEV(b, "node_network_receive_bytes_total", "eth0"),
	       "==", 1234567890, "eth0 rx bytes (no space after the colon)");
	cmp_ok(DEV(b, "node_network_receive_packets_total", "eth0"), "==", 1369,
	       "eth0 rx packets");
	cmp_ok(DEV(b, "node_network_receive_multicast_total", "eth0"), "==", 6,
	       "eth0 rx multicast");
	cmp_ok(DEV(b, "node_network_transmit_bytes_total", "eth0"), "==", 59278,
	       "eth0 tx bytes");
	cmp_ok(DEV(b, "node_network_transmit_colls_total", "eth0"), "==", 10,
	       "eth0 tx colls");
	cmp_ok(DEV(b, "node_network_transmit_compressed_total", "eth0"),
	       "==", 12, "eth0 tx compressed");
	r = find(b, "node_network_transmit_bytes_total", "device", "eth0", NULL,
		 NULL);
	ok(r && r->metric.type == TALLY_COUNTER, "counters are counters");
	cmp_ok(DEV(b, "node_network_receive_bytes_total", "eth0.100"), "==", 10,
	       "a name with a dot");
	cmp_ok(DEV(b, "node_network_transmit_bytes_total", "abcdefghijklmno"),
	       "==", 2, "a 15-character name");
	cmp_ok(count_dev(b, "skipme0"), "==", 0, "excluded device absent");
	cmp_ok(count_dev(b, "broken"), "==", 0, "malformed line dropped");
	cmp_ok(DEV(b, "node_network_receive_bytes_total", "lo"), "==", 3267,
	       "lo rx bytes");

	cmp_ok(DEV(b, "node_network_up", "eth0"), "==", 1, "eth0 up");
	cmp_ok(DEV(b, "node_network_up", "lo"), "==", 0,
	       "lo operstate unknown: not up");
	cmp_ok(DEV(b, "node_network_mtu_bytes", "eth0"), "==", 1500,
	       "eth0 mtu");
	cmp_ok(DEV(b, "node_network_speed_bytes", "eth0"), "==", 1250000000,
	       "10000 Mbit/s in bytes/s");
	ok(!find(b, "node_network_speed_bytes", "device", "lo", NULL, NULL),
	   "speed -1 skipped");
	cmp_ok(DEV(b, "node_network_carrier", "eth0"), "==", 1, "carrier");
	cmp_ok(DEV(b, "node_network_flags", "eth0"), "==", 0x1003, "flags");
	r = find(b, "node_network_info", "device", "eth0", NULL, NULL);
	ok(r && r->metric.type == TALLY_INFO && r->metric.value == 1,
	   "eth0 info");
	if (r) {
		struct tally_labels *ls = r->metric.labels;

		is(tally_labels_get(ls, "address"), "52:54:00:12:34:56",
		   "info address");
		is(tally_labels_get(ls, "operstate"), "up", "info operstate");
		is(tally_labels_get(ls, "adminstate"), "up", "info adminstate");
		is(tally_labels_get(ls, "duplex"), "full", "info duplex");
		is(tally_labels_get(ls, "broadcast"), "ff:ff:ff:ff:ff:ff",
		   "info broadcast");
		is(tally_labels_get(ls, "ifalias"), "", "info ifalias");
		cmp_ok(tally_labels_count(ls), "==", 7, "seven info labels");
	}
	r = find(b, "node_network_info", "device", "lo", NULL, NULL);
	is(r ? tally_labels_get(r->metric.labels, "duplex") : NULL, "",
	   "lo without a duplex file: empty duplex");
	ok(!find(b, "node_network_up", "device", "eth0.100", NULL, NULL),
	   "no sysfs entry: no attribute metrics");

	cmp_ok(val(b, "omnistat_network_rx_bytes", "device_class", "net",
		   "interface", "eth0"),
	       "==", 1234567890, "omnistat rx of eth0");
	cmp_ok(val(b, "omnistat_network_tx_bytes", "device_class", "net",
		   "interface", "eth0"),
	       "==", 59278, "omnistat tx of eth0");
	ok(!find(b, "omnistat_network_rx_bytes", "interface", "lo", NULL, NULL),
	   "omnistat leaves out lo");
	r = find(b, "omnistat_network_rx_bytes", "interface", "eth0", NULL,
		 NULL);
	ok(r && r->metric.type == TALLY_GAUGE, "omnistat series are gauges");

	cmp_ok(PORT(b, "node_infiniband_port_data_received_bytes_total",
		    "mlx5_0", "1"),
	       "==", 4000000, "port_rcv_data counts 4-byte words");
	cmp_ok(PORT(b, "node_infiniband_port_data_transmitted_bytes_total",
		    "mlx5_0", "1"),
	       "==", 10000, "port_xmit_data counts 4-byte words");
	cmp_ok(PORT(b, "node_infiniband_port_packets_received_total", "mlx5_0",
		    "1"),
	       "==", 1000, "packets as read");
	cmp_ok(PORT(b, "node_infiniband_symbol_error_total", "mlx5_0", "1"),
	       "==", 2, "errors as read");
	ok(!find(b, "node_infiniband_vl15_dropped_total", "device", "mlx5_0",
		 NULL, NULL),
	   "N/A (no PMA) skipped");
	cmp_ok(PORT(b, "node_infiniband_state_id", "mlx5_0", "1"), "==", 4,
	       "state id");
	cmp_ok(PORT(b, "node_infiniband_physical_state_id", "mlx5_0", "1"),
	       "==", 5, "physical state id");
	cmp_ok(PORT(b, "node_infiniband_rate_bytes_per_second", "mlx5_0", "1"),
	       "==", 12.5e9, "rate");
	r = find(b, "node_infiniband_info", "device", "mlx5_0", NULL, NULL);
	ok(r && r->metric.type == TALLY_INFO, "HCA info");
	is(r ? tally_labels_get(r->metric.labels, "firmware_version") : NULL,
	   "20.31.1014", "firmware version");
	is(r ? tally_labels_get(r->metric.labels, "hca_type") : NULL, "MT4123",
	   "HCA type");
	r = find(b, "node_infiniband_info", "device", "mlx4_0", NULL, NULL);
	is(r ? tally_labels_get(r->metric.labels, "board_id") : NULL, "",
	   "missing board_id: empty label");
	cmp_ok(PORT(b, "node_infiniband_legacy_data_received_bytes_total",
		    "mlx4_0", "1"),
	       "==", 17179869184.0, "counters_ext data in 4-byte words");
	cmp_ok(val(b, "omnistat_network_rx_bytes", "device_class", "infiniband",
		   "interface", "mlx5_0:1"),
	       "==", 4000000, "omnistat rx of an HCA port");
	cmp_ok(val(b, "omnistat_network_tx_bytes", "device_class", "infiniband",
		   "interface", "mlx5_0:1"),
	       "==", 10000, "omnistat tx of an HCA port");
	tally_batch_unref(b);

	/*
	 * Tick 2: eth0 disappears, lo's counters went down (device
	 * re-created: exported as read), an HCA's counter went down, mlx4_0
	 * is removed, a new interface appears, and eth0's sysfs goes down.
	 */
	put("proc/net/dev",
	    HEADER1 HEADER "    lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n"
			   "  new0: 9 1 0 0 0 0 0 0 8 1 0 0 0 0 0 0\n");
	put_ib_port("mlx5_0", 1, 10, 2500);
	rmtree("sys/class/infiniband/mlx4_0");
	b = tick(&nd);
	cmp_ok(count_dev(b, "eth0"), "==", 0, "vanished eth0 not exported");
	ok(!find(b, "omnistat_network_rx_bytes", "interface", "eth0", NULL,
		 NULL),
	   "nor its omnistat series");
	cmp_ok(DEV(b, "node_network_receive_bytes_total", "lo"), "==", 5,
	       "lo counter went down: as read, not unwrapped");
	cmp_ok(DEV(b, "node_network_receive_bytes_total", "new0"), "==", 9,
	       "new device exported");
	cmp_ok(PORT(b, "node_infiniband_port_data_received_bytes_total",
		    "mlx5_0", "1"),
	       "==", 40, "HCA counter went down: as read");
	cmp_ok(count_dev(b, "mlx4_0"), "==", 0, "removed HCA not exported");
	cmp_ok(nd.nibs, "==", 1, "and forgotten");
	cmp_ok(nd.nifs, "==", 2, "two interfaces tracked");
	tally_batch_unref(b);

	/* Tick 3: eth0 comes back with new attributes, reopened. */
	put("proc/net/dev",
	    HEADER1 HEADER "  eth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n");
	put_netclass("eth0", "down", "9000", "-1", "0x1002", "unknown",
		     "52:54:00:12:34:57");
	b = tick(&nd);
	cmp_ok(DEV(b, "node_network_up", "eth0"), "==", 0, "eth0 down now");
	cmp_ok(DEV(b, "node_network_mtu_bytes", "eth0"), "==", 9000,
	       "new mtu read");
	r = find(b, "node_network_info", "device", "eth0", NULL, NULL);
	is(r ? tally_labels_get(r->metric.labels, "adminstate") : NULL, "down",
	   "adminstate from flags");
	is(r ? tally_labels_get(r->metric.labels, "address") : NULL,
	   "52:54:00:12:34:57", "info relabelled on change");
	tally_batch_unref(b);

	/* Tick 4: /proc/net/dev becomes a directory: one file lost, IB stays */
	rmtree("proc/net/dev");
	put("proc/net/dev/x", "%s", "");
	close(nd.dev_fd);
	nd.dev_fd = -1;
	b = tick(&nd);
	cmp_ok(count_dev(b, "eth0"), "==", 0, "no interface series");
	cmp_ok(nd.dev_err, "==", EINVAL, "failure remembered (logged once)");
	cmp_ok(PORT(b, "node_infiniband_port_data_received_bytes_total",
		    "mlx5_0", "1"),
	       "==", 40, "InfiniBand still reported");
	tally_batch_unref(b);

	teardown(&nd);
}

/* A header with a column missing and one this build does not know. */
static void test_odd_header(void)
{
	char root[300], sys[300];
	struct netdev nd;
	struct tally_batch *b;
	const struct tally_record *r;

	snprintf(root, sizeof(root), "%s/odd", tmpdir);
	snprintf(sys, sizeof(sys), "%s/nosys", tmpdir);
	put("odd/net/dev", "Inter-|Receive|Transmit\n"
			   " face |bytes frobs|bytes\n"
			   "  eth0: 100 7 200\n"
			   "  eth1: 100 7\n");
	setup(&nd, root, sys);
	ok(netdev_init(NULL, &nd) == 0, "init without a sysfs");
	b = tick(&nd);
	cmp_ok(DEV(b, "node_network_receive_bytes_total", "eth0"), "==", 100,
	       "columns follow the header");
	cmp_ok(DEV(b, "node_network_receive_frobs_total", "eth0"), "==", 7,
	       "unknown column exported under node_exporter's rule");
	r = find(b, "node_network_receive_frobs_total", NULL, NULL, NULL, NULL);
	is(r ? r->metric.help : NULL, "Network device statistic receive_frobs.",
	   "with a help text");
	cmp_ok(DEV(b, "node_network_transmit_bytes_total", "eth0"), "==", 200,
	       "transmit bytes");
	ok(!find(b, "node_network_receive_packets_total", NULL, NULL, NULL,
		 NULL),
	   "no column, no series");
	cmp_ok(count_dev(b, "eth1"), "==", 0,
	       "a row shorter than the header is dropped");
	tally_batch_unref(b);
	teardown(&nd);
}

static void test_no_alloc(void)
{
	char root[300], sys[300];
	struct netdev nd;
	struct tally_batch *b;
	long before, during;

	if (!alloc_count_available()) {
		skip(3, "allocation counting unavailable under sanitizers");
		return;
	}
	snprintf(root, sizeof(root), "%s/proc", tmpdir);
	snprintf(sys, sizeof(sys), "%s/sys", tmpdir);
	rmtree("proc/net/dev");
	put("proc/net/dev",
	    HEADER1 HEADER "    lo: 5 1 0 0 0 0 0 0 5 1 0 0 0 0 0 0\n"
			   "  eth0: 1 1 0 0 0 0 0 0 1 1 0 0 0 0 0 0\n");
	setup(&nd, root, sys);
	nd.omnistat = true;
	netdev_init(NULL, &nd);
	for (int i = 0; i < 3; i++) {
		b = tally_batch_new();
		netdev_read(NULL, &nd, b);
		tally_batch_unref(b);
	}
	b = tally_batch_new();
	before = alloc_count();
	netdev_read(NULL, &nd, b);
	during = alloc_count() - before;
	cmp_ok(tally_batch_count(b), ">", 40, "steady-state tick has records");
	cmp_ok(names_bytes(b), ">", ARENA_CHUNK_BYTES,
	       "their names span more than one arena chunk");
	tally_batch_unref(b);
	cmp_ok(during, "==", 0, "steady-state tick allocates nothing");
	teardown(&nd);
}

int main(void)
{
	plan(NO_PLAN);
	if (!mkdtemp(tmpdir))
		bail_out("mkdtemp: %s", strerror(errno));
	test_header();
	test_line();
	test_ib_parsers();
	test_filters();
	test_plugin();
	test_odd_header();
	test_no_alloc();
	rmtree("");
	return done_testing();
}
