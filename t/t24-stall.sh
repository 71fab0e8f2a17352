# t/t24-stall.sh - the fake carbon that never reads its first connection
# (t24-carbon.py stall), for t2404 and t2405; sourced after t/lib/tally.sh.
# Needs python3 only, not carbon.
#
#	start_fake
#		start it on a free port ($port), its lines in fake.log;
#		STALL_PID is python's pid, killed when the test ends

STALL_PID=

start_fake() {
	port=$(free_port) || return 1
	: >fake.log
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t24-carbon.py" stall $port \
		"$PWD/fake.log" &
	STALL_PID=$!
	wait_for "port_listening $port"
}

stall_cleanup_() {
	test -z "$STALL_PID" || kill "$STALL_PID" 2>/dev/null
	return 0
}
cleanup stall_cleanup_
trap 'tally_exit_=$?; stall_cleanup_; tally_stop_all_; tally_rm_all_; (exit $tally_exit_); die' EXIT
