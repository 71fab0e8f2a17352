#!/bin/sh
test_description='influxdb output across a reload that replaces it: the
points it holds while the server refuses (503) go to its successor with
their batches, none lost; with no successor they are counted as dropped
(reason reload). The server is the recording HTTP server in Python
(t/http-recorder.py): influxd cannot be made to answer 503 on demand'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"
. "$SHARNESS_TEST_SRCDIR/t50-lib.sh"

require_cmd curl

SERIES=10
READS=30
PRODUCED=$((SERIES * READS))

# conf NAME FLUSH TO: counter -> TO (db: influxdb to the recorder; prom),
# self -> prometheus on $prom
conf() {
	cat >"$1" <<-EOF
	global = { interval = 0.1; log_level = "info"; };
	inputs = { c = { plugin = "counter"; count = $SERIES;
	                 max_reads = $READS; name = "rl"; };
	           self = { plugin = "self"; interval = 0.2; }; };
	outputs = { db = { plugin = "influxdb"; database = "tally";
	                   url = "http://127.0.0.1:$RECORDER_PORT";
	                   batch_size = 1000; flush_interval = "$2"; };
	            prom = { plugin = "prometheus"; listen = "127.0.0.1:$prom"; }; };
	pipelines = { p = { from = ["c"]; to = ["$3"]; };
	              s = { from = ["self"]; to = ["prom"]; }; };
	EOF
}

# delivered: points of rl the recorder answered 204, each once
delivered() {
	"$PYTHON3" - <<-\EOF
	import json
	seen = set()
	for line in open("rec.log"):
	    r = json.loads(line)
	    if r["status"] == 204:
	        seen.update(p.split(" ")[0] + p.split(" ")[2]
	                    for p in r["body"].splitlines())
	print(len(seen))
	EOF
}

core_dropped() {
	curl -sf "http://127.0.0.1:$prom/metrics" >m &&
	self_count m tally_dropped_total tallyd "reason=\"$1\""
}

test_expect_success 'start the recorder, answering 503 for now' '
	for i in $(seq 1 500); do echo 503; done >script &&
	recorder_start rec --script script &&
	prom=$(free_port)
'

test_expect_success 'a reload replaces the output while it holds points' '
	conf a.conf 0.5s db &&
	start_tallyd a.conf &&
	wait_for "grep -q \"HTTP 503\" tallyd.log" &&
	conf a.conf 0.3s db &&
	reload_tallyd &&
	grep "replaced: [0-9]* points not delivered yet go to the successor" \
		tallyd.log &&
	: >script &&
	wait_for "test \$(delivered) -eq $PRODUCED" 60 &&
	test $(core_dropped reload) -eq 0 &&
	stop_tallyd &&
	! grep "not delivered$" tallyd.log
'

test_expect_success 'a reload removes the output: what it held is counted' '
	rm -f rec.log &&
	for i in $(seq 1 500); do echo 503; done >script &&
	conf b.conf 0.5s db &&
	start_tallyd b.conf &&
	wait_for "grep -q \"HTTP 503\" tallyd.log" &&
	conf b.conf 0.5s prom &&
	sed -i "/plugin = \"influxdb\"/,/flush_interval/d" b.conf &&
	sed -i "s/^ *prom = {/outputs = { prom = {/" b.conf &&
	reload_tallyd &&
	wait_for "test \$(core_dropped reload) -gt 0" &&
	d=$(core_dropped reload) &&
	tally_diag "held at the reload, counted as dropped: $d" &&
	stop_tallyd
'

test_done
