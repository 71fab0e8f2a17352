#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""The Omnistat-style reference receiver: a pyzmq recv_json drain loop.

Omnistat's prototype trace collector binds a PULL socket and, every sample,
drains it until empty with recv_json(NOBLOCK), opening a (trace id, label)
on "start" and closing it on "end". This loop does the same per message
(parse the JSON array, update the open-marker dict) but waits in poll()
between drains instead of sleeping a sampling interval, so it runs as fast
as it can. It measures, from the first message to the last, wall time and
process CPU (every thread), like zmq-pull.c and tallyd's bench output.

usage: pyzmq-drain.py ENDPOINT COUNT [TIMEOUT_S] [OUTFILE]
Run it with Debian's /usr/bin/python3 (python3-zmq).
"""
import resource
import sys
import time

import zmq


def cpu_s():
    ru = resource.getrusage(resource.RUSAGE_SELF)
    return ru.ru_utime + ru.ru_stime


def main():
    endpoint, count = sys.argv[1], int(sys.argv[2])
    timeout = float(sys.argv[3]) if len(sys.argv) > 3 else 60.0
    outpath = sys.argv[4] if len(sys.argv) > 4 else None

    ctx = zmq.Context()
    sock = ctx.socket(zmq.PULL)
    sock.bind(endpoint)
    poller = zmq.Poller()
    poller.register(sock, zmq.POLLIN)

    markers = {}
    got = 0
    t_first = c_first = None
    deadline = time.monotonic() + timeout
    while got < count and time.monotonic() < deadline:
        if not poller.poll(200):
            continue
        while True:
            try:
                msg = sock.recv_json(flags=zmq.NOBLOCK)
            except zmq.Again:
                break
            if got == 0:
                t_first, c_first = time.monotonic(), cpu_s()
            got += 1
            key = (msg[2], msg[3])
            if msg[0] == "start":
                markers[key] = msg[1]
            else:
                markers.pop(key, None)
    t_last, c_last = time.monotonic(), cpu_s()

    secs = t_last - t_first if t_first is not None else 0.0
    cpu = c_last - c_first if c_first is not None else 0.0
    line = "records=%d secs=%.6f cpu_s=%.6f rate=%.0f cpu_ns_per=%.0f\n" % (
        got, secs, cpu,
        (got - 1) / secs if got > 1 and secs > 0 else 0,
        cpu * 1e9 / (got - 1) if got > 1 else 0)
    if outpath:
        with open(outpath, "w") as f:
            f.write(line)
    else:
        sys.stdout.write(line)
    sock.close(linger=0)
    ctx.term()
    return 0 if got >= count else 2


if __name__ == "__main__":
    sys.exit(main())
