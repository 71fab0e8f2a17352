# t/t51-lib.sh - helpers of the remote_write tests (t51xx), sourced after
# t/lib/tally.sh and t/t2-lib.sh
#
#	rw_require_plugin
#		skips the script when the remote_write output is not built
#		(configure says why: protobuf-c or snappy missing)
#	rw_prom_start
#		the real Prometheus (Debian 2.42) with its remote write
#		receiver on 127.0.0.1:$pport (chosen once), storage in
#		prom-data (kept across restarts); waits until /-/ready
#	rw_prom_stop
#		SIGTERM and wait (its head and WAL are on disk for the restart)
#	rw_series_values SELECTOR
#		every sample Prometheus holds for the series SELECTOR matches in
#		the last hour, one line per series: its labels as JSON, then
#		the values in order, space-separated
#	rw_stored SELECTOR
#		how many samples Prometheus holds for SELECTOR, 0 for none
#	rw_dropped INSTANCE REASON
#		tally_dropped_total of INSTANCE for REASON in the self
#		metrics tallyd serves on 127.0.0.1:$prom (0 when none)
#	pg_start
#		Debian's prometheus-pushgateway on 127.0.0.1:$pgport (chosen
#		here), persistence in the trash directory; waits until ready
#	vm_start
#		Debian's victoria-metrics on 127.0.0.1:$vmport (chosen here),
#		storage in vm-data, queries see samples at once
#		(-search.latencyOffset=0, no cache); waits until ready
#	vm_export SELECTOR
#		every sample VictoriaMetrics holds for SELECTOR, one line per
#		series as rw_series_values prints them (/api/v1/export)
#	vm_query EXPR
#		the single value of an instant query to VictoriaMetrics, "none"
#		when the result is not one value

rw_require_plugin() {
	test -f "$top_builddir/plugins/output/remote_write.la" && return 0
	skip_all="the remote_write output is not built (configure: protobuf-c or snappy missing)"
	test_done
}

rw_prom_start() {
	test -n "$pport" || pport=$(free_port)
	test -f prometheus.yml || printf 'global:\n  scrape_interval: 1m\n' \
		>prometheus.yml
	start_prometheus --web.enable-remote-write-receiver &&
	wait_for "curl -sf http://127.0.0.1:$pport/-/ready >/dev/null" 60
}

rw_prom_stop() {
	stop_prometheus
}

rw_series_values() {
	curl -sS --max-time 10 --get --data-urlencode "query=$1[1h]" \
		"http://127.0.0.1:$pport/api/v1/query" >rsv.json &&
	"$PYTHON3" -c '
import json
d = json.load(open("rsv.json"))
assert d["status"] == "success", d
for r in sorted(d["data"]["result"], key=lambda r: sorted(r["metric"].items())):
    print(json.dumps(r["metric"], sort_keys=True),
          " ".join(v for t, v in r["values"]))'
}

rw_stored() {
	tally_rs_v=$(promq_one "sum(count_over_time($1[1h]))") || return 1
	case $tally_rs_v in
	none) echo 0 ;;
	*) echo "$tally_rs_v" ;;
	esac
}

rw_dropped() {
	curl -sf "http://127.0.0.1:$prom/metrics" >self.prom &&
	self_count self.prom tally_dropped_total "$1" "reason=\"$2\""
}

PUSHGATEWAY=${PUSHGATEWAY:-/usr/bin/prometheus-pushgateway}
VICTORIA_METRICS=${VICTORIA_METRICS:-/usr/bin/victoria-metrics}
T51_PIDS=

pg_start() {
	pgport=$(free_port) &&
	{ timeout 300 "$PUSHGATEWAY" --web.listen-address="127.0.0.1:$pgport" \
		--persistence.file="$PWD/pushgateway.data" \
		--log.level=warn >>pushgateway.log 2>&1 & } &&
	T51_PIDS="$T51_PIDS $!" &&
	wait_for "curl -sf http://127.0.0.1:$pgport/-/ready >/dev/null" 60
}

vm_start() {
	vmport=$(free_port) &&
	{ timeout 300 "$VICTORIA_METRICS" -httpListenAddr="127.0.0.1:$vmport" \
		-storageDataPath="$PWD/vm-data" -retentionPeriod=100y \
		-search.latencyOffset=0 -search.disableCache \
		-loggerLevel=ERROR >>victoria-metrics.log 2>&1 & } &&
	T51_PIDS="$T51_PIDS $!" &&
	wait_for "curl -sf http://127.0.0.1:$vmport/health >/dev/null" 60
}

vm_export() {
	curl -sS --max-time 10 --get --data-urlencode "match[]=$1" \
		"http://127.0.0.1:$vmport/api/v1/export" >vme.json &&
	"$PYTHON3" -c '
import json
rows = [json.loads(l) for l in open("vme.json") if l.strip()]
for r in sorted(rows, key=lambda r: sorted(r["metric"].items())):
    vals = [v for t, v in sorted(zip(r["timestamps"], r["values"]))]
    print(json.dumps(r["metric"], sort_keys=True),
          " ".join("%.17g" % v for v in vals))'
}

vm_query() {
	promq_one "$1" "127.0.0.1:$vmport"
}

tally_t51_stop_all_() {
	stop_prometheus
	for tally_t51_p in $T51_PIDS; do
		kill "$tally_t51_p" 2>/dev/null
		wait "$tally_t51_p" 2>/dev/null
	done
	T51_PIDS=
	return 0
}
cleanup tally_t51_stop_all_
trap 'tally_exit_=$?; tally_stop_all_; tally_t51_stop_all_; tally_rm_all_;
	(exit $tally_exit_); die' EXIT
