#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='zmq_trace: events the client drops cannot inflate region
time (issue 9, item 4)

Two processes flood begin/end pairs with libtally-trace faster than the
collector reads them (it reads one message per loop turn here), so their
clients drop most events, ends among them. A span whose end was lost used
to stay open until its process exited, and the region time added up to
many times the processes'"'"' wall time; the collector now ends such a span
where the stream shows its end was lost (flag lost_end).'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

require_cmd curl

# metric NAME LABELS - its value on a fresh scrape, or "none"
metric() {
	curl -sS --max-time 10 -o m "http://127.0.0.1:$port/metrics" &&
	{ awk -v s="$1{$2}" '$1 == s { print $2; found = 1 }
			     END { exit !found }' m || echo none; }
}

# active_e - tally_trace_region_active of the flooded region
active_e() {
	metric tally_trace_region_active 'region="e",trace="flood"'
}

# now - CLOCK_REALTIME in seconds, as a decimal
now() {
	date +%s.%N
}

test_expect_success 'start tallyd: one message per drain, into prometheus' '
	port=$(free_port) &&
	cat >drops.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "$EP";
			  max_messages_per_wakeup = 1; rcvhwm = 100;
			  check_interval = 0.2; };
		   self = { plugin = "self"; interval = 0.1; }; };
	outputs = { prom = { plugin = "prometheus";
			     listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["tr", "self"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" drops.conf
'

test_expect_success 'two flooding processes: region time within their wall time' '
	t0=$(now) &&
	TALLY_TRACE_SNDHWM=100 "$TRACE_EMIT" -p 2 -n 2000000 "$EP" flood \
		>emit.out &&
	t1=$(now) &&
	cat emit.out &&
	dropped=$(sed -n "s/^total sent=4000000 dropped=\([0-9]*\) .*/\1/p" \
		emit.out) &&
	tally_diag "the clients dropped $dropped of 4000000 events" &&
	# a flood that never overflowed would prove nothing
	test "$dropped" -gt 100000 &&
	# both processes are gone: nothing may stay open
	wait_for "test \$(active_e) = 0" &&
	secs=$(metric tally_trace_region_seconds_total \
		"region=\"e\",trace=\"flood\"") &&
	lost=$(metric tally_dropped_total \
		"instance=\"tr\",kind=\"input\",plugin=\"zmq_trace\",reason=\"span_lost_end\"") &&
	tally_diag "region e: $secs s for 2 processes of $t0 .. $t1; $lost lost ends" &&
	"$PYTHON3" -c "import sys; sys.exit(not 0 < $secs <= 2 * ($t1 - $t0))" &&
	test "$lost" -gt 0
'

test_expect_success 'stop tallyd: no span left open' '
	stop_tallyd &&
	grep "zmq_trace\[tr\]: stopped: .* 0 spans still open" tallyd.log
'

test_done
