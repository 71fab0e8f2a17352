#!/bin/sh
test_description='zmq_trace omnistat_endpoint: a second ipc endpoint, bound
only when it is free and not another user'"'"'s; otherwise one log line and
the main endpoint still runs'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

zt_require_pyzmq

# Omnistat's tracer sends to ipc:///tmp/omnistat_trace; the tests use a
# path of their own, so that they never touch a real one.
OPATH=$SOCKDIR/omnistat_trace
OEP=ipc://$OPATH
test "$(id -u)" = 0 && test_set_prereq ROOT

# conf NAME [OPTION...] - zmq_trace on $EP plus the given options ->
# capture NAME.out
conf() {
	c_name=$1
	shift
	cat >"$c_name.conf" <<-EOF
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "$EP"; $* }; };
	outputs = { cap = { plugin = "capture"; path = "$c_name.out"; }; };
	pipelines = { p = { from = ["tr"]; to = ["cap"]; }; };
	EOF
}

# omnistat ENDPOINT LABEL - Omnistat's tracer: a start and an end of LABEL
omnistat() {
	now=$(date +%s)000 &&
	printf "json [\"start\", %s, \"7\", \"%s\"]\njson [\"end\", %s, \"7\", \"%s\"]\n" \
		"$now" "$2" "$now" "$2" |
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t30-zmq-send.py" "$1"
}

# stale_socket PATH - a socket file nobody listens on
stale_socket() {
	"$PYTHON3" -c "import socket
s = socket.socket(socket.AF_UNIX)
s.bind(\"$1\")" &&
	test -S "$1"
}

test_expect_success 'user collector: binds the path when it is free' '
	conf free "omnistat_endpoint = \"$OEP\";" &&
	start_tallyd free.conf --user &&
	grep "zmq_trace\[tr\]: listening on $EP$" tallyd.log &&
	grep "zmq_trace\[tr\]: listening on $OEP$" tallyd.log &&
	test "$(stat -c %a "$OPATH")" = 600 &&
	omnistat "$OEP" solver &&
	"$TRACE_EMIT" "$EP" t begin:native endid:native >/dev/null &&
	zt_lines free.out 4 &&
	grep "^span begin trace=7 name=solver " free.out &&
	grep "^span end trace=t name=native " free.out
'

test_expect_success 'shutdown removes both socket files' '
	stop_tallyd &&
	! test -e "$OPATH" &&
	! test -e "$SOCKDIR/trace.sock"
'

test_expect_success 'a stale socket of the same user is replaced' '
	stale_socket "$OPATH" &&
	conf stale "omnistat_endpoint = \"$OEP\";" &&
	start_tallyd stale.conf --user &&
	grep "zmq_trace\[tr\]: replacing stale socket file $OPATH$" tallyd.log &&
	omnistat "$OEP" again &&
	zt_lines stale.out 2 &&
	stop_tallyd
'

test_expect_success 'a live collector there is left alone: one line, main endpoint runs' '
	rm -f ready &&
	{ "$PYTHON3" -c "import zmq, time, os
c = zmq.Context(); s = c.socket(zmq.PULL); s.bind(\"$OEP\")
open(\"ready\", \"w\").close()
while not os.path.exists(\"done\"):
    time.sleep(0.05)
" & } &&
	echo $! >py.pid &&
	wait_for "test -e ready" &&
	ino=$(stat -c %i "$OPATH") &&
	conf live "omnistat_endpoint = \"$OEP\";" &&
	start_tallyd live.conf --user &&
	grep "zmq_trace\[tr\]: omnistat_endpoint $OEP: a collector is listening there: not taking it over; receiving on $EP only$" tallyd.log &&
	test $(grep -c "omnistat_endpoint" tallyd.log) = 1 &&
	test "$(stat -c %i "$OPATH")" = "$ino" &&
	"$TRACE_EMIT" "$EP" t begin:main endid:main >/dev/null &&
	zt_lines live.out 2 &&
	stop_tallyd &&
	test "$(stat -c %i "$OPATH")" = "$ino" &&
	touch done &&
	wait $(cat py.pid) &&
	rm -f done
'

test_expect_success ROOT 'a socket of another user is never replaced, even stale' '
	rm -f "$OPATH" &&
	stale_socket "$OPATH" &&
	chown nobody "$OPATH" &&
	conf other "omnistat_endpoint = \"$OEP\";" &&
	start_tallyd other.conf --user &&
	grep "zmq_trace\[tr\]: omnistat_endpoint $OEP: $OPATH is a socket of another user (uid [0-9]*): not taking it over; receiving on $EP only$" tallyd.log &&
	test "$(stat -c %U "$OPATH")" = nobody &&
	"$TRACE_EMIT" "$EP" t begin:main endid:main >/dev/null &&
	zt_lines other.out 2 &&
	stop_tallyd &&
	test "$(stat -c %U "$OPATH")" = nobody &&
	rm -f "$OPATH"
'

test_expect_success 'a file that is not a socket is left alone' '
	echo precious >"$OPATH" &&
	conf file "omnistat_endpoint = \"$OEP\";" &&
	start_tallyd file.conf --user &&
	grep "zmq_trace\[tr\]: omnistat_endpoint $OEP: $OPATH exists and is not a socket; receiving on $EP only$" tallyd.log &&
	stop_tallyd &&
	echo precious >expect &&
	test_cmp expect "$OPATH" &&
	rm -f "$OPATH"
'

test_expect_success 'another tallyd holding it: the second one carries on without it' '
	conf first "omnistat_endpoint = \"$OEP\";" &&
	start_tallyd --log first.log first.conf --user &&
	first=$TALLYD_PID &&
	cat >second.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "ipc://$SOCKDIR/second.sock"; omnistat_endpoint = "$OEP"; }; };
	outputs = { cap = { plugin = "capture"; path = "second.out"; }; };
	pipelines = { p = { from = ["tr"]; to = ["cap"]; }; };
	EOF
	# a user'"'"'s second collector of its own (one runtime dir each)
	TALLY_RUNTIME_DIR=$PWD/second-rt && export TALLY_RUNTIME_DIR &&
	start_tallyd --log second.log second.conf --user &&
	unset TALLY_RUNTIME_DIR &&
	grep "zmq_trace\[tr\]: omnistat_endpoint $OEP: in use by another tallyd ($OPATH.lock is locked): not taking it over; receiving on ipc://$SOCKDIR/second.sock only$" second.log &&
	omnistat "$OEP" first &&
	zt_lines first.out 2 &&
	stop_tallyd &&
	stop_tallyd $first
'

test_expect_success 'system collector: binds nothing unless configured to' '
	conf sys &&
	start_tallyd sys.conf &&
	! test -e "$OPATH" &&
	! grep omnistat tallyd.log &&
	stop_tallyd
'

test_expect_success '--check-config: omnistat_endpoint must be an ipc path' '
	conf bad "omnistat_endpoint = \"tcp://127.0.0.1:5555\";" &&
	test_must_fail tallyd --check-config -c bad.conf 2>bad.err &&
	grep "^bad.conf:2: error: inputs.tr: omnistat_endpoint tcp://127.0.0.1:5555: must be ipc:///path" bad.err &&
	conf rel "omnistat_endpoint = \"ipc://rel\";" &&
	test_must_fail tallyd --check-config -c rel.conf 2>rel.err &&
	grep "^rel.conf:2: error: inputs.tr: endpoint ipc://rel: the ipc path must be absolute" rel.err
'

test_done
