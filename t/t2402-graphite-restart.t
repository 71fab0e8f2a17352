#!/bin/sh
test_description='graphite output across carbon-cache restarts: stopped
(SIGTERM) while tallyd streams and started again about 10 s later, every
point produced meanwhile arrives, once; with a queue bound smaller than the
outage the drops are counted exactly; kill -9 once and report the loss
window. A counting relay between tallyd and carbon sees every line'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

. "$SHARNESS_TEST_SRCDIR/t24-carbon.sh"

M=tally.node.t24.restart.0

# produced [AFTER] - "SECONDS.NANOS VALUE" of every point the input made
# (the capture output), those after time AFTER only
produced() {
	awk -v after="${1:-0}" '/^gauge t24\.restart\{i="0"\} / {
		ts = $4; sub(/^ts=/, "", ts)
		t = substr(ts, 1, length(ts) - 9) "." substr(ts, length(ts) - 8)
		if (t + 0 > after + 0) print t, $3 }' cap.txt
}

# relayed - "VALUE" of every line of the series the relay passed
relayed() {
	awk -v m="$M" '$1 == m { print $2 }' relay.log
}

# missing [AFTER [UPTO]] - points produced (after time AFTER, up to value
# UPTO: the last one the test waited for) that never passed
missing() {
	relayed | sort -u >relayed.$$ &&
	produced "$1" | awk -v upto="${2:-0}" 'NR == FNR { seen[$1] = 1; next }
		!($2 in seen) && (upto == 0 || $2 + 0 <= upto + 0)' relayed.$$ -
}

# last_down - the time the relay saw carbon end its connection, last
last_down() {
	awk '$1 == "#down" { t = $2 } END { print t }' relay.log
}

# dropped REASON - tallyd's own count for output g (the self input)
dropped() {
	awk -v r="reason=\"$1\"" 'index($0, "tally_dropped_total{") &&
		index($0, "instance=\"g\"") && index($0, r) { v = $3 }
		END { print v + 0 }' self.txt
}

# in_whisper EXPECT - the points of EXPECT ("SECONDS VALUE") whisper holds:
# carbon-cache writes its cache out some time after it received them
in_whisper() {
	carbon_points carbon $M >all &&
	awk 'NR == FNR { want[$1] = 1; next } $1 in want' "$1" all
}

# outage - stop carbon (SIGTERM or SIGKILL: $1), let tallyd produce at
# least $2 points while it is down, start it again; wait until the relay
# passed the last point produced by then
outage() {
	n0=$(grep -c "^#down" relay.log)
	if test "$1" = KILL; then kill_carbon; else stop_carbon; fi &&
	wait_for "test \$(grep -c '^#down' relay.log) -gt $n0" 30 &&
	down=$(last_down) &&
	wait_for "test \$(produced $down | wc -l) -ge $2" 60 &&
	start_carbon carbon &&
	last=$(produced | tail -n 1 | cut -d" " -f2) &&
	wait_for "relayed | grep -qx $last" 60
}

conf() {
	cat >g.conf <<-EOF
	global = { log_level = "info"; };
	inputs = {
	  c = { plugin = "counter"; interval = 1.0; name = "t24.restart"; };
	  self = { plugin = "self"; interval = 0.5; };
	};
	outputs = {
	  g = { plugin = "graphite"; server = "127.0.0.1:$RELAY_PORT";
		prefix = "tally"; labels = { host = "node"; };
		backoff_max = "1s"; $1 };
	  cap = { plugin = "capture"; path = "cap.txt"; timestamps = true; };
	  sc = { plugin = "capture"; path = "self.txt"; };
	};
	pipelines = {
	  p = { from = ["c"]; to = ["g", "cap"]; };
	  s = { from = ["self"]; to = ["sc"]; };
	};
	EOF
}

test_expect_success 'carbon-cache, and the counting relay in front of it' '
	mkdir carbon &&
	start_carbon carbon &&
	start_relay $CARBON_PORT
'

test_expect_success 'tallyd streams one point a second' '
	conf "" &&
	start_tallyd g.conf &&
	wait_for "test \$(relayed | wc -l) -ge 3" 30
'

test_expect_success 'SIGTERM carbon for 10 s: every point produced while it
was down arrives once it is back, none twice' '
	outage TERM 10 &&
	produced $down >while_down &&
	test $(wc -l <while_down) -ge 10 &&
	missing $down $last >lost_after &&
	test_must_be_empty lost_after &&
	relayed | sort | uniq -d >twice &&
	test_must_be_empty twice &&
	test $(dropped queue_full) = 0 &&
	grep "connection lost" tallyd.log &&
	missing 0 $last >lost_at_stop &&
	tally_diag "SIGTERM: $(wc -l <lost_at_stop) points lost at the stop" \
		"(in flight when carbon closed), $(wc -l <while_down) queued" \
		"and delivered"
'

test_expect_success 'carbon wrote them: whisper holds the points of the outage' '
	awk "{ split(\$1, t, \".\"); v[t[1]] = \$2 }
		END { for (s in v) print s, v[s] }" while_down | sort -n >expect &&
	wait_for "in_whisper expect >actual && cmp -s expect actual" 60;
	test_cmp expect actual
'

test_expect_success 'a queue bound smaller than the outage: drops counted
exactly, the oldest dropped' '
	stop_tallyd &&
	: >relay.log.old && cat relay.log >>relay.log.old && : >relay.log &&
	conf "queue_records = 3;" &&
	start_tallyd g.conf &&
	wait_for "test \$(relayed | wc -l) -ge 3" 30 &&
	outage TERM 10 &&
	missing $down $last >lost_after &&
	test $(wc -l <lost_after) -ge 5 &&
	wait_for "test \$(dropped queue_full) -eq \$(wc -l <lost_after)" 30 &&
	relayed | sort | uniq -d >twice &&
	test_must_be_empty twice &&
	produced $down | cut -d" " -f2 |
		awk "NR == FNR { seen[\$1] = 1; next } \$1 in seen" relayed.$$ - |
		sort -n | head -n 1 >first_kept &&
	test $(cut -d" " -f2 lost_after | sort -n | tail -n 1) -lt \
		$(cat first_kept) &&
	tally_diag "queue_records = 3: $(wc -l <lost_after) points dropped," \
		"tally_dropped_total{reason=\"queue_full\"} = $(dropped queue_full)"
'

test_expect_success 'kill -9 carbon once: the loss window, measured' '
	stop_tallyd &&
	cat relay.log >>relay.log.old && : >relay.log &&
	conf "" &&
	start_tallyd g.conf &&
	wait_for "test \$(relayed | wc -l) -ge 3" 30 &&
	last=$(relayed | tail -n 1) &&
	missing 0 $last | sort >before &&
	outage KILL 5 &&
	missing $down $last >lost_after &&
	test_must_be_empty lost_after &&
	missing 0 $last | sort >after &&
	comm -13 before after >lost_tallyd_side &&
	produced | awk -v d="$down" "\$1 + 0 <= d + 0" |
		awk "{ split(\$1, t, \".\"); v[t[1]] = \$2 }
		END { for (s in v) print s, v[s] }" | sort -n >sent_before &&
	carbon_points carbon $M >all &&
	tail -n 10 sent_before >recent &&
	awk "NR == FNR { have[\$1] = \$2; next }
		!(\$1 in have) || have[\$1] != \$2" all recent >lost_in_carbon &&
	tally_diag "kill -9: $(wc -l <lost_tallyd_side) points lost in the" \
		"sockets (relayed never), $(wc -l <lost_in_carbon) of the last" \
		"10 s before the kill missing from whisper (read by carbon or" \
		"in its buffer, not written)" &&
	cat lost_in_carbon lost_tallyd_side >&5
'

test_expect_success 'stop' '
	stop_tallyd &&
	stop_carbon
'

test_done
