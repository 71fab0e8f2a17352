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
