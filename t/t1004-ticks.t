#!/bin/sh
#
# t1004-ticks.t - procfs and netdev in a running tallyd over many ticks,
# while the test rewrites the fixture files in place between ticks (as the
# kernel's files change under a reader that keeps them open)
#
# Each record line carries its input (source = true) and the tick's
# timestamp (timestamps = true), from which tick and has
# (t/lib/hostinputs.sh) cut out an input's last complete tick.

test_description='procfs and netdev across ticks: vanishing devices, counters going down'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/hostinputs.sh"

test "$(getconf CLK_TCK)" = 100 && test_set_prereq HZ100

test_expect_success 'start tallyd on copies of the fixture trees' '
	cp -R "$FIXTURES/proc-6.1" proc &&
	cp -R "$FIXTURES/sys-6.1" sys &&
	cat >ticks.conf <<-CONF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = {
		host = { plugin = "procfs"; root = "$PWD/proc"; $PROCFS_BASE };
		net = { plugin = "netdev"; root = "$PWD/proc";
			sysfs = "$PWD/sys"; omnistat = true; };
	};
	outputs = { cap = { plugin = "capture"; path = "out.txt";
			    source = true; timestamps = true; }; };
	pipelines = { p = { from = ["host", "net"]; to = ["cap"]; }; };
	CONF
	start_tallyd ticks.conf &&
	wait_for "has net \"counter node_network_receive_bytes_total{device=\\\"eth0\\\"} 60792878\"" &&
	wait_for "has host \"counter node_context_switches_total 38014093\""
'

test_expect_success HZ100 'tick 1 is the fixture' '
	tick host >host1 &&
	grep -qxF "counter node_cpu_seconds_total{cpu=\"1\",mode=\"user\"} 13356.059999999999" host1 &&
	tick net >net1 &&
	grep -qxF "counter node_network_receive_bytes_total{device=\"lo\"} 3267" net1 &&
	grep -q "device=\"mlx4_0\"" net1
'

test_expect_success 'rewrite in place: devices and a CPU vanish, counters go down' '
	cat >proc/net/dev <<-DEV &&
	Inter-|   Receive                                                |  Transmit
	 face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls carrier compressed
	    lo:       5       1    0    0    0     0          0         0        7       1    0    0    0     0       0          0
	   ib0: 912345678901  8765432    0    0    0     0          0       17 812345678901  7654321    0    3    0     0       0          0
	DEV
	cat >proc/stat <<-STAT &&
	cpu  1 0 0 0
	cpu0 250 0 0 500 0 0 0 0 0 0
	cpu3 1418432 40062 571095 13321106 3421 0 2306 12 30109 7
	ctxt 100
	STAT
	echo 10 >sys/class/infiniband/mlx5_0/ports/1/counters/port_rcv_data &&
	rm -r sys/class/infiniband/mlx4_0 &&
	wait_for "has net \"counter node_network_receive_bytes_total{device=\\\"lo\\\"} 5\"" &&
	wait_for "has host \"counter node_context_switches_total 100\""
'

test_expect_success 'the vanished interface, HCA and CPU stop being exported' '
	tick net >net2 &&
	! grep "device=\"eth0\"" net2 &&
	! grep "interface=\"eth0\"" net2 &&
	! grep mlx4_0 net2 &&
	tick host >host2 &&
	! grep "cpu=\"1\"" host2 &&
	test $(grep -c "^counter node_cpu_seconds_total{" host2) = 16
'

test_expect_success HZ100 'counters that went down are exported as read' '
	grep -qxF "counter node_network_transmit_bytes_total{device=\"lo\"} 7" net2 &&
	grep -qxF "counter node_infiniband_port_data_received_bytes_total{device=\"mlx5_0\",port=\"1\"} 40" net2 &&
	grep -qxF "gauge omnistat_network_rx_bytes{device_class=\"infiniband\",interface=\"mlx5_0:1\"} 40" net2 &&
	grep -qxF "counter node_cpu_seconds_total{cpu=\"0\",mode=\"user\"} 2.5" host2 &&
	grep -qxF "counter node_context_switches_total 100" host2 &&
	! grep -q node_intr_total host2
'

test_expect_success 'devices that come back are exported again' '
	cp "$FIXTURES/proc-6.1/net/dev" proc/net/dev &&
	# built aside and renamed in, so no tick sees it half-copied
	cp -R "$FIXTURES/sys-6.1/class/infiniband/mlx4_0" mlx4_0 &&
	mv mlx4_0 sys/class/infiniband/ &&
	wait_for "has net \"counter node_network_receive_bytes_total{device=\\\"eth0\\\"} 60792878\"" &&
	wait_for "has net \"counter node_infiniband_legacy_packets_received_total{device=\\\"mlx4_0\\\",port=\\\"2\\\"} 5000000000\"" &&
	tick net >net3 &&
	grep -qxF "gauge node_network_speed_bytes{device=\"eth0\"} 3125000000" net3
'

test_expect_success 'no warning in the whole run, and a clean stop' '
	stop_tallyd &&
	! grep -E "warning|error" tallyd.log
'

test_done
