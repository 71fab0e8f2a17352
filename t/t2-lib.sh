# t/t2-lib.sh - helpers shared by the prometheus tests (t2xxx), sourced
# after t/lib/tally.sh
#
#	self_count FILE METRIC INSTANCE LABEL
#		value of METRIC (tally_dropped_total, tally_events_total...)
#		of instance INSTANCE with label LABEL (reason="x") in the
#		scraped FILE, or 0 when there is no such sample
#	self_conf FILE [OPTION...]
#		a config: the self input (every 0.5 s) into the prometheus
#		output "limited" on 127.0.0.1:$port, with the OPTIONs given
#		('max_connections = 5;')
#	start_prometheus [ARGS...] / stop_prometheus
#		a Prometheus server (prometheus.yml of the trash directory,
#		data in prom-data, ARGS added to its command line) on
#		127.0.0.1:$pport, in the background (pid in prom_pid),
#		stopped when the test ends
#	promq_one EXPR [HOST:PORT]
#		the single value of an instant query to it (or to the
#		Prometheus query API at HOST:PORT: VictoriaMetrics), "none"
#		when the result is not one value
#	self_signed_cert NAME CN
#		NAME.crt and NAME.key, self-signed for 127.0.0.1 and localhost
#	clients MODE N SECONDS OUT [ARG]
#		t2-prom-clients.py MODE against $port in the background (pid
#		in clients_pid, killed when the test ends, whatever its
#		outcome), OUT emptied first

self_count() {
	awk -v m="$2{" -v i="instance=\"$3\"" -v l="$4" '
		index($0, m) == 1 && index($0, i) && index($0, l) {
		print $2; found = 1 } END { if (!found) print 0 }' "$1"
}

self_conf() {
	tally_sc_file=$1
	shift
	cat >"$tally_sc_file" <<-EOF
	global = { interval = 0.5; log_level = "info"; };
	inputs = { self = { plugin = "self"; }; };
	outputs = { limited = { plugin = "prometheus";
	                        listen = "127.0.0.1:$port"; $* }; };
	pipelines = { p = { from = ["self"]; to = ["limited"]; }; };
	EOF
}

clients() {
	: >"$4"
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t2-prom-clients.py" "$1" $port \
		"$2" "$3" "$4" $5 &
	clients_pid=$!
	test_when_finished "kill $clients_pid 2>/dev/null || :"
}

# Backgrounded inside a function: "a && b &" would put the whole list,
# variable assignments too, in a subshell. timeout: the server never
# outlives a test that dies badly.
start_prometheus() {
	timeout 300 "$PROMETHEUS" --config.file=prometheus.yml \
		--storage.tsdb.path="$PWD/prom-data" \
		--web.listen-address="127.0.0.1:$pport" \
		--log.level=warn "$@" >>prometheus.log 2>&1 &
	prom_pid=$!
}

stop_prometheus() {
	test -n "$prom_pid" || return 0
	kill "$prom_pid" 2>/dev/null
	wait "$prom_pid" 2>/dev/null
	prom_pid=
	return 0
}

promq_one() {
	curl -sS --max-time 10 --get --data-urlencode "query=$1" \
		"http://${2:-127.0.0.1:$pport}/api/v1/query" >q.json &&
	"$PYTHON3" -c '
import json
d = json.load(open("q.json"))
r = d["data"]["result"] if d.get("status") == "success" else []
print(r[0]["value"][1] if len(r) == 1 else "none")'
}

# self_signed_cert NAME CN - a self-signed certificate NAME.crt and key
# NAME.key (EC P-256, unencrypted) for 127.0.0.1 and localhost, subject CN
self_signed_cert() {
	openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -days 2 -subj "/CN=$2" \
		-addext "subjectAltName=IP:127.0.0.1,DNS:localhost" \
		-keyout "$1.key" -out "$1.crt" 2>openssl.err ||
	{ cat openssl.err; false; }
}
