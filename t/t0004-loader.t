#!/bin/sh
test_description='plugin loader refuses bad plugins with the file and reason'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

TP=$top_builddir/t/plugins

test_expect_success 'broken plugins are each refused with one line' '
	test_must_fail env TALLY_PLUGIN_PATH= "$TALLYD" --list-plugins \
		--plugin-dir "$TP" >out 2>err &&
	grep "^tallyd: error: $TP/badabi.la: refused: ABI version mismatch" err &&
	grep "^tallyd: error: $TP/badsize.la: refused: descriptor size mismatch" err &&
	grep "^tallyd: error: $TP/misnamed.la: refused: plugin name does not match the file name" err &&
	grep "^tallyd: error: $TP/noops.la: refused: missing mandatory op write" err &&
	test $(grep -c refused err) -eq 4 &&
	grep "^counter  *input  " out &&
	grep "^capture  *output " out
'

test_expect_success 'a plugin found twice in the path is refused the second time' '
	mkdir dup &&
	cp "$TP"/.libs/counter.so dup/ &&
	test_must_fail env TALLY_PLUGIN_PATH= "$TALLYD" --list-plugins \
		--plugin-dir "$TP" --plugin-dir "$PWD/dup" >out 2>err &&
	grep "^tallyd: error: $PWD/dup/counter.so: refused: duplicate plugin name .counter. (already loaded from $TP/counter.la)" err
'

test_expect_success 'the first directory of the path wins' '
	cat >one.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; }; };
	outputs = { o = { plugin = "capture"; path = "o.out"; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	tallyd --plugin-dir "$PWD/dup" --check-config -c one.conf 2>err &&
	grep "0 errors" err
'

test_expect_success 'a config naming a refused plugin fails with both reasons' '
	cat >bad.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; }; };
	outputs = { o = { plugin = "badabi"; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	test_must_fail tallyd --check-config -c bad.conf 2>err &&
	grep "badabi.la: refused: ABI version mismatch" err &&
	grep "^bad.conf:2: error: outputs.o: plugin .badabi. was refused (see above)" err
'

test_expect_success '--describe documents options from the option table' '
	tallyd --describe counter >out &&
	grep "^counter (input): " out &&
	grep "^  count  *integer  .*(default: 1) (range 0..100000)" out &&
	grep "^  interval  *duration" out &&
	grep "^sends: deltas (counter increments, gauge adjustments), observations (timer values), set members$" out &&
	tallyd --describe capture >out &&
	grep "^  path  *string (required)" out &&
	grep "^takes: deltas (counter increments, gauge adjustments), observations (timer values), set members, interval records (an aggregate filter.s summaries)$" out &&
	grep "^  queue_records  *integer  .*(default: 1000000) (range 1..1073741824)$" out &&
	grep "^  labels  *group of labels " out &&
	tallyd --describe testfilter >out &&
	grep "^aggregates: deltas" out &&
	test_must_fail tallyd --describe no_such 2>err &&
	grep "no plugin named .no_such." err
'

test_expect_success 'plugin names cannot escape the plugin path' '
	cat >esc.conf <<-EOF &&
	inputs = { a = { plugin = "../plugins/counter"; }; };
	EOF
	test_must_fail tallyd --check-config -c esc.conf 2>err &&
	grep "no plugin named" err && grep -F "../plugins/counter" err
'

test_expect_success 'command line: version, help, bad option' '
	tallyd --version >out && grep "^tallyd [0-9.]* (plugin ABI 4)$" out &&
	tallyd --help >out && grep -- "--check-config" out &&
	test_expect_code 2 tallyd --bogus 2>err &&
	grep -- "--config=PATH" err
'

test_done
