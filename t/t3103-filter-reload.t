#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='flatten and rate_limit across reloads: a reload that
replaces the filter hands its state to the new instance, so the flat view
stays well formed and the limit neither resets nor lets ends of dropped
begins through (issue 11)

A reload replaces every filter of a pipeline whose filters changed. Before
filters had handoff and adopt ops, the old flatten took its open fragment
with it (downstream kept a region open that nothing would end), and the
new one dropped the ends of every span open at the reload as orphans.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t30-lib.sh"

# conf THROUGH FILTERS - zmq_trace "tr" -> THROUGH -> capture flat.out, and
# tr unfiltered -> capture full.out; FILTERS declares the filters
conf() {
	cat >cur.conf <<-EOF
	global = { log_level = "info"; };
	inputs = { tr = { plugin = "zmq_trace"; endpoint = "$EP"; }; };
	filters = { $2 };
	outputs = {
		cap = { plugin = "capture"; path = "flat.out";
			timestamps = true; };
		full = { plugin = "capture"; path = "full.out";
			 timestamps = true; };
	};
	pipelines = {
		p = { from = ["tr"]; through = [$1]; to = ["cap"]; };
		u = { from = ["tr"]; to = ["full"]; };
	};
	EOF
}

# spans FILE TRACE - "phase name flags" of the span lines of TRACE
spans() {
	sed -n "s/^span \([a-z]*\) trace=$2 name=\([^ ]*\) .* flags=\([^ ]*\) ts=.*/\1 \2 \3/p" "$1"
}

sock_ready() {
	test -S "$SOCKDIR/trace.sock"
}

flat() {
	plain="flatten = { plugin = \"flatten\"; keep = \"$1\"; };"
	echo "$plain"
}

test_expect_success 'start: tr -> flatten (innermost) -> capture' '
	conf "\"flatten\"" "$(flat innermost)" &&
	start_tallyd --wait sock_ready cur.conf
'

test_expect_success 'a reload changing keep: the open fragment ends, the new view resumes' '
	{ "$TRACE_EMIT" "$EP" keep begin:outer begin:inner wait:go1 \
		endid:inner endid:outer >keep.out & } &&
	emit=$! &&
	wait_for "spans flat.out keep | grep -q \"^begin inner fragment$\"" &&
	conf "\"flatten\"" "$(flat outermost)" &&
	reload_tallyd &&
	cat >want.1 <<-EOF &&
	begin outer fragment
	end outer fragment
	begin inner fragment
	end inner fragment
	begin outer fragment|resumed
	EOF
	spans flat.out keep >got.1 &&
	test_cmp want.1 got.1 &&
	touch go1 &&
	wait $emit &&
	wait_for "spans flat.out keep | grep -q \"^end outer fragment|resumed|last$\"" &&
	cat >want.2 <<-EOF &&
	begin outer fragment
	end outer fragment
	begin inner fragment
	end inner fragment
	begin outer fragment|resumed
	end outer fragment|resumed
	begin inner fragment|resumed
	end inner fragment|resumed|last
	begin outer fragment|resumed
	end outer fragment|resumed|last
	EOF
	spans flat.out keep >got.2 &&
	test_cmp want.2 got.2 &&
	! grep "orphan_end" tallyd.log
'

# sum_frag FILE TRACE - the total of end - begin over fragment ends
sum_frag() {
	sed -n "s/^span end trace=$2 .* flags=fragment[^ ]* ts=\([0-9]*\) begin=\([0-9]*\)$/\1 \2/p" "$1" |
	awk "{ s += \$1 - \$2 } END { print s + 0 }"
}

test_expect_success 'the flat fragments still add up to the wall time of the trace' '
	wall=$(sed -n "s/^span end trace=keep name=outer .* ts=\([0-9]*\) begin=\([0-9]*\)$/\1 \2/p" full.out |
	       awk "{ print \$1 - \$2 }") &&
	test -n "$wall" &&
	test "$(sum_frag flat.out keep)" = "$wall"
'

test_expect_success 'a reload that removes flatten ends its open fragment downstream' '
	{ "$TRACE_EMIT" "$EP" gone begin:a wait:go2 endid:a >gone.out & } &&
	emit=$! &&
	wait_for "spans flat.out gone | grep -q \"^begin a fragment$\"" &&
	conf "" "" &&
	reload_tallyd &&
	touch go2 &&
	wait $emit &&
	wait_for "grep -q \"^span end trace=gone name=a \" full.out" &&
	# the flat stream ended the fragment at the reload; the span end
	# itself then went through the filterless pipeline
	wait_for "spans flat.out gone | grep -q \"^end a 0$\"" &&
	cat >want.3 <<-EOF &&
	begin a fragment
	end a fragment
	end a 0
	EOF
	spans flat.out gone >got.3 &&
	test_cmp want.3 got.3
'

rl() {
	echo "rl = { plugin = \"rate_limit\"; rate = $1; burst = 1; };"
}

test_expect_success 'rate_limit: a reload keeps the buckets and the dropped begins' '
	conf "\"rl\"" "$(rl 0.001)" &&
	reload_tallyd &&
	{ "$TRACE_EMIT" "$EP" lim begin:a begin:b wait:go3 endid:b \
		begin:c endid:c endid:a >lim.out & } &&
	emit=$! &&
	wait_for "grep -q \"^span begin trace=lim name=b \" full.out" &&
	conf "\"rl\"" "$(rl 0.002)" &&
	reload_tallyd &&
	touch go3 &&
	wait $emit &&
	wait_for "grep -q \"^span end trace=lim name=a \" full.out" &&
	wait_for "spans flat.out lim | grep -q \"^end a \"" &&
	# b was dropped before the reload: its end is dropped after it; the
	# bucket is still empty, so c is dropped too (a new state would have
	# started full and passed it)
	cat >want.4 <<-EOF &&
	begin a 0
	end a 0
	EOF
	spans flat.out lim >got.4 &&
	test_cmp want.4 got.4
'

test_expect_success 'stop' '
	stop_tallyd
'

test_done
