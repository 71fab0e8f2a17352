#!/bin/sh
test_description='zmq_trace drains: coalesced wake-ups at low rates, capped
drains under load, no message left behind between wake-ups'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

zt_require_pyzmq

# The events below come from this host (no host name) and the pid of this
# test script, which lives as long as the collector: the input closes the
# open spans of a local pid that is gone as abandoned (its check, every
# 5 s, after 1 s of silence), and those ends would count as lines of
# spans.out. The pid was 999999, which no process has: had a sender
# paused for a second on a loaded machine, its spans were abandoned,
# spans.out reached its expected line count early and tallyd was stopped
# before the drains counted below read the last messages (the likeliest
# cause of the one failure of the drain cap test, in a full parallel run).
SPID=$$

# trickle N GAP_MS [BURST] - N begin events, one every GAP_MS ms (BURST
# at a time), each of its own root span, from no known thread (tid 0: a
# root begin of a known thread would end the thread's span before it),
# so that nothing is ever closed; timestamped now, as a client does;
# prints the seconds from the first send to the last
trickle() {
	"$PYTHON3" - "$EP" "$SPID" "$@" <<-\EOF
	import struct, sys, time, zmq
	ep, pid, n = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
	gap = float(sys.argv[4])
	burst = int(sys.argv[5]) if len(sys.argv) > 5 else 1
	ctx = zmq.Context()
	s = ctx.socket(zmq.PUSH)
	s.setsockopt(zmq.LINGER, 10000)
	s.connect(ep)
	time.sleep(0.2)  # connected before the clock starts
	t0 = time.monotonic()
	for i in range(1, n + 1):
	    hdr = struct.pack("<2sBBIqQQIIiHHHH", b"tY", 1, 1, 0,
	                      time.time_ns(), i, 0, pid, 0, 0, 1, 1, 0, 0)
	    s.send(hdr + b"tx")
	    if i % burst == 0:
	        time.sleep(gap / 1000)
	print("%.3f" % (time.monotonic() - t0))
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

# Coalesced, a wake-up reads what 50 ms brought: a cooldown that finds
# messages starts the next one, and only one that finds none lets the
# next message wake the collector, so there are at most two wake-ups per
# 50 ms of trickle (plus a few at the ends). The bound was a fixed 40,
# for the 0.2 s the trickle takes; on a loaded machine, where a sleep of
# 1 ms lasts far longer, it can take seconds. One wake-up per message
# exceeds the bound as long as sending takes less than about 4.5 s.
test_expect_success 'a trickle does not wake the collector once per message' '
	zt_config slow.conf "min_drain_interval = 0.05;" &&
	start_tallyd slow.conf &&
	secs=$(trickle 200 1) &&
	zt_lines spans.out 200 &&
	stop_tallyd &&
	w=$(summary wake-ups) &&
	max=$("$PYTHON3" -c "print(int(2 * $secs / 0.05) + 10)") &&
	tally_diag "200 messages 1 ms apart in $secs s," \
		"min_drain_interval 0.05: $w wake-ups (at most $max)" &&
	test "$w" -le "$max"
'

test_expect_success 'without coalescing, the same trickle wakes it far more' '
	zt_config fast.conf "min_drain_interval = 0;" &&
	rm -f spans.out &&
	start_tallyd fast.conf &&
	trickle 200 1 >/dev/null &&
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
	# all at once: tallyd is stopped while they are sent (a loaded
	# machine feeding them slowly made drains under the cap wait 0.2 s
	# each), then 200 drains that hit the cap must not wait at all: 30 s
	# is less than the 40 s they would take if they did
	kill -STOP $TALLYD_PID &&
	{ trickle 2000 0 2000 >/dev/null & } &&
	tp=$! &&
	sleep 1 &&
	kill -CONT $TALLYD_PID &&
	wait $tp &&
	wait_for "test -f spans.out && test \$(wc -l <spans.out) -ge 2000" 30 &&
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
	# as trickle sends them: root spans of no known thread, now
	"$PYTHON3" - "$EP" "$SPID" <<-\EOF &&
	import random, struct, sys, time, zmq
	pid = int(sys.argv[2])
	ctx = zmq.Context()
	s = ctx.socket(zmq.PUSH)
	s.setsockopt(zmq.LINGER, 10000)
	s.connect(sys.argv[1])
	random.seed(3007)
	n = 0
	for r in range(150):
	    for k in range(random.randint(1, 5)):
	        n += 1
	        s.send(struct.pack("<2sBBIqQQIIiHHHH", b"tY", 1, 1, 0,
	                           time.time_ns(), n, 0, pid, 0, 0, 1, 1, 0,
	                           0) + b"gx")
	    time.sleep(random.choice([0, 0.0005, 0.002, 0.004, 0.006, 0.02]))
	open("sent", "w").write("%d\n" % n)
	s.close()
	ctx.term()
	EOF
	# a message left unread until a later one comes stays unread here
	# (no later one comes): the wait is only the patience of a loaded
	# machine
	wait_for "test \$(wc -l <spans.out) = \$(cat sent)" 30 &&
	stop_tallyd
'

test_done
