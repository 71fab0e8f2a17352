#!/bin/sh
test_description='influxdb output across server restarts: influxd (Debian
influxdb 1.6) stopped with SIGTERM while tallyd streams and started again
10 s later: every point produced meanwhile arrives, none twice (counted by
a counting HTTP relay in Python between tallyd and influxd, since influxd
overwrites a repeated point); with a queue bound smaller than the outage,
stored + dropped = produced exactly; kill -9 once, the loss measured'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"
. "$SHARNESS_TEST_SRCDIR/t50-lib.sh"

require_cmd curl
require_cmd "$INFLUXD" "influxd not installed (Debian package influxdb)"

# 10 series, a read every 0.1 s, 150 reads: 1500 points in about 15 s
SERIES=10
READS=150
PRODUCED=$((SERIES * READS))

# conf NAME MEASUREMENT [OUTPUT OPTIONS]: counter -> influxdb through the
# relay, self -> prometheus on $prom
conf() {
	cat >"$1" <<-EOF
	global = { interval = 0.1; log_level = "info"; };
	inputs = { c = { plugin = "counter"; count = $SERIES;
	                 max_reads = $READS; name = "$2"; };
	           self = { plugin = "self"; interval = 0.2; }; };
	outputs = { db = { plugin = "influxdb"; database = "tally";
	                   url = "http://127.0.0.1:$RECORDER_PORT";
	                   batch_size = 20; flush_interval = "0.1s"; $3 };
	            prom = { plugin = "prometheus"; listen = "127.0.0.1:$prom"; }; };
	pipelines = { p = { from = ["c"]; to = ["db"]; };
	              s = { from = ["self"]; to = ["prom"]; }; };
	EOF
}

# stored MEASUREMENT: points of MEASUREMENT influxd holds
stored() {
	influx_count tally "$1"
}

# dropped REASON: tally_dropped_total of the output, from the last scrape
dropped() {
	curl -sf "http://127.0.0.1:$prom/metrics" >m &&
	self_count m tally_dropped_total db "reason=\"$1\""
}

# relay_check MEASUREMENT: the relay saw each point of MEASUREMENT in one
# acknowledged request only; prints how many it saw acknowledged
relay_check() {
	relay_acked relay.log "$1"
}

test_expect_success 'start influxd and the counting relay' '
	influxd_setup srv &&
	influxd_start srv &&
	influx_post "CREATE DATABASE tally" >/dev/null &&
	recorder_start relay --relay 127.0.0.1:$INFLUX_PORT &&
	prom=$(free_port)
'

test_expect_success 'SIGTERM influxd while tallyd streams, start it 10 s later' '
	conf restart.conf rs1 &&
	start_tallyd restart.conf &&
	wait_for "test \$(stored rs1) -ge 200" 20 &&
	influxd_stop TERM &&
	sleep 10 &&
	influxd_start srv &&
	wait_for "test \$(stored rs1) -eq $PRODUCED" 90
'

test_expect_success 'every point arrived with its value, none twice' '
	influx_reads tally rs1 $SERIES $READS &&
	test $(relay_check rs1) -eq $PRODUCED &&
	test $(dropped queue_full) -eq 0 &&
	grep -c "\"status\": 0" relay.log >failed &&
	tally_diag "attempts refused while influxd was down: $(cat failed)" &&
	test $(cat failed) -ge 1 &&
	stop_tallyd &&
	! grep undelivered tallyd.log
'

test_expect_success 'a queue bound smaller than the outage: drops counted exactly' '
	conf small.conf rs2 "queue_records = 50;" &&
	start_tallyd small.conf &&
	wait_for "test \$(stored rs2) -ge 100" 20 &&
	influxd_stop TERM &&
	sleep 10 &&
	influxd_start srv &&
	wait_for "test \$(( \$(stored rs2) + \$(dropped queue_full) )) -eq $PRODUCED" 90 &&
	s=$(stored rs2) && d=$(dropped queue_full) &&
	tally_diag "queue_records = 50, 10 s outage: $s stored, $d dropped" \
		"(queue_full), $PRODUCED produced" &&
	test $d -gt 0 && test $s -gt 0 &&
	test $(relay_check rs2) -eq $s &&
	stop_tallyd
'

test_expect_success 'kill -9 influxd while tallyd streams: the loss measured' '
	conf kill.conf rs3 &&
	start_tallyd kill.conf &&
	wait_for "test \$(stored rs3) -ge 200" 20 &&
	acked=$(relay_check rs3) &&
	influxd_stop KILL &&
	influxd_start srv &&
	wait_for "test \$(relay_check rs3) -eq $PRODUCED" 90 &&
	s=$(stored rs3) &&
	tally_diag "kill -9: $PRODUCED produced, acknowledged by influxd" \
		"$PRODUCED (at the kill: $acked), stored after its restart $s," \
		"lost $((PRODUCED - s))" &&
	test $s -eq $PRODUCED &&
	stop_tallyd
'

test_done
