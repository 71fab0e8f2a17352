#!/bin/sh
#
# t1009-node-exporter.t - the procfs input's host groups on this machine's
# /proc, against Debian's prometheus-node-exporter on the same machine:
# the same series (names and labels) for the filesystem, diskstats,
# vmstat, netstat, sockstat, uname, time and os collectors, and values
# between node_exporter's readings before and after tallyd's
# (t/t10-compare.py); the root filesystem's size as df(1) gives it.
#
# node_exporter runs with only those collectors, on a free loopback port,
# and with upstream 1.5's mount-point exclude (Debian's build changes the
# default; tally's is upstream's).

test_description='procfs host groups against node_exporter on the live system'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

NE=$(command -v prometheus-node-exporter || command -v node_exporter)
test -n "$NE" || require_cmd prometheus-node-exporter \
	'prometheus-node-exporter not installed (Debian package)'
require_cmd curl

PREFIXES=node_filesystem_,node_disk_,node_vmstat_,node_netstat_,node_sockstat_
PREFIXES=$PREFIXES,node_uname_,node_time_,node_os_

test_expect_success 'start node_exporter and tallyd' '
	neport=$(free_port) &&
	{ "$NE" --web.listen-address=127.0.0.1:$neport \
		--collector.disable-defaults --collector.filesystem \
		--collector.diskstats --collector.vmstat --collector.netstat \
		--collector.sockstat --collector.uname --collector.time \
		--collector.os \
		"--collector.filesystem.mount-points-exclude=^/(dev|proc|run/credentials/.+|sys|var/lib/docker/.+|var/lib/containers/storage/.+)(\$|/)" \
		>ne.log 2>&1 & } &&
	echo $! >ne.pid &&
	port=$(free_port) &&
	cat >live.conf <<-CONF &&
	global = { interval = 0.5; log_level = "info"; };
	inputs = { host = { plugin = "procfs"; }; };
	outputs = { prom = { plugin = "prometheus";
			     listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["host"]; to = ["prom"]; }; };
	CONF
	start_tallyd --wait "port_listening $port" live.conf &&
	wait_for "curl -sf http://127.0.0.1:$neport/metrics >ne1 &&
		grep -q ^node_uname_info ne1" &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >tally &&
		grep -q ^node_filesystem_size_bytes tally"
'

test_expect_success 'same series as node_exporter, values between its two readings' '
	for try in 1 2 3 4 5; do
		curl -sf http://127.0.0.1:$neport/metrics >ne1 &&
		t1=$(sed -n "s/^node_time_seconds //p" ne1) &&
		# a page tallyd read after ne1 (it reads once an interval)
		wait_for "curl -sf http://127.0.0.1:$port/metrics >tally &&
			awk -v t=$t1 \"/^node_time_seconds / { exit !(\\\$2 >= t) }\" tally" &&
		curl -sf http://127.0.0.1:$neport/metrics >ne2 &&
		"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t10-compare.py" "$PREFIXES" \
			ne1 tally ne2 >compare.out && break
	done &&
	cat compare.out &&
	grep -q "[1-9][0-9]* series compared, 0 differences" compare.out
'

test_expect_success 'HELP texts as node_exporter' '
	grep -E "^# HELP ($(echo $PREFIXES | sed "s/,/|/g"))" ne1 | sort -u >help.ne &&
	grep -E "^# HELP ($(echo $PREFIXES | sed "s/,/|/g"))" tally | sort -u >help.tally &&
	test_cmp help.ne help.tally
'

test_expect_success 'the root filesystem as df sees it' '
	df -B1 --output=size / | tail -1 | tr -d " " >df.size &&
	grep "^node_filesystem_size_bytes{.*mountpoint=\"/\"}" tally |
		awk "{ printf \"%.0f\n\", \$NF }" >tally.size &&
	test_cmp df.size tally.size &&
	df -B1 --output=avail / | tail -1 | tr -d " " >df.avail &&
	grep "^node_filesystem_avail_bytes{.*mountpoint=\"/\"}" tally |
		awk -v df=$(cat df.avail) "{ d = \$NF - df; if (d < 0) d = -d;
			exit !(d <= 0.01 * df + 1048576) }"
'

test_expect_success 'no warning on a healthy system' '
	stop_tallyd &&
	kill $(cat ne.pid) &&
	! grep -E "warning|error" tallyd.log
'

test_done
