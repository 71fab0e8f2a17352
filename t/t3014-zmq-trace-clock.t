#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='zmq_trace: events timestamped far from the collector clock
are dropped and counted as clock_skew (max_clock_skew), so a sender in the
wrong unit cannot make a region decades long (issue 9, item 5)'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

zt_require_pyzmq
require_cmd curl

# conf [OPTIONS] - zt_config plus a prometheus output for the spans
conf() {
	mkdir -p clock &&
	zt_config clock/10-base.conf "$@" &&
	cat >clock/20-prom.conf <<-EOF
	outputs = { prom = { plugin = "prometheus";
			     listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["tr"]; to = ["prom"]; }; };
	EOF
}

# seconds REGION - its tally_trace_region_seconds_total, or "none"
seconds() {
	curl -sS --max-time 10 "http://127.0.0.1:$port/metrics" >m &&
	{ sed -n "s/^tally_trace_region_seconds_total{region=\"$1\",trace=\"om\"} //p" m |
		grep . || echo none; }
}

test_expect_success 'max_clock_skew must be a number of seconds >= 0' '
	port=$(free_port) &&
	conf "max_clock_skew = -1.0;" &&
	test_must_fail tallyd --check-config -c clock 2>err &&
	grep "max_clock_skew" err
'

test_expect_success 'start tallyd: the default bound, 300 s' '
	conf &&
	start_tallyd --wait "port_listening $port" clock
'

test_expect_success 'timestamps beyond 300 s either way are dropped and counted' '
	s=$(zt_now_s) &&
	now=$((s * 1000000000)) &&
	zt_send <<-EOF &&
	native begin 1 0 50 50 -1 0 $now clk now -
	native begin 2 0 51 51 -1 0 $s clk seconds -
	native begin 3 0 52 52 -1 0 -1 clk minus1 -
	native begin 4 0 53 53 -1 0 $((now + 400000000000)) clk ahead -
	native begin 5 0 54 54 -1 0 $((now - 200000000000)) clk behind -
	json ["start", $s, "om", "sec"]
	json ["end", $((s * 1000)), "om", "sec"]
	json ["start", $((s * 1000 - 1000)), "om", "ms"]
	json ["end", $((s * 1000)), "om", "ms"]
	EOF
	wait_for "test \$(zt_drops clock_skew) = 4" &&
	wait_for "test \$(grep -c \" trace=om \" spans.out) = 3" &&
	cat >expect <<-EOF &&
	span begin trace=clk name=now id=1 parent=0 depth=0 host=$HOST pid=50 tid=50 rank=-1 flags=0
	span begin trace=clk name=behind id=5 parent=0 depth=0 host=$HOST pid=54 tid=54 rank=-1 flags=0
	span end trace=om name=sec id=1 parent=0 depth=0 host=$HOST pid=0 tid=0 rank=-1 flags=orphan_end
	span begin trace=om name=ms id=2 parent=0 depth=0 host=$HOST pid=0 tid=0 rank=-1 flags=0
	span end trace=om name=ms id=2 parent=0 depth=0 host=$HOST pid=0 tid=0 rank=-1 flags=0
	EOF
	test_cmp expect spans.out &&
	grep "zmq_trace\[tr\]: dropped [1-4] messages timestamped more than max_clock_skew = 300 s from this host.s clock (first: -[0-9.]* s)" \
		tallyd.log
'

# Omnistat's start in seconds used to open a region 56 years long.
test_expect_success 'a start sent in seconds adds no time to its region' '
	test "$(seconds sec)" = 0 &&
	test "$(seconds ms)" = 1 &&
	stop_tallyd
'

test_expect_success 'max_clock_skew = 0 takes every timestamp as sent' '
	rm -f spans.out &&
	conf "max_clock_skew = 0;" &&
	start_tallyd --wait "port_listening $port" clock &&
	zt_send <<-EOF &&
	native begin 3 0 52 52 -1 0 -1 clk minus1 -
	EOF
	zt_lines spans.out 1 &&
	grep "^span begin trace=clk name=minus1 " spans.out &&
	test $(zt_drops clock_skew) = 0 &&
	stop_tallyd
'

test_done
