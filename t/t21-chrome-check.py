#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""t/t21-chrome-check.py - check a Chrome trace file the file output wrote

usage: t21-chrome-check.py FILE

Loads FILE with Python's json module (a strict parser), then checks:
  - the head: otherData.tally_clock_anchor with hostname, realtime_ns,
    monotonic_ns and ts_origin_realtime_ns;
  - every event has ph, pid, tid; every pid with a complete event ("X") or
    a counter ("C") is named by a process_name metadata event of this file,
    every (pid, tid) with an X event by a thread_name one;
  - the nesting, per (pid, tid): X events nest properly (each one inside
    the one enclosing it, never across its end), the enclosing event's
    span_id is the event's parent_id, and its depth is the event's depth.
Prints, for each process (in rank order), one line
    rank R: NAME/DEPTH NAME/DEPTH ...
of its X events in start order (" open" after those marked open), then
one line per counter track name prefix count:
    counters: N events on pid P named "tally counters (HOST)"
and exits 1 with a message on the first failure.
"""
import json
import sys


def fail(msg):
    print("t21-chrome-check: %s: %s" % (sys.argv[1], msg), file=sys.stderr)
    sys.exit(1)


def main():
    with open(sys.argv[1], "rb") as f:
        doc = json.loads(f.read().decode("utf-8"))
    anchor = doc.get("otherData", {}).get("tally_clock_anchor")
    if not anchor:
        fail("no clock anchor")
    for k in ("hostname", "realtime_ns", "monotonic_ns",
              "ts_origin_realtime_ns"):
        if k not in anchor:
            fail("the clock anchor has no " + k)
    evs = doc["traceEvents"]
    pnames, tnames, sortidx = {}, set(), {}
    xs, cs = {}, []
    for e in evs:
        for k in ("ph", "pid", "tid"):
            if k not in e:
                fail("an event without %s: %r" % (k, e))
        if e["ph"] == "M":
            if e["name"] == "process_name":
                pnames[e["pid"]] = e["args"]["name"]
            elif e["name"] == "thread_name":
                tnames.add((e["pid"], e["tid"]))
            elif e["name"] == "process_sort_index":
                sortidx[e["pid"]] = e["args"]["sort_index"]
        elif e["ph"] == "X":
            xs.setdefault((e["pid"], e["tid"]), []).append(e)
        elif e["ph"] == "C":
            cs.append(e)
        else:
            fail("unexpected ph %r" % e["ph"])
    lines = []
    for (pid, tid), lane in xs.items():
        if pid not in pnames:
            fail("pid %d has no process_name" % pid)
        if (pid, tid) not in tnames:
            fail("pid %d tid %d has no thread_name" % (pid, tid))
        # start order; the longer first when two start together
        lane.sort(key=lambda e: (e["ts"], -e["dur"]))
        stack, out = [], []
        for e in lane:
            end = e["ts"] + e["dur"]
            while stack and e["ts"] >= stack[-1]["ts"] + stack[-1]["dur"]:
                stack.pop()
            a = e["args"]
            if stack:
                p = stack[-1]
                if end > p["ts"] + p["dur"] + 1e-6:
                    fail("%s crosses the end of %s" % (e["name"], p["name"]))
                if a["parent_id"] != p["args"]["span_id"]:
                    fail("%s: parent_id %d, enclosed by %s (span %d)" %
                         (e["name"], a["parent_id"], p["name"],
                          p["args"]["span_id"]))
            elif a["parent_id"] != 0:
                fail("%s: parent_id %d, enclosed by nothing" %
                     (e["name"], a["parent_id"]))
            if a["depth"] != len(stack):
                fail("%s: depth %d, nested %d deep" %
                     (e["name"], a["depth"], len(stack)))
            out.append("%s/%d%s" % (e["name"], a["depth"],
                                    " open" if a.get("open") else ""))
            stack.append(e)
        rank = lane[0]["args"]["rank"]
        if rank >= 0 and sortidx.get(pid) != rank:
            fail("pid %d: sort_index %r, rank %d" %
                 (pid, sortidx.get(pid), rank))
        lines.append((rank, "rank %d: %s" % (rank, " ".join(out))))
    for _, line in sorted(lines):
        print(line)
    if cs:
        pids = {e["pid"] for e in cs}
        if len(pids) != 1:
            fail("counters on several pids: %r" % pids)
        pid = pids.pop()
        if pid not in pnames:
            fail("the counter pid %d has no process_name" % pid)
        print('counters: %d events on pid %d named "%s"' %
              (len(cs), pid, pnames[pid]))


main()
