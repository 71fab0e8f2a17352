#!/bin/sh
test_description='file output: JSON lines and CSV end to end; a missing
directory, a read-only one, a full disk and a file truncated under it are
clear errors, counted, while tallyd serves its other outputs'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

CHECK="$PYTHON3 $SHARNESS_TEST_SRCDIR/t21-chrome-check.py"

# selfval KIND EVENT_OR_REASON - the last tally_KIND_total of instance f
# in self.out (0 when none)
selfval() {
	grep "^counter tally_$1_total{" self.out | grep -F "instance=\"f\"," |
		grep -E "(event|reason)=\"$2\"" | tail -n1 | sed "s/.* //" |
		grep . || echo 0
}

# conf FILE PATH [OPTIONS] - a counter (100 samples every 0.02 s) and
# zmq_trace to the file output f on PATH and to a capture; self to
# self.out
conf() {
	cat >"$1" <<-EOF
	global = { log_level = "info"; };
	inputs = {
		c = { plugin = "counter"; interval = 0.02; count = 100; };
		tr = { plugin = "zmq_trace"; endpoint = "$EP"; };
		self = { plugin = "self"; interval = 0.05; };
	};
	outputs = {
		f = { plugin = "file"; path = "$2"; flush_interval = 0.05;
		      buffer_size = "64KiB"; $3 };
		cap = { plugin = "capture"; path = "cap.out"; };
		health = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		p = { from = ["c", "tr"]; to = ["f", "cap"]; };
		h = { from = ["self"]; to = ["health"]; };
	};
	EOF
}

# serving - the capture output goes on receiving the counter's samples
serving() {
	a=$(grep -c "^gauge test_counter_value" cap.out) &&
	wait_for "test \$(grep -c \"^gauge test_counter_value\" cap.out) -gt $((a + 500))"
}

test_expect_success 'jsonl: metrics and spans, one JSON object a line' '
	conf l.conf "$PWD/l.jsonl" &&
	start_tallyd l.conf &&
	"$TRACE_EMIT" "$EP" job begin:a begin:b end:b end:a >emit 2>&1 &&
	wait_for "grep -q \"\\\"phase\\\":\\\"end\\\".*\\\"name\\\":\\\"a\\\"\" l.jsonl" &&
	stop_tallyd &&
	"$PYTHON3" -c "
import json, sys
lines = [json.loads(l) for l in open(\"l.jsonl\")]
assert lines[0][\"type\"] == \"clock_anchor\", lines[0]
m = [l for l in lines if l[\"type\"] == \"metric\"]
s = [(l[\"phase\"], l[\"name\"], l[\"depth\"]) for l in lines
     if l[\"type\"] == \"span\"]
assert m[0][\"name\"] == \"test_counter_value\" and m[0][\"labels\"] == {\"i\": \"0\"}, m[0]
assert s == [(\"begin\", \"a\", 0), (\"begin\", \"b\", 1), (\"end\", \"b\", 1),
             (\"end\", \"a\", 0)], s
"
'

test_expect_success 'csv: a header, then timestamp,name,labels,value' '
	conf c.conf "$PWD/m.csv" "format = \"csv\";" &&
	start_tallyd c.conf &&
	"$TRACE_EMIT" "$EP" job begin:a end:a >emit 2>&1 &&
	wait_for "test \$(wc -l <m.csv) -gt 200" &&
	wait_for "test \$(selfval dropped span_in_csv) = 2" &&
	stop_tallyd &&
	head -n 3 m.csv | sed "s/^[0-9]*\.[0-9]\{9\},/TS,/" >got &&
	cat >expect <<-EOF &&
	timestamp,name,labels,value
	TS,test_counter_value,i=0,1
	TS,test_counter_value,i=1,1
	EOF
	test_cmp expect got &&
	grep "file\[f\]: spans are not written to a csv file (metrics only): they are dropped and counted" tallyd.log
'

test_expect_success 'a path in a missing directory: an error, then written once it exists' '
	rm -f cap.out self.out &&
	conf m.conf "$PWD/no/such/t.json" "format = \"chrome\";" &&
	start_tallyd m.conf &&
	wait_for "grep -q \"file\[f\]: open $PWD/no/such/t.json: No such file or directory: records are held\" tallyd.log" &&
	serving &&
	wait_for "test \$(selfval events open_errors) -ge 1" &&
	wait_for "test \$(selfval dropped buffer_full) -ge 1" &&
	mkdir -p no/such &&
	wait_for "grep -q \"file\[f\]: writing to $PWD/no/such/t.json again\" tallyd.log" &&
	stop_tallyd &&
	$CHECK no/such/t.json | grep "^counters: "
'

# A read-only directory: for root, a read-only tmpfs in a private mount
# namespace (permissions do not stop root).
mkdir ro
if test "$(id -u)" != 0; then
	chmod a-w ro && test_set_prereq RO
elif unshare -m true 2>/dev/null; then
	REAL=$TALLYD
	cat >ns-tallyd <<-EOF
	#!/bin/sh
	exec unshare -m sh -c 'mount -t tmpfs none "\$0" &&
		mount -o remount,ro "\$0" && exec "\$@"' "$PWD/ro" "$REAL" "\$@"
	EOF
	chmod +x ns-tallyd && TALLYD=$PWD/ns-tallyd && test_set_prereq RO
fi

test_expect_success RO 'a read-only directory: a clear error, other outputs served' '
	rm -f cap.out self.out &&
	conf r.conf "$PWD/ro/t.jsonl" &&
	start_tallyd r.conf &&
	wait_for "grep -Eq \"file\[f\]: open $PWD/ro/t.jsonl: (Permission denied|Read-only file system): records are held\" tallyd.log" &&
	serving &&
	wait_for "test \$(selfval dropped buffer_full) -ge 1" &&
	stop_tallyd &&
	grep "file\[f\]: $PWD/ro/t.jsonl: [0-9]* records not written at exit" tallyd.log
'
TALLYD=${REAL:-$TALLYD}

test_expect_success 'a full disk (/dev/full): write errors counted, others served' '
	rm -f cap.out self.out &&
	conf d.conf /dev/full &&
	start_tallyd d.conf &&
	wait_for "grep -q \"file\[f\]: write /dev/full: No space left on device: records are held\" tallyd.log" &&
	serving &&
	wait_for "test \$(selfval events write_errors) -ge 1" &&
	wait_for "test \$(selfval dropped buffer_full) -ge 1" &&
	test $(grep -c "write /dev/full" tallyd.log) = 1 &&
	stop_tallyd
'

# A disk that fills up and is freed again: root mounts a 64 KiB tmpfs
# here (unmounted when the test ends), then makes it larger.
test "$(id -u)" = 0 && mkdir small && test_set_prereq SMALLFS

test_expect_success SMALLFS 'chrome, full disk then freed: written on in the same file' '
	mount -t tmpfs -o size=64k tmpfs small &&
	test_when_finished "umount small" &&
	rm -f cap.out self.out &&
	conf s.conf "$PWD/small/t.json" "format = \"chrome\";" &&
	start_tallyd s.conf &&
	wait_for "grep -q \"file\[f\]: write $PWD/small/t.json: No space left on device\" tallyd.log" &&
	mount -o remount,size=8m small &&
	n=$(selfval events write_errors) &&
	size=$(stat -c %s small/t.json) &&
	wait_for "test \$(stat -c %s small/t.json) -gt $((size + 65536))" &&
	stop_tallyd &&
	! test -e small/t.json.1 &&
	$CHECK small/t.json >got
'

test_expect_success 'chrome, truncated under tallyd (copytruncate): refused, the file valid' '
	rm -f t.json &&
	conf t.conf "$PWD/t.json" "format = \"chrome\";" &&
	start_tallyd t.conf &&
	wait_for "grep -q \"ph.:.C\" t.json" &&
	cp t.json copy.json &&
	: >t.json &&
	"$TRACE_EMIT" "$EP" job begin:a end:a >emit 2>&1 &&
	wait_for "grep -q \"copytruncate cannot keep a chrome file valid JSON\" tallyd.log" &&
	wait_for "grep -q \"ph.:.X\" t.json" &&
	stop_tallyd &&
	$CHECK t.json >got &&
	grep "^rank -1: a/0$" got &&
	test "$(selfval events truncated)" -ge 1
'

test_expect_success 'jsonl, truncated: written on from its new end' '
	rm -f t.jsonl &&
	conf u.conf "$PWD/t.jsonl" &&
	start_tallyd u.conf &&
	wait_for "test -s t.jsonl" &&
	: >t.jsonl &&
	wait_for "grep -q \"t.jsonl was truncated (logrotate copytruncate?): writing on at its new end\" tallyd.log" &&
	wait_for "test -s t.jsonl" &&
	stop_tallyd &&
	"$PYTHON3" -c "
import json
for l in open(\"t.jsonl\"):
    json.loads(l)
"
'

test_done
