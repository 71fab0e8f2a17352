#!/bin/sh
test_description='zmq_trace: span sequences from the C client and from raw
wire messages reach the pipeline with ids, parents, depths and times'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

test_expect_success 'start tallyd: zmq_trace -> capture' '
	mkdir conf &&
	zt_config conf/10-spans.conf &&
	cat >conf/20-timestamps.conf <<-EOF &&
	outputs = { ts = { plugin = "capture"; path = "ts.out";
			   timestamps = true; }; };
	pipelines = { t = { from = ["tr"]; to = ["ts"]; }; };
	EOF
	start_tallyd conf &&
	grep "zmq_trace\[tr\]: listening on $EP" tallyd.log
'

test_expect_success 'C client: nested spans, end by id and by name' '
	PMIX_RANK=7 "$TRACE_EMIT" "$EP" job1 begin:main begin:solve \
		begin:iter endid:iter end:solve begin:io end:io endid:main \
		>emit.out &&
	pid=$(sed -n "s/^sent=8 dropped=0 .* pid=\([0-9]*\)$/\1/p" emit.out) &&
	test -n "$pid" &&
	zt_lines spans.out 8 &&
	s="host=$HOST pid=$pid tid=$pid rank=7 flags=0" &&
	cat >expect <<-EOF &&
	span begin trace=job1 name=main id=1 parent=0 depth=0 $s
	span begin trace=job1 name=solve id=2 parent=1 depth=1 $s
	span begin trace=job1 name=iter id=3 parent=2 depth=2 $s
	span end trace=job1 name=iter id=3 parent=2 depth=2 $s
	span end trace=job1 name=solve id=2 parent=1 depth=1 $s
	span begin trace=job1 name=io id=4 parent=1 depth=1 $s
	span end trace=job1 name=io id=4 parent=1 depth=1 $s
	span end trace=job1 name=main id=1 parent=0 depth=0 $s
	EOF
	zt_ids <spans.out >got &&
	test_cmp expect got
'

test_expect_success 'C client, 3 threads on one tracer: each nests on its own' '
	"$TRACE_EMIT" -T 3 "$EP" job2 begin:a begin:b endid:b endid:a \
		>emit.out &&
	pid=$(sed -n "s/^sent=12 dropped=0 .* pid=\([0-9]*\)$/\1/p" emit.out) &&
	test -n "$pid" &&
	zt_lines spans.out 20 &&
	grep "trace=job2 " spans.out >job2 &&
	test $(wc -l <job2) = 12 &&
	tids=$(sed "s/.* tid=\([0-9]*\) .*/\1/" job2 | sort -u) &&
	test $(echo $tids | wc -w) = 3 &&
	echo "$tids" | grep -x "$pid" &&
	for t in $tids; do
		s="host=$HOST pid=$pid tid=$t rank=-1 flags=0" &&
		cat >expect <<-EOF &&
		span begin trace=job2 name=a id=1 parent=0 depth=0 $s
		span begin trace=job2 name=b id=2 parent=1 depth=1 $s
		span end trace=job2 name=b id=2 parent=1 depth=1 $s
		span end trace=job2 name=a id=1 parent=0 depth=0 $s
		EOF
		grep " tid=$t " job2 | zt_ids >got &&
		test_cmp expect got || return 1
	done
'

test_expect_success PYZMQ 'raw wire messages: times, begin on ends, hosts, orphans, drops' '
	# seconds 1 to 6 of the minute before now
	t=$(( ($(zt_now_s) - 60) * 1000000000 )) &&
	zt_send <<-EOF &&
	native begin 10 0 4242 4243 3 0 $((t + 1000000000)) job3 outer n01
	native begin 11 10 4242 4243 3 0 $((t + 2000000000)) job3 inner n01
	native end 11 10 4242 4243 3 0 $((t + 3000000000)) job3 - n01
	native end 99 10 4242 4244 3 5 $((t + 3500000000)) job3 lost n01
	native end 10 0 4242 4243 3 2 $((t + 4000000000)) job3 - n01
	native begin 1 0 4242 4243 3 0 $((t + 5000000000)) job3 local -
	native end 1 0 4242 4243 3 0 $((t + 6000000000)) job3 - -
	EOF
	zt_lines ts.out 27 &&
	s="host=n01 pid=4242 tid=4243 rank=3" &&
	l="host=$HOST pid=4242 tid=4243 rank=3" &&
	cat >expect <<-EOF &&
	span begin trace=job3 name=outer id=10 parent=0 depth=0 $s flags=0 ts=$((t + 1000000000))
	span begin trace=job3 name=inner id=11 parent=10 depth=1 $s flags=0 ts=$((t + 2000000000))
	span end trace=job3 name=inner id=11 parent=10 depth=1 $s flags=0 ts=$((t + 3000000000)) begin=$((t + 2000000000))
	span end trace=job3 name=lost id=99 parent=10 depth=1 host=n01 pid=4242 tid=4244 rank=3 flags=orphan_end ts=$((t + 3500000000)) begin=0
	span end trace=job3 name=outer id=10 parent=0 depth=0 $s flags=0 ts=$((t + 4000000000)) begin=$((t + 1000000000))
	span begin trace=job3 name=local id=1 parent=0 depth=0 $l flags=0 ts=$((t + 5000000000))
	span end trace=job3 name=local id=1 parent=0 depth=0 $l flags=0 ts=$((t + 6000000000)) begin=$((t + 5000000000))
	EOF
	grep "trace=job3 " ts.out >got &&
	test_cmp expect got &&
	wait_for "test \$(zt_drops client_dropped) = 7" &&
	wait_for "test \$(zt_drops orphan_end) = 1"
'

test_expect_success PYZMQ 'shutdown: summary line counts every message' '
	stop_tallyd &&
	grep "zmq_trace\[tr\]: stopped: 27 messages received, 0 malformed, 7 dropped by clients, 0 spans still open" tallyd.log &&
	! test -e "$SOCKDIR/trace.sock"
'

test_done
