#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='prometheus output: series expiry and span grace period

spangen inputs stop after a few reads (limit); their series must leave the
exposition once their lifetime has passed (default: 3 intervals of the
input, or the expire option), while a live input stays. Ended span regions
show 0 for the grace period, then their active series goes.

The grace periods and expire times leave 2 s or more between a scrape
that must still see a series and the time it goes: with 1 s, a scrape
just after the test saw the input read was late on a loaded machine.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd curl
require_cmd promtool "promtool not installed (Debian package prometheus)"

scrape() {
	curl -sS --max-time 10 -o "$1" "http://127.0.0.1:$port/metrics"
}

no_active_step() {
	scrape m2 && ! grep -q "^tally_trace_region_active{.*step" m2
}

# now in seconds (float)
now() {
	"$PYTHON3" -c 'import time; print(time.monotonic())'
}

test_expect_success 'start: a vanishing input (interval 0.5 s), a live one' '
	port=$(free_port) &&
	cat >exp.conf <<-EOF &&
	global = { interval = 0.5; log_level = "info"; };
	inputs = {
	  gone = { plugin = "spangen"; mode = "shapes"; limit = 2; };
	  live = { plugin = "counter"; name = "test_value"; count = 2; };
	  spans = { plugin = "spangen"; mode = "spans"; limit = 2;
	            ranks = 1; };
	};
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port"; grace = 2.5; }; };
	pipelines = { p = { from = ["gone", "live", "spans"];
	                    to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" exp.conf &&
	wait_for "scrape m0 && grep -q \"^spangen_events_total 2$\" m0" &&
	t0=$(now)
'

test_expect_success 'ended span region shows 0 within the grace period' '
	scrape m1 &&
	grep "^tally_trace_region_active{rank=\"0\",region=\"step\",trace=\"T\"} 0$" m1 &&
	grep "^tally_trace_region_active{rank=\"0\",region=\"main\",trace=\"T\"} 1$" m1
'

test_expect_success 'after the grace period the ended region has no active series' '
	wait_for no_active_step 10 &&
	grep "^tally_trace_region_active{rank=\"0\",region=\"main\",trace=\"T\"} 1$" m2 &&
	grep "^tally_trace_region_seconds_total{rank=\"0\",region=\"step\",trace=\"T\"} 1.25$" m2
'

test_expect_success 'series of the stopped input expire after 3 intervals (1.5 s)' '
	wait_for "scrape m3 && ! grep -q ^spangen_events_total m3" 10 &&
	t1=$(now) &&
	"$PYTHON3" -c "import sys; d = $t1 - $t0; print(d); sys.exit(not 1.0 < d < 6)" &&
	! grep -q "^spangen_" m3 &&
	! grep -q "^# TYPE spangen_" m3 &&
	promtool check metrics <m3
'

test_expect_success 'the live input stays' '
	grep "^test_value{i=\"0\"} " m3 &&
	grep "^test_value{i=\"1\"} " m3
'

test_expect_success 'stop tallyd' '
	stop_tallyd
'

# Span regions live by the application's pace, not the input's interval:
# with global.interval = 0.2 (3 intervals = 0.6 s), an ended region shows
# active 0 for the whole grace period (4 s) and keeps its seconds_total
# (default expire of span regions: 300 s).
STEP='{rank="0",region="step",trace="T"}'

# step_is FILE SERIES VALUE: a scrape into FILE has "SERIES$STEP VALUE"
step_is() {
	scrape "$1" && grep -qxF "$2$STEP $3" "$1"
}

test_expect_success 'short interval: ended span region lasts the grace period' '
	cat >short.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { spans = { plugin = "spangen"; mode = "spans"; limit = 2;
	                     ranks = 1; }; };
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port"; grace = 4.0; }; };
	pipelines = { p = { from = ["spans"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" short.conf &&
	# reads 1 and 2: step spans of 0.5 s and 0.75 s
	wait_for "step_is s0 tally_trace_region_seconds_total 1.25" &&
	t0=$(now) &&
	sleep 1.5 &&
	step_is s1 tally_trace_region_active 0 &&
	step_is s1 tally_trace_region_seconds_total 1.25 &&
	wait_for no_active_step 12 &&
	t1=$(now) &&
	"$PYTHON3" -c "import sys; d = $t1 - $t0; print(d); sys.exit(not 2.5 < d < 8)" &&
	sleep 1 &&
	step_is s2 tally_trace_region_seconds_total 1.25 &&
	stop_tallyd
'

test_expect_success 'expire option: series stay for the given time, then go' '
	cat >exp2.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { gone = { plugin = "spangen"; mode = "shapes"; limit = 1; }; };
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port"; expire = 5.0; }; };
	pipelines = { p = { from = ["gone"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" exp2.conf &&
	wait_for "scrape e0 && grep -q \"^spangen_events_total 1$\" e0" &&
	t0=$(now) &&
	sleep 1.5 &&
	scrape e1 &&
	grep "^spangen_events_total 1$" e1 &&
	wait_for "scrape e2 && ! grep -q ^spangen_events_total e2" 12 &&
	t1=$(now) &&
	"$PYTHON3" -c "import sys; d = $t1 - $t0; print(d); sys.exit(not 3.5 < d < 8)" &&
	stop_tallyd
'

test_done
