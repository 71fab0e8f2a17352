#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='prometheus output: HTTP details

HEAD answers with the headers of GET (Content-Length included) and no
body, so a client keeping the connection reads the next reply right;
methods other than GET and HEAD get 405 with Allow; paths are matched as
sent; x-gzip is answered as x-gzip. The client is Python'"'"'s http.client
and raw sockets, independent of libevent.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd curl

# py SCRIPT - run Python with the port in $PORT, and raw(PART...): send
# each PART (bytes) on a new connection, return all it reads until the
# server closes it
py() {
	PORT=$port "$PYTHON3" -c "import os, socket
def raw(*parts):
    s = socket.create_connection(('127.0.0.1', int(os.environ['PORT'])), timeout=10)
    for part in parts:
        s.sendall(part)
    data = b''
    while True:
        b = s.recv(65536)
        if not b:
            return data
        data += b
$1"
}

test_expect_success 'start tallyd: spangen shapes read once (a fixed exposition)' '
	port=$(free_port) &&
	cat >http.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { shapes = { plugin = "spangen"; mode = "shapes"; limit = 1; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:$port";
	                     expire = 600.0; }; };
	pipelines = { p = { from = ["shapes"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" http.conf &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics | grep -q ^spangen_events_total"
'

test_expect_success 'HEAD then GET on one connection: same headers, no body on HEAD' '
	py "
import http.client, os, sys
c = http.client.HTTPConnection(\"127.0.0.1\", int(os.environ[\"PORT\"]), timeout=10)
cases = [(\"/metrics\", {}, 200), (\"/metrics\", {\"Accept-Encoding\": \"gzip\"}, 200),
         (\"/metrics\", {\"Accept\": \"application/openmetrics-text\"}, 200),
         (\"/\", {}, 200), (\"/-/healthy\", {}, 200), (\"/nope\", {}, 404)]
for path, hdrs, code in cases:
    for _ in range(2):
        c.request(\"HEAD\", path, headers=hdrs)
        h = c.getresponse()
        hb = h.read()
        c.request(\"GET\", path, headers=hdrs)
        g = c.getresponse()
        gb = g.read()
        print(path, hdrs, h.status, h.getheader(\"Content-Length\"), len(gb))
        assert h.status == g.status == code, (h.status, g.status)
        assert hb == b\"\", hb
        assert h.getheader(\"Content-Length\") == str(len(gb)), (h.getheaders(), len(gb))
        assert g.getheader(\"Content-Length\") == str(len(gb))
        for k in (\"Content-Type\", \"Content-Encoding\", \"Vary\"):
            assert h.getheader(k) == g.getheader(k), k
"
'

test_expect_success 'HEAD over raw HTTP/1.1: the next reply starts right after the headers' '
	py "
data = raw(b\"HEAD /metrics HTTP/1.1\r\nHost: x\r\n\r\nGET /-/healthy HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n\")
head, rest = data.split(b\"\r\n\r\n\", 1)
assert head.startswith(b\"HTTP/1.1 200\"), head
assert rest.startswith(b\"HTTP/1.1 200\"), rest[:80]
assert rest.endswith(b\"\r\n\r\nOK\n\"), rest[-40:]
"
'

test_expect_success 'OPTIONS, TRACE, PATCH, CONNECT, PUT, DELETE, POST: 405 with Allow' '
	for m in OPTIONS TRACE PATCH PUT DELETE POST; do
		curl -sS -o body -D h -X $m "http://127.0.0.1:$port/metrics" &&
		grep "^HTTP/1.1 405" h &&
		grep -i "^Allow: GET, HEAD" h &&
		grep -i "^Content-Type: text/plain" h &&
		test "$(cat body)" = "method not allowed" || return 1
	done &&
	py "
data = raw(b\"CONNECT 127.0.0.1:22 HTTP/1.0\r\n\r\n\")
assert data.startswith(b\"HTTP/1.0 405\"), data
assert b\"\r\nAllow: GET, HEAD\r\n\" in data, data
"
'

test_expect_success 'unknown or lowercase methods: 501 (RFC 9110 15.6.2)' '
	for m in BREW get; do
		code=$(curl -sS -o /dev/null -w "%{http_code}" -X $m \
			"http://127.0.0.1:$port/metrics") &&
		test "$code" = 501 || return 1
	done
'

test_expect_success 'paths match as sent: //metrics is 404, a query string is ignored' '
	curl -sf -o m "http://127.0.0.1:$port/metrics" &&
	test "$(curl -sS -o /dev/null -w "%{http_code}" --path-as-is \
		"http://127.0.0.1:$port//metrics")" = 404 &&
	test "$(curl -sS -o /dev/null -w "%{http_code}" --path-as-is \
		"http://127.0.0.1:$port//")" = 404 &&
	curl -sf -o q "http://127.0.0.1:$port/metrics?x=1" &&
	test_cmp m q &&
	py "
data = raw(b\"GET http://127.0.0.1/metrics HTTP/1.0\r\n\r\n\")
assert data.startswith(b\"HTTP/1.0 200\"), data[:80]
assert data.endswith(open(\"m\", \"rb\").read())
"
'

test_expect_success 'Accept-Encoding: x-gzip is answered with x-gzip, gzip with gzip' '
	curl -sS -D xh -o xz -H "Accept-Encoding: x-gzip" \
		"http://127.0.0.1:$port/metrics" &&
	grep -i "^Content-Encoding: x-gzip" xh &&
	"$PYTHON3" -c "import gzip, sys; sys.stdout.buffer.write(gzip.decompress(open(\"xz\", \"rb\").read()))" >x.txt &&
	test_cmp m x.txt &&
	curl -sS -D gh -o gz -H "Accept-Encoding: x-gzip, gzip" \
		"http://127.0.0.1:$port/metrics" &&
	grep -i "^Content-Encoding: gzip" gh
'

# One request with a NUL byte in its header: libevent took a line starting
# with NUL for the end of the headers, answered 200, then read the rest of
# the header as a second request and answered 400 on the same connection.
test_expect_success 'a NUL byte in a request: exactly one 400, then the connection closes' '
	py "
cases = [b\"GET /metrics HTTP/1.1\r\nHost: x\r\n\0X-a: b\r\n\r\n\",
         b\"GET /metrics HTTP/1.1\r\n\0\r\n\r\n\",
         b\"GET /metrics HTTP/1.1\r\nX-a: b\0c\r\nHost: x\r\n\r\n\",
         b\"GET /metrics HTTP/1.0\r\nX-a: \0\r\n\r\n\",
         b\"GET /met\0rics HTTP/1.1\r\nHost: x\r\n\r\n\",
         # the NUL arrives in a later packet than the request line
         (b\"GET /metrics HTTP/1.1\r\n\", b\"\0X: y\r\n\r\n\")]
for req in cases:
    data = raw(*(req if isinstance(req, tuple) else (req,)))
    print(repr(req), data.count(b\"HTTP/1.\"), repr(data[:40]))
    assert data.startswith(b\"HTTP/1.\") and data[9:12] == b\"400\", data[:200]
    assert data.count(b\"HTTP/1.\") == 1, data
" &&
	# the connection was good for one request, and so is the server
	curl -sf -o /dev/null "http://127.0.0.1:$port/-/healthy" &&
	curl -sf -o /dev/null "http://127.0.0.1:$port/metrics" &&
	grep "a NUL byte in a request" tallyd.log
'

test_expect_success 'stop tallyd' '
	stop_tallyd
'

test_done
