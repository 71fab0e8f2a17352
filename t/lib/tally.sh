# t/lib/tally.sh - helpers for tally's sharness tests (POSIX sh)
#
# Source after sharness, from a test run by `make check`:
#
#	. /usr/share/sharness/sharness.sh
#	. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
#
# t/local.mk exports TALLYD (the build tree's tallyd), TALLY_PLUGIN_PATH
# (the build tree's plugin dirs), PYTHON3, PROMTOOL, PROMETHEUS, top_srcdir
# and top_builddir (absolute). Each test runs in its own trash directory
# under the build tree's t/, which is also $HOME: write configs, sockets and
# outputs there, never into the source tree (read-only under distcheck).
#
# Every tallyd started with start_tallyd is stopped when the test script
# exits, whether it passed, failed or died.

# Seconds wait_for and start_tallyd wait before giving up. Generous: a
# sanitizer build starts slower, make -j6 check beside two CPU hogs held a
# 0.2 s input 10 s late, and a test must fail, not hang, if the condition
# never comes true. Only a failing test waits this long.
: "${TALLY_WAIT_TIMEOUT:=30}"

# Defaults for running a test by hand from the build tree's t/ directory
# (make check sets all of these).
: "${TALLYD:=$SHARNESS_TEST_DIRECTORY/../core/tallyd}"
: "${PYTHON3:=/usr/bin/python3}"
if test -z "$TALLY_PLUGIN_PATH"; then
	tally_bt_=$SHARNESS_TEST_DIRECTORY/..
	TALLY_PLUGIN_PATH=$tally_bt_/plugins/input:$tally_bt_/plugins/filter
	TALLY_PLUGIN_PATH=$TALLY_PLUGIN_PATH:$tally_bt_/plugins/output
	TALLY_PLUGIN_PATH=$TALLY_PLUGIN_PATH:$tally_bt_/t/plugins
fi
export TALLYD TALLY_PLUGIN_PATH PYTHON3

# Under the sanitizers: leaks inside libraries tally does not own and
# cannot free (t/lsan.supp says which and why). Harmless otherwise.
LSAN_OPTIONS="suppressions=$SHARNESS_TEST_SRCDIR/lsan.supp:print_suppressions=0${LSAN_OPTIONS:+:$LSAN_OPTIONS}"
export LSAN_OPTIONS

# A --user tallyd keeps its runtime dir (sockets) in the test's trash
# directory, so parallel tests never share one; no job id or trace endpoint
# leaks in from the shell that runs the tests.
XDG_RUNTIME_DIR=$SHARNESS_TRASH_DIRECTORY
export XDG_RUNTIME_DIR
unset SLURM_JOB_ID FLUX_JOB_ID PBS_JOBID LSB_JOBID TALLY_TRACE_ENDPOINT

# Directory of the test's fixtures in the source tree.
FIXTURES=$SHARNESS_TEST_SRCDIR/fixtures

# tally_diag TEXT... / tally_diag <FILE - print "# " lines into the TAP
# stream (sharness's fd 5), so they land in the test's .log under make
# check even when the test passes.
tally_diag() {
	if test $# -gt 0; then
		printf '%s\n' "$*"
	else
		cat
	fi | sed 's/^/# /' >&5
}

# Without --verbose, sharness throws away what test bodies print. Keep it
# instead (stdout and stderr, appending so truncation is safe), and when a
# test fails print its last 60 lines as a diagnostic: test-suite.log then
# shows why (test_cmp's diff, tallyd's error) and not only the script.
# test_ok_ and test_failure_ are sharness 1.0's own, plus the output
# handling.
if test -z "$verbose"; then
	TALLY_OUT=$SHARNESS_TRASH_DIRECTORY/.test-output
	: >"$TALLY_OUT"
	exec 3>>"$TALLY_OUT" 4>>"$TALLY_OUT"

	test_ok_() {
		test_success=$(($test_success + 1))
		say_color "" "ok $test_count - $@"
		: >"$TALLY_OUT"
	}

	test_failure_() {
		test_failure=$(($test_failure + 1))
		say_color error "not ok $test_count - $1"
		shift
		echo "$@" | sed -e 's/^/#	/'
		if test -s "$TALLY_OUT"; then
			echo "# output of the failed test (last 60 lines):"
			tail -n 60 "$TALLY_OUT" | sed -e 's/^/#> /'
		fi
		: >"$TALLY_OUT"
		test "$immediate" = "" || { EXIT_OK=t; exit 1; }
	}
fi

# free_port - print a TCP port on 127.0.0.1 that was free a moment ago
# (the kernel's choice for port 0, so parallel tests rarely collide)
free_port() {
	"$PYTHON3" -c 'import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])'
}

# port_listening PORT - true if a TCP socket listens on PORT (IPv4 or IPv6)
# Reads /proc/net/tcp* rather than connecting, so the daemon sees nothing.
port_listening() {
	awk -v port="$(printf '%04X' "$1")" '
		$4 == "0A" && $2 ~ (":" port "$") { found = 1 }
		END { exit !found }' /proc/net/tcp /proc/net/tcp6 2>/dev/null
}

# udp_bound PORT - true if a UDP socket is bound to PORT (IPv4 or IPv6)
udp_bound() {
	awk -v port="$(printf '%04X' "$1")" '
		$2 ~ (":" port "$") { found = 1 }
		END { exit !found }' /proc/net/udp /proc/net/udp6 2>/dev/null
}

# wait_for COND [SECONDS] - poll the shell condition COND (eval'd) every
# 0.1 s until it is true; fail after SECONDS (default TALLY_WAIT_TIMEOUT)
# with a diagnostic naming COND.
#	wait_for "test -s out.txt" &&
#	wait_for "grep -q 'counter 3' out.txt" 5
wait_for() {
	tally_wf_n=$(( ${2:-$TALLY_WAIT_TIMEOUT} * 10 ))
	while ! eval "$1"; do
		tally_wf_n=$((tally_wf_n - 1))
		if test $tally_wf_n -le 0; then
			tally_diag "wait_for: timed out after" \
				"${2:-$TALLY_WAIT_TIMEOUT} s: $1"
			return 1
		fi
		sleep 0.1
	done
}

# tallyd ARGS... - run the build tree's tallyd in the foreground, with the
# build tree's plugins (TALLY_PLUGIN_PATH is exported)
tallyd() {
	"$TALLYD" "$@"
}

# Pids of the daemons start_tallyd started and that are not stopped yet.
TALLYD_PIDS=

# start_tallyd [--wait COND] [--log FILE] CONF [ARGS...] - start tallyd in
# the background (-c CONF --foreground ARGS), stderr and stdout to FILE
# (default tallyd.log, truncated), and wait until COND holds. COND defaults
# to the log saying the daemon started (TALLYD_READY_RE, a grep -E regex:
# keep global.log_level at "info" or lower for it).
# Sets TALLYD_PID and TALLYD_LOG. Fails, printing the log as a diagnostic,
# if tallyd exits or COND stays false for TALLY_WAIT_TIMEOUT seconds.
#	start_tallyd --wait "port_listening $port" prom.conf
TALLYD_READY_RE=${TALLYD_READY_RE:-"started: [0-9]+ instances?"}
start_tallyd() {
	tally_st_wait="grep -Eq \"\$TALLYD_READY_RE\" \"\$TALLYD_LOG\""
	TALLYD_LOG=tallyd.log
	while test $# -gt 0; do
		case $1 in
		--wait) tally_st_wait=$2; shift 2 ;;
		--log) TALLYD_LOG=$2; shift 2 ;;
		*) break ;;
		esac
	done
	if test $# -lt 1; then
		tally_diag "start_tallyd: no config given"
		return 1
	fi
	tally_st_conf=$1
	shift
	: >"$TALLYD_LOG"
	"$TALLYD" -c "$tally_st_conf" --foreground "$@" >>"$TALLYD_LOG" 2>&1 &
	TALLYD_PID=$!
	TALLYD_PIDS="$TALLYD_PIDS $TALLYD_PID"

	tally_st_n=$((TALLY_WAIT_TIMEOUT * 10))
	while ! eval "$tally_st_wait"; do
		if ! kill -0 "$TALLYD_PID" 2>/dev/null; then
			wait "$TALLYD_PID"
			tally_diag "start_tallyd: tallyd exited with status $?" \
				"before it was ready; its log:"
			tally_diag <"$TALLYD_LOG"
			tally_forget_pid_ "$TALLYD_PID"
			return 1
		fi
		tally_st_n=$((tally_st_n - 1))
		if test $tally_st_n -le 0; then
			tally_diag "start_tallyd: not ready after" \
				"$TALLY_WAIT_TIMEOUT s ($tally_st_wait); log:"
			tally_diag <"$TALLYD_LOG"
			stop_tallyd "$TALLYD_PID"
			return 1
		fi
		sleep 0.1
	done
}

# reload_tallyd - SIGHUP the last daemon started, and wait until its log
# ($TALLYD_LOG) says the new configuration is applied
reload_tallyd() {
	tally_rl_n=$(grep -c "configuration applied" "$TALLYD_LOG" || :) &&
	kill -HUP "$TALLYD_PID" &&
	wait_for "test \$(grep -c 'configuration applied' \"\$TALLYD_LOG\") -gt $tally_rl_n"
}

# interval_figures FILE - a capture file's interval records without their
# seconds= (a partial interval's length depends on when tallyd started and
# stopped)
interval_figures() {
	sed "s/ seconds=[^ ]*//" "$1"
}

tally_forget_pid_() {
	tally_fp_keep=
	for tally_fp_p in $TALLYD_PIDS; do
		test "$tally_fp_p" = "$1" || tally_fp_keep="$tally_fp_keep $tally_fp_p"
	done
	TALLYD_PIDS=$tally_fp_keep
}

# stop_tallyd [PID] - SIGTERM the daemon (default: the last one started),
# wait at most TALLY_WAIT_TIMEOUT seconds, then SIGKILL it. Returns its exit
# status (0 for a clean shutdown; 137 after SIGKILL) and sets
# TALLYD_STATUS to it.
stop_tallyd() {
	tally_sp_pid=${1:-$TALLYD_PID}
	tally_forget_pid_ "$tally_sp_pid"
	kill -TERM "$tally_sp_pid" 2>/dev/null
	tally_sp_n=$((TALLY_WAIT_TIMEOUT * 10))
	while kill -0 "$tally_sp_pid" 2>/dev/null; do
		tally_sp_n=$((tally_sp_n - 1))
		if test $tally_sp_n -le 0; then
			tally_diag "stop_tallyd: pid $tally_sp_pid still running" \
				"$TALLY_WAIT_TIMEOUT s after SIGTERM: SIGKILL"
			kill -KILL "$tally_sp_pid" 2>/dev/null
			break
		fi
		sleep 0.1
	done
	wait "$tally_sp_pid"
	TALLYD_STATUS=$?
	test "$TALLYD_STATUS" = 0 ||
		tally_diag "stop_tallyd: tallyd exited with status $TALLYD_STATUS"
	return "$TALLYD_STATUS"
}

# Stop every daemon still running. Runs from sharness's final cleanup (on
# success, before the trash directory is removed) and from the EXIT trap
# (failures and unexpected exits, where sharness skips its cleanup).
tally_stop_all_() {
	for tally_sa_p in $TALLYD_PIDS; do
		stop_tallyd "$tally_sa_p" >/dev/null 2>&1
	done
	return 0
}
cleanup tally_stop_all_

# tally_rm_at_exit PATH - remove PATH (a file or directory outside the
# trash directory, e.g. a socket directory under /tmp; no whitespace in
# it) when the test script exits, passed or failed, after the daemons are
# stopped. sharness's `cleanup` runs only when every test passed, so what
# it was to remove stayed behind after every failure.
TALLY_RM_AT_EXIT=
tally_rm_at_exit() {
	TALLY_RM_AT_EXIT="$TALLY_RM_AT_EXIT $1"
}

tally_rm_all_() {
	for tally_ra_p in $TALLY_RM_AT_EXIT; do
		rm -rf "$tally_ra_p"
	done
	TALLY_RM_AT_EXIT=
}

# sharness's own EXIT trap is 'die', which reads $?: keep it intact.
trap 'tally_exit_=$?; tally_stop_all_; tally_rm_all_; (exit $tally_exit_); die' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT

# tally_sock_dir NAME - print a directory to keep sockets in: ./NAME when
# its path leaves room for a socket name in sun_path (108 bytes), else a
# private one under /tmp removed at exit. Not created. Call it outside
# $(...), which would forget the removal:
#	tally_sock_dir xdg && RT=$TALLY_SOCK_DIR
tally_sock_dir() {
	if test ${#PWD} -le 60; then
		TALLY_SOCK_DIR=$PWD/$1
	else
		TALLY_SOCK_DIR=$(mktemp -d "/tmp/tally-$1.XXXXXX") || return 1
		tally_rm_at_exit "$TALLY_SOCK_DIR"
	fi
}

# require_cmd CMD [REASON] - skip the whole test script when CMD is not
# installed (call it before the first test). Under CI (CI=true), where
# every tool is installed, a missing CMD is a failure instead, so a
# missing install step cannot hide behind a skip.
require_cmd() {
	command -v "$1" >/dev/null 2>&1 && return 0
	if test "$CI" = true; then
		test_expect_success "$1 is installed (CI installs every test tool)" \
			"command -v '$1'"
		test_done
	fi
	skip_all="${2:-$1 not installed}"
	test_done
}

# prereq_cmd CMD PREREQ - set sharness prerequisite PREREQ when CMD is
# installed, so single tests can be marked with it.
prereq_cmd() {
	command -v "$1" >/dev/null 2>&1 && test_set_prereq "$2"
	return 0
}
