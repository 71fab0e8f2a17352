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
    tracer.close()                         # or use the Tracer in a with

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
           "default_tracer"]

WIRE_VERSION = 1
BEGIN = 1
END = 2
CLOSE = 3
MAX_STR = 1024
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


def _clip(text):
    """UTF-8 bytes of text, at most MAX_STR, never cutting a character.

    NUL characters become U+FFFD: the collector rejects strings with NUL.
    Unencodable characters (lone surrogates) are replaced as well.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    b = str(text).replace("\0", "\ufffd").encode("utf-8", "replace")
    if len(b) <= MAX_STR:
        return b
    n = MAX_STR
    while n > 0 and (b[n] & 0xC0) == 0x80:
        n -= 1
    return b[:n]


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
                 "tid")

    def __init__(self, sock, tid):
        self.sock = sock
        self.stack = []         # (span_id, parent_id, name bytes)
        self.pending = 0        # drops not yet carried by a sent message
        self.events = 0
        self.dropped = 0
        self.first = 0          # ts_ns of the first event queued
        self.tid = tid


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
                 sndhwm=None):
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
            c = _Conn(s, threading.get_native_id())
            self._conns.append(c)
            self._local.conn = c
        return c

    def _message(self, typ, dropped, ts, sid, parent, tid, name):
        return _HEADER.pack(b"tY", WIRE_VERSION, typ, dropped, ts, sid,
                            parent, self._pid, tid, self._rank,
                            len(self._trace), len(name), len(self._host),
                            0) + self._trace + name + self._host

    def _send(self, c, typ, sid, parent, name):
        carried = min(c.pending, 0xFFFFFFFF)
        ts = time.time_ns()
        msg = self._message(typ, carried, ts, sid, parent, c.tid, name)
        c.events += 1
        if c.sock is not None:
            try:
                c.sock.send(msg, zmq.NOBLOCK, copy=True)
                c.pending -= carried
                if not c.first:
                    c.first = ts
                return
            except zmq.ZMQError:
                pass
        c.pending += 1
        c.dropped += 1

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
        c.stack.append((sid, parent, b))
        self._send(c, BEGIN, sid, parent, b)
        return sid

    def _end_at(self, c, i):
        sid, parent, name = c.stack.pop(i)
        self._send(c, END, sid, parent, name)

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
