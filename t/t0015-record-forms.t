#!/bin/sh
#
# t0015-record-forms.t - deltas, observations and set members (what a
# statsd input emits) through pipelines: which outputs take them, the
# --check-config refusal when nothing aggregates them, the prometheus
# output adding up counter increments, and tally_emit() from a filter
#
# The counter test input declares it may emit every non-cumulative form;
# testfilter declares it absorbs them all, as aggregate does (in pass mode
# it passes them on anyway, which reaches the core's last-line drop).

test_description='record forms: deltas, observations, set members'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

test_expect_success 'capture takes every form: one line each' '
	cat >forms.conf <<-EOF &&
	inputs = {
		d = { plugin = "counter"; name = "hits_total"; type = "counter";
		      form = "delta"; step = 2.5; sample_rate = 0.5; };
		o = { plugin = "counter"; name = "rt_seconds";
		      form = "observation"; step = 0.25; };
		s = { plugin = "counter"; name = "users"; form = "set"; };
	};
	outputs = { c = { plugin = "capture"; path = "forms.out"; }; };
	pipelines = { p = { from = ["d", "o", "s"]; to = ["c"]; }; };
	EOF
	tallyd --once -c forms.conf &&
	sort forms.out >forms.sorted &&
	cat >forms.expect <<-\EOF &&
	delta counter hits_total{i="0"} 2.5 rate=0.5
	observation summary rt_seconds{i="0"} 0.25 rate=1
	set gauge users{i="0"} member=read1
	EOF
	test_cmp forms.expect forms.sorted
'

test_expect_success '--check-config: observations into prometheus need aggregate' '
	port=$(free_port) &&
	cat >noagg.conf <<-EOF &&
	inputs = { o = { plugin = "counter"; form = "observation"; }; };
	outputs = { prom = { plugin = "prometheus";
			     listen = "127.0.0.1:$port"; }; };
	pipelines = {
		p = { from = ["o"]; to = ["prom"]; };
	};
	EOF
	test_must_fail tallyd --check-config -c noagg.conf 2>err &&
	cat >err.expect <<-\EOF &&
	noagg.conf:5: error: pipelines.p: input '"'"'o'"'"' may send observations (timer values), which output '"'"'prom'"'"' (prometheus) does not take: have the input leave them out (statsd: types = ["c", "g"]) or put a filter that turns them into totals in the pipeline'"'"'s '"'"'through'"'"'
	EOF
	grep "pipelines.p" err >err.got &&
	test_cmp err.expect err.got
'

test_expect_success '--check-config: a filter that absorbs them makes it valid' '
	cat >agg.conf <<-EOF &&
	inputs = { o = { plugin = "counter"; form = "observation"; }; };
	filters = { agg = { plugin = "testfilter"; mode = "drop"; }; };
	outputs = { prom = { plugin = "prometheus";
			     listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["o"]; through = ["agg"]; to = ["prom"]; }; };
	EOF
	tallyd --check-config -c agg.conf
'

test_expect_success 'prometheus adds up counter increments (step / sample_rate)' '
	port=$(free_port) &&
	cat >delta.conf <<-EOF &&
	global = { interval = 0.05; };
	inputs = {
		d = { plugin = "counter"; name = "hits"; type = "counter";
		      count = 2; form = "delta"; step = 1.5; sample_rate = 0.5;
		      max_reads = 3; };
		g = { plugin = "counter"; name = "depth"; type = "gauge";
		      form = "delta"; step = -2; max_reads = 4; };
	};
	outputs = { prom = { plugin = "prometheus"; expire = 600.0;
			     listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["d", "g"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" delta.conf &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >m &&
		grep -q \"^depth{i=.0.} -8$\" m &&
		grep -q \"^hits_total{i=.1.} 9$\" m" &&
	grep "^hits_total{i=\"0\"} 9$" m &&
	grep "^# TYPE hits_total counter$" m &&
	stop_tallyd
'

test_expect_success 'forms an output does not take are dropped and counted' '
	port=$(free_port) &&
	cat >guard.conf <<-EOF &&
	global = { interval = 0.05; };
	inputs = {
		o = { plugin = "counter"; form = "observation"; count = 3; };
		self = { plugin = "self"; };
	};
	filters = { liar = { plugin = "testfilter"; mode = "pass"; }; };
	outputs = { prom = { plugin = "prometheus";
			     listen = "127.0.0.1:$port"; }; };
	pipelines = {
		p = { from = ["o"]; through = ["liar"]; to = ["prom"]; };
		s = { from = ["self"]; to = ["prom"]; };
	};
	EOF
	start_tallyd --wait "port_listening $port" guard.conf &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >m &&
		grep -q \"reason=.needs_aggregate.} [1-9]\" m" &&
	! grep "^test_counter_value" m &&
	grep "prometheus\[prom\]: 3 samples of o were deltas, observations or set members, which this output does not take: have the input leave them out or put a filter that turns them into totals in front of it" tallyd.log &&
	stop_tallyd
'

test_expect_success 'a filter emits from its own timer: downstream of it only' '
	cat >defer.conf <<-EOF &&
	global = { interval = 0.05; };
	inputs = {
		a = { plugin = "counter"; max_reads = 2; };
		self = { plugin = "self"; interval = 0.05; };
	};
	filters = {
		d = { plugin = "testfilter"; mode = "defer"; };
		rw = { plugin = "testfilter"; mode = "rewrite"; };
	};
	outputs = {
		late = { plugin = "capture"; path = "late.out"; source = true; };
		plain = { plugin = "capture"; path = "plain.out"; };
		selfcap = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		p1 = { from = ["a"]; through = ["d", "rw"]; to = ["late"]; };
		p2 = { from = ["a"]; to = ["plain"]; };
		s = { from = ["self"]; to = ["selfcap"]; };
	};
	EOF
	start_tallyd defer.conf &&
	wait_for "test \$(wc -l <late.out) -ge 2" &&
	cat >late.expect <<-\EOF &&
	a: gauge rw_test_counter_value{i="0",seq="1"} 1
	a: gauge rw_test_counter_value{i="0",seq="2"} 2
	EOF
	test_cmp late.expect late.out &&
	cat >plain.expect <<-\EOF &&
	gauge test_counter_value{i="0"} 1
	gauge test_counter_value{i="0"} 2
	EOF
	test_cmp plain.expect plain.out &&
	wait_for "grep -q \"{event=.emit_refused_in_process.,instance=.d.,.*} 2$\" self.out" &&
	! grep "emit_in_process_accepted" self.out &&
	stop_tallyd
'

test_done
