#!/usr/bin/env python3
# t/t40-statsd-send.py - statsd sender of the statsd tests (t40xx)
#
#   t40-statsd-send.py KIND ADDRESS FILE...
#	send each FILE's bytes as one datagram (udp4, udp6, unix) or all of
#	them, in order, over one connection (tcp)
#   t40-statsd-send.py flood ADDRESS N MARK_FILE CAPTURE
#	N datagrams "flood:1|c" to 127.0.0.1:PORT as fast as possible, then
#	"flood.end:1|c" every 0.2 s until CAPTURE (the capture output's file)
#	shows it; prints how many datagrams were sent in all
#
# KIND: udp4 ("127.0.0.1:PORT"), udp6 ("[::1]:PORT"), unix (a path),
# tcp ("127.0.0.1:PORT").
import socket
import sys
import time


def inet(addr):
    host, port = addr.rsplit(":", 1)
    return host.strip("[]"), int(port)


def main():
    kind, addr = sys.argv[1], sys.argv[2]
    if kind == "flood":
        n, capture = int(sys.argv[3]), sys.argv[4]
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        to = inet(addr)
        for _ in range(n):
            s.sendto(b"flood:1|c", to)
        sent = n
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            s.sendto(b"flood.end:1|c", to)
            sent += 1
            time.sleep(0.2)
            with open(capture, "rb") as f:
                if b"flood.end" in f.read():
                    print(sent)
                    return 0
        return 1
    datagrams = []
    for path in sys.argv[3:]:
        with open(path, "rb") as f:
            datagrams.append(f.read())
    if kind == "tcp":
        s = socket.create_connection(inet(addr))
        for d in datagrams:
            s.sendall(d)
        s.close()
        return 0
    if kind == "unix":
        s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
        to = addr
    else:
        s = socket.socket(socket.AF_INET6 if kind == "udp6"
                          else socket.AF_INET, socket.SOCK_DGRAM)
        to = inet(addr)
    for d in datagrams:
        if s.sendto(d, to) != len(d):
            return 1
    return 0


sys.exit(main())
