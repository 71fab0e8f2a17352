#!/bin/sh
test_description='remote_write output into the real Prometheus (Debian 2.42,
--web.enable-remote-write-receiver): every sample read back exactly through
the query API, with the instance and global labels; Prometheus stopped for
10 s mid-stream and started again: every sample produced meanwhile arrives;
with a queue bound smaller than the outage, stored + dropped = produced
exactly; a 400 is not retried, its samples counted'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"
. "$SHARNESS_TEST_SRCDIR/t51-lib.sh"

require_cmd curl
require_cmd "$PROMETHEUS" "prometheus not installed (Debian package prometheus)"
rw_require_plugin

# 10 series, a read every 0.1 s, 150 reads: 1500 samples in about 15 s
SERIES=10
READS=150
PRODUCED=$((SERIES * READS))
HOST=$(hostname)

# conf FILE NAME [OUTPUT OPTIONS]: counter NAME -> remote_write, self ->
# prometheus on $prom
conf() {
	cat >"$1" <<-EOF
	global = { interval = 0.1; log_level = "info";
	           labels = { cluster = "frontier"; }; };
	inputs = { c = { plugin = "counter"; count = $SERIES;
	                 max_reads = $READS; name = "$2"; };
	           self = { plugin = "self"; interval = 0.2; }; };
	outputs = { rw = { plugin = "remote_write";
	                   url = "http://127.0.0.1:$pport/api/v1/write";
	                   batch_size = 50; flush_interval = "0.1s";
	                   backoff_max = "1s"; $3 };
	            prom = { plugin = "prometheus"; listen = "127.0.0.1:$prom"; }; };
	pipelines = { p = { from = ["c"]; to = ["rw"]; };
	              s = { from = ["self"]; to = ["prom"]; }; };
	EOF
}

# check_values NAME: every series of NAME holds 1..READS, in order, once
check_values() {
	rw_series_values "$1" >"$1.values" &&
	"$PYTHON3" - "$1" $SERIES $READS "$HOST" <<-\EOF
	import json, sys
	name, n, reads, host = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
	lines = open(name + ".values").read().splitlines()
	assert len(lines) == n, (len(lines), lines[:2])
	seen = set()
	for line in lines:
	    labels, values = line.split("} ", 1)
	    labels = json.loads(labels + "}")
	    assert labels.pop("__name__") == name, labels
	    assert labels.pop("instance") == host, labels
	    assert labels.pop("cluster") == "frontier", labels
	    seen.add(labels.pop("i"))
	    assert not labels, labels
	    want = " ".join(str(k) for k in range(1, reads + 1))
	    assert values == want, values[:200]
	assert seen == {str(i) for i in range(n)}, seen
	EOF
}

test_expect_success 'start Prometheus with its remote write receiver' '
	rw_prom_start &&
	prom=$(free_port)
'

test_expect_success 'every sample arrives, exact, with instance and global labels' '
	conf plain.conf rw_plain &&
	start_tallyd plain.conf &&
	wait_for "test \$(rw_stored rw_plain) -eq $PRODUCED" 60 &&
	check_values rw_plain &&
	test $(rw_dropped rw queue_full) -eq 0 &&
	test $(self_count self.prom tally_events_total rw "event=\"samples_written\"") -eq $PRODUCED &&
	stop_tallyd
'

# A 10 s outage timed on the clock (what the test is about), not a wait
# for a condition.
outage() {
	rw_prom_stop &&
	tally_o_end=$(( $(date +%s) + 10 )) &&
	while test $(date +%s) -lt $tally_o_end; do sleep 0.2; done &&
	rw_prom_start
}

test_expect_success 'Prometheus stopped 10 s mid-stream: every sample arrives' '
	conf restart.conf rw_restart &&
	start_tallyd restart.conf &&
	wait_for "test \$(rw_stored rw_restart) -ge 200" 30 &&
	outage &&
	wait_for "test \$(rw_stored rw_restart) -eq $PRODUCED" 90 &&
	check_values rw_restart &&
	test $(rw_dropped rw queue_full) -eq 0 &&
	curl -sf "http://127.0.0.1:$prom/metrics" >self.prom &&
	failed=$(self_count self.prom tally_events_total rw "event=\"http_failures_connect\"") &&
	tally_diag "attempts that failed while Prometheus was down: $failed" &&
	test "$failed" -ge 1 &&
	stop_tallyd &&
	! grep undelivered tallyd.log
'

test_expect_success 'a queue bound smaller than the outage: drops counted exactly' '
	conf small.conf rw_small "queue_records = 50;" &&
	start_tallyd small.conf &&
	wait_for "test \$(rw_stored rw_small) -ge 100" 30 &&
	outage &&
	wait_for "test \$(( \$(rw_stored rw_small) + \$(rw_dropped rw queue_full) )) -eq $PRODUCED" 90 &&
	s=$(rw_stored rw_small) && d=$(rw_dropped rw queue_full) &&
	tally_diag "queue_records = 50, 10 s outage: $s stored, $d dropped" \
		"(queue_full), $PRODUCED produced" &&
	test $d -gt 0 && test $s -gt 0 &&
	stop_tallyd
'

test_expect_success 'a sample Prometheus refuses (400): logged, counted, not retried' '
	cat >bad.conf <<-EOF &&
	global = { interval = 0.1; log_level = "info"; };
	inputs = { c = { plugin = "counter"; count = 2; max_reads = 3;
	                 name = "rw_old"; ts = 1000000000000000000; };
	           self = { plugin = "self"; interval = 0.2; }; };
	outputs = { rw = { plugin = "remote_write";
	                   url = "http://127.0.0.1:$pport/api/v1/write";
	                   flush_interval = "0.1s"; };
	            prom = { plugin = "prometheus"; listen = "127.0.0.1:$prom"; }; };
	pipelines = { p = { from = ["c"]; to = ["rw"]; };
	              s = { from = ["self"]; to = ["prom"]; }; };
	EOF
	start_tallyd bad.conf &&
	wait_for "test \$(rw_dropped rw rejected) -eq 6" 30 &&
	grep "write refused (HTTP 400): .*out of bounds" tallyd.log &&
	curl -sf "http://127.0.0.1:$prom/metrics" >self.prom &&
	test $(self_count self.prom tally_events_total rw "event=\"http_retries\"") -eq 0 &&
	test $(rw_stored rw_old) -eq 0 &&
	stop_tallyd
'

test_done
