#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='SIGHUP reloads the configuration

What did not change keeps running with its state (the counter input goes
on counting, the rewrite filter on numbering its batches, the capture file
is not reopened, the prometheus listener is never closed); what changed is
replaced, and the batches queued for a replaced output reach its
successor. An invalid configuration, or one that fails to start, leaves
the daemon running the configuration it had.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd curl

# events [NAME] - tallyd's own count of event NAME (reloads: applied,
# reload_failures: refused or rolled back; default: both), as its
# self-metrics tell: the log is rate-limited (5 alike lines per 10 s)
events() {
	curl -sf --max-time 5 "http://127.0.0.1:$port/metrics" |
		awk -v re="^tally_events_total[{]event=\"(${1:-reloads|reload_failures})\",instance=\"tallyd\"" \
			'$0 ~ re { n += $2 } END { print n + 0 }'
}

reloads() {
	events
}

# reload - SIGHUP tallyd and wait until it has ended one more reload
reload() {
	tally_rl_n=$(reloads) &&
	kill -HUP "$TALLYD_PID" &&
	wait_for "test \$(reloads) -gt $tally_rl_n"
}

# consecutive FILE - the values (3rd field) of FILE go 1, 2, 3, ... with no
# gap and no repeat: every read of the counter input, each exactly once
consecutive() {
	awk '$3 != NR { print FILENAME ": line " NR ": " $0; bad = 1 }
	     END { exit bad || NR == 0 }' "$1"
}

# lines FILE - its number of lines
lines() {
	wc -l <"$1"
}

# conf EXTRA_OUTPUTS EXTRA_PIPELINES [STALL] - the test's configuration:
# counter "a" every 0.1 s through a rewrite filter into o1, and plain into
# prometheus and into capture "s" (stall = STALL, default true)
conf() {
	cat >cur.conf <<-EOF
	global = { interval = 0.1; log_level = "info"; };
	inputs = {
		a = { plugin = "counter"; };
		self = { plugin = "self"; interval = 0.05; };
	};
	filters = { f = { plugin = "testfilter"; mode = "rewrite"; }; };
	outputs = {
		o1 = { plugin = "capture"; path = "o1.out"; };
		s = { plugin = "capture"; path = "s.out"; stall = ${3:-true}; };
		prom = { plugin = "prometheus"; listen = "127.0.0.1:$port"; };
		$1
	};
	pipelines = {
		p1 = { from = ["a"]; through = ["f"]; to = ["o1"]; };
		ps = { from = ["a"]; to = ["s", "prom"]; };
		self = { from = ["self"]; to = ["prom"]; };
		$2
	};
	EOF
}

test_expect_success 'start: counter -> filter -> o1, -> stalled s, prometheus' '
	port=$(free_port) &&
	conf &&
	start_tallyd --wait "port_listening $port && test -s o1.out" \
		"$PWD/cur.conf"
'

test_expect_success 'adding a pipeline keeps the running instances and state' '
	conf "o2 = { plugin = \"capture\"; path = \"o2.out\"; };" \
		"p2 = { from = [\"a\"]; to = [\"o2\"]; };" &&
	reload &&
	grep "configuration applied: 7 instances (1 new), 4 pipelines" \
		tallyd.log &&
	wait_for "test \$(lines o2.out) -ge 3" &&
	n=$(lines o1.out) &&
	wait_for "test \$(lines o1.out) -gt $((n + 2))" &&
	# o1 was not reopened (it would start over), the filter kept
	# numbering (seq), the counter kept counting (a copy: tallyd writes on)
	cp o1.out o1.snap &&
	consecutive o1.snap &&
	sed -n "s/^gauge rw_test_counter_value{i=\"0\",seq=\"\([0-9]*\)\"} \([0-9]*\)$/\1 \2/p" \
		o1.snap >seq &&
	test $(lines seq) = $(lines o1.snap) &&
	awk "\$1 != \$2 { exit 1 }" seq &&
	# the new output sees the same counter, from where it was
	first=$(awk "NR == 1 { print \$3 }" o2.out) &&
	test "$first" -gt 1 &&
	awk -v f=$first "\$3 != f + NR - 1 { exit 1 }" o2.out
'

# A scraper polls while tallyd reloads five times: the prometheus output
# never changes, so its listener and its series stay up throughout.
test_expect_success 'an unchanged prometheus output serves through reloads' '
	: >scrapes &&
	(
		i=0
		# until the reloads are over and at least 10 scrapes are in
		while test $i -lt 1000 && { ! test -f stop-scraping ||
			test $(grep -c . scrapes) -lt 10; }; do
			if curl -sf --max-time 5 -o m \
				"http://127.0.0.1:$port/metrics" &&
			   grep -q "^test_counter_value{i=\"0\"} [0-9]" m; then
				echo ok >>scrapes
			else
				echo "failed (curl $?)" >>scrapes
			fi
			i=$((i + 1))
			sleep 0.02
		done
	) &
	scraper=$! &&
	for k in 1 2 3 4 5; do
		conf "o2 = { plugin = \"capture\"; path = \"o2-$k.out\"; };" \
			"p2 = { from = [\"a\"]; to = [\"o2\"]; };" &&
		reload || break
	done &&
	touch stop-scraping &&
	wait $scraper &&
	test $(events reloads) = 6 &&
	tally_diag "$(sort scrapes | uniq -c)" &&
	test $(grep -c ok scrapes) -ge 10 &&
	! grep -v ok scrapes
'

test_expect_success 'a replaced output gets the batches queued for the old one' '
	test ! -s s.out &&
	conf "" "" false &&
	reload &&
	test $(events reloads) = 7 &&
	wait_for "test \$(lines s.out) -ge \$(lines o1.out)" &&
	# everything read since the start, in order, nothing twice
	consecutive s.out
'

test_expect_success 'an invalid configuration is refused, the old one runs on' '
	conf "bad = { plugin = \"capture\"; pathh = \"x\"; };" \
		"pb = { from = [\"a\"]; to = [\"bad\"]; };" false &&
	line=$(grep -n pathh cur.conf | cut -d: -f1) &&
	reload &&
	grep "cur.conf:$line: error: outputs.bad: unknown option .pathh. (did you mean .path.?)" tallyd.log &&
	grep "reload: .*cur.conf: 2 errors (logged above): still running the configuration loaded before" tallyd.log &&
	n=$(lines s.out) &&
	wait_for "test \$(lines s.out) -gt $((n + 2))" &&
	consecutive s.out && consecutive o1.out
'

# A capture file in a directory that does not exist passes every check
# and fails in init: the daemon goes back to the configuration it had.
test_expect_success 'a configuration that fails to start is rolled back' '
	conf "bad = { plugin = \"capture\"; path = \"no/such/dir/x.out\"; };" \
		"pb = { from = [\"a\"]; to = [\"bad\"]; };" false &&
	reload &&
	grep "capture\[bad\]: init failed" tallyd.log &&
	grep "reload: the new configuration failed to start (logged above): going back to the one loaded before" tallyd.log &&
	test $(events reloads) = 7 &&
	test $(events reload_failures) = 2 &&
	n=$(lines s.out) &&
	wait_for "test \$(lines s.out) -gt $((n + 2))" &&
	consecutive s.out && consecutive o1.out &&
	curl -sf -o m "http://127.0.0.1:$port/metrics" &&
	grep "^test_counter_value{i=\"0\"} [0-9]" m
'

test_expect_success 'stop after the reloads: nothing lost on the way out' '
	stop_tallyd &&
	consecutive s.out && consecutive o1.out &&
	test $(lines s.out) = $(lines o1.out) &&
	! grep -i "warning\|crit" tallyd.log
'

# Batches queued for an output carry the name of the input that made
# them: replacing the input (and the output) must not leave them pointing
# at freed memory.
test_expect_success 'queued batches of a replaced input keep their source' '
	cat >src.conf <<-EOF &&
	global = { interval = 0.1; log_level = "info"; };
	inputs = { c = { plugin = "counter"; }; };
	outputs = { x = { plugin = "capture"; path = "x.out"; source = true;
	                  stall = true; }; };
	pipelines = { p = { from = ["c"]; to = ["x"]; }; };
	EOF
	start_tallyd "$PWD/src.conf" &&
	sleep 0.5 &&
	sed -i -e "s/plugin = \"counter\";/plugin = \"counter\"; count = 2;/" \
		-e "s/stall = true;/stall = false;/" src.conf &&
	kill -HUP $TALLYD_PID &&
	wait_for "grep -q \"i=.1.\" x.out" &&
	stop_tallyd &&
	head -n 1 x.out >first &&
	echo "c: gauge test_counter_value{i=\"0\"} 1" >first.expect &&
	test_cmp first.expect first &&
	! grep -v "^c: gauge test_counter_value{i=\"[01]\"} [0-9]*$" x.out
'

# Changing global.interval replaces the inputs and filters that run at
# it, never an output: the capture file is not truncated, prometheus
# keeps its socket (it does not log "serving" again).
test_expect_success 'global.interval changes inputs, not outputs' '
	port=$(free_port) &&
	cat >iv.conf <<-EOF &&
	global = { interval = 0.1; log_level = "info"; };
	inputs = { c = { plugin = "counter"; }; };
	outputs = {
		x = { plugin = "capture"; path = "iv.out"; };
		prom = { plugin = "prometheus"; listen = "127.0.0.1:$port"; };
	};
	pipelines = { p = { from = ["c"]; to = ["x", "prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port && test -s iv.out" \
		"$PWD/iv.conf" &&
	sed -i "s/interval = 0.1;/interval = 0.2;/" iv.conf &&
	kill -HUP $TALLYD_PID &&
	wait_for "grep -q \"configuration applied: 3 instances (1 new)\" tallyd.log" &&
	n=$(grep -c . iv.out) &&
	wait_for "test \$(grep -c . iv.out) -gt $((n + 1))" &&
	stop_tallyd &&
	test $(grep -c "serving /metrics" tallyd.log) = 1 &&
	# the old counter from 1, then the new one from 1: not truncated
	awk "NR == 1 && \$3 != 1 { exit 1 }" iv.out &&
	test $(grep -c "} 1\$" iv.out) = 2
'

# The rollback itself fails (the old configuration's directory is gone):
# tallyd stops with exit status 1, without pretending it got a SIGTERM.
test_expect_success 'a rollback that fails too stops tallyd with status 1' '
	mkdir -p sub &&
	cat >rb.conf <<-EOF &&
	global = { interval = 0.1; log_level = "info"; };
	inputs = { c = { plugin = "counter"; }; };
	outputs = { x = { plugin = "capture"; path = "sub/x.out"; }; };
	pipelines = { p = { from = ["c"]; to = ["x"]; }; };
	EOF
	start_tallyd --wait "test -s sub/x.out" "$PWD/rb.conf" &&
	rm -rf sub &&
	sed -i "s|sub/x.out|nonexist/x.out|" rb.conf &&
	kill -HUP $TALLYD_PID &&
	wait_for "! kill -0 $TALLYD_PID 2>/dev/null" &&
	test_expect_code 1 stop_tallyd &&
	grep "crit: reload: the configuration loaded before failed to start again: stopping" tallyd.log &&
	! grep SIGTERM tallyd.log
'

# A blocking input stuck in a 4 s read is replaced: the reload does not
# wait for the read (it frees the old instance when the read returns),
# and the new instance reads on its own.
test_expect_success 'a blocking input stuck in a read does not hold a reload' '
	cat >slow.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { sl = { plugin = "slow"; sleep = 4.0; }; };
	outputs = { o = { plugin = "capture"; path = "slow.out"; }; };
	pipelines = { p = { from = ["sl"]; to = ["o"]; }; };
	EOF
	start_tallyd "$PWD/slow.conf" &&
	sed -i "s/sleep = 4.0/sleep = 0.05/" slow.conf &&
	t0=$(date +%s%N) &&
	kill -HUP $TALLYD_PID &&
	wait_for "grep -q \"configuration applied\" tallyd.log" &&
	t1=$(date +%s%N) &&
	tally_diag "reload applied after $(( (t1 - t0) / 1000000 )) ms" &&
	test $(( (t1 - t0) / 1000000 )) -lt 3000 &&
	wait_for "grep -q \"test_slow_reads 3\$\" slow.out" &&
	stop_tallyd
'

test_done
