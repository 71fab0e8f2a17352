#!/bin/sh
test_description='tallyd --check-config reports every problem with file:line'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

C=$FIXTURES/config

# check_fails FIXTURE - --check-config must fail; its stderr goes to err
check_fails() {
	test_must_fail tallyd --check-config -c "$C/$1" 2>err
}

test_expect_success 'the shipped test configuration is accepted' '
	tallyd --check-config -c "$C/good-conf.d" 2>err &&
	grep "0 errors, 0 warnings" err
'

test_expect_success 'syntax error: libconfig message at its line' '
	check_fails syntax.conf &&
	grep "^$C/syntax.conf:3: error: syntax error" err
'

test_expect_success 'unknown option: line and nearest valid name' '
	check_fails unknown-key.conf &&
	grep "^$C/unknown-key.conf:3: error: inputs.a: unknown option .cuont. (did you mean .count.?)" err
'

test_expect_success 'wrong type names the expected type' '
	check_fails wrong-type.conf &&
	grep "^$C/wrong-type.conf:1: error: inputs.a: option .count. must be of type integer" err
'

test_expect_success 'out of range: plugin option and core interval' '
	check_fails range.conf &&
	grep "^$C/range.conf:2: error: inputs.a: option .count. = 100001 is out of range \[0, 100000\]" err &&
	grep "^$C/range.conf:3: error: inputs.b: option .interval. = -1.0 is out of range" err
'

test_expect_success 'missing required option at the instance line' '
	check_fails required.conf &&
	grep "^$C/required.conf:3: error: outputs.o: missing required option .path." err
'

test_expect_success 'pipelines naming unknown or wrong-kind instances' '
	check_fails dangling.conf &&
	grep "^$C/dangling.conf:4: error: pipelines.p: from names unknown instance .ghost." err &&
	grep "^$C/dangling.conf:5: error: pipelines.q: .o. in through is an output (defined at $C/dangling.conf:2), not a filter" err
'

test_expect_success 'unused instance is a warning, not an error' '
	tallyd --check-config -c "$C/unused.conf" 2>err &&
	grep "^$C/unused.conf:3: warning: inputs.spare is not used by any pipeline" err &&
	grep "0 errors, 1 warning$" err
'

test_expect_success 'plugin of the wrong kind, unknown plugin, no plugin' '
	check_fails plugins.conf &&
	grep "^$C/plugins.conf:2: error: inputs.a: plugin .capture. is an output, not an input" err &&
	grep "^$C/plugins.conf:3: error: inputs.b: no plugin named .no_such_plugin." err &&
	grep "^$C/plugins.conf:4: error: inputs.c: missing required option .plugin." err
'

test_expect_success 'unknown section, bad global value, empty from' '
	check_fails sections.conf &&
	grep "^$C/sections.conf:1: error: global: option .interval. = 0.0 is out of range \[1ms, 1d\]" err &&
	grep "^$C/sections.conf:2: error: unknown section .input. (did you mean .inputs.?)" err &&
	grep "^$C/sections.conf:3: error: pipelines.p: .from. is empty" err
'

test_expect_success 'bad enum choice lists the valid ones' '
	check_fails enum.conf &&
	grep "^$C/enum.conf:1: error: inputs.a: option .type. = \"histogramm\" is not one of: gauge, counter" err
'

test_expect_success 'a name defined in two files reports both places' '
	check_fails dup-conf.d &&
	grep "^$C/dup-conf.d/20-b.conf:4: error: instance .a. defined twice: here and at $C/dup-conf.d/10-a.conf:2" err &&
	grep "^$C/dup-conf.d/20-b.conf:6: error: pipeline .p. defined twice: here and at $C/dup-conf.d/10-a.conf:5" err
'

test_expect_success 'a bad shared option does not hide the plugin'"'"'s problems' '
	cat >both.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; interval = 0.0; count = -1; }; };
	outputs = { o = { plugin = "capture"; path = "/dev/null"; queue_size = 0; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	test_must_fail tallyd --check-config -c both.conf 2>err &&
	grep "^both.conf:1: error: inputs.a: option .interval. = 0.0 is out of range \[1ms, 1d\]$" err &&
	grep "^both.conf:1: error: inputs.a: option .count. = -1 is out of range \[0, 100000\]$" err &&
	grep "^both.conf:2: error: outputs.o: option .queue_size. = 0 is out of range \[1, 1048576\]$" err &&
	grep "3 errors, 0 warnings" err
'

test_expect_success 'a plugin check hook reports with file:line' '
	cat >hook.conf <<-EOF &&
	inputs = {
		a = { plugin = "counter";
		      name = ""; };
	};
	outputs = { o = { plugin = "capture"; path = "/dev/null"; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	test_must_fail tallyd --check-config -c hook.conf 2>err &&
	grep "^hook.conf:2: error: inputs.a: name must not be empty$" err &&
	grep "1 error, 0 warnings" err &&
	test_must_fail tallyd --once -c hook.conf 2>err &&
	grep "^hook.conf:2: error: inputs.a: name must not be empty$" err
'

test_expect_success 'one unknown option is one error' '
	check_fails unknown-key.conf &&
	grep "1 error, 0 warnings" err
'

test_expect_success 'a pipeline option: the nearest, or what a pipeline takes' '
	cat >pipe.conf <<-\EOF &&
	inputs = { a = { plugin = "counter"; }; };
	outputs = { o = { plugin = "capture"; path = "/dev/null"; }; };
	pipelines = { p = { form = ["a"]; via = ["a"]; to = ["o"]; }; };
	EOF
	test_must_fail tallyd --check-config -c pipe.conf 2>err &&
	grep "^pipe.conf:3: error: pipelines.p: unknown option .form. (did you mean .from.?)" err &&
	grep "^pipe.conf:3: error: pipelines.p: unknown option .via. (a pipeline takes from, through and to)$" err
'

test_expect_success 'a main file reads its conf.d after itself' '
	mkdir -p main/conf.d &&
	echo "global = { interval = 2.0; };" >main/tally.conf &&
	cp "$C"/good-conf.d/10-inputs.conf "$C"/good-conf.d/20-outputs.conf main/conf.d/ &&
	tallyd --check-config -c main/tally.conf 2>err &&
	grep "0 errors, 0 warnings" err &&
	echo "global = { interval = 3.0; };" >main/conf.d/30-again.conf &&
	test_must_fail tallyd --check-config -c main/tally.conf 2>err &&
	grep "main/conf.d/30-again.conf:1: error: global.interval set twice (first at main/tally.conf:1)" err
'

test_expect_success 'odd files in a configuration directory are skipped, not read' '
	mkdir odd &&
	cp "$C"/good-conf.d/*.conf odd/ &&
	mkfifo odd/30-fifo.conf &&
	mkdir odd/40-dir.conf &&
	tallyd --check-config -c odd 2>err &&
	grep "^odd/30-fifo.conf: warning: not a regular file, skipped" err &&
	grep "^odd/40-dir.conf: warning: not a regular file, skipped" err &&
	grep "0 errors, 2 warnings" err &&
	test_must_fail tallyd --check-config -c odd/30-fifo.conf 2>err &&
	grep "odd/30-fifo.conf: error: not a regular file or a directory" err
'

test_expect_success 'include_dir = "." does not read the main file twice' '
	mkdir self && cp "$C"/good-conf.d/10-inputs.conf self/ &&
	cat "$C"/good-conf.d/20-outputs.conf >self/main.conf &&
	echo "global = { include_dir = \".\"; };" >>self/main.conf &&
	tallyd --check-config -c self/main.conf 2>err &&
	grep "0 errors, 0 warnings" err
'

test_expect_success 'global.plugin_path must name directories' '
	echo "global = { plugin_path = 5; };" >pp.conf &&
	test_must_fail tallyd --check-config -c pp.conf 2>err &&
	grep "^pp.conf:1: error: global: option .plugin_path. must be a string or a list of strings" err
'

test_expect_success 'a missing configuration is a clear error' '
	test_must_fail tallyd --check-config -c nowhere.conf 2>err &&
	grep "^nowhere.conf: error: cannot read: No such file or directory" err
'

# Two instances binding one address: start-up would fail on the second
# bind, so --check-config says so, with both places, after normalising.
test_expect_success 'two prometheus outputs on one listen address' '
	mkdir clash &&
	cat >clash/10-a.conf <<-\EOF &&
	outputs = {
	  a = { plugin = "prometheus"; listen = "127.0.0.1:19464"; };
	};
	EOF
	cat >clash/20-b.conf <<-\EOF &&
	outputs = {
	  b = { plugin = "prometheus";
	        listen = ["127.0.0.1:19465", "*:19464"]; };
	  c = { plugin = "prometheus"; listen = "localhost:19465"; };
	  d = { plugin = "prometheus"; listen = "127.0.0.2:19466"; };
	};
	EOF
	test_must_fail tallyd --check-config -c clash 2>err &&
	grep "^clash/20-b.conf:3: error: outputs.b: listen \"\*:19464\" is already bound by outputs.a (listen \"127.0.0.1:19464\" at clash/10-a.conf:2): two instances cannot bind the same address$" err &&
	grep "^clash/20-b.conf:4: error: outputs.c: listen \"localhost:19465\" is already bound by outputs.b (listen \"127.0.0.1:19465\" at clash/20-b.conf:3)" err &&
	test $(grep -c "already bound" err) = 2
'

test_expect_success 'a user collector: ports are the kernel'"'"'s, unless configured' '
	cat >uclash.conf <<-\EOF &&
	outputs = {
	  a = { plugin = "prometheus"; listen = "127.0.0.1:19464"; };
	  b = { plugin = "prometheus"; listen = "127.0.0.1:19464"; };
	};
	EOF
	tallyd --user --check-config -c uclash.conf 2>err &&
	! grep "already bound" err &&
	echo "global = { user_ports = \"configured\"; };" >>uclash.conf &&
	test_must_fail tallyd --user --check-config -c uclash.conf 2>err &&
	grep "^uclash.conf:3: error: outputs.b: listen \"127.0.0.1:19464\" is already bound by outputs.a" err
'

test_expect_success 'two zmq_trace inputs on one endpoint' '
	cat >zclash.conf <<-EOF &&
	inputs = {
	  a = { plugin = "zmq_trace"; endpoint = "ipc://$PWD/t.sock"; };
	  b = { plugin = "zmq_trace"; endpoint = "ipc://$PWD//./t.sock"; };
	  c = { plugin = "zmq_trace"; endpoint = "tcp://127.0.0.1:19467"; };
	  d = { plugin = "zmq_trace"; endpoint = "tcp://*:19467"; };
	  e = { plugin = "zmq_trace"; endpoint = "tcp://127.0.0.1:*"; };
	  f = { plugin = "zmq_trace"; endpoint = "tcp://127.0.0.1:*"; };
	};
	outputs = { o = { plugin = "capture"; path = "o.out"; }; };
	pipelines = { p = { from = ["a", "b", "c", "d", "e", "f"]; to = ["o"]; }; };
	EOF
	test_must_fail tallyd --check-config -c zclash.conf 2>err &&
	grep -F "zclash.conf:3: error: inputs.b: endpoint \"ipc://$PWD//./t.sock\" is already bound by inputs.a (endpoint \"ipc://$PWD/t.sock\" at zclash.conf:2)" err &&
	grep -F "zclash.conf:5: error: inputs.d: endpoint \"tcp://*:19467\" is already bound by inputs.c (endpoint \"tcp://127.0.0.1:19467\" at zclash.conf:4)" err &&
	test $(grep -c "already bound" err) = 2
'

test_expect_success '@include: absolute paths, relative ones from the including file, file:line inside' '
	mkdir -p inc/sub &&
	cat >inc/sub/inputs.conf <<-EOF &&
	a = { plugin = "counter"; };
	@include "more.conf"
	EOF
	cat >inc/sub/more.conf <<-EOF &&
	b = { plugin = "counter";
	      count = 100001; };
	EOF
	cat >inc/outputs.conf <<-EOF &&
	outputs = { o = { plugin = "capture"; path = "inc.out"; }; };
	EOF
	cat >inc/main.conf <<-EOF &&
	inputs = {
		@include "sub/inputs.conf"
	};
	@include "$PWD/inc/outputs.conf"
	pipelines = { p = { from = ["a", "b"]; to = ["o"]; }; };
	EOF
	test_must_fail tallyd --check-config -c inc/main.conf 2>err &&
	grep "^inc/sub/more.conf:2: error: inputs.b: option .count. = 100001 is out of range \[0, 100000\]$" err &&
	grep "1 error, 0 warnings" err &&
	sed "s/100001/2/" inc/sub/more.conf >tmp && mv tmp inc/sub/more.conf &&
	tallyd --once -c inc/main.conf 2>err &&
	grep -c "^gauge test_counter_value{i=\"[01]\"} 1$" inc.out >n &&
	echo 3 >expect && test_cmp expect n
'

test_expect_success '@include of a missing file, a directory, a FIFO, itself' '
	printf "a = 1;\n@include \"nothere.conf\"\n" >inc/miss.conf &&
	test_must_fail tallyd --check-config -c inc/miss.conf 2>err &&
	grep "^inc/miss.conf:2: error: @include \"inc/nothere.conf\": cannot read: No such file or directory$" err &&
	echo "@include \"sub\"" >inc/dir.conf &&
	test_must_fail tallyd --check-config -c inc/dir.conf 2>err &&
	grep "^inc/dir.conf:1: error: @include \"inc/sub\": cannot read: Is a directory$" err &&
	mkfifo inc/fifo &&
	echo "@include \"fifo\"" >inc/fifo.conf &&
	test_must_fail tallyd --check-config -c inc/fifo.conf 2>err &&
	grep "^inc/fifo.conf:1: error: @include \"inc/fifo\": cannot read: not a regular file$" err &&
	echo "@include \"self.conf\"" >inc/self.conf &&
	test_must_fail tallyd --check-config -c inc/self.conf 2>err &&
	grep "^inc/self.conf:1: error: @include \"inc/self.conf\": more than 10 nested includes (does a file include itself?)$" err
'

test_expect_success 'integers as written: wider than 32 bits, wider than 64 bits' '
	cat >wide.conf <<-EOF &&
	inputs = {
		a = { plugin = "counter"; count = 99999999999999999999; };
		b = { plugin = "counter"; count = 4294967297; };
		tr = { plugin = "zmq_trace"; endpoint = "tcp://127.0.0.1:*";
		       rcvhwm = 99999999999999999999; };
	};
	outputs = { o = { plugin = "capture"; path = "/dev/null"; }; };
	pipelines = { p = { from = ["a", "b", "tr"]; to = ["o"]; }; };
	EOF
	test_must_fail tallyd --check-config -c wide.conf 2>err &&
	grep "^wide.conf:2: error: inputs.a: option .count. = 99999999999999999999 is out of range \[0, 100000\]$" err &&
	grep "^wide.conf:3: error: inputs.b: option .count. = 4294967297 is out of range \[0, 100000\]$" err &&
	grep "^wide.conf:5: error: inputs.tr: option .rcvhwm. = 99999999999999999999 is out of range \[0, 2147483647\]$" err &&
	grep "3 errors, 0 warnings" err &&
	cat >ts.conf <<-EOF &&
	inputs = { c = { plugin = "counter"; ts = 1700000000123456789; }; };
	outputs = { o = { plugin = "capture"; path = "ts.out"; timestamps = true; }; };
	pipelines = { p = { from = ["c"]; to = ["o"]; }; };
	EOF
	tallyd --once -c ts.conf &&
	echo "gauge test_counter_value{i=\"0\"} 1 ts=1700000000123456789" >expect &&
	test_cmp expect ts.out
'

test_expect_success 'a name defined twice in one file: which, and both lines' '
	cat >twice.conf <<-EOF &&
	inputs = {
		a = { plugin = "counter";
		      count = 1;
		      count = 2; };
	};
	EOF
	test_must_fail tallyd --check-config -c twice.conf 2>err &&
	grep "^twice.conf:4: error: inputs.a.count defined twice: here and at twice.conf:3$" err &&
	grep "1 error, 0 warnings" err &&
	cat >twice2.conf <<-EOF &&
	inputs = {
		a = { plugin = "counter"; };
		a = { plugin = "counter"; };
	};
	EOF
	test_must_fail tallyd --check-config -c twice2.conf 2>err &&
	grep "^twice2.conf:3: error: inputs.a defined twice: here and at twice2.conf:2$" err &&
	mkdir -p twice3 &&
	echo "x = 1;" >twice3/inc.conf &&
	printf "global = {\n@include \"inc.conf\"\n  x = 2; };\n" >twice3/main.conf &&
	test_must_fail tallyd --check-config -c twice3/main.conf 2>err &&
	grep "^twice3/main.conf:3: error: global.x defined twice: here and at twice3/inc.conf:1$" err
'

test_expect_success 'typed options: lists of numbers, sizes, durations' '
	cat >typed.conf <<-EOF &&
	inputs = { t = { plugin = "opttypes";
			 buckets = (0.005, 0.5, 10);
			 percentiles = 99.5;
			 max_size = "1.5K";
			 timeout = "1h30m";
			 big = 9223372036854775807; }; };
	outputs = { o = { plugin = "capture"; path = "typed.out"; }; };
	pipelines = { p = { from = ["t"]; to = ["o"]; }; };
	EOF
	tallyd --once -c typed.conf &&
	cat >expect <<-EOF &&
	gauge test_opt_bucket{i="0"} 0.0050000000000000001
	gauge test_opt_bucket{i="1"} 0.5
	gauge test_opt_bucket{i="2"} 10
	gauge test_opt_percentile{i="0"} 99.5
	gauge test_opt_size_bytes 1536
	gauge test_opt_timeout_seconds 5400
	gauge test_opt_big 9.2233720368547758e+18
	EOF
	test_cmp expect typed.out
'

# typed_fails 'OPTION = VALUE;' LINE - that option in an opttypes input
# must be refused; stderr in err
typed_fails() {
	cat >bad.conf <<-EOF &&
	inputs = { t = { plugin = "opttypes"; $1 }; };
	outputs = { o = { plugin = "capture"; path = "/dev/null"; }; };
	pipelines = { p = { from = ["t"]; to = ["o"]; }; };
	EOF
	test_must_fail tallyd --check-config -c bad.conf 2>err
}

test_expect_success 'typed options: each refusal says what was written' '
	typed_fails "buckets = [1.0, 0.5];" &&
	grep "^bad.conf:1: error: inputs.t: option .buckets. element 2 = 0.5 is not above element 1 = 1.0 (the values must increase)$" err &&
	typed_fails "percentiles = [50, 150];" &&
	grep "^bad.conf:1: error: inputs.t: option .percentiles. element 2 = 150 is out of range \[0, 100\]$" err &&
	typed_fails "percentiles = \"90\";" &&
	grep "^bad.conf:1: error: inputs.t: option .percentiles. must be a number or a list of numbers$" err &&
	typed_fails "buckets = [0.5, 1];" &&
	grep "^bad.conf:1: error: mismatched element type in array (an array holds one type: write 1.0, not 1, beside 0.5, or make it a list: (0.5, 1))$" err &&
	typed_fails "max_size = \"64 mb\";" &&
	grep "^bad.conf:1: error: inputs.t: option .max_size. = \"64 mb\" is not a size: give bytes, or a number and a unit: K, M, G, T, P or KiB, MiB, GiB, TiB, PiB (powers of 1024); kB, MB, GB, TB, PB (powers of 1000)$" err &&
	typed_fails "max_size = \"2TiB\";" &&
	grep "^bad.conf:1: error: inputs.t: option .max_size. = \"2TiB\" is out of range \[1, 1TiB\]$" err &&
	typed_fails "max_size = 0;" &&
	grep "^bad.conf:1: error: inputs.t: option .max_size. = 0 is out of range \[1, 1TiB\]$" err &&
	typed_fails "timeout = \"5 minutes\";" &&
	grep "^bad.conf:1: error: inputs.t: option .timeout. = \"5 minutes\" is not a duration: give seconds, or numbers with units d, h, m, s, ms, us, ns (\"250ms\", \"1h30m\")$" err &&
	typed_fails "timeout = \"2d\";" &&
	grep "^bad.conf:1: error: inputs.t: option .timeout. = \"2d\" is out of range \[1ms, 1d\]$" err &&
	typed_fails "timeout = true;" &&
	grep "^bad.conf:1: error: inputs.t: option .timeout. must be a duration: seconds, or a string such as \"30s\"$" err &&
	typed_fails "big = 99999999999999999999;" &&
	grep "^bad.conf:1: error: inputs.t: option .big. = 99999999999999999999 is out of range \[-9223372036854775808, 9223372036854775807\]$" err
'

test_expect_success '--describe prints the shared options from their table, then the plugin'"'"'s' '
	tallyd --describe opttypes >out &&
	cat >expect <<-EOF &&
	opttypes (input): test only: typed options read back as samples

	options:
	  plugin                   string (required)            which plugin the instance runs
	  interval                 duration                     seconds between reads or ticks (default: global.interval) (range 1ms..1d)
	  buckets                  list of numbers              histogram bucket bounds, increasing (default: 0.1,1,10) (range 0..1000000000) (increasing)
	  percentiles              list of numbers              percentiles to report (default: 50,90,99) (range 0..100)
	  max_size                 size                         largest batch in bytes (default: 64MiB) (range 1..1TiB)
	  timeout                  duration                     how long to wait (default: 30s) (range 1ms..1d)
	  big                      integer                      any 64-bit integer (default: 0)
	EOF
	test_cmp expect out &&
	tallyd --describe capture >out &&
	grep "^  queue_size  *integer  *batches queued while the output is busy; the oldest is dropped beyond (default: 1024) (range 1..1048576)$" out &&
	! grep "^  interval" out
'

test_done
