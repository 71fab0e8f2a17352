# SPDX-License-Identifier: MIT
"""tally_trace - mark regions of a Python program for the tally collector

A pure-Python client over pyzmq (Debian: python3-zmq) speaking the same
wire format as the C library libtally-trace (doc/wire-format.md), with the
same environment variables and discovery (tally-trace(3)).

    import tally_trace

    tracer = tally_trace.Tracer()          # endpoint and trace id discovered

    with tracer.span("solver"):            # context manager
        ...

    @tracer.trace                          # decorator: span named after the
    def step(i):                           # function's qualified name
        ...

    @tracer.trace("io")                    # or with an explicit name
    def write_checkpoint():
        ...

    sid = tracer.begin("phase")            # explicit begin/end
    tracer.end(sid)

    with tracer.span("read") as sp:        # attributes, sent with the END
        sp.set("bytes", 4096)              # int, float, str or bool
    tracer.counter_add("calls", 1, {"peer": "3"})   # in-process counters
    tracer.gauge_set("queue_depth", 2.5)
    tracer.flush()                         # snapshots now (else: with the
                                           # next begin/end after 1 s)
    tracer.close()                         # or use the Tracer in a with

Attributes and counters are wire version 2 (doc/wire-format.md); a plain
begin/end stays version 1, so an older collector keeps receiving spans.
Counters are kept in the process (no message per call) and their
snapshots, what changed since the last one, ride on the next begin or
end once TALLY_TRACE_COUNTER_INTERVAL seconds (default 1) have passed,
and go out at flush() and close(). No thread is started unless asked
(Tracer(flusher=True) or TALLY_TRACE_FLUSHER=1): a long phase without
begin or end sends no snapshot meanwhile. A snapshot that cannot be
queued is sent again with the next one, so sums stay exact. A source
announces its local rank and visible GPUs (ROCR_/HIP_/CUDA_VISIBLE_DEVICES)
in a message of its own before the first event of each connection.

Guarantees, as in the C library: sends never block (zmq.NOBLOCK) and never
raise into the application; an event that cannot be queued is dropped and
counted, and the count rides on the next message that gets through.
Arguments that cannot make an event are refused without raising, as the
C library refuses them with EINVAL: begin() returns 0 for a name that is
not a non-empty str (or bytes, decoded as UTF-8 with replacement), end()
returns False for a span id that is not an int from 1 to 2**64 - 1, and
nothing is sent. Each
thread has its own socket and its own stack of open spans (a span's parent
is the innermost span open on the same thread). After os.fork() the child
re-opens lazily as a new source. close() drains for at most the linger.
A thread's socket stays open until close(), so that close can deliver what
the thread queued: a program that starts many short threads should give
them a tracer of their own or expect one socket per thread meanwhile.

Module-level begin/end/end_name/span/trace use a default tracer opened on
first use and closed at interpreter exit.

Without pyzmq the module still imports and every call works: the first
Tracer warns once (RuntimeWarning) and its events are counted as dropped,
as the C library does with no collector, so a missing package never costs
the application its run. A malformed endpoint (TALLY_TRACE_ENDPOINT=garbage,
tcp://host:99999) does the same, with one warning naming it, where the C
library's tally_trace_open() fails with EINVAL and its calls on no tracer
do nothing.
"""

import atexit
import functools
import inspect
import itertools
import os
import socket
import stat
import struct
import threading
import time
import warnings
import weakref

try:
    import zmq
except ImportError as _zmq_error:     # tracing off, the program runs
    zmq = None
    _ZMQ_MISSING = str(_zmq_error)

__all__ = ["Tracer", "begin", "end", "end_name", "span", "trace",
           "default_tracer", "counter_add", "gauge_set", "flush"]

WIRE_VERSION = 1
WIRE_VERSION2 = 2
BEGIN = 1
END = 2
CLOSE = 3
COUNTER = 4
MAX_STR = 1024
# version 2 (doc/wire-format.md, "Bounds")
MAX_EXT = 8192
MAX_KEY = 64
MAX_ATTR_STR = 256
MAX_LABEL_VAL = 128
MAX_ATTRS = 32
MAX_ATTR_BYTES = 4096      # per span, as libtally-trace: room for counters
MAX_COUNTERS = 64          # items per message
MAX_LABELS = 4
MAX_SERIES = 1024          # counters per tracer
GAUGE_REORDER_NS = 60 * 10**9  # snapshots in timestamp order within this
ITEM_ATTR, ITEM_SOURCE, ITEM_COUNTER = 1, 2, 3
T_INT64, T_DOUBLE, T_STRING, T_BOOL = 1, 2, 3, 4
DELTA, GAUGE = 1, 2
_RESERVED_LABELS = ("trace", "rank", "host", "pid")
MAX_ID = (1 << 64) - 1
SYSTEM_ENDPOINT = "ipc:///run/tally/trace.sock"

# doc/wire-format.md: magic, version, type, dropped, ts_ns, span_id,
# parent_id, pid, tid, rank, trace_len, name_len, host_len, reserved
_HEADER = struct.Struct("<2sBBIqQQIIiHHHH")
# Beyond its send queue, a socket's messages may sit in libzmq's 8 KiB
# write batch when close gives up (see close_stats in Tracer.close).
_ZMQ_BATCH_MSGS = 8192 // (_HEADER.size + 1) + 1

# Contexts and sockets inherited through fork: never touched again.
_fork_orphans = []

_RANK_VARS = ("PMIX_RANK", "OMPI_COMM_WORLD_RANK", "PMI_RANK",
              "SLURM_PROCID", "FLUX_TASK_RANK")
_JOB_VARS = ("SLURM_JOB_ID", "FLUX_JOB_ID", "PBS_JOBID", "LSB_JOBID")
_LOCAL_RANK_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID",
                    "PMI_LOCAL_RANK", "SLURM_LOCALID", "FLUX_TASK_LOCAL_ID",
                    "PALS_LOCAL_RANKID")
_GPU_VARS = (("ROCR_VISIBLE_DEVICES", "rocr_visible_devices"),
             ("HIP_VISIBLE_DEVICES", "hip_visible_devices"),
             ("CUDA_VISIBLE_DEVICES", "cuda_visible_devices"))


def _name_ok(key):
    """A key or counter name: 1 to 64 of [A-Za-z_][A-Za-z0-9_]*."""
    return (isinstance(key, str) and 0 < len(key) <= MAX_KEY
            and key.isascii() and not key[0].isdigit()
            and all(c.isalnum() or c == "_" for c in key))


def _clip_n(text, limit):
    """UTF-8 bytes of text, at most limit, never cutting a character."""
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    b = str(text).replace("\0", "\ufffd").encode("utf-8", "replace")
    if len(b) <= limit:
        return b
    n = limit
    while n > 0 and (b[n] & 0xC0) == 0x80:
        n -= 1
    return b[:n]


def _item(tag, payload):
    return struct.pack("<BH", tag, len(payload)) + payload


def attr_item(tag, key, value):
    """An ATTR (tag 1) or SOURCE (tag 2) item for key = value: bool, int
    (int64), float (finite) or str/bytes (cut to 256 bytes); None if the
    key or value cannot be sent."""
    if not _name_ok(key):
        return None
    k = key.encode()
    if isinstance(value, bool):
        v = bytes([T_BOOL, 1 if value else 0])
        return _item(tag, bytes([len(k)]) + v[:1] + k + v[1:])
    if isinstance(value, int):
        if not -(1 << 63) <= value < (1 << 63):
            return None
        return _item(tag, bytes([len(k), T_INT64]) + k +
                     struct.pack("<q", value))
    if isinstance(value, float):
        if value != value or value in (float("inf"), float("-inf")):
            return None
        return _item(tag, bytes([len(k), T_DOUBLE]) + k +
                     struct.pack("<d", value))
    if isinstance(value, (str, bytes)):
        return _item(tag, bytes([len(k), T_STRING]) + k +
                     _clip_n(value, MAX_ATTR_STR))
    return None


def _labels(labels):
    """labels (None, a dict or "k=v,k2=v2") as (text, encoded bytes,
    count); None when invalid."""
    if labels is None or labels == "":
        return "", b"", 0
    if isinstance(labels, dict):
        pairs = [(str(k), str(v)) for k, v in labels.items()]
    elif isinstance(labels, str):
        pairs = []
        for part in labels.split(","):
            k, eq, v = part.partition("=")
            if not eq:
                return None
            pairs.append((k, v))
    else:
        return None
    if len(pairs) > MAX_LABELS:
        return None
    enc = b""
    seen = set()
    for k, v in pairs:
        vb = v.encode("utf-8", "replace")
        if not _name_ok(k) or k in _RESERVED_LABELS or k in seen or \
                len(vb) > MAX_LABEL_VAL or "," in v or "\0" in v:
            return None
        seen.add(k)
        enc += bytes([len(k), len(vb)]) + k.encode() + vb
    return ",".join("%s=%s" % kv for kv in pairs), enc, len(pairs)


def _announce_items():
    """The SOURCE items this process announces (doc/wire-format.md)."""
    items = b""
    for var in _LOCAL_RANK_VARS:
        v = os.environ.get(var, "")
        if v.isascii() and v.isdigit() and int(v) <= 0x7FFFFFFF:
            items += attr_item(ITEM_SOURCE, "local_rank", int(v))
            break
    for var, key in _GPU_VARS:
        v = os.environ.get(var)
        if v is not None:
            items += attr_item(ITEM_SOURCE, key, v)
    return items


class _Counter:
    """One counter series: its COUNTER item (value at offset 14)."""

    __slots__ = ("kind", "item", "value", "sent", "dirty")

    def __init__(self, kind, name, enc, nlabels):
        payload = (bytes([kind, len(name), nlabels]) +
                   struct.pack("<Qq", 0, 0) + name.encode() + enc)
        self.kind = kind
        self.item = bytearray(_item(ITEM_COUNTER, payload))
        self.value = 0 if kind == DELTA else 0.0
        self.sent = 0
        self.dirty = False


def _clip(text):
    """UTF-8 bytes of text, at most MAX_STR, never cutting a character.

    NUL characters become U+FFFD: the collector rejects strings with NUL.
    Unencodable characters (lone surrogates) are replaced as well.
    """
    return _clip_n(text, MAX_STR)


def _env_rank():
    for var in _RANK_VARS:
        v = os.environ.get(var, "")
        if v.isascii() and v.isdigit() and int(v) <= 0x7FFFFFFF:
            return int(v)
    return -1


def _env_jobid():
    for var in _JOB_VARS:
        v = os.environ.get(var)
        if v:
            return v
    return None


def default_trace_id():
    """TALLY_TRACE_ID, else the batch job id, else "pid-<pid>"."""
    return (os.environ.get("TALLY_TRACE_ID") or _env_jobid()
            or "pid-%d" % os.getpid())


def _is_socket(path):
    try:
        return stat.S_ISSOCK(os.stat(path).st_mode)
    except OSError:
        return False


def discover_endpoint():
    """TALLY_TRACE_ENDPOINT, else a user collector's socket for this user
    (and job), else the system collector's socket."""
    env = os.environ.get("TALLY_TRACE_ENDPOINT")
    if env:
        return env
    job = _env_jobid()
    sub = ("job-%s" % job,) if job else ()
    candidates = []
    rt = os.environ.get("TALLY_RUNTIME_DIR")
    if rt:
        candidates.append(os.path.join(rt, "trace.sock"))
    xdg = os.environ.get("XDG_RUNTIME_DIR")
    if xdg:
        candidates.append(os.path.join(xdg, "tally", *sub, "trace.sock"))
    candidates.append(os.path.join("/tmp/tally-%d" % os.getuid(), *sub,
                                   "trace.sock"))
    for path in candidates:
        if _is_socket(path):
            return "ipc://" + path
    return SYSTEM_ENDPOINT


def _env_int(var, default, lo, hi):
    try:
        v = int(os.environ.get(var, ""))
    except ValueError:
        return default
    return default if v < lo else min(v, hi)


class _Conn:
    """One thread's socket, open spans and drop accounting."""

    __slots__ = ("sock", "stack", "pending", "events", "dropped", "first",
                 "tid", "announce", "failing")

    def __init__(self, sock, tid, announce):
        self.sock = sock
        self.stack = []         # [span_id, parent_id, name bytes, attrs]
        self.pending = 0        # drops not yet carried by a sent message
        self.events = 0
        self.dropped = 0
        self.first = 0          # ts_ns of the first event queued
        self.tid = tid
        self.announce = announce  # send it before the next event
        self.failing = False


class _Span:
    """Context manager and decorator for one named span."""

    def __init__(self, tracer, name):
        self._tracer = tracer
        self._name = name
        self._ids = threading.local()

    def __enter__(self):
        ids = getattr(self._ids, "ids", None)
        if ids is None:
            ids = self._ids.ids = []
        ids.append(self._tracer.begin(self._name))
        return self

    def set(self, key, value):
        """Set attribute key of this span (entered on this thread) to
        value: int (int64), float (finite), str or bool; sent with its
        END. Returns False (and keeps nothing) for a key that is not 1 to
        64 of [A-Za-z_][A-Za-z0-9_]*, a value of another type, or beyond
        32 attributes or 4096 bytes of them."""
        ids = getattr(self._ids, "ids", None)
        if not ids or not ids[-1]:
            return False
        return self._tracer.set(key, value, ids[-1])

    def __exit__(self, *exc):
        sid = self._ids.ids.pop()
        if sid:
            self._tracer.end(sid)
        return False

    def __call__(self, func):
        return self._tracer.trace(self._name)(func)


class Tracer:
    """A connection to the tally collector.

    endpoint: ZeroMQ endpoint, or None to discover it (see
    discover_endpoint). trace_id: groups this run's spans, or None for
    default_trace_id(). linger_ms and sndhwm default to
    TALLY_TRACE_LINGER_MS (2000) and TALLY_TRACE_SNDHWM (10000); an sndhwm
    below 1 means the default, as for the variable (ZeroMQ would take 0 as
    unlimited: the queue must stay bounded).
    """

    def __init__(self, endpoint=None, trace_id=None, linger_ms=None,
                 sndhwm=None, flusher=None):
        self.endpoint = endpoint or discover_endpoint()
        self.trace_id = _clip(trace_id or default_trace_id()).decode()
        self._trace = _clip(self.trace_id)
        self._host = _clip(socket.gethostname())
        self._rank = _env_rank()
        self._linger = (linger_ms if linger_ms is not None else
                        _env_int("TALLY_TRACE_LINGER_MS", 2000, 0, 60000))
        self._sndhwm = _env_int("TALLY_TRACE_SNDHWM", 10000, 1, 1 << 24)
        if sndhwm is not None and sndhwm >= 1:
            self._sndhwm = min(sndhwm, 1 << 24)
        self._ids = itertools.count(1)   # next() is atomic under the GIL
        self._lock = threading.Lock()
        try:
            iv = float(os.environ.get("TALLY_TRACE_COUNTER_INTERVAL", "1"))
        except ValueError:
            iv = 1.0
        self._interval_ns = int((iv if 0.001 <= iv <= 3600 else 1.0) * 1e9)
        self._announce = _announce_items()
        self._clock = threading.Lock()   # counters and their snapshots
        self._counters = {}              # (kind, name, labels) -> _Counter
        self._next_snap = 0
        self._last_snap = 0
        self._flusher = None
        self._flusher_stop = threading.Event()
        self._closed = False
        self._final = None
        _warn_no_zmq()
        # validate the endpoint now, as the C library does; a bad one
        # (a typo in TALLY_TRACE_ENDPOINT) turns tracing off, with one
        # warning, and never costs the program its run
        self._bad = _check_endpoint(self.endpoint) if zmq is not None \
            else None
        self._reset()
        if self._ctx is not None:
            probe = self._ctx.socket(zmq.PUSH)
            try:
                probe.connect(self.endpoint)
            except zmq.ZMQError as e:
                self._bad = str(e)
            finally:
                probe.close(0)
            if self._bad:
                self._ctx.term()
                self._ctx = None
        if self._bad:
            _warn_bad_endpoint(self.endpoint, self._bad)
        # a weak reference: a closed, dropped tracer must not stay alive
        ref = weakref.ref(self)
        os.register_at_fork(
            after_in_child=lambda: (t := ref()) and t._after_fork())
        if flusher or (flusher is None and
                       os.environ.get("TALLY_TRACE_FLUSHER") == "1"):
            self.start_flusher()

    def _reset(self):
        self._pid = os.getpid()
        self._ctx = (zmq.Context() if zmq is not None and not self._bad
                     else None)
        self._local = threading.local()
        self._conns = []
        self._gone = [0, 0, 0]

    def _after_fork(self):
        # The parent's context is unusable here: its I/O thread did not
        # survive the fork. Keep it referenced forever, so that no
        # __del__ tries to close or terminate it (that could hang), and
        # start over. The lock may have been held by another thread.
        if not self._closed:
            _fork_orphans.append((self._ctx, self._conns))
            self._lock = threading.Lock()
            self._reset()
            # a new source: counters from zero, no flusher thread
            self._clock = threading.Lock()
            for k in self._counters.values():
                k.value = 0 if k.kind == DELTA else 0.0
                k.sent = 0
                k.dirty = False
            self._next_snap = 0
            self._flusher = None

    def _conn(self):
        c = getattr(self._local, "conn", None)
        if c is not None:
            return c
        with self._lock:
            if self._closed:
                return None
            s = None   # no socket (no pyzmq...): events count as dropped
            if self._ctx is not None:
                try:
                    s = self._ctx.socket(zmq.PUSH)
                    s.setsockopt(zmq.SNDHWM, self._sndhwm)
                    s.setsockopt(zmq.LINGER, self._linger)
                    s.connect(self.endpoint)
                except zmq.ZMQError:
                    s = None
            c = _Conn(s, threading.get_native_id(), bool(self._announce))
            self._conns.append(c)
            self._local.conn = c
        return c

    def _message(self, typ, dropped, ts, sid, parent, tid, name, items=b""):
        """A message; version 2 with an item section when items."""
        return _HEADER.pack(b"tY", WIRE_VERSION2 if items else WIRE_VERSION,
                            typ, dropped, ts, sid, parent, self._pid, tid,
                            self._rank, len(self._trace), len(name),
                            len(self._host), len(items)) + \
            self._trace + name + self._host + items

    def _snap_fill(self, todo, room):
        """COUNTER items for the counters of todo (a list, consumed from
        the front) that fit in room bytes; returns (items, taken)."""
        out = []
        n = 0
        while todo and len(out) < MAX_COUNTERS:
            k = todo[0]
            if len(k.item) > room - n:
                break
            todo.pop(0)
            if k.kind == DELTA:
                v = k.value
                struct.pack_into("<q", k.item, 14, v - k.sent)
            else:
                k.dirty = False
                v = k.value
                struct.pack_into("<d", k.item, 14, v)
            out.append((k, v))
            n += len(k.item)
        return b"".join(bytes(k.item) for k, _ in out), out

    @staticmethod
    def _snap_commit(taken, ok):
        for k, v in taken:
            if k.kind == DELTA:
                if ok:
                    k.sent = v
            elif not ok:
                k.dirty = True

    def _changed(self):
        return [k for k in self._counters.values()
                if (k.value != k.sent if k.kind == DELTA else k.dirty)]

    def _try(self, c, msg):
        if c.sock is None or c.failing:
            return False
        try:
            c.sock.send(msg, zmq.NOBLOCK, copy=True)
            return True
        except zmq.ZMQError:
            return False

    def _send_counters(self, c, todo, announce, ts):
        """COUNTER messages: the announcement and the snapshots of todo;
        a message that cannot be queued waits for the next snapshot."""
        while todo or announce:
            items = self._announce if announce else b""
            taken = []
            if todo:
                more, taken = self._snap_fill(todo, MAX_EXT - len(items))
                items += more
            if not items:
                break
            ok = self._try(c, self._message(COUNTER, 0, ts, 0, 0, c.tid,
                                            b"", items))
            self._snap_commit(taken, ok)
            if not ok:
                break
            if announce:
                c.announce = announce = False

    def _send(self, c, typ, sid, parent, name, attrs=b""):
        carried = min(c.pending, 0xFFFFFFFF)
        ts = time.time_ns()
        if c.announce:
            self._send_counters(c, None, True, ts)
        items = attrs
        todo = None
        taken = []
        if self._counters and ts >= self._next_snap and \
                self._clock.acquire(blocking=False):
            # in timestamp order: a thread that read the clock later
            # may have taken one first (doc/wire-format.md, COUNTER)
            if 0 < self._last_snap - ts <= GAUGE_REORDER_NS:
                self._clock.release()
            else:
                todo = self._changed()
        if todo is not None:
            more, taken = self._snap_fill(todo, MAX_EXT - len(items))
            items += more
        msg = self._message(typ, carried, ts, sid, parent, c.tid, name,
                            items)
        c.events += 1
        ok = False
        if c.sock is not None:
            try:
                c.sock.send(msg, zmq.NOBLOCK, copy=True)
                c.pending -= carried
                if not c.first:
                    c.first = ts
                if c.failing:   # the collector may be a new one
                    c.announce = bool(self._announce)
                c.failing = False
                ok = True
            except zmq.ZMQError:
                c.failing = True
        if not ok:
            c.pending += 1
            c.dropped += 1
        if todo is not None:
            self._snap_commit(taken, ok)
            if ok and todo:
                self._send_counters(c, todo, False, ts)
            self._next_snap = ts + self._interval_ns
            self._last_snap = ts
            self._clock.release()

    def begin(self, name):
        """Open a span on this thread; return its id (0, and nothing sent,
        if name is not a non-empty str or bytes, or the tracer is
        closed)."""
        b = _clip(name) if isinstance(name, (str, bytes)) else None
        c = self._conn() if b else None
        if c is None:
            return 0
        sid = next(self._ids)
        parent = c.stack[-1][0] if c.stack else 0
        c.stack.append([sid, parent, b, None])
        self._send(c, BEGIN, sid, parent, b)
        return sid

    def _end_at(self, c, i):
        sid, parent, name, attrs = c.stack.pop(i)
        self._send(c, END, sid, parent, name,
                   b"".join(attrs.values()) if attrs else b"")

    def set(self, key, value, span_id=None):
        """Set attribute key of the innermost span open on this thread (or
        of span span_id, open on this thread) to value: int (int64),
        float (finite), str (cut to 256 bytes) or bool; it is sent with
        the span's END, and setting a key again replaces its value.
        Returns False, keeping nothing, for no such span, a key that is
        not 1 to 64 of [A-Za-z_][A-Za-z0-9_]*, another type of value, or
        beyond 32 attributes or 4096 bytes of them on the span."""
        item = attr_item(ITEM_ATTR, key, value)
        c = self._conn() if item else None
        if c is None or not c.stack:
            return False
        frame = None
        for f in reversed(c.stack):
            if span_id is None or f[0] == span_id:
                frame = f
                break
        if frame is None:
            return False
        attrs = dict(frame[3] or {})
        attrs[key] = item
        if len(attrs) > MAX_ATTRS or \
                sum(len(v) for v in attrs.values()) > MAX_ATTR_BYTES:
            return False
        frame[3] = attrs
        return True

    def _counter(self, kind, name, labels):
        lab = _labels(labels)
        if lab is None or not _name_ok(name):
            return None
        key = (kind, name, lab[0])
        k = self._counters.get(key)
        if k is None:
            with self._clock:
                k = self._counters.get(key)
                if k is None:
                    if len(self._counters) >= MAX_SERIES:
                        return None
                    k = self._counters[key] = _Counter(kind, name, lab[1],
                                                       lab[2])
        return k

    def counter_add(self, name, delta=1, labels=None):
        """Add delta (an int >= 0) to counter name with labels (None, a
        dict or "k=v,k2=v2": up to 4, keys as names, none of trace, rank,
        host, pid). Kept in the process; the collector exports
        tally_app_<name>_total. Returns False (nothing kept) for a bad
        name, labels or delta, or beyond 1024 series."""
        if not isinstance(delta, int) or isinstance(delta, bool) or \
                not 0 <= delta < (1 << 63):
            return False
        k = self._counter(DELTA, name, labels)
        if k is None:
            return False
        with self._clock:
            k.value += delta
        return True

    def gauge_set(self, name, value, labels=None):
        """Set gauge name (labels as counter_add) to value, a finite
        number; the collector exports tally_app_<name>."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return False
        value = float(value)
        if value != value or value in (float("inf"), float("-inf")):
            return False
        k = self._counter(GAUGE, name, labels)
        if k is None:
            return False
        with self._clock:
            k.value = value
            k.dirty = True
        return True

    def flush(self):
        """Send the counters' snapshots (what changed) now, in COUNTER
        messages on this thread's socket; never waits for the collector.
        Returns False if the tracer is closed."""
        c = self._conn()
        if c is None:
            return False
        with self._clock:
            ts = time.time_ns()
            if 0 < self._last_snap - ts <= GAUGE_REORDER_NS:
                ts = self._last_snap
            self._send_counters(c, self._changed(), c.announce, ts)
            self._next_snap = ts + self._interval_ns
            self._last_snap = ts
        return True

    def start_flusher(self):
        """Start a daemon thread calling flush() every
        TALLY_TRACE_COUNTER_INTERVAL seconds until close()."""
        if self._flusher is not None:
            return

        def run(ref=weakref.ref(self), stop=self._flusher_stop,
                wait=self._interval_ns / 1e9):
            while not stop.wait(wait):
                t = ref()
                if t is None or not t.flush():
                    return
                del t
        self._flusher_stop.clear()
        self._flusher = threading.Thread(target=run, daemon=True,
                                         name="tally_trace flusher")
        self._flusher.start()

    def end(self, span_id):
        """Close a span by id. Return False if it was not open on this
        thread (the END is sent anyway, without a name), or if span_id is
        not an int from 1 to 2**64 - 1 (nothing is sent)."""
        valid = (isinstance(span_id, int) and not isinstance(span_id, bool)
                 and 0 < span_id <= MAX_ID)
        c = self._conn() if valid else None
        if c is None:
            return False
        for i in range(len(c.stack) - 1, -1, -1):
            if c.stack[i][0] == span_id:
                self._end_at(c, i)
                return True
        self._send(c, END, span_id, 0, b"")
        return False

    def end_name(self, name):
        """Close the innermost open span of this name on this thread.
        Return False (and send nothing) if there is none, or if name is
        not a non-empty str or bytes."""
        b = _clip(name) if isinstance(name, (str, bytes)) else None
        c = self._conn() if b else None
        if c is None:
            return False
        for i in range(len(c.stack) - 1, -1, -1):
            if c.stack[i][2] == b:
                self._end_at(c, i)
                return True
        return False

    def span(self, name):
        """A context manager (and decorator) for a span named name."""
        return _Span(self, name)

    def trace(self, name=None):
        """Decorator: run the function inside a span. Use bare
        (@tracer.trace: the function's qualified name) or with a name
        (@tracer.trace("io")). Coroutine functions are spanned over
        their whole execution."""
        if callable(name):
            return self.trace(None)(name)

        def deco(func):
            label = name or func.__qualname__
            if inspect.iscoroutinefunction(func):
                @functools.wraps(func)
                async def awrapper(*args, **kwargs):
                    sid = self.begin(label)
                    try:
                        return await func(*args, **kwargs)
                    finally:
                        self.end(sid)
                return awrapper

            @functools.wraps(func)
            def wrapper(*args, **kwargs):
                sid = self.begin(label)
                try:
                    return func(*args, **kwargs)
                finally:
                    self.end(sid)
            return wrapper
        return deco

    def stats(self):
        """dict(events, dropped, unreported) over this process's threads;
        after close(), what close() returned."""
        with self._lock:
            if self._closed and self._final is not None:
                return dict(self._final)
            ev, dr, un = self._gone
            for c in self._conns:
                ev += c.events
                dr += c.dropped
                un += c.pending
        return {"events": ev, "dropped": dr, "unreported": un}

    def _collector_up(self, wait_ms):
        """Is a collector listening? A fresh socket's first connect either
        succeeds or fails and schedules a retry: watch for either. No
        answer in time (an overloaded machine) counts as yes: a live
        collector judged absent would lose the queued events uncounted,
        the other mistake costs at most the linger."""
        s = self._ctx.socket(zmq.PUSH)
        mon = s.get_monitor_socket(zmq.EVENT_CONNECTED |
                                   zmq.EVENT_CONNECT_RETRIED)
        up = True
        try:
            s.connect(self.endpoint)
            deadline = time.monotonic() + wait_ms / 1000.0
            while True:
                left = deadline - time.monotonic()
                if left <= 0 or not mon.poll(int(left * 1000) + 1):
                    break
                frames = mon.recv_multipart()
                event = struct.unpack_from("=H", frames[0])[0]
                if event in (zmq.EVENT_CONNECTED,
                             zmq.EVENT_CONNECT_RETRIED):
                    up = event == zmq.EVENT_CONNECTED
                    break
        finally:
            s.disable_monitor()
            mon.close(0)
            s.close(0)
        return up

    def _send_close(self, queued, first, dropped, linger_ms):
        """The CLOSE message (doc/wire-format.md), on a socket of its own
        that no queue holds up: the drops nobody reported yet, how many
        events this process queued and when the first one was, so that
        the collector counts those that never arrive. True if queued."""
        s = self._ctx.socket(zmq.PUSH)
        try:
            s.setsockopt(zmq.LINGER, linger_ms)
            s.connect(self.endpoint)
            s.send(self._message(CLOSE, dropped, time.time_ns(), queued,
                                 first, threading.get_native_id(), b""),
                   zmq.NOBLOCK)
            return True
        except zmq.ZMQError:
            return False
        finally:
            s.close(linger_ms)

    def close(self):
        """Close: send the collector a CLOSE message (the drops not
        reported yet, how many events were queued), deliver what is queued
        for at most the linger if a collector is connected, and close.
        Idempotent. Returns (and stats() returns from then on) the final
        dict(events, dropped, unreported, discarded_max): unreported, the
        drops the collector was never told about; discarded_max, at most
        how many queued events close discarded: 0 when every thread's
        queue was delivered within the linger (pyzmq does not say how much
        of a queue went out before; each thread counts for at most its
        sndhwm and libzmq's write batch). The collector counts exactly
        what did not arrive (tally_dropped_total{reason="undelivered"})."""
        if self._flusher is not None:
            self._flusher_stop.set()
            if self._flusher is not threading.current_thread():
                self._flusher.join()
            self._flusher = None
        if self._counters and not self._closed:
            self.flush()   # the last snapshots go with the queues
        with self._lock:
            if self._closed:
                return dict(self._final) if self._final else None
            self._closed = True
            conns, self._conns = self._conns, []
        events = sum(c.events for c in conns)
        dropped = sum(c.dropped for c in conns)
        pending = sum(c.pending for c in conns)
        firsts = [c.first for c in conns if c.first]
        cap = self._sndhwm + _ZMQ_BATCH_MSGS
        lost_max = sum(min(c.events - c.dropped, cap) for c in conns)
        carried = 0
        expired = True
        if self._ctx is not None:
            up = self._linger > 0 and \
                self._collector_up(min(self._linger, 200))
            deadline = time.monotonic() + self._linger / 1000.0

            def left():
                return max(int((deadline - time.monotonic()) * 1000), 0)
            queued = events - dropped
            if up and (queued or pending):
                n = min(pending, 0xFFFFFFFF)
                if self._send_close(queued, min(firsts, default=0), n,
                                    left()):
                    carried = n
            for c in conns:
                if c.sock is not None:
                    c.sock.close(left() if up else 0)
            # returns before the deadline only if every queue went out
            self._ctx.term()
            expired = not up or time.monotonic() >= deadline
        self._final = {"events": events, "dropped": dropped,
                       "unreported": pending - carried,
                       "discarded_max": lost_max if expired else 0}
        return dict(self._final)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


_warned = False


def _warn_no_zmq():
    """Without pyzmq: say so once per process, then trace nothing."""
    global _warned
    if zmq is None and not _warned:
        _warned = True
        warnings.warn("tally_trace: cannot import zmq (%s): tracing is off, "
                      "events are counted as dropped (Debian: install "
                      "python3-zmq)" % _ZMQ_MISSING, RuntimeWarning,
                      stacklevel=3)


def _check_endpoint(ep):
    """What is wrong with endpoint ep for a collector to be there, or None.
    libzmq takes some that no collector can be at (a tcp port above 65535
    wraps around, inproc:// is this process's own): the C library's
    checks."""
    if isinstance(ep, bytes):
        ep = ep.decode("utf-8", "replace")
    if not isinstance(ep, str):
        return "not a string"
    if ep.startswith("ipc://"):
        return None if len(ep) > 6 else "no path"
    if not ep.startswith("tcp://"):
        return ("protocol not supported (ipc:// or tcp://)" if "://" in ep
                else "not an endpoint (ipc:///path or tcp://host:port)")
    host, sep, port = ep[6:].rpartition(":")
    if not sep or not host or not (port.isascii() and port.isdigit()) or \
            len(port) > 5 or not 1 <= int(port) <= 65535:
        return "use tcp://host:port, port 1 to 65535"
    return None


_warned_endpoints = set()


def _warn_bad_endpoint(ep, why):
    """A malformed endpoint: say so once per process and endpoint."""
    if ep in _warned_endpoints:
        return
    _warned_endpoints.add(ep)
    warnings.warn("tally_trace: endpoint %r (TALLY_TRACE_ENDPOINT?): %s: "
                  "tracing is off, events are counted as dropped"
                  % (ep, why), RuntimeWarning, stacklevel=3)


_default = None
_default_lock = threading.Lock()


def default_tracer():
    """The module's tracer, opened on first use, closed at exit."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Tracer()
                atexit.register(_default.close)
    return _default


def begin(name):
    return default_tracer().begin(name)


def end(span_id):
    return default_tracer().end(span_id)


def end_name(name):
    return default_tracer().end_name(name)


def span(name):
    return default_tracer().span(name)


def trace(name=None):
    return default_tracer().trace(name)


def counter_add(name, delta=1, labels=None):
    return default_tracer().counter_add(name, delta, labels)


def gauge_set(name, value, labels=None):
    return default_tracer().gauge_set(name, value, labels)


def flush():
    return default_tracer().flush()
