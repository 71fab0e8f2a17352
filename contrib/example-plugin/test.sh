#!/bin/sh
# contrib/example-plugin/test.sh - the example input, run once by tallyd:
# a good file gives its number scaled, a bad one nothing but a count.
# TALLYD names the tallyd to run (default: the one on PATH); the example's
# directory goes first on its plugin path, so no installation is needed.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
tallyd=${TALLYD:-tallyd}
run=$here/test-run
rm -rf "$run" && mkdir -p "$run" && cd "$run"
fail() { echo "FAIL: $*" >&2; exit 1; }

conf() {
	cat >tally.conf <<-CONF
	global = { plugin_path = ["$here"]; };
	inputs = { e = { plugin = "example"; path = "$run/value";
			 scale = 0.001; name = "example_seconds"; }; };
	outputs = { f = { plugin = "file"; path = "$run/out.jsonl"; }; };
	pipelines = { p = { from = ["e"]; to = ["f"]; }; };
	CONF
}

conf
echo "1500 ms" >value
"$tallyd" --once -c tally.conf 2>log || fail "tallyd --once: $(cat log)"
grep -q '"name":"example_seconds"' out.jsonl || fail "no record: $(cat out.jsonl)"
grep -q '"value":1.5[,}]' out.jsonl || fail "value is not 1.5: $(cat out.jsonl)"
grep -q '"path":"'"$run"'/value"' out.jsonl || fail "no path label"

rm -f out.jsonl
echo "none" >value
"$tallyd" --once -c tally.conf 2>log || fail "a bad file stopped tallyd"
! grep -q example_seconds out.jsonl 2>/dev/null || fail "a bad file gave a value"
grep -q "no number in the file" log || fail "not logged: $(cat log)"
echo "PASS: example plugin"
