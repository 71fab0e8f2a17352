#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""t/t30-zmq-send.py - send hand-made trace messages to a collector (pyzmq)

    t30-zmq-send.py ENDPOINT <SCRIPT

Connects a PUSH socket to ENDPOINT, as Omnistat's tracer and the clients
do, and sends one single-frame message per script line, in order:

    native begin|end SPAN PARENT PID TID RANK DROPPED TS TRACE NAME HOST
            a wire v1 message packed here from the layout in
            doc/wire-format.md (not with tally's encoder); "-" is an empty
            string
    json TEXT       TEXT as is (Omnistat's format), e.g.
                    json ["start", 1722000000123, "3", "solver"]
    hex HEX...      raw bytes, e.g. hex 74 59 02 01
    sleep MS        pause

Blank lines and lines starting with '#' are skipped. Waits up to 10 s for
every message to leave (linger), then exits 0. Needs Debian's python3-zmq.
"""
import struct
import sys
import time

import zmq


def native(args):
    phase, span, parent, pid, tid, rank, dropped, ts = args[:8]
    trace, name, host = [b"" if s == "-" else s.encode() for s in args[8:11]]
    header = struct.pack(
        "<2sBBIqQQIIiHHHH",
        b"tY", 1, {"begin": 1, "end": 2}[phase], int(dropped), int(ts),
        int(span), int(parent), int(pid), int(tid), int(rank),
        len(trace), len(name), len(host), 0)
    assert len(header) == 52
    return header + trace + name + host


def main():
    ctx = zmq.Context()
    sock = ctx.socket(zmq.PUSH)
    sock.setsockopt(zmq.LINGER, 10000)
    sock.setsockopt(zmq.SNDHWM, 0)
    sock.connect(sys.argv[1])
    for line in sys.stdin:
        line = line.rstrip("\n")
        if not line.strip() or line.startswith("#"):
            continue
        kind, _, rest = line.partition(" ")
        if kind == "native":
            msg = native(rest.split())
        elif kind == "json":
            msg = rest.encode()
        elif kind == "hex":
            msg = bytes.fromhex(rest)
        elif kind == "sleep":
            time.sleep(int(rest) / 1000)
            continue
        else:
            sys.exit("t30-zmq-send.py: bad line: " + line)
        sock.send(msg)
    sock.close()
    ctx.term()


if __name__ == "__main__":
    main()
