#!/bin/sh
test_description='zmq_trace drains: coalesced wake-ups at low rates, capped
drains under load, no message left behind between wake-ups'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

zt_require_pyzmq

# trickle N GAP_MS [BURST] - N begin events, one every GAP_MS ms (BURST
# at a time), each of its own span so that nothing is ever closed
trickle() {
	"$PYTHON3" - "$EP" "$@" <<-\EOF
	import struct, sys, time, zmq
	ep, n, gap = sys.argv[1], int(sys.argv[2]), float(sys.argv[3])
	burst = int(sys.argv[4]) if len(sys.argv) > 4 else 1
	ctx = zmq.Context()
	s = ctx.socket(zmq.PUSH)
	s.setsockopt(zmq.LINGER, 10000)
	s.connect(ep)
	time.sleep(0.2)  # connected before the clock starts
	for i in range(1, n + 1):
	    hdr = struct.pack("<2sBBIqQQIIiHHHH", b"tY", 1, 1, 0, i, i, 0,
	                      999999, 1, 0, 1, 1, 0, 0)
	    s.send(hdr + b"tx")
	    if i % burst == 0:
	        time.sleep(gap / 1000)
	s.close()
	ctx.term()
	EOF
}

# summary FIELD - a number from the input's shutdown line: "wake-ups",
# "drains" or "messages received"
summary() {
	sed -n "s/.*zmq_trace\[tr\]: stopped:.* \([0-9][0-9]*\) $1.*/\1/p" \
		tallyd.log
}

test_expect_success 'a trickle does not wake the collector once per message' '
	zt_config slow.conf "min_drain_interval = 0.05;" &&
	start_tallyd slow.conf &&
	trickle 200 1 &&
	zt_lines spans.out 200 &&
	stop_tallyd &&
	w=$(summary wake-ups) &&
	tally_diag "200 messages 1 ms apart, min_drain_interval 0.05:" \
		"$w wake-ups" &&
	test "$w" -lt 40
'

test_expect_success 'without coalescing, the same trickle wakes it far more' '
	zt_config fast.conf "min_drain_interval = 0;" &&
	rm -f spans.out &&
	start_tallyd fast.conf &&
	trickle 200 1 &&
	zt_lines spans.out 200 &&
	stop_tallyd &&
	tally_diag "min_drain_interval 0: $(summary wake-ups) wake-ups" &&
	test "$(summary wake-ups)" -gt "$w"
'

test_expect_success 'a drain reads at most max_messages_per_wakeup' '
	zt_config cap.conf "max_messages_per_wakeup = 10;" \
		"min_drain_interval = 0.2;" &&
	rm -f spans.out &&
	start_tallyd cap.conf &&
	"$TRACE_EMIT" "$EP" cap sleep:100 >/dev/null &&
	trickle 2000 0 2000 &&
	zt_lines spans.out 2000 &&
	stop_tallyd &&
	d=$(summary drains) &&
	tally_diag "2000 messages at once, cap 10: $d drains" &&
	test "$d" -ge 200 &&
	test "$(summary "messages received")" = 2000
'

test_expect_success 'bursts at irregular gaps: every message arrives, none waits for a later one' '
	zt_config gaps.conf &&
	rm -f spans.out &&
	start_tallyd gaps.conf &&
	"$PYTHON3" - "$EP" <<-\EOF &&
	import random, struct, sys, time, zmq
	ctx = zmq.Context()
	s = ctx.socket(zmq.PUSH)
	s.setsockopt(zmq.LINGER, 10000)
	s.connect(sys.argv[1])
	random.seed(3007)
	n = 0
	for r in range(150):
	    for k in range(random.randint(1, 5)):
	        n += 1
	        s.send(struct.pack("<2sBBIqQQIIiHHHH", b"tY", 1, 1, 0, n, n,
	                           0, 999999, 1, 0, 1, 1, 0, 0) + b"gx")
	    time.sleep(random.choice([0, 0.0005, 0.002, 0.004, 0.006, 0.02]))
	open("sent", "w").write("%d\n" % n)
	s.close()
	ctx.term()
	EOF
	wait_for "test \$(wc -l <spans.out) = \$(cat sent)" 2 &&
	stop_tallyd
'

test_done
