# t/t35-lib.sh - shared by the client tests t35xx (POSIX sh), sourced after
# sharness and t/lib/tally.sh:
#
#	RECV          the spec-based receiver, t/t35-trace-recv.py
#	host          this machine's hostname, as gethostname() gives it
#	start_recv ENDPOINT OUT [ARGS...]
#	              start the receiver in the background; returns once bound
#	wait_recv     wait for it to finish (it stops after --idle ms of quiet)
#	fields PID RANK
#	              the receiver's fields after parent= of an undropped
#	              message from the main thread of process PID
#
# Skips the whole script when $PYTHON3 has no zmq module (fails under CI,
# which installs python3-zmq).

RECV=$SHARNESS_TEST_SRCDIR/t35-trace-recv.py

if ! "$PYTHON3" -c 'import zmq' 2>/dev/null; then
	if test "$CI" = true; then
		test_expect_success 'python3-zmq is installed (CI)' \
			'"$PYTHON3" -c "import zmq"'
		test_done
	fi
	skip_all="$PYTHON3 has no zmq module (Debian: python3-zmq)"
	test_done
fi

start_recv() {
	rm -f ready
	"$PYTHON3" "$RECV" "$@" --ready ready &
	RECV_PID=$!
	wait_for "test -f ready"
}

wait_recv() {
	wait "$RECV_PID"
}

host=$(uname -n)

fields() {
	echo "pid=$1 tid=$1 rank=$2 host=$host dropped=0 ts=ok"
}
