# t/t50-lib.sh - helpers of the influxdb tests (t50xx), sourced after
# t/lib/tally.sh
#
# The server is the real influxd of Debian's influxdb package (1.6), run
# in the foreground from the test's trash directory:
#
#	influxd_setup DIR
#		writes DIR/influxdb.conf: meta, data and wal under DIR, HTTP on
#		127.0.0.1:$INFLUX_PORT (a free port, chosen here once), the RPC
#		bind on another free port, reporting, monitor store, UDP,
#		graphite, collectd, opentsdb and continuous queries off
#	influxd_start DIR
#		starts influxd -config DIR/influxdb.conf (log DIR/influxd.log),
#		waits until /ping answers (at most TALLY_WAIT_TIMEOUT s);
#		sets INFLUXD_PID. Stopped when the test script exits.
#	influxd_stop [SIGNAL]
#		signals influxd (default TERM) and waits for it to exit
#	influx_q DB QUERY
#		runs QUERY through /query (GET; times as ns since the epoch),
#		prints the JSON answer
#	influx_post QUERY
#		runs QUERY through /query as a POST (CREATE DATABASE ...)
#	influx_count DB MEASUREMENT
#		how many points of MEASUREMENT (field value) influxd holds
#	influx_reads DB MEASUREMENT SERIES READS
#		influxd holds SERIES series of MEASUREMENT (tag i), each with
#		the values 1..READS in order (t/plugins/counter.c's points)
#	relay_acked LOG MEASUREMENT
#		of the counting relay's LOG: how many points of MEASUREMENT
#		were in requests influxd acknowledged (204); fails if one
#		was in two of them
#	recorder_start NAME [ARGS...]
#		t/http-recorder.py, a recording HTTP server in Python (or, with
#		--relay HOST:PORT, a counting relay), logging to NAME.log;
#		sets RECORDER_PORT. Stopped when the test script exits.

INFLUXD=${INFLUXD:-/usr/bin/influxd}
INFLUXD_PID=
RECORDER_PIDS=

influxd_setup() {
	mkdir -p "$1" &&
	INFLUX_PORT=$(free_port) &&
	tally_is_rpc=$(free_port) &&
	cat >"$1/influxdb.conf" <<-EOF
	reporting-disabled = true
	bind-address = "127.0.0.1:$tally_is_rpc"
	[meta]
	  dir = "$PWD/$1/meta"
	[data]
	  dir = "$PWD/$1/data"
	  wal-dir = "$PWD/$1/wal"
	  query-log-enabled = false
	[http]
	  enabled = true
	  bind-address = "127.0.0.1:$INFLUX_PORT"
	  log-enabled = false
	[monitor]
	  store-enabled = false
	[subscriber]
	  enabled = false
	[continuous_queries]
	  enabled = false
	[[graphite]]
	  enabled = false
	[[collectd]]
	  enabled = false
	[[opentsdb]]
	  enabled = false
	[[udp]]
	  enabled = false
	EOF
}

influx_ping() {
	curl -sf -o /dev/null "http://127.0.0.1:$INFLUX_PORT/ping"
}

influxd_start() {
	"$INFLUXD" -config "$1/influxdb.conf" >>"$1/influxd.log" 2>&1 &
	INFLUXD_PID=$!
	wait_for "influx_ping || ! kill -0 $INFLUXD_PID" &&
	kill -0 "$INFLUXD_PID"
}

influxd_stop() {
	test -n "$INFLUXD_PID" || return 0
	kill -"${1:-TERM}" "$INFLUXD_PID" 2>/dev/null
	wait "$INFLUXD_PID" 2>/dev/null
	INFLUXD_PID=
	return 0
}

influx_q() {
	curl -sfG "http://127.0.0.1:$INFLUX_PORT/query" \
		--data-urlencode "db=$1" --data-urlencode "epoch=ns" \
		--data-urlencode "q=$2"
}

influx_post() {
	curl -sf -XPOST "http://127.0.0.1:$INFLUX_PORT/query" \
		--data-urlencode "q=$1"
}

influx_count() {
	influx_q "$1" "SELECT count(value) FROM $2" |
		sed -n 's/.*"values":\[\[0,\([0-9]*\)\]\].*/\1/p' | grep . ||
		echo 0
}

influx_reads() {
	influx_q "$1" "SELECT * FROM $2 GROUP BY i" >"$2.json" &&
	"$PYTHON3" - "$2.json" "$3" "$4" <<-\EOF
	import json, sys
	n, reads = int(sys.argv[2]), int(sys.argv[3])
	series = json.load(open(sys.argv[1]))["results"][0]["series"]
	assert len(series) == n, len(series)
	for s in series:
	    vals = [r[s["columns"].index("value")] for r in s["values"]]
	    assert vals == [float(k) for k in range(1, reads + 1)], vals
	EOF
}

relay_acked() {
	"$PYTHON3" - "$1" "$2" <<-\EOF
	import collections, json, sys
	seen = collections.Counter()
	for line in open(sys.argv[1]):
	    r = json.loads(line)
	    if r["status"] != 204:
	        continue
	    for p in r["body"].splitlines():
	        series, fields, ts = p.split(" ")
	        if series.split(",")[0] == sys.argv[2]:
	            seen[(series, ts)] += 1
	twice = [k for k, n in seen.items() if n > 1]
	assert not twice, twice[:5]
	print(len(seen))
	EOF
}

recorder_start() {
	tally_rs_name=$1
	shift
	rm -f "$tally_rs_name.port"
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/http-recorder.py" \
		"$tally_rs_name.port" "$tally_rs_name.log" "$@" &
	RECORDER_PIDS="$RECORDER_PIDS $!"
	wait_for "test -s $tally_rs_name.port" &&
	RECORDER_PORT=$(cat "$tally_rs_name.port")
}

tally_t50_stop_all_() {
	influxd_stop KILL
	for tally_t50_p in $RECORDER_PIDS; do
		kill "$tally_t50_p" 2>/dev/null
	done
	RECORDER_PIDS=
	return 0
}
cleanup tally_t50_stop_all_
# tally.sh's EXIT trap, plus the servers started here
trap 'tally_exit_=$?; tally_stop_all_; tally_t50_stop_all_; tally_rm_all_;
	(exit $tally_exit_); die' EXIT
