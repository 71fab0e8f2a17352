#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='aggregate across reloads: a reload that changes the
filter hands its open interval and its series to the new instance, which
goes on under the new options (issue 12)

Before aggregate had handoff and adopt ops, a reload flushed a partial
interval, and the new instance started with no series: gauge levels went
back to 0, every series was zero seeded again.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

send() {
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t40-statsd-send.py" "$@"
}

# conf AGGOPTS - statsd -> aggregate (1 day, AGGOPTS) -> capture agg.out,
# and statsd -> capture raw.out
conf() {
	cat >cur.conf <<-EOF
	global = { log_level = "info"; };
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:$udp"; }; };
	filters = { agg = { plugin = "aggregate"; interval = 86400.0; $1 }; };
	outputs = {
		cap = { plugin = "capture"; path = "agg.out"; };
		raw = { plugin = "capture"; path = "raw.out"; };
	};
	pipelines = {
		s = { from = ["sd"]; through = ["agg"]; to = ["cap"]; };
		r = { from = ["sd"]; to = ["raw"]; };
	};
	EOF
}

# raw_lines - records the unfiltered pipeline has captured
raw_lines() {
	wc -l <raw.out 2>/dev/null || echo 0
}

test_expect_success 'start: statsd -> aggregate -> capture' '
	udp=$(free_port) &&
	conf "" &&
	start_tallyd --wait "udp_bound $udp" cur.conf
'

test_expect_success 'samples, a reload with new options, samples, stop: one interval' '
	printf "%s\n" "req.count:3|c" "req.count:2|c|@0.5" "q:10|g" \
		"hits:1|c|#dc:x,pod:a" "hits:2|c|#dc:x,pod:b" \
		"lvl:10|g|#dc:x,pod:a" "lvl:20|g|#dc:x,pod:b" "lvl:+1|g|#dc:x,pod:a" \
		"users:alice|s|#dc:x,pod:a" "users:bob|s|#dc:x,pod:b" \
		"size:0.005|h" "size:0.02|h" "size:0.2|h" \
		"db.query:1|ms" "db.query:2|ms" "db.query:3|ms" \
		"db.query:4|ms" >d1 &&
	send udp4 127.0.0.1:$udp d1 &&
	wait_for "test \$(raw_lines) -ge 17" &&
	conf "group_by = [\"dc\"]; percentiles = [50.0, 75.0]; buckets = [0.05, 0.5];" &&
	reload_tallyd &&
	! test -s agg.out &&
	printf "%s\n" "req.count:1|c" "q:+5|g" "hits:4|c|#dc:x,pod:a" \
		"users:alice|s|#dc:x,pod:b" "size:2|h" \
		"db.query:5|ms" "db.query:6|ms" "db.query:7|ms" \
		"db.query:8|ms" >d2 &&
	send udp4 127.0.0.1:$udp d2 &&
	wait_for "test \$(raw_lines) -ge 26" &&
	stop_tallyd &&
	interval_figures agg.out >agg.fig &&
	cat >expected <<-\EOF &&
	interval counter req.count 0 count=0 sum=0 min=NaN max=NaN median=NaN flags=seeded
	interval counter req.count 8 count=4 sum=0 min=NaN max=NaN median=NaN
	interval gauge q 15 count=2 sum=0 min=NaN max=NaN median=NaN
	interval counter hits{dc="x"} 0 count=0 sum=0 min=NaN max=NaN median=NaN flags=seeded
	interval counter hits{dc="x"} 7 count=3 sum=0 min=NaN max=NaN median=NaN
	interval gauge lvl{dc="x"} 11 count=3 sum=0 min=NaN max=NaN median=NaN
	interval gauge users{dc="x"} 2 count=3 sum=0 min=NaN max=NaN median=NaN flags=set
	interval histogram size 0 count=0 sum=0 min=NaN max=NaN median=NaN buckets=0.050000000000000003:0,0.5:0,+Inf:0 flags=seeded
	interval histogram size 0 count=4 sum=2.2250000000000001 min=0.0050000000000000001 max=2 median=0.02 quantiles=0.5:0.02,0.75:0.20000000000000001 buckets=0.050000000000000003:2,0.5:3,+Inf:4
	interval summary db.query 0 count=0 sum=0 min=NaN max=NaN median=NaN flags=seeded
	interval summary db.query 0 count=8 sum=0.035999999999999997 min=0.001 max=0.0080000000000000002 median=0.0040000000000000001 quantiles=0.5:0.0040000000000000001,0.75:0.0060000000000000001
	EOF
	test_cmp expected agg.fig
'

test_expect_success 'a reload that takes aggregate out flushes its partial interval then' '
	udp=$(free_port) &&
	rm -f agg.out raw.out &&
	conf "" &&
	start_tallyd --wait "udp_bound $udp" cur.conf &&
	printf "%s\n" "gone:2|c" "gone:3|c" >d3 &&
	send udp4 127.0.0.1:$udp d3 &&
	wait_for "test \$(raw_lines) -ge 2" &&
	sed "s/through = \[\"agg\"\]; //" cur.conf >next.conf &&
	mv next.conf cur.conf &&
	reload_tallyd &&
	interval_figures agg.out >agg.fig &&
	cat >expected <<-\EOF &&
	interval counter gone 0 count=0 sum=0 min=NaN max=NaN median=NaN flags=seeded
	interval counter gone 5 count=2 sum=0 min=NaN max=NaN median=NaN
	EOF
	test_cmp expected agg.fig &&
	stop_tallyd
'

test_done
