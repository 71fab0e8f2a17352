#!/bin/sh
test_description='tallyd --user -- CMD: a job-private collector around a command'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

TRACE_EMIT=$top_builddir/t/trace-emit
# the runtime dir holds a socket: keep its path short for sun_path
tally_sock_dir xdg || exit 1
RT=$TALLY_SOCK_DIR
XDG_RUNTIME_DIR=$RT
export XDG_RUNTIME_DIR
unset TALLY_TRACE_ID

test_expect_success 'setup' '
	cat >u.conf <<-EOF
	inputs = {
		a = { plugin = "counter"; interval = 0.05; };
		tr = { plugin = "zmq_trace"; };
	};
	outputs = { o = { plugin = "capture"; path = "u.out"; }; };
	pipelines = { p = { from = ["a", "tr"]; to = ["o"]; }; };
	EOF
'

# The command runs 1 s: the next test wants two reads (0.05 s apart) from
# while it ran, and 0.3 s left little for a slow start on a busy machine.
test_expect_success 'the command gets the endpoint bound, over an inherited one; tallyd exits with its status' '
	TALLY_TRACE_ENDPOINT=ipc:///elsewhere/trace.sock \
	test_expect_code 3 tallyd --user -c u.conf -- \
		sh -c "echo \$TALLY_TRACE_ENDPOINT >ep; echo \$PPID >tp;
			sleep 1; exit 3" &&
	echo "ipc://$RT/tally/cmd-$(cat tp)/trace.sock" >ep.expect &&
	test_cmp ep.expect ep &&
	test "$(stat -c %a "$RT/tally")" = 700 &&
	! test -e "$RT/tally/cmd-$(cat tp)"
'

test_expect_success 'records collected while the command ran are flushed' '
	grep -c "^gauge test_counter_value" u.out >n &&
	test $(cat n) -ge 2 &&
	grep "^gauge test_counter_value{i=\"0\"} $(cat n)$" u.out
'

test_expect_success 'a job id gives the job its own runtime directory' '
	SLURM_JOB_ID=4242 \
		tallyd --user -c u.conf -- sh -c "echo \$TALLY_TRACE_ENDPOINT >ep" &&
	echo "ipc://$RT/tally/job-4242/trace.sock" >ep.expect &&
	test_cmp ep.expect ep
'

test_expect_success 'a job collector labels its metrics with the job id' '
	FLUX_JOB_ID=f3x8 tallyd --user --once -c u.conf &&
	tail -n1 u.out >last &&
	echo "gauge test_counter_value{i=\"0\",jobid=\"f3x8\"} 1" >last.expect &&
	test_cmp last.expect last
'

# aggregate's group_by keeps label i alone: what it emits on its ticks is
# the filter's own record, and gets the job id all the same
test_expect_success 'records a filter makes on its ticks carry the job id too' '
	cat >ag.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	filters = { ag = { plugin = "aggregate"; interval = 0.1;
	                   group_by = ["i"]; }; };
	outputs = { o = { plugin = "capture"; path = "ag.out"; }; };
	pipelines = { p = { from = ["a"]; through = ["ag"]; to = ["o"]; }; };
	EOF
	SLURM_JOB_ID=ag1 tallyd --user -c ag.conf -- sh -c "sleep 0.5" &&
	grep "^interval gauge test_counter_value{" ag.out >ag.lines &&
	test -s ag.lines &&
	! grep -v "^interval gauge test_counter_value{i=\"0\",jobid=\"ag1\"} " ag.lines
'

# zmq_trace publishes what it bound: for tcp://127.0.0.1:*, the port the
# kernel chose, which no configuration could have told the command.
test_expect_success 'a tcp endpoint with a port chosen at bind: the command gets that port, and its traces arrive' '
	cat >tcp.conf <<-EOF &&
	inputs = { tr = { plugin = "zmq_trace";
			  endpoint = "tcp://127.0.0.1:*"; }; };
	outputs = { o = { plugin = "capture"; path = "tcp.out"; }; };
	pipelines = { p = { from = ["tr"]; to = ["o"]; }; };
	EOF
	tallyd --user -c tcp.conf -- sh -c "
		echo \$TALLY_TRACE_ENDPOINT >ep &&
		\"$TRACE_EMIT\" - - begin:solve endid:solve >emit.out
	" 2>tcp.err &&
	port=$(sed -n "s|^tcp://127.0.0.1:\([0-9][0-9]*\)$|\1|p" ep) &&
	test -n "$port" && test "$port" -gt 0 &&
	grep "zmq_trace\[tr\]: listening on tcp://127.0.0.1:$port$" tcp.err &&
	grep "^sent=2 dropped=0 " emit.out &&
	test $(grep -c "^span .* name=solve " tcp.out) = 2
'

# Ranks started outside a batch system would each default to "pid-N".
test_expect_success 'the processes of one command share one trace id: tallyd-PID outside a job' '
	tallyd --user -c u.conf -- sh -c "
		echo \$TALLY_TRACE_ID >tid &&
		echo tallyd-\$PPID >tid.expect &&
		\"$TRACE_EMIT\" -p 3 - - begin:r endid:r >emit.out
	" &&
	test_cmp tid.expect tid &&
	grep "^total sent=6 dropped=0" emit.out &&
	test $(grep -c "^span .* trace=$(cat tid) name=r " u.out) = 6 &&
	test $(sed -n "s/^span begin .* pid=\([0-9]*\) .*/\1/p" u.out |
		sort -u | wc -l) = 3
'

"$PYTHON3" -c "import zmq" 2>/dev/null && test_set_prereq PYZMQ
test_expect_success PYZMQ 'the Python client takes the same trace id and endpoint' '
	tallyd --user -c u.conf -- sh -c "
		PYTHONPATH=\"$top_srcdir/contrib/python\" \"$PYTHON3\" -c \"
import os, tally_trace
t = tally_trace.Tracer()
print(t.trace_id, os.environ[\\\"TALLY_TRACE_ENDPOINT\\\"])
t.close()
\" >py.out &&
		echo tallyd-\$PPID ipc://$RT/tally/cmd-\$PPID/trace.sock >py.expect
	" &&
	test_cmp py.expect py.out
'

test_expect_success 'in a job the trace id is the job id; a trace id the user set stays' '
	SLURM_JOB_ID=77 tallyd --user -c u.conf -- \
		sh -c "echo \$TALLY_TRACE_ID >tid" &&
	echo 77 >tid.expect && test_cmp tid.expect tid &&
	TALLY_TRACE_ID=mine tallyd --user -c u.conf -- \
		sh -c "echo \$TALLY_TRACE_ID >tid" &&
	echo mine >tid.expect && test_cmp tid.expect tid
'

# Two commands of one user outside a batch job shared one runtime dir:
# the second collector could not bind the socket, and its command's traces
# went to the first one.
test_expect_success 'two commands outside a job: a runtime dir each, each traces to its own collector' '
	for i in 1 2; do
		cat >two$i.conf <<-EOF || return 1
		inputs = { tr = { plugin = "zmq_trace"; }; };
		outputs = {
			prom = { plugin = "prometheus"; listen = "127.0.0.1:0"; };
			o = { plugin = "capture"; path = "two$i.out"; };
		};
		pipelines = { p = { from = ["tr"]; to = ["o", "prom"]; }; };
		EOF
	done &&
	rm -f up.* sent.* &&
	for i in 1 2; do
		"$TALLYD" --user -c two$i.conf -- sh -c "
			echo \$TALLY_TRACE_ENDPOINT >ep.$i; echo \$PPID >tp.$i
			cp \"$RT/tally/cmd-\$PPID/listen\" listen.$i
			touch up.$i; n=0
			until test -e up.1 && test -e up.2; do
				n=\$((n + 1)); test \$n -lt 400 || exit 1; sleep 0.05
			done
			\"$TRACE_EMIT\" - - begin:r$i endid:r$i >emit.$i
			touch sent.$i; n=0
			until test -e sent.1 && test -e sent.2; do
				n=\$((n + 1)); test \$n -lt 400 || exit 1; sleep 0.05
			done" 2>two.$i.err &
		eval "pid$i=\$!"
	done &&
	wait $pid1 && wait $pid2 &&
	for i in 1 2; do
		echo "ipc://$RT/tally/cmd-$(cat tp.$i)/trace.sock" >ep.expect &&
		test_cmp ep.expect ep.$i &&
		grep "^prom 127.0.0.1:" listen.$i &&
		test "$(grep -c "^span .* name=r$i " two$i.out)" = 2 &&
		! grep "left out" two.$i.err &&
		! test -e "$RT/tally/cmd-$(cat tp.$i)" || return 1
	done &&
	! test_cmp listen.1 listen.2 &&
	! grep "name=r2 " two1.out &&
	! grep "name=r1 " two2.out
'

test_expect_success 'a second collector of the same job says so and runs its command without one; the first keeps its files' '
	rm -f up.1 &&
	{ SLURM_JOB_ID=dup "$TALLYD" --user -c two1.conf -- sh -c "
		echo \$PPID >tp.1; touch up.1; n=0
		while test -e up.1; do
			n=\$((n + 1)); test \$n -lt 400 || exit 1; sleep 0.05
		done" 2>dup.1.err & } &&
	pid1=$! &&
	wait_for "test -e up.1" &&
	cp "$RT/tally/job-dup/listen" listen.1 &&
	SLURM_JOB_ID=dup test_expect_code 4 tallyd --user -c two2.conf -- \
		sh -c "exit 4" 2>dup.2.err &&
	grep "tallyd: error: another collector of job dup (tallyd pid $(cat tp.1)) runs in $RT/tally/job-dup: a second one would take over its sockets and listen file, so this one does not start" dup.2.err &&
	grep "running sh without it" dup.2.err &&
	test_cmp listen.1 "$RT/tally/job-dup/listen" &&
	test -S "$RT/tally/job-dup/trace.sock" &&
	"$TRACE_EMIT" "ipc://$RT/tally/job-dup/trace.sock" t begin:late endid:late &&
	rm up.1 &&
	wait $pid1 &&
	test "$(grep -c "^span .* name=late " two1.out)" = 2
'

# A unix socket path has at most 107 bytes: a long XDG_RUNTIME_DIR made
# the default trace endpoint, and with it the whole configuration, fail.
test_expect_success 'a runtime dir too long for a socket: the trace input is left out with one reason, the rest runs' '
	long=$PWD/$(printf "%0100d" 0) &&
	mkdir -p "$long" &&
	XDG_RUNTIME_DIR=$long tallyd --user --check-config -c u.conf &&
	XDG_RUNTIME_DIR=$long test_expect_code 5 tallyd --user -c u.conf -- \
		sh -c "sleep 0.2; exit 5" 2>long.err &&
	grep "^u.conf:3: error: zmq_trace\[tr\]: endpoint ipc://$long/tally/cmd-[0-9]*/trace.sock: the runtime directory.s socket path is [0-9]* bytes, a unix socket allows at most 107 (is XDG_RUNTIME_DIR long?): no trace input; set endpoint, or TALLY_RUNTIME_DIR to a shorter directory" long.err &&
	grep "zmq_trace\[tr\] left out: the command runs without it" long.err &&
	grep "warning: 1 instance of the collector did not start" long.err &&
	test $(grep -c "socket path is" long.err) = 1 &&
	grep "^gauge test_counter_value{i=\"0\"} 1$" u.out
'

test_expect_success 'SIGTERM goes to the command; tallyd exits with its status' '
	"$TALLYD" --user -c u.conf -- sh -c "trap \"exit 7\" TERM; echo \$\$ >cmd.pid; sleep 30 & wait" &
	tpid=$! &&
	wait_for "test -s cmd.pid" &&
	kill -TERM $tpid &&
	test_expect_code 7 wait $tpid &&
	! kill -0 $(cat cmd.pid) 2>/dev/null
'

# USR1 to a tallyd that wraps a command is the command's, not the
# on-demand trigger (t0009); QUIT and USR2 keep their meaning for it too.
for sig in INT QUIT USR1 USR2; do
	test_expect_success "SIG$sig goes to the command" '
		rm -f cmd.pid got &&
		{ "$TALLYD" --user -c u.conf -- sh -c "
			trap \"echo $sig >got; exit 9\" $sig
			echo \$\$ >cmd.pid; sleep 30 & wait" & } &&
		tpid=$! &&
		wait_for "test -s cmd.pid" &&
		kill -$sig $tpid &&
		test_expect_code 9 wait $tpid &&
		echo $sig >expect && test_cmp expect got
	'
done

# A terminal sends Ctrl-C to its whole foreground process group: tallyd
# passed it on again, so the command got it twice. The command counts the
# SIGINTs it gets; a SIGUSR1 it asks tallyd to pass on afterwards is a
# barrier: tallyd handles a SIGINT before a SIGUSR1 it got at the same
# time, and passes them on in that order.
cat >sigcount.py <<\EOF
import os, signal, sys, time
n = 0
done = False
def on_int(s, f):
    global n
    n += 1
def on_usr1(s, f):
    global done
    done = True
signal.signal(signal.SIGINT, on_int)
signal.signal(signal.SIGUSR1, on_usr1)
open("ready", "w").close()
deadline = time.monotonic() + 30
while n == 0 and time.monotonic() < deadline:
    time.sleep(0.02)
os.kill(os.getppid(), signal.SIGUSR1)
while not done and time.monotonic() < deadline:
    time.sleep(0.02)
with open("count", "w") as f:
    f.write("%d\n" % n)
sys.exit(3)
EOF
# onpty.py CMD... - run CMD on a new terminal, as its foreground job; type
# Ctrl-C once the file "ready" exists; exit with CMD's status
cat >onpty.py <<\EOF
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
sent = False
deadline = time.monotonic() + 30
out = open("pty.out", "wb")
while True:
    r, _, _ = select.select([fd], [], [], 0.05)
    if r:
        try:
            data = os.read(fd, 4096)
        except OSError:
            break
        if not data:
            break
        out.write(data)
    if not sent and os.path.exists("ready"):
        os.write(fd, b"\x03")
        sent = True
    if time.monotonic() > deadline:
        os.kill(pid, 9)
        break
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
EOF

test_expect_success 'Ctrl-C on a terminal reaches the command once' '
	rm -f ready count &&
	test_expect_code 3 "$PYTHON3" onpty.py "$TALLYD" --user -c u.conf -- \
		"$PYTHON3" sigcount.py &&
	tally_diag <pty.out &&
	echo 1 >expect &&
	test_cmp expect count
'

test_expect_success 'a signal passed on reaches the processes the command started' '
	rm -f gc.pid gc.term &&
	cat >gc.sh <<-\EOF &&
	trap "echo TERM >gc.term; exit 0" TERM
	echo $$ >gc.pid
	while :; do sleep 0.05; done
	EOF
	{ "$TALLYD" --user -c u.conf -- sh -c "sh gc.sh & wait" & } &&
	tpid=$! &&
	wait_for "test -s gc.pid" &&
	kill -TERM $tpid &&
	test_expect_code 143 wait $tpid &&
	wait_for "test -s gc.term" ||
	{ kill $(cat gc.pid) 2>/dev/null; false; }
'

test_expect_success 'a command killed by signal N: tallyd exits with 128+N' '
	test_expect_code 138 tallyd --user -c u.conf -- sh -c "kill -USR1 \$\$" &&
	test_expect_code 143 tallyd --user -c u.conf -- sh -c "kill -TERM \$\$"
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

# A telemetry problem never costs the user their job.
test_expect_success 'instances that fail to start are left out, loudly; the command runs with the rest' '
	"$PYTHON3" -c "
import socket, sys, time
s = socket.socket()
s.bind((\"127.0.0.1\", 0))
s.listen()
print(s.getsockname()[1], flush=True)
sys.stdout.close()
time.sleep(60)
" >taken.port &
	holder=$! &&
	wait_for "test -s taken.port" &&
	taken=$(cat taken.port) &&
	cat >part.conf <<-EOF &&
	global = { user_ports = "configured"; log = "syslog"; };
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	outputs = {
		good = { plugin = "capture"; path = "good.out"; };
		bad = { plugin = "capture"; path = "$PWD/no/such/dir/x"; };
		prom = { plugin = "prometheus"; listen = "127.0.0.1:$taken"; };
	};
	pipelines = { p = { from = ["a"]; to = ["good", "bad", "prom"]; }; };
	EOF
	tallyd --user -c part.conf -- sh -c "sleep 0.5; echo ran >ran; exit 5" 2>part.err
	status=$? &&
	kill $holder &&
	test $status = 5 &&
	echo ran >expect && test_cmp expect ran &&
	grep "part.conf:5: error: capture\[bad\]: init failed: No such file or directory" part.err &&
	grep "part.conf:5: warning: capture\[bad\] left out: the command runs without it" part.err &&
	grep "part.conf:6: error: prometheus\[prom\]: listen \"127.0.0.1:$taken\": cannot bind: Address already in use" part.err &&
	grep "part.conf:6: warning: prometheus\[prom\] left out: the command runs without it" part.err &&
	grep "^tallyd: warning: 2 instances of the collector did not start (see above): running sh with the rest$" part.err &&
	grep -c "^gauge test_counter_value{i=\"0\"}" good.out >n &&
	test $(cat n) -ge 2 &&
	grep "^gauge test_counter_value{i=\"0\"} $(cat n)$" good.out
'

test_expect_success 'a pipeline whose filter fails to start is left out; the others run' '
	cat >filt.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	filters = { f = { plugin = "testfilter"; fail_init = true; }; };
	outputs = {
		one = { plugin = "capture"; path = "one.out"; events = true; };
		two = { plugin = "capture"; path = "two.out"; };
	};
	pipelines = {
		broken = { from = ["a"]; through = ["f"]; to = ["one"]; };
		fine = { from = ["a"]; to = ["two"]; };
	};
	EOF
	tallyd --user -c filt.conf -- sleep 0.5 2>filt.err &&
	grep "pipeline broken left out: its filter testfilter\[f@broken\] did not start" filt.err &&
	grep -q "^gauge test_counter_value" two.out &&
	echo "end command 0" >expect &&
	test_cmp expect one.out
'

test_expect_success 'a configuration that does not load: the command runs without a collector' '
	printf "inputs = { a = { plugin = \"counter\"; }\n" >broken.conf &&
	test_expect_code 4 tallyd --user -c broken.conf -- \
		sh -c "printf %s \"\$TALLY_TRACE_ENDPOINT\" >ep; exit 4" \
		2>broken.err &&
	grep "running sh without it" broken.err &&
	test_must_be_empty ep
'

test_expect_success 'without a command, a start failure still fails tallyd' '
	test_expect_code 1 tallyd --user -f -c part.conf 2>err &&
	grep "capture\[bad\]: init failed" err
'

test_done
