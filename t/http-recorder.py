#!/usr/bin/python3
# t/http-recorder.py - a recording HTTP server, and a counting relay, for
# the tests of tally's HTTP client and push outputs
#
#   http-recorder.py PORTFILE LOG [--script FILE] [--relay HOST:PORT]
#
# Listens on 127.0.0.1 (a free port, written to PORTFILE once listening)
# and serves HTTP/1.1 with keep-alive. Every request is appended to LOG as
# one JSON line:
#   {"n": 1, "method": "POST", "path": "/write?db=x", "peer": 51234,
#    "headers": {"content-encoding": "gzip", ...}, "gzip": true,
#    "raw_len": 31, "body": "<body, gunzipped if it was gzip>",
#    "status": 204}
# "peer" is the client's port: one kept-alive connection keeps one port.
#
# Answers: with --relay the request is forwarded (decompressed body and
# headers as received) to the server at HOST:PORT and its answer returned:
# a counting relay that sees every request exactly as often as the client
# sent it. Otherwise, with --script FILE, each request takes the first
# line of FILE (removed from it) as its answer:
#   STATUS [retry-after=SECONDS] [BODY...]   e.g. "503", "429 retry-after=1",
#                                                 "400 {"error":"bad db"}"
#   close                          close the connection without an answer
# An empty or missing FILE answers 204.
import gzip
import http.client
import http.server
import json
import os
import sys
import threading

portfile, logfile = sys.argv[1], sys.argv[2]
script = None
relay = None
args = sys.argv[3:]
while args:
    if args[0] == '--script':
        script = args[1]
    elif args[0] == '--relay':
        host, port = args[1].rsplit(':', 1)
        relay = (host, int(port))
    args = args[2:]

lock = threading.Lock()
count = [0]


def next_answer():
    if not script:
        return '204'
    try:
        with open(script) as f:
            lines = f.read().split('\n')
    except FileNotFoundError:
        return '204'
    lines = [ln for ln in lines if ln.strip()]
    if not lines:
        return '204'
    with open(script + '.tmp', 'w') as f:
        f.write(''.join(ln + '\n' for ln in lines[1:]))
    os.rename(script + '.tmp', script)
    return lines[0]


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = 'HTTP/1.1'

    def log_message(self, *a):
        pass

    def handle_any(self):
        n = int(self.headers.get('Content-Length') or 0)
        raw = self.rfile.read(n) if n else b''
        gz = self.headers.get('Content-Encoding', '') == 'gzip'
        body = gzip.decompress(raw) if gz else raw
        with lock:
            count[0] += 1
            rec = {'n': count[0], 'method': self.command,
                   'path': self.path, 'peer': self.client_address[1],
                   'headers': {k.lower(): v
                               for k, v in self.headers.items()},
                   'gzip': gz, 'raw_len': len(raw),
                   'body': body.decode('utf-8', 'replace')}
            answer = None if relay else next_answer()
        if answer == 'close':
            rec['status'] = 0
            self.log(rec)
            self.close_connection = True
            self.connection.shutdown(2)
            return
        headers = []
        if relay:
            conn = http.client.HTTPConnection(*relay, timeout=30)
            fwd = {k: v for k, v in self.headers.items()
                   if k.lower() not in ('content-encoding',
                                        'content-length', 'host')}
            try:
                conn.request(self.command, self.path, body=body,
                             headers=fwd)
                r = conn.getresponse()
                status, text = r.status, r.read()
                headers = [(k, v) for k, v in r.getheaders()
                           if k.lower() in ('content-type', 'retry-after',
                                            'x-influxdb-error')]
            except OSError:
                # upstream down: the client sees what it would see
                rec['status'] = 0
                self.log(rec)
                self.close_connection = True
                self.connection.shutdown(2)
                return
            finally:
                conn.close()
        else:
            parts = answer.split(' ', 1)
            status, text = int(parts[0]), b''
            rest = parts[1] if len(parts) > 1 else ''
            if rest.startswith('retry-after='):
                ra, _, rest = rest.partition(' ')
                headers.append(('Retry-After', ra.split('=', 1)[1]))
            text = rest.encode()
        rec['status'] = status
        self.log(rec)
        self.send_response(status)
        for k, v in headers:
            self.send_header(k, v)
        self.send_header('Content-Length', str(len(text)))
        self.end_headers()
        if text:
            self.wfile.write(text)

    def log(self, rec):
        with lock, open(logfile, 'a') as f:
            f.write(json.dumps(rec) + '\n')

    do_POST = do_PUT = do_GET = handle_any


srv = http.server.ThreadingHTTPServer(('127.0.0.1', 0), Handler)
srv.daemon_threads = True
with open(portfile + '.tmp', 'w') as f:
    f.write('%d\n' % srv.server_address[1])
os.rename(portfile + '.tmp', portfile)
srv.serve_forever()
