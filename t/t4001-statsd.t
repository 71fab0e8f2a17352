#!/bin/sh
test_description='statsd input: UDP (IPv4, IPv6), unix datagrams and TCP
into the capture output with exact values; counters and gauges through
prometheus; bad lines, oversize datagrams and kernel drops counted'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"

require_cmd curl

SEND="$SHARNESS_TEST_SRCDIR/t40-statsd-send.py"
send() {
	"$PYTHON3" "$SEND" "$@"
}

if "$PYTHON3" -c 'import socket
s = socket.socket(socket.AF_INET6, socket.SOCK_DGRAM)
s.bind(("::1", 0))' 2>/dev/null; then
	test_set_prereq IPV6
fi

test_expect_success 'check: forms, types and addresses' '
	cat >forms.conf <<-EOF &&
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:0"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:0"; }; };
	pipelines = { p = { from = ["sd"]; to = ["prom"]; }; };
	EOF
	test_must_fail tallyd -c forms.conf --check-config 2>err &&
	grep "forms.conf:3: error: pipelines.p: input .sd. may send observations (timer values), set members, which output .prom. (prometheus) does not take: have the input leave them out (statsd: types" err &&
	cat >cg.conf <<-EOF &&
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:0";
			  types = ["c", "g"]; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:0"; }; };
	pipelines = { p = { from = ["sd"]; to = ["prom"]; }; };
	EOF
	tallyd -c cg.conf --check-config &&
	cat >bad.conf <<-EOF &&
	inputs = { sd = { plugin = "statsd";
		listen = ["127.0.0.1", "*:8125"];
		types = ["c", "timer"]; }; };
	outputs = { c = { plugin = "capture"; path = "/dev/null"; }; };
	pipelines = { p = { from = ["sd"]; to = ["c"]; }; };
	EOF
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:1: error: inputs.sd: listen \"127.0.0.1\": no port" err &&
	grep "bad.conf:1: error: inputs.sd: types: unknown statsd type \"timer\": use c, g, ms, h, d or s" err &&
	! grep "8125" err &&
	test_must_fail tallyd --user -c bad.conf --check-config 2>err &&
	grep "listen \"\*:8125\": a user collector listens on loopback addresses only" err &&
	cat >twice.conf <<-EOF &&
	inputs = { sd = { plugin = "statsd";
		listen = ["127.0.0.1:8125", "[::1]:8126", "*:8125"]; }; };
	outputs = { c = { plugin = "capture"; path = "/dev/null"; }; };
	pipelines = { p = { from = ["sd"]; to = ["c"]; }; };
	EOF
	test_must_fail tallyd -c twice.conf --check-config 2>err &&
	grep "twice.conf:1: error: inputs.sd: listen \"\*:8125\": the same socket as \"127.0.0.1:8125\" listed before it: list it once" err
'

test_expect_success 'the shipped conf.d/60-statsd.conf: off, and valid once on' '
	cp -r "$top_srcdir/conf.d" shipped &&
	rm -f shipped/local.mk &&
	tallyd -c shipped --check-config 2>err &&
	! grep -q statsd err &&
	sed "s/^#\([^ #]\)/\1/" shipped/60-statsd.conf >on.conf &&
	grep -q "^inputs = {" on.conf &&
	grep -q "listen = \"127.0.0.1:8125\"" on.conf &&
	mv on.conf shipped/60-statsd.conf &&
	tallyd -c shipped --check-config
'

tally_sock_dir sock && SOCK=$TALLY_SOCK_DIR

# Ports: UDP for the statsd inputs, TCP for tcp and prometheus.
test_expect_success 'start tallyd: five statsd inputs' '
	mkdir -p "$SOCK" &&
	udp=$(free_port) && small=$(free_port) && tcp=$(free_port) &&
	promin=$(free_port) && flood=$(free_port) && port=$(free_port) &&
	if test_have_prereq IPV6; then v6=", \"[::1]:$udp\""; else v6=; fi &&
	cat >sd.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = {
		sd = { plugin = "statsd";
		       listen = ["127.0.0.1:$udp"$v6, "unix:$SOCK/statsd.sock"]; };
		small = { plugin = "statsd"; listen = "127.0.0.1:$small";
			  max_datagram = 1024; };
		tcp = { plugin = "statsd"; protocol = "tcp";
			listen = "127.0.0.1:$tcp"; };
		promin = { plugin = "statsd"; listen = "127.0.0.1:$promin";
			   types = ["c", "g"]; };
		flood = { plugin = "statsd"; listen = "127.0.0.1:$flood";
			  receive_buffer = 1; min_drain_interval = 0.2; };
		self = { plugin = "self"; interval = 0.2; };
	};
	outputs = {
		cap = { plugin = "capture"; path = "sd.out"; };
		cap2 = { plugin = "capture"; path = "small.out"; };
		cap3 = { plugin = "capture"; path = "tcp.out"; };
		capf = { plugin = "capture"; path = "flood.out"; };
		prom = { plugin = "prometheus"; listen = "127.0.0.1:$port"; };
	};
	pipelines = {
		a = { from = ["sd"]; to = ["cap"]; };
		b = { from = ["small"]; to = ["cap2"]; };
		c = { from = ["tcp"]; to = ["cap3"]; };
		d = { from = ["promin", "self"]; to = ["prom"]; };
		e = { from = ["flood"]; to = ["capf"]; };
	};
	EOF
	start_tallyd --wait "port_listening $port && port_listening $tcp" \
		sd.conf &&
	grep "statsd\[sd\]: receiving statsd over udp on 127.0.0.1:$udp, receive buffer 8388608 bytes$" tallyd.log &&
	grep "statsd\[sd\]: receiving statsd over unix datagrams on unix:$SOCK/statsd.sock" tallyd.log
'

# scrape - the prometheus page into metrics
scrape() {
	curl -sf "http://127.0.0.1:$port/metrics" >metrics
}

# excluded - lines of input promin dropped for their type, in metrics
excluded() {
	self_count metrics tally_dropped_total promin 'reason="excluded_type"'
}

test_expect_success 'every type, sample rates, gauge deltas, tags' '
	printf "%s\n" "hits:3|c|@0.1" "hits:2|c" "temp:5|g" "temp:-8|g" \
		"temp:+1|g" "neg:0|g" "neg:-5|g" "lat:250|ms|@0.5" "size:12|h" \
		"dist:7|d" "users:alice|s" "users:bob|s|#env:prod" \
		"api.req:1|c|#env:prod,region:eu-1,canary" >d1 &&
	send udp4 127.0.0.1:$udp d1 &&
	cat >expected <<-\EOF &&
	delta counter hits 3 rate=0.10000000000000001
	delta counter hits 2 rate=1
	gauge temp 5
	delta gauge temp -8 rate=1
	delta gauge temp 1 rate=1
	gauge neg 0
	delta gauge neg -5 rate=1
	observation summary lat 0.25 rate=0.5
	observation histogram size 12 rate=1
	observation histogram dist 7 rate=1
	set gauge users member=alice
	set gauge users{env="prod"} member=bob
	delta counter api.req{canary="true",env="prod",region="eu-1"} 1 rate=1
	EOF
	wait_for "test \$(wc -l <sd.out) -ge 13" &&
	test_cmp expected sd.out
'

test_expect_success 'bad lines are dropped by reason, the rest of the datagram goes on' '
	printf "good1:1|c\nbad\nx:1|q\ngood2:2|c\n:1|c\ny:abc|c\nz:1|c|@2\nw:1|c|#\nv:1|c|foo\r\ngood3:3|c\r\n" >d2 &&
	send udp4 127.0.0.1:$udp d2 &&
	cat >>expected <<-\EOF &&
	delta counter good1 1 rate=1
	delta counter good2 2 rate=1
	delta counter good3 3 rate=1
	EOF
	wait_for "test \$(wc -l <sd.out) -ge 16" &&
	test_cmp expected sd.out &&
	wait_for "scrape && grep -q \"reason=\\\"bad_field\\\"\" metrics" &&
	for r in no_colon bad_type bad_name bad_value bad_rate bad_tag bad_field
	do
		test "$(self_count metrics tally_dropped_total sd "reason=\"$r\"")" = 1 ||
		return 1
	done &&
	grep "statsd\[sd\]: dropped 7 bad line(s), e.g. \"bad\" (no_colon)" tallyd.log
'

test_expect_success 'a 9000-byte datagram is parsed to its last line' '
	"$PYTHON3" -c "import sys
lines = [\"jumbo.n:1|c\"] * 748 + [\"jumbo.last:00000000042|g\"]
sys.stdout.write(\"\\n\".join(lines))" >big &&
	test $(wc -c <big) = 9000 &&
	send udp4 127.0.0.1:$udp big &&
	wait_for "grep -q \"^gauge jumbo.last 42\$\" sd.out" &&
	test $(grep -c "^delta counter jumbo.n 1 rate=1\$" sd.out) = 748 &&
	tail -n 1 sd.out >last &&
	echo "gauge jumbo.last 42" >expected.last &&
	test_cmp expected.last last
'

test_expect_success IPV6 'an IPv6 sender' '
	printf "v6.hits:4|c|#via:v6" >d3 &&
	send udp6 "[::1]:$udp" d3 &&
	wait_for "grep -q v6.hits sd.out" &&
	tail -n 1 sd.out >last &&
	echo "delta counter v6.hits{via=\"v6\"} 4 rate=1" >expected.last &&
	test_cmp expected.last last
'

test_expect_success 'a unix datagram sender, several datagrams' '
	printf "ux:2|c\nux.g:-1|g" >d4 &&
	printf "ux.t:1.5|ms" >d5 &&
	send unix "$SOCK/statsd.sock" d4 d5 &&
	wait_for "grep -q ux.t sd.out" &&
	tail -n 3 sd.out >last &&
	cat >expected.last <<-\EOF &&
	delta counter ux 2 rate=1
	delta gauge ux.g -1 rate=1
	observation summary ux.t 0.0015 rate=1
	EOF
	test_cmp expected.last last
'

test_expect_success 'a datagram over max_datagram is dropped whole, counted' '
	"$PYTHON3" -c "import sys
sys.stdout.write(\"\\n\".join([\"over:1|c\"] * 300))" >over &&
	test $(wc -c <over) -gt 1024 &&
	printf "after:1|c" >after &&
	send udp4 127.0.0.1:$small over after &&
	wait_for "grep -q after small.out" &&
	echo "delta counter after 1 rate=1" >expected.small &&
	test_cmp expected.small small.out &&
	wait_for "scrape && grep -q \"instance=\\\"small\\\".*oversize\" metrics" &&
	test "$(self_count metrics tally_dropped_total small "reason=\"oversize\"")" = 1
'

test_expect_success 'tcp: lines over a connection, CRLF or not' '
	printf "t.a:1|c\r\nt.b:2|g\n" >t1 &&
	printf "t.c:3|c" >t2 &&
	send tcp 127.0.0.1:$tcp t1 t2 &&
	wait_for "grep -q t.c tcp.out" &&
	cat >expected.tcp <<-\EOF &&
	delta counter t.a 1 rate=1
	gauge t.b 2
	delta counter t.c 3 rate=1
	EOF
	test_cmp expected.tcp tcp.out
'

test_expect_success 'prometheus: rates applied, gauge deltas, names made valid' '
	printf "%s\n" "req.count:1|c|@0.25" "req.count:2|c" \
		"req.count:1|c|#env:prod" "temp.c:0|g" "temp.c:-5|g" \
		"lat:3|ms" "users:a|s" >p1 &&
	send udp4 127.0.0.1:$promin p1 &&
	wait_for "scrape && grep -q ^temp_c metrics && test \$(excluded) = 2" &&
	grep "^req_count_total 6\$" metrics &&
	grep "^req_count_total{env=\"prod\"} 1\$" metrics &&
	grep "^temp_c -5\$" metrics &&
	! grep -e "^lat" -e "^users" metrics &&
	printf "temp.c:+2|g\nreq.count:5|c|@0.5\n" >p2 &&
	send udp4 127.0.0.1:$promin p2 &&
	wait_for "scrape && grep -q \"^temp_c -3\$\" metrics" &&
	grep "^req_count_total 16\$" metrics &&
	grep "^# TYPE req_count_total counter\$" metrics &&
	grep "^# TYPE temp_c gauge\$" metrics
'

test_expect_success 'prometheus: the page passes promtool' '
	promtool check metrics <metrics
'

test_expect_success 'kernel drops: every datagram is read or counted' '
	sent=$(send flood 127.0.0.1:$flood 3000 flood.out) &&
	test -n "$sent" &&
	wait_for "scrape &&
		k=\$(self_count metrics tally_dropped_total flood \"reason=\\\"kernel_overflow\\\"\") &&
		l=\$(self_count metrics tally_events_total flood \"event=\\\"lines_received\\\"\") &&
		test \$l = \$(wc -l <flood.out) && test \$((k + l)) = $sent" &&
	echo "sent $sent, read $l, kernel drops $k" &&
	test "$k" -gt 0
'

test_expect_success 'reload: a changed instance is replaced on the same addresses' '
	reloads() {
		scrape && self_count metrics tally_events_total tallyd "event=\"reloads\""
	} &&
	n=$(reloads) &&
	sed "s/sd = { plugin = \"statsd\";/& max_messages_per_wakeup = 64;/" \
		sd.conf >sd2.conf &&
	grep -q "max_messages_per_wakeup = 64" sd2.conf &&
	mv sd2.conf sd.conf &&
	kill -HUP $TALLYD_PID &&
	wait_for "test \$(reloads) -gt $n" &&
	test $(grep -c "statsd\[sd\]: receiving statsd over udp on 127.0.0.1:$udp," tallyd.log) = 2 &&
	printf "reloaded.udp:1|c" >r1 &&
	printf "reloaded.unix:1|c" >r2 &&
	send udp4 127.0.0.1:$udp r1 &&
	send unix "$SOCK/statsd.sock" r2 &&
	wait_for "grep -q reloaded.udp sd.out && grep -q reloaded.unix sd.out"
'

test_expect_success 'stop: clean exit, the unix socket file removed' '
	stop_tallyd &&
	! test -e "$SOCK/statsd.sock"
'

# A user collector: the port rule gives a port the kernel chooses, even
# when the configured one is held, written to RUNDIR/listen; what the
# wrapped command sent is read before tallyd exits.
test_expect_success 'user mode: the port rule, and what was sent before the end' '
	mkdir -p "$SOCK/xdg" &&
	held=$(free_port) &&
	cat >user.conf <<-EOF &&
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:$held"; }; };
	outputs = { cap = { plugin = "capture"; path = "$PWD/user.out"; }; };
	pipelines = { p = { from = ["sd"]; to = ["cap"]; }; };
	EOF
	printf "user.hits:5|c" >u1 &&
	{ "$PYTHON3" -c "import socket, time
s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
s.bind((\"127.0.0.1\", $held))
time.sleep(60)" & } &&
	holder=$! &&
	test_when_finished "kill $holder" &&
	wait_for "udp_bound $held" &&
	XDG_RUNTIME_DIR="$SOCK/xdg" tallyd --user -c user.conf -- sh -c "
		addr=\$(sed -n \"s/^sd //p\" \"$SOCK/xdg/tally/cmd-\$PPID/listen\") &&
		echo \$addr >addr &&
		\"$PYTHON3\" \"$SEND\" udp4 \$addr u1
	" 2>user.err &&
	grep "^127.0.0.1:[0-9]*\$" addr &&
	! grep -q ":$held\$" addr &&
	grep "receiving statsd over udp on 127.0.0.1:$held as configured, bound to port [0-9]* (the kernel chose it" user.err &&
	echo "delta counter user.hits 5 rate=1" >expected.user &&
	test_cmp expected.user user.out
'

test_done
