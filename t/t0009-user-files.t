#!/bin/sh
test_description='user mode: output directory, final page, SIGUSR1, reopen, port rule, default configuration'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd curl

# the runtime dir holds a socket: keep its path short for sun_path
tally_sock_dir xdg || exit 1
RT=$TALLY_SOCK_DIR
XDG_RUNTIME_DIR=$RT
export XDG_RUNTIME_DIR
unset XDG_CONFIG_HOME

# value NAME{LABELS} FILE - the value of one sample line of a page
value() {
	grep -F "$1 " "$2" | sed "s/.* //"
}

# page CONF OPTIONS - a counter every 0.05 s -> prometheus on the port the
# shipped conf.d names (9464) and a capture file
page_conf() {
	cat >"$1" <<-EOF
	global = { $2 };
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	outputs = {
		prom = { plugin = "prometheus"; listen = "127.0.0.1:9464"; $3 };
		cap = { plugin = "capture"; path = "$PWD/cap.out"; };
	};
	pipelines = { p = { from = ["a"]; to = ["prom", "cap"]; }; };
	EOF
}

test_expect_success 'the command ends: the final page is in ./tally-PID, and the exit message says where' '
	page_conf p.conf &&
	tallyd --user -c p.conf -- sh -c "echo \$PPID >tpid; sleep 0.3" \
		2>p.err &&
	dir=$PWD/tally-$(cat tpid) &&
	test -s "$dir/metrics.prom" &&
	last=$(sed -n "s/^gauge test_counter_value{i=\"0\"} //p" cap.out |
		tail -n1) &&
	test "$last" -ge 2 &&
	test "$(value "test_counter_value{i=\"0\"}" "$dir/metrics.prom")" = "$last" &&
	grep "prometheus\[prom\]: final metrics page written to $dir/metrics.prom$" p.err &&
	grep "stopped: the command exited with status 0; the job.s final files (metrics page, ...) are in $dir$" p.err
'

# A flat and a full view of one trace are two prometheus outputs: each
# keeps its final page (one metrics.prom overwrote the other).
test_expect_success 'two prometheus outputs: metrics-INSTANCE.prom each, an explicit final_page as set' '
	cat >two.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	outputs = {
		p1 = { plugin = "prometheus"; listen = "127.0.0.1:0"; };
		p2 = { plugin = "prometheus"; listen = "127.0.0.1:0"; };
		p3 = { plugin = "prometheus"; listen = "127.0.0.1:0";
		       final_page = "mine.prom"; };
	};
	pipelines = { p = { from = ["a"]; to = ["p1", "p2", "p3"]; }; };
	EOF
	tallyd --user -c two.conf -- sh -c "echo \$PPID >tpid2" 2>two.err &&
	dir=$PWD/tally-$(cat tpid2) &&
	ls "$dir" >files &&
	printf "%s\n" metrics-p1.prom metrics-p2.prom mine.prom >expect &&
	test_cmp expect files &&
	grep "prometheus\[p1\]: final metrics page written to $dir/metrics-p1.prom$" two.err
'

prereq_cmd promtool PROMTOOL
test_expect_success PROMTOOL 'the final page is promtool-clean' '
	sed "s/plugin = \"counter\";/&  name = \"job_steps\";/" p.conf >pt.conf &&
	SLURM_JOB_ID=pt tallyd --user -c pt.conf -- true &&
	grep "^job_steps{i=\"0\",jobid=\"pt\"} " tally-pt/metrics.prom &&
	promtool check metrics <tally-pt/metrics.prom
'

test_expect_success 'in a job: ./tally-JOBID, from the directory tallyd started in' '
	mkdir -p sub &&
	(cd sub && SLURM_JOB_ID=88 tallyd --user -c ../p.conf -- true) &&
	value "test_counter_value{i=\"0\",jobid=\"88\"}" \
		sub/tally-88/metrics.prom >v &&
	test "$(cat v)" -ge 1
'

test_expect_success 'global.output_dir and an absolute final_page' '
	page_conf od.conf "output_dir = \"results\";" &&
	tallyd --user -c od.conf -- true &&
	test -s results/metrics.prom &&
	page_conf abs.conf "" "final_page = \"$PWD/abs.prom\";" &&
	tallyd --user -c abs.conf -- sh -c "echo \$PPID >tpid" &&
	test -s abs.prom &&
	! test -e tally-$(cat tpid)
'

test_expect_success 'final_page = "": no page and no directory' '
	page_conf none.conf "" "final_page = \"\";" &&
	tallyd --user -c none.conf -- sh -c "echo \$PPID >tpid" 2>none.err &&
	! test -e tally-$(cat tpid) &&
	! grep "final files" none.err
'

test_expect_success 'an output directory that cannot be made costs the command nothing' '
	page_conf ro.conf "output_dir = \"/proc/no/such\";" &&
	test_expect_code 6 tallyd --user -c ro.conf -- sh -c "exit 6" 2>ro.err &&
	grep "prometheus\[prom\]: cannot create the output directory /proc/no/such" ro.err
'

test_expect_success 'the final page has the inputs'"'"' figures of the command'"'"'s end, self-metrics included' '
	cat >last.conf <<-EOF &&
	global = { interval = 3600.0; output_dir = "last"; };
	inputs = { a = { plugin = "counter"; }; s = { plugin = "self"; }; };
	outputs = {
		prom = { plugin = "prometheus"; listen = "127.0.0.1:0"; };
		cap = { plugin = "capture"; path = "$PWD/last.out"; };
	};
	pipelines = { p = { from = ["a", "s"]; to = ["prom", "cap"]; }; };
	EOF
	# the command ends after the first read, an hour before the second
	tallyd --user -c last.conf -- sh -c "
		n=0; until grep -q test_counter_value last.out; do
			n=\$((n + 1)); test \$n -lt 200 || exit 1; sleep 0.05
		done" &&
	value "test_counter_value{i=\"0\"}" last/metrics.prom >v &&
	echo 2 >expect && test_cmp expect v &&
	grep "^tally_reads_total{instance=\"a\",kind=\"input\",plugin=\"counter\"} 2$" last/metrics.prom &&
	grep "^tally_records_out_total{instance=\"a\",kind=\"input\",plugin=\"counter\"} 2$" last/metrics.prom
'

test_expect_success 'a final page that cannot be written: the exit message says so, not where the files are' '
	page_conf fail.conf "output_dir = \"failout\";" &&
	mkdir -p failout/metrics.prom &&
	test_expect_code 5 tallyd --user -c fail.conf -- sh -c "exit 5" \
		2>fail.err &&
	grep "prometheus\[prom\]: cannot write $PWD/failout/metrics.prom: Is a directory" fail.err &&
	grep "stopped: the command exited with status 5; 1 output could not write the job.s final files into $PWD/failout (see above)" fail.err &&
	! grep "final files (metrics page, ...) are in" fail.err
'

test_expect_success '--check-config: an output_dir that cannot be created is an error' '
	: >afile &&
	page_conf odf.conf "output_dir = \"afile/sub/dir\";" &&
	test_expect_code 1 tallyd --user --check-config -c odf.conf 2>odf.err &&
	grep "odf.conf: error: global.output_dir $PWD/afile/sub/dir cannot be created: $PWD/afile is not a directory" odf.err &&
	grep "odf.conf: 1 error, 0 warnings" odf.err &&
	page_conf odok.conf "output_dir = \"new/sub/dir\";" &&
	tallyd --user --check-config -c odok.conf &&
	! test -e new
'

test_expect_success 'every output gets the end of the command, after the last records' '
	cat >end.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	outputs = { cap = { plugin = "capture"; path = "end.out";
			    events = true; end_file = "end.txt"; }; };
	pipelines = { p = { from = ["a"]; to = ["cap"]; }; };
	EOF
	tallyd --user -c end.conf -- sh -c "echo \$PPID >tpid; sleep 0.2" &&
	n=$(grep -c "^gauge" end.out) &&
	test "$n" -ge 2 &&
	tail -n1 end.out >got &&
	echo "end command $n" >expect &&
	test_cmp expect got &&
	test_cmp expect tally-$(cat tpid)/end.txt
'

test_expect_success 'SIGUSR1 to a collector without a command: the files, now; it goes on' '
	cat >usr1.conf <<-EOF &&
	global = { output_dir = "$PWD/snap"; log_level = "info"; };
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	outputs = {
		prom = { plugin = "prometheus"; listen = "127.0.0.1:9464"; };
		cap = { plugin = "capture"; path = "usr1.out"; events = true; };
	};
	pipelines = { p = { from = ["a"]; to = ["prom", "cap"]; }; };
	EOF
	start_tallyd usr1.conf --user &&
	wait_for "grep -q \"^gauge test_counter_value{i=.0.} 3$\" usr1.out" &&
	kill -USR1 $TALLYD_PID &&
	wait_for "grep -q \"^end request\" usr1.out" &&
	n=$(sed -n "s/^end request //p" usr1.out) &&
	v=$(value "test_counter_value{i=\"0\"}" snap/metrics.prom) &&
	# both saw every batch queued before the request, and no more
	test "$v" -ge 3 && test "$v" = "$n" &&
	grep "SIGUSR1: outputs write their files into $PWD/snap" tallyd.log &&
	grep "prometheus\[prom\]: current metrics page written to $PWD/snap/metrics.prom" tallyd.log &&
	m=$(grep -c "^gauge" usr1.out) &&
	wait_for "test \$(grep -c \"^gauge\" usr1.out) -gt $m" &&
	stop_tallyd
'

test_expect_success 'SIGHUP: a kept output reopens its file (logrotate); a new one does not' '
	cat >rot.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { a = { plugin = "counter"; interval = 0.05; }; };
	outputs = { cap = { plugin = "capture"; path = "rot.out";
			    events = true; }; };
	pipelines = { p = { from = ["a"]; to = ["cap"]; }; };
	EOF
	start_tallyd rot.conf &&
	wait_for "test -s rot.out" &&
	mv rot.out rot.out.1 &&
	kill -HUP $TALLYD_PID &&
	wait_for "test \$(wc -l <rot.out) -ge 2" &&
	head -n1 rot.out >first &&
	echo reopen >expect && test_cmp expect first &&
	grep "configuration applied: 2 instances (0 new), 1 pipeline" tallyd.log &&
	n=$(wc -l <rot.out.1) &&
	wait_for "test \$(grep -c ^gauge rot.out) -ge 3" &&
	test $(wc -l <rot.out.1) = $n &&
	# values go on from where they were: the counter was kept too
	a=$(sed -n "s/^gauge test_counter_value{i=\"0\"} //p" rot.out.1 | tail -n1) &&
	b=$(sed -n "2s/^gauge test_counter_value{i=\"0\"} //p" rot.out) &&
	test "$b" = $((a + 1)) &&
	# a refused reload: every instance stays, and reopens
	mv rot.out rot.out.2 &&
	echo "outputs = {" >>rot.conf &&
	kill -HUP $TALLYD_PID &&
	wait_for "test -s rot.out" &&
	head -n1 rot.out >first &&
	test_cmp expect first &&
	# a changed output is new: its file starts afresh, no reopen
	sed -i -e "\$d" -e "s/events = true;/events = true; source = true;/" \
		rot.conf &&
	kill -HUP $TALLYD_PID &&
	wait_for "grep -q \"^a: gauge\" rot.out" &&
	! grep -q reopen rot.out &&
	stop_tallyd
'

# The port rule: a user collector's listeners never take the system
# collector's port, nor another job's.
test_expect_success 'the system collector on 9464-style port P, two jobs configured for P: three ports, listed in RUNDIR/listen' '
	port=$(free_port) &&
	sed "s/9464/$port/" p.conf >sys.conf &&
	TALLY_RUNTIME_DIR=$PWD/sysrun &&
	export TALLY_RUNTIME_DIR &&
	start_tallyd --wait "port_listening $port" sys.conf &&
	unset TALLY_RUNTIME_DIR &&
	sed "s/9464/$port/; s|cap.out|cap2.out|" p.conf >job.conf &&
	pids= &&
	for j in 1 2; do
		SLURM_JOB_ID=$j "$TALLYD" --user -c job.conf -- sh -c "
			cp \"$RT/tally/job-$j/listen\" listen.$j &&
			addr=\$(sed -n \"s/^prom //p\" listen.$j) &&
			curl -sf http://\$addr/metrics >page.$j &&
			touch done.$j && while test -e done.$j; do sleep 0.05; done
		" 2>job.$j.err &
		pids="$pids $!"
	done &&
	wait_for "test -e done.1 && test -e done.2" &&
	p1=$(sed -n "s/^prom 127.0.0.1://p" listen.1) &&
	p2=$(sed -n "s/^prom 127.0.0.1://p" listen.2) &&
	test -n "$p1" && test -n "$p2" &&
	test "$p1" != "$p2" && test "$p1" != "$port" && test "$p2" != "$port" &&
	test $(wc -l <listen.1) = 1 &&
	grep -F "test_counter_value{i=\"0\",jobid=\"1\"}" page.1 &&
	grep -F "test_counter_value{i=\"0\",jobid=\"2\"}" page.2 &&
	rm done.1 done.2 &&
	wait $pids &&
	grep "prometheus\[prom\]: port $port: a user collector listens on a port the kernel chooses" job.1.err &&
	grep "the address is in $RT/tally/job-1/listen" job.1.err &&
	grep "prometheus\[prom\]: serving /metrics on 127.0.0.1:$p1$" job.1.err &&
	! test -e "$RT/tally/job-1/listen" &&
	port_listening $port &&
	stop_tallyd
'

test_expect_success 'global.user_ports = "configured" binds the configured port' '
	port=$(free_port) &&
	page_conf cfg.conf "user_ports = \"configured\";" &&
	sed -i "s/9464/$port/" cfg.conf &&
	tallyd --user -c cfg.conf -- sh -c "cp \"$RT/tally/cmd-\$PPID/listen\" listen.cfg" &&
	echo "prom 127.0.0.1:$port" >expect &&
	test_cmp expect listen.cfg
'

# Where a user collector's configuration comes from without -c. The
# installed SYSCONFDIR would come first: skip when this machine has one.
sysconfdir=$(tallyd --help | sed -n "s|^ *\(/.*\)/user.conf, else$|\1|p")
test -n "$sysconfdir" && ! test -e "$sysconfdir/user.conf" &&
	! test -e "$sysconfdir/conf.d" && test_set_prereq NOINSTALL

test_expect_success NOINSTALL 'no configuration anywhere: the built-in one, the shipped conf.d, written to RUNDIR/conf.d' '
	HOME=$PWD/home tallyd --user -- sh -c "
		addr=\$(sed -n \"s/^prom //p\" \"$RT/tally/cmd-\$PPID/listen\") &&
		curl -sf http://\$addr/metrics >builtin.page
	" 2>builtin.err &&
	grep "running the built-in configuration (the shipped conf.d), written to $RT/tally/conf.d" builtin.err &&
	for f in "$top_srcdir"/conf.d/*.conf "$top_srcdir"/conf.d/user/*.conf; do
		u=$top_srcdir/conf.d/user/$(basename "$f") &&
		if test -e "$u"; then f=$u; fi &&
		test_cmp "$f" "$RT/tally/conf.d/$(basename "$f")" || return 1
	done &&
	for f in "$top_srcdir"/conf.d/*.conf "$top_srcdir"/conf.d/user/*.conf; do
		basename "$f"
	done | sort -u >builtin.names &&
	ls "$RT/tally/conf.d" >builtin.got &&
	test_cmp builtin.names builtin.got &&
	grep "^node_load1 " builtin.page &&
	grep "^tally_records_in_total{instance=\"prom\"" builtin.page
'

test_expect_success NOINSTALL 'RUNDIR/conf.d is written once: a user'"'"'s edits and added files stay' '
	first=$(ls "$RT/tally/conf.d" | head -n 1) &&
	echo "# my edit" >>"$RT/tally/conf.d/$first" &&
	cp "$RT/tally/conf.d/$first" edited.expect &&
	echo "# mine" >"$RT/tally/conf.d/zz-mine.conf" &&
	HOME=$PWD/home tallyd --user -- true 2>again.err &&
	grep "running $RT/tally/conf.d, written by an earlier start and kept as it is" again.err &&
	! grep "running the built-in configuration" again.err &&
	test_cmp edited.expect "$RT/tally/conf.d/$first" &&
	echo "# mine" >mine.expect &&
	test_cmp mine.expect "$RT/tally/conf.d/zz-mine.conf" &&
	! ls "$RT/tally" | grep "conf.d.tmp" &&
	rm "$RT/tally/conf.d/zz-mine.conf" &&
	sed -i "/^# my edit\$/d" "$RT/tally/conf.d/$first"
'

# Omnistat's tracer sends to this fixed path: the built-in configuration
# takes it when it is free, and leaves it alone (one line) when not (a
# collector elsewhere on this machine may hold it: either is checked).
test_expect_success NOINSTALL 'the built-in configuration takes Omnistat'"'"'s path when it is free' '
	o=/tmp/omnistat_trace &&
	HOME=$PWD/home tallyd --user -- sh -c "ls -ln $o >omni.ls || :" \
		2>omni.err &&
	if grep "zmq_trace\[traces\]: listening on ipc://$o$" omni.err; then
		test "$(cut -c1-10 omni.ls)" = "srw-------" &&
		test "$(awk "{print \$3}" omni.ls)" = "$(id -u)"
	else
		grep "zmq_trace\[traces\]: omnistat_endpoint ipc://$o: .*; receiving on ipc://.* only" omni.err
	fi
'

test_expect_success NOINSTALL '--check-config --user without a configuration checks the built-in one' '
	HOME=$PWD/home tallyd --user --check-config 2>check.err &&
	grep "0 errors, 0 warnings" check.err
'

test_expect_success 'the user configuration comes first' '
	mkdir -p home/.config/tally &&
	cat >home/.config/tally/tally.conf <<-EOF &&
	inputs = { a = { plugin = "counter"; }; };
	outputs = { o = { plugin = "capture"; path = "$PWD/mine.out"; }; };
	pipelines = { p = { from = ["a"]; to = ["o"]; }; };
	EOF
	HOME=$PWD/home tallyd --user -- true &&
	echo "gauge test_counter_value{i=\"0\"} 1" >expect &&
	head -n1 mine.out >got &&
	test_cmp expect got &&
	XDG_CONFIG_HOME=$PWD/home/.config tallyd --user --check-config
'

test_done
