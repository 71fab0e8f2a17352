#!/bin/sh
test_description='zmq_trace when open files run out: 114 connections to a
tallyd limited to 64 descriptors are refused and counted, not fatal'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

require_cmd curl
zt_require_pyzmq

# libzmq 4.3.4 aborted here ("Too many open files
# (src/ipc_listener.cpp:325)") when its I/O thread's accept() failed with
# EMFILE: any local user could kill the system collector this way.

PORT=$(free_port)
cat >fd.conf <<EOF
global = { log_level = "info"; };
inputs = {
	tr = { plugin = "zmq_trace"; endpoint = "$EP"; check_interval = 0.1; };
	self = { plugin = "self"; interval = 0.1; };
};
outputs = {
	cap = { plugin = "capture"; path = "spans.out"; };
	health = { plugin = "capture"; path = "self.out"; };
	prom = { plugin = "prometheus"; listen = "127.0.0.1:$PORT"; };
};
pipelines = {
	spans = { from = ["tr"]; to = ["cap"]; };
	h = { from = ["self"]; to = ["health", "prom"]; };
};
EOF

# tallyd with 64 open files at most, soft and hard (ulimit -n 64)
cat >limited-tallyd <<EOF
#!/bin/sh
ulimit -n 64 || exit 1
exec "$TALLYD" "\$@"
EOF
chmod +x limited-tallyd

# sockets - how many sockets tallyd holds
sockets() {
	ls -l /proc/$TALLYD_PID/fd | grep -c "socket:"
}

# refused - connections_refused of instance tr in self.out, 0 if none
refused() {
	sed -n "s/^counter tally_events_total{event=\"connections_refused\",instance=\"tr\",kind=\"input\",plugin=\"zmq_trace\"} //p" \
		self.out | tail -n1 | grep . || echo 0
}

test_expect_success 'start tallyd with ulimit -n 64, and a sender' '
	TALLYD=$PWD/limited-tallyd &&
	start_tallyd fd.conf &&
	grep "^Max open files  *64  *64 " /proc/$TALLYD_PID/limits &&
	rm -f go &&
	{ PYTHONPATH="$top_srcdir/contrib/python" "$PYTHON3" -c "
import os, time, tally_trace
t = tally_trace.Tracer(\"$EP\", \"fd\")
t.begin(\"held\")
while not os.path.exists(\"go\"):
    time.sleep(0.05)
t.end_name(\"held\")
t.close()
" & } &&
	echo $! >sender.pid &&
	zt_lines spans.out 1 &&
	grep "name=held" spans.out
'

test_expect_success '114 plain unix connections: tallyd refuses what it cannot take' '
	before=$(sockets) &&
	rm -f release connected &&
	{ "$PYTHON3" -c "
import os, socket, time
ss = []
for i in range(114):
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.connect(\"$SOCKDIR/trace.sock\")
    ss.append(s)
open(\"connected\", \"w\").close()
while not os.path.exists(\"release\"):
    time.sleep(0.05)
" & } &&
	echo $! >flood.pid &&
	wait_for "test -e connected" &&
	wait_for "test \$((\$(sockets) - before + \$(refused))) = 114" &&
	admitted=$(($(sockets) - before)) &&
	tally_diag "admitted $admitted of 114 connections, refused $(refused)" &&
	test $admitted -gt 0 && test $(refused) -gt 0 &&
	kill -0 $TALLYD_PID &&
	grep "zmq_trace\[tr\]: refused [0-9]* connections: open files are running out" tallyd.log
'

test_expect_success 'scrapes are served, with the refusals counted' '
	n=$(refused) &&
	curl -sS --max-time 10 -o page http://127.0.0.1:$PORT/metrics &&
	grep "^tally_events_total{event=\"connections_refused\",instance=\"tr\",kind=\"input\",plugin=\"zmq_trace\"} $n$" page
'

test_expect_success 'the sender connected before is still served' '
	touch go &&
	wait $(cat sender.pid) &&
	zt_lines spans.out 2 &&
	grep "^span end .*name=held" spans.out
'

test_expect_success 'once descriptors are free again, new senders get through' '
	touch release &&
	wait $(cat flood.pid) &&
	"$TRACE_EMIT" "$EP" fd begin:after endid:after >/dev/null &&
	zt_lines spans.out 4 &&
	grep "^span end .*name=after" spans.out &&
	stop_tallyd
'

test_done
