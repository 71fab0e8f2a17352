#!/bin/sh
test_description='influxdb output against a real influxd (Debian influxdb
1.6) whose max-body-size is small: a batch answered 413 is split into
halves, and halves of halves, until influxd takes them; every point
arrives exactly once: read back with /query, and counted by a counting
HTTP relay between tallyd and influxd (influxd overwrites a repeated
point, so only the relay can see one)'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"
. "$SHARNESS_TEST_SRCDIR/t50-lib.sh"

require_cmd curl
require_cmd "$INFLUXD" "influxd not installed (Debian package influxdb)"

# 50 series, 6 reads 0.1 s apart, one request after 1 s: 300 points of
# some 60 bytes (the host tag varies) in one request against a limit of
# 5000 bytes: 150 are still too many, 75 fit
SERIES=50
READS=6
PRODUCED=$((SERIES * READS))
LIMIT=5000

# stored: points of t5004 influxd holds
stored() {
	influx_count tally t5004
}

test_expect_success 'influxd with max-body-size = 5000, the counting relay' '
	influxd_setup srv &&
	sed -i "/^\[http\]/a\\
  max-body-size = $LIMIT" srv/influxdb.conf &&
	grep -x "  max-body-size = $LIMIT" srv/influxdb.conf &&
	influxd_start srv &&
	influx_post "CREATE DATABASE tally" >/dev/null &&
	recorder_start relay --relay 127.0.0.1:$INFLUX_PORT &&
	prom=$(free_port)
'

test_expect_success 'tallyd sends 300 points in one batch; all are stored' '
	cat >413.conf <<-EOF &&
	global = { interval = 0.1; log_level = "info"; };
	inputs = { c = { plugin = "counter"; count = $SERIES;
	                 max_reads = $READS; name = "t5004"; };
	           self = { plugin = "self"; interval = 0.2; }; };
	outputs = { db = { plugin = "influxdb"; database = "tally";
	                   url = "http://127.0.0.1:$RECORDER_PORT";
	                   batch_size = 1000; flush_interval = "1s";
	                   gzip = false; };
	            prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$prom"; }; };
	pipelines = { p = { from = ["c"]; to = ["db"]; };
	              s = { from = ["self"]; to = ["prom"]; }; };
	EOF
	start_tallyd 413.conf &&
	wait_for "test \$(stored) -eq $PRODUCED" 60
'

test_expect_success 'influxd answered 413 and the batch went out in halves' '
	"$PYTHON3" - $LIMIT <<-\EOF >split &&
	import json, sys
	limit = int(sys.argv[1])
	big = ok = 0
	for line in open("relay.log"):
	    r = json.loads(line)
	    n = len(r["body"].splitlines())
	    if r["status"] == 413:
	        assert len(r["body"]) > limit, (n, len(r["body"]))
	        big += 1
	    elif r["status"] == 204:
	        assert len(r["body"]) <= limit, (n, len(r["body"]))
	        ok += 1
	print(big, ok)
	EOF
	read big ok <split &&
	tally_diag "requests answered 413: $big, answered 204: $ok" &&
	test $big -ge 2 && test $ok -ge 4 &&
	grep "request of 300 points too large for the server" tallyd.log &&
	curl -sf "http://127.0.0.1:$prom/metrics" >m &&
	test "$(self_count m tally_dropped_total db "reason=\"too_large\"")" \
		-eq 0
'

test_expect_success 'every point arrived once, with its value' '
	test "$(relay_acked relay.log t5004)" -eq $PRODUCED &&
	influx_reads tally t5004 $SERIES $READS
'

test_expect_success 'stop' '
	stop_tallyd
'

test_done
