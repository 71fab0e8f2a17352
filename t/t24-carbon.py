#!/usr/bin/python3
# t/t24-carbon.py - what the graphite tests need around a real carbon-cache
#
#   conf DIR LINE_PORT PICKLE_PORT QUERY_PORT
#       write DIR/carbon.conf and DIR/storage-schemas.conf: carbon-cache
#       on 127.0.0.1 with those ports (plaintext over TCP and UDP on
#       LINE_PORT), whisper files under DIR/storage,
#       1-second points kept an hour, carbon's own metrics every second
#   fetch DIR METRIC [N]
#       print "SECONDS VALUE" (VALUE as %.17g) of every point carbon wrote
#       for METRIC, read from its whisper file; a tagged METRIC
#       ("name;k=v") is found where carbon itself puts it (carbon.util's
#       TaggedSeries, so the test sees carbon's own parse of the tags).
#       With N, first wait (polling, 60 s at most) until it holds N points
#   relay LISTEN_PORT UPSTREAM_PORT LOG
#       a counting TCP relay, not a fake server: every connection accepted
#       on LISTEN_PORT is joined to a new connection to carbon on
#       UPSTREAM_PORT; bytes go through unchanged, and each complete line
#       is appended to LOG as it passes, so a test can count what reached
#       carbon and see a line delivered twice. The relay listens only
#       while carbon does (it probes carbon's port every 50 ms), so tallyd
#       is refused during an outage as it would be without it; when carbon
#       ends a connection the relay stops listening ("#down TIME" in LOG)
#       and ends tallyd's, and "#up TIME" marks listening again.
#   stall LISTEN_PORT LOG
#       a FAKE carbon, by necessity: no real server can be made to accept
#       a connection and then never read it. Its first connection is
#       accepted and not read (a small receive buffer, so that the
#       kernels' buffers fill fast); from the second connection on, every
#       connection is read, and the first one too, to its end (what
#       tallyd's kernel had taken before it gave up on it is still
#       delivered), so that a line sent on both shows up twice. Complete
#       lines go to LOG ("#conn N" when connection N is accepted, "#stall
#       N BYTES" when the first one has been read: BYTES it brought); a
#       line without its newline at a connection's end is dropped, as
#       carbon does.
import os
import socket
import sys
import threading


def conf(d, line_port, pickle_port, query_port):
    st = os.path.join(d, "storage")
    os.makedirs(os.path.join(st, "whisper"), exist_ok=True)
    os.makedirs(os.path.join(d, "log"), exist_ok=True)
    with open(os.path.join(d, "carbon.conf"), "w") as f:
        f.write(f"""[cache]
STORAGE_DIR = {st}
LOCAL_DATA_DIR = {st}/whisper
WHITELISTS_DIR = {st}/lists
CONF_DIR = {d}
LOG_DIR = {d}/log
PID_DIR = {d}
ENABLE_LOGROTATION = False
USER =
MAX_CACHE_SIZE = inf
MAX_UPDATES_PER_SECOND = 100000
MAX_CREATES_PER_MINUTE = inf
LINE_RECEIVER_INTERFACE = 127.0.0.1
LINE_RECEIVER_PORT = {line_port}
ENABLE_UDP_LISTENER = True
UDP_RECEIVER_INTERFACE = 127.0.0.1
UDP_RECEIVER_PORT = {line_port}
PICKLE_RECEIVER_INTERFACE = 127.0.0.1
PICKLE_RECEIVER_PORT = {pickle_port}
CACHE_QUERY_INTERFACE = 127.0.0.1
CACHE_QUERY_PORT = {query_port}
CARBON_METRIC_INTERVAL = 1
LOG_UPDATES = False
LOG_CACHE_HITS = False
LOG_CREATES = False
LOG_LISTENER_CONN_SUCCESS = False
WHISPER_AUTOFLUSH = True
ENABLE_TAGS = True
GRAPHITE_URL = http://127.0.0.1:1
""")
    with open(os.path.join(d, "storage-schemas.conf"), "w") as f:
        f.write("[all]\npattern = .*\nretentions = 1s:1h\n")


def points(path):
    import time
    import whisper

    if not os.path.exists(path):
        return []
    now = int(time.time())
    try:
        (start, end, step), values = whisper.fetch(path, now - 3500,
                                                   now + 1)
    except Exception:
        return []  # being created
    return [(start + i * step, v) for i, v in enumerate(values)
            if v is not None]


def fetch(d, metric, want=0):
    import time
    from carbon.util import TaggedSeries

    if ";" in metric:
        metric = TaggedSeries.parse(metric).path
    rel = TaggedSeries.encode(metric, os.sep, hash_only=True)
    path = os.path.join(d, "storage", "whisper", rel + ".wsp")
    end = time.monotonic() + 60
    p = points(path)
    while len(p) < want and time.monotonic() < end:
        time.sleep(0.1)
        p = points(path)
    for t, v in p:
        print("%d %.17g" % (t, v))


def relay(listen_port, upstream_port, log):
    import time

    lock = threading.Lock()
    out = open(log, "a", buffering=1)
    state = {"ls": None}

    def note(text):
        with lock:
            out.write(text + "\n")

    def close_listener():
        with lock:
            ls, state["ls"] = state["ls"], None
        if ls:
            ls.close()

    def pump(src, dst, record, conn):
        rest = b""
        try:
            while True:
                data = src.recv(65536)
                if not data:
                    break
                if record:
                    rest += data
                    *done, rest = rest.split(b"\n")
                    for line in done:
                        note(line.decode("utf-8", "replace"))
                dst.sendall(data)
        except OSError:
            pass
        if record:
            conn["tallyd_ended"] = True
        elif not conn.get("tallyd_ended"):
            # carbon ended the connection: it is going away, so refuse
            # tallyd's next attempts before ending its connection
            note("#down %.6f" % time.time())
            close_listener()
        for s in (src, dst):
            try:
                s.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def serve(c):
        try:
            up = socket.create_connection(("127.0.0.1", upstream_port))
        except OSError:
            close_listener()
            c.close()
            return
        conn = {}
        a = threading.Thread(target=pump, args=(c, up, True, conn),
                             daemon=True)
        b = threading.Thread(target=pump, args=(up, c, False, conn),
                             daemon=True)
        a.start()
        b.start()
        a.join()
        b.join()
        c.close()
        up.close()

    def carbon_up():
        try:
            socket.create_connection(("127.0.0.1", upstream_port),
                                     timeout=1).close()
            return True
        except OSError:
            return False

    # listen only while carbon does, so that tallyd sees what it would
    # see without the relay: refused connections during the outage
    import select
    while True:
        ls = state["ls"]
        if ls is None:
            if not carbon_up():
                time.sleep(0.05)
                continue
            ls = socket.socket()
            ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            ls.bind(("127.0.0.1", listen_port))
            ls.listen(16)
            note("#up %.6f" % time.time())
            with lock:
                state["ls"] = ls
        try:
            r, _, _ = select.select([ls], [], [], 0.05)
            if r:
                c, _ = ls.accept()
                threading.Thread(target=serve, args=(c,),
                                 daemon=True).start()
        except (OSError, ValueError):
            pass  # closed by a pump thread


def stall(listen_port, log):
    lock = threading.Lock()
    out = open(log, "a", buffering=1)
    second = threading.Event()

    def note(text):
        with lock:
            out.write(text + "\n")

    def drain(c, n, wait):
        if wait:
            second.wait()
        rest, total = b"", 0
        while True:
            try:
                b = c.recv(65536)
            except OSError:
                b = b""
            if not b:
                break
            total += len(b)
            rest += b
            *lines, rest = rest.split(b"\n")
            with lock:
                for ln in lines:
                    out.write(ln.decode("utf-8", "replace") + "\n")
        if wait:
            note(f"#stall {n} {total}")
        c.close()

    ls = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    # inherited by accepted sockets: the window closes after a few KiB
    ls.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    ls.bind(("127.0.0.1", listen_port))
    ls.listen(16)
    n = 0
    while True:
        c, _ = ls.accept()
        n += 1
        note(f"#conn {n}")
        if n == 2:
            second.set()
        threading.Thread(target=drain, args=(c, n, n == 1),
                         daemon=True).start()


if __name__ == "__main__":
    cmd = sys.argv[1]
    if cmd == "conf":
        conf(sys.argv[2], *map(int, sys.argv[3:6]))
    elif cmd == "fetch":
        fetch(sys.argv[2], sys.argv[3],
              int(sys.argv[4]) if len(sys.argv) > 4 else 0)
    elif cmd == "relay":
        relay(int(sys.argv[2]), int(sys.argv[3]), sys.argv[4])
    elif cmd == "stall":
        stall(int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit("unknown command " + cmd)
