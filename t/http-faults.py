#!/usr/bin/python3
# t/http-faults.py - an HTTP server that misbehaves in one way, for the
# tests of tally's HTTP client: no real server (influxd, prometheus) can
# be made to send these answers on purpose
#
#   http-faults.py PORTFILE LOG MODE
#
# Listens on 127.0.0.1 (a free port, written to PORTFILE once listening);
# reads each request's head and body, appends one line per request to LOG
# ("MODE BODYLEN"), then answers as MODE says:
#   chunked    200 with a chunked body that never ends (1 KiB a chunk)
#   huge       200 announcing Content-Length 100 GB, sending forever
#   trickle    a status line, then one header line a second, for ever
#   413close   413 once the headers are read (body not read), then close;
#              a body under 2048 bytes is taken (204)
#   500esc     500 whose message holds ESC, a newline and a NUL
#   400        400 with a JSON error, every time
#   301        301 to http://elsewhere.invalid/write
#   600        a status code outside 100-599, every time
import socket
import sys
import threading
import time

portfile, logfile, mode = sys.argv[1:4]
lock = threading.Lock()


def log(line):
    with lock, open(logfile, 'a') as f:
        f.write(line + '\n')


def read_head(f):
    length = 0
    line = f.readline()
    if not line:
        return None
    while True:
        h = f.readline()
        if not h or h in (b'\r\n', b'\n'):
            break
        k, _, v = h.decode('latin-1').partition(':')
        if k.strip().lower() == 'content-length':
            length = int(v.strip())
    return length


def answer(conn, status, body=b'', extra=''):
    conn.sendall(('HTTP/1.1 %s\r\n%sContent-Length: %d\r\n\r\n' %
                  (status, extra, len(body))).encode() + body)


def serve(conn):
    f = conn.makefile('rb')
    try:
        while True:
            length = read_head(f)
            if length is None:
                return
            if mode == '413close' and length >= 2048:
                log('%s %d' % (mode, length))
                answer(conn, '413 Request Entity Too Large',
                       b'{"error":"Request Entity Too Large"}',
                       'Connection: close\r\n')
                conn.shutdown(socket.SHUT_RDWR)
                return
            body = f.read(length) if length else b''
            log('%s %d' % (mode, len(body)))
            if mode == 'chunked':
                conn.sendall(b'HTTP/1.1 200 OK\r\n'
                             b'Transfer-Encoding: chunked\r\n\r\n')
                while True:
                    conn.sendall(b'400\r\n' + b'x' * 1024 + b'\r\n')
            elif mode == 'huge':
                conn.sendall(b'HTTP/1.1 200 OK\r\n'
                             b'Content-Length: 100000000000\r\n\r\n')
                while True:
                    conn.sendall(b'x' * 65536)
            elif mode == 'trickle':
                conn.sendall(b'HTTP/1.1 204 No Content\r\n')
                while True:
                    time.sleep(1)
                    conn.sendall(b'X-Slow: 1\r\n')
            elif mode == '500esc':
                answer(conn, '500 Internal Server Error',
                       b'engine \x1b[31mfailed\nforged: line\x00hidden')
            elif mode == '400':
                answer(conn, '400 Bad Request',
                       b'{"error":"unable to parse: bad"}')
            elif mode == '600':
                answer(conn, '600 Nonsense', b'x')
            elif mode == '301':
                answer(conn, '301 Moved Permanently', b'',
                       'Location: http://elsewhere.invalid/write\r\n')
            else:
                answer(conn, '204 No Content')
    except OSError:
        return
    finally:
        conn.close()


srv = socket.socket()
srv.bind(('127.0.0.1', 0))
srv.listen(16)
with open(portfile + '.tmp', 'w') as pf:
    pf.write('%d\n' % srv.getsockname()[1])
import os
os.rename(portfile + '.tmp', portfile)
while True:
    c, _ = srv.accept()
    threading.Thread(target=serve, args=(c,), daemon=True).start()
