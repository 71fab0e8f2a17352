#!/bin/sh
test_description='zmq_trace: spans that never end are closed as abandoned
(process gone, or silent), open spans per process are capped'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

test_expect_success 'start tallyd: cap 2, checks every 0.2 s, no timeout' '
	zt_config ab.conf "max_open_spans = 2; check_interval = 0.2;" \
		"abandon_timeout = 0;" &&
	start_tallyd ab.conf
'

test_expect_success 'a third open span evicts the oldest; its end is an orphan' '
	"$TRACE_EMIT" "$EP" ev begin:a begin:b begin:c endid:c endid:b \
		endid:a >emit.out &&
	pid=$(sed -n "s/^sent=6 dropped=0 .* pid=\([0-9]*\)$/\1/p" emit.out) &&
	zt_lines spans.out 7 &&
	s="host=$HOST pid=$pid tid=$pid rank=-1" &&
	cat >expect <<-EOF &&
	span begin trace=ev name=a id=1 parent=0 depth=0 $s flags=0
	span begin trace=ev name=b id=2 parent=1 depth=1 $s flags=0
	span end trace=ev name=a id=1 parent=0 depth=0 $s flags=evicted
	span begin trace=ev name=c id=3 parent=2 depth=2 $s flags=0
	span end trace=ev name=c id=3 parent=2 depth=2 $s flags=0
	span end trace=ev name=b id=2 parent=1 depth=1 $s flags=0
	span end trace=ev name=a id=1 parent=0 depth=0 $s flags=orphan_end
	EOF
	zt_ids <spans.out >got &&
	test_cmp expect got &&
	wait_for "test \$(zt_drops span_evicted) = 1" &&
	wait_for "test \$(zt_drops orphan_end) = 1"
'

test_expect_success 'a killed process: its open spans end as abandoned, innermost first' '
	"$TRACE_EMIT" "$EP" kill begin:outer begin:inner sleep:60000 \
		>/dev/null &
	emitpid=$! &&
	wait_for "grep -q \"trace=kill name=inner\" spans.out" &&
	sleep 1.5 &&
	! grep "trace=kill .*flags=abandoned" spans.out &&
	kill -KILL $emitpid &&
	{ wait $emitpid; true; } &&
	wait_for "grep -q \"trace=kill .*flags=abandoned\" spans.out" &&
	zt_lines spans.out 11 &&
	s="host=$HOST pid=$emitpid tid=$emitpid rank=-1" &&
	cat >expect <<-EOF &&
	span begin trace=kill name=outer id=1 parent=0 depth=0 $s flags=0
	span begin trace=kill name=inner id=2 parent=1 depth=1 $s flags=0
	span end trace=kill name=inner id=2 parent=1 depth=1 $s flags=abandoned
	span end trace=kill name=outer id=1 parent=0 depth=0 $s flags=abandoned
	EOF
	grep "trace=kill " spans.out | zt_ids >got &&
	test_cmp expect got &&
	wait_for "test \$(zt_drops span_abandoned) = 2"
'

test_expect_success 'stop tallyd' '
	stop_tallyd
'

test_expect_success PYZMQ 'a silent remote process: abandoned after abandon_timeout at its last time' '
	cat >far.conf <<-EOF &&
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "$EP";
			  check_interval = 0.2; abandon_timeout = 2.0; }; };
	outputs = { cap = { plugin = "capture"; path = "far.out";
			    timestamps = true; }; };
	pipelines = { p = { from = ["tr"]; to = ["cap"]; }; };
	EOF
	start_tallyd far.conf &&
	t1=$(( ($(zt_now_s) - 60) * 1000000000 )) &&
	t2=$((t1 + 1000000000)) &&
	zt_send <<-EOF &&
	native begin 5 0 777 777 0 0 $t1 far job far.example
	native begin 6 5 777 777 0 0 $t2 far step far.example
	EOF
	zt_lines far.out 2 &&
	# not before abandon_timeout: 2 s leaves seeing the begins and the
	# sleep 1.5 s of slack on a loaded machine (1 s left under 0.5 s)
	sleep 0.5 &&
	! grep abandoned far.out &&
	wait_for "test \$(grep -c \"flags=abandoned\" far.out) = 2" 6 &&
	s="host=far.example pid=777 tid=777 rank=0" &&
	cat >expect <<-EOF &&
	span begin trace=far name=job id=5 parent=0 depth=0 $s flags=0 ts=$t1
	span begin trace=far name=step id=6 parent=5 depth=1 $s flags=0 ts=$t2
	span end trace=far name=step id=6 parent=5 depth=1 $s flags=abandoned ts=$t2 begin=$t2
	span end trace=far name=job id=5 parent=0 depth=0 $s flags=abandoned ts=$t2 begin=$t1
	EOF
	test_cmp expect far.out &&
	stop_tallyd
'

test_expect_success 'at shutdown, spans of a process already gone are closed at once' '
	zt_config fin.conf "check_interval = 3600;" &&
	rm -f spans.out &&
	start_tallyd fin.conf &&
	"$TRACE_EMIT" "$EP" fin begin:left >/dev/null &&
	zt_lines spans.out 1 &&
	stop_tallyd &&
	grep "stopped: 1 messages received, 0 malformed, 0 dropped by clients, 0 spans still open, 1 closed as abandoned at exit" tallyd.log &&
	tail -n1 spans.out | grep "^span end trace=fin name=left .* flags=abandoned$"
'

# tallyd --user -- CMD: the ranks of a job its batch system kills stop
# sending mid-region; they die with the command. Their regions end when
# the job ended, not at the last event seen (here the region's begin:
# a region of 0 s where the rank spent until the kill).
tally_sock_dir xdg || exit 1
test_expect_success 'a job killed inside a region: the region ends with the job' '
	cat >job.conf <<-EOF &&
	inputs = { tr = { plugin = "zmq_trace"; check_interval = 3600; }; };
	outputs = { cap = { plugin = "capture"; path = "$PWD/job.out";
			    timestamps = true; }; };
	pipelines = { p = { from = ["tr"]; to = ["cap"]; }; };
	EOF
	{ XDG_RUNTIME_DIR=$TALLY_SOCK_DIR "$TALLYD" --user -c job.conf -- \
		"$TRACE_EMIT" - job begin:io wait:never 2>job.err & } &&
	job=$! &&
	wait_for "grep -q \"^span begin trace=job name=io \" job.out" &&
	killed=$(date +%s%N) &&
	kill -INT $job &&
	test_expect_code 130 wait $job &&
	end=$(sed -n "s/^span end trace=job name=io .* flags=abandoned ts=\([0-9]*\) begin=[0-9]*\$/\1/p" job.out) &&
	test -n "$end" &&
	test "$end" -ge "$killed"
'

test_done
