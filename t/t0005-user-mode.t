#!/bin/sh
test_description='tallyd --user -- CMD: a job-private collector around a command'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

test_expect_success 'setup' '
	cat >u.conf <<-EOF
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	outputs = { o = { plugin = "capture"; path = "u.out"; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
'

# The command runs 1 s: the next test wants two reads (0.05 s apart) from
# while it ran, and 0.3 s left little for a slow start on a busy machine.
test_expect_success 'the command gets the endpoint; tallyd exits with its status' '
	unset TALLY_TRACE_ENDPOINT SLURM_JOB_ID FLUX_JOB_ID PBS_JOBID LSB_JOBID &&
	XDG_RUNTIME_DIR=$PWD/xdg &&
	export XDG_RUNTIME_DIR &&
	test_expect_code 3 tallyd --user -c u.conf -- \
		sh -c "echo \$TALLY_TRACE_ENDPOINT >ep; sleep 1; exit 3" &&
	echo "ipc://$PWD/xdg/tally/trace.sock" >ep.expect &&
	test_cmp ep.expect ep &&
	test "$(stat -c %a xdg/tally)" = 700
'

test_expect_success 'records collected while the command ran are flushed' '
	test $(wc -l <u.out) -ge 2 &&
	tail -n1 u.out | grep "^gauge test_counter_value{i=\"0\"} $(wc -l <u.out)$"
'

test_expect_success 'a job id gives the job its own runtime directory' '
	XDG_RUNTIME_DIR=$PWD/xdg SLURM_JOB_ID=4242 \
		tallyd --user -c u.conf -- sh -c "echo \$TALLY_TRACE_ENDPOINT >ep" &&
	echo "ipc://$PWD/xdg/tally/job-4242/trace.sock" >ep.expect &&
	test_cmp ep.expect ep
'

test_expect_success 'a job collector labels its metrics with the job id' '
	XDG_RUNTIME_DIR=$PWD/xdg FLUX_JOB_ID=f3x8 \
		tallyd --user --once -c u.conf &&
	tail -n1 u.out >last &&
	echo "gauge test_counter_value{i=\"0\",jobid=\"f3x8\"} 1" >last.expect &&
	test_cmp last.expect last
'

test_expect_success 'SIGTERM goes to the command; tallyd exits with its status' '
	"$TALLYD" --user -c u.conf -- sh -c "trap \"exit 7\" TERM; echo \$\$ >cmd.pid; sleep 30 & wait" &
	tpid=$! &&
	wait_for "test -s cmd.pid" &&
	kill -TERM $tpid &&
	test_expect_code 7 wait $tpid &&
	! kill -0 $(cat cmd.pid) 2>/dev/null
'

test_expect_success 'a command that cannot run exits 127' '
	test_expect_code 127 tallyd --user -c u.conf -- ./no-such-command 2>err &&
	grep "cannot run ./no-such-command" err
'

test_expect_success 'a command without --user is refused' '
	test_expect_code 2 tallyd -c u.conf -- true 2>err &&
	grep "a command to run goes after --user --" err
'

test_expect_success '--user -- with no command is refused' '
	test_expect_code 2 tallyd --user -c u.conf -- 2>err &&
	grep "no command after --" err
'

test_done
