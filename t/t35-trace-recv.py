# SPDX-License-Identifier: MIT
"""t/t35-trace-recv.py - a PULL receiver that decodes tally trace messages

Used by the t35xx tests. Written from doc/wire-format.md alone (it shares
no code with the C or Python clients), so it checks them independently.

    $PYTHON3 t35-trace-recv.py ENDPOINT OUT [--count N] [--idle MS] [--ready FILE]

Binds a PULL socket on ENDPOINT, touches FILE (if given) once bound, and
receives until the first message (N messages with --count) arrived, for
at most 30 s, and then no message came for --idle ms (default 1000). One line per
message goes to OUT:

    begin|end trace=T name=N id=I parent=P pid=P tid=T rank=R host=H dropped=D ts=ok|bad
    invalid REASON LEN

ts=ok when the timestamp is within [start of receiver - 5 s, receipt + 5 s].
A last line "messages=N dropped_sum=D" ends OUT. CLOSE messages (a tracer
closes: what it queued) are not counted as messages: each is a line

    close trace=T queued=Q first=F pid=P tid=T host=H dropped=D

in OUT.close, and their dropped count is in dropped_sum.
"""
import struct
import sys
import time

import zmq

HDR = struct.Struct("<2sBBIqQQIIiHHHH")
assert HDR.size == 52
MAXSTR = 1024


def decode(b):
    """Return a dict for a valid message, or a reason string."""
    if len(b) < 52:
        return "truncated"
    (magic, ver, typ, dropped, ts, sid, par, pid, tid, rank, tl, nl, hl,
     _res) = HDR.unpack_from(b)
    if magic != b"tY":
        return "bad_magic"
    if ver != 1:
        return "unknown_version"
    if typ not in (1, 2, 3):
        return "bad_type"
    if len(b) != 52 + tl + nl + hl or tl == 0 or (typ == 1 and nl == 0) \
            or (typ == 3 and nl != 0) or max(tl, nl, hl) > MAXSTR:
        return "bad_length"
    if sid == 0 and typ != 3:
        return "bad_span_id"
    try:
        trace = b[52:52 + tl].decode("utf-8")
        name = b[52 + tl:52 + tl + nl].decode("utf-8")
        host = b[52 + tl + nl:].decode("utf-8")
    except UnicodeDecodeError:
        return "bad_utf8"
    if "\0" in trace + name + host:
        return "bad_utf8"
    return dict(type={1: "begin", 2: "end", 3: "close"}[typ],
                dropped=dropped,
                ts=ts, id=sid, parent=par, pid=pid, tid=tid, rank=rank,
                trace=trace, name=name, host=host)


def main():
    args = sys.argv[1:]
    endpoint, out = args[0], args[1]
    count, idle, ready = None, 1000, None
    i = 2
    while i < len(args):
        if args[i] == "--count":
            count = int(args[i + 1])
        elif args[i] == "--idle":
            idle = int(args[i + 1])
        elif args[i] == "--ready":
            ready = args[i + 1]
        i += 2
    start = time.time_ns()
    ctx = zmq.Context()
    s = ctx.socket(zmq.PULL)
    s.setsockopt(zmq.RCVHWM, 0)
    s.bind(endpoint)
    if ready:
        open(ready, "w").close()
    n = dsum = 0
    with open(out, "w", encoding="utf-8") as f, \
            open(out + ".close", "w", encoding="utf-8") as fc:
        while True:
            # the first message (and the first --count) may take a while
            # on a loaded machine; after that, --idle ends the capture
            waiting = n == 0 or (count is not None and n < count)
            wait = 30000 if waiting else idle
            if not s.poll(wait):
                break
            b = s.recv()
            now = time.time_ns()
            m = decode(b)
            if not isinstance(m, str) and m["type"] == "close":
                dsum += m["dropped"]
                fc.write("close trace=%s queued=%d first=%d pid=%d tid=%d "
                         "host=%s dropped=%d\n" % (
                             m["trace"], m["id"], m["parent"], m["pid"],
                             m["tid"], m["host"], m["dropped"]))
                continue
            n += 1
            if isinstance(m, str):
                f.write("invalid %s %d\n" % (m, len(b)))
                continue
            dsum += m["dropped"]
            ok = start - 5 * 10**9 <= m["ts"] <= now + 5 * 10**9
            f.write("%s trace=%s name=%s id=%d parent=%d pid=%d tid=%d "
                    "rank=%d host=%s dropped=%d ts=%s\n" % (
                        m["type"], m["trace"], m["name"], m["id"],
                        m["parent"], m["pid"], m["tid"], m["rank"],
                        m["host"], m["dropped"], "ok" if ok else "bad"))
        f.write("messages=%d dropped_sum=%d\n" % (n, dsum))
    s.close(0)
    ctx.term()


if __name__ == "__main__":
    main()
