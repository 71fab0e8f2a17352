#!/bin/sh
test_description='zmq_trace: wire v2 (doc/wire-format.md) beside v1: span
attributes on span records, counters as metric records, per-source figures'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

zt_require_pyzmq

# One vector of doc/wire-format.md as a "hex" line.
doc_vector() {
	awk -v want="$1" '$0 == "# vector " want { v = 1; hex = ""; next }
	     v && /^```/ { print "hex" hex; exit }
	     v { sub(/#.*/, ""); hex = hex " " $0 }' \
		"$top_srcdir/doc/wire-format.md"
}

# The vectors have fixed timestamps (July 2024): no skew bound.
test_expect_success 'start tallyd' '
	cat >v2.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = {
		tr = { plugin = "zmq_trace"; endpoint = "$EP";
		       max_clock_skew = 0; check_interval = 0.1;
		       source_metrics = true; };
		self = { plugin = "self"; interval = 0.1; };
	};
	outputs = {
		cap = { plugin = "capture"; path = "out"; attrs = true; };
		health = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		spans = { from = ["tr"]; to = ["cap"]; };
		h = { from = ["self"]; to = ["health"]; };
	};
	EOF
	start_tallyd v2.conf
'

# A v1 sender (pid 7) between v2 messages of pid 4242: both arrive.
test_expect_success 'send v2 vectors, v1 messages and malformed v2' '
	{
		doc_vector v2-begin-source &&
		echo "native begin 5 0 7 7 0 0 1722000000500000000 job42 old n01" &&
		doc_vector v2-counter &&
		doc_vector v2-end-attrs &&
		doc_vector v2-counter &&
		echo "native end 5 0 7 7 0 0 1722000000600000000 job42 old n01" &&
		for v in ext-long item-past attr-type bool key dup-key \
			str-utf8; do
			doc_vector bad-v2-$v || return 1
		done
	} >script &&
	test $(grep -c "^hex" script) = 11 &&
	zt_send <script &&
	wait_for "grep -q tally_trace_source_info out"
'

test_expect_success 'spans: attributes on the END record, v1 spans as before' '
	grep "^span" out >spans &&
	n01="host=n01 pid=4242 tid=4243 rank=3" &&
	cat >expect <<-EOF &&
	span begin trace=job42 name=solver id=1 parent=0 depth=0 $n01 flags=0 attrs={}
	span begin trace=job42 name=old id=5 parent=0 depth=0 host=n01 pid=7 tid=7 rank=0 flags=0 attrs={}
	span end trace=job42 name=solver id=1 parent=0 depth=0 $n01 flags=0 attrs={} values=bytes=4096,ratio=0.5,file="ckpt.h5",ok=true
	span end trace=job42 name=old id=5 parent=0 depth=0 host=n01 pid=7 tid=7 rank=0 flags=0 attrs={}
	EOF
	test_cmp expect spans
'

test_expect_success 'counters: deltas add up per series, a gauge is its level' '
	l="rank=\"3\",trace=\"job42\"" &&
	cat >expect <<-EOF &&
	counter tally_app_mpi_bytes_total{host="n01",peer="2",$l} 1048576
	gauge tally_app_queue_depth{host="n01",$l} 3.5
	counter tally_app_mpi_bytes_total{host="n01",peer="2",$l} 2097152
	gauge tally_app_queue_depth{host="n01",$l} 3.5
	EOF
	grep "tally_app_" out >got &&
	test_cmp expect got
'

test_expect_success 'per source: messages, client drops, last seen, announcement' '
	s="host=\"n01\",pid=\"4242\",rank=\"3\",trace=\"job42\"" &&
	grep -x "counter tally_trace_source_messages_total{$s} 4" out &&
	grep -x "counter tally_trace_source_dropped_total{$s} 0" out &&
	grep -x "gauge tally_trace_source_last_seen_timestamp_seconds{$s} 1722000001.5" out &&
	grep -x "info tally_trace_source_info{host=\"n01\",local_rank=\"1\",pid=\"4242\",rank=\"3\",rocr_visible_devices=\"0,1\",trace=\"job42\"} 1" out &&
	grep -x "counter tally_trace_source_messages_total{host=\"n01\",pid=\"7\",rank=\"0\",trace=\"job42\"} 2" out
'

test_expect_success 'malformed v2 counted by reason' '
	wait_for "test \$(zt_drops bad_utf8) = 1" &&
	wait_for "test \$(zt_drops bad_value) = 4" &&
	wait_for "test \$(zt_drops bad_length) = 2" &&
	wait_for "grep -q \"^counter tally_events_total{event=\\\"counter_messages\\\",instance=\\\"tr\\\",kind=\\\"input\\\",plugin=\\\"zmq_trace\\\"} 2\$\" self.out" &&
	stop_tallyd &&
	grep "stopped: 11 messages received, 7 malformed" tallyd.log
'

test_done
