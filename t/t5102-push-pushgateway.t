#!/bin/sh
test_description='prometheus_push output into the real Pushgateway (Debian
prometheus-pushgateway): the page PUT to /metrics/job/<job>/instance/<host>,
every value read back exactly from the Pushgateway'"'"'s /metrics with the
job, instance and global labels; statsd-style deltas accumulated as the
prometheus output does; the last state pushed at shutdown'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"
. "$SHARNESS_TEST_SRCDIR/t51-lib.sh"

require_cmd curl
require_cmd "$PUSHGATEWAY" "prometheus-pushgateway not installed (Debian package prometheus-pushgateway)"

HOST=$(hostname)
READS=20

# rejected_pg OP N: the self input has shown pg's rejected drops (the
# self input lags the log line); leaves them in self.prom
rejected_pg() {
	curl -sf "http://127.0.0.1:$prom/metrics" >self.prom &&
	test "$(self_count self.prom tally_dropped_total pg \
		"reason=\"rejected\"")" "$@"
}

test_expect_success 'start the Pushgateway' '
	pg_start
'

# conf FILE INTERVAL: a cumulative counter (3 series) and counter deltas
# of 2.5 (one series), READS reads each, pushed every INTERVAL
conf() {
	cat >"$1" <<-EOF
	global = { interval = 0.1; log_level = "info";
	           labels = { cluster = "frontier"; }; };
	inputs = { c = { plugin = "counter"; count = 3; max_reads = $READS;
	                 name = "pg_reads"; type = "counter"; };
	           d = { plugin = "counter"; count = 1; max_reads = $READS;
	                 name = "pg_delta"; type = "counter"; form = "delta";
	                 step = 2.5; }; };
	outputs = { pg = { plugin = "prometheus_push";
	                   url = "http://127.0.0.1:$pgport"; job = "train";
	                   interval = $2; expire = "1h"; };
	            cap = { plugin = "capture"; path = "cap.txt"; }; };
	pipelines = { p = { from = ["c", "d"]; to = ["pg", "cap"]; }; };
	EOF
}

# pg_value SERIES: the value of the Pushgateway's line for SERIES, its
# labels in the Pushgateway's order (sorted), "none" when absent
pg_value() {
	curl -sf "http://127.0.0.1:$pgport/metrics" >pg.prom &&
	awk -v s="$1" '$1 == s { print $2; found = 1 }
		END { if (!found) print "none" }' pg.prom
}

# labels I: the labels of series i=I as the Pushgateway shows them
labels() {
	echo "{cluster=\"frontier\",i=\"$1\",instance=\"$HOST\",job=\"train\"}"
}

test_expect_success 'every series arrives with its exact value and labels' '
	conf push.conf 0.2 &&
	start_tallyd push.conf &&
	wait_for "test \$(grep -c \"^delta counter pg_delta\" cap.txt) -eq $READS" 30 &&
	wait_for "test \"\$(pg_value pg_delta_total\$(labels 0))\" = 50" 30 &&
	for i in 0 1 2; do
		wait_for "test \"\$(pg_value pg_reads_total\$(labels $i))\" = $READS" 30 ||
		return 1
	done &&
	grep "^# TYPE pg_reads_total counter" pg.prom &&
	grep "^push_time_seconds{instance=\"$HOST\",job=\"train\"}" pg.prom &&
	stop_tallyd &&
	! grep -i "refused\|not pushed" tallyd.log
'

test_expect_success 'the last state goes out at shutdown' '
	curl -sf -X DELETE "http://127.0.0.1:$pgport/metrics/job/train/instance/$HOST" &&
	test "$(pg_value pg_delta_total$(labels 0))" = none &&
	conf slow.conf 3600 &&
	start_tallyd slow.conf &&
	wait_for "test \$(grep -c \"^delta counter pg_delta\" cap.txt) -eq $READS" 30 &&
	stop_tallyd &&
	test "$(pg_value pg_delta_total$(labels 0))" = 50 &&
	! grep -i "not pushed" tallyd.log
'

# The Pushgateway refuses a page whose metric has another type in another
# group (the counter pg_reads_total of group train above).
test_expect_success 'a page the Pushgateway refuses: logged with its message, counted' '
	prom=$(free_port) &&
	cat >bad.conf <<-EOF &&
	global = { interval = 0.1; log_level = "info"; };
	inputs = { c = { plugin = "counter"; count = 1; max_reads = 2;
	                 name = "pg_reads_total"; type = "gauge"; };
	           self = { plugin = "self"; interval = 0.2; }; };
	outputs = { pg = { plugin = "prometheus_push";
	                   url = "http://127.0.0.1:$pgport"; job = "bad";
	                   interval = 0.2; expire = "1h"; };
	            prom = { plugin = "prometheus"; listen = "127.0.0.1:$prom"; }; };
	pipelines = { p = { from = ["c"]; to = ["pg"]; };
	              s = { from = ["self"]; to = ["prom"]; }; };
	EOF
	start_tallyd bad.conf &&
	wait_for "grep -q \"write refused (HTTP 400): pushed metrics are invalid or inconsistent\" tallyd.log" 30 &&
	wait_for "rejected_pg -ge 1" &&
	test "$(self_count self.prom tally_events_total pg "event=\"http_retries\"")" -eq 0 &&
	stop_tallyd
'

test_done
