# t/t24-carbon.sh - a real carbon-cache for the graphite tests (t24xx),
# sourced after t/lib/tally.sh; skips the test where carbon-cache or
# python3-whisper is missing
#
#	start_carbon DIR
#		generate DIR/carbon.conf and DIR/storage-schemas.conf with
#		ports free on 127.0.0.1 (CARBON_PORT: the plaintext receiver)
#		and start carbon-cache in the foreground (--nodaemon), its
#		output in DIR/carbon.out; waits until the receiver listens.
#		Called again with the same DIR (after stop_carbon or
#		kill_carbon) it restarts on the same ports and files.
#		CARBON_PID is its pid; it is stopped when the test ends.
#	stop_carbon
#		SIGTERM, and wait until it is gone
#	kill_carbon
#		SIGKILL, and wait until it is gone
#	carbon_points DIR METRIC
#		"SECONDS VALUE" lines of what carbon wrote for METRIC (a path,
#		or name;k=v tags), read back from its whisper file
#	start_relay PORT
#		the counting relay of t24-carbon.py between tallyd (on a free
#		port: RELAY_PORT) and carbon's PORT; lines it passed in
#		relay.log
require_cmd carbon-cache "carbon-cache not installed (Debian: graphite-carbon)"
"$PYTHON3" -c 'import whisper, carbon' 2>/dev/null ||
	require_cmd no-python3-whisper "python3-whisper or graphite-carbon missing"

CARBON_PID=
RELAY_PID=

carbon_py() {
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t24-carbon.py" "$@"
}

start_carbon() {
	tally_cb_dir=$(cd "$1" && pwd)
	if ! test -f "$tally_cb_dir/carbon.conf"; then
		CARBON_PORT=$(free_port) &&
		carbon_py conf "$tally_cb_dir" $CARBON_PORT $(free_port) \
			$(free_port) || return 1
	fi
	rm -f "$tally_cb_dir"/carbon-cache-a.pid
	carbon-cache --nodaemon --config="$tally_cb_dir/carbon.conf" start \
		>>"$tally_cb_dir/carbon.out" 2>&1 &
	CARBON_PID=$!
	if ! wait_for "port_listening $CARBON_PORT" 60; then
		tally_diag <"$tally_cb_dir/carbon.out"
		return 1
	fi
}

carbon_gone_() {
	while kill -0 "$CARBON_PID" 2>/dev/null; do
		sleep 0.1
	done
	wait "$CARBON_PID" 2>/dev/null
	CARBON_PID=
	return 0
}

stop_carbon() {
	test -n "$CARBON_PID" || return 0
	kill -TERM "$CARBON_PID" 2>/dev/null
	carbon_gone_
}

kill_carbon() {
	test -n "$CARBON_PID" || return 0
	kill -KILL "$CARBON_PID" 2>/dev/null
	carbon_gone_
}

carbon_points() {
	carbon_py fetch "$@"
}

start_relay() {
	RELAY_PORT=$(free_port) || return 1
	: >relay.log
	# not through carbon_py: $! must be python's pid, not a subshell's
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t24-carbon.py" relay $RELAY_PORT \
		"$1" "$PWD/relay.log" &
	RELAY_PID=$!
	wait_for "port_listening $RELAY_PORT"
}

t24_cleanup_() {
	if test -n "$RELAY_PID"; then
		kill "$RELAY_PID" 2>/dev/null
	fi
	if test -n "$CARBON_PID"; then
		kill -KILL "$CARBON_PID" 2>/dev/null # the test is over
	fi
	return 0
}
cleanup t24_cleanup_
trap 'tally_exit_=$?; t24_cleanup_; tally_stop_all_; tally_rm_all_; (exit $tally_exit_); die' EXIT
