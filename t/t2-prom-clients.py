#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""t/t2-prom-clients.py - misbehaving HTTP clients for the prometheus tests

    t2-prom-clients.py idle PORT N SECONDS OUT
        Open N connections one after the other and send nothing. OUT gets
        "connected N" once all are connected, then "closed I" for each one
        the server closes (I = 0 for the first one opened), as seen. Exits
        after SECONDS, or once all are closed.

    t2-prom-clients.py loris PORT N SECONDS OUT
        Slow loris: N connections each sending a never-ending request one
        byte a second; each one the server closes is opened again at once.
        OUT gets "connected K" as K = 50, 100, ... of the N have connected
        and sent their first byte, and at exit "closed K" (connections the
        server closed). Exits after SECONDS.

    t2-prom-clients.py slowread PORT N SECONDS OUT [SPACING]
        N connections GET /metrics with a 4 KiB receive buffer and read one
        byte a second each; the connections are opened SPACING seconds
        apart (default 0). OUT gets "started N" once every one has
        received the start of its reply, and "closed I" for each one the
        server closes (I = 0 for the first one opened). Exits after
        SECONDS.

Every mode runs its connections from one thread (selectors), so that
hundreds of them cost one process.
"""
import errno
import resource
import selectors
import socket
import sys
import time


def out_line(path, line):
    with open(path, "a") as f:
        f.write(line + "\n")


def raise_nofile():
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))


def idle(port, n, secs, out):
    socks = []
    for _ in range(n):
        s = socket.create_connection(("127.0.0.1", port), timeout=30)
        s.setblocking(False)
        socks.append(s)
    out_line(out, "connected %d" % n)
    sel = selectors.DefaultSelector()
    for i, s in enumerate(socks):
        sel.register(s, selectors.EVENT_READ, i)
    left, end = n, time.monotonic() + secs
    while left and time.monotonic() < end:
        for key, _ in sel.select(timeout=0.1):
            try:
                data = key.fileobj.recv(4096)
            except OSError:
                data = b""
            if data:
                continue
            sel.unregister(key.fileobj)
            key.fileobj.close()
            out_line(out, "closed %d" % key.data)
            left -= 1


class Loris:
    """One slot: a connection trickling a request, reopened when closed."""

    REQUEST = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Pad: "

    def __init__(self, port):
        self.port = port
        self.sock = None
        self.open = False
        self.sent = 0
        self.next = 0.0
        self.ever = False  # sent a byte at least once

    def connect(self, now):
        self.sock = socket.socket()
        self.sock.setblocking(False)
        self.open = False
        self.sent = 0
        self.next = now
        err = self.sock.connect_ex(("127.0.0.1", self.port))
        if err not in (0, errno.EINPROGRESS):
            self.sock.close()
            self.sock = None

    def byte(self):
        if self.sent < len(self.REQUEST):
            return self.REQUEST[self.sent:self.sent + 1]
        return b"a"


def loris(port, n, secs, out):
    sel = selectors.DefaultSelector()
    slots = [Loris(port) for _ in range(n)]
    closed, reported = 0, 0
    end = time.monotonic() + secs
    while time.monotonic() < end:
        now = time.monotonic()
        for s in slots:
            if s.sock is None:
                s.connect(now)
                if s.sock:
                    sel.register(s.sock, selectors.EVENT_WRITE, s)
        for key, ev in sel.select(timeout=0.2):
            s = key.data
            if ev & selectors.EVENT_WRITE and not s.open:
                if s.sock.getsockopt(socket.SOL_SOCKET, socket.SO_ERROR):
                    sel.unregister(s.sock)
                    s.sock.close()
                    s.sock = None
                    continue
                s.open = True
                sel.modify(s.sock, selectors.EVENT_READ, s)
            elif ev & selectors.EVENT_READ:
                try:
                    data = s.sock.recv(4096)
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(s.sock)
                    s.sock.close()
                    s.sock = None
                    closed += 1
        now = time.monotonic()
        for s in slots:
            if not s.sock or not s.open or now < s.next:
                continue
            try:
                s.sock.send(s.byte())
                s.sent += 1
                s.next = now + 1.0
                s.ever = True
            except OSError:
                sel.unregister(s.sock)
                s.sock.close()
                s.sock = None
                closed += 1
        ever = sum(1 for s in slots if s.ever)
        while reported + 50 <= ever:
            reported += 50
            out_line(out, "connected %d" % reported)
    out_line(out, "closed %d" % closed)


def slowread(port, n, secs, out, spacing=0.0):
    sel = selectors.DefaultSelector()
    got = [0] * n
    started = opened = 0
    now = time.monotonic()
    end, next_open, next_read = now + secs, now, now
    while now < end and (opened < n or sel.get_map()):
        if opened < n and now >= next_open:
            s = socket.socket()
            s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            s.settimeout(30)
            s.connect(("127.0.0.1", port))
            s.sendall(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n")
            s.setblocking(False)
            sel.register(s, selectors.EVENT_READ, opened)
            opened += 1
            next_open = now + spacing
            if not spacing:
                continue
        if now >= next_read:
            next_read = now + 1.0
            for key, _ in sel.select(timeout=0):
                try:
                    data = key.fileobj.recv(1)
                except BlockingIOError:
                    continue
                except OSError:
                    data = b""
                if not data:
                    sel.unregister(key.fileobj)
                    key.fileobj.close()
                    out_line(out, "closed %d" % key.data)
                    continue
                if not got[key.data]:
                    started += 1
                    if started == n:
                        out_line(out, "started %d" % n)
                got[key.data] += 1
        wake = min(next_read, end, next_open if opened < n else end)
        time.sleep(max(0.0, wake - time.monotonic()))
        now = time.monotonic()


def main():
    mode, port, n, secs, out = sys.argv[1:6]
    extra = [float(a) for a in sys.argv[6:]]
    raise_nofile()
    {"idle": idle, "loris": loris, "slowread": slowread}[mode](
        int(port), int(n), float(secs), out, *extra)


if __name__ == "__main__":
    main()
