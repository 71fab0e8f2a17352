#!/bin/sh
test_description='contrib/python/tally_trace.py to a pyzmq receiver that decodes doc/wire-format.md'
. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t35-lib.sh"

PYTHONPATH=$top_srcdir/contrib/python
export PYTHONPATH

test_expect_success 'context manager, decorators, begin/end, end_name' '
	cat >spans.py <<-\EOF &&
	import os, sys
	import tally_trace
	t = tally_trace.Tracer(sys.argv[1], "py1")
	@t.trace
	def step():
	    return 42
	@t.trace("io")
	def fail():
	    raise ValueError("boom")
	with t.span("outer"):
	    assert step() == 42
	    try:
	        fail()
	    except ValueError:
	        pass
	    sid = t.begin("x")
	    t.begin("y")
	    assert t.end_name("x")
	    assert not t.end_name("x")
	    assert t.end_name("y")
	    with t.span("ctx") as s:
	        pass
	    @t.span("as-deco")
	    def h():
	        pass
	    h()
	print("pid=%d" % os.getpid())
	print(t.stats())
	t.close()
	EOF
	start_recv "ipc://$PWD/t.sock" got --count 14 --idle 200 &&
	PMIX_RANK=2 "$PYTHON3" spans.py "ipc://$PWD/t.sock" >out &&
	wait_recv &&
	pid=$(sed -n "s/^pid=//p" out) &&
	f=$(fields $pid 2) &&
	cat >expect <<-EXPECT &&
	begin trace=py1 name=outer id=1 parent=0 $f
	begin trace=py1 name=step id=2 parent=1 $f
	end trace=py1 name=step id=2 parent=1 $f
	begin trace=py1 name=io id=3 parent=1 $f
	end trace=py1 name=io id=3 parent=1 $f
	begin trace=py1 name=x id=4 parent=1 $f
	begin trace=py1 name=y id=5 parent=4 $f
	end trace=py1 name=x id=4 parent=1 $f
	end trace=py1 name=y id=5 parent=4 $f
	begin trace=py1 name=ctx id=6 parent=1 $f
	end trace=py1 name=ctx id=6 parent=1 $f
	begin trace=py1 name=as-deco id=7 parent=1 $f
	end trace=py1 name=as-deco id=7 parent=1 $f
	end trace=py1 name=outer id=1 parent=0 $f
	messages=14 dropped_sum=0
	EXPECT
	test_cmp expect got &&
	grep "^{.events.: 14, .dropped.: 0, .unreported.: 0}$" out
'

test_expect_success 'discovery, default trace id, long and odd names' '
	cat >names.py <<-\EOF &&
	import os
	import tally_trace
	t = tally_trace.default_tracer()
	print("pid=%d" % os.getpid())
	with tally_trace.span("n" * 1023 + "\u00e9z"):
	    tally_trace.end(tally_trace.begin("nul\0here"))
	# the default tracer is closed at exit
	EOF
	port=$(free_port) &&
	start_recv "tcp://127.0.0.1:$port" got --count 4 --idle 200 &&
	env -u PMIX_RANK FLUX_JOB_ID=fjob FLUX_TASK_RANK=9 \
		TALLY_TRACE_ENDPOINT="tcp://127.0.0.1:$port" \
		"$PYTHON3" names.py >out &&
	wait_recv &&
	pid=$(sed -n "s/^pid=//p" out) &&
	f=$(fields $pid 9) &&
	long=$(printf "%01023d" 0 | tr 0 n) &&
	cat >expect <<-EXPECT &&
	begin trace=fjob name=$long id=1 parent=0 $f
	begin trace=fjob name=nul�here id=2 parent=1 $f
	end trace=fjob name=nul�here id=2 parent=1 $f
	end trace=fjob name=$long id=1 parent=0 $f
	messages=4 dropped_sum=0
	EXPECT
	test_cmp expect got
'

test_expect_success 'threads nest separately; a forked child is a new source' '
	cat >threads.py <<-\EOF &&
	import os, sys, threading
	import tally_trace
	t = tally_trace.Tracer(sys.argv[1], "py3")
	outer = t.begin("main")
	def work(n):
	    with t.span("w%d" % n):
	        with t.span("inner%d" % n):
	            pass
	ths = [threading.Thread(target=work, args=(i,)) for i in range(2)]
	for th in ths: th.start()
	for th in ths: th.join()
	pid = os.fork()
	if pid == 0:
	    with t.span("child"):
	        pass
	    t.close()
	    os._exit(0)
	assert os.waitpid(pid, 0)[1] == 0
	t.end(outer)
	print("parent=%d child=%d" % (os.getpid(), pid))
	t.close()
	EOF
	start_recv "ipc://$PWD/t.sock" got --count 12 --idle 300 &&
	"$PYTHON3" threads.py "ipc://$PWD/t.sock" >out &&
	wait_recv &&
	parent=$(sed -n "s/^parent=\([0-9]*\) .*/\1/p" out) &&
	child=$(sed -n "s/.* child=//p" out) &&
	# every thread span nests under its own w span, tid not the main one
	for n in 0 1; do
		grep "^begin .* name=w$n " got >w &&
		test $(wc -l <w) = 1 &&
		wid=$(sed -n "s/.* id=\([0-9]*\) .*/\1/p" w) &&
		wtid=$(sed -n "s/.* tid=\([0-9]*\) .*/\1/p" w) &&
		grep "name=w$n .* parent=0 pid=$parent tid=$wtid " w &&
		test "$wtid" != "$parent" &&
		grep "^begin .* name=inner$n .* parent=$wid pid=$parent tid=$wtid " got ||
		return 1
	done &&
	grep "^begin trace=py3 name=child id=[0-9]* parent=0 pid=$child tid=$child " got &&
	grep "^end trace=py3 name=child id=[0-9]* parent=0 pid=$child tid=$child " got &&
	grep "^end trace=py3 name=main id=1 parent=0 pid=$parent tid=$parent " got &&
	grep "^messages=12 dropped_sum=0$" got
'

# The C library refuses such arguments with EINVAL; the Python client
# used to raise struct.error into the application for ids out of range,
# and to send spans named "None" or "123".
test_expect_success 'bad arguments: no exception, nothing sent, 0 or False' '
	cat >bad.py <<-\EOF &&
	import sys
	import tally_trace
	t = tally_trace.Tracer(sys.argv[1], "py5")
	for name in (None, 123, 1.5, ["x"], "", b""):
	    assert t.begin(name) == 0, name
	    assert t.end_name(name) is False, name
	for sid in (-1, 0, 2**64, "x", 1.5, True, None):
	    assert t.end(sid) is False, sid
	with t.span(None):
	    pass
	@t.trace(None)
	def f():
	    return 7
	assert f() == 7
	sid = t.begin(b"bytes\xff")
	assert t.end(sid) is True
	assert t.end(2**64 - 1) is False
	print(t.stats())
	t.close()
	EOF
	start_recv "ipc://$PWD/t.sock" got --count 5 --idle 300 &&
	"$PYTHON3" bad.py "ipc://$PWD/t.sock" >out &&
	wait_recv &&
	cat >expect <<-EOF &&
	begin trace=py5 name=f
	end trace=py5 name=f
	begin trace=py5 name=bytes�
	end trace=py5 name=bytes�
	end trace=py5 name=
	messages=5 dropped_sum=0
	EOF
	sed "s/ id=.*//" got >got2 &&
	test_cmp expect got2 &&
	grep "^{.events.: 5, .dropped.: 0, .unreported.: 0}$" out
'

test_expect_success 'an sndhwm of 0 is the default, not unlimited' '
	"$PYTHON3" -c "import tally_trace
t = tally_trace.Tracer(\"tcp://127.0.0.1:1\", \"x\", sndhwm=0)
assert t._sndhwm == 10000, t._sndhwm
t.close()"
'

test_expect_success 'drops while no collector listens are carried to it' '
	cat >drops.py <<-\EOF &&
	import subprocess, sys, time, os
	import tally_trace
	ep, recv = sys.argv[1], sys.argv[2:]
	t = tally_trace.Tracer(ep, "py4", sndhwm=10)
	for i in range(500):
	    t.end(t.begin("early"))
	st = t.stats()
	assert st["events"] == 1000 and st["dropped"] >= 980, st
	# now a collector appears; drops ride on the next message through.
	# It waits for all that was queued and the 2 late events: with only
	# its 500 ms of idle it stopped before the late ones on a loaded
	# machine (this script sleeps 0.5 s, plus polling, before them)
	queued = st["events"] - st["dropped"]
	r = subprocess.Popen(recv + ["--count", str(queued + 2)])
	while not os.path.exists("ready"):
	    time.sleep(0.05)
	time.sleep(0.5)
	t.end(t.begin("late"))
	print(t.stats())
	t.close()
	r.wait()
	EOF
	rm -f ready &&
	"$PYTHON3" drops.py "ipc://$PWD/t.sock" "$PYTHON3" "$RECV" \
		"ipc://$PWD/t.sock" got --idle 500 --ready ready >out &&
	cat out got | tally_diag &&
	n=$(sed -n "s/^messages=\([0-9]*\) dropped_sum=\([0-9]*\)$/\1 + \2/p" got) &&
	test $(($n)) = 1002 &&
	! grep "^invalid" got
'


# pyzmq hidden: a package named zmq that fails to import, first on the path
test_expect_success 'without pyzmq: imports, warns once, counts events as dropped' '
	mkdir -p nozmq/zmq &&
	echo "raise ImportError(\"No module named zmq (hidden)\")" \
		>nozmq/zmq/__init__.py &&
	cat >nozmq.py <<-\EOF &&
	import tally_trace
	t = tally_trace.Tracer(None, "nz")
	with t.span("a"):
	    sid = t.begin("b")
	    assert sid and t.end(sid)
	assert tally_trace.begin("m")   # the default tracer: no second warning
	u = tally_trace.Tracer("ipc:///nonexistent/x", "nz2")
	u.begin("c")
	st = t.stats()
	print(st["events"], st["dropped"], st["unreported"])
	t.close()
	u.close()
	print("done")
	EOF
	PYTHONPATH=$PWD/nozmq:$PYTHONPATH "$PYTHON3" nozmq.py >out 2>err &&
	cat out err | tally_diag &&
	printf "4 4 4\ndone\n" >expect &&
	test_cmp expect out &&
	test $(grep -c "RuntimeWarning: tally_trace: cannot import zmq (No module named zmq (hidden)): tracing is off" err) = 1 &&
	test $(wc -l <err) -le 2
'


# A typo in TALLY_TRACE_ENDPOINT raised ZMQError out of the first call.
long=$(printf "%0200d" 0)
for ep in nonsense udp://h:1 ipc:// tcp://h tcp://127.0.0.1:99999 \
	inproc://x "ipc:///$long"; do
	test_expect_success "a malformed endpoint ($(echo "$ep" | cut -c1-24)): no exception, one warning, events dropped" '
		cat >badep.py <<-\EOF &&
		import tally_trace
		with tally_trace.span("a"):
		    tally_trace.begin("b")
		t = tally_trace.Tracer()
		t.begin("c")
		print(tally_trace.default_tracer().stats()["dropped"],
		      t.close()["dropped"])
		EOF
		TALLY_TRACE_ENDPOINT="$ep" "$PYTHON3" badep.py >out 2>err &&
		cat out err | tally_diag &&
		echo "3 1" >expect &&
		test_cmp expect out &&
		test $(grep -c "RuntimeWarning: tally_trace: endpoint .* tracing is off, events are counted as dropped" err) = 1 &&
		grep -F "$(echo "$ep" | cut -c1-24)" err
	'
done

test_expect_success 'close sends a CLOSE with what was queued, returns the final counts' '
	cat >close.py <<-\EOF &&
	import sys, tally_trace
	t = tally_trace.Tracer(sys.argv[1], "pyc")
	for i in range(100):
	    t.end(t.begin("x"))
	st = t.close()
	print(st["events"], st["dropped"], st["unreported"], st["discarded_max"])
	print(t.stats() == st, t.close() == st)
	EOF
	start_recv "ipc://$PWD/t.sock" got --count 200 --idle 500 &&
	"$PYTHON3" close.py "ipc://$PWD/t.sock" >out &&
	wait_recv &&
	printf "200 0 0 0\nTrue True\n" >expect &&
	test_cmp expect out &&
	grep "^messages=200 dropped_sum=0$" got &&
	test $(wc -l <got.close) = 1 &&
	grep "^close trace=pyc queued=200 first=[1-9][0-9]* .* dropped=0$" got.close
'

test_expect_success 'a collector that never reads: close says what it may have discarded' '
	cat >stalled.py <<-\EOF &&
	import sys, zmq, tally_trace
	ctx = zmq.Context()
	pull = ctx.socket(zmq.PULL)
	pull.setsockopt(zmq.RCVHWM, 10)
	pull.bind(sys.argv[1])
	t = tally_trace.Tracer(sys.argv[1], "pys", linger_ms=300, sndhwm=50)
	# 1000-byte names: the kernel buffers a few hundred, then the queue
	# of 50 stays full (small ones could all fit in the kernel buffer)
	for i in range(5000):
	    t.end(t.begin("x" * 1000))
	st = t.close()
	queued = st["events"] - st["dropped"]
	print(st["events"], st["unreported"], st["dropped"] > 0,
	      0 < st["discarded_max"] <= queued)
	pull.close(0)
	ctx.term()
	EOF
	"$PYTHON3" stalled.py "ipc://$PWD/s.sock" >out &&
	echo "10000 0 True True" >expect &&
	test_cmp expect out
'

test_done
