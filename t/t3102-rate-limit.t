#!/bin/sh
test_description='rate_limit: zmq_trace -> rate_limit -> capture and
prometheus: exact counts passed and dropped per source process, a stream
that stays well formed, drops counted per key in self-metrics'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

require_cmd curl

test_expect_success 'bad options: file:line and what is allowed' '
	cat >bad.conf <<-EOF &&
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "$EP"; }; };
	filters = { f = { plugin = "rate_limit"; key = "host"; rate = 0; }; };
	outputs = { c = { plugin = "capture"; path = "/dev/null"; }; };
	pipelines = { p = { from = ["tr"]; through = ["f"]; to = ["c"]; }; };
	EOF
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:2: error: filters.f: option .key. = \"host\" is not one of: process, trace, input, global" err &&
	grep "bad.conf:2: error: filters.f: option .rate. = 0 is out of range" err
'

test_expect_success 'tallyd --describe rate_limit lists the options' '
	tallyd --describe rate_limit >desc &&
	for o in key rate burst max_keys max_pending; do
		grep "^ *$o " desc || return 1
	done
'

# A bucket of 3 that refills once in 10^6 s: whatever the machine's load,
# each process gets exactly 3 span begins through.
test_expect_success 'start tallyd: limited and unlimited pipelines' '
	lim=$(free_port) &&
	full=$(free_port) &&
	cat >rl.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = {
		tr = { plugin = "zmq_trace"; endpoint = "$EP"; };
		self = { plugin = "self"; interval = 0.1; };
	};
	filters = {
		limit = { plugin = "rate_limit"; rate = 0.000001; burst = 3; };
	};
	outputs = {
		promlim = { plugin = "prometheus"; listen = "127.0.0.1:$lim"; };
		promfull = { plugin = "prometheus";
			     listen = "127.0.0.1:$full"; };
		cap = { plugin = "capture"; path = "lim.out"; };
		capfull = { plugin = "capture"; path = "full.out"; };
		health = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		live = { from = ["tr"]; through = ["limit"];
			 to = ["promlim", "cap"]; };
		full = { from = ["tr"]; to = ["promfull", "capfull"]; };
		h = { from = ["self"]; to = ["health"]; };
	};
	EOF
	start_tallyd --wait "port_listening $lim && port_listening $full" \
		rl.conf
'

# Two processes each: main { r1 } { r2 } { r3 { kid } } { r4 }
test_expect_success 'two traced processes send 12 events each' '
	"$TRACE_EMIT" -p 2 "$EP" job begin:main begin:r1 end:r1 \
		begin:r2 end:r2 begin:r3 begin:kid end:kid end:r3 \
		begin:r4 end:r4 end:main >emit 2>&1 &&
	test $(grep -c "^sent=12 dropped=0 " emit) = 2 &&
	sed -n "s/^sent=12 .* pid=\([0-9]*\)$/\1/p" emit >pids &&
	test $(wc -l <pids) = 2 &&
	wait_for "test \$(grep -c \"^span end .*name=main\" full.out) = 2"
'

scrape() {
	curl -sf "http://127.0.0.1:$1/metrics" >"$2"
}

test_expect_success 'per process: 3 begins pass, the rest dropped whole' '
	for pid in $(cat pids); do
		s="host=$HOST pid=$pid tid=$pid rank=-1" &&
		cat >expect <<-EOF &&
		span begin trace=job name=main id=1 parent=0 depth=0 $s
		span begin trace=job name=r1 id=2 parent=1 depth=1 $s
		span end trace=job name=r1 id=2 parent=1 depth=1 $s
		span begin trace=job name=r2 id=3 parent=1 depth=1 $s
		span end trace=job name=r2 id=3 parent=1 depth=1 $s
		span end trace=job name=main id=1 parent=0 depth=0 $s
		EOF
		grep " pid=$pid " lim.out | sed "s/ ts=.*//; s/ flags=.*//" |
			zt_ids >got &&
		test_cmp expect got &&
		# the unlimited pipeline has all 12
		test $(grep -c " pid=$pid " full.out) = 12 || return 1
	done
'

test_expect_success 'well formed: every end passed has its begin before it' '
	awk "
		\$1 == \"span\" && \$2 == \"begin\" { open[\$5 \" \" \$9]++ }
		\$1 == \"span\" && \$2 == \"end\" {
			k = \$5 \" \" \$9
			if (!open[k]) bad = 1
			open[k]--
		}
		END { for (k in open) if (open[k]) bad = 1; exit bad }" lim.out
'

test_expect_success 'prometheus behind rate_limit shows the passed regions only' '
	scrape $lim m &&
	scrape $full f &&
	for r in main r1 r2; do
		grep "^tally_trace_region_seconds_total{.*region=\"$r\"" m ||
		return 1
	done &&
	for r in r3 kid r4; do
		! grep "region=\"$r\"" m &&
		grep "^tally_trace_region_seconds_total{.*region=\"$r\"" f ||
		return 1
	done &&
	if test -n "$PROMTOOL"; then "$PROMTOOL" check metrics <m; fi
'

# keyed COUNT PID REASON - self.out holds the drop count of one key
keyed() {
	k_m="counter tally_dropped_by_key_total{instance=\"limit\""
	grep -F "$k_m,key=\"$HOST:$2\"," self.out |
		grep -F "reason=\"$3\"}" | tail -1 | grep -q "} $1\$"
}

test_expect_success 'self-metrics: drops per source process and reason' '
	for pid in $(cat pids); do
		wait_for "keyed 2 $pid rate_limited" &&
		wait_for "keyed 1 $pid parent_limited" &&
		wait_for "keyed 3 $pid limited_end" || return 1
	done &&
	grep -F "counter tally_dropped_total{instance=\"limit\"" self.out |
		grep -F "reason=\"rate_limited\"}" | tail -1 | grep " 4$" &&
	grep -F "counter tally_dropped_total{instance=\"limit\"" self.out |
		grep -F "reason=\"limited_end\"}" | tail -1 | grep " 6$"
'

test_done
