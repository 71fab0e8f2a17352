#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='textfile input: *.prom files through the prometheus output

The fixture directory t/fixtures/textfile holds a good file with every kind
of family (escaped label values, odd spacing, a histogram, a summary,
untyped samples without HELP), a second file whose series merge with,
duplicate or conflict with the first one, a file malformed on line 5, an
empty file, a file with timestamps and a file not named *.prom. The page
must be exactly the expected one, promtool-clean, the same series and
values as node_exporter serves from the same directory, and a malformed
file must never be half-read.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd curl
require_cmd promtool "promtool not installed (Debian package prometheus)"
prereq_cmd prometheus-node-exporter NODE_EXPORTER

# page - scrape tallyd into page.txt; the textfile part (self metrics
# left out) into tf.txt
page() {
	curl -sf "http://127.0.0.1:$port/metrics" >page.txt &&
	grep -v "tally_\|process_" page.txt >tf.txt
}

# self_drop REASON - tally_dropped_total of instance tf for REASON, or 0
self_drop() {
	awk -v r="reason=\"$1\"" '
		index($0, "tally_dropped_total{") == 1 &&
		index($0, "instance=\"tf\"") && index($0, r) {
			print $2; found = 1 }
		END { if (!found) print 0 }' page.txt
}

# reads N - the textfile input has read at least N times
reads() {
	page &&
	awk -v n="$1" 'index($0, "tally_reads_total{") == 1 &&
		index($0, "instance=\"tf\"") { if ($2 >= n) ok = 1 }
		END { exit !ok }' page.txt
}

test_expect_success 'start tallyd on a copy of the fixture directory' '
	cp -r "$FIXTURES/textfile" tf &&
	touch -d @1700000000 tf/* &&
	port=$(free_port) &&
	cat >tf.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = {
	  tf = { plugin = "textfile"; directory = "$PWD/tf"; };
	  self = { plugin = "self"; };
	};
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["tf", "self"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" tf.conf &&
	wait_for "reads 3"
'

test_expect_success 'the page is exactly the good series' '
	D=$PWD/tf &&
	cat >expected <<-EOF &&
	# HELP job_io_seconds I/O wait of the job'"'"'s steps.
	# TYPE job_io_seconds histogram
	job_io_seconds_bucket{step="0",le="0.1"} 2
	job_io_seconds_bucket{step="0",le="1"} 5
	job_io_seconds_bucket{step="0",le="+Inf"} 6
	job_io_seconds_sum{step="0"} 4.25
	job_io_seconds_count{step="0"} 6
	# HELP job_latency_seconds Request latency.
	# TYPE job_latency_seconds summary
	job_latency_seconds{quantile="0.5"} 0.2
	job_latency_seconds{quantile="0.99"} 1.5
	job_latency_seconds_sum 30
	job_latency_seconds_count 100
	# HELP job_note Metric read from $D/a-good.prom, $D/b-more.prom
	# TYPE job_note untyped
	job_note{text="café"} 4
	job_note{text="from b"} 7
	job_note{text="quote \\" backslash \\\\ newline \\n end"} 3
	# HELP job_spaces Metric read from $D/a-good.prom
	# TYPE job_spaces untyped
	job_spaces{a="1",b="2"} 5.5
	# HELP node_textfile_mtime_seconds Unixtime mtime of textfiles successfully read.
	# TYPE node_textfile_mtime_seconds gauge
	node_textfile_mtime_seconds{file="$D/a-good.prom"} 1700000000
	node_textfile_mtime_seconds{file="$D/b-more.prom"} 1700000000
	node_textfile_mtime_seconds{file="$D/d-empty.prom"} 1700000000
	# HELP node_textfile_scrape_error 1 if there was an error opening or reading a file, 0 otherwise
	# TYPE node_textfile_scrape_error gauge
	node_textfile_scrape_error 1
	# HELP shared_value A value two files write.
	# TYPE shared_value gauge
	shared_value{dup="yes"} 10
	shared_value{from="a"} 1
	shared_value{from="b"} 2
	# HELP slurm_job_info Job running on this node.
	# TYPE slurm_job_info gauge
	slurm_job_info{jobid="4711",partition="gpu",user="alice"} 1
	# HELP slurm_job_steps_total Job steps started.
	# TYPE slurm_job_steps_total counter
	slurm_job_steps_total{jobid="4711"} 12
	EOF
	page &&
	test_cmp expected tf.txt
'

test_expect_success 'the whole page is promtool-clean' '
	promtool check metrics <page.txt >promtool.out 2>&1 ||
	{ cat promtool.out; false; }
'

test_expect_success 'OpenMetrics: untyped families are unknown' '
	curl -sf -H "Accept: application/openmetrics-text; version=1.0.0" \
		"http://127.0.0.1:$port/metrics" >om.txt &&
	grep -x "# TYPE job_note unknown" om.txt &&
	grep -x "# TYPE job_spaces unknown" om.txt &&
	grep -x "# TYPE slurm_job_steps counter" om.txt
'

test_expect_success 'the malformed file: logged and counted once per version' '
	test $(grep -c "c-malformed.prom:5: expected .,. or .}. after the value of label a: the whole file is skipped" tallyd.log) = 1 &&
	test $(grep -c "e-timestamps.prom:3: ts_metric has a timestamp" tallyd.log) = 1 &&
	! grep half_read page.txt &&
	! grep ts_metric page.txt &&
	wait_for "page && test \$(self_drop malformed_file) -ge 1 &&
		test \$(self_drop timestamps) -ge 1" &&
	n=$(awk "index(\$0, \"tally_reads_total{\") == 1 &&
		index(\$0, \"instance=\\\"tf\\\"\") { print \$2 }" page.txt) &&
	wait_for "reads $((n + 3))" &&
	test "$(self_drop malformed_file)" = 1 &&
	test "$(self_drop timestamps)" = 1
'

test_expect_success 'conflicts across files: dropped, counted, logged once' '
	test "$(self_drop duplicate_series)" -ge 3 &&
	test "$(self_drop type_conflict)" -ge 3 &&
	test "$(self_drop help_conflict)" -ge 3 &&
	test $(grep -c "b-more.prom: shared_value: an earlier file has the same series" tallyd.log) = 1 &&
	test $(grep -c "b-more.prom: slurm_job_info: an earlier file has the family with another TYPE" tallyd.log) = 1 &&
	test $(grep -c "b-more.prom: slurm_job_steps_total: an earlier file has the family with another HELP" tallyd.log) = 1
'

# node_exporter pads a family'"'"'s series with the labels its other series
# have ({dup="",from="a"}); Prometheus reads an empty label as absent. Both
# pages are compared as (series without empty labels, value) sets plus
# their HELP and TYPE lines.
cat >norm.py <<'PY'
import re, sys
skip = re.compile(r"^(# (HELP|TYPE) )?(go_|process_|promhttp_|node_scrape_|node_exporter_|tally_)")
out = []
for line in open(sys.argv[1], encoding="utf-8"):
    line = line.rstrip("\n")
    if not line or skip.match(line):
        continue
    if line.startswith("#"):
        out.append(line)
        continue
    m = re.match(r'^([^{ ]+)(\{(.*)\})? (\S+)$', line)
    labels = re.findall(r'([a-zA-Z_]\w*)="((?:[^"\\]|\\.)*)"', m.group(3) or "")
    labels = ",".join('%s="%s"' % kv for kv in sorted(labels) if kv[1] != "")
    out.append("%s{%s} %r" % (m.group(1), labels, float(m.group(4))))
print("\n".join(sorted(out)))
PY

test_expect_success NODE_EXPORTER 'node_exporter serves the same series from the same files' '
	neport=$(free_port) &&
	{ timeout 60 prometheus-node-exporter \
		--web.listen-address=127.0.0.1:$neport \
		--collector.disable-defaults --collector.textfile \
		--collector.textfile.directory="$PWD/tf" >ne.log 2>&1 &
	  ne_pid=$!; } &&
	test_when_finished "kill $ne_pid 2>/dev/null; wait $ne_pid 2>/dev/null || :" &&
	wait_for "curl -sf http://127.0.0.1:$neport/metrics >ne.txt" &&
	page &&
	"$PYTHON3" norm.py ne.txt >ne.norm &&
	"$PYTHON3" norm.py page.txt >tally.norm &&
	test_cmp ne.norm tally.norm
'

test_expect_success 'a repaired file replaces the whole, none of it before' '
	cp tf/c-malformed.prom tf/.broken &&
	echo "broken_again{" >>tf/.broken &&
	mv tf/.broken tf/c-malformed.prom &&
	wait_for "page && test \"\$(self_drop malformed_file)\" = 2" &&
	sed "s/a=\"3\" 3/a=\"3\"} 3/" tf/c-malformed.prom |
		grep -v broken_again >tf/.fixed &&
	mv tf/.fixed tf/c-malformed.prom &&
	rm tf/e-timestamps.prom &&
	wait_for "page && grep -q \"^node_textfile_scrape_error 0\" tf.txt" &&
	test $(grep -c "^half_read{" tf.txt) = 4 &&
	grep "^half_read{a=\"3\"} 3$" tf.txt &&
	grep "c-malformed.prom\"} " tf.txt
'

test_expect_success 'a directory gone: scrape error, logged once' '
	mv tf tf.gone &&
	wait_for "page && grep -q \"^node_textfile_scrape_error 1\" tf.txt" &&
	# the self input counts on its own timer: wait for its count, then
	# for reads enough to show the line is logged once, not per read
	wait_for "page && test \$(self_drop directory_error) -ge 1" &&
	n=$(awk "index(\$0, \"tally_reads_total{\") == 1 &&
		index(\$0, \"instance=\\\"tf\\\"\") { print \$2 }" page.txt) &&
	wait_for "reads $((n + 3))" &&
	test $(grep -c "directory $PWD/tf: No such file or directory" tallyd.log) = 1
'

# A second tallyd: procfs on a fixture (one read, at start: interval 3600)
# and a textfile directory whose file writes procfs' node_load1 (same type)
# and node_load5 (untyped), and the textfile input's own scrape_error.
# Whatever order the inputs' first reads come in, procfs' series win and
# the file's other series are exported.
test_expect_success 'a file cannot replace another input'"'"'s series' '
	mkdir coll &&
	cat >coll/a-coll.prom <<-\EOF &&
	# HELP node_load1 1m load average, from a file.
	# TYPE node_load1 gauge
	node_load1 99
	node_load5 98
	node_textfile_scrape_error 7
	job_ok{step="1"} 1
	EOF
	cport=$(free_port) &&
	cat >coll.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = {
	  proc = { plugin = "procfs"; root = "$FIXTURES/proc-6.1";
	           interval = 3600; };
	  tf = { plugin = "textfile"; directory = "$PWD/coll"; };
	  self = { plugin = "self"; };
	};
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$cport"; }; };
	pipelines = { p = { from = ["proc", "tf", "self"]; to = ["prom"]; }; };
	EOF
	start_tallyd --log coll.log --wait "port_listening $cport" coll.conf &&
	cpage() {
		curl -sf "http://127.0.0.1:$cport/metrics" >page.txt
	} &&
	creads() {
		cpage &&
		awk -v n="$1" "index(\$0, \"tally_reads_total{\") == 1 &&
			index(\$0, \"instance=\\\"tf\\\"\") { if (\$2 >= n) ok = 1 }
			END { exit !ok }" page.txt
	} &&
	wait_for "creads 5" &&
	grep -x "node_load1 0.53" page.txt &&
	grep -x "# TYPE node_load5 gauge" page.txt &&
	grep -x "node_load5 0.63" page.txt &&
	grep -x "node_textfile_scrape_error 0" page.txt &&
	grep -x "job_ok{step=\"1\"} 1" page.txt &&
	grep "^node_textfile_mtime_seconds{file=\"$PWD/coll/a-coll.prom\"} " page.txt &&
	test "$(self_drop reserved_name)" -ge 3 &&
	awk "index(\$0, \"tally_dropped_total{\") == 1 &&
		index(\$0, \"instance=\\\"prom\\\"\") &&
		index(\$0, \"reason=\\\"source_collision\\\"\") { n = \$2 }
		END { exit !(n >= 6) }" page.txt &&
	test $(grep -c "$PWD/coll/a-coll.prom: node_load1{}: input proc exports this series" coll.log) = 1 &&
	test $(grep -c "$PWD/coll/a-coll.prom: node_load5{}: input proc exports this series" coll.log) = 1 &&
	test $(grep -c "a-coll.prom: node_textfile_scrape_error: the textfile input.s own family" coll.log) = 1 &&
	stop_tallyd
'

test_expect_success 'a file without its final newline, or with CRLF line ends: skipped, saying why' '
	printf "job_nonl 1\\njob_nonl_more 2" >tf.gone/g-nonl.prom &&
	printf "job_crlf 1\\r\\n" >tf.gone/h-crlf.prom &&
	mv tf.gone tf &&
	wait_for "grep -q g-nonl.prom:2: tallyd.log && grep -q h-crlf.prom:1: tallyd.log" &&
	grep "g-nonl.prom:2: the last line does not end with a newline: the file is being written or was cut short: the whole file is skipped" tallyd.log &&
	grep "h-crlf.prom:1: the line ends with a carriage return (.r): Windows line ends (CRLF); the text format ends lines with .n only: the whole file is skipped" tallyd.log &&
	page &&
	! grep "job_nonl\\|job_crlf" tf.txt &&
	grep -x "node_textfile_scrape_error 1" tf.txt
'

test_expect_success 'eight malformed files at once: each one named in the log' '
	mkdir many &&
	for i in 1 2 3 4 5 6 7 8; do
		printf "bad_$i{ 1\n" >many/bad$i.prom || return 1
	done &&
	port=$(free_port) &&
	cat >many.conf <<-EOF &&
	global = { interval = 0.2; };
	inputs = { tf = { plugin = "textfile"; directory = "$PWD/many"; }; };
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["tf"]; to = ["prom"]; }; };
	EOF
	start_tallyd --log many.log --wait "port_listening $port" many.conf &&
	wait_for "test \$(grep -c \"bad[1-8].prom:1: .*the whole file is skipped\" many.log) -ge 8" &&
	for i in 1 2 3 4 5 6 7 8; do
		test $(grep -c "many/bad$i.prom:1: " many.log) = 1 || return 1
	done &&
	! grep "suppressed" many.log &&
	stop_tallyd
'

test_expect_success 'a file name with a newline, text with an escape character: logged escaped, on one line' '
	mkdir nl &&
	printf "bad_esc \033[2J\n" >"nl/$(printf "x\nforged: line.prom")" &&
	cat >nl.conf <<-EOF &&
	inputs = { tf = { plugin = "textfile"; directory = "$PWD/nl"; }; };
	outputs = { cap = { plugin = "capture"; path = "$PWD/nl.out"; }; };
	pipelines = { p = { from = ["tf"]; to = ["cap"]; }; };
	EOF
	timeout 20 "$TALLYD" --once -c nl.conf 2>nl.log &&
	grep "nl/x\\\\nforged: line.prom:1: .*\\\\x1b\[2J.* the whole file is skipped" nl.log &&
	! grep "^forged" nl.log &&
	! grep "$(printf "\033")" nl.log
'

test_expect_success 'check-config refuses a relative directory' '
	cat >rel.conf <<-EOF &&
	inputs = { tf = { plugin = "textfile"; directory = "tf"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:0"; }; };
	pipelines = { p = { from = ["tf"]; to = ["prom"]; }; };
	EOF
	test_must_fail tallyd --check-config -c rel.conf 2>err &&
	grep "directory \"tf\": an absolute path is needed" err
'

test_expect_success 'the shipped conf.d/15-textfile.conf: off, and valid once on' '
	cp -r "$top_srcdir/conf.d" shipped &&
	rm -f shipped/local.mk &&
	tallyd -c shipped --check-config 2>err &&
	! grep -q textfile err &&
	sed "s/^#\([^ #]\)/\1/" shipped/15-textfile.conf >on.conf &&
	grep -q "plugin = \"textfile\"" on.conf &&
	mv on.conf shipped/15-textfile.conf &&
	tallyd -c shipped --check-config
'

test_done
