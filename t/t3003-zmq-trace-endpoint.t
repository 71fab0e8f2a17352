#!/bin/sh
test_description='zmq_trace endpoints: defaults, socket file modes, path
length, stale files replaced, live collectors never taken over'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

# conf FILE ENDPOINT [OPTION...] - zmq_trace on ENDPOINT -> capture FILE.out
conf() {
	c_file=$1 c_ep=$2
	shift 2
	cat >"$c_file.conf" <<-EOF
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "$c_ep"; $* }; };
	outputs = { cap = { plugin = "capture"; path = "$c_file.out"; }; };
	pipelines = { p = { from = ["tr"]; to = ["cap"]; }; };
	EOF
}

test_expect_success 'system collector: socket file 0666 (every user may send)' '
	conf sys "$EP" &&
	start_tallyd sys.conf &&
	test "$(stat -c %a "$SOCKDIR/trace.sock")" = 666 &&
	"$TRACE_EMIT" "$EP" t begin:a endid:a >/dev/null &&
	zt_lines sys.out 2
'

test_expect_success 'a second tallyd on the same endpoint refuses to start' '
	conf two "$EP" &&
	test_must_fail tallyd -c two.conf --foreground 2>two.err &&
	grep "zmq_trace\[tr\]: endpoint $EP: in use by another tallyd" two.err &&
	"$TRACE_EMIT" "$EP" t begin:b endid:b >/dev/null &&
	zt_lines sys.out 4 &&
	grep "name=b" sys.out
'

test_expect_success 'shutdown removes the socket file' '
	stop_tallyd &&
	! test -e "$SOCKDIR/trace.sock"
'

test_expect_success 'group option: mode 0660 and the group set' '
	grp=$(id -gn) &&
	conf grp "$EP" "group = \"$grp\";" &&
	start_tallyd grp.conf &&
	test "$(stat -c "%a %G" "$SOCKDIR/trace.sock")" = "660 $grp" &&
	stop_tallyd
'

test_expect_success 'an unknown group is a configuration error' '
	conf nogrp "$EP" "group = \"no-such-group-t3003\";" &&
	test_must_fail tallyd -c nogrp.conf --foreground 2>nogrp.err &&
	grep "^nogrp.conf:2: error: inputs.tr: group no-such-group-t3003: no such group$" nogrp.err
'

test_expect_success 'a path longer than sun_path allows is a clear error' '
	long=$SOCKDIR/$(printf "%0120d" 0).sock &&
	conf long "ipc://$long" &&
	test_must_fail tallyd -c long.conf --foreground 2>long.err &&
	grep "^long.conf:2: error: inputs.tr: endpoint ipc://$long: the socket path is ${#long} bytes, a unix socket allows at most 107; choose a shorter path$" long.err
'

test_expect_success 'endpoints that cannot be bound as asked are refused' '
	conf rel "ipc://rel.sock" &&
	test_must_fail tallyd -c rel.conf --foreground 2>rel.err &&
	grep "the ipc path must be absolute" rel.err &&
	conf inproc "inproc://x" &&
	test_must_fail tallyd -c inproc.conf --foreground 2>inproc.err &&
	grep "endpoint inproc://x: use ipc:///path or tcp://host:port" inproc.err
'

test_expect_success 'a regular file at the path is left alone' '
	echo precious >"$SOCKDIR/trace.sock" &&
	conf file "$EP" &&
	test_must_fail tallyd -c file.conf --foreground 2>file.err &&
	grep "$SOCKDIR/trace.sock exists and is not a socket" file.err &&
	echo precious >expect &&
	test_cmp expect "$SOCKDIR/trace.sock" &&
	rm "$SOCKDIR/trace.sock"
'

test_expect_success PYZMQ 'a stale socket file (nobody listening) is replaced' '
	"$PYTHON3" -c "import socket
s = socket.socket(socket.AF_UNIX)
s.bind(\"$SOCKDIR/trace.sock\")" &&
	test -S "$SOCKDIR/trace.sock" &&
	conf stale "$EP" &&
	start_tallyd stale.conf &&
	grep "zmq_trace\[tr\]: replacing stale socket file $SOCKDIR/trace.sock" tallyd.log &&
	"$TRACE_EMIT" "$EP" t begin:a endid:a >/dev/null &&
	zt_lines stale.out 2 &&
	stop_tallyd
'

test_expect_success PYZMQ 'a live foreign collector (a pyzmq PULL socket) is not taken over' '
	rm -f ready &&
	"$PYTHON3" -c "import zmq, time
c = zmq.Context(); s = c.socket(zmq.PULL); s.bind(\"$EP\")
open(\"ready\", \"w\").close(); time.sleep(30)" &
	pypid=$! &&
	wait_for "test -e ready" &&
	conf foreign "$EP" &&
	test_must_fail tallyd -c foreign.conf --foreground 2>foreign.err &&
	grep "zmq_trace\[tr\]: endpoint $EP: a collector is listening there: not taking it over" foreign.err &&
	test -S "$SOCKDIR/trace.sock"
	rc=$?
	kill $pypid && wait $pypid
	test $rc = 0
'

test_expect_success 'abstract ipc endpoint' '
	ab="ipc://@tally-t3003-$$" &&
	conf abs "$ab" &&
	start_tallyd abs.conf &&
	"$TRACE_EMIT" "$ab" t begin:a endid:a >/dev/null &&
	zt_lines abs.out 2 &&
	stop_tallyd
'

test_expect_success 'tcp endpoint on loopback' '
	port=$(free_port) &&
	conf tcp "tcp://127.0.0.1:$port" &&
	start_tallyd tcp.conf &&
	port_listening $port &&
	"$TRACE_EMIT" "tcp://127.0.0.1:$port" t begin:a endid:a >/dev/null &&
	zt_lines tcp.out 2 &&
	stop_tallyd
'

# check_refuses NAME ENDPOINT MESSAGE [OPTION...] - tallyd --check-config
# refuses an endpoint init would refuse (or bind otherwise than asked),
# with the instance's file:line
check_refuses() {
	cr_name=$1 cr_ep=$2 cr_msg=$3
	shift 3
	conf "$cr_name" "$cr_ep" "$@" &&
	test_must_fail tallyd --check-config -c "$cr_name.conf" 2>"$cr_name.err" &&
	grep "^$cr_name.conf:2: error: inputs.tr: $cr_msg" "$cr_name.err" ||
	{ cat "$cr_name.err"; false; }
}

test_expect_success '--check-config refuses what start-up would refuse' '
	long=$SOCKDIR/$(printf "%0120d" 0).sock &&
	check_refuses empty "" "endpoint is empty: use ipc:///path or tcp://host:port$" &&
	check_refuses scheme "blah://x" "endpoint blah://x: use ipc:///path or tcp://host:port$" &&
	check_refuses inproc2 "inproc://x" "endpoint inproc://x: use ipc:///path or tcp://host:port$" &&
	check_refuses rel2 "ipc://rel.sock" "endpoint ipc://rel.sock: the ipc path must be absolute" &&
	check_refuses noname "ipc://@" "endpoint ipc://@: the ipc path must be absolute" &&
	check_refuses long2 "ipc://$long" "endpoint ipc://$long: the socket path is ${#long} bytes, a unix socket allows at most 107" &&
	check_refuses group2 "$EP" "group no-such-group-t3003: no such group$" \
		"group = \"no-such-group-t3003\";" &&
	tallyd --check-config -c sys.conf 2>ok.err &&
	grep "0 errors" ok.err
'

# libzmq took port 99999 as another port, and -5 as a port
test_expect_success '--check-config refuses tcp ports out of range' '
	for p in 99999 -5 65536 "" x1 0x10; do
		check_refuses port "tcp://127.0.0.1:$p" "endpoint tcp://127.0.0.1:$p: use tcp://host:port with a port from 1 to 65535, or \* for any free port$" ||
		return 1
	done &&
	check_refuses noport "tcp://127.0.0.1" "endpoint tcp://127.0.0.1: use tcp://host:port" &&
	check_refuses nohost "tcp://:5" "endpoint tcp://:5: use tcp://host:port" &&
	conf p1 "tcp://127.0.0.1:65535" &&
	tallyd --check-config -c p1.conf &&
	conf p2 "tcp://[::1]:1" &&
	tallyd --check-config -c p2.conf
'

test_expect_success '--check-config --user refuses a tcp listener off loopback' '
	for h in 0.0.0.0 "*" eth0 128.0.0.1 127.example.org; do
		conf uchk "tcp://$h:5555" &&
		test_must_fail tallyd --user --check-config -c uchk.conf 2>uchk.err &&
		grep -F "uchk.conf:2: error: inputs.tr: endpoint tcp://$h:5555: a user collector listens on loopback only" uchk.err ||
		return 1
	done &&
	for h in 127.0.0.1 127.1.2.3 localhost "[::1]" lo; do
		conf uok "tcp://$h:5555" &&
		tallyd --user --check-config -c uok.conf || return 1
	done
'

test_expect_success 'tcp://host:* logs the port it was given, and listens there' '
	conf any "tcp://127.0.0.1:*" &&
	start_tallyd any.conf &&
	port=$(sed -n "s|.*zmq_trace\[tr\]: listening on tcp://127.0.0.1:\([0-9][0-9]*\)$|\1|p" tallyd.log) &&
	test -n "$port" &&
	port_listening $port &&
	"$TRACE_EMIT" "tcp://127.0.0.1:$port" t begin:a endid:a >/dev/null &&
	zt_lines any.out 2 &&
	stop_tallyd
'

test_expect_success 'user collector: tcp only on loopback' '
	port=$(free_port) &&
	conf utcp "tcp://0.0.0.0:$port" &&
	XDG_RUNTIME_DIR=$PWD/xdg test_must_fail tallyd --user -c utcp.conf \
		--foreground 2>utcp.err &&
	grep "a user collector listens on loopback only" utcp.err
'

test_expect_success 'user collector: default endpoint, socket 0600 in a 0700 dir, spans of the command drained at exit' '
	unset TALLY_TRACE_ENDPOINT SLURM_JOB_ID FLUX_JOB_ID PBS_JOBID LSB_JOBID \
		PMIX_RANK OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID \
		FLUX_TASK_RANK &&
	cat >user.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; }; };
	outputs = { cap = { plugin = "capture"; path = "user.out"; }; };
	pipelines = { p = { from = ["tr"]; to = ["cap"]; }; };
	EOF
	rt=$SOCKDIR/xdg &&
	XDG_RUNTIME_DIR=$rt tallyd --user -c user.conf -- sh -c "
		stat -c %a \"$rt/tally\" >dirmode &&
		echo \$PPID >tpid &&
		stat -c %a \"$rt/tally/cmd-\$PPID/trace.sock\" >sockmode &&
		\"$TRACE_EMIT\" - job7 begin:a begin:b endid:b endid:a >emit.out
	" 2>user.log &&
	echo 700 >expect && test_cmp expect dirmode &&
	echo 600 >expect && test_cmp expect sockmode &&
	grep "listening on ipc://$rt/tally/cmd-$(cat tpid)/trace.sock" user.log &&
	pid=$(sed -n "s/^sent=4 .* pid=\([0-9]*\)$/\1/p" emit.out) &&
	s="host=$HOST pid=$pid tid=$pid rank=-1 flags=0" &&
	cat >expect <<-EOF &&
	span begin trace=job7 name=a id=1 parent=0 depth=0 $s
	span begin trace=job7 name=b id=2 parent=1 depth=1 $s
	span end trace=job7 name=b id=2 parent=1 depth=1 $s
	span end trace=job7 name=a id=1 parent=0 depth=0 $s
	EOF
	zt_ids <user.out >got &&
	test_cmp expect got &&
	! test -e "$rt/tally/cmd-$(cat tpid)"
'

test_done
