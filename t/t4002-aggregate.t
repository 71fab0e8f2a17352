#!/bin/sh
test_description='aggregate filter: statsd samples and spans to interval
records with exact figures (capture), and through prometheus (cumulative
counters and histograms, the last interval'"'"'s percentiles as a summary)'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

require_cmd curl
zt_require_pyzmq

send() {
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t40-statsd-send.py" "$@"
}

# records_in FILTER - records the filter instance took in, from self.out
records_in() {
	sed -n "s/^counter tally_records_in_total{instance=\"$1\",kind=\"filter\",pipeline=\"[a-z]*\",plugin=\"aggregate\"} //p" \
		self.out | tail -n1 | grep . || echo 0
}

test_expect_success 'check: statsd -> aggregate -> prometheus is valid' '
	cat >ok.conf <<-EOF &&
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:0"; }; };
	filters = { agg = { plugin = "aggregate"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:0"; }; };
	pipelines = { p = { from = ["sd"]; through = ["agg"]; to = ["prom"]; }; };
	EOF
	tallyd -c ok.conf --check-config &&
	cat >no.conf <<-EOF &&
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:0"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:0"; }; };
	pipelines = { p = { from = ["sd"]; to = ["prom"]; }; };
	EOF
	test_must_fail tallyd -c no.conf --check-config 2>err &&
	grep "no.conf:3: error: pipelines.p: input .sd. may send observations (timer values), set members, which output .prom. (prometheus) does not take" err &&
	cat >file.conf <<-EOF &&
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:0"; }; };
	filters = { agg = { plugin = "aggregate"; }; };
	outputs = { f = { plugin = "file"; path = "x.jsonl"; }; };
	pipelines = { p = { from = ["sd"]; through = ["agg"]; to = ["f"]; }; };
	EOF
	test_must_fail tallyd -c file.conf --check-config 2>err &&
	grep "file.conf:4: error: pipelines.p: input .sd. through its filters brings interval records (an aggregate filter.s summaries), which output .f. (file) does not render" err &&
	cat >dim.conf <<-EOF &&
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:0"; }; };
	filters = { agg = { plugin = "aggregate"; dimensions = ["rank", "pid"]; }; };
	outputs = { c = { plugin = "capture"; path = "/dev/null"; }; };
	pipelines = { p = { from = ["sd"]; through = ["agg"]; to = ["c"]; }; };
	EOF
	test_must_fail tallyd -c dim.conf --check-config 2>err &&
	grep "dimensions: unknown dimension .pid.: one of trace, rank, host, depth" err
'

test_expect_success 'the shipped 60-statsd.conf and 61-span-metrics.conf: off, valid once on' '
	cp -r "$top_srcdir/conf.d" shipped &&
	rm -f shipped/local.mk &&
	tallyd -c shipped --check-config 2>err &&
	! grep -q aggregate err &&
	for f in 60-statsd 61-span-metrics; do
		sed "s/^#\([^ #]\)/\1/" shipped/$f.conf >on.conf &&
		grep -q "plugin = \"aggregate\"" on.conf &&
		mv on.conf shipped/$f.conf || return 1
	done &&
	grep -q "listen = \"127.0.0.1:8125\"" shipped/60-statsd.conf &&
	tallyd -c shipped --check-config
'

test_expect_success 'start tallyd: statsd and spans -> aggregate (1 day) -> capture' '
	udp=$(free_port) &&
	cat >cap.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = {
		sd = { plugin = "statsd"; listen = "127.0.0.1:$udp"; };
		tr = { plugin = "zmq_trace"; endpoint = "$EP"; };
		self = { plugin = "self"; interval = 0.1; };
	};
	filters = {
		agg = { plugin = "aggregate"; interval = 86400.0; };
		spans = { plugin = "aggregate"; interval = 86400.0;
			  dimensions = ["rank"]; buckets = [1.0, 5.0, 10.0]; };
	};
	outputs = {
		cap = { plugin = "capture"; path = "agg.out"; };
		capsp = { plugin = "capture"; path = "spans.out"; };
		health = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		s = { from = ["sd"]; through = ["agg"]; to = ["cap"]; };
		t = { from = ["tr"]; through = ["spans"]; to = ["capsp"]; };
		h = { from = ["self"]; to = ["health"]; };
	};
	EOF
	start_tallyd --wait "udp_bound $udp" cap.conf
'

test_expect_success 'send statsd lines and a known trace, stop: the partial interval is flushed' '
	# counters with sample rates, gauges with deltas and a negative
	# absolute gauge (zero first), timers 1..10 ms (one sampled), a set,
	# and lines that are not statsd at all among them
	{
		printf "%s\n" "req.count:3|c" "req.count:2|c|@0.5" \
			"req.count:1|c|@0.1" "q:10|g" "q:+5|g" "q:-3|g" \
			"t:0|g" "t:-4|g" "users:alice|s" "users:bob|s" \
			"users:alice|s" "garbage" "x:1|zz"
		for i in 1 2 3 4 5 6 7 8 9; do echo "db.query:$i|ms"; done
		echo "db.query:10|ms|@0.5"
	} >d1 &&
	send udp4 127.0.0.1:$udp d1 &&
	base=$(zt_now_s)000000000 &&
	s() { echo $((base + $1 * 1000000)); } &&
	zt_send <<-EOF &&
	native begin 1 0 4242 1 3 0 $(s 0) job main $HOST
	native begin 2 1 4242 1 3 0 $(s 1000) job solve $HOST
	native end 2 1 4242 1 3 0 $(s 4000) job solve $HOST
	native begin 3 1 4242 1 3 0 $(s 5000) job solve $HOST
	native end 3 1 4242 1 3 0 $(s 5500) job solve $HOST
	native end 1 0 4242 1 3 0 $(s 10000) job main $HOST
	EOF
	wait_for "test \$(records_in agg) = 21 && test \$(records_in spans) = 6" &&
	stop_tallyd &&
	interval_figures agg.out >agg.fig &&
	cat >expected <<-\EOF &&
	interval counter req.count 0 count=0 sum=0 min=NaN max=NaN median=NaN flags=seeded
	interval counter req.count 17 count=13 sum=0 min=NaN max=NaN median=NaN
	interval gauge q 12 count=3 sum=0 min=NaN max=NaN median=NaN
	interval gauge t -4 count=2 sum=0 min=NaN max=NaN median=NaN
	interval gauge users 2 count=3 sum=0 min=NaN max=NaN median=NaN flags=set
	interval summary db.query 0 count=0 sum=0 min=NaN max=NaN median=NaN flags=seeded
	interval summary db.query 0 count=11 sum=0.065000000000000002 min=0.001 max=0.01 median=0.0050000000000000001 quantiles=0.5:0.0050000000000000001,0.90000000000000002:0.0089999999999999993,0.94999999999999996:0.01,0.98999999999999999:0.01
	EOF
	test_cmp expected agg.fig
'

test_expect_success 'spans: calls and duration histograms per region from the known trace' '
	interval_figures spans.out >spans.fig &&
	cat >expected <<-\EOF &&
	interval counter tally_trace_region_calls_total{rank="3",region="solve"} 0 count=0 sum=0 min=NaN max=NaN median=NaN flags=seeded
	interval counter tally_trace_region_calls_total{rank="3",region="solve"} 2 count=2 sum=0 min=NaN max=NaN median=NaN
	interval histogram tally_trace_region_duration_seconds{rank="3",region="solve"} 0 count=0 sum=0 min=NaN max=NaN median=NaN buckets=1:0,5:0,10:0,+Inf:0 flags=seeded
	interval histogram tally_trace_region_duration_seconds{rank="3",region="solve"} 0 count=2 sum=3.5 min=0.5 max=3 median=0.5 quantiles=0.5:0.5,0.90000000000000002:3,0.94999999999999996:3,0.98999999999999999:3 buckets=1:1,5:2,10:2,+Inf:2
	interval counter tally_trace_region_calls_total{rank="3",region="main"} 0 count=0 sum=0 min=NaN max=NaN median=NaN flags=seeded
	interval counter tally_trace_region_calls_total{rank="3",region="main"} 1 count=1 sum=0 min=NaN max=NaN median=NaN
	interval histogram tally_trace_region_duration_seconds{rank="3",region="main"} 0 count=0 sum=0 min=NaN max=NaN median=NaN buckets=1:0,5:0,10:0,+Inf:0 flags=seeded
	interval histogram tally_trace_region_duration_seconds{rank="3",region="main"} 0 count=1 sum=10 min=10 max=10 median=10 quantiles=0.5:10,0.90000000000000002:10,0.94999999999999996:10,0.98999999999999999:10 buckets=1:0,5:0,10:1,+Inf:1
	EOF
	test_cmp expected spans.fig
'

test_expect_success 'prometheus: statsd -> aggregate (5 s) -> prometheus, promtool-clean' '
	udp=$(free_port) && port=$(free_port) &&
	cat >prom.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:$udp"; }; };
	filters = { agg = { plugin = "aggregate"; interval = 5.0;
			    buckets = [0.005, 0.05]; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["sd"]; through = ["agg"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port && udp_bound $udp" prom.conf &&
	printf "%s\n" "size:0.001|h" "size:0.01|h" "size:1|h|@0.5" >d2 &&
	# one datagram: every series in the same interval
	cat d1 d2 >d12 &&
	send udp4 127.0.0.1:$udp d12 &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >m &&
		grep -q \"^req_count_total 17\$\" m &&
		grep -q \"^db_query_count 11\$\" m &&
		grep -q \"^size_count 4\$\" m &&
		grep -q \"^db_query{quantile=\\\"0.9\\\"} 0.009\$\" m" &&
	grep "^# TYPE req_count_total counter\$" m &&
	grep "^q 12\$" m &&
	grep "^t -4\$" m &&
	grep "^# TYPE db_query summary\$" m &&
	grep "^db_query{quantile=\"0.9\"} 0.009\$" m &&
	grep "^db_query{quantile=\"0.5\"} 0.005\$" m &&
	grep "^# TYPE size histogram\$" m &&
	grep "^size_bucket{le=\"0.005\"} 1\$" m &&
	grep "^size_bucket{le=\"0.05\"} 2\$" m &&
	grep "^size_bucket{le=\"+Inf\"} 4\$" m &&
	promtool check metrics <m &&
	send udp4 127.0.0.1:$udp d1 &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >m &&
		grep -q \"^req_count_total 34\$\" m &&
		grep -q \"^db_query_count 22\$\" m" &&
	stop_tallyd
'

# A timer sampled at @0.6 stands for 1/0.6 observations: the interval's
# count is 1.67, Prometheus's _count is whole (2). The sum is scaled with
# it, so _sum / _count is still the timer's mean, 1 ms (it read 0.83 ms).
test_expect_success 'prometheus: a sampled timer keeps its mean through a whole count' '
	udp=$(free_port) && port=$(free_port) &&
	cat >mean.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:$udp"; }; };
	filters = { agg = { plugin = "aggregate"; interval = 1.0; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["sd"]; through = ["agg"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port && udp_bound $udp" mean.conf &&
	echo "lat:1|ms|@0.6" >d3 &&
	send udp4 127.0.0.1:$udp d3 &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >m &&
		grep -q \"^lat_count 2\$\" m" &&
	grep "^lat_sum 0.002\$" m &&
	stop_tallyd
'

test_done
