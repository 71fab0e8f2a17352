#!/bin/sh
test_description='shutdown with the graphite and influxdb outputs'"'"'
servers down (nothing listens on their ports): tallyd exits after
global.shutdown_timeout, not later (the graphite output used to wait 5 s
more after it), says that the deadline was reached, and reports each
output'"'"'s loss exactly once, with the count of the records it never
delivered (they used to be reported twice, once in batches). The exit is
waited for with a generous bound and its time reported, not asserted'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

# produced - records the counter made, as the capture output got them
produced() {
	grep -c "^gauge t2405" cap.txt
}

test_expect_success 'tallyd with graphite and influxdb, their servers down' '
	down=$(free_port) &&
	cat >down.conf <<-EOF &&
	global = { log_level = "info"; shutdown_timeout = 2.0; };
	inputs = { c = { plugin = "counter"; interval = 0.1; name = "t2405";
			 count = 3; }; };
	outputs = {
	  g = { plugin = "graphite"; server = "127.0.0.1:$down";
		backoff_max = "0.5s"; };
	  db = { plugin = "influxdb"; url = "http://127.0.0.1:$down";
		 database = "x"; batch_size = 10; flush_interval = "0.2s"; };
	  cap = { plugin = "capture"; path = "cap.txt"; };
	};
	pipelines = { p = { from = ["c"]; to = ["g", "db", "cap"]; }; };
	EOF
	start_tallyd down.conf &&
	wait_for "test \$(produced) -ge 30" &&
	wait_for "grep -q \"influxdb\\[db\\]: .*connection failed\" tallyd.log"
'

test_expect_success 'SIGTERM: it exits once the deadline is reached' '
	start=$(date +%s.%N) &&
	kill -TERM $TALLYD_PID &&
	n=600 &&
	while kill -0 $TALLYD_PID 2>/dev/null && test $n -gt 0; do
		sleep 0.1; n=$((n - 1))
	done &&
	! kill -0 $TALLYD_PID 2>/dev/null &&
	took=$(awk "BEGIN { printf \"%.1f\", $(date +%s.%N) - $start }") &&
	stop_tallyd &&
	tally_diag "exit $took s after SIGTERM (shutdown_timeout 2 s)" &&
	grep "shutdown deadline reached (shutdown_timeout 2 s)" tallyd.log
'

test_expect_success 'each output reports its loss once, all it produced' '
	total=$(produced) &&
	grep "graphite\[g\]: .*not \(delivered\|sent\)" tallyd.log >g.loss &&
	test $(wc -l <g.loss) = 1 &&
	grep "graphite\[g\]: shutdown deadline reached (shutdown_timeout 2 s): $total records not delivered (" g.loss &&
	grep "influxdb\[db\]: .*not delivered" tallyd.log >db.loss &&
	test $(wc -l <db.loss) = 1 &&
	grep "influxdb\[db\]: shutdown deadline reached (shutdown_timeout 2 s): $total records not delivered (" db.loss &&
	tally_diag "$total records produced, each output reported:" &&
	tally_diag <g.loss && tally_diag <db.loss
'

test_done
