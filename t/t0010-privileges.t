#!/bin/sh
test_description='system collector: global.user and global.group, pid file lock'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

TALLY_RUNTIME_DIR=$PWD/run
export TALLY_RUNTIME_DIR
REAL_TALLYD=$TALLYD

# Users and groups of the test's own, in a private mount namespace: a
# copy of /etc/passwd and /etc/group with them added is bound over the
# real ones for tallyd alone (the host's files are never touched).
if test "$(id -u)" = 0 && unshare -m true 2>/dev/null; then
	test_set_prereq ROOTNS
fi

# ns-tallyd: tallyd with ./passwd and ./group as /etc/passwd and /etc/group
cat >ns-tallyd <<EOF
#!/bin/sh
exec unshare -m --propagation private sh -c '
	mount --bind "\$0/passwd" /etc/passwd &&
	mount --bind "\$0/group" /etc/group && exec "\$@"' \
	"$PWD" "$REAL_TALLYD" "\$@"
EOF
chmod +x ns-tallyd || exit 1

test_expect_success ROOTNS 'setup: users tallyu (4242, also in tallyg) and group tallys' '
	cp /etc/passwd passwd && cp /etc/group group &&
	echo "tallyu:x:4242:4242::/nonexistent:/usr/sbin/nologin" >>passwd &&
	echo "tallyu:x:4242:" >>group &&
	echo "tallyg:x:4243:tallyu" >>group &&
	echo "tallys:x:4244:" >>group &&
	TALLYD=$PWD/ns-tallyd &&
	port=$(free_port) &&
	cat >drop.conf <<-EOF
	global = { user = "tallyu"; log_level = "info"; };
	inputs = {
		a = { plugin = "counter"; interval = 0.1; };
		tr = { plugin = "zmq_trace"; endpoint = "ipc://$PWD/run/trace.sock";
		       group = "tallys"; };
	};
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["a", "tr"]; to = ["prom"]; }; };
	EOF
'

# /proc/PID/status line NAME's ids, tab-separated as the kernel writes them
ids() {
	sed -n "s/^$2:[[:space:]]*//p" /proc/$1/status | tr -s "[:space:]" " " |
		sed "s/ *$//"
}

test_expect_success ROOTNS 'global.user: the user and its groups once every socket is bound' '
	start_tallyd --log drop.log drop.conf --pid-file=run/tallyd.pid &&
	test "$(ids $TALLYD_PID Uid)" = "4242 4242 4242 4242" &&
	test "$(ids $TALLYD_PID Gid)" = "4242 4242 4242 4242" &&
	test "$(ids $TALLYD_PID Groups)" = "4242 4243 4244" &&
	grep -n "listening on ipc://$PWD/run/trace.sock" drop.log >l1 &&
	grep -n "serving /metrics on 127.0.0.1:$port" drop.log >l2 &&
	grep -n "now running as user tallyu (uid 4242), group tallyu (gid 4242), 3 supplementary groups (with the groups of its socket files" drop.log >l3 &&
	test ${l1%%:*} -lt ${l3%%:*} && test ${l2%%:*} -lt ${l3%%:*} &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics | grep -q ^test_counter_value"
'

test_expect_success ROOTNS 'its files belong to the user; the trace socket to the group that may send' '
	test "$(stat -c "%u %g %a" run/trace.sock)" = "4242 4244 660" &&
	test "$(stat -c "%u %g" run/trace.sock.lock)" = "4242 4242" &&
	test "$(stat -c "%u %g" run/tallyd.pid)" = "4242 4242" &&
	test "$(stat -c "%u %g" run)" = "4242 4242" &&
	test "$(cat run/tallyd.pid)" = $TALLYD_PID
'

test_expect_success ROOTNS 'a reload as that user binds a new trace socket and removes the old one' '
	sed -i "s|run/trace.sock\"|run/trace2.sock\"|" drop.conf &&
	kill -HUP $TALLYD_PID &&
	wait_for "grep -q \"listening on ipc://$PWD/run/trace2.sock\" drop.log" &&
	test -S run/trace2.sock &&
	wait_for "! test -e run/trace.sock" &&
	test "$(stat -c "%u %g %a" run/trace2.sock)" = "4242 4244 660"
'

test_expect_success ROOTNS 'a reload that changes global.user says it takes effect at the next start' '
	sed -i "s/user = \"tallyu\"/user = \"nobody\"/" drop.conf &&
	kill -HUP $TALLYD_PID &&
	wait_for "grep -q \"reload: global.user and global.group take effect at the next start only: still running as uid 4242, gid 4242\" drop.log" &&
	sed -i "s/user = \"nobody\"/user = \"tallyu\"/" drop.conf
'

test_expect_success ROOTNS 'stopped: socket and pid file gone; a new start takes over the user'"'"'s lock files' '
	stop_tallyd &&
	! test -e run/trace2.sock &&
	! test -e run/tallyd.pid &&
	test "$(stat -c %u run/trace2.sock.lock)" = 4242 &&
	start_tallyd --log drop2.log drop.conf &&
	test -S run/trace2.sock &&
	test "$(ids $TALLYD_PID Uid)" = "4242 4242 4242 4242" &&
	stop_tallyd
'

test_expect_success ROOTNS 'a pid file global.user cannot remove: emptied, with a warning naming it' '
	mkdir -p rootdir && chmod 755 rootdir &&
	start_tallyd --log pd.log drop.conf --pid-file="$PWD/rootdir/t.pid" &&
	test "$(cat rootdir/t.pid)" = $TALLYD_PID &&
	stop_tallyd &&
	grep "cannot remove the pid file $PWD/rootdir/t.pid: Permission denied (emptied; give --pid-file a directory global.user may write" pd.log &&
	test -f rootdir/t.pid && ! test -s rootdir/t.pid
'

test_expect_success ROOTNS 'a lock file global.user left: the message says how to fix it' '
	sed -e "s/user = \"tallyu\"; //" drop.conf >asroot.conf &&
	test "$(stat -c %u run/trace2.sock.lock)" = 4242 &&
	test_expect_code 1 "$TALLYD" -f -c asroot.conf 2>asroot.err &&
	grep "trace2.sock.lock belongs to uid 4242, not to this collector (lock files stay after exit: one that ran with global.user left it?): not using the path (when no tallyd uses it, remove $PWD/run/trace2.sock.lock" asroot.err
'

test_expect_success ROOTNS 'global.group alone: that group and the socket'"'"'s, the user stays' '
	sed -e "s/user = \"tallyu\"/group = \"tallyg\"/" \
		-e "s|run/trace2.sock|run/trace3.sock|" drop.conf >grp.conf &&
	start_tallyd --log grp.log grp.conf &&
	test "$(ids $TALLYD_PID Uid)" = "0 0 0 0" &&
	test "$(ids $TALLYD_PID Gid)" = "4243 4243 4243 4243" &&
	test "$(ids $TALLYD_PID Groups)" = "4243 4244" &&
	test "$(stat -c "%u %g" run/trace3.sock)" = "0 4244" &&
	stop_tallyd
'

test_expect_success ROOTNS 'a user or group that does not exist: an error with file:line' '
	sed "s/user = \"tallyu\"/user = \"nosuchuser\"; group = \"nosuchgroup\"/" \
		drop.conf >bad.conf &&
	test_expect_code 1 "$TALLYD" --check-config -c bad.conf 2>bad.err &&
	grep "bad.conf:1: error: global.user \"nosuchuser\": no such user" bad.err &&
	grep "bad.conf:1: error: global.group \"nosuchgroup\": no such group" bad.err &&
	test_expect_code 1 "$TALLYD" -f -c bad.conf 2>bad2.err &&
	grep "no such user" bad2.err
'

test_expect_success ROOTNS 'not root: refused with a clear error, nothing started' '
	sed -e "s/user = \"tallyu\"/user = \"nobody\"/" \
		-e "s/group = \"tallys\";//" drop.conf >nr.conf &&
	chmod 755 . && mkdir -p nrrun && chown nobody nrrun &&
	TALLY_RUNTIME_DIR=$PWD/nrrun test_expect_code 1 \
		setpriv --reuid nobody --regid nogroup --clear-groups \
		"$REAL_TALLYD" -f -c nr.conf 2>nr.err &&
	grep "global.user is set, but tallyd runs as uid $(id -u nobody): only root can change its user or group" nr.err &&
	! grep "started:" nr.err &&
	! test -e nrrun/trace2.sock
'

cat >pid.conf <<EOF
inputs = { a = { plugin = "counter"; interval = 0.1; }; };
outputs = { o = { plugin = "capture"; path = "pid.out"; }; };
pipelines = { p = { from = ["a"]; to = ["o"]; }; };
EOF

test_expect_success 'a second collector with the same pid file refuses, naming the first' '
	start_tallyd --log first.log pid.conf --pid-file=one.pid &&
	test "$(cat one.pid)" = $TALLYD_PID &&
	test_expect_code 1 tallyd -f -c pid.conf --pid-file=one.pid 2>second.err &&
	grep "another system collector runs (tallyd pid $TALLYD_PID holds $PWD/one.pid): not starting a second one" second.err &&
	! grep "started:" second.err &&
	test "$(cat one.pid)" = $TALLYD_PID &&
	stop_tallyd &&
	! test -e one.pid
'

test_expect_success 'a detached daemon refuses to start twice; its parent exits 1' '
	tallyd -c pid.conf &&
	pid=$(cat run/tallyd.pid) &&
	test_expect_code 1 tallyd -c pid.conf 2>det.err &&
	grep "tallyd pid $pid holds $PWD/run/tallyd.pid" det.err &&
	test "$(cat run/tallyd.pid)" = $pid &&
	kill -TERM $pid &&
	wait_for "! kill -0 $pid 2>/dev/null"
'

test_expect_success 'a stale pid file (its tallyd died) is taken over' '
	sh -c "exit 0" & dead=$! && wait $dead &&
	echo $dead >stale.pid &&
	start_tallyd --log stale.log pid.conf --pid-file=stale.pid &&
	test "$(cat stale.pid)" = $TALLYD_PID &&
	grep "pid file $PWD/stale.pid was left by tallyd pid $dead, which is gone: taken over" stale.log &&
	stop_tallyd
'

test_expect_success 'a pid file that cannot be created: a clear error, exit 1' '
	test_expect_code 1 tallyd -f -c pid.conf --pid-file=/dev/null/t.pid 2>pf.err &&
	grep "cannot create the pid file /dev/null/t.pid: Not a directory" pf.err &&
	! grep "started:" pf.err
'

test_expect_success 'a second start that fails leaves the first one'"'"'s listen file' '
	pa=$(free_port) && pb=$(free_port) &&
	for p in $pa $pb; do
		cat >ls$p.conf <<-EOF || return 1
		inputs = { tr = { plugin = "zmq_trace";
				  endpoint = "ipc://$PWD/run/lst.sock"; }; };
		outputs = { prom = { plugin = "prometheus";
				     listen = "127.0.0.1:$p"; }; };
		pipelines = { p = { from = ["tr"]; to = ["prom"]; }; };
		EOF
	done &&
	start_tallyd --log lsa.log --wait "port_listening $pa" ls$pa.conf \
		--pid-file=run/tallyd.pid &&
	wait_for "grep -q \"^prom 127.0.0.1:$pa\\\$\" run/listen" &&
	cp run/listen listen.before &&
	test_expect_code 1 tallyd -f -c ls$pb.conf 2>lsb.err &&
	grep "in use by another tallyd (.*/run/lst.sock.lock is locked)" lsb.err &&
	grep "leaves its listen file alone" lsb.err &&
	test_cmp listen.before run/listen &&
	stop_tallyd &&
	! test -e run/listen
'

test_done
