# t/t30-lib.sh - helpers shared by the zmq_trace tests (t30xx), sourced
# after t/lib/tally.sh
#
#	SOCKDIR    a directory for ipc sockets; the trash directory when its
#	           path is short enough for sun_path (108 bytes), else a
#	           private one under /tmp removed at exit (pass or fail)
#	EP         ipc://$SOCKDIR/trace.sock, the endpoint the tests bind
#	HOST       this host's name, as gethostname() gives it
#	TRACE_EMIT the client test program (libtally-trace), t/trace-emit
#	PYZMQ      prerequisite: $PYTHON3 can import zmq

if test ${#PWD} -le 60; then
	SOCKDIR=$PWD
else
	SOCKDIR=$(mktemp -d /tmp/tally-t30.XXXXXX) || exit 1
	tally_rm_at_exit "$SOCKDIR"
fi
EP="ipc://$SOCKDIR/trace.sock"
HOST=$(uname -n)
TRACE_EMIT=$top_builddir/t/trace-emit

# Prerequisite PYZMQ: $PYTHON3 has zmq (Debian: python3-zmq).
"$PYTHON3" -c "import zmq" 2>/dev/null && test_set_prereq PYZMQ

# zt_require_pyzmq - skip the whole script without PYZMQ; under CI (where
# every test tool is installed) fail instead
zt_require_pyzmq() {
	test_have_prereq PYZMQ && return 0
	if test "$CI" = true; then
		test_expect_success "python3-zmq is installed (CI)" \
			'"$PYTHON3" -c "import zmq"'
		test_done
	fi
	skip_all="$PYTHON3 cannot import zmq (Debian: python3-zmq)"
	test_done
}

# zt_config FILE [OPTION...] - a config: zmq_trace "tr" on $EP (plus the
# given options, e.g. 'max_open_spans = 2;') -> capture spans.out, and
# self (every 0.1 s) -> capture self.out
zt_config() {
	zt_c_file=$1
	shift
	cat >"$zt_c_file" <<-EOF
	global = { log_level = "info"; };
	inputs = {
		tr = { plugin = "zmq_trace"; endpoint = "$EP"; $*  };
		self = { plugin = "self"; interval = 0.1; };
	};
	outputs = {
		cap = { plugin = "capture"; path = "spans.out"; };
		health = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		spans = { from = ["tr"]; to = ["cap"]; };
		h = { from = ["self"]; to = ["health"]; };
	};
	EOF
}

# zt_now_s - this host's clock, in whole seconds since the epoch: tests
# give hand-made events timestamps near it (zmq_trace drops those more
# than max_clock_skew, 300 s by default, away from its clock)
zt_now_s() {
	date +%s
}

# zt_send - send the messages of the script on stdin to $EP with pyzmq
# (see t/t30-zmq-send.py for the script format)
zt_send() {
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t30-zmq-send.py" "$EP"
}

# zt_drops REASON - the latest tally_dropped_total of instance tr for
# REASON in self.out, 0 when not counted yet
zt_drops() {
	sed -n "s/^counter tally_dropped_total{instance=\"tr\",kind=\"input\",plugin=\"zmq_trace\",reason=\"$1\"} //p" \
		self.out | tail -n1 | grep . || echo 0
}

# zt_ids - renumber span ids in order of first appearance (1, 2, ...), so
# an expected sequence does not depend on how the client allocates ids;
# parent=0 stays 0, and a parent keeps the number of its span
zt_ids() {
	awk '{
		for (i = 1; i <= NF; i++) {
			if ($i !~ /^(id|parent)=/)
				continue
			split($i, kv, "=")
			if (kv[2] == 0)
				continue
			if (!(kv[2] in num))
				num[kv[2]] = ++n
			$i = kv[1] "=" num[kv[2]]
		}
		print
	}'
}

# zt_lines FILE N - wait until FILE has at least N lines
zt_lines() {
	wait_for "test -f '$1' && test \$(wc -l <'$1') -ge $2"
}
