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
	grep "^$C/range.conf:3: error: inputs.b: option .interval. = -1 is out of range" err
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
	grep "^$C/sections.conf:1: error: global: option .interval. = 0 is out of range \[0.001, 86400\]" err &&
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

test_done
