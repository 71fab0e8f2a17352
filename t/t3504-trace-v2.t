#!/bin/sh
test_description='wire v2 end to end: the Python encoder against the
document'"'"'s vectors; the C and Python clients'"'"' attributes and counters
through zmq_trace into prometheus (its attributes option, and behind an
aggregate filter), a capture and a JSON lines file, with exact values; a
plain (v1) sender beside them'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

zt_require_pyzmq
require_cmd curl

PY="$PYTHON3"
export PYTHONPATH="$top_srcdir/contrib/python"

test_expect_success 'the Python encoder writes the v2 vectors' '
	cat >vec.py <<-\EOF &&
	import re, struct, sys
	import tally_trace as tt
	doc = open(sys.argv[1]).read()
	def vec(name):
	    m = re.search(r"# vector %s\n(.*?)```" % name, doc, re.S)
	    return bytes(int(x, 16) for line in m.group(1).splitlines()
	                 for x in line.split("#")[0].split())
	t = tt.Tracer.__new__(tt.Tracer)
	t._trace, t._host, t._pid, t._rank = b"job42", b"n01", 4242, 3
	got = {}
	src = (tt.attr_item(tt.ITEM_SOURCE, "local_rank", 1) +
	       tt.attr_item(tt.ITEM_SOURCE, "rocr_visible_devices", "0,1"))
	got["v2-begin-source"] = t._message(tt.BEGIN, 0, 1722000000123456789,
	                                    1, 0, 4243, b"solver", src)
	at = b"".join(tt.attr_item(tt.ITEM_ATTR, k, v) for k, v in
	              (("bytes", 4096), ("ratio", 0.5), ("file", "ckpt.h5"),
	               ("ok", True)))
	got["v2-end-attrs"] = t._message(tt.END, 0, 1722000001000000000, 1, 0,
	                                 4243, b"solver", at)
	text, enc, n = tt._labels({"peer": "2"})
	a = tt._Counter(tt.DELTA, "mpi_bytes", enc, n)
	struct.pack_into("<q", a.item, 14, 1048576)
	struct.pack_into("<Q", a.item, 6, 1)
	b = tt._Counter(tt.GAUGE, "queue_depth", b"", 0)
	struct.pack_into("<d", b.item, 14, 3.5)
	got["v2-counter"] = t._message(tt.COUNTER, 0, 1722000001500000000, 0,
	                               0, 4243, b"", bytes(a.item) + bytes(b.item))
	got["end-root"] = t._message(tt.END, 0, 1722000001000000000, 1, 0, 4243,
	                             b"solver")
	for k, v in got.items():
	    print(k, "ok" if v == vec(k) else "DIFFERS")
	EOF
	"$PY" vec.py "$top_srcdir/doc/wire-format.md" >got &&
	cat >expect <<-\EOF &&
	v2-begin-source ok
	v2-end-attrs ok
	v2-counter ok
	end-root ok
	EOF
	test_cmp expect got
'

test_expect_success 'start tallyd: zmq_trace to prometheus, capture, file' '
	port=$(free_port) &&
	aport=$(free_port) &&
	cat >v2.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = {
		tr = { plugin = "zmq_trace"; endpoint = "$EP";
		       check_interval = 0.2; source_metrics = true; };
	};
	filters = {
		agg = { plugin = "aggregate"; interval = 0.2;
			dimensions = ["rank"]; };
	};
	outputs = {
		prom = { plugin = "prometheus"; listen = "127.0.0.1:$port";
			 attributes = ["bytes", "ratio"]; };
		pagg = { plugin = "prometheus"; listen = "127.0.0.1:$aport"; };
		cap = { plugin = "capture"; path = "cap.out"; attrs = true; };
		file = { plugin = "file"; path = "$PWD/spans.jsonl";
			 flush_interval = 0.1; };
	};
	pipelines = {
		p = { from = ["tr"]; to = ["prom", "cap", "file"]; };
		a = { from = ["tr"]; through = ["agg"]; to = ["pagg"]; };
	};
	EOF
	start_tallyd --wait "port_listening $port && port_listening $aport" \
		v2.conf
'

scrape() {
	curl -sf "http://127.0.0.1:$port/metrics" >"$1"
}

# 8 threads of one C process: a span with two attributes each, 5 calls
# to peer 1 each, a gauge; a Python process: two spans, 3 + 4 calls; a
# plain process: one span, nothing else.
test_expect_success 'the clients send attributes and counters' '
	PMIX_RANK=1 "$TRACE_EMIT" -T 8 "$EP" job begin:io attr:bytes=4096 \
		fattr:ratio=0.5 end:io count:calls:peer=1:5 \
		gauge:depth::2.5 >emit.c &&
	PMIX_RANK=2 "$PY" -c "
import tally_trace as tt
t = tt.Tracer(\"$EP\", \"job\")
with t.span(\"io\") as s:
    s.set(\"bytes\", 100)
    s.set(\"ratio\", 0.25)
t.counter_add(\"calls\", 3, {\"peer\": \"1\"})
with t.span(\"io\") as s:
    s.set(\"bytes\", 200)
t.counter_add(\"calls\", 4, \"peer=1\")
t.gauge_set(\"depth\", 7)
t.close()
" &&
	PMIX_RANK=3 "$TRACE_EMIT" "$EP" job begin:plain end:plain >emit.v1 &&
	wait_for "scrape m && test \$(grep -c ^tally_app_ m) = 4 &&
		  grep -q \"^tally_app_calls_total.*rank=.1.*} 40\$\" m"
'

test_expect_success 'prometheus: counters add up exactly, gauges, per source' '
	scrape m &&
	grep "^tally_app_" m | sort >got &&
	h="host=\"$HOST\"" &&
	cat >expect <<-EOF &&
	tally_app_calls_total{$h,peer="1",rank="1",trace="job"} 40
	tally_app_calls_total{$h,peer="1",rank="2",trace="job"} 7
	tally_app_depth{$h,rank="1",trace="job"} 2.5
	tally_app_depth{$h,rank="2",trace="job"} 7
	EOF
	test_cmp expect got &&
	pid1=$(sed -n "s/^sent=16 .* pid=\([0-9]*\)$/\1/p" emit.c) &&
	test -n "$pid1" &&
	grep "^tally_trace_source_messages_total{$h,pid=\"$pid1\",rank=\"1\",trace=\"job\"} [0-9]" m &&
	grep "^tally_trace_source_dropped_total{$h,pid=\"$pid1\",rank=\"1\",trace=\"job\"} 0$" m &&
	grep "^tally_trace_source_last_seen_timestamp_seconds{$h,pid=\"$pid1\",rank=\"1\",trace=\"job\"} 1[0-9.e+]*$" m
'

test_expect_success 'prometheus attributes option: sums per region' '
	scrape m &&
	grep "^tally_trace_region_\(bytes\|ratio\)_total" m | sort >got &&
	cat >expect <<-\EOF &&
	tally_trace_region_bytes_total{rank="1",region="io",trace="job"} 32768
	tally_trace_region_bytes_total{rank="2",region="io",trace="job"} 300
	tally_trace_region_ratio_total{rank="1",region="io",trace="job"} 4
	tally_trace_region_ratio_total{rank="2",region="io",trace="job"} 0.25
	EOF
	test_cmp expect got
'

test_expect_success 'aggregate: numeric attributes summed per region' '
	cat >expect <<-\EOF &&
	tally_trace_region_bytes_total{rank="1",region="io"} 32768
	tally_trace_region_bytes_total{rank="2",region="io"} 300
	EOF
	wait_for "curl -sf http://127.0.0.1:$aport/metrics >a &&
		  grep ^tally_trace_region_bytes_total a | sort >got &&
		  test_cmp expect got"
'

test_expect_success 'capture: attributes on the END records, the plain span as before' '
	test $(grep -c "^span end trace=job name=io .* rank=1 .*values=bytes=4096,ratio=0.5$" cap.out) = 8 &&
	grep "^span end trace=job name=io .* rank=2 .*values=bytes=100,ratio=0.25$" cap.out &&
	grep "^span end trace=job name=io .* rank=2 .*values=bytes=200$" cap.out &&
	grep "^span end trace=job name=plain .* rank=3 flags=0 attrs={}$" cap.out &&
	test $(grep -c "^span begin.*values" cap.out) = 0
'

test_expect_success 'file: attributes in JSON lines' '
	wait_for "test \$(grep -c \"\\\"bytes\\\":4096\" spans.jsonl) = 8" &&
	grep "\"values\":{\"bytes\":100,\"ratio\":0.25}" spans.jsonl
'

test_expect_success 'nothing malformed, nothing dropped' '
	stop_tallyd &&
	grep "stopped: [0-9]* messages received, 0 malformed, 0 dropped by clients" tallyd.log
'

test_done
