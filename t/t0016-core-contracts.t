#!/bin/sh
#
# t0016-core-contracts.t - what the core does for every plugin: output
# queues bounded in records as well as batches, drops counted per key and
# exported by self, static labels (global.labels, an output's labels, the
# host label of push outputs)

test_description='core contracts: queue bounds, keyed drops, static labels'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

# selfconf NAME OUTPUTS PIPELINES - a config with a self input every 0.05 s
# into capture self.out, plus the given outputs and pipelines
test_expect_success 'a stalled output keeps at most queue_records records' '
	cat >qr.conf <<-EOF &&
	global = { shutdown_timeout = 0.5; };
	inputs = {
		a = { plugin = "counter"; interval = 0.05; count = 2; };
		self = { plugin = "self"; interval = 0.05; };
	};
	outputs = {
		stuck = { plugin = "capture"; path = "stuck.out"; stall = true;
			  queue_records = 5; };
		health = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		p = { from = ["a"]; to = ["stuck"]; };
		s = { from = ["self"]; to = ["health"]; };
	};
	EOF
	start_tallyd qr.conf &&
	wait_for "grep -q \"tally_dropped_total{instance=.stuck.,kind=.output.,plugin=.capture.,reason=.queue_full.} [1-9]\" self.out" &&
	stop_tallyd &&
	grep "^gauge tally_queue_capacity_records{instance=\"stuck\",kind=\"output\",plugin=\"capture\"} 5$" self.out &&
	grep "^gauge tally_queue_capacity_batches{instance=\"stuck\",kind=\"output\",plugin=\"capture\"} 1024$" self.out &&
	grep "^gauge tally_queue_records{instance=\"stuck\",kind=\"output\",plugin=\"capture\"} 4$" self.out &&
	! grep "^gauge tally_queue_records{instance=\"stuck\",[^}]*} \([5-9]\|[1-9][0-9]\)" self.out &&
	grep "^gauge tally_queue_batches{instance=\"stuck\",kind=\"output\",plugin=\"capture\"} 2$" self.out &&
	! grep "^gauge tally_queue_batches{instance=\"stuck\",[^}]*} [3-9]" self.out &&
	grep "capture\[stuck\]: queue full (4 of 5 records): dropping the oldest batch, 2 records" tallyd.log &&
	test_must_be_empty stuck.out
'

test_expect_success 'a batch larger than queue_records is still queued, alone' '
	cat >big.conf <<-EOF &&
	global = { shutdown_timeout = 0.5; };
	inputs = {
		a = { plugin = "counter"; interval = 0.05; count = 10; };
		self = { plugin = "self"; interval = 0.05; };
	};
	outputs = {
		stuck = { plugin = "capture"; path = "stuck.out"; stall = true;
			  queue_records = 5; };
		health = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		p = { from = ["a"]; to = ["stuck"]; };
		s = { from = ["self"]; to = ["health"]; };
	};
	EOF
	start_tallyd big.conf &&
	wait_for "grep -q \"reason=.queue_full.} [1-9]\" self.out" &&
	stop_tallyd &&
	grep "^gauge tally_queue_records{instance=\"stuck\",kind=\"output\",plugin=\"capture\"} 10$" self.out &&
	! grep "^gauge tally_queue_batches{instance=\"stuck\",[^}]*} [2-9]" self.out
'

test_expect_success 'queue_records is checked: range and outputs only' '
	cat >bad.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; queue_records = 5; }; };
	outputs = { o = { plugin = "capture"; path = "o.out";
			  queue_records = 0; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	test_must_fail tallyd --check-config -c bad.conf 2>err &&
	grep "^bad.conf:1: error: inputs.a: unknown option .queue_records." err &&
	grep "^bad.conf:3: error: outputs.o: option .queue_records. = 0 is out of range \[1, 1073741824\]" err
'

test_expect_success 'drops by key are exported by self' '
	cat >keyed.conf <<-EOF &&
	inputs = {
		a = { plugin = "counter"; count = 3; };
		b = { plugin = "counter"; count = 2; };
		self = { plugin = "self"; };
	};
	filters = { f = { plugin = "testfilter"; mode = "drop"; }; };
	outputs = { o = { plugin = "capture"; path = "keyed.out"; }; };
	pipelines = {
		p = { from = ["a", "b"]; through = ["f"]; to = ["o"]; };
		s = { from = ["self"]; to = ["o"]; };
	};
	EOF
	tallyd --once -c keyed.conf &&
	grep "^counter tally_dropped_by_key_total{instance=\"f\",key=\"a\",kind=\"filter\",pipeline=\"p\",plugin=\"testfilter\",reason=\"filtered\"} 3$" keyed.out &&
	grep "^counter tally_dropped_by_key_total{instance=\"f\",key=\"b\",kind=\"filter\",pipeline=\"p\",plugin=\"testfilter\",reason=\"filtered\"} 2$" keyed.out &&
	grep "^counter tally_dropped_total{instance=\"f\",kind=\"filter\",pipeline=\"p\",plugin=\"testfilter\",reason=\"filtered\"} 5$" keyed.out
'

test_done
