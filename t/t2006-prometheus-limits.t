#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='prometheus output: bounds on series and connections

max_series caps the series an output keeps; the HTTP side survives running
out of file descriptors, closes requests that trickle in forever and caps
its connections.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"

require_cmd curl

# scrape PORT FILE - GET /metrics
scrape() {
	curl -sS --max-time 10 -o "$2" "http://127.0.0.1:$1/metrics"
}

# dropped FILE REASON - tally_dropped_total of instance "limited", or 0
dropped() {
	self_count "$1" tally_dropped_total limited "reason=\"$2\""
}

test_expect_success 'max_series: 50 series offered, the first 20 kept' '
	port=$(free_port) &&
	sport=$(free_port) &&
	cat >series.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = {
	  gen = { plugin = "spangen"; mode = "generations"; count = 50; };
	  self = { plugin = "self"; };
	};
	outputs = {
	  limited = { plugin = "prometheus"; listen = "127.0.0.1:$port";
	              max_series = 20; };
	  selfprom = { plugin = "prometheus"; listen = "127.0.0.1:$sport"; };
	};
	pipelines = {
	  a = { from = ["gen"]; to = ["limited"]; };
	  b = { from = ["self"]; to = ["selfprom"]; };
	};
	EOF
	start_tallyd --wait "port_listening $port && port_listening $sport" \
		series.conf &&
	wait_for "scrape $port m0 && grep -q ^spangen_gen m0" &&
	sleep 0.5 &&
	scrape $port m1 &&
	# spangen emits spangen_gen{i="0"..."49"} then spangen_gen_hist
	grep "^spangen_gen{" m1 | sed "s/ .*//" >got &&
	for i in $(seq 0 19); do echo "spangen_gen{i=\"$i\"}"; done | sort >want &&
	sort got >got.sorted &&
	test_cmp want got.sorted &&
	! grep "^spangen_gen_hist" m1
'

test_expect_success 'max_series: drops counted (31 per read) and logged' '
	wait_for "scrape $sport s1 && test \$(dropped s1 series_limit) -ge 62" &&
	grep "max_series" tallyd.log &&
	stop_tallyd
'

# Issue 9, item 14: with the self input on the capped output, the drop
# counter was itself a new series beyond the cap, so the overflow showed
# only in the log.
test_expect_success 'max_series: the overflow is on the capped page itself' '
	port=$(free_port) &&
	cat >one.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = {
	  gen = { plugin = "spangen"; mode = "generations"; count = 200; };
	  self = { plugin = "self"; };
	};
	outputs = { limited = { plugin = "prometheus";
	                        listen = "127.0.0.1:$port"; max_series = 50; }; };
	pipelines = { a = { from = ["gen", "self"]; to = ["limited"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" one.conf &&
	# 200 gauges and a histogram offered per read, 50 kept: 151 dropped
	wait_for "scrape $port p1 && test \$(dropped p1 series_limit) -ge 302" &&
	test $(grep -c "^spangen_gen{" p1) = 50 &&
	grep "^tally_build_info" p1 &&
	grep "^process_cpu_seconds_total" p1 &&
	stop_tallyd
'

# cpu_ticks PID - user + system CPU time of PID, in clock ticks
cpu_ticks() {
	sed "s/.*) //" "/proc/$1/stat" | awk "{ print \$12 + \$13 }"
}

# sockets PID - how many sockets PID has open. Counting every fd raced
# with the self input, which opens and closes /proc files at its reads.
sockets() {
	ls -l "/proc/$1/fd" | grep -c "socket:"
}

# hold N SECONDS - open N idle TCP connections to $port, keep them
# SECONDS, print how many connected, close them
hold() {
	"$PYTHON3" -c "
import resource, socket, sys, time
n, secs = int(sys.argv[1]), float(sys.argv[2])
soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 4096), hard))
socks = []
for i in range(n):
    s = socket.socket()
    s.settimeout(2)
    s.connect((\"127.0.0.1\", $port))
    socks.append(s)
print(len(socks), flush=True)
time.sleep(secs)
" "$@"
}

# hold_bg N SECONDS - hold in the background, output in held, pid in
# holder. A function: "a && b &" in a test body would put the whole list,
# start_tallyd and its variables too, in a background subshell.
hold_bg() {
	hold "$@" >held &
	holder=$!
}

test_expect_success 'fd exhaustion: no busy loop, counted, recovers' '
	port=$(free_port) &&
	self_conf fd.conf &&
	start_tallyd --wait "port_listening $port" fd.conf &&
	prlimit --pid $TALLYD_PID --nofile=40:40 &&
	hold_bg 60 4 &&
	wait_for "test -s held" &&
	c0=$(cpu_ticks $TALLYD_PID) &&
	sleep 2 &&
	c1=$(cpu_ticks $TALLYD_PID) &&
	wait $holder &&
	test "$(cat held)" = 60 &&
	echo "CPU ticks while out of fds: $((c1 - c0))" &&
	test $((c1 - c0)) -le 30 &&
	# one log line per pause at most (rate-limited), nothing from libevent
	n=$(grep -c "accept: Too many open files" tallyd.log) &&
	echo "accept log lines: $n" &&
	test "$n" -ge 1 && test "$n" -le 20 &&
	! grep "Error from accept" tallyd.log &&
	# the idle connections are gone: scrapes work again
	wait_for "scrape $port r1 && test \$(dropped r1 accept_error) -ge 1" 30 &&
	stop_tallyd
'

# event FILE NAME - tally_events_total of instance "limited", or 0
event() {
	self_count "$1" tally_events_total limited "event=\"$2\""
}

# timed_scrape FILE - scrape with curl, at most 8 s, printing how long it
# took: a scrape held up behind other clients takes 30 s and fails
timed_scrape() {
	curl -sS --max-time 8 -o "$1" -w "%{time_total}" \
		"http://127.0.0.1:$port/metrics" >took &&
	tally_diag "scrape took $(cat took) s" &&
	grep -q "^tally_build_info" "$1"
}

test_expect_success 'max_connections: beyond it, those waiting longest are closed' '
	self_conf cap.conf "max_connections = 5; idle_timeout = 600.0;" &&
	start_tallyd --wait "port_listening $port" cap.conf &&
	fd0=$(sockets $TALLYD_PID) &&
	clients idle 12 60 held &&
	wait_for "grep -q connected held" 20 &&
	# the 7 opened first are closed, tallyd keeps 5
	wait_for "test \$(grep -c closed held) -ge 7" &&
	wait_for "test \$(sockets $TALLYD_PID) -eq $((fd0 + 5))" &&
	sed -n "s/^closed //p" held | sort -n >closed.got &&
	seq 0 6 >closed.want &&
	test_cmp closed.want closed.got &&
	grep "connections open (max_connections 5): closed the" tallyd.log &&
	# a scrape is answered at once; the eighth held one makes room
	timed_scrape r2 &&
	wait_for "test \$(grep -c closed held) -ge 8" &&
	test "$(sed -n "s/^closed //p" held | sed -n 8p)" = 7 &&
	wait_for "scrape $port r3 && test \$(event r3 idle_evicted) -ge 8" &&
	stop_tallyd
'

# Issue 9, item 2: 70 clients that connect and send nothing held all 64
# connections; a scrape waited about 30 s in the kernel backlog.
test_expect_success '70 idle connections: a scrape is served at once, the idle ones time out' '
	self_conf idle.conf &&
	start_tallyd --wait "port_listening $port" idle.conf &&
	clients idle 70 60 held &&
	wait_for "grep -q connected held" 20 &&
	timed_scrape r1 &&
	# idle_timeout (default 5 s) closes the rest: none outlives it long
	wait_for "test \$(grep -c closed held) -eq 70" 30 &&
	wait_for "scrape $port r2 && test \$(event r2 idle_timeout) -ge 60" &&
	stop_tallyd
'

# Issue 9, item 16: 200 slow-loris connections (a byte a second each,
# reconnecting when closed) delayed a scrape by 35 s, past Prometheus'
# default scrape timeout of 10 s.
test_expect_success '200 slow-loris connections: scrapes are still served' '
	start_tallyd --wait "port_listening $port" idle.conf &&
	clients loris 200 40 loris.out &&
	# 150: well past the 64 connections, however many of them the
	# kernel queues
	wait_for "grep -q \"connected 150\" loris.out" 30 &&
	timed_scrape r1 &&
	timed_scrape r2 &&
	timed_scrape r3 &&
	# at least the 136 beyond max_connections were closed, idle or not
	wait_for "scrape $port r4 &&
		test \$((\$(dropped r4 request_evicted) + \$(event r4 idle_evicted))) -ge 136" &&
	stop_tallyd
'

# trickle N SECONDS - N connections each send a request line, then a header
# line every 0.5 s for SECONDS; print when the server closed each one
trickle() {
	"$PYTHON3" -c "
import socket, sys, time
n, secs = int(sys.argv[1]), float(sys.argv[2])
socks = [socket.create_connection((\"127.0.0.1\", $port)) for i in range(n)]
for s in socks:
    s.sendall(b\"GET /metrics HTTP/1.1\r\nHost: x\r\n\")
t0, closed = time.monotonic(), {}
while time.monotonic() - t0 < secs and len(closed) < n:
    time.sleep(0.5)
    for i, s in enumerate(socks):
        if i in closed:
            continue
        try:
            s.sendall(b\"X-a: b\r\n\")
            s.setblocking(False)
            if s.recv(1) == b\"\":
                closed[i] = time.monotonic() - t0
        except BlockingIOError:
            pass
        except OSError:
            closed[i] = time.monotonic() - t0
        s.setblocking(True)
for i in range(n):
    print(\"%.1f\" % closed[i] if i in closed else \"open\")
" "$@"
}

test_expect_success 'request_timeout: a request trickling in is cut off' '
	self_conf slow.conf "request_timeout = 2.0; idle_timeout = 5.0;" &&
	start_tallyd --wait "port_listening $port" slow.conf &&
	trickle 3 10 >closed &&
	cat closed &&
	! grep open closed &&
	awk "\$1 < 1.5 || \$1 > 4.5 { exit 1 }" closed &&
	wait_for "scrape $port r3 && test \$(dropped r3 request_timeout) -ge 3"
'

test_expect_success 'a keep-alive connection idle for 3 s is kept, and closed after idle_timeout' '
	"$PYTHON3" -c "
import socket, time
s = socket.create_connection((\"127.0.0.1\", $port), timeout=10)
def get():
    s.sendall(b\"GET /-/healthy HTTP/1.1\r\nHost: x\r\n\r\n\")
    data = b\"\"
    while not data.endswith(b\"\r\n\r\nOK\n\"):
        b = s.recv(4096)
        assert b, (\"closed\", data)
        data += b
    assert data.startswith(b\"HTTP/1.1 200\"), data
get()
time.sleep(3)
get()
t0 = time.monotonic()
s.settimeout(30)
assert s.recv(1) == b\"\"
print(\"closed after %.1f s idle\" % (time.monotonic() - t0))
assert time.monotonic() - t0 > 3
" &&
	stop_tallyd
'

test_done
