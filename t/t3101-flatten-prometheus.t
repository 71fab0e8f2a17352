#!/bin/sh
test_description='flatten: four traced processes, zmq_trace -> flatten ->
prometheus shows one active region per rank, and the flat regions add up
to the wall time the unflattened trace shows'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

require_cmd curl

test_expect_success 'bad options: file:line and what is allowed' '
	cat >bad.conf <<-EOF &&
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "$EP"; }; };
	filters = { f = { plugin = "flatten"; keep = "middle"; max_depth = 0; }; };
	outputs = { c = { plugin = "capture"; path = "/dev/null"; }; };
	pipelines = { p = { from = ["tr"]; through = ["f"]; to = ["c"]; }; };
	EOF
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:2: error: filters.f: option .keep. = \"middle\" is not one of: innermost, outermost" err &&
	grep "bad.conf:2: error: filters.f: option .max_depth. = 0 is out of range" err
'

# One zmq_trace input feeds three pipelines: through flatten to one
# prometheus output (and a capture of the flat stream), unflattened to
# another prometheus output, and through a second flatten instance
# (outermost, with self time) to a capture.
test_expect_success 'start tallyd: flat, full and outermost pipelines' '
	flat=$(free_port) &&
	full=$(free_port) &&
	cat >flat.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = {
		tr = { plugin = "zmq_trace"; endpoint = "$EP"; };
		self = { plugin = "self"; interval = 0.1; };
	};
	filters = {
		flat = { plugin = "flatten"; keep = "innermost"; };
		outer = { plugin = "flatten"; keep = "outermost";
			  self_time = true; };
	};
	outputs = {
		promflat = { plugin = "prometheus";
			     listen = "127.0.0.1:$flat"; };
		promfull = { plugin = "prometheus";
			     listen = "127.0.0.1:$full"; };
		cap = { plugin = "capture"; path = "flat.out";
			timestamps = true; };
		capout = { plugin = "capture"; path = "outer.out";
			   timestamps = true; attrs = true; };
		health = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		live = { from = ["tr"]; through = ["flat"];
			 to = ["promflat", "cap"]; };
		full = { from = ["tr"]; to = ["promfull"]; };
		top = { from = ["tr"]; through = ["outer"]; to = ["capout"]; };
		h = { from = ["self"]; to = ["health"]; };
	};
	EOF
	start_tallyd --wait "port_listening $flat && port_listening $full" \
		flat.conf
'

# scrape PORT FILE - the exposition of the prometheus output on PORT
scrape() {
	curl -sf "http://127.0.0.1:$1/metrics" >"$2"
}

# active FILE - "RANK REGION" of every region shown active (1), sorted
active() {
	act_re='^tally_trace_region_active{rank="\([0-9]*\)",region="\([^"]*\)"'
	sed -n "s/$act_re,trace=\"job\"} 1\$/\1 \2/p" "$1" | sort
}

# inner_of RANK - the region rank RANK holds innermost
inner_of() {
	if test $(($1 % 2)) = 0; then echo halo; else echo io; fi
}

# pid_of RANK - the pid of rank RANK's process, from its report
pid_of() {
	sed -n "s/^sent=8 .* pid=\([0-9]*\)$/\1/p" emit.$1
}

# seconds FILE RANK [REGION] - the sum of the rank's region seconds
seconds() {
	awk -v r="rank=\"$2\"," -v g="region=\"${3:-}" '
		/^tally_trace_region_seconds_total\{/ &&
		index($1, r) && index($1, g) { s += $2 }
		END { printf "%.9f\n", s }' "$1"
}

# le A B - true if A <= B + 1e-6 (exposition rounding, not timing)
le() {
	awk -v a="$1" -v b="$2" 'BEGIN { exit !(a <= b + 1e-6) }'
}

# Rank r holds main > solve > (halo for even ranks, io for odd ones) until
# the file "go" exists (or 120 s have passed, should the test fail before
# it makes it), then ends them, writes, and ends main.
EMIT_PIDS=
test_expect_success 'four ranks open nested regions and hold' '
	for r in 0 1 2 3; do
		in=$(inner_of $r) &&
		{ PMIX_RANK=$r "$TRACE_EMIT" "$EP" job begin:main begin:solve \
			begin:$in wait:"$PWD/go" end:$in end:solve \
			begin:write end:write end:main >emit.$r 2>&1 & } &&
		EMIT_PIDS="$EMIT_PIDS $!"
	done &&
	cat >expect.active <<-EOF &&
	0 halo
	1 io
	2 halo
	3 io
	EOF
	wait_for "scrape $flat m && active m >got && test_cmp expect.active got"
'

test_expect_success 'the flat output shows exactly one active region per rank' '
	scrape $flat m1 &&
	active m1 >got &&
	test_cmp expect.active got &&
	# the enclosing regions are there, inactive
	grep "{rank=\"0\",region=\"main\",trace=\"job\"} 0$" m1 &&
	grep "{rank=\"3\",region=\"solve\",trace=\"job\"} 0$" m1 &&
	if test -n "$PROMTOOL"; then "$PROMTOOL" check metrics <m1; fi
'

test_expect_success 'the unflattened output shows the whole nesting' '
	scrape $full f1 &&
	test $(grep -c "^tally_trace_region_active{.*} 1$" f1) = 12
'

test_expect_success 'while open: flat regions add up to the main span' '
	scrape $flat a &&
	scrape $full b &&
	scrape $flat c &&
	for r in 0 1 2 3; do
		x=$(seconds a $r) && y=$(seconds b $r main) &&
		z=$(seconds c $r) &&
		tally_diag "rank $r: flat $x <= main $y <= flat $z" &&
		le "$x" "$y" && le "$y" "$z" || return 1
	done
'

test_expect_success 'the ranks end their regions and exit' '
	touch go &&
	wait $EMIT_PIDS &&
	for r in 0 1 2 3; do
		grep "^sent=8 dropped=0 " emit.$r || return 1
	done &&
	wait_for "scrape $flat m && test -z \"\$(active m)\"" &&
	wait_for "scrape $full f && test -z \"\$(active f)\""
'

test_expect_success 'ended: flat regions add up exactly to the wall time' '
	scrape $flat m2 &&
	scrape $full f2 &&
	for r in 0 1 2 3; do
		x=$(seconds m2 $r) && y=$(seconds f2 $r main) &&
		all=$(seconds f2 $r) &&
		tally_diag "rank $r: flat $x, main $y, unflattened sum $all" &&
		le "$x" "$y" && le "$y" "$x" &&
		# nested time counted several times without flatten
		! le "$all" "$y" || return 1
	done
'

test_expect_success 'the flat stream: fragments, a call counted once' '
	for r in 0 1 2 3; do
		in=$(inner_of $r) &&
		pid=$(pid_of $r) &&
		s="host=$HOST pid=$pid tid=$pid rank=$r" &&
		cat >expect <<-EOF &&
		span begin trace=job name=main id=1 parent=0 depth=0 $s flags=fragment
		span end trace=job name=main id=1 parent=0 depth=0 $s flags=fragment
		span begin trace=job name=solve id=2 parent=1 depth=1 $s flags=fragment
		span end trace=job name=solve id=2 parent=1 depth=1 $s flags=fragment
		span begin trace=job name=$in id=3 parent=2 depth=2 $s flags=fragment
		span end trace=job name=$in id=3 parent=2 depth=2 $s flags=fragment|last
		span begin trace=job name=solve id=2 parent=1 depth=1 $s flags=fragment|resumed
		span end trace=job name=solve id=2 parent=1 depth=1 $s flags=fragment|resumed|last
		span begin trace=job name=main id=1 parent=0 depth=0 $s flags=fragment|resumed
		span end trace=job name=main id=1 parent=0 depth=0 $s flags=fragment|resumed
		span begin trace=job name=write id=4 parent=1 depth=1 $s flags=fragment
		span end trace=job name=write id=4 parent=1 depth=1 $s flags=fragment|last
		span begin trace=job name=main id=1 parent=0 depth=0 $s flags=fragment|resumed
		span end trace=job name=main id=1 parent=0 depth=0 $s flags=fragment|resumed|last
		EOF
		grep " pid=$pid " flat.out | sed "s/ ts=.*//" | zt_ids >got &&
		test_cmp expect got || return 1
	done
'

test_expect_success 'fragments are contiguous: each begins as one ends' '
	for r in 0 1 2 3; do
		pid=$(pid_of $r) &&
		grep " pid=$pid " flat.out | awk "
			/^span begin/ { split(\$NF, t, \"=\"); b = t[2]
				if (e != \"\" && b != e) bad = 1 }
			/^span end/ { split(\$(NF-1), t, \"=\"); e = t[2]
				split(\$NF, t, \"=\"); if (t[2] != b) bad = 1 }
			END { exit bad }" || return 1
	done
'

# frag_ns FILE PID NAME - the total of NAME's fragments of PID in FILE
# (timestamps keep their last 12 digits: a double holds 2^53 exactly, not
# nanoseconds since 1970)
frag_ns() {
	grep " pid=$2 " "$1" | awk -v n="name=$3" '
		function ns(f) { split(f, t, "="); return substr(t[2], 8) + 0 }
		$4 != n { next }
		$2 == "begin" { b = ns($NF) }
		$2 == "end" { d = ns($(NF-1)) - b; s += d < 0 ? d + 1e12 : d }
		END { print s + 0 }'
}

test_expect_success 'outermost: main alone, its self time on its end' '
	for r in 0 1 2 3; do
		pid=$(pid_of $r) &&
		s="host=$HOST pid=$pid tid=$pid rank=$r" &&
		cat >expect <<-EOF &&
		span begin trace=job name=main id=1 parent=0 depth=0 $s flags=fragment attrs={}
		span end trace=job name=main id=1 parent=0 depth=0 $s flags=fragment|last attrs={} values=self_seconds=X
		EOF
		grep " pid=$pid " outer.out | sed "s/ ts=.*//" |
			sed "s/self_seconds=[0-9.e+-]*/self_seconds=X/" |
			zt_ids >got &&
		test_cmp expect got &&
		# innermost, main is shown exactly when none of its children is
		self=$(grep " pid=$pid " outer.out |
			sed -n "s/.*self_seconds=\([0-9.e+-]*\).*/\1/p") &&
		want=$(frag_ns flat.out $pid main) &&
		tally_diag "rank $r: self_seconds $self," \
			"main fragments $want ns" &&
		awk -v a="$self" -v b="$want" "BEGIN { d = a * 1e9 - b
			exit !(b > 0 && d < 1 && d > -1) }" || return 1
	done
'

# self_fragments - self.out holds the flat instance's 28 fragments
self_fragments() {
	grep -F 'counter tally_events_total{event="fragments",instance="flat"' \
		self.out | grep -q '} 28$'
}

test_expect_success 'self-metrics: 7 fragments per rank, nothing dropped' '
	wait_for self_fragments &&
	! grep "tally_dropped_total{.*instance=\"flat\"" self.out
'

test_done
