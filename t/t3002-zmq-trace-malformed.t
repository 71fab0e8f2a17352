#!/bin/sh
test_description='zmq_trace: malformed messages are dropped and counted by
reason, valid ones around them still arrive, the daemon survives'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

zt_require_pyzmq

# The vectors of doc/wire-format.md are fixed bytes with fixed timestamps
# (July 2024): no clock skew bound here (t3014 tests the bound).
test_expect_success 'start tallyd' '
	zt_config bad.conf "max_clock_skew = 0;" &&
	start_tallyd bad.conf
'

# Every vector of doc/wire-format.md as a "hex" line, in document order.
doc_vectors() {
	awk '/^### Version 2 vectors/ { exit }
	     /^# vector / { v = 1; hex = ""; next }
	     v && /^```/ { print "hex" hex; v = 0; next }
	     v { sub(/#.*/, ""); hex = hex " " $0 }' \
		"$top_srcdir/doc/wire-format.md"
}

test_expect_success 'send the doc vectors, bad JSON and garbage' '
	doc_vectors >script &&
	test $(wc -l <script) = 14 &&
	cat >>script <<-\EOF &&
	hex
	hex 74
	hex 00 01
	json {"start": 1}
	hex 74 59 03 01
	json ["begin", 1, "a", "b"]
	json ["start", 1, "a"]
	json ["start", 1, "a", "b"] trailing
	json ["start", -1, "a", "b"]
	json ["start", 1, "a", "\ud800"]
	native end 2 1 4242 4243 -1 0 1722000002000000000 job42 - -
	EOF
	"$PYTHON3" -c "import os
for i in range(200):
    print(\"hex ff\", os.urandom(i % 80).hex())" >>script &&
	zt_send <script &&
	zt_lines spans.out 4
'

# The end-dropped vector (an END without name from n01, where span 2 was
# never begun) is counted as orphan_end but not passed on: it would make a
# region "" downstream.
test_expect_success 'the valid vectors and a closing end arrive as the rules say' '
	s="pid=4242 tid=4243" &&
	cat >expect <<-EOF &&
	span begin trace=job42 name=solver id=1 parent=0 depth=0 host=n01 $s rank=3 flags=0
	span begin trace=job42 name=étape id=2 parent=1 depth=1 host=$HOST $s rank=-1 flags=0
	span end trace=job42 name=solver id=1 parent=0 depth=0 host=n01 $s rank=3 flags=0
	span end trace=job42 name=étape id=2 parent=1 depth=1 host=$HOST $s rank=-1 flags=0
	EOF
	test_cmp expect spans.out
'

# reason, then how many: from the doc table (one each, bad_length four
# times) plus the lines above; the close vector carries 7 drops as
# end-dropped does
cat >counts <<\EOF
truncated 3
bad_magic 202
unknown_version 2
bad_type 2
bad_length 4
bad_span_id 1
bad_utf8 2
bad_json 2
bad_value 1
client_dropped 14
orphan_end 1
EOF

test_expect_success 'every drop counted under its reason in self-metrics' '
	wait_for "test \$(zt_drops bad_value) = 1" &&
	sleep 0.3 &&
	while read reason n; do
		got=$(zt_drops $reason) &&
		{ test "$got" = "$n" ||
		  { tally_diag "$reason: $got, expected $n"; false; }; } ||
		return 1
	done <counts
'

test_expect_success 'messages received are counted in self-metrics' '
	grep "^counter tally_events_total{event=\"messages_received\",instance=\"tr\",kind=\"input\",plugin=\"zmq_trace\"} 224$" self.out &&
	grep "^counter tally_events_total{event=\"tracer_closes\",instance=\"tr\",kind=\"input\",plugin=\"zmq_trace\"} 1$" self.out
'

test_expect_success 'drops are logged per reason, not per message; the daemon lives on' '
	grep "zmq_trace\[tr\]: dropped malformed messages: [1-3] truncated (first: [0-9]* bytes)" tallyd.log &&
	test $(grep -c "dropped malformed messages" tallyd.log) -lt 20 &&
	kill -0 $TALLYD_PID &&
	stop_tallyd &&
	grep "stopped: 224 messages received, 219 malformed, 14 dropped by clients, 0 spans still open" tallyd.log &&
	# the close vector says 1234 events were queued since begin-root: of
	# that process (n01, pid 4242) 3 came, the rest counts at shutdown
	grep "zmq_trace\[tr\]: 1231 events that senders queued never arrived" tallyd.log
'

test_done
