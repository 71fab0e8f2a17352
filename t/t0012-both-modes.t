#!/bin/sh
test_description='a system and a user collector on one node at once: ports, sockets, pid files, traces'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

EMIT=$top_builddir/t/trace-emit
# sockets: keep their paths short for sun_path
tally_sock_dir s || exit 1
S=$TALLY_SOCK_DIR
mkdir -p "$S/sys" "$S/xdg" || exit 1
SYS_EP=ipc://$S/sys/trace.sock

test_expect_success 'start the system collector on port P, its trace socket, its pid file' '
	port=$(free_port) &&
	cat >sys.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "$SYS_EP"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["tr"]; to = ["prom"]; }; };
	EOF
	TALLY_RUNTIME_DIR=$S/sys start_tallyd --log sys.log \
		--wait "port_listening $port" sys.conf --pid-file="$S/sys/tallyd.pid" &&
	sys_pid=$TALLYD_PID &&
	test "$(cat "$S/sys/tallyd.pid")" = $sys_pid
'

# The job's configuration names the same port and the default trace socket
test_expect_success 'a traced job under tallyd --user --: its own port, socket and lock' '
	cat >user.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["tr"]; to = ["prom"]; }; };
	EOF
	XDG_RUNTIME_DIR=$S/xdg SLURM_JOB_ID=77 TALLY_TRACE_ENDPOINT=$SYS_EP \
		tallyd --user -c user.conf -- sh -c "
			echo \$TALLY_TRACE_ENDPOINT >job.ep &&
			cat \"$S/xdg/tally/job-77/listen\" >job.listen &&
			cat \"$S/xdg/tally/job-77/tallyd.lock\" >job.lock &&
			\"$EMIT\" - - begin:in_job end:in_job" >job.out 2>job.err &&
	echo "ipc://$S/xdg/tally/job-77/trace.sock" >ep.expect &&
	test_cmp ep.expect job.ep &&
	grep "^prom 127.0.0.1:[0-9]*$" job.listen &&
	! grep "^prom 127.0.0.1:$port$" job.listen &&
	test -s job.lock && ! test "$(cat job.lock)" = $sys_pid &&
	grep "sent=2 dropped=0 unreported=0" job.out
'

test_expect_success 'a program outside the job, with the same environment, reports to the system collector' '
	SLURM_JOB_ID=77 TALLY_TRACE_ENDPOINT=$SYS_EP \
		"$EMIT" - - begin:outside end:outside >out.out &&
	grep "sent=2 dropped=0 unreported=0" out.out &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >sys.page &&
		  grep -q \"^tally_trace_region_seconds_total{.*region=\\\"outside\\\"\" sys.page"
'

test_expect_success 'the job'"'"'s spans went to the job'"'"'s collector only' '
	grep "^tally_trace_region_seconds_total{.*jobid=\"77\".*region=\"in_job\"" tally-77/metrics.prom &&
	! grep "region=\"outside\"" tally-77/metrics.prom &&
	! grep "region=\"in_job\"" sys.page &&
	grep "tally_zmq_messages_total\|tally_trace" sys.page >/dev/null
'

test_expect_success 'both collectors ran together: the system one is still up, its files in place' '
	kill -0 $sys_pid &&
	test "$(cat "$S/sys/tallyd.pid")" = $sys_pid &&
	test -S "$S/sys/trace.sock" &&
	! test -e "$S/xdg/tally/job-77/trace.sock" &&
	stop_tallyd $sys_pid &&
	! test -e "$S/sys/tallyd.pid"
'

test_done
