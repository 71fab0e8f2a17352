#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='prometheus output: concurrent scrapes while records stream

spangen (generations mode) emits 2000 gauges and a histogram per read,
50 reads a second, every value derived from the read number k. Several
scrapers fetch /metrics at the same time (plain, gzip, OpenMetrics); every
scrape must show one whole batch: a single k in all 2000 series, and
histogram buckets, _count and _sum of that same k. (expire is long: on a
loaded machine a 20 ms input can miss 3 intervals, and its series would
expire between scrapes; t2003 tests expiry.)'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd curl
require_cmd promtool "promtool not installed (Debian package prometheus)"

test_expect_success 'start tallyd with a fast, wide input' '
	port=$(free_port) &&
	cat >conc.conf <<-EOF &&
	global = { interval = 0.02; log_level = "info"; };
	inputs = {
	  gen = { plugin = "spangen"; mode = "generations"; count = 2000; };
	  shapes = { plugin = "spangen"; mode = "shapes"; };
	};
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port"; expire = 600.0; }; };
	pipelines = { p = { from = ["gen", "shapes"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" conc.conf &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics | grep -q ^spangen_gen_hist_count"
'

test_expect_success 'concurrent scrapes each see whole batches' '
	cat >scrapers.py <<-\EOF &&
	import gzip, re, sys, threading, time, urllib.request

	port = sys.argv[1]
	THREADS, SCRAPES, DEADLINE = 4, 25, time.monotonic() + 60
	problems, ks, lock = [], set(), threading.Lock()
	last = {}

	def value(text, series):
	    m = re.search("^" + re.escape(series) + " (\\S+)$", text, re.M)
	    return float(m.group(1)) if m else None

	def check(text, how):
	    gens = re.findall(r"^spangen_gen\{i=\"\d+\"\} (\S+)$", text, re.M)
	    if len(gens) != 2000:
	        return "%s: %d spangen_gen series" % (how, len(gens))
	    if len(set(gens)) != 1:
	        return "%s: mixed generations %s" % (how, sorted(set(gens))[:5])
	    k = float(gens[0])
	    want = {
	        "spangen_gen_hist_bucket{le=\"1\"}": k,
	        "spangen_gen_hist_bucket{le=\"2\"}": 2 * k,
	        "spangen_gen_hist_bucket{le=\"+Inf\"}": 3 * k,
	        "spangen_gen_hist_count": 3 * k,
	        "spangen_gen_hist_sum": k,
	    }
	    e = value(text, "spangen_events_total")
	    if e is None:
	        return "%s: no spangen_events_total" % how
	    p = "{exported_le=\"y\",path=\"/a\""
	    want.update({
	        "spangen_latency_seconds_bucket" + p + ",le=\"0.1\"}": e,
	        "spangen_latency_seconds_bucket" + p + ",le=\"+Inf\"}": 4 * e,
	        "spangen_latency_seconds_count" + p + "}": 4 * e,
	        "spangen_rpc_seconds_count": 10 * e,
	    })
	    for s, w in want.items():
	        got = value(text, s)
	        if got != w:
	            return "%s: %s = %r, want %r (k = %r)" % (how, s, got, w, k)
	    with lock:
	        ks.add(k)
	    return None

	def scraper(n):
	    for i in range(SCRAPES):
	        if time.monotonic() > DEADLINE:
	            break
	        hdr = {}
	        how = ("text", "gzip", "openmetrics")[(n + i) % 3]
	        if how == "gzip":
	            hdr["Accept-Encoding"] = "gzip"
	        if how == "openmetrics":
	            hdr["Accept"] = "application/openmetrics-text;version=1.0.0"
	        req = urllib.request.Request(
	            "http://127.0.0.1:%s/metrics" % port, headers=hdr)
	        try:
	            with urllib.request.urlopen(req, timeout=10) as r:
	                body = r.read()
	                enc = r.headers.get("Content-Encoding")
	            if how == "gzip":
	                if enc != "gzip":
	                    raise ValueError("no gzip encoding")
	                body = gzip.decompress(body)
	            text = body.decode()
	        except Exception as e:
	            with lock:
	                problems.append("%s: %s" % (how, e))
	            continue
	        err = check(text, how)
	        with lock:
	            last[how] = text
	            if err:
	                problems.append(err)

	threads = [threading.Thread(target=scraper, args=(n,))
	           for n in range(THREADS)]
	for t in threads:
	    t.start()
	for t in threads:
	    t.join()
	open("last.txt", "w").write(last.get("text", ""))
	open("last.om", "w").write(last.get("openmetrics", ""))
	print("%d generations seen, %d problems" % (len(ks), len(problems)))
	for p in problems[:10]:
	    print(p)
	sys.exit(1 if problems or len(ks) < 3 else 0)
	EOF
	"$PYTHON3" scrapers.py "$port" >scrapers.out 2>&1;
	rc=$?;
	tally_diag <scrapers.out;
	test $rc = 0
'

test_expect_success 'the scrapes are promtool-clean' '
	test -s last.txt &&
	promtool check metrics <last.txt &&
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t2-prom-check.py" <last.txt &&
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t2-prom-check.py" --openmetrics <last.om
'

test_expect_success 'tallyd logged no error and stops cleanly' '
	! grep -i "error\|warning" tallyd.log &&
	stop_tallyd
'

test_done
