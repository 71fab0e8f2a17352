#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""contrib/bench/statsd-send.py - statsd datagrams for the bench's statsd row

    statsd-send.py HOST:PORT N [GAP_MS]

Sends N UDP datagrams of at most 1432 bytes (the Ethernet guidance of
etsy's statsd), about 30 lines each, of mixed types, the same sequence on
every run: counters (some sampled at 0.5), gauges (absolute and +/-
adjustments), timers (ms), sets, over 200 metric names. GAP_MS (default 0)
pauses between datagrams so that a receiver run under valgrind keeps up.
Prints "datagrams=N lines=L bytes=B" on stdout.
"""
import socket
import sys
import time


def lines():
    i = 0
    while True:
        k = i % 200
        t = i % 10
        if t < 4:
            yield "hpc.frontier.jobs.service%03d.http.requests:%d|c%s" % (k, 1 + i % 7,
                                                "|@0.5" if t == 3 else "")
        elif t < 6:
            yield "hpc.frontier.jobs.service%03d.queue:%s%d|g" % (k, "+" if t == 5 else "",
                                               i % 50)
        elif t < 9:
            yield "hpc.frontier.jobs.service%03d.http.latency:%d.%d|ms" % (k, i % 300, i % 10)
        else:
            yield "hpc.frontier.jobs.service%03d.users:user%d|s" % (k, i % 97)
        i += 1


def main():
    host, port = sys.argv[1].rsplit(":", 1)
    n = int(sys.argv[2])
    gap = float(sys.argv[3]) / 1000 if len(sys.argv) > 3 else 0
    s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    gen = lines()
    pending = next(gen)
    total_lines = total_bytes = 0
    for _ in range(n):
        buf = []
        size = 0
        while size + len(pending) + 1 <= 1432:
            buf.append(pending)
            size += len(pending) + 1
            pending = next(gen)
        data = ("\n".join(buf) + "\n").encode()
        s.sendto(data, (host, int(port)))
        total_lines += len(buf)
        total_bytes += len(data)
        if gap:
            time.sleep(gap)
    print("datagrams=%d lines=%d bytes=%d" % (n, total_lines, total_bytes))


if __name__ == "__main__":
    sys.exit(main())
