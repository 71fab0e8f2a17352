# t/lib/hostinputs.sh - helpers of the procfs and netdev tests (t1xxx)
#
# Source after t/lib/tally.sh:
#
#	. /usr/share/sharness/sharness.sh
#	. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
#	. "$SHARNESS_TEST_SRCDIR/lib/hostinputs.sh"
#
# One tick at a time: once_input runs `tallyd --once` and compares the
# capture output with check. Over many ticks of a running tallyd whose
# capture output has source = true and timestamps = true: tick and has.

# procfs settings that switch off every group but node_exporter's cpu, stat,
# meminfo, loadavg and pressure (the groups t1001 checks)
PROCFS_BASE='filesystem = false; diskstats = false; vmstat = false;
	netstat = false; sockstat = false; uname = false; time = false;
	os = false;'

# once_input NAME SETTINGS - one tick of input NAME configured with SETTINGS
# (e.g. 'plugin = "procfs"; root = "/x";') through `tallyd --once` and the
# capture output: records in out.txt, tallyd's output in log.txt. The
# configuration is once.conf, its input on line 2.
once_input() {
	cat >once.conf <<-CONF &&
	global = { log_level = "info"; };
	inputs = { $1 = { $2 }; };
	outputs = { cap = { plugin = "capture"; path = "out.txt"; }; };
	pipelines = { p = { from = ["$1"]; to = ["cap"]; }; };
	CONF
	timeout 20 "$TALLYD" --once -c once.conf >log.txt 2>&1
}

# norm - each line's value (the last field) as %.17g prints it, which is
# how capture prints a double: expected text can then write plain decimals
# (13932.8) and still be compared digit for digit
norm() {
	awk '{ $NF = sprintf("%.17g", $NF + 0); print }'
}

# check EXPECTED - out.txt holds exactly EXPECTED's lines, in that order
check() {
	norm <"$1" >expected.norm &&
	norm <out.txt >out.norm &&
	test_cmp expected.norm out.norm
}

# tick SOURCE - the records of SOURCE's last complete tick in out.txt,
# without the "SOURCE: " prefix and the " ts=" suffix. All records of one
# tick share a timestamp; a tick is complete once a later one has started,
# so a batch still being written is never read half-way.
tick() {
	awk -v src="$1: " '
		index($0, src) != 1 { next }
		$NF != cur { prev = buf; buf = ""; cur = $NF }
		{ line = substr($0, length(src) + 1); sub(/ ts=[0-9]+$/, "", line)
		  buf = buf line "\n" }
		END { printf "%s", prev }' out.txt
}

# has SOURCE LINE - SOURCE's last complete tick has exactly LINE
has() {
	tick "$1" | grep -qxF "$2"
}
