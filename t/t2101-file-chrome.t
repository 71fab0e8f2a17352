#!/bin/sh
test_description='file output, chrome format: a nested trace from four ranks
under tallyd --user -- CMD, with procfs counter tracks in the same file;
valid JSON after SIGTERM, repaired after a crash, rotated by size, reopened
on SIGHUP'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

CHECK="$PYTHON3 $SHARNESS_TEST_SRCDIR/t21-chrome-check.py"

# the user collector's runtime dir holds the trace socket: keep it short
tally_sock_dir xdg || exit 1
XDG_RUNTIME_DIR=$TALLY_SOCK_DIR
export XDG_RUNTIME_DIR

# valid FILE - FILE is JSON a strict parser reads
valid() {
	"$PYTHON3" -c 'import json, sys; json.load(open(sys.argv[1]))' "$1"
}

test_expect_success 'bad options: file:line and what is allowed' '
	cat >bad.conf <<-EOF &&
	inputs = { c = { plugin = "counter"; }; };
	outputs = { f = { plugin = "file"; path = "dir/"; format = "xml";
			  max_size = "1k"; }; };
	pipelines = { p = { from = ["c"]; to = ["f"]; }; };
	EOF
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:2: error: outputs.f: option .format. = \"xml\" is not one of: jsonl, chrome, csv" err &&
	sed -i "s/format = \"xml\";//" bad.conf &&
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:2: error: .*path \"dir/\": a file name is needed" err &&
	grep "bad.conf:2: error: .*max_size 1024: at least 4096 bytes, or 0 to never rotate" err
'

# Rank r (PMIX_RANK) traces main > solve > step > (halo on even ranks,
# io on odd ones), twice, then write, all nested in main.
cat >ranks.sh <<EOF
for r in 0 1 2 3; do
	if test \$((r % 2)) = 0; then in=halo; else in=io; fi
	PMIX_RANK=\$r "$TRACE_EMIT" - job begin:main begin:solve \
		begin:step begin:\$in sleep:20 end:\$in end:step \
		begin:step begin:\$in sleep:20 end:\$in end:step \
		end:solve begin:write sleep:10 end:write end:main \
		>emit.\$r 2>&1 &
done
wait
EOF

test_expect_success 'four ranks under tallyd --user -- CMD, with procfs' '
	cat >user.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = {
		tr = { plugin = "zmq_trace"; };
		host = { plugin = "procfs"; root = "$FIXTURES/proc-6.1";
			 interval = 0.05; };
	};
	outputs = { chrome = { plugin = "file"; format = "chrome";
			       path = "trace.json"; }; };
	pipelines = { t = { from = ["tr", "host"]; to = ["chrome"]; }; };
	EOF
	SLURM_JOB_ID=j1 tallyd --user -c user.conf -- sh ranks.sh 2>user.err &&
	for r in 0 1 2 3; do
		grep "^sent=14 dropped=0 " emit.$r || return 1
	done &&
	test -s tally-j1/trace.json
'

test_expect_success 'the file is JSON, nested with the right parents and depths' '
	$CHECK tally-j1/trace.json >got &&
	cat >expect <<-EOF &&
	rank 0: main/0 solve/1 step/2 halo/3 step/2 halo/3 write/1
	rank 1: main/0 solve/1 step/2 io/3 step/2 io/3 write/1
	rank 2: main/0 solve/1 step/2 halo/3 step/2 halo/3 write/1
	rank 3: main/0 solve/1 step/2 io/3 step/2 io/3 write/1
	EOF
	sed "/^counters: /d" got >got.x &&
	test_cmp expect got.x
'

test_expect_success 'procfs counter tracks in the same file, on one process' '
	grep "^counters: [0-9]* events on pid [0-9]* named \"tally counters ($HOST)\"$" got &&
	"$PYTHON3" -c "
import json, sys
d = json.load(open(\"tally-j1/trace.json\"))
v = [e[\"args\"][\"value\"] for e in d[\"traceEvents\"]
     if e[\"ph\"] == \"C\" and e[\"name\"] == \"node_load1{jobid=\\\"j1\\\"}\"]
sys.exit(not v or set(v) != {0.53})
" &&
	"$PYTHON3" -c "
import json, sys
a = json.load(open(\"tally-j1/trace.json\"))[\"otherData\"][\"tally_clock_anchor\"]
print(a[\"hostname\"])" >host &&
	echo "$HOST" >expect.host &&
	test_cmp expect.host host
'

test_expect_success 'ranks are named as processes, with their pids' '
	for r in 0 1 2 3; do
		pid=$(sed -n "s/^sent=14 .* pid=\([0-9]*\)$/\1/p" emit.$r) &&
		grep -F "{\"ph\":\"M\",\"name\":\"process_name\",\"pid\":$pid,\"tid\":0,\"args\":{\"name\":\"rank $r ($HOST:$pid)\"}}," \
			tally-j1/trace.json || return 1
	done
'

# A running collector: regions held open until "go" exists.
test_expect_success 'start tallyd: spans held open' '
	cat >run.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "$EP"; }; };
	outputs = {
		chrome = { plugin = "file"; format = "chrome";
			   path = "$PWD/run.json"; flush_interval = 0.05; };
		cap = { plugin = "capture"; path = "spans.out"; };
	};
	pipelines = { t = { from = ["tr"]; to = ["chrome", "cap"]; }; };
	EOF
	start_tallyd run.conf &&
	{ PMIX_RANK=0 "$TRACE_EMIT" "$EP" job begin:main begin:solve \
		end:solve begin:wait wait:"$PWD/go" end:wait end:main \
		>emit.held 2>&1 & } &&
	EMIT=$! &&
	wait_for "grep -c \"^span \" spans.out | grep -qx 4"
'

test_expect_success 'SIGTERM: valid JSON, the open regions written and marked open' '
	stop_tallyd &&
	$CHECK run.json >got &&
	echo "rank 0: main/0 open solve/1 wait/1 open" >expect &&
	test_cmp expect got &&
	touch go &&
	wait $EMIT
'

test_expect_success 'SIGHUP after logrotate (create): two files, each valid' '
	rm -f go run.json &&
	start_tallyd run.conf &&
	{ PMIX_RANK=0 "$TRACE_EMIT" "$EP" job begin:main begin:one end:one \
		wait:"$PWD/go" begin:two end:two end:main >emit.hup 2>&1 & } &&
	EMIT=$! &&
	wait_for "grep -c \"^span \" spans.out | grep -qx 3" &&
	wait_for "grep -q \"\\\"one\\\"\" run.json" &&
	mv run.json run.json.old &&
	: >run.json &&
	kill -HUP $TALLYD_PID &&
	wait_for "grep -q \"reopened $PWD/run.json\" tallyd.log" &&
	touch go &&
	wait $EMIT &&
	wait_for "grep -c \"^span \" spans.out | grep -qx 6" &&
	stop_tallyd &&
	$CHECK run.json.old >got.old &&
	echo "rank 0: main/0 open one/1" >expect.old &&
	test_cmp expect.old got.old &&
	$CHECK run.json >got.new &&
	echo "rank 0: main/0 two/1" >expect.new &&
	test_cmp expect.new got.new
'

test_expect_success 'a SIGHUP with nothing moved keeps one file' '
	rm -f go run.json run.json.1 &&
	start_tallyd run.conf &&
	wait_for "test -s run.json" &&
	kill -HUP $TALLYD_PID &&
	wait_for "grep -q \"SIGHUP\" tallyd.log" &&
	stop_tallyd &&
	valid run.json &&
	! test -e run.json.1 &&
	! grep "reopened" tallyd.log
'

# The documented repair (doc/plugins/file.md), word for word.
repair() {
	"$PYTHON3" -c 'import sys;p=sys.argv[1];t=open(p,"rb").read();t=t[:t.rindex(b"\n")+1].rstrip(b",\n");open(p,"wb").write(t+b"\n]}\n")' "$1"
}

test_expect_success 'a crash (SIGKILL) leaves a file the one-liner repairs' '
	rm -f go run.json &&
	start_tallyd run.conf &&
	"$TRACE_EMIT" -n 400 "$EP" job >emit.kill 2>&1 &&
	wait_for "test \$(grep -c \"^span \" spans.out) -ge 400" &&
	wait_for "test \$(grep -c \"\\\"ph\\\":\\\"X\\\"\" run.json) -ge 200" &&
	kill -KILL $TALLYD_PID &&
	wait $TALLYD_PID;
	tally_forget_pid_ $TALLYD_PID &&
	test_must_fail valid run.json &&
	repair run.json &&
	$CHECK run.json >got &&
	grep "^rank -1: e/0 e/0 " got
'

test_expect_success 'a batch past max_size mid-write: every file stands alone' '
	rm -f rot.json* &&
	cat >rot.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "$EP"; }; };
	outputs = { chrome = { plugin = "file"; format = "chrome";
			       path = "$PWD/rot.json"; max_size = "4KiB";
			       max_files = 1000; }; };
	pipelines = { t = { from = ["tr"]; to = ["chrome"]; }; };
	EOF
	start_tallyd rot.conf &&
	"$TRACE_EMIT" -n 2000 "$EP" job >emit.rot 2>&1 &&
	grep "^sent=2000 dropped=0 " emit.rot &&
	stop_tallyd &&
	ls rot.json* >files &&
	test $(wc -l <files) -gt 10 &&
	n=0 &&
	while read f; do
		$CHECK "$f" >/dev/null &&
		grep -q "\"tally_clock_anchor\"" "$f" &&
		# rotated once past 4096 bytes: by at most one event
		# and the closing lines
		test $(wc -c <"$f") -lt 5000 &&
		n=$((n + $(grep -c "\"ph\":\"X\"" "$f"))) || return 1
	done <files &&
	test $n = 1000 &&
	$CHECK rot.json.1 | grep "^rank -1: e/0 e/0 "
'

test_done
