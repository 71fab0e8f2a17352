#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='prometheus output: exposition, HTTP endpoints, gzip, allow list

tallyd runs the spangen test input (histograms, summaries, spans, odd
names, values computed from the read number k) and the counter input into
the prometheus output; every exposition goes through promtool check
metrics and t2-prom-check.py, and values are compared with what spangen
documents for read k.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd curl
require_cmd promtool "promtool not installed (Debian package prometheus)"

CHECK="$PYTHON3 $SHARNESS_TEST_SRCDIR/t2-prom-check.py"

# Fetch /metrics into FILE (headers into FILE.h); extra curl args follow.
scrape() {
	tally_sc_out=$1
	shift
	curl -sS --max-time 10 -D "$tally_sc_out.h" -o "$tally_sc_out" "$@" \
		"http://127.0.0.1:$port/metrics"
}

# Value of the sample line starting with "$2 " in file $1
# (through the environment: awk -v would interpret the backslashes)
value() {
	S=$2 awk 'index($0, ENVIRON["S"] " ") == 1 {
		print substr($0, length(ENVIRON["S"]) + 2) }' "$1"
}

have_ipv6() {
	"$PYTHON3" -c 'import socket
s = socket.socket(socket.AF_INET6)
s.bind(("::1", 0))' 2>/dev/null
}
have_ipv6 && test_set_prereq IPV6

test_expect_success 'start tallyd with spangen and counter into prometheus' '
	port=$(free_port) &&
	listen="\"127.0.0.1:$port\"" &&
	if test_have_prereq IPV6; then listen="$listen, \"[::1]:$port\""; fi &&
	cat >expo.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = {
	  shapes = { plugin = "spangen"; mode = "shapes"; };
	  spans = { plugin = "spangen"; mode = "spans"; jobid = "77";
	            limit = 3; };
	  cnt = { plugin = "counter"; count = 3; name = "test_value"; };
	};
	outputs = { prom = { plugin = "prometheus"; listen = [ $listen ];
	                     span_metrics = "both"; expire = 600.0;
	                     grace = 600.0; }; };
	pipelines = { p = { from = ["shapes", "spans", "cnt"];
	                    to = ["prom"]; }; };
	EOF
	# expire and grace 600 s: no series may come or go between two
	# scrapes, however late a loaded machine makes the second one
	start_tallyd --wait "port_listening $port" expo.conf &&
	grep "serving /metrics on 127.0.0.1:$port" tallyd.log &&
	# k >= 4, and the spans input (limit 3) has done all its reads: the
	# step time of both ranks is 2.25 s (inputs read on their own timers)
	wait_for "scrape m0 &&
		grep -Eq \"^spangen_events_total ([4-9]|[1-9][0-9]+)$\" m0 &&
		test \$(grep -c \"^tally_trace_region_seconds_total{.*region=.step.* 2.25$\" m0) = 2"
'

test_expect_success 'GET /metrics: 200 with the 0.0.4 content type' '
	scrape m1 &&
	grep -i "^HTTP/1.1 200" m1.h &&
	grep -i "^Content-Type: text/plain; version=0.0.4; charset=utf-8" m1.h &&
	! grep -i "^Content-Encoding" m1.h
'

test_expect_success 'promtool check metrics passes' '
	promtool check metrics <m1 >promtool.out 2>&1 ||
	{ cat promtool.out; false; }
'

test_expect_success 'one HELP and TYPE per family, contiguous, sorted, histograms consistent' '
	$CHECK <m1
'

test_expect_success 'counter: _total added, value k' '
	k=$(value m1 spangen_events_total) &&
	test -n "$k" &&
	grep "^# TYPE spangen_events_total counter$" m1 &&
	grep "^# HELP spangen_events_total Reads of the spangen input$" m1
'

test_expect_success 'histogram: le buckets ascending, +Inf, _sum, _count (k = read number)' '
	cat >expect <<-EOF &&
	# HELP spangen_latency_seconds A histogram of the read number
	# TYPE spangen_latency_seconds histogram
	spangen_latency_seconds_bucket{exported_le="y",path="/a",le="0.1"} $k
	spangen_latency_seconds_bucket{exported_le="y",path="/a",le="1"} $((2 * k))
	spangen_latency_seconds_bucket{exported_le="y",path="/a",le="10"} $((3 * k))
	spangen_latency_seconds_bucket{exported_le="y",path="/a",le="+Inf"} $((4 * k))
	spangen_latency_seconds_sum{exported_le="y",path="/a"} $("$PYTHON3" -c "print(repr(1.5 * $k))" | sed "s/\.0$//")
	spangen_latency_seconds_count{exported_le="y",path="/a"} $((4 * k))
	EOF
	grep -A7 "^# HELP spangen_latency_seconds " m1 >actual &&
	test_cmp expect actual
'

test_expect_success 'summary: quantile labels, _sum, _count' '
	grep "^# TYPE spangen_rpc_seconds summary$" m1 &&
	test "$(value m1 "spangen_rpc_seconds{quantile=\"0.5\"}")" = \
		"$("$PYTHON3" -c "print(repr(0.01 * $k))" | sed "s/\.0$//")" &&
	test "$(value m1 "spangen_rpc_seconds{quantile=\"0.99\"}")" = \
		"$("$PYTHON3" -c "print(repr(0.1 * $k))" | sed "s/\.0$//")" &&
	test "$(value m1 spangen_rpc_seconds_count)" = $((10 * k)) &&
	test "$(value m1 spangen_rpc_seconds_sum)" = "$k"
'

test_expect_success 'odd names and label values: sanitized and escaped' '
	cat >expect <<-\EOF &&
	spangen_odd_name{_reserved="x",label_with_dots="a\"b\\c\nd"}
	EOF
	grep "^spangen_odd_name{" m1 | sed "s/ [0-9]*$//" >actual &&
	test_cmp expect actual &&
	test "$(value m1 "$(cat expect)")" = "$k"
'

test_expect_success 'NaN, +Inf and -Inf written canonically; info as gauge' '
	test "$(value m1 spangen_nan)" = NaN &&
	test "$(value m1 spangen_inf)" = +Inf &&
	test "$(value m1 spangen_ninf)" = -Inf &&
	grep "^# TYPE spangen_build_info gauge$" m1 &&
	test "$(value m1 "spangen_build_info{version=\"1.0\"}")" = 1
'

test_expect_success 'counter input: three series, same read number' '
	v0=$(value m1 "test_value{i=\"0\"}") &&
	test -n "$v0" &&
	test "$(value m1 "test_value{i=\"1\"}")" = "$v0" &&
	test "$(value m1 "test_value{i=\"2\"}")" = "$v0"
'

test_expect_success 'spans: region series for both ranks, step time = 0.5+0.75+1 s' '
	# spangen spans, limit 3: read k has a step span of (k%4+1)/4 s; their
	# jobid attribute labels the region series too
	for r in 0 1; do
		test "$(value m1 "tally_trace_region_seconds_total{jobid=\"77\",rank=\"$r\",region=\"step\",trace=\"T\"}")" = 2.25 &&
		test "$(value m1 "tally_trace_region_active{jobid=\"77\",rank=\"$r\",region=\"main\",trace=\"T\"}")" = 1 || return 1
	done &&
	test "$(value m1 "rmsjob_annotations{jobid=\"77\",marker=\"main\",traceid=\"T\"}")" = 1
'

test_expect_success 'open region: seconds_total grows between scrapes' '
	s1=$(value m1 "tally_trace_region_seconds_total{jobid=\"77\",rank=\"0\",region=\"main\",trace=\"T\"}") &&
	sleep 0.3 &&
	scrape m2 &&
	s2=$(value m2 "tally_trace_region_seconds_total{jobid=\"77\",rank=\"0\",region=\"main\",trace=\"T\"}") &&
	"$PYTHON3" -c "import sys; sys.exit(not ($s2 - $s1 >= 0.25))"
'

test_expect_success 'two scrapes list the same series in the same order' '
	sed "s/ [^ ]*$//" m1 >order1 &&
	sed "s/ [^ ]*$//" m2 >order2 &&
	test_cmp order1 order2
'

test_expect_success 'OpenMetrics when the scraper asks for it' '
	scrape om -H "Accept: application/openmetrics-text;version=1.0.0,text/plain;version=0.0.4;q=0.5" &&
	grep -i "^Content-Type: application/openmetrics-text; version=1.0.0; charset=utf-8" om.h &&
	test "$(tail -n 1 om)" = "# EOF" &&
	grep "^# TYPE spangen_events counter$" om &&
	grep "^spangen_events_total " om &&
	grep "^# TYPE tally_trace_region_seconds counter$" om &&
	grep "^# TYPE spangen_build info$" om &&
	grep "^spangen_build_info{version=\"1.0\"} 1$" om &&
	$CHECK --openmetrics <om
'

test_expect_success 'text when OpenMetrics ranks lower' '
	scrape t1 -H "Accept: application/openmetrics-text;q=0.3,text/plain;q=0.5" &&
	grep -i "^Content-Type: text/plain; version=0.0.4" t1.h
'

test_expect_success 'gzip only when asked: curl --compressed' '
	scrape gz --compressed &&
	grep -i "^Content-Encoding: gzip" gz.h &&
	promtool check metrics <gz &&
	$CHECK <gz &&
	scrape raw -H "Accept-Encoding: gzip" &&
	"$PYTHON3" -c "import gzip, sys; sys.stdout.buffer.write(gzip.decompress(open(\"raw\", \"rb\").read()))" >raw.txt &&
	grep "^spangen_events_total " raw.txt &&
	scrape plain -H "Accept-Encoding: identity" &&
	! grep -i "^Content-Encoding" plain.h &&
	scrape plain0 -H "Accept-Encoding: gzip;q=0" &&
	! grep -i "^Content-Encoding" plain0.h
'

test_expect_success 'HEAD /metrics: headers only' '
	curl -sS -I "http://127.0.0.1:$port/metrics" >head.h &&
	grep -i "^HTTP/1.1 200" head.h &&
	grep -i "^Content-Type: text/plain; version=0.0.4" head.h
'

test_expect_success '/-/healthy and /-/ready answer 200 OK' '
	for p in healthy ready; do
		code=$(curl -sS -o body -w "%{http_code}" \
			"http://127.0.0.1:$port/-/$p") &&
		test "$code" = 200 &&
		test "$(cat body)" = OK || return 1
	done
'

test_expect_success 'unknown path 404, POST 405 with Allow' '
	test "$(curl -sS -o /dev/null -w "%{http_code}" "http://127.0.0.1:$port/nope")" = 404 &&
	curl -sS -D post.h -o /dev/null -X POST -d x "http://127.0.0.1:$port/metrics" &&
	grep "^HTTP/1.1 405" post.h &&
	grep -i "^Allow: GET, HEAD" post.h
'

test_expect_success IPV6 'IPv6 listener serves the same exposition' '
	curl -sS --max-time 10 -o v6 "http://[::1]:$port/metrics" &&
	promtool check metrics <v6 &&
	grep "^spangen_events_total " v6
'

test_expect_success 'stop tallyd cleanly' '
	stop_tallyd
'

# allow list: the peer is 127.0.0.1 (or ::1) here
allow_case() {
	cat >allow.conf <<-EOF &&
	global = { interval = 1.0; log_level = "info"; };
	inputs = { cnt = { plugin = "counter"; name = "test_value"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = [ $listen ];
	                     allow = [ $1 ]; }; };
	pipelines = { p = { from = ["cnt"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" allow.conf &&
	code=$(curl -sS -o body -w "%{http_code}" "http://$2:$port/metrics") &&
	stop_tallyd &&
	test "$code" = "$3"
}

test_expect_success 'allow list: 127.0.0.0/8 allows loopback' '
	allow_case "\"10.0.0.0/8\", \"127.0.0.0/8\"" 127.0.0.1 200
'

test_expect_success 'allow list: other networks get 403' '
	allow_case "\"10.0.0.0/8\", \"192.168.0.1\"" 127.0.0.1 403 &&
	grep forbidden body
'

test_expect_success IPV6 'allow list: ::1 needs an IPv6 entry' '
	allow_case "\"127.0.0.0/8\"" "[::1]" 403 &&
	allow_case "\"::1\"" "[::1]" 200
'

test_expect_success 'bad listen and allow values refuse to start' '
	cat >bad.conf <<-EOF &&
	global = { interval = 1.0; };
	inputs = { cnt = { plugin = "counter"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "::1:$port"; }; };
	pipelines = { p = { from = ["cnt"]; to = ["prom"]; }; };
	EOF
	test_must_fail tallyd -c bad.conf --foreground --once 2>err &&
	grep "listen \"::1:$port\": expected" err &&
	sed "s|listen = .*|allow = \"10.0.0.0/33\"; listen = \"127.0.0.1:$port\"; }; };|" bad.conf >bad2.conf &&
	test_must_fail tallyd -c bad2.conf --foreground --once 2>err2 &&
	grep "allow \"10.0.0.0/33\"" err2
'

# check_rejects OPTIONS PATTERN [ARGS] - tallyd --check-config refuses a
# prometheus output with OPTIONS, saying PATTERN after the file:line
check_rejects() {
	cat >chk.conf <<-EOF &&
	global = { interval = 1.0; };
	inputs = { cnt = { plugin = "counter"; }; };
	outputs = {
	  prom = { plugin = "prometheus"; $1 };
	};
	pipelines = { p = { from = ["cnt"]; to = ["prom"]; }; };
	EOF
	shift &&
	pat=$1 &&
	shift &&
	test_must_fail tallyd --check-config -c chk.conf "$@" 2>chk.err &&
	grep "^chk.conf:4: error: .*$pat" chk.err
}

test_expect_success '--check-config rejects what init would refuse' '
	check_rejects "allow = [\"10.0.0.0/33\", \"::1/129\"];" \
		"allow \"10.0.0.0/33\": expected" &&
	grep "allow \"::1/129\": expected" chk.err &&
	check_rejects "listen = \"nohost:99999\";" \
		"listen \"nohost:99999\": expected" &&
	check_rejects "listen = \"nohost.invalid:9464\";" \
		"listen \"nohost.invalid:9464\": cannot resolve nohost.invalid" &&
	check_rejects "listen = [];" "listen: at least one address needed" &&
	check_rejects "listen = [\"127.0.0.1:$port\", \"127.0.0.1:$port\"];" \
		"listen \"127.0.0.1:$port\": listed twice" &&
	check_rejects "listen = \"0.0.0.0:$port\";" \
		"a user collector listens on loopback addresses only" --user &&
	sed "s|prometheus\";.*|prometheus\"; listen = \"127.0.0.1:$port\"; };|" \
		chk.conf >ok.conf &&
	tallyd --check-config -c ok.conf --user &&
	! port_listening $port
'

test_expect_success 'a port in use is a clear error' '
	"$PYTHON3" -c "
import socket, time, sys
s = socket.socket()
s.bind((\"127.0.0.1\", $port))
s.listen()
print(\"ready\", flush=True)
time.sleep(60)
" >holder.out &
	holder=$! &&
	# the holder keeps the port until killed (it gave up after 5 s, which
	# a slow tallyd start could outlast), also when the test fails
	wait_for "grep -q ready holder.out" &&
	sed "s|listen = .*|listen = \"127.0.0.1:$port\"; }; };|" bad.conf >busy.conf &&
	test_must_fail tallyd -c busy.conf --foreground --once 2>err3
	rc=$?
	kill $holder
	test $rc = 0 &&
	grep "cannot bind" err3
'

# tallyd(8): in user mode every metric carries the job id. Spans carried
# none, so the tally_trace_region_* series of a job's collector had no
# jobid label (issue 9, friction list). A real client traces under
# tallyd --user -- with SLURM_JOB_ID set; the final page shows the series.
test_expect_success 'user mode with a job id: region series carry jobid' '
	. "$SHARNESS_TEST_SRCDIR/t30-lib.sh" &&
	cat >job.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; }; };
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:0"; }; };
	pipelines = { p = { from = ["tr"]; to = ["prom"]; }; };
	EOF
	unset TALLY_TRACE_ENDPOINT FLUX_JOB_ID PBS_JOBID LSB_JOBID PMIX_RANK \
		OMPI_COMM_WORLD_RANK PMI_RANK SLURM_PROCID FLUX_TASK_RANK &&
	XDG_RUNTIME_DIR=$SOCKDIR/xdg SLURM_JOB_ID=4242 \
		tallyd --user -c job.conf -- \
		"$TRACE_EMIT" - - begin:outer begin:inner endid:inner \
		>emit.out 2>job.log &&
	page=tally-4242/metrics.prom &&
	cat $page &&
	for r in inner outer; do
		grep "^tally_trace_region_seconds_total{jobid=\"4242\",region=\"$r\",trace=\"4242\"} " $page &&
		grep "^tally_trace_region_active{jobid=\"4242\",region=\"$r\",trace=\"4242\"} " $page ||
		return 1
	done &&
	! grep "^tally_trace_region.*{region" $page
'

test_done
