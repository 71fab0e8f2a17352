#!/bin/sh
test_description='zmq_trace: spans from the contrib Python client
(contrib/python/tally_trace.py) through tallyd'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

PYTHONPATH=$top_srcdir/contrib/python
export PYTHONPATH

zt_require_pyzmq

test_expect_success 'start tallyd' '
	zt_config py.conf &&
	start_tallyd py.conf
'

# Each thread sends on its own socket: the order holds per thread only.
test_expect_success 'context manager, decorator, begin/end, a second thread' '
	cat >app.py <<-\EOF &&
	import os, sys, threading
	import tally_trace

	tr = tally_trace.Tracer(sys.argv[1], "py1")

	@tr.trace
	def step():
	    with tr.span("inner"):
	        pass

	def worker():
	    with tr.span("thread"):
	        pass
	    print("tid", threading.get_native_id())

	with tr.span("main"):
	    step()
	    sid = tr.begin("explicit")
	    tr.end(sid)
	    t = threading.Thread(target=worker)
	    t.start()
	    t.join()
	tr.close()
	print("pid", os.getpid())
	EOF
	SLURM_PROCID=5 "$PYTHON3" app.py "$EP" >app.out &&
	pid=$(sed -n "s/^pid //p" app.out) &&
	tid=$(sed -n "s/^tid //p" app.out) &&
	zt_lines spans.out 10 &&
	m="host=$HOST pid=$pid tid=$pid rank=5 flags=0" &&
	t="host=$HOST pid=$pid tid=$tid rank=5 flags=0" &&
	cat >expect <<-EOF &&
	span begin trace=py1 name=main id=1 parent=0 depth=0 $m
	span begin trace=py1 name=step id=2 parent=1 depth=1 $m
	span begin trace=py1 name=inner id=3 parent=2 depth=2 $m
	span end trace=py1 name=inner id=3 parent=2 depth=2 $m
	span end trace=py1 name=step id=2 parent=1 depth=1 $m
	span begin trace=py1 name=explicit id=4 parent=1 depth=1 $m
	span end trace=py1 name=explicit id=4 parent=1 depth=1 $m
	span end trace=py1 name=main id=1 parent=0 depth=0 $m
	span begin trace=py1 name=thread id=5 parent=0 depth=0 $t
	span end trace=py1 name=thread id=5 parent=0 depth=0 $t
	EOF
	{ grep " tid=$pid " spans.out && grep " tid=$tid " spans.out; } >got &&
	test $(wc -l <spans.out) = 10 &&
	test_cmp expect got
'

test_expect_success 'nothing dropped or malformed' '
	stop_tallyd &&
	grep "stopped: 10 messages received, 0 malformed, 0 dropped by clients, 0 spans still open" tallyd.log
'

test_done
