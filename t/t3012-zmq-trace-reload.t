#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='zmq_trace across reloads: open spans survive a reload that
replaces the instance, are ended when it is removed, and a region whose end
was lost at the socket swap ends with its process (issue 9, item 1)

A reload that replaces the input (here: rcvhwm changes) closes the old
socket and binds a new one; a message that lands in the old socket after
its last drain is discarded with it. The test hook TALLY_TEST_ZMQ_TRACE_LOSE
makes that happen every time: while the file it names exists, the next stop
holds the old socket until a message arrives, and closes it unread.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

require_cmd curl

# conf HWM [EXTRA_OUTPUT [SPANS_TO]] - zmq_trace "tr" (rcvhwm = HWM) ->
# capture and prometheus (or SPANS_TO); self -> prometheus. HWM "none": no
# trace input at all.
conf() {
	tr="tr = { plugin = \"zmq_trace\"; endpoint = \"$EP\";
		   rcvhwm = $1; check_interval = 0.2; };"
	spans="spans = { from = [\"tr\"]; to = [${3:-\"cap\", \"prom\"}]; };"
	if test "$1" = none; then
		tr= &&
		spans='spans = { from = ["self"]; to = ["cap"]; };'
	fi
	cat >cur.conf <<-EOF
	global = { log_level = "info"; };
	inputs = { $tr self = { plugin = "self"; interval = 0.1; }; };
	outputs = {
		cap = { plugin = "capture"; path = "spans.out"; };
		prom = { plugin = "prometheus"; listen = "127.0.0.1:$port"; };
		$2
	};
	pipelines = { $spans h = { from = ["self"]; to = ["prom"]; }; };
	EOF
}

scrape() {
	curl -sS --max-time 10 -o "$1" "http://127.0.0.1:$port/metrics"
}

# metric NAME LABELS - its value on a fresh scrape, or "none"
metric() {
	scrape m &&
	{ awk -v s="$1{$2}" '$1 == s { print $2; found = 1 }
			     END { exit !found }' m || echo none; }
}

# active TRACE REGION - tally_trace_region_active of the region
active() {
	metric tally_trace_region_active "region=\"$2\",trace=\"$1\""
}

# count RE - lines of the log matching RE (0 is a count, not a failure)
count() {
	grep -c "$1" tallyd.log || :
}

applied() {
	count "configuration applied"
}

holds() {
	count "zmq_trace\[tr\]: test hook: holding the socket"
}

# lose_reload HWM GO - reload to rcvhwm HWM with the hook armed; once the
# old socket is held, create GO (the sender then sends what must be lost)
lose_reload() {
	lr_n=$(applied) &&
	lr_h=$(holds) &&
	touch lose &&
	conf $1 &&
	kill -HUP $TALLYD_PID &&
	wait_for "test \$(holds) -gt $lr_h" &&
	touch $2 &&
	wait_for "test \$(applied) -gt $lr_n"
}

test_expect_success 'start tallyd with the test hook' '
	port=$(free_port) &&
	conf 100000 &&
	TALLY_TEST_ZMQ_TRACE_LOSE=$PWD/lose &&
	export TALLY_TEST_ZMQ_TRACE_LOSE &&
	start_tallyd --wait "port_listening $port" "$PWD/cur.conf"
'

test_expect_success 'an end lost at the swap: the region ends with its process' '
	{ "$TRACE_EMIT" "$EP" gone begin:outer begin:inner endid:inner \
		wait:go1 endid:outer wait:go2 >gone.out & } &&
	emit=$! &&
	wait_for "grep -q \"^span end trace=gone name=inner\" spans.out" &&
	lose_reload 100001 go1 &&
	grep "zmq_trace\[tr\]: test hook: closing with a message unread" \
		tallyd.log &&
	grep "zmq_trace\[tr\]: reload: handing 1 open spans of 1 sources to the new instance" \
		tallyd.log &&
	grep "zmq_trace\[tr\]: reload: took over 1 open spans of 1 sources" \
		tallyd.log &&
	# its process runs on: as far as anyone can tell, outer is open
	test "$(active gone outer)" = 1 &&
	! grep "^span end trace=gone name=outer" spans.out &&
	touch go2 &&
	wait $emit &&
	pid=$(sed -n "s/^sent=4 dropped=0 .* pid=\([0-9]*\)$/\1/p" gone.out) &&
	test -n "$pid" &&
	wait_for "test \"\$(active gone outer)\" = 0" &&
	wait_for "grep -q \"^span end trace=gone name=outer\" spans.out" &&
	s="host=$HOST pid=$pid tid=$pid rank=-1" &&
	cat >expect <<-EOF &&
	span begin trace=gone name=outer id=1 parent=0 depth=0 $s flags=0
	span begin trace=gone name=inner id=2 parent=1 depth=1 $s flags=0
	span end trace=gone name=inner id=2 parent=1 depth=1 $s flags=0
	span end trace=gone name=outer id=1 parent=0 depth=0 $s flags=abandoned
	EOF
	grep "^span .* trace=gone " spans.out | zt_ids >got &&
	test_cmp expect got
'

test_expect_success 'an end lost at the swap: the next begin of its thread ends it' '
	t0=$(date +%s.%N) &&
	{ "$TRACE_EMIT" "$EP" on begin:outer wait:go3 endid:outer \
		wait:go4 begin:outer wait:go5 endid:outer >on.out & } &&
	emit=$! &&
	wait_for "grep -q \"^span begin trace=on name=outer\" spans.out" &&
	lose_reload 100002 go3 &&
	touch go4 &&
	wait_for "grep -q \"^span end trace=on name=outer .* flags=lost_end\$\" spans.out" &&
	test "$(active on outer)" = 1 &&
	touch go5 &&
	wait $emit &&
	t1=$(date +%s.%N) &&
	wait_for "test \"\$(active on outer)\" = 0" &&
	pid=$(sed -n "s/^sent=4 dropped=0 .* pid=\([0-9]*\)$/\1/p" on.out) &&
	s="host=$HOST pid=$pid tid=$pid rank=-1" &&
	cat >expect <<-EOF &&
	span begin trace=on name=outer id=1 parent=0 depth=0 $s flags=0
	span end trace=on name=outer id=1 parent=0 depth=0 $s flags=lost_end
	span begin trace=on name=outer id=2 parent=0 depth=0 $s flags=0
	span end trace=on name=outer id=2 parent=0 depth=0 $s flags=0
	EOF
	grep "^span .* trace=on " spans.out | zt_ids >got &&
	test_cmp expect got &&
	secs=$(metric tally_trace_region_seconds_total \
		"region=\"outer\",trace=\"on\"") &&
	tally_diag "outer: $secs s in a run of $t0 .. $t1" &&
	"$PYTHON3" -c "import sys; sys.exit(not 0 < $secs <= $t1 - $t0)" &&
	test "$(metric tally_dropped_total \
		"instance=\"tr\",kind=\"input\",plugin=\"zmq_trace\",reason=\"span_lost_end\"")" = 1
'

test_expect_success 'a reload that fails to start hands the spans back' '
	{ "$TRACE_EMIT" "$EP" back begin:y wait:go6 endid:y >back.out & } &&
	emit=$! &&
	wait_for "grep -q \"^span begin trace=back name=y\" spans.out" &&
	n=$(count "going back to the one loaded before") &&
	taken=$(count "zmq_trace\[tr\]: reload: took over") &&
	conf 100003 "bad = { plugin = \"capture\"; path = \"nodir/x\"; };" &&
	sed -i "s/to = \[\"cap\", \"prom\"\]/to = [\"cap\", \"prom\", \"bad\"]/" \
		cur.conf &&
	kill -HUP $TALLYD_PID &&
	wait_for "test \$(count \"going back to the one loaded before\") -gt $n" &&
	wait_for "grep -q \"configuration restored\" tallyd.log" &&
	# by the new instance, then (after the failure) by the restored one
	test $(count "zmq_trace\[tr\]: reload: took over") = $((taken + 2)) &&
	touch go6 &&
	wait $emit &&
	wait_for "grep -q \"^span end trace=back name=y\" spans.out" &&
	grep "^span end trace=back name=y id=[0-9]* parent=0 depth=0 .* flags=0$" \
		spans.out
'

# The output is told of nothing here: the reload leaves the input running
# but no longer feeding it. It asks whether the process runs itself.
test_expect_success 'an output cut off from the input: the region ends with its process' '
	{ "$TRACE_EMIT" "$EP" cut begin:z wait:go8 >cut.out & } &&
	emit=$! &&
	wait_for "test \"\$(active cut z)\" = 1" &&
	# rcvhwm as restored above: the input stays as it is
	conf 100002 "" "\"cap\"" &&
	n=$(applied) && kill -HUP $TALLYD_PID &&
	wait_for "test \$(applied) -gt $n" &&
	grep "configuration applied: 4 instances (0 new), 2 pipelines" \
		tallyd.log &&
	test "$(active cut z)" = 1 &&
	touch go8 &&
	wait $emit &&
	wait_for "test \"\$(active cut z)\" = 0"
'

test_expect_success 'an instance removed by a reload ends its open spans' '
	conf 100003 &&
	n=$(applied) && kill -HUP $TALLYD_PID &&
	wait_for "test \$(applied) -gt $n" &&
	{ "$TRACE_EMIT" "$EP" rm begin:x wait:go7 >rm.out & } &&
	emit=$! &&
	wait_for "grep -q \"^span begin trace=rm name=x\" spans.out" &&
	conf none &&
	n=$(applied) && kill -HUP $TALLYD_PID &&
	wait_for "test \$(applied) -gt $n" &&
	grep "zmq_trace\[tr\]: reload: the instance is gone: ended its 1 open spans as abandoned" \
		tallyd.log &&
	grep "^span end trace=rm name=x .* flags=abandoned$" spans.out &&
	# the process still runs, the output knows its span is over
	kill -0 $emit &&
	wait_for "test \"\$(active rm x)\" = 0" &&
	test "$(metric tally_dropped_total \
		"instance=\"tallyd\",kind=\"core\",plugin=\"core\",reason=\"span_abandoned\"")" = 1 &&
	touch go7 &&
	wait $emit
'

test_expect_success 'stop tallyd' '
	stop_tallyd
'

test_done
