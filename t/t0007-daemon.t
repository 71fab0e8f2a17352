#!/bin/sh
test_description='detached tallyd: exit status of the start, pid file'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

TALLY_RUNTIME_DIR=$PWD/run
export TALLY_RUNTIME_DIR

test_expect_success 'a daemon that cannot start fails its command, on the terminal' '
	cat >bad.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; }; };
	outputs = { o = { plugin = "capture"; path = "$PWD/no/such/dir/x"; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	test_expect_code 1 tallyd -c bad.conf 2>err &&
	grep "bad.conf:2: error: capture\[o\]: init failed: No such file or directory" err &&
	! test -e run/tallyd.pid
'

test_expect_success 'a daemon that starts: exit 0 once up, pid file, SIGTERM stops it' '
	cat >good.conf <<-EOF &&
	global = { log = "syslog"; };
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	outputs = { o = { plugin = "capture"; path = "$PWD/good.out"; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	tallyd -c good.conf &&
	pid=$(cat run/tallyd.pid) &&
	kill -0 $pid &&
	wait_for "test -s good.out" &&
	kill -TERM $pid &&
	wait_for "! kill -0 $pid 2>/dev/null" &&
	! test -e run/tallyd.pid
'

# A detached daemon works from /: the relative path it was given must
# still name its configuration when SIGHUP reads it again.
test_expect_success 'a daemon started with a relative -c reloads on SIGHUP' '
	mkdir -p rel &&
	cat >rel/r.conf <<-EOF &&
	global = { log = "syslog"; };
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	outputs = { o = { plugin = "capture"; path = "$PWD/rel.out"; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	(cd rel && tallyd -c r.conf) &&
	pid=$(cat run/tallyd.pid) &&
	wait_for "test -s rel.out" &&
	sed -i "s/plugin = \"counter\";/plugin = \"counter\"; count = 2;/" \
		rel/r.conf &&
	kill -HUP $pid &&
	wait_for "grep -q \"i=.1.\" rel.out" &&
	kill -TERM $pid &&
	wait_for "! kill -0 $pid 2>/dev/null"
'

# A detached daemon logs to syslog; without a syslog daemon (a container,
# a minimal node) every line would go nowhere, silently. Where this host
# has one, a private mount namespace hides it behind /dev/null.
if ! test -e /dev/log; then
	test_set_prereq NOSYSLOG
	hide_syslog=
elif unshare -rm true 2>/dev/null; then
	test_set_prereq NOSYSLOG
	hide_syslog="unshare -rm sh -c 'mount --bind /dev/null /dev/log && exec \"\$@\"' sh"
fi

test_expect_success NOSYSLOG 'a detached daemon without a syslog daemon logs to stderr, and says so' '
	cat >nolog.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	outputs = { o = { plugin = "capture"; path = "$PWD/nolog.out"; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	eval "$hide_syslog \"\$TALLYD\" -c nolog.conf" 2>nolog.err &&
	pid=$(cat run/tallyd.pid) &&
	grep "^tallyd: warning: no syslog daemon at /dev/log: logging to standard error instead$" nolog.err &&
	wait_for "test -s nolog.out" &&
	kill -TERM $pid &&
	wait_for "! kill -0 $pid 2>/dev/null" &&
	grep "^tallyd: info: SIGTERM: stopping$" nolog.err &&
	grep "^tallyd: info: stopped$" nolog.err
'

test_done
