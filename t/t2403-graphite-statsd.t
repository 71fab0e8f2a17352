#!/bin/sh
test_description='statsd datagrams through aggregate and the graphite output
into a real carbon-cache: every etsy statsd per-flush name (.count, .rate,
.sum, .mean, .lower, .upper, .median, .upper_P, .histogram.bin_LE) read
back from carbon'"'"'s whisper files with the value computed here from
the datagram sent'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

. "$SHARNESS_TEST_SRCDIR/t24-carbon.sh"

send() {
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t40-statsd-send.py" "$@"
}

# first NAME - "SECONDS VALUE" of the first point carbon wrote for
# e2e.n1.NAME, once its whisper file holds one (carbon writes its cache
# out asynchronously: carbon_points polls)
first() {
	carbon_points carbon "e2e.n1.$1" 1 | head -n 1
}

test_expect_success 'carbon-cache, and tallyd: statsd -> aggregate (2 s) -> graphite' '
	mkdir carbon &&
	start_carbon carbon &&
	udp=$(free_port) &&
	cat >sd.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:$udp"; }; };
	filters = { agg = { plugin = "aggregate"; interval = 2.0;
			    zero_seed = false; percentiles = [90.0, 99.9];
			    buckets = [0.005, 0.05]; }; };
	outputs = { g = { plugin = "graphite";
			  server = "127.0.0.1:$CARBON_PORT"; prefix = "e2e";
			  labels = { host = "n1"; }; }; };
	pipelines = { p = { from = ["sd"]; through = ["agg"]; to = ["g"]; }; };
	EOF
	start_tallyd --wait "udp_bound $udp" sd.conf
'

# The datagram lands in a whole interval once aggregate has ticked once
# (its first interval starts when tallyd does): a counter sent first,
# seen in carbon, says so.
test_expect_success 'one interval has passed (a first counter reached whisper)' '
	echo "warm:1|c" >d0 &&
	send udp4 127.0.0.1:$udp d0 &&
	first warm.count >w &&
	test "$(cut -d" " -f2 w)" = 1
'

test_expect_success 'send one datagram of counters, gauges, a set, timers and a histogram' '
	# one datagram: every line in the same interval
	{
		printf "%s\n" "req.count:3|c" "req.count:2|c|@0.5" \
			"req.count:1|c|@0.1" "lvl:10|g" "lvl:+5|g" "lvl:-3|g" \
			"neg:0|g" "neg:-4|g" "users:alice|s" "users:bob|s" \
			"users:alice|s"
		for i in 1 2 3 4 5 6 7 8 9; do echo "db.query:$i|ms"; done
		printf "%s\n" "db.query:10|ms|@0.5" "size:0.001|h" "size:0.01|h" \
			"size:1|h|@0.5"
	} >d1 &&
	send udp4 127.0.0.1:$udp d1 &&
	# the interval of the datagram ends at T (its records carry it),
	# the one before at P: T - P is the interval rates are divided by
	first db.query.mean >m &&
	T=$(cut -d" " -f1 m) &&
	wait_for "carbon_points carbon e2e.n1.warm.count | grep -q \"^$T \"" &&
	P=$(carbon_points carbon e2e.n1.warm.count |
		awk -v t=$T "\$1 < t { p = \$1 } END { print p }") &&
	test -n "$P" && test $((T - P)) -ge 2 &&
	echo "$T $P" >tp
'

# The figures, by hand from the datagram above, in double precision as
# statsd defines them: counters sum increment / sample rate; gauges set,
# then adjust; sets count distinct members; ms values are seconds / 1000,
# weighted by 1 / sample rate in count and sum, not in lower, upper or
# the percentiles (nearest rank: the value of rank ceil(p/100 n) of the
# n values as sent); histogram bins count the weighted values in
# (previous bound, bound], not cumulated (etsy).
test_expect_success 'every etsy name holds the exact figure of the interval' '
	read T P <tp &&
	"$PYTHON3" - $T $((T - P)) >expect <<-\EOF &&
	import math, sys
	t, secs = int(sys.argv[1]), float(sys.argv[2])

	def rank(vals, p):
	    v = sorted(vals)
	    return v[max(1, math.ceil(p / 100 * len(v))) - 1]

	def timer(name, samples):
	    count = total = 0.0
	    for v, w in samples:
	        count += w
	        total += v * w
	    vals = [v for v, w in samples]
	    out = [(".count", count), (".count_ps", count / secs),
	           (".sum", total), (".mean", total / count),
	           (".lower", min(vals)), (".upper", max(vals)),
	           (".median", rank(vals, 50)), (".upper_90", rank(vals, 90)),
	           (".upper_99_9", rank(vals, 99.9))]
	    return [(name + s, x) for s, x in out]

	req = 3 + 2 / 0.5 + 1 / 0.1
	rows = [("req.count.count", req), ("req.count.rate", req / secs),
	        ("lvl", 10 + 5 - 3), ("neg", -4), ("users.count", 2)]
	rows += timer("db.query", [(i / 1e3, 1.0) for i in range(1, 10)] +
	              [(10 / 1e3, 1 / 0.5)])
	rows += timer("size", [(0.001, 1.0), (0.01, 1.0), (1.0, 1 / 0.5)])
	rows += [("size.histogram.bin_0_005", 1), ("size.histogram.bin_0_05", 1),
	         ("size.histogram.bin_inf", 2)]
	for name, v in rows:
	    print("%s %d %.17g" % (name, t, v))
	EOF
	while read name t v; do
		echo "$name $(first $name)" || return 1
	done <expect >actual &&
	test_cmp expect actual &&
	grep -q "^db.query.mean $T 0.0059090909090909" actual
'

# after NAME T - the points of e2e.n1.NAME after second T
after() {
	carbon_points carbon "e2e.n1.$1" | awk -v t="$2" '$1 > t'
}

test_expect_success 'the idle intervals after it: counts at 0, levels held, no mean' '
	read T P <tp &&
	wait_for "after req.count.count $T | grep -q ." &&
	after req.count.count $T >c &&
	awk "\$2 != 0 { bad = 1 } END { exit bad }" c &&
	carbon_points carbon e2e.n1.lvl 2 |
		awk "\$2 != 12 { bad = 1 } END { exit bad }" &&
	test $(carbon_points carbon e2e.n1.db.query.mean | wc -l) = 1
'

test_expect_success 'stop' '
	stop_tallyd &&
	stop_carbon
'

test_done
