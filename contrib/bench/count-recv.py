#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""contrib/bench/count-recv.py - the counting receiver of the bench's output rows

    count-recv.py tcp PORT OUT
    count-recv.py http PORT OUT

tcp: accepts connections on 127.0.0.1:PORT (carbon's plaintext protocol,
as tallyd's graphite output and collectd's write_graphite send it) and
counts the complete lines received. http: an HTTP/1.1 server with
keep-alive (InfluxDB's write endpoint as the influxdb output sends it)
that answers every POST 204 and counts the lines of the bodies (gzip
bodies are inflated). Either way the receiver does nothing else with the
bytes, so that what it costs is the same for every sender. OUT is
rewritten with "lines=L bytes=B" whenever the count changes (and is
written with zeros at start), so a caller polls it.
"""
import gzip
import http.server
import os
import socket
import sys
import threading

state = {"lines": 0, "bytes": 0}
lock = threading.Lock()


def add(lines, nbytes, out):
    with lock:
        state["lines"] += lines
        state["bytes"] += nbytes
        tmp = out + ".tmp"
        with open(tmp, "w") as f:
            f.write("lines=%d bytes=%d\n" % (state["lines"], state["bytes"]))
        os.replace(tmp, out)


def tcp(port, out):
    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    ls.bind(("127.0.0.1", port))
    ls.listen(16)

    def serve(c):
        with c:
            while True:
                data = c.recv(1 << 16)
                if not data:
                    break
                add(data.count(b"\n"), len(data), out)

    while True:
        c, _ = ls.accept()
        threading.Thread(target=serve, args=(c,), daemon=True).start()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def do_POST(self):
        body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
        if self.headers.get("Content-Encoding") == "gzip":
            body = gzip.decompress(body)
        n = body.count(b"\n")
        if body and not body.endswith(b"\n"):
            n += 1
        add(n, len(body), self.server.out)
        self.send_response(204)
        self.send_header("Content-Length", "0")
        self.end_headers()

    def log_message(self, *args):
        pass


def main():
    kind, port, out = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    add(0, 0, out)
    if kind == "tcp":
        tcp(port, out)
    else:
        srv = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        srv.out = out
        srv.serve_forever()


if __name__ == "__main__":
    main()
