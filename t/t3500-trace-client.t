#!/bin/sh
test_description='libtally-trace (C) to a pyzmq receiver that decodes doc/wire-format.md'
. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t35-lib.sh"

EMIT=$top_builddir/t/trace-emit

test_expect_success 'a scripted span sequence arrives with every field' '
	start_recv "ipc://$PWD/t.sock" got --count 6 --idle 200 &&
	PMIX_RANK=5 "$EMIT" "ipc://$PWD/t.sock" job1 \
		begin:a begin:b end:b begin:c endid:a end:c >emit.out &&
	wait_recv &&
	pid=$(sed -n "s/.* pid=\([0-9]*\)$/\1/p" emit.out) &&
	echo "sent=6 dropped=0 unreported=0 pid=$pid" >expect.emit &&
	test_cmp expect.emit emit.out &&
	f=$(fields $pid 5) &&
	cat >expect <<-EXPECT &&
	begin trace=job1 name=a id=1 parent=0 $f
	begin trace=job1 name=b id=2 parent=1 $f
	end trace=job1 name=b id=2 parent=1 $f
	begin trace=job1 name=c id=3 parent=1 $f
	end trace=job1 name=a id=1 parent=0 $f
	end trace=job1 name=c id=3 parent=1 $f
	messages=6 dropped_sum=0
	EXPECT
	test_cmp expect got
'

test_expect_success 'discovery: TALLY_TRACE_ENDPOINT, trace id from SLURM_JOB_ID' '
	port=$(free_port) &&
	start_recv "tcp://127.0.0.1:$port" got --count 2 --idle 200 &&
	env -u PMIX_RANK SLURM_JOB_ID=777 SLURM_PROCID=3 \
		TALLY_TRACE_ENDPOINT="tcp://127.0.0.1:$port" \
		"$EMIT" - - begin:solve end:solve >emit.out &&
	wait_recv &&
	pid=$(sed -n "s/.* pid=\([0-9]*\)$/\1/p" emit.out) &&
	f=$(fields $pid 3) &&
	cat >expect <<-EXPECT &&
	begin trace=777 name=solve id=1 parent=0 $f
	end trace=777 name=solve id=1 parent=0 $f
	messages=2 dropped_sum=0
	EXPECT
	test_cmp expect got
'

test_expect_success 'discovery: the job user collector socket under XDG_RUNTIME_DIR' '
	mkdir -p -m 0700 xdg/tally/job-42 &&
	start_recv "ipc://$PWD/xdg/tally/job-42/trace.sock" got \
		--count 2 --idle 200 &&
	env -u TALLY_TRACE_ENDPOINT -u TALLY_RUNTIME_DIR \
		XDG_RUNTIME_DIR="$PWD/xdg" SLURM_JOB_ID=42 \
		"$EMIT" - - begin:x end:x >emit.out &&
	wait_recv &&
	grep -c "^begin trace=42 name=x id=1 parent=0 " got >n &&
	echo 1 >expect && test_cmp expect n &&
	grep "^messages=2 dropped_sum=0$" got
'

test_expect_success 'without a launcher: rank -1, trace pid-PID' '
	start_recv "ipc://$PWD/t.sock" got --count 1 --idle 200 &&
	env -u PMIX_RANK -u OMPI_COMM_WORLD_RANK -u PMI_RANK -u SLURM_PROCID \
		-u FLUX_TASK_RANK -u SLURM_JOB_ID -u FLUX_JOB_ID -u PBS_JOBID \
		-u LSB_JOBID -u TALLY_TRACE_ID \
		"$EMIT" "ipc://$PWD/t.sock" - begin:r >emit.out &&
	wait_recv &&
	pid=$(sed -n "s/.* pid=\([0-9]*\)$/\1/p" emit.out) &&
	echo "begin trace=pid-$pid name=r id=1 parent=0 $(fields $pid -1)" >expect &&
	head -n 1 got >got1 &&
	test_cmp expect got1
'

# The receiver rejects ill-formed UTF-8 (as the collector does, bad_utf8);
# the client sends U+FFFD instead, per maximal subpart, as Python's
# decode("utf-8", "replace") does: the expected text is Python's.
test_expect_success 'ill-formed UTF-8 in names and trace id arrives as U+FFFD' '
	start_recv "ipc://$PWD/t.sock" got --count 4 --idle 200 &&
	n1=$(printf "bad\377name") &&
	n2=$(printf "\342\202cut") &&
	id=$(printf "job\355\240\200") &&
	"$EMIT" "ipc://$PWD/t.sock" "$id" "begin:$n1" "begin:$n2" \
		"end:$n2" "endid:$n1" >emit.out &&
	wait_recv &&
	grep "^sent=4 dropped=0 " emit.out &&
	"$PYTHON3" -c "
for ph, n in (\"begin\", b\"bad\\xffname\"), (\"begin\", b\"\\xe2\\x82cut\"), \
             (\"end\", b\"\\xe2\\x82cut\"), (\"end\", b\"bad\\xffname\"):
    print(ph, \"trace=\" + b\"job\\xed\\xa0\\x80\".decode(\"utf-8\", \"replace\"),
          \"name=\" + n.decode(\"utf-8\", \"replace\"))
" >expect &&
	! grep "^invalid" got &&
	grep "^begin\|^end" got | cut -d" " -f1-3 >got3 &&
	test_cmp expect got3
'

# The Python receiver is slower than the senders: at close each process
# still has up to 2 x 10000 events queued, which close delivers for at
# most the linger (2 s by default), and what is left then is lost without
# being counted. On a loaded machine that could take longer: the 60 s
# linger takes the deadline out of the sum (close returns once all is
# delivered), and 2 s of quiet, not 1, end the capture.
test_expect_success '4 processes x 2 threads x 20000 events: received + drops = sent' '
	start_recv "ipc://$PWD/t.sock" got --idle 2000 &&
	TALLY_TRACE_LINGER_MS=60000 \
		"$EMIT" -p 4 -T 2 -n 20000 "ipc://$PWD/t.sock" many >emit.out &&
	wait_recv &&
	sent=$(sed -n "s/^total sent=\([0-9]*\) .*/\1/p" emit.out) &&
	test "$sent" = 160000 &&
	! grep "^invalid" got &&
	! grep "ts=bad" got &&
	n=$(sed -n "s/^messages=\([0-9]*\) dropped_sum=\([0-9]*\)$/\1 + \2/p" got) &&
	tally_diag "received + carried drops: $n" &&
	test $(($n)) = "$sent" &&
	grep "^begin\|^end" got | cut -d" " -f6 | sort -u >pids &&
	test $(wc -l <pids) = 4 &&
	grep "^begin\|^end" got | cut -d" " -f6,7 | sort -u >tids &&
	test $(wc -l <tids) = 8
'

test_done
