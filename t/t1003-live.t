#!/bin/sh
#
# t1003-live.t - procfs and netdev on this machine's own /proc and /sys,
# checked against the same files read by the test around the run
#
# Values that move (CPU time, counters, PSI totals) must lie between the
# test's reading before the run and its reading after; values that do not
# (MemTotal, boot time, MTU, the CPU and interface sets) must be equal.

test_description='procfs and netdev on the live /proc and /sys'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

test -r /proc/stat && test -r /proc/net/dev && test_set_prereq PROC
test -r /proc/pressure/cpu && test_set_prereq PSI

# value NAME [LABELS] - the value of one captured series ("" if absent)
value() {
	awk -v s="$1$2" '$2 == s { print $3 }' out.txt
}

# between LO X HI [SCALE] - LO <= X*SCALE <= HI, allowing half a unit of
# rounding for values that were divided (CPU ticks, microseconds)
between() {
	awk -v lo="$1" -v x="$2" -v hi="$3" -v k="${4:-1}" \
		'BEGIN { v = x * k; exit !(x != "" && v >= lo - 0.5 && v <= hi + 0.5) }'
}

test_expect_success PROC 'one tick of procfs and netdev on the live system' '
	cat >live.conf <<-CONF &&
	global = { log_level = "info"; };
	inputs = {
		host = { plugin = "procfs"; };
		net = { plugin = "netdev"; };
	};
	outputs = { cap = { plugin = "capture"; path = "out.txt"; }; };
	pipelines = { p = { from = ["host", "net"]; to = ["cap"]; }; };
	CONF
	cp /proc/stat stat.before &&
	cp /proc/net/dev dev.before &&
	cp /proc/loadavg loadavg.before &&
	{ cat /proc/pressure/cpu >psi.before 2>/dev/null || :; } &&
	timeout 20 "$TALLYD" --once -c live.conf >log.txt 2>&1 &&
	cp /proc/stat stat.after &&
	cp /proc/net/dev dev.after &&
	cp /proc/loadavg loadavg.after &&
	{ cat /proc/pressure/cpu >psi.after 2>/dev/null || :; } &&
	test -s out.txt
'

test_expect_success PROC 'MemTotal equals /proc/meminfo in bytes' '
	kb=$(awk "/^MemTotal:/ { print \$2 }" /proc/meminfo) &&
	test "$(value node_memory_MemTotal_bytes)" = $((kb * 1024))
'

test_expect_success PROC 'one series per mode for exactly the CPUs of /proc/stat' '
	awk "/^cpu[0-9]/ { sub(\"cpu\", \"\", \$1); print \$1 }" stat.after |
		sort -n >cpus.expected &&
	sed -n "s/^counter node_cpu_seconds_total{cpu=\"\([0-9]*\)\",mode=\"user\"}.*/\1/p" \
		out.txt | sort -n >cpus.got &&
	test_cmp cpus.expected cpus.got &&
	test $(grep -c "^counter node_cpu_seconds_total{" out.txt) = \
		$(( $(wc -l <cpus.expected) * 8 ))
'

test_expect_success PROC 'CPU times lie between the readings before and after' '
	for cpu in $(cat cpus.got); do
		lo=$(awk -v c=cpu$cpu "\$1 == c { print \$2 }" stat.before) &&
		hi=$(awk -v c=cpu$cpu "\$1 == c { print \$2 }" stat.after) &&
		got=$(value node_cpu_seconds_total "{cpu=\"$cpu\",mode=\"user\"}") &&
		between "$lo" "$got" "$hi" "$(getconf CLK_TCK)" || return 1
	done
'

test_expect_success PROC 'boot time and context switches agree with /proc/stat' '
	test "$(value node_boot_time_seconds)" = \
		"$(awk "/^btime/ { print \$2 }" stat.after)" &&
	between "$(awk "/^ctxt/ { print \$2 }" stat.before)" \
		"$(value node_context_switches_total)" \
		"$(awk "/^ctxt/ { print \$2 }" stat.after)"
'

test_expect_success PROC 'load averages are one of the two readings' '
	got=$(value node_load1) &&
	for f in loadavg.before loadavg.after; do
		awk -v g="$got" "{ exit !(\$1 + 0 == g + 0) }" $f && return 0
	done &&
	false
'

test_expect_success PROC,PSI 'cpu pressure lies between the two readings' '
	lo=$(sed -n "s/^some.*total=//p" psi.before) &&
	hi=$(sed -n "s/^some.*total=//p" psi.after) &&
	between "$lo" "$(value node_pressure_cpu_waiting_seconds_total)" "$hi" 1000000
'

test_expect_success PROC 'exactly the interfaces of /proc/net/dev' '
	awk -F: "NR > 2 { sub(/^ */, \"\", \$1); print \$1 }" dev.after |
		sort >ifs.expected &&
	sed -n "s/^counter node_network_receive_bytes_total{device=\"\(.*\)\"}.*/\1/p" \
		out.txt | sort >ifs.got &&
	test_cmp ifs.expected ifs.got
'

test_expect_success PROC 'lo counters lie between the readings before and after' '
	lo=$(awk -F"[: ]+" "\$2 == \"lo\" { print \$3 }" dev.before) &&
	hi=$(awk -F"[: ]+" "\$2 == \"lo\" { print \$3 }" dev.after) &&
	between "$lo" "$(value node_network_receive_bytes_total "{device=\"lo\"}")" "$hi" &&
	lo=$(awk -F"[: ]+" "\$2 == \"lo\" { print \$11 }" dev.before) &&
	hi=$(awk -F"[: ]+" "\$2 == \"lo\" { print \$11 }" dev.after) &&
	between "$lo" "$(value node_network_transmit_bytes_total "{device=\"lo\"}")" "$hi"
'

test_expect_success PROC 'lo MTU equals /sys/class/net/lo/mtu' '
	test "$(value node_network_mtu_bytes "{device=\"lo\"}")" = \
		"$(cat /sys/class/net/lo/mtu)"
'

test_expect_success PROC 'no warning on a healthy system' '
	! grep -E "warning|error" log.txt
'

test_done
