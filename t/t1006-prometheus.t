#!/bin/sh
#
# t1006-prometheus.t - procfs and netdev on the fixture trees, scraped
# through the prometheus output: what a node_exporter user's Prometheus
# and dashboards see
#
# promtool's only complaints must be the camelCase of the meminfo names,
# which node_exporter's own output has too (node_memory_MemTotal_bytes is
# the name dashboards query). HELP and TYPE lines are node_exporter's.

test_description='procfs and netdev through the prometheus output'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd promtool 'promtool not installed (Debian: prometheus)'
require_cmd curl

test_expect_success 'start tallyd with both inputs on the fixtures' '
	port=$(free_port) &&
	cat >prom.conf <<-CONF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = {
		host = { plugin = "procfs"; root = "$FIXTURES/proc-6.1"; };
		net = { plugin = "netdev"; root = "$FIXTURES/proc-6.1";
			sysfs = "$FIXTURES/sys-6.1"; omnistat = true; };
	};
	outputs = { prom = { plugin = "prometheus";
			     listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["host", "net"]; to = ["prom"]; }; };
	CONF
	start_tallyd --wait "port_listening $port" prom.conf &&
	wait_for "curl -sf -H \"Accept: text/plain\" http://127.0.0.1:$port/metrics >metrics &&
		grep -q node_infiniband_info metrics && grep -q node_load1 metrics"
'

test_expect_success 'promtool: nothing but the camelCase of node_exporter names' '
	{ promtool check metrics <metrics >lint 2>&1 || :; } &&
	grep -v "^node_memory_[A-Za-z0-9_]* metric names should be written in .snake_case. not .camelCase.$" \
		lint >lint.other || : &&
	test_must_be_empty lint.other &&
	grep -q "^node_memory_MemTotal_bytes " lint
'

test_expect_success 'HELP and TYPE as node_exporter' '
	cat >expected <<-\EXP &&
	# HELP node_cpu_seconds_total Seconds the CPUs spent in each mode.
	# TYPE node_cpu_seconds_total counter
	# HELP node_cpu_guest_seconds_total Seconds the CPUs spent in guests (VMs) for each mode.
	# TYPE node_cpu_guest_seconds_total counter
	# HELP node_intr_total Total number of interrupts serviced.
	# TYPE node_intr_total counter
	# HELP node_context_switches_total Total number of context switches.
	# TYPE node_context_switches_total counter
	# HELP node_boot_time_seconds Node boot time, in unixtime.
	# TYPE node_boot_time_seconds gauge
	# HELP node_forks_total Total number of forks.
	# TYPE node_forks_total counter
	# HELP node_procs_running Number of processes in runnable state.
	# TYPE node_procs_running gauge
	# HELP node_procs_blocked Number of processes blocked waiting for I/O to complete.
	# TYPE node_procs_blocked gauge
	# HELP node_memory_MemTotal_bytes Memory information field MemTotal_bytes.
	# TYPE node_memory_MemTotal_bytes gauge
	# HELP node_memory_Active_anon_bytes Memory information field Active_anon_bytes.
	# TYPE node_memory_Active_anon_bytes gauge
	# HELP node_memory_HugePages_Total Memory information field HugePages_Total.
	# TYPE node_memory_HugePages_Total gauge
	# HELP node_load1 1m load average.
	# TYPE node_load1 gauge
	# HELP node_pressure_io_stalled_seconds_total Total time in seconds no process could make progress due to IO congestion
	# TYPE node_pressure_io_stalled_seconds_total counter
	# HELP node_network_receive_bytes_total Network device statistic receive_bytes.
	# TYPE node_network_receive_bytes_total counter
	# HELP node_network_up Value is 1 if operstate is '"'"'up'"'"', 0 otherwise.
	# TYPE node_network_up gauge
	# HELP node_network_speed_bytes Network device property: speed_bytes
	# TYPE node_network_speed_bytes gauge
	# HELP node_infiniband_port_data_received_bytes_total Number of data octets received on all links
	# TYPE node_infiniband_port_data_received_bytes_total counter
	# HELP node_infiniband_state_id State of the InfiniBand port (0: no change, 1: down, 2: init, 3: armed, 4: active, 5: act defer)
	# TYPE node_infiniband_state_id gauge
	# HELP omnistat_network_rx_bytes Network received (bytes)
	# TYPE omnistat_network_rx_bytes gauge
	EXP
	while read -r line; do
		grep -qxF "$line" metrics || { echo "missing: $line"; return 1; }
	done <expected
'

test_expect_success 'series and values as the capture tests have them' '
	grep -qx "node_cpu_seconds_total{cpu=\"3\",mode=\"steal\"} 0.12" metrics &&
	grep -qx "node_memory_MemTotal_bytes 25276473344" metrics &&
	grep -qx "node_infiniband_port_data_received_bytes_total{device=\"mlx5_0\",port=\"1\"} 9122335704" metrics &&
	grep -qx "omnistat_network_rx_bytes{device_class=\"infiniband\",interface=\"mlx5_0:1\"} 9122335704" metrics &&
	! grep "cpu=\"2\"" metrics
'

test_expect_success 'stop' '
	stop_tallyd
'

test_done
