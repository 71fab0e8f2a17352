#!/bin/sh
test_description='pipelines: fan-out, per-pipeline filter state, a stalled output'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

test_expect_success 'one input fans out to a plain and a filtered pipeline' '
	cat >fan.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; count = 2; }; };
	filters = { f = { plugin = "testfilter"; mode = "rewrite"; }; };
	outputs = {
		plain = { plugin = "capture"; path = "plain.out"; };
		rw = { plugin = "capture"; path = "rw.out"; };
	};
	pipelines = {
		p1 = { from = ["a"]; to = ["plain"]; };
		p2 = { from = ["a"]; through = ["f"]; to = ["rw"]; };
	};
	EOF
	tallyd --once -c fan.conf &&
	cat >plain.expect <<-\EOF &&
	gauge test_counter_value{i="0"} 1
	gauge test_counter_value{i="1"} 1
	EOF
	cat >rw.expect <<-\EOF &&
	gauge rw_test_counter_value{i="0",seq="1"} 1
	gauge rw_test_counter_value{i="1",seq="1"} 1
	EOF
	test_cmp plain.expect plain.out &&
	test_cmp rw.expect rw.out
'

test_expect_success 'each pipeline has its own instance of a filter' '
	cat >own.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; }; };
	filters = { f = { plugin = "testfilter"; mode = "rewrite"; }; };
	outputs = { o = { plugin = "capture"; path = "own.out"; }; };
	pipelines = {
		p1 = { from = ["a"]; through = ["f"]; to = ["o"]; };
		p2 = { from = ["a"]; through = ["f"]; to = ["o"]; };
	};
	EOF
	tallyd --once -c own.conf &&
	cat >own.expect <<-\EOF &&
	gauge rw_test_counter_value{i="0",seq="1"} 1
	gauge rw_test_counter_value{i="0",seq="1"} 1
	EOF
	test_cmp own.expect own.out
'

test_expect_success 'two filters in order, and a dropping filter' '
	cat >chain.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; }; };
	filters = {
		rw = { plugin = "testfilter"; mode = "rewrite"; };
		drop = { plugin = "testfilter"; mode = "drop"; };
	};
	outputs = {
		twice = { plugin = "capture"; path = "twice.out"; };
		none = { plugin = "capture"; path = "none.out"; };
	};
	pipelines = {
		p1 = { from = ["a"]; through = ["rw", "rw"]; to = ["twice"]; };
		p2 = { from = ["a"]; through = ["rw", "drop"]; to = ["none"]; };
	};
	EOF
	test_must_fail tallyd --check-config -c chain.conf 2>err &&
	grep "pipelines.p1: .rw. named twice in through" err
'

test_expect_success 'filters in order, a dropping filter passes nothing' '
	cat >chain.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; }; };
	filters = {
		rw = { plugin = "testfilter"; mode = "rewrite"; };
		rw2 = { plugin = "testfilter"; mode = "rewrite"; };
		drop = { plugin = "testfilter"; mode = "drop"; };
	};
	outputs = {
		twice = { plugin = "capture"; path = "twice.out"; };
		none = { plugin = "capture"; path = "none.out"; };
	};
	pipelines = {
		p1 = { from = ["a"]; through = ["rw", "rw2"]; to = ["twice"]; };
		p2 = { from = ["a"]; through = ["rw", "drop"]; to = ["none"]; };
	};
	EOF
	tallyd --once -c chain.conf &&
	echo "gauge rw_rw_test_counter_value{i=\"0\",seq=\"1\"} 1" >twice.expect &&
	test_cmp twice.expect twice.out &&
	test_must_be_empty none.out
'

test_expect_success 'a filter-made batch keeps the name of its input' '
	cat >src.conf <<-EOF &&
	inputs = { node7 = { plugin = "counter"; }; };
	filters = { rw = { plugin = "testfilter"; mode = "rewrite"; }; };
	outputs = { o = { plugin = "capture"; path = "src.out"; source = true; }; };
	pipelines = { p = { from = ["node7"]; through = ["rw"]; to = ["o"]; }; };
	EOF
	tallyd --once -c src.conf &&
	echo "node7: gauge rw_test_counter_value{i=\"0\",seq=\"1\"} 1" >src.expect &&
	test_cmp src.expect src.out
'

test_expect_success 'a stalled output delays neither the input nor the other output' '
	cat >stall.conf <<-EOF &&
	global = { shutdown_timeout = 0.5; };
	inputs = {
		a = { plugin = "counter"; interval = 0.05; };
		self = { plugin = "self"; interval = 0.05; };
	};
	outputs = {
		stuck = { plugin = "capture"; path = "stuck.out"; stall = true;
			  queue_size = 4; };
		ok = { plugin = "capture"; path = "ok.out"; };
		health = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		p = { from = ["a"]; to = ["stuck", "ok"]; };
		s = { from = ["self"]; to = ["health"]; };
	};
	EOF
	start_tallyd stall.conf &&
	wait_for "test \$(wc -l <ok.out) -ge 20" &&
	wait_for "grep -q \"tally_dropped_total{instance=\\\"stuck\\\",kind=\\\"output\\\",plugin=\\\"capture\\\",reason=\\\"queue_full\\\"}\" self.out" &&
	stop_tallyd &&
	test_must_be_empty stuck.out &&
	n=$(wc -l <ok.out) &&
	last=$(tail -n1 ok.out | sed "s/.* //") &&
	test "$last" -eq "$n" &&
	grep "capture\[stuck\]: queue full (4 batches): dropping the oldest" tallyd.log &&
	grep "capture\[stuck\]: shutdown deadline reached (shutdown_timeout 0.5 s): 4 records not delivered (4 queued in 4 batches, 0 held by the output)" tallyd.log
'

test_expect_success 'SIGTERM drains queued batches into a live output' '
	cat >drain.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; interval = 0.05; count = 3; }; };
	outputs = { o = { plugin = "capture"; path = "drain.out"; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	start_tallyd drain.conf &&
	wait_for "test -s drain.out" &&
	stop_tallyd &&
	n=$(wc -l <drain.out) &&
	test $((n % 3)) -eq 0 &&
	grep "stopped" tallyd.log
'

# many_conf N INTERVAL - N counter inputs (one gauge each) -> capture
# many.out, default queue_size (1024 batches)
many_conf() {
	"$PYTHON3" - "$1" "$2" >many.conf <<-\EOF
	import sys
	n, iv = int(sys.argv[1]), sys.argv[2]
	print("global = { interval = %s; log_level = \"info\"; };" % iv)
	print("inputs = {")
	for i in range(n):
	    print("  c%d = { plugin = \"counter\"; name = \"m%d\"; };" % (i, i))
	print("};")
	print("outputs = { x = { plugin = \"capture\"; path = \"many.out\"; }; };")
	print("pipelines = { p = { from = [%s]; to = [\"x\"]; }; };" %
	      ", ".join("\"c%d\"" % i for i in range(n)))
	EOF
}

# 1500 inputs tick on the same mark, each a batch for one output whose
# queue holds 1024: deliveries must run between the ticks (and, with
# --once, as the reads go), not overflow the queue.
test_expect_success 'more inputs on one mark than the queue holds: no drop (--once)' '
	many_conf 1500 1 &&
	tallyd --once -c many.conf 2>err &&
	! grep "queue full" err &&
	test $(grep -c "^gauge m[0-9]*{i=.0.} 1$" many.out) = 1500
'

test_expect_success 'more inputs on one mark than the queue holds: no drop (daemon)' '
	many_conf 1500 0.5 &&
	start_tallyd many.conf &&
	wait_for "test \$(grep -c \" 2\$\" many.out) = 1500" &&
	stop_tallyd &&
	! grep "queue full" tallyd.log &&
	test $(grep -c "^gauge m[0-9]*{i=.0.} 1$" many.out) = 1500
'

test_done
