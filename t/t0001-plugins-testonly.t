#!/bin/sh
test_description='test-only plugins: counter, testfilter and capture

The other integration tests trust these three plugins to say exactly what
went through a pipeline; this checks them end to end through tallyd.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

test_expect_success 'tallyd --once: counter -> capture gives one line per sample' '
	cat >once.conf <<-EOF &&
	inputs = { cnt = { plugin = "counter"; count = 3; }; };
	outputs = { cap = { plugin = "capture"; path = "once.out"; }; };
	pipelines = { p = { from = ["cnt"]; to = ["cap"]; }; };
	EOF
	tallyd --once -c once.conf &&
	cat >once.expect <<-\EOF &&
	gauge test_counter_value{i="0"} 1
	gauge test_counter_value{i="1"} 1
	gauge test_counter_value{i="2"} 1
	EOF
	test_cmp once.expect once.out
'

test_expect_success 'counter name/type/ts and capture source/timestamps options' '
	# libconfig 1.5 needs the L suffix for integers past 32 bits.
	cat >opts.conf <<-EOF &&
	inputs = { c7 = { plugin = "counter"; name = "x_total";
			  type = "counter"; ts = 1700000000123456789L; }; };
	outputs = { cap = { plugin = "capture"; path = "opts.out";
			    source = true; timestamps = true; }; };
	pipelines = { p = { from = ["c7"]; to = ["cap"]; }; };
	EOF
	tallyd --once -c opts.conf &&
	echo "c7: counter x_total{i=\"0\"} 1 ts=1700000000123456789" >opts.expect &&
	test_cmp opts.expect opts.out
'

test_expect_success 'count = 0 emits nothing, and capture still creates its file' '
	cat >zero.conf <<-EOF &&
	inputs = { cnt = { plugin = "counter"; count = 0; }; };
	outputs = { cap = { plugin = "capture"; path = "zero.out"; }; };
	pipelines = { p = { from = ["cnt"]; to = ["cap"]; }; };
	EOF
	tallyd --once -c zero.conf &&
	test -f zero.out &&
	test_must_be_empty zero.out
'

test_expect_success 'a running tallyd: values count reads, seq counts batches' '
	cat >run.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { cnt = { plugin = "counter"; count = 2; }; };
	filters = { rw = { plugin = "testfilter"; mode = "rewrite"; }; };
	outputs = {
		plain = { plugin = "capture"; path = "plain.out"; };
		rwcap = { plugin = "capture"; path = "rw.out"; };
	};
	pipelines = {
		p1 = { from = ["cnt"]; to = ["plain"]; };
		p2 = { from = ["cnt"]; through = ["rw"]; to = ["rwcap"]; };
	};
	EOF
	start_tallyd run.conf --user &&
	wait_for "test \$(wc -l <rw.out) -ge 6" &&
	stop_tallyd &&
	head -n 6 plain.out >plain.head &&
	cat >plain.expect <<-\EOF &&
	gauge test_counter_value{i="0"} 1
	gauge test_counter_value{i="1"} 1
	gauge test_counter_value{i="0"} 2
	gauge test_counter_value{i="1"} 2
	gauge test_counter_value{i="0"} 3
	gauge test_counter_value{i="1"} 3
	EOF
	test_cmp plain.expect plain.head &&
	head -n 6 rw.out >rw.head &&
	cat >rw.expect <<-\EOF &&
	gauge rw_test_counter_value{i="0",seq="1"} 1
	gauge rw_test_counter_value{i="1",seq="1"} 1
	gauge rw_test_counter_value{i="0",seq="2"} 2
	gauge rw_test_counter_value{i="1",seq="2"} 2
	gauge rw_test_counter_value{i="0",seq="3"} 3
	gauge rw_test_counter_value{i="1",seq="3"} 3
	EOF
	test_cmp rw.expect rw.head
'

test_expect_success 'every line of a longer run follows the pattern' '
	test $(wc -l <plain.out) -ge 6 &&
	awk "{ n = NR - 1
	       want = sprintf(\"gauge test_counter_value{i=\\\"%d\\\"} %d\",
			      n % 2, int(n / 2) + 1)
	       if (\$0 != want) { print NR \": \" \$0; bad = 1 } }
	     END { exit bad }" plain.out
'

test_done
