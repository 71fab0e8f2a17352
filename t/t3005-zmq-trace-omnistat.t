#!/bin/sh
test_description='zmq_trace: Omnistat tracer JSON messages sent with pyzmq
give the same spans as the native client'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

zt_require_pyzmq

# omnistat TRACE EVENT... - send EVENTs ("start:LABEL:MS" or "end:LABEL:MS")
# the way Omnistat's prototype tracer does: a PUSH socket connected to the
# collector, one json.dumps(["start"|"end", epoch_ms, trace, label]) each
omnistat() {
	"$PYTHON3" - "$EP" "$@" <<-\EOF
	import json, sys, zmq
	ctx = zmq.Context()
	s = ctx.socket(zmq.PUSH)
	s.setsockopt(zmq.LINGER, 10000)
	s.connect(sys.argv[1])
	for ev in sys.argv[3:]:
	    kind, label, ms = ev.split(":")
	    s.send_string(json.dumps([kind, int(ms), sys.argv[2], label]))
	s.close()
	ctx.term()
	EOF
}

test_expect_success 'start tallyd' '
	mkdir conf &&
	zt_config conf/10-base.conf &&
	cat >conf/20-ts.conf <<-EOF &&
	outputs = { ts = { plugin = "capture"; path = "ts.out";
			   timestamps = true; }; };
	pipelines = { t = { from = ["tr"]; to = ["ts"]; }; };
	EOF
	start_tallyd conf
'

# epoch ms of a minute ago: Omnistat timestamps near the collector's clock
test_expect_success 'Omnistat messages: ids and nesting from order, ms to ns' '
	ms=$(( ($(zt_now_s) - 60) * 1000 )) &&
	omnistat 3 start:solver:$((ms + 123)) start:io:$((ms + 200)) \
		end:io:$((ms + 250)) end:solver:$((ms + 1000)) &&
	zt_lines ts.out 4 &&
	s="host=$HOST pid=0 tid=0 rank=-1" &&
	cat >expect <<-EOF &&
	span begin trace=3 name=solver id=1 parent=0 depth=0 $s flags=0 ts=$((ms + 123))000000
	span begin trace=3 name=io id=2 parent=1 depth=1 $s flags=0 ts=$((ms + 200))000000
	span end trace=3 name=io id=2 parent=1 depth=1 $s flags=0 ts=$((ms + 250))000000 begin=$((ms + 200))000000
	span end trace=3 name=solver id=1 parent=0 depth=0 $s flags=0 ts=$((ms + 1000))000000 begin=$((ms + 123))000000
	EOF
	test_cmp expect ts.out
'

# The structure of a span sequence: phase, name, renumbered id and parent,
# depth, flags; what must agree between the two clients.
shape() {
	zt_ids | sed "s/ host=.* flags=/ flags=/; s/ trace=[^ ]* / /"
}

test_expect_success 'the same sequence from Omnistat JSON and from the C client' '
	omnistat om start:main:$((ms + 1)) start:solve:$((ms + 2)) \
		start:iter:$((ms + 3)) end:iter:$((ms + 4)) \
		end:solve:$((ms + 5)) start:io:$((ms + 6)) end:io:$((ms + 7)) \
		end:main:$((ms + 8)) &&
	"$TRACE_EMIT" "$EP" native begin:main begin:solve begin:iter \
		endid:iter endid:solve begin:io endid:io endid:main \
		>/dev/null &&
	zt_lines spans.out 20 &&
	grep " trace=om " spans.out | shape >om.shape &&
	grep " trace=native " spans.out | shape >native.shape &&
	test $(wc -l <om.shape) = 8 &&
	test_cmp om.shape native.shape &&
	cat >expect <<-\EOF &&
	span begin name=main id=1 parent=0 depth=0 flags=0
	span begin name=solve id=2 parent=1 depth=1 flags=0
	span begin name=iter id=3 parent=2 depth=2 flags=0
	span end name=iter id=3 parent=2 depth=2 flags=0
	span end name=solve id=2 parent=1 depth=1 flags=0
	span begin name=io id=4 parent=1 depth=1 flags=0
	span end name=io id=4 parent=1 depth=1 flags=0
	span end name=main id=1 parent=0 depth=0 flags=0
	EOF
	test_cmp expect om.shape
'

test_expect_success 'Omnistat: an end for a label never started is an orphan' '
	omnistat 3 end:never:$((ms + 2000)) &&
	zt_lines ts.out 21 &&
	tail -n1 ts.out >got &&
	echo "span end trace=3 name=never id=3 parent=0 depth=0 host=$HOST pid=0 tid=0 rank=-1 flags=orphan_end ts=$((ms + 2000))000000 begin=0" >expect &&
	test_cmp expect got &&
	stop_tallyd &&
	grep "stopped: 21 messages received, 0 malformed" tallyd.log
'

test_done
