#!/bin/sh
test_description='influxdb output: points written to the real influxd
(Debian influxdb 1.6) and read back exactly through /query: values, types,
tags (host, labels), the escaping table, spans; a refused write (bad
database, malformed point) logged with the server message and counted;
the v2 API request shape against a recording server (Debian has no
InfluxDB 2 server)'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"
. "$SHARNESS_TEST_SRCDIR/t50-lib.sh"

require_cmd curl
require_cmd "$INFLUXD" "influxd not installed (Debian package influxdb)"

HOST=$("$PYTHON3" -c 'import socket; print(socket.gethostname())')

# refused CONF_OUTPUT_OPTIONS MESSAGE: --check-config refuses an influxdb
# output with those options, saying MESSAGE
refused() {
	cat >bad.conf <<-EOF &&
	inputs = { c = { plugin = "counter"; }; };
	outputs = { o = { plugin = "influxdb"; $1 }; };
	pipelines = { p = { from = ["c"]; to = ["o"]; }; };
	EOF
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:2: error: outputs.o: $2" err
}

test_expect_success 'check: options that do not go together' '
	refused "url = \"https://db:8086\"; database = \"x\";" \
		"url \"https://db:8086\": https is not supported" &&
	refused "api = \"v2\"; org = \"o\"; bucket = \"b\";" \
		"api v2 needs org, bucket and token" &&
	refused "database = \"x\"; token = \"t\";" \
		"token, org and bucket are for api = \"v2\"" &&
	refused "database = \"x\"; user = \"u\";" \
		"user and password go together" &&
	refused "" "api v1 needs a database: set database" &&
	refused "url = \"http://db:99999\"; database = \"x\";" \
		"url \"http://db:99999\": port out of range" &&
	refused "api = \"v2\"; org = \"o\"; bucket = \"b\"; token = \"\";" \
		"api v2: org, bucket and token must not be empty" &&
	refused "database = \"x\"; user = \"a:b\"; password = \"p\";" \
		"user \"a:b\" holds a .:., which HTTP Basic" &&
	refused "database = \"x\"; user = \"\"; password = \"\";" \
		"user must not be empty (for no authentication, set neither"
'

test_expect_success 'start influxd' '
	influxd_setup srv &&
	influxd_start srv &&
	influx_post "CREATE DATABASE tally" >/dev/null
'

# Rows of the escaping table: measurement, tag key, tag value as written,
# then what InfluxDB 1.x stores (line.h: a backslash run that ends a name
# or stands before an escaped character cannot be stored, and is left out;
# a tag key "time", which InfluxDB refuses, is written "time_")
cat >rows <<'EOF'
m,1 x=y"q\z	k,e y="	v a,l=ue"q	m,1 x=y"q\z	k,e y="	v a,l=ue"q
plain	C:\dir	tail\	plain	C:\dir	tail
end\	key	x\,y	end	key	x,y
ünï ©	uni	ünï ©	ünï ©	uni	ünï ©
timed	time	t1	timed	time_	t1
empty	gone		empty	-	-
EOF

test_expect_success 'tallyd writes counters, the escaping table and spans' '
	"$PYTHON3" - "$INFLUX_PORT" >w.conf <<-\EOF &&
	import sys
	def s(v):  # a libconfig string
	    return "\"" + v.replace("\\", "\\\\").replace("\"", "\\\"") + "\""
	print("global = { interval = 0.2; log_level = \"info\"; };")
	print("inputs = {")
	print("  c = { plugin = \"counter\"; count = 2; name = \"test_m\";"
	      " type = \"counter\"; max_reads = 5; };")
	print("  s = { plugin = \"spangen\"; mode = \"spans\"; ranks = 2;"
	      " limit = 4; trace = %s; jobid = \"42\"; note_key = %s;"
	      " note = %s; };" % (s("job 1,x"), s("n,o te="),
	                         s("say \"hi\" C:\\dir\\")))
	rows = [l.rstrip("\n").split("\t") for l in open("rows", encoding="utf-8")]
	for n, (m, k, v, sm, sk, sv) in enumerate(rows, 1):
	    print("  e%d = { plugin = \"counter\"; max_reads = 1; name = %s;"
	          " label_key = %s; label_value = %s; };" % (n, s(m), s(k), s(v)))
	print("};")
	print("outputs = { db = { plugin = \"influxdb\";"
	      " url = \"http://127.0.0.1:%s\"; database = \"tally\";"
	      " batch_size = 3; flush_interval = \"0.1s\";"
	      " labels = { cluster = \"c 1,x=y\"; }; }; };" % sys.argv[1])
	print("pipelines = { p = { from = [\"c\", \"s\", %s]; to = [\"db\"]; }; };"
	      % ", ".join("\"e%d\"" % n for n in range(1, len(rows) + 1)))
	EOF
	tallyd -c w.conf --check-config &&
	start_tallyd w.conf &&
	wait_for "influx_q tally \"SELECT count(value) FROM test_m\" |
		grep -q \"\\[0,10\\]\"" 20 &&
	wait_for "influx_q tally \"SELECT count(\\\"duration\\\") FROM tally_span\" |
		grep -q \"\\[0,8\\]\"" 20
'

test_expect_success 'counters: every value, exactly, with host and labels' '
	influx_q tally "SELECT * FROM test_m GROUP BY *" >c.json &&
	"$PYTHON3" - "$HOST" <<-\EOF
	import json, sys
	host = sys.argv[1]
	series = json.load(open("c.json"))["results"][0]["series"]
	assert len(series) == 2, series
	for s in sorted(series, key=lambda s: s["tags"]["i"]):
	    assert s["tags"] == {"cluster": "c 1,x=y", "host": host,
	                         "i": s["tags"]["i"]}, s["tags"]
	    vals = [row[s["columns"].index("value")] for row in s["values"]]
	    assert vals == [1.0, 2.0, 3.0, 4.0, 5.0], vals
	    times = [row[0] for row in s["values"]]
	    assert len(set(times)) == 5, times
	EOF
'

test_expect_success 'value is a float field, counts and start are integers' '
	influx_q tally "SHOW FIELD KEYS" >f.json &&
	"$PYTHON3" - <<-\EOF
	import json
	res = json.load(open("f.json"))["results"][0]["series"]
	types = {s["name"]: dict(s["values"]) for s in res}
	assert types["test_m"] == {"value": "float"}, types
	assert types["tally_span"] == {"duration": "float", "start": "integer",
	                               "pid": "integer", "n,o te=": "string"}, \
	    types["tally_span"]
	EOF
'

test_expect_success 'escaping table: the server returns the exact values' '
	influx_q tally "SHOW SERIES" >series.json &&
	"$PYTHON3" - "$HOST" <<-\EOF
	import json, sys
	host = sys.argv[1]
	# the series keys as influxd holds them, parsed with its escapes
	keys = [v[0] for v in
	        json.load(open("series.json"))["results"][0]["series"][0]["values"]]
	def split(s, sep):  # at separators not escaped, escapes kept
	    out, cur, i = [], "", 0
	    while i < len(s):
	        if s[i] == "\\" and i + 1 < len(s) and s[i + 1] in ", =":
	            cur += s[i:i + 2]; i += 2; continue
	        if s[i] == sep:
	            out.append(cur); cur = ""; i += 1; continue
	        cur += s[i]; i += 1
	    return out + [cur]
	def unesc(s):
	    for c in ", =":
	        s = s.replace("\\" + c, c)
	    return s
	got = {}
	for k in keys:
	    parts = split(k, ",")
	    tags = dict(map(unesc, split(p, "=")) for p in parts[1:])
	    got[unesc(parts[0])] = tags
	for line in open("rows", encoding="utf-8"):
	    m, k, v, sm, sk, sv = line.rstrip("\n").split("\t")
	    assert sm in got, (sm, sorted(got))
	    want = {"cluster": "c 1,x=y", "host": host, "i": "0"}
	    if sk != "-":
	        want[sk] = sv
	    assert got[sm] == want, (sm, got[sm], want)
	EOF
'

test_expect_success 'spans: one point per completed span, tags and fields' '
	influx_q tally "SELECT * FROM tally_span GROUP BY *" >s.json &&
	"$PYTHON3" - "$HOST" <<-\EOF
	import json, sys
	host = sys.argv[1]
	series = json.load(open("s.json"))["results"][0]["series"]
	assert len(series) == 2, series
	for s in series:
	    t = s["tags"]
	    rank = t["rank"]
	    assert t == {"cluster": "c 1,x=y", "host": host, "trace": "job 1,x",
	                 "region": "step", "depth": "1", "rank": rank,
	                 "jobid": "42"}, t
	    rows = [dict(zip(s["columns"], r)) for r in s["values"]]
	    # read k lasted (k % 4 + 1) / 4 s, reads 1..4
	    assert sorted(r["duration"] for r in rows) == [0.25, 0.5, 0.75, 1.0]
	    for r in rows:
	        assert r["time"] - r["start"] == int(r["duration"] * 1e9), r
	        assert r["pid"] == 4242 + int(rank), r
	        assert r["n,o te="] == "say \"hi\" C:\\dir\\", r["n,o te="]
	EOF
'

test_expect_success 'self-metrics: points written, nothing dropped' '
	stop_tallyd &&
	! grep -E "write refused|partial write|undelivered|dropped" tallyd.log
'

test_expect_success 'a database that does not exist: refused, logged, counted' '
	port=$(free_port) &&
	cat >nodb.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { c = { plugin = "counter"; count = 3; max_reads = 2; };
	           self = { plugin = "self"; }; };
	outputs = { db = { plugin = "influxdb"; database = "nope";
	                   url = "http://127.0.0.1:$INFLUX_PORT";
	                   batch_size = 3; };
	            prom = { plugin = "prometheus"; listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["c"]; to = ["db"]; };
	              s = { from = ["self"]; to = ["prom"]; }; };
	EOF
	start_tallyd nodb.conf &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >m &&
		test \$(self_count m tally_dropped_total db reason=\\\"rejected\\\") = 6" &&
	grep "influxdb\[db\]: write refused (HTTP 404): {\"error\":\"database not found: \\\\\"nope\\\\\"\"}; 3 points dropped, not retried" tallyd.log &&
	test $(self_count m tally_events_total db event=\"http_requests\") = 2 &&
	test $(self_count m tally_events_total db event=\"http_failures_4xx\") = 2 &&
	stop_tallyd
'

test_expect_success 'a point the server refuses (field type): partial write, the
other point of the batch stored' '
	printf "test_type,host=%s,i=0 value=1i\n" "$HOST" >p.txt &&
	curl -sf -XPOST "http://127.0.0.1:$INFLUX_PORT/write?db=tally" \
		--data-binary @p.txt &&
	port=$(free_port) &&
	cat >part.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { c = { plugin = "counter"; max_reads = 1;
	                 name = "test_type"; };
	           d = { plugin = "counter"; max_reads = 1; name = "test_ok"; };
	           self = { plugin = "self"; }; };
	outputs = { db = { plugin = "influxdb"; database = "tally";
	                   url = "http://127.0.0.1:$INFLUX_PORT";
	                   batch_size = 2; };
	            prom = { plugin = "prometheus"; listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["c", "d"]; to = ["db"]; };
	              s = { from = ["self"]; to = ["prom"]; }; };
	EOF
	start_tallyd part.conf &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >m &&
		test \$(self_count m tally_dropped_total db reason=\\\"partial_write\\\") = 1" &&
	test $(self_count m tally_events_total db event=\"points_written\") = 1 &&
	grep "partial write (HTTP 400): .*field type conflict.*; 1 of 2 points dropped by the server" tallyd.log &&
	influx_q tally "SELECT value FROM test_ok" |
		grep -q "\\[\\[[0-9]*,1\\]\\]" &&
	stop_tallyd
'

test_expect_success 'statsd -> aggregate -> influxdb: one point per series and
interval, the partial last interval delivered at shutdown' '
	udp=$(free_port) &&
	cat >agg.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:$udp"; }; };
	filters = { agg = { plugin = "aggregate"; interval = 86400.0; }; };
	outputs = { db = { plugin = "influxdb"; database = "tally";
	                   url = "http://127.0.0.1:$INFLUX_PORT"; }; };
	pipelines = { p = { from = ["sd"]; through = ["agg"]; to = ["db"]; }; };
	EOF
	start_tallyd --wait "udp_bound $udp" agg.conf &&
	printf "%s\n" "req.count:3|c" "req.count:2|c|@0.5" "q:10|g" "q:+5|g" \
		"db.query:1|ms" "db.query:2|ms" "db.query:3|ms" \
		"db.query:4|ms" >d1 &&
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t40-statsd-send.py" udp4 \
		127.0.0.1:$udp d1 &&
	stop_tallyd &&
	! grep -E "undelivered|deadline" tallyd.log &&
	influx_q tally "SELECT * FROM \"req.count\", \"q\", \"db.query\" GROUP BY *" >agg.json &&
	"$PYTHON3" - "$HOST" <<-\EOF
	import json, sys
	host = sys.argv[1]
	got = {}
	for s in json.load(open("agg.json"))["results"][0]["series"]:
	    assert s["tags"] == {"host": host}, s["tags"]
	    last = dict(zip(s["columns"], s["values"][-1]))
	    got[s["name"]] = {k: v for k, v in last.items()
	                      if k != "time" and v is not None}
	assert got["req.count"]["value"] == 7, got["req.count"]
	assert got["q"] == {"value": 15}, got["q"]
	d = got["db.query"]
	for k, v in {"count": 4, "sum": 0.01, "min": 0.001, "max": 0.004,
	             "mean": 0.0025, "median": 0.002, "p50": 0.002,
	             "p90": 0.004, "p99": 0.004}.items():
	    assert abs(d[k] - v) < 1e-12, (k, d[k], v)
	EOF
'

test_expect_success 'v2 API: request shape, against a recording HTTP server
(Debian has no InfluxDB 2 server)' '
	recorder_start v2 &&
	cat >v2.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { c = { plugin = "counter"; count = 2; max_reads = 1; }; };
	outputs = { db = { plugin = "influxdb"; api = "v2";
	                   url = "http://127.0.0.1:$RECORDER_PORT/prefix/";
	                   org = "my org"; bucket = "b&1"; token = "s3cr3t==";
	                   precision = "ms"; gzip = true; batch_size = 2; }; };
	pipelines = { p = { from = ["c"]; to = ["db"]; }; };
	EOF
	start_tallyd v2.conf &&
	wait_for "test -s v2.log" &&
	"$PYTHON3" - "$HOST" <<-\EOF
	import json, re, sys
	host = sys.argv[1]
	r = json.loads(open("v2.log").readline())
	assert r["method"] == "POST", r
	assert r["path"] == "/prefix/api/v2/write?org=my%20org&bucket=b%261&precision=ms", r["path"]
	assert r["headers"]["authorization"] == "Token s3cr3t==", r
	assert r["headers"]["content-encoding"] == "gzip" and r["gzip"], r
	assert r["headers"]["content-type"] == "text/plain; charset=utf-8", r
	lines = r["body"].splitlines()
	assert len(lines) == 2, lines
	for i, l in enumerate(lines):
	    assert re.fullmatch(r"test_counter_value,host=%s,i=%d value=1 \d{13}"
	                        % (re.escape(host), i), l), l
	EOF
'

test_expect_success 'v1 with user and password: HTTP Basic' '
	recorder_start v1 &&
	cat >v1.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { c = { plugin = "counter"; max_reads = 1; }; };
	outputs = { db = { plugin = "influxdb"; database = "my db";
	                   url = "http://127.0.0.1:$RECORDER_PORT";
	                   user = "u"; password = "p:w"; retention_policy = "rp";
	                   precision = "s"; batch_size = 1; }; };
	pipelines = { p = { from = ["c"]; to = ["db"]; }; };
	EOF
	start_tallyd v1.conf &&
	wait_for "test -s v1.log" &&
	"$PYTHON3" - <<-\EOF
	import base64, json
	r = json.loads(open("v1.log").readline())
	assert r["path"] == "/write?db=my%20db&rp=rp&precision=s", r["path"]
	assert r["headers"]["authorization"] == \
	    "Basic " + base64.b64encode(b"u:p:w").decode(), r
	assert not r["gzip"] and "content-encoding" not in r["headers"], r
	EOF
'

test_done
