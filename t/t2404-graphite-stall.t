#!/bin/sh
test_description='graphite output to a server that accepts the connection
and never reads it: tallyd notices that its writes make no progress for
stall_timeout, logs it once naming the peer, counts it (event stalls) and
makes a new connection, on which every point the stalled one did not take
arrives, none twice. The server is a FAKE (t24-carbon.py stall), by
necessity: no real carbon can be made to stop reading a live connection.
It reads the stalled connection to its end once the second one is made,
so a point sent on both would show up twice here'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t24-stall.sh"

N=2000 # points per read: 80 KB, the kernels' buffers fill in a read or two

# events NAME - tallyd's own count of event NAME for output g
events() {
	awk -v e="event=\"$1\"" 'index($0, "tally_events_total{") &&
		index($0, "instance=\"g\"") && index($0, e) { v = $3 }
		END { print v + 0 }' self.txt
}

# points - "READ I" of every point of the series the fake server received
points() {
	awk '$1 ~ /^tally\.node\.t24\.stall\.[0-9]+$/ {
		n = split($1, p, "."); print $2, p[n] }' fake.log
}

# complete K - every read up to K arrived whole: N points each
complete() {
	points | sort -u | awk -v k="$1" -v n=$N '$1 + 0 <= k + 0 { c[$1]++ }
		END { for (r = 1; r <= k; r++) if (c[r] != n) exit 1 }'
}

test_expect_success 'a fake carbon that never reads its first connection' '
	start_fake
'

test_expect_success 'tallyd streams 2000 points every 0.5 s to it' '
	cat >g.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = {
	  c = { plugin = "counter"; interval = 0.5; name = "t24.stall";
		count = $N; };
	  self = { plugin = "self"; interval = 0.5; };
	};
	outputs = {
	  g = { plugin = "graphite"; server = "127.0.0.1:$port";
		prefix = "tally"; labels = { host = "node"; };
		stall_timeout = "1s"; backoff_max = "1s"; };
	  sc = { plugin = "capture"; path = "self.txt"; };
	};
	pipelines = {
	  p = { from = ["c"]; to = ["g"]; };
	  s = { from = ["self"]; to = ["sc"]; };
	};
	EOF
	start_tallyd g.conf
'

test_expect_success 'the stall is noticed, logged once with the peer, counted' '
	wait_for "grep -q \"^#conn 2\" fake.log" 60 &&
	grep "stalled" tallyd.log >stalled &&
	test $(wc -l <stalled) = 1 &&
	grep "graphite\[g\]: server \"127.0.0.1:$port\": connection lost: \
stalled: 127.0.0.1:$port took no byte for 1 s (it reads nothing)" stalled &&
	wait_for "test \$(events stalls) = 1" &&
	wait_for "grep -q \"^#stall 1 \" fake.log" &&
	tally_diag "the stalled connection took" \
		"$(awk "\$1 == \"#stall\" { print \$3 }" fake.log) bytes"
'

test_expect_success 'every point arrives, once: the stalled connection'"'"'s
and those it never took' '
	last=$(points | sort -n | tail -n 1 | cut -d" " -f1) &&
	want=$((last + 2)) &&
	wait_for "complete $want" 60 &&
	points | sort | uniq -d >twice &&
	test_must_be_empty twice &&
	grep -c "^#conn" fake.log >conns &&
	echo 2 >expect &&
	test_cmp expect conns &&
	tally_diag "reads 1..$want arrived whole ($N points each), none twice"
'

test_expect_success 'stop' '
	stop_tallyd
'

test_done
