#!/bin/sh
#
# t0016-core-contracts.t - what the core does for every plugin: output
# queues bounded in records as well as batches, drops counted per key and
# exported by self, static labels (global.labels, an output's labels, the
# host label of push outputs)

test_description='core contracts: queue bounds, keyed drops, static labels'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

# stalled_conf FILE COUNT - a counter input of COUNT samples per read every
# 0.05 s into a stalled capture with queue_records = 5, and self into
# self.out
stalled_conf() {
	cat >"$1" <<-EOF
	global = { shutdown_timeout = 0.5; };
	inputs = {
		a = { plugin = "counter"; interval = 0.05; count = $2; };
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
}

test_expect_success 'a stalled output keeps at most queue_records records' '
	stalled_conf qr.conf 2 &&
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
	stalled_conf big.conf 10 &&
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

test_expect_success 'global.labels and an output'"'"'s labels on every prometheus series' '
	port=$(free_port) &&
	cat >labels.conf <<-EOF &&
	global = { interval = 0.1; labels = { cluster = "frontier"; site = "ornl"; }; };
	inputs = {
		a = { plugin = "counter"; count = 2; name = "node_value"; };
		spans = { plugin = "spangen"; mode = "spans"; ranks = 2; };
		self = { plugin = "self"; };
	};
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:$port";
			     labels = { site = "olcf"; i = "not-this"; }; }; };
	pipelines = { p = { from = ["a", "spans", "self"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" labels.conf &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >m &&
		grep -q ^tally_trace_region_active m &&
		grep -q ^node_value m && grep -q ^tally_records_out m" &&
	stop_tallyd &&
	grep -v "^#" m >samples &&
	test $(wc -l <samples) -gt 20 &&
	grep -v "cluster=\"frontier\"" samples >unlabelled || : &&
	test_must_be_empty unlabelled &&
	grep -v "site=\"olcf\"" samples >unlabelled || : &&
	test_must_be_empty unlabelled &&
	grep "^node_value{cluster=\"frontier\",i=\"1\",site=\"olcf\"} " samples &&
	grep "^tally_trace_region_active{cluster=\"frontier\",i=\"not-this\",rank=\"1\",region=\"main\",site=\"olcf\",trace=\"T\"} 1$" samples &&
	! grep "ornl" samples
'

prereq_cmd promtool PROMTOOL

test_expect_success PROMTOOL 'and the exposition stays promtool-clean' '
	promtool check metrics <m
'

hostname=$("$PYTHON3" -c "import socket; print(socket.gethostname())")

test_expect_success 'a push output gets host by default; "" removes a label' '
	cat >push.conf <<-EOF &&
	global = { labels = { cluster = "frontier"; }; };
	inputs = { a = { plugin = "counter"; }; };
	outputs = {
		push = { plugin = "capture"; path = "push.out";
			 static_labels = true; labels = { tier = "gold"; }; };
		nohost = { plugin = "capture"; path = "nohost.out";
			   static_labels = true;
			   labels = { host = ""; cluster = ""; }; };
		named = { plugin = "capture"; path = "named.out";
			  static_labels = true; labels = { host = "n17-ib"; }; };
	};
	pipelines = { p = { from = ["a"]; to = ["push", "nohost", "named"]; }; };
	EOF
	tallyd --once -c push.conf &&
	echo "gauge test_counter_value{cluster=\"frontier\",host=\"$hostname\",i=\"0\",tier=\"gold\"} 1" >push.expect &&
	test_cmp push.expect push.out &&
	echo "gauge test_counter_value{i=\"0\"} 1" >nohost.expect &&
	test_cmp nohost.expect nohost.out &&
	echo "gauge test_counter_value{cluster=\"frontier\",host=\"n17-ib\",i=\"0\"} 1" >named.expect &&
	test_cmp named.expect named.out
'

test_expect_success 'labels are checked: names, string values, outputs only' '
	cat >badlabels.conf <<-EOF &&
	global = { labels = { bad-key = "x"; ok = "y"; }; };
	inputs = { a = { plugin = "counter"; labels = { a = "b"; }; }; };
	outputs = { o = { plugin = "capture"; path = "o.out";
			  labels = { n = 1; }; };
		    p = { plugin = "capture"; path = "p.out"; labels = "x"; }; };
	pipelines = { p = { from = ["a"]; to = ["o", "p"]; }; };
	EOF
	test_must_fail tallyd --check-config -c badlabels.conf 2>err &&
	grep "^badlabels.conf:1: error: global: labels: .bad-key. is not a label name (\[a-zA-Z_\]\[a-zA-Z0-9_\]\*, no leading __)$" err &&
	grep "^badlabels.conf:2: error: inputs.a: unknown option .labels." err &&
	grep "^badlabels.conf:4: error: outputs.o: labels: the value of .n. must be a string$" err &&
	grep "^badlabels.conf:5: error: outputs.p: option .labels. must be of type group of labels$" err
'

test_expect_success 'a reload that changes global.labels replaces the outputs' '
	cat >rl.conf <<-EOF &&
	global = { interval = 0.05; labels = { v = "1"; }; };
	inputs = { a = { plugin = "counter"; }; };
	outputs = { o = { plugin = "capture"; path = "rl.out";
			  static_labels = true; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	start_tallyd rl.conf &&
	wait_for "grep -q \"{host=.$hostname.,i=.0.,v=.1.}\" rl.out" &&
	sed -i "s/v = \"1\"/v = \"2\"/" rl.conf &&
	kill -HUP $TALLYD_PID &&
	wait_for "grep -q \"{host=.$hostname.,i=.0.,v=.2.}\" rl.out" &&
	stop_tallyd &&
	! grep "v=\"1\"" rl.out
'

test_done
