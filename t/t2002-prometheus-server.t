#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='prometheus output scraped by a real Prometheus server

A Prometheus server (Debian package prometheus) scrapes two prometheus
outputs of one tallyd every second: one answering in OpenMetrics, which
Prometheus asks for first, one limited to the 0.0.4 text format. The test
reads the values back through the HTTP query API and compares them with
what the spangen input documents for its reads.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"

require_cmd curl
require_cmd "${PROMETHEUS:-prometheus}" \
	"prometheus server not installed (Debian package prometheus)"
PROMETHEUS=${PROMETHEUS:-prometheus}

# promq EXPR - print the values of an instant query, one per line, sorted
# by their labels
promq() {
	curl -sS --max-time 10 --get --data-urlencode "query=$1" \
		"http://127.0.0.1:$pport/api/v1/query" >q.json &&
	"$PYTHON3" -c '
import json, sys
d = json.load(open("q.json"))
if d.get("status") != "success":
    sys.exit("query failed: %s" % d)
r = sorted(d["data"]["result"], key=lambda x: sorted(x["metric"].items()))
for x in r:
    print(x["value"][1])'
}

# promq_is EXPR WANT - the query gives exactly one value, equal to the
# Python expression WANT (compared as floats; NaN equals NaN)
promq_is() {
	got=$(promq "$1") &&
	"$PYTHON3" -c '
import math, sys
got, want = sys.argv[1], eval(sys.argv[2])
ok = len(got.split()) == 1 and (float(got) == want or
     (math.isnan(want) and math.isnan(float(got))))
if not ok:
    sys.exit("%s: got %r, want %r" % (sys.argv[3], got, want))' \
	"$got" "$2" "$1"
}

both_up() {
	test "$(promq "sum(up)" 2>/dev/null)" = 2
}

# last_reads_in JOB - Prometheus has scraped the inputs' last reads
last_reads_in() {
	promq_is "spangen_events_total{job=\"$1\"}" 3 2>/dev/null &&
	promq_is "sum(tally_trace_region_seconds_total{job=\"$1\",region=\"step\"})" \
		7.5 2>/dev/null
}

cleanup stop_prometheus

test_expect_success 'start tallyd with two prometheus outputs' '
	port1=$(free_port) &&
	port2=$(free_port) &&
	cat >tally.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = {
	  shapes = { plugin = "spangen"; mode = "shapes"; limit = 3; };
	  spans = { plugin = "spangen"; mode = "spans"; jobid = "77";
	            limit = 6; };
	  cnt = { plugin = "counter"; count = 3; name = "test_value"; };
	};
	outputs = {
	  om = { plugin = "prometheus"; listen = "127.0.0.1:$port1";
	         span_metrics = "both"; expire = 600.0; };
	  text = { plugin = "prometheus"; listen = "127.0.0.1:$port2";
	           span_metrics = "both"; expire = 600.0;
	           openmetrics = false; };
	};
	pipelines = { p = { from = ["shapes", "spans", "cnt"];
	                    to = ["om", "text"]; }; };
	EOF
	start_tallyd --wait "port_listening $port1 && port_listening $port2" \
		tally.conf
'

test_expect_success 'start Prometheus on loopback, scraping every second' '
	pport=$(free_port) &&
	cat >prometheus.yml <<-EOF &&
	global:
	  scrape_interval: 1s
	  scrape_timeout: 1s
	  evaluation_interval: 1s
	scrape_configs:
	  - job_name: tally_om
	    static_configs:
	      - targets: ["127.0.0.1:$port1"]
	  - job_name: tally_text
	    static_configs:
	      - targets: ["127.0.0.1:$port2"]
	EOF
	start_prometheus &&
	wait_for "curl -sf http://127.0.0.1:$pport/-/ready >/dev/null" 60 ||
	{ tally_diag <prometheus.log; false; }
'

test_expect_success 'both targets are up, without scrape errors' '
	wait_for both_up 30 &&
	curl -sS "http://127.0.0.1:$pport/api/v1/targets" >targets.json &&
	"$PYTHON3" -c "
import json, sys
t = json.load(open(\"targets.json\"))[\"data\"][\"activeTargets\"]
assert len(t) == 2, t
for x in t:
    assert x[\"health\"] == \"up\" and x[\"lastError\"] == \"\", x
"
'

test_expect_success 'wait until both jobs have the inputs last reads' '
	for job in tally_om tally_text; do
		wait_for "last_reads_in $job" 30 || return 1
	done
'

# The bodies run while $job is set (sharness evaluates them at once).
for job in tally_om tally_text; do
	test_expect_success "$job: histogram buckets, sum and count (k = 3)" '
		promq_is "spangen_latency_seconds_bucket{job=\"$job\",le=\"0.1\"}" 3 &&
		promq_is "spangen_latency_seconds_bucket{job=\"$job\",le=\"1\"}" 6 &&
		promq_is "spangen_latency_seconds_bucket{job=\"$job\",le=\"10\"}" 9 &&
		promq_is "spangen_latency_seconds_bucket{job=\"$job\",le=\"+Inf\"}" 12 &&
		promq_is "spangen_latency_seconds_sum{job=\"$job\"}" 4.5 &&
		promq_is "spangen_latency_seconds_count{job=\"$job\",exported_le=\"y\",path=\"/a\"}" 12
	'

	test_expect_success "$job: histogram_quantile over the buckets" '
		# rank 6 of 12 is the top of the le=1 bucket
		promq_is "histogram_quantile(0.5, spangen_latency_seconds_bucket{job=\"$job\"})" 1
	'

	test_expect_success "$job: summary quantiles, sum, count" '
		promq_is "spangen_rpc_seconds{job=\"$job\",quantile=\"0.5\"}" "0.01 * 3" &&
		promq_is "spangen_rpc_seconds{job=\"$job\",quantile=\"0.99\"}" "0.1 * 3" &&
		promq_is "spangen_rpc_seconds_sum{job=\"$job\"}" 3 &&
		promq_is "spangen_rpc_seconds_count{job=\"$job\"}" 30
	'

	test_expect_success "$job: odd names and label values survive the trip" '
		cat >odd.promql <<-\EOF &&
		spangen_odd_name{label_with_dots="a\"b\\c\nd",_reserved="x",job="JOB"}
		EOF
		promq_is "$(sed "s/JOB/$job/" odd.promql)" 3
	'

	test_expect_success "$job: NaN, +Inf, -Inf, info" '
		promq_is "spangen_nan{job=\"$job\"}" "float(\"nan\")" &&
		promq_is "spangen_inf{job=\"$job\"}" "float(\"inf\")" &&
		promq_is "spangen_ninf{job=\"$job\"}" "float(\"-inf\")" &&
		promq_is "spangen_build_info{job=\"$job\",version=\"1.0\"}" 1
	'

	test_expect_success "$job: span regions, 0.5+0.75+1+0.25+0.5+0.75 s of step per rank" '
		for r in 0 1; do
			promq_is "tally_trace_region_seconds_total{job=\"$job\",rank=\"$r\",region=\"step\",trace=\"T\"}" 3.75 ||
			return 1
		done &&
		promq_is "tally_trace_region_active{job=\"$job\",rank=\"1\",region=\"main\"}" 1 &&
		promq_is "rmsjob_annotations{job=\"$job\",jobid=\"77\",marker=\"main\",traceid=\"T\"}" 1
	'

	test_expect_success "$job: the counter input series come from one read" '
		promq_is "count(count_values(\"v\", test_value{job=\"$job\"}))" 1 &&
		promq_is "count(test_value{job=\"$job\"})" 3
	'
done

test_expect_success 'open region time grows in Prometheus too' '
	q="tally_trace_region_seconds_total{job=\"tally_om\",rank=\"0\",region=\"main\"}" &&
	a=$(promq "$q") &&
	sleep 2.5 &&
	b=$(promq "$q") &&
	"$PYTHON3" -c "import sys; sys.exit(not ($b - $a >= 1))" &&
	promq_is "resets(${q}[30s])" 0
'

test_expect_success 'stop Prometheus and tallyd' '
	stop_prometheus &&
	stop_tallyd
'

test_done
