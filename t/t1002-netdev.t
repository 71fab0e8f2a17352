#!/bin/sh
#
# t1002-netdev.t - the netdev input on fixture /proc and /sys trees, one
# tick each through `tallyd --once` and the capture output
#
# Expected values are derived by hand from the fixture files: InfiniBand
# port_rcv_data/port_xmit_data (and their _64 forms) count 4-byte words,
# speed is Mbit/s (x 125000 for bytes/s), rate is Gbit/s (x 125000000).
# As in t1001, norm (t/lib/hostinputs.sh) rewrites values with %.17g on
# both sides.

test_description='netdev input: exact values from fixture trees'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/hostinputs.sh"

# once PROC SYS [OPTIONS] - one tick of netdev: out.txt, log.txt
once() {
	once_input net \
		"plugin = \"netdev\"; root = \"$1\"; sysfs = \"$2\"; $3"
}

# counters DEVICE RX... TX... - the 16 /proc/net/dev series of a device
counters() {
	d=$1
	shift
	for f in bytes packets errs drop fifo frame compressed multicast; do
		echo "counter node_network_receive_${f}_total{device=\"$d\"} $1"
		shift
	done
	for f in bytes packets errs drop fifo colls carrier compressed; do
		echo "counter node_network_transmit_${f}_total{device=\"$d\"} $1"
		shift
	done
}

IB0_ADDR=00:00:10:87:fe:80:00:00:00:00:00:00:b8:ce:f6:03:00:a1:b2:c3
IB0_BRD=00:ff:ff:ff:ff:12:40:1b:ff:ff:00:00:00:00:00:00:ff:ff:ff:ff

{
	counters lo 3267 29 0 0 0 0 0 0 3267 29 0 0 0 0 0 0
	cat <<-EXP
	gauge node_network_up{device="lo"} 0
	info node_network_info{address="00:00:00:00:00:00",adminstate="up",broadcast="00:00:00:00:00:00",device="lo",duplex="",ifalias="",operstate="unknown"} 1
	gauge node_network_carrier{device="lo"} 1
	gauge node_network_flags{device="lo"} 9
	gauge node_network_mtu_bytes{device="lo"} 65536
	EXP
	counters eth0 60792878 1369 1 2 3 4 5 6 59278 676 7 8 9 10 11 12
	cat <<-EXP
	gauge node_network_up{device="eth0"} 1
	info node_network_info{address="52:54:00:12:34:56",adminstate="up",broadcast="ff:ff:ff:ff:ff:ff",device="eth0",duplex="full",ifalias="uplink to spine 3",operstate="up"} 1
	gauge node_network_carrier{device="eth0"} 1
	gauge node_network_flags{device="eth0"} 4099
	gauge node_network_mtu_bytes{device="eth0"} 1500
	gauge node_network_speed_bytes{device="eth0"} 3125000000
	gauge omnistat_network_rx_bytes{device_class="net",interface="eth0"} 60792878
	gauge omnistat_network_tx_bytes{device_class="net",interface="eth0"} 59278
	EXP
	counters ib0 912345678901 8765432 0 0 0 0 0 17 \
		812345678901 7654321 0 3 0 0 0 0
	cat <<-EXP
	gauge node_network_up{device="ib0"} 1
	info node_network_info{address="$IB0_ADDR",adminstate="up",broadcast="$IB0_BRD",device="ib0",duplex="",ifalias="",operstate="up"} 1
	gauge node_network_carrier{device="ib0"} 1
	gauge node_network_flags{device="ib0"} 4099
	gauge node_network_mtu_bytes{device="ib0"} 4092
	gauge node_network_speed_bytes{device="ib0"} 12500000000
	gauge omnistat_network_rx_bytes{device_class="net",interface="ib0"} 912345678901
	gauge omnistat_network_tx_bytes{device_class="net",interface="ib0"} 812345678901
	info node_infiniband_info{board_id="",device="mlx4_0",firmware_version="2.42.5000",hca_type="MT26428"} 1
	gauge node_infiniband_state_id{device="mlx4_0",port="1"} 4
	gauge node_infiniband_physical_state_id{device="mlx4_0",port="1"} 5
	gauge node_infiniband_rate_bytes_per_second{device="mlx4_0",port="1"} 5000000000
	counter node_infiniband_port_data_received_bytes_total{device="mlx4_0",port="1"} 4000
	counter node_infiniband_port_data_transmitted_bytes_total{device="mlx4_0",port="1"} 8000
	counter node_infiniband_port_packets_received_total{device="mlx4_0",port="1"} 4294967295
	counter node_infiniband_legacy_data_received_bytes_total{device="mlx4_0",port="1"} 68719476736
	counter node_infiniband_legacy_packets_received_total{device="mlx4_0",port="1"} 5000000000
	counter node_infiniband_legacy_data_transmitted_bytes_total{device="mlx4_0",port="1"} 34359738368
	counter node_infiniband_legacy_packets_transmitted_total{device="mlx4_0",port="1"} 6000000000
	gauge omnistat_network_rx_bytes{device_class="infiniband",interface="mlx4_0:1"} 4000
	gauge omnistat_network_tx_bytes{device_class="infiniband",interface="mlx4_0:1"} 8000
	gauge node_infiniband_state_id{device="mlx4_0",port="2"} 1
	gauge node_infiniband_physical_state_id{device="mlx4_0",port="2"} 2
	gauge node_infiniband_rate_bytes_per_second{device="mlx4_0",port="2"} 1250000000
	counter node_infiniband_port_data_received_bytes_total{device="mlx4_0",port="2"} 8000
	counter node_infiniband_port_data_transmitted_bytes_total{device="mlx4_0",port="2"} 16000
	counter node_infiniband_port_packets_received_total{device="mlx4_0",port="2"} 4294967295
	counter node_infiniband_legacy_data_received_bytes_total{device="mlx4_0",port="2"} 68719476736
	counter node_infiniband_legacy_packets_received_total{device="mlx4_0",port="2"} 5000000000
	counter node_infiniband_legacy_data_transmitted_bytes_total{device="mlx4_0",port="2"} 34359738368
	counter node_infiniband_legacy_packets_transmitted_total{device="mlx4_0",port="2"} 6000000000
	gauge omnistat_network_rx_bytes{device_class="infiniband",interface="mlx4_0:2"} 8000
	gauge omnistat_network_tx_bytes{device_class="infiniband",interface="mlx4_0:2"} 16000
	info node_infiniband_info{board_id="MT_0000000222",device="mlx5_0",firmware_version="20.31.1014",hca_type="MT4123"} 1
	gauge node_infiniband_state_id{device="mlx5_0",port="1"} 4
	gauge node_infiniband_physical_state_id{device="mlx5_0",port="1"} 5
	gauge node_infiniband_rate_bytes_per_second{device="mlx5_0",port="1"} 12500000000
	counter node_infiniband_excessive_buffer_overrun_errors_total{device="mlx5_0",port="1"} 1
	counter node_infiniband_link_downed_total{device="mlx5_0",port="1"} 2
	counter node_infiniband_link_error_recovery_total{device="mlx5_0",port="1"} 3
	counter node_infiniband_local_link_integrity_errors_total{device="mlx5_0",port="1"} 4
	counter node_infiniband_multicast_packets_received_total{device="mlx5_0",port="1"} 5
	counter node_infiniband_multicast_packets_transmitted_total{device="mlx5_0",port="1"} 6
	counter node_infiniband_port_constraint_errors_received_total{device="mlx5_0",port="1"} 7
	counter node_infiniband_port_constraint_errors_transmitted_total{device="mlx5_0",port="1"} 14
	counter node_infiniband_port_data_received_bytes_total{device="mlx5_0",port="1"} 9122335704
	counter node_infiniband_port_data_transmitted_bytes_total{device="mlx5_0",port="1"} 7666974364
	counter node_infiniband_port_discards_received_total{device="mlx5_0",port="1"} 9
	counter node_infiniband_port_discards_transmitted_total{device="mlx5_0",port="1"} 16
	counter node_infiniband_port_errors_received_total{device="mlx5_0",port="1"} 10
	counter node_infiniband_port_packets_received_total{device="mlx5_0",port="1"} 77123456
	counter node_infiniband_port_packets_transmitted_total{device="mlx5_0",port="1"} 65432109
	counter node_infiniband_port_transmit_wait_total{device="mlx5_0",port="1"} 18
	counter node_infiniband_unicast_packets_received_total{device="mlx5_0",port="1"} 20
	counter node_infiniband_unicast_packets_transmitted_total{device="mlx5_0",port="1"} 21
	counter node_infiniband_port_receive_remote_physical_errors_total{device="mlx5_0",port="1"} 12
	counter node_infiniband_port_receive_switch_relay_errors_total{device="mlx5_0",port="1"} 13
	counter node_infiniband_symbol_error_total{device="mlx5_0",port="1"} 19
	counter node_infiniband_vl15_dropped_total{device="mlx5_0",port="1"} 22
	gauge omnistat_network_rx_bytes{device_class="infiniband",interface="mlx5_0:1"} 9122335704
	gauge omnistat_network_tx_bytes{device_class="infiniband",interface="mlx5_0:1"} 7666974364
	EXP
} >expected-6.1

test_expect_success 'Linux 6.x trees with omnistat: every series, exact values' '
	once "$FIXTURES/proc-6.1" "$FIXTURES/sys-6.1" "omnistat = true;" &&
	check expected-6.1 &&
	! grep -E "warning|error" log.txt
'

test_expect_success 'Omnistat names are off by default' '
	once "$FIXTURES/proc-6.1" "$FIXTURES/sys-6.1" &&
	grep -v omnistat_ expected-6.1 >expected-noomni &&
	check expected-noomni
'

test_expect_success 'include and exclude select interfaces and HCAs' '
	once "$FIXTURES/proc-6.1" "$FIXTURES/sys-6.1" \
		"include = [\"^eth\", \"^mlx\", \"^ib\"]; exclude = [\"^mlx4_\", \"^ib0$\"];" &&
	grep -E "device=\"(eth0|mlx5_0)\"" expected-6.1 >expected-filtered &&
	check expected-filtered
'

test_expect_success 'a single string is a one-element include list' '
	once "$FIXTURES/proc-6.1" "$FIXTURES/sys-6.1" "include = \"^lo$\";" &&
	grep "device=\"lo\"" expected-6.1 >expected-lo &&
	check expected-lo
'

test_expect_success 'netclass and infiniband can be turned off' '
	once "$FIXTURES/proc-6.1" "$FIXTURES/sys-6.1" \
		"netclass = false; infiniband = false;" &&
	grep "^counter node_network_" expected-6.1 >expected-counters &&
	check expected-counters
'

test_expect_success 'an invalid regular expression refuses to start' '
	rm -f out.txt &&
	test_must_fail once "$FIXTURES/proc-6.1" "$FIXTURES/sys-6.1" \
		"exclude = [\"^ok$\", \"(\"];" &&
	grep "inputs.net: option .exclude.: bad regular expression \"(\"" log.txt &&
	! test -e out.txt
'

test_expect_success '--check-config reports a bad expression with file:line' '
	cat >bad.conf <<-\CONF &&
	inputs = {
		net = {
			plugin = "netdev";
			include = ["^eth"];
			exclude = ["(bad"];
		};
	};
	outputs = { cap = { plugin = "capture"; path = "out.txt"; }; };
	pipelines = { p = { from = ["net"]; to = ["cap"]; }; };
	CONF
	line=$(grep -n "exclude = " bad.conf | cut -d: -f1) &&
	test "$line" = 5 &&
	test_must_fail tallyd --check-config -c bad.conf >check.txt 2>&1 &&
	grep "^bad.conf:$line: error: inputs.net: option .exclude.: bad regular expression" check.txt
'

test_expect_success 'node_exporter expressions: \\d and \\w are understood' '
	once "$FIXTURES/proc-6.1" "$FIXTURES/sys-6.1" \
		"exclude = [\"^\\\\w+\\\\d$\"]; netclass = false; infiniband = false;" &&
	grep -q "device=\"lo\"" out.txt &&
	! grep -q "device=\"eth0\"" out.txt &&
	! grep -q "device=\"ib0\"" out.txt
'

test_expect_success '--check-config refuses what POSIX cannot say, with the reason' '
	sed "s/(bad/(?i)^ETH/" bad.conf >lazy.conf &&
	test_must_fail tallyd --check-config -c lazy.conf >check.txt 2>&1 &&
	grep "^lazy.conf:5: error: inputs.net: option .exclude.: bad regular expression \"(?i)^ETH\": (? groups and flags" check.txt
'

test_expect_success 'Linux 2.6.18: a wide counter touches the colon; no sysfs' '
	once "$FIXTURES/proc-2.6.18" "$PWD/no-sys" &&
	{
		counters lo 557320 4680 0 0 0 0 0 0 557320 4680 0 0 0 0 0 0 &&
		counters eth0 2945367411 31233921 0 0 0 0 0 2416 \
			3758478402 29054627 0 0 0 0 0 0
	} >expected-2.6.18 &&
	check expected-2.6.18 &&
	grep "no-sys/class/net: No such file or directory" log.txt
'

test_expect_success 'odd names: colon, dot, IFNAMSIZ-1 = 15 characters, max counter' '
	once "$FIXTURES/proc-odd" "$PWD/no-sys" &&
	{
		counters eth0 1234567890 2 0 0 0 0 0 0 3 4 0 0 0 0 0 5 &&
		counters eth0:1 11 1 0 0 0 0 0 0 12 1 0 0 0 0 0 0 &&
		counters bond0.100 21 2 0 0 0 0 0 0 22 2 0 0 0 0 0 0 &&
		counters ibp65s0f0.8001 18446744073709551615 3 0 0 0 0 0 0 \
			32 3 0 0 0 0 0 0 &&
		counters veth0a1b2c3d4e5 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16
	} >expected-odd &&
	check expected-odd &&
	grep "malformed line dropped: eth0: 99 99 0" log.txt &&
	grep "malformed line dropped: short: 1 2 3$" log.txt &&
	test $(grep -c warning log.txt) = 2
'

# Linux 2.0 had no byte columns; "frobs" stands for a column a future
# kernel might add: series follow the header, never shifted values.
test_expect_success 'columns follow the header: missing and unknown ones' '
	once "$FIXTURES/proc-netdev-columns" "$PWD/no-sys" &&
	cat >expected-columns <<-EXP &&
	counter node_network_receive_packets_total{device="lo"} 29
	counter node_network_receive_errs_total{device="lo"} 0
	counter node_network_receive_drop_total{device="lo"} 0
	counter node_network_receive_fifo_total{device="lo"} 0
	counter node_network_receive_frame_total{device="lo"} 0
	counter node_network_transmit_packets_total{device="lo"} 29
	counter node_network_transmit_errs_total{device="lo"} 0
	counter node_network_transmit_drop_total{device="lo"} 0
	counter node_network_transmit_fifo_total{device="lo"} 0
	counter node_network_transmit_colls_total{device="lo"} 0
	counter node_network_transmit_carrier_total{device="lo"} 0
	counter node_network_transmit_frobs_total{device="lo"} 0
	counter node_network_receive_packets_total{device="eth0"} 1369
	counter node_network_receive_errs_total{device="eth0"} 1
	counter node_network_receive_drop_total{device="eth0"} 2
	counter node_network_receive_fifo_total{device="eth0"} 3
	counter node_network_receive_frame_total{device="eth0"} 4
	counter node_network_transmit_packets_total{device="eth0"} 676
	counter node_network_transmit_errs_total{device="eth0"} 7
	counter node_network_transmit_drop_total{device="eth0"} 8
	counter node_network_transmit_fifo_total{device="eth0"} 9
	counter node_network_transmit_colls_total{device="eth0"} 10
	counter node_network_transmit_carrier_total{device="eth0"} 11
	counter node_network_transmit_frobs_total{device="eth0"} 42
	EXP
	check expected-columns &&
	! grep -E "warning|error" log.txt
'

test_expect_success 'an unreadable /proc/net/dev: one log line, HCAs still report' '
	mkdir -p proc/net/dev &&
	once "$PWD/proc" "$FIXTURES/sys-6.1" &&
	grep node_infiniband_ expected-6.1 | grep -v omnistat_ >expected-ib &&
	check expected-ib &&
	test $(grep -c "net/dev: not a regular file, skipped" log.txt) = 1
'

test_done
