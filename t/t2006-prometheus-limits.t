#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='prometheus output: bounds on series and connections

max_series caps the series an output keeps; the HTTP side survives running
out of file descriptors, closes requests that trickle in forever and caps
its connections.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd curl

# scrape PORT FILE - GET /metrics
scrape() {
	curl -sS --max-time 10 -o "$2" "http://127.0.0.1:$1/metrics"
}

# dropped FILE REASON - tally_dropped_total of instance "limited", or 0
dropped() {
	awk -v r="reason=\"$2\"" 'index($0, "tally_dropped_total{") == 1 &&
		index($0, "instance=\"limited\"") && index($0, r) {
		print $2; found = 1 } END { if (!found) print 0 }' "$1"
}

test_expect_success 'max_series: 50 series offered, the first 20 kept' '
	port=$(free_port) &&
	sport=$(free_port) &&
	cat >series.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = {
	  gen = { plugin = "spangen"; mode = "generations"; count = 50; };
	  self = { plugin = "self"; };
	};
	outputs = {
	  limited = { plugin = "prometheus"; listen = "127.0.0.1:$port";
	              max_series = 20; };
	  selfprom = { plugin = "prometheus"; listen = "127.0.0.1:$sport"; };
	};
	pipelines = {
	  a = { from = ["gen"]; to = ["limited"]; };
	  b = { from = ["self"]; to = ["selfprom"]; };
	};
	EOF
	start_tallyd --wait "port_listening $port && port_listening $sport" \
		series.conf &&
	wait_for "scrape $port m0 && grep -q ^spangen_gen m0" &&
	sleep 0.5 &&
	scrape $port m1 &&
	# spangen emits spangen_gen{i="0"..."49"} then spangen_gen_hist
	grep "^spangen_gen{" m1 | sed "s/ .*//" >got &&
	for i in $(seq 0 19); do echo "spangen_gen{i=\"$i\"}"; done | sort >want &&
	sort got >got.sorted &&
	test_cmp want got.sorted &&
	! grep "^spangen_gen_hist" m1
'

test_expect_success 'max_series: drops counted (31 per read) and logged' '
	wait_for "scrape $sport s1 && test \$(dropped s1 series_limit) -ge 62" &&
	grep "max_series" tallyd.log &&
	stop_tallyd
'

test_done
