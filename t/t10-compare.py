#!/usr/bin/env python3
"""t10-compare.py - compare tallyd's page with node_exporter's (t1009).

Usage: t10-compare.py PREFIXES NE_BEFORE TALLY NE_AFTER

PREFIXES is a comma-separated list of metric name prefixes. The pages are
Prometheus text exposition (0.0.4). Checks, for the series whose name
starts with one of PREFIXES:
  - the same series (name and labels) on both sides;
  - each of tallyd's values lies between node_exporter's two readings,
    taken before and after tallyd's: exactly for counters (they only
    grow), with a slack for gauges that move both ways (sockets in use,
    free space on a busy disk, I/Os in flight).
Prints each difference and exits 1 if there is one.
"""
import re
import sys

LINE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{.*\})?\s+(\S+)')


def parse(path, prefixes):
    out = {}
    with open(path) as f:
        for line in f:
            if line.startswith('#') or not line.strip():
                continue
            m = LINE.match(line)
            if not m or not m.group(1).startswith(prefixes):
                continue
            labels = m.group(2) or ''
            # node_exporter orders labels by name as tallyd does
            out[m.group(1) + labels] = float(m.group(3))
    return out


def moving(name):
    """Gauges that move both ways between reads."""
    return (name.startswith(('node_sockstat_', 'node_disk_io_now',
                             'node_filesystem_free_bytes',
                             'node_filesystem_avail_bytes',
                             'node_filesystem_files_free',
                             'node_netstat_Tcp_CurrEstab')))


def main():
    prefixes = tuple(sys.argv[1].split(','))
    before = parse(sys.argv[2], prefixes)
    tally = parse(sys.argv[3], prefixes)
    after = parse(sys.argv[4], prefixes)
    bad = 0
    for s in sorted(set(before) | set(after) - set(tally)):
        if s not in tally:
            print('only node_exporter has', s)
            bad += 1
    for s in sorted(set(tally) - set(before)):
        print('only tallyd has', s)
        bad += 1
    for s in sorted(set(tally) & set(before) & set(after)):
        lo = min(before[s], after[s])
        hi = max(before[s], after[s])
        if moving(s.split('{')[0]):
            slack = max(64.0, 0.05 * abs(hi))
            lo -= slack
            hi += slack
        if not lo <= tally[s] <= hi:
            print('%s: tallyd %r not in [%r, %r]' % (s, tally[s], lo, hi))
            bad += 1
    print('%d series compared, %d differences' % (len(tally), bad))
    return 1 if bad else 0


if __name__ == '__main__':
    sys.exit(main())
