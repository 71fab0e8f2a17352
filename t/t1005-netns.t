#!/bin/sh
#
# t1005-netns.t - netdev on a real kernel: veth devices in a private
# network namespace (and a private sysfs mount) that the test creates,
# changes and deletes while tallyd runs inside it
#
# What fixture trees cannot show: sysfs attribute files of a deleted device
# fail with ENODEV (a file in a fixture stays readable after rm), and some
# attributes fail with EINVAL in some states (carrier of a device that is
# administratively down). Frames are sent with an AF_PACKET socket, with
# IPv6 off in the namespace, so the counters are exact.

test_description='netdev on veth devices in a private network namespace'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/hostinputs.sh"

if test "$(id -u)" != 0; then
	skip_all='needs root (network namespace, veth devices)'
	test_done
fi
require_cmd unshare 'unshare (util-linux) not installed'
require_cmd nsenter 'nsenter (util-linux) not installed'
require_cmd ip 'ip (iproute2) not installed'
if ! unshare -n -m sh -c 'ip link add v0 type veth peer name v1' \
	>/dev/null 2>&1; then
	skip_all='cannot create veth devices in a new network namespace here'
	test_done
fi

# in_ns CMD... - run CMD in tallyd's network and mount namespaces
in_ns() {
	nsenter -t "$TALLYD_PID" -n -m "$@"
}

# send N - send N 60-byte frames out of v0 (ethertype 0x88b5, local use)
send() {
	in_ns "$PYTHON3" -c "
import socket
s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
s.bind(('v0', 0))
for _ in range($1):
    s.send(b'\xff' * 6 + b'\x02' * 6 + b'\x88\xb5' + bytes(46))
"
}

test_expect_success 'start tallyd in a private network namespace' '
	cat >tallyd-ns <<-\SH &&
	#!/bin/sh
	# tallyd in a new network namespace with its own sysfs, IPv6 off
	exec unshare -n -m sh -c "mount -t sysfs sysfs /sys &&
		{ sysctl -qw net.ipv6.conf.default.disable_ipv6=1; :; } &&
		exec \"\$0\" \"\$@\"" "$REAL_TALLYD" "$@"
	SH
	chmod +x tallyd-ns &&
	cat >ns.conf <<-CONF &&
	global = { interval = 0.5; log_level = "info"; };
	inputs = { net = { plugin = "netdev"; include = ["^v0$", "^lo$"]; }; };
	outputs = { cap = { plugin = "capture"; path = "out.txt";
			    source = true; timestamps = true; }; };
	pipelines = { p = { from = ["net"]; to = ["cap"]; }; };
	CONF
	REAL_TALLYD=$TALLYD TALLYD=$PWD/tallyd-ns &&
	export REAL_TALLYD &&
	start_tallyd ns.conf
'

test_expect_success 'a new veth device: exact counters and attributes' '
	in_ns ip link add v0 type veth peer name v1 &&
	in_ns ip link set v0 up &&
	in_ns ip link set v1 up &&
	send 5 &&
	wait_for "has net \"counter node_network_transmit_bytes_total{device=\\\"v0\\\"} 300\"" &&
	tick net >t1 &&
	grep -qxF "counter node_network_transmit_packets_total{device=\"v0\"} 5" t1 &&
	grep -qxF "gauge node_network_up{device=\"v0\"} 1" t1 &&
	grep -qxF "gauge node_network_carrier{device=\"v0\"} 1" t1 &&
	grep -qxF "gauge node_network_mtu_bytes{device=\"v0\"} 1500" t1 &&
	grep -qxF "gauge node_network_speed_bytes{device=\"v0\"} 1250000000" t1 &&
	! grep "device=\"v1\"" t1
'

test_expect_success 'administratively down: carrier has no value (EINVAL), up is 0' '
	in_ns ip link set v0 down &&
	wait_for "has net \"gauge node_network_up{device=\\\"v0\\\"} 0\"" &&
	tick net >t2 &&
	grep "^info node_network_info{.*adminstate=\"down\".*device=\"v0\"" t2 &&
	! grep node_network_carrier t2 &&
	grep -qxF "counter node_network_transmit_bytes_total{device=\"v0\"} 300" t2
'

# ticks - how many ticks of net out.txt holds
ticks() {
	awk 'index($0, "net: ") == 1 && $NF != t { n++; t = $NF }
		END { print n + 0 }' out.txt
}

command -v strace >/dev/null && test_set_prereq STRACE
test_expect_success STRACE 'a read that had no value is not repeated every tick' '
	strace -f -y -Z -e trace=pread64 -o preads -p $TALLYD_PID \
		2>strace.err &
	sp=$! &&
	wait_for "grep -q attached strace.err" &&
	n0=$(ticks) &&
	wait_for "test \$(ticks) -ge $((n0 + 5))" &&
	kill $sp && wait $sp;
	grep EINVAL preads | sed -n "s/.*pread64([0-9]*<\([^>]*\)>.*/\1/p" |
		sort | uniq -c | sort -rn >failed &&
	tally_diag "reads that failed (EINVAL) in 5 ticks: $(cat failed)" &&
	! awk "\$1 > 1" failed | grep .
'

test_expect_success 'up again: carrier and speed are read again' '
	in_ns ip link set v0 up &&
	wait_for "has net \"gauge node_network_carrier{device=\\\"v0\\\"} 1\"" &&
	wait_for "has net \"gauge node_network_speed_bytes{device=\\\"v0\\\"} 1250000000\""
'

test_expect_success 'deleted and re-created at once: new counters, attributes reopened' '
	in_ns sh -c "ip link del v0 &&
		ip link add v0 mtu 9000 type veth peer name v1 &&
		ip link set v0 up && ip link set v1 up" &&
	send 2 &&
	wait_for "has net \"counter node_network_transmit_bytes_total{device=\\\"v0\\\"} 120\"" &&
	wait_for "has net \"gauge node_network_mtu_bytes{device=\\\"v0\\\"} 9000\"" &&
	tick net >t3 &&
	grep -qxF "counter node_network_transmit_packets_total{device=\"v0\"} 2" t3 &&
	grep -qxF "gauge node_network_up{device=\"v0\"} 1" t3
'

test_expect_success 'deleted: its series stop, lo goes on' '
	in_ns ip link del v0 &&
	wait_for "tick net | grep -q device=\\\"lo\\\" && ! tick net | grep -q v0"
'

test_expect_success 'no warning, and a clean stop' '
	stop_tallyd &&
	! grep -E "warning|error" tallyd.log
'

test_done
