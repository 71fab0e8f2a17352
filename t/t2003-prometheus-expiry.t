#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='prometheus output: series expiry and span grace period

spangen inputs stop after a few reads (limit); their series must leave the
exposition once their lifetime has passed (default: 3 intervals of the
input, or the expire option), while a live input stays. Ended span regions
show 0 for the grace period, then their active series goes.

The exact times are checked by a unit test (t/unit/prometheus-store.c, on a
given clock); here the clock of the daemon drives them, on a machine that
may be loaded (make -j6 check beside two CPU hogs stalled a 0.2 s input
for 10 s). So every bound is one the load cannot break: a series that
must still be there is looked for within a grace or expire time of 15 s
or more, and a series goes no earlier than its time after a moment taken
before tallyd started (its span ended, its input read, later than that);
an upper bound only says it went at all, within a minute.'

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

# reads INSTANCE FILE - tally_reads_total of INSTANCE in scrape FILE
reads() {
	awk -v i="instance=\"$1\"" 'index($0, "tally_reads_total{") == 1 &&
		index($0, i) { print $2 }' "$2"
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
	  self = { plugin = "self"; };
	};
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port"; grace = 15.0; }; };
	pipelines = { p = { from = ["gone", "live", "spans", "self"];
	                    to = ["prom"]; }; };
	EOF
	t0=$(now) &&
	start_tallyd --wait "port_listening $port" exp.conf &&
	# both inputs have read twice (self metrics: their series come and go)
	wait_for "scrape m0 && test \$(reads gone m0) -ge 2 &&
		test \$(reads spans m0) -ge 2" 60
'

test_expect_success 'ended span region shows 0 within the grace period' '
	wait_for "scrape m1 &&
		grep -q \"^tally_trace_region_seconds_total{rank=.0.,region=.step.,trace=.T.} 1.25$\" m1" 60 &&
	grep "^tally_trace_region_active{rank=\"0\",region=\"step\",trace=\"T\"} 0$" m1 &&
	grep "^tally_trace_region_active{rank=\"0\",region=\"main\",trace=\"T\"} 1$" m1
'

# the input's last read came after t0: its series go 1.5 s after it or later
test_expect_success 'series of the stopped input expire after 3 intervals (1.5 s)' '
	wait_for "scrape m3 && ! grep -q ^spangen_events_total m3" 60 &&
	t1=$(now) &&
	"$PYTHON3" -c "import sys; d = $t1 - $t0; print(d); sys.exit(not d > 1.5)" &&
	! grep -q "^spangen_" m3 &&
	! grep -q "^# TYPE spangen_" m3 &&
	promtool check metrics <m3
'

test_expect_success 'after the grace period the ended region has no active series' '
	wait_for no_active_step 60 &&
	t1=$(now) &&
	"$PYTHON3" -c "import sys; d = $t1 - $t0; print(d); sys.exit(not d > 15)" &&
	grep "^tally_trace_region_active{rank=\"0\",region=\"main\",trace=\"T\"} 1$" m2 &&
	grep "^tally_trace_region_seconds_total{rank=\"0\",region=\"step\",trace=\"T\"} 1.25$" m2
'

test_expect_success 'the live input stays' '
	grep "^test_value{i=\"0\"} " m2 &&
	grep "^test_value{i=\"1\"} " m2
'

test_expect_success 'stop tallyd' '
	stop_tallyd
'

# Span regions live by the application's pace, not the input's interval:
# with global.interval = 0.2 (3 intervals = 0.6 s), an ended region shows
# active 0 for the whole grace period (15 s) and keeps its seconds_total
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
	                     listen = "127.0.0.1:$port"; grace = 15.0; }; };
	pipelines = { p = { from = ["spans"]; to = ["prom"]; }; };
	EOF
	t0=$(now) &&
	start_tallyd --wait "port_listening $port" short.conf &&
	# reads 1 and 2: step spans of 0.5 s and 0.75 s
	wait_for "step_is s0 tally_trace_region_seconds_total 1.25" 60 &&
	# past 3 intervals of the input (0.6 s), well within the grace
	step_is s1 tally_trace_region_active 0 &&
	step_is s1 tally_trace_region_seconds_total 1.25 &&
	wait_for no_active_step 60 &&
	t1=$(now) &&
	"$PYTHON3" -c "import sys; d = $t1 - $t0; print(d); sys.exit(not d > 15)" &&
	step_is s2 tally_trace_region_seconds_total 1.25 &&
	stop_tallyd
'

test_expect_success 'expire option: series stay for the given time, then go' '
	cat >exp2.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { gone = { plugin = "spangen"; mode = "shapes"; limit = 1; }; };
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port"; expire = 15.0; }; };
	pipelines = { p = { from = ["gone"]; to = ["prom"]; }; };
	EOF
	t0=$(now) &&
	start_tallyd --wait "port_listening $port" exp2.conf &&
	wait_for "scrape e0 && grep -q \"^spangen_events_total 1$\" e0" 60 &&
	wait_for "scrape e2 && ! grep -q ^spangen_events_total e2" 60 &&
	t1=$(now) &&
	"$PYTHON3" -c "import sys; d = $t1 - $t0; print(d); sys.exit(not d > 15)" &&
	stop_tallyd
'

test_done
