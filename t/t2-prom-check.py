#!/usr/bin/python3
# SPDX-License-Identifier: MIT
"""t/t2-prom-check.py - structural checks of a Prometheus exposition

Used by the t2xxx tests next to promtool, for the rules promtool does not
check (or that it cannot check in OpenMetrics):

  - every family has exactly one HELP and one TYPE line, before its samples,
    and its lines are contiguous (a family never reappears later);
  - families are sorted by name (0.0.4), and series by label text within a
    family;
  - every sample belongs to the family of the preceding TYPE line, with the
    suffixes its type allows (_bucket/_sum/_count, _total, _info);
  - histograms: le buckets in increasing numeric order ending in +Inf, with
    non-decreasing counts and _count equal to the +Inf bucket; summaries
    have _sum and _count;
  - OpenMetrics (--openmetrics): the text ends with "# EOF".

Usage: t2-prom-check.py [--openmetrics] < exposition
Prints one line per problem and exits 1 if there is any.
"""
import math
import re
import sys

SAMPLE = re.compile(r'^([a-zA-Z_:][a-zA-Z0-9_:]*)(\{(.*)\})? (\S+)$')
LABEL = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"')


def parse_labels(text):
    pairs = []
    pos = 0
    while pos < len(text):
        m = LABEL.match(text, pos)
        if not m:
            raise ValueError('bad label text at %r' % text[pos:])
        pairs.append((m.group(1), m.group(2)))
        pos = m.end()
        if pos < len(text):
            if text[pos] != ',':
                raise ValueError('expected , at %r' % text[pos:])
            pos += 1
    return pairs


def number(s):
    # float() reads NaN, +Inf and -Inf as Prometheus writes them
    return float(s)


def main():
    om = '--openmetrics' in sys.argv[1:]
    text = sys.stdin.read()
    errors = []
    lines = text.split('\n')
    if lines and lines[-1] == '':
        lines.pop()
    if om:
        if not lines or lines[-1] != '# EOF':
            errors.append('OpenMetrics exposition does not end with # EOF')
        else:
            lines.pop()
    seen = set()
    fam = None
    ftype = None
    helped = False
    last_family = None
    last_series = {}
    hist = {}
    summ = {}

    def allowed(name):
        if ftype == 'histogram':
            return name in (fam + '_bucket', fam + '_sum', fam + '_count')
        if ftype == 'summary':
            return name in (fam, fam + '_sum', fam + '_count')
        if ftype == 'counter':
            return name == (fam + '_total' if om else fam)
        if ftype == 'info':
            return name == fam + '_info'
        return name == fam

    for n, line in enumerate(lines, 1):
        if line.startswith('# HELP '):
            name = line.split(' ')[2]
            if name in seen:
                errors.append('%d: family %s appears twice' % (n, name))
            # OpenMetrics names counters without _total: the order (by
            # sample name) is only checked in the 0.0.4 text format
            if not om and last_family is not None and name < last_family:
                errors.append('%d: family %s after %s: not sorted'
                              % (n, name, last_family))
            seen.add(name)
            fam, ftype, helped, last_family = name, None, True, name
            continue
        if line.startswith('# TYPE '):
            parts = line.split(' ')
            if not helped or parts[2] != fam:
                errors.append('%d: TYPE %s without its HELP line just before'
                              % (n, parts[2]))
            if ftype is not None:
                errors.append('%d: second TYPE line for %s' % (n, fam))
            ftype = parts[3]
            continue
        if line.startswith('#'):
            errors.append('%d: unexpected comment %r' % (n, line))
            continue
        m = SAMPLE.match(line)
        if not m:
            errors.append('%d: not a sample line: %r' % (n, line))
            continue
        name, lbl, value = m.group(1), m.group(3) or '', m.group(4)
        if ftype is None or not allowed(name):
            errors.append('%d: sample %s outside its family (%s %s)'
                          % (n, name, fam, ftype))
            continue
        try:
            pairs = parse_labels(lbl)
            v = number(value)
        except ValueError as e:
            errors.append('%d: %s' % (n, e))
            continue
        keys = [k for k, _ in pairs]
        if len(set(keys)) != len(keys):
            errors.append('%d: repeated label name' % n)
        if ftype in ('histogram', 'summary'):
            extra = 'le' if name.endswith('_bucket') else 'quantile'
            base = ','.join('%s="%s"' % p for p in pairs if p[0] != extra)
        else:
            base = lbl
        # series order: by label text without le/quantile, within family
        prev = last_series.get(fam)
        if prev is not None and base < prev:
            errors.append('%d: series {%s} after {%s}: not sorted'
                          % (n, base, prev))
        last_series[fam] = base
        if ftype == 'histogram':
            h = hist.setdefault((fam, base), {'b': [], 'count': None})
            if name.endswith('_bucket'):
                le = dict(pairs).get('le')
                if le is None:
                    errors.append('%d: bucket without le' % n)
                else:
                    h['b'].append((number(le), v))
            elif name.endswith('_count'):
                h['count'] = v
        if ftype == 'summary':
            s = summ.setdefault((fam, base), set())
            s.add(name[len(fam):] or 'q')

    for (f, base), h in hist.items():
        b = h['b']
        les = [x[0] for x in b]
        counts = [x[1] for x in b]
        if not b or les[-1] != math.inf:
            errors.append('%s{%s}: no +Inf bucket last' % (f, base))
            continue
        if les != sorted(les) or len(set(les)) != len(les):
            errors.append('%s{%s}: le not increasing: %r' % (f, base, les))
        if counts != sorted(counts):
            errors.append('%s{%s}: bucket counts decrease' % (f, base))
        if h['count'] != counts[-1]:
            errors.append('%s{%s}: _count %r != +Inf bucket %r'
                          % (f, base, h['count'], counts[-1]))
    for (f, base), s in summ.items():
        if '_sum' not in s or '_count' not in s:
            errors.append('%s{%s}: summary without _sum or _count'
                          % (f, base))
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == '__main__':
    sys.exit(main())
