#!/bin/sh
test_description='zmq_trace against hostile or careless senders: a full
source table, multi-part and oversize messages, a flood at shutdown'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

zt_require_pyzmq

test_expect_success 'start tallyd: max_sources = 4' '
	zt_config lim.conf "max_sources = 4;" &&
	start_tallyd lim.conf
'

# 1000 BEGINs from forged pids of a host "remotehost" fill the table of
# 4 sources many times over; a real tracer that starts afterwards must
# still be heard (it used to be dropped as source_limit until the forged
# sources timed out, an hour by default).
test_expect_success 'forged sources do not lock a new tracer out' '
	"$PYTHON3" -c "
import time
t = time.time_ns()
for i in range(1000):
    print(\"native begin 1 0\", 100000 + i, \"1 -1 0\", t + 1000, \"forged x remotehost\")
print(\"native begin 1 0 7 7 -1 0\", t + 2000, \"real outer realhost\")
print(\"native begin 2 1 7 7 -1 0\", t + 3000, \"real inner realhost\")
print(\"native end 2 1 7 7 -1 0\", t + 4000, \"real inner realhost\")
" >script &&
	zt_send <script &&
	wait_for "grep -q \"trace=real name=inner .* flags=0\" spans.out" &&
	s="host=realhost pid=7 tid=7 rank=-1 flags=0" &&
	cat >expect <<-EOF &&
	span begin trace=real name=outer id=1 parent=0 depth=0 $s
	span begin trace=real name=inner id=2 parent=1 depth=1 $s
	span end trace=real name=inner id=2 parent=1 depth=1 $s
	EOF
	grep "trace=real " spans.out >got &&
	test_cmp expect got
'

# Every source after the 4th forgot the least recently active one, whose
# open span ended as evicted: 1001 sources (1000 forged, 1 real), 997
# forgotten.
test_expect_success 'forgotten sources and their spans are counted and logged' '
	wait_for "test \$(zt_drops source_limit) = 997" &&
	test $(zt_drops span_evicted) = 997 &&
	test $(grep -c "trace=forged name=x .* flags=evicted" spans.out) = 997 &&
	grep "zmq_trace\[tr\]: max_sources = 4 reached: forgot the [0-9]* least recently active sources" tallyd.log &&
	test $(grep -c "max_sources = 4 reached" tallyd.log) -lt 100
'

# One event is one frame: multi-part messages are dropped whole, whichever
# frame would decode, and counted once each. The sender terminates its
# context: pyzmq skips that at interpreter exit, and the linger with it,
# so the messages of a sender that exits before connecting were lost.
test_expect_success 'multi-part messages are dropped and counted' '
	cat >multi.py <<-\EOF &&
	import struct, sys, time, zmq
	def native(span, name):
	    name = name.encode()
	    return struct.pack("<2sBBIqQQIIiHHHH", b"tY", 1, 1, 0,
	                       time.time_ns(), span, 0,
	                       9, 9, -1, 5, len(name), 2, 0) + b"multi" + name + b"mh"
	ctx = zmq.Context()
	s = ctx.socket(zmq.PUSH)
	s.setsockopt(zmq.LINGER, 10000)
	s.connect(sys.argv[1])
	s.send_multipart([native(1, "first"), b"second frame"])
	s.send_multipart([b"", native(2, "second")])
	s.send_multipart([native(3, "a"), native(4, "b"), native(5, "c")])
	s.send(native(6, "single"))
	s.close()
	ctx.term()
	EOF
	"$PYTHON3" multi.py "$EP" &&
	wait_for "grep -q \"trace=multi \" spans.out" &&
	echo "span begin trace=multi name=single id=6 parent=0 depth=0 host=mh pid=9 tid=9 rank=-1 flags=0" >expect &&
	grep "trace=multi " spans.out >got &&
	test_cmp expect got &&
	wait_for "test \$(zt_drops multipart) = 3" &&
	grep "zmq_trace\[tr\]: dropped malformed messages: [1-3] multipart (first: 64 bytes)" tallyd.log
'

# peak RSS of a process in KiB
hwm() {
	sed -n "s/^VmHWM:[[:space:]]*\([0-9]*\) kB$/\1/p" /proc/$1/status
}

# A frame above 16 KiB is refused by libzmq as soon as its size is read:
# the sender is disconnected, nothing is allocated or counted. A native
# message over the 3124-byte maximum but under 16 KiB is read and counted.
test_expect_success 'oversize messages: the sender is cut off, memory stays flat' '
	cat >big.py <<-\EOF &&
	import sys, time, zmq
	ctx = zmq.Context()
	socks = []
	for size in [32 << 20] * 4 + [(16 << 10) + 1, 16 << 10]:
	    s = ctx.socket(zmq.PUSH)
	    # only the last one, which fits, must arrive: linger on it alone
	    s.setsockopt(zmq.LINGER, 10000 if size == 16 << 10 else 0)
	    s.connect(sys.argv[1])
	    s.send(b"tY\x01\x01" + bytes(size - 4), copy=False)
	    socks.append(s)
	time.sleep(2)
	for s in socks:
	    s.close()
	ctx.term()
	EOF
	before=$(hwm $TALLYD_PID) &&
	test -n "$before" &&
	bad=$(zt_drops bad_length) &&
	"$PYTHON3" big.py "$EP" &&
	wait_for "test \$(zt_drops bad_length) = $((bad + 1))" &&
	after=$(hwm $TALLYD_PID) &&
	tally_diag "peak RSS before $before KiB, after $after KiB" &&
	test $((after - before)) -lt $((48 * 1024)) &&
	grep "dropped malformed messages: 1 bad_length (first: 16384 bytes)" tallyd.log
'

test_expect_success 'stop tallyd: every message accounted for' '
	stop_tallyd &&
	grep "zmq_trace\[tr\]: stopped: 1008 messages received, 4 malformed" tallyd.log
'

# SIGTERM while senders keep flooding: the stop-time drain gives up after
# its 3 s deadline (it used to last as long as the flood). Two client
# processes of 2 threads each send faster than the input reads; the
# records are dropped by a filter so that writing them out does not add
# to the time.
#
# The drain also ends, legitimately, once the socket is quiet for 50 ms:
# on a loaded machine the senders (one process with one I/O thread, as
# this test had) were sometimes descheduled that long, and the drain
# ended early without the deadline's warning (1 run in 6 with two busy
# CPUs). Two sender processes make that rare; a stop that ended quiet is
# tried again, up to 3 times. Every stop must end within 5 s, and one
# must have reached the deadline.

# flood_received - messages the flooded input has received, per self.out
flood_received() {
	sed -n "s/^counter tally_events_total{event=\"messages_received\",instance=\"tr\",[^}]*} //p" \
		self.out 2>/dev/null | tail -n1 | grep . || echo 0
}

flood_stop() {
	rm -f self.out &&
	start_tallyd flood.conf &&
	{ "$TRACE_EMIT" -T 2 -n 200000000 "$EP" flood >flood1.emit & } &&
	f1=$! &&
	{ "$TRACE_EMIT" -T 2 -n 200000000 "$EP" flood >flood2.emit & } &&
	f2=$! &&
	# the flood holds (100000 messages in), not a fixed sleep
	if ! wait_for "test \$(flood_received) -ge 100000"; then
		kill $f1 $f2
		wait $f1 $f2
		return 1
	fi
	t0=$(date +%s%N) &&
	stop_tallyd
	rc=$?
	t1=$(date +%s%N)
	kill $f1 $f2
	wait $f1 $f2
	ms=$(( (t1 - t0) / 1000000 )) &&
	tally_diag "stopped in $ms ms under a flood" &&
	test $rc = 0 &&
	# The drain's deadline is asserted by its log line (below); the time
	# only catches a stop that hangs: a loaded machine (sanitizers, other
	# suites) adds seconds to the 3000 ms drain, never minutes.
	test $ms -lt 20000
}

test_expect_success 'shutdown under a flood ends within the drain deadline' '
	cat >flood.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "$EP"; };
	           self = { plugin = "self"; interval = 0.1; }; };
	filters = { drop = { plugin = "testfilter"; mode = "drop"; }; };
	outputs = { null = { plugin = "capture"; path = "/dev/null"; };
	            health = { plugin = "capture"; path = "self.out"; }; };
	pipelines = { p = { from = ["tr"]; through = ["drop"]; to = ["null"]; };
	              h = { from = ["self"]; to = ["health"]; }; };
	EOF
	for try in 1 2 3; do
		flood_stop || return 1
		grep "zmq_trace\[tr\]: stop: messages still arriving after 3000 ms of draining: the rest is discarded" tallyd.log &&
		return 0
		tally_diag "try $try: the drain ended quiet before the deadline"
	done &&
	tally_diag "no stop reached the deadline: the flood never held" &&
	false
'

test_done
