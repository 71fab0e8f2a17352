#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='jobs input, system collector: the jobs of fixture cgroup trees

The tests write cgroup trees as Slurm (cgroup v2 and v1) and Flux (sdexec
units) make them, with odd entries among them (git keeps no empty
directory, so nothing of it is in t/fixtures). The prometheus page must
hold exactly one tally_job_info (and, with omnistat = true, rmsjob_info)
per job, a job whose directory goes must disappear from it, and every odd
entry must be dropped, counted and logged once.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd curl

# Owners: as root the tests give directories to daemon (uid 1) and run a
# process as nobody (65534); otherwise everything is the test user's.
if test "$(id -u)" = 0 && command -v setpriv >/dev/null; then
	test_set_prereq ROOT
fi

# page - scrape tallyd into page.txt; the job series, sorted, in jobs.txt
page() {
	curl -sf "http://127.0.0.1:$port/metrics" >page.txt &&
	grep "^tally_job_info\|^rmsjob_info" page.txt | sort >jobs.txt
}

# self_value NAME REASON - NAME{instance="jobs"[,reason=REASON]} or 0
self_value() {
	awk -v n="$1{" -v r="reason=\"$2\"" '
		index($0, n) == 1 && index($0, "instance=\"jobs\"") &&
		(r == "reason=\"\"" || index($0, r)) { print $2; found = 1 }
		END { if (!found) print 0 }' page.txt
}

# drops_per_read REASON N - the jobs input has read at least twice, and
# dropped exactly N entries for REASON in each read (both counters come
# from one page: retried until a page falls between two reads)
drops_per_read() {
	page &&
	reads=$(self_value tally_reads_total "") &&
	drops=$(self_value tally_dropped_total "$1") &&
	test "$reads" -ge 2 &&
	test "$drops" = $(($2 * reads))
}

V2=cg/system.slice/slurmstepd.scope

test_expect_success 'fixture: Slurm v2 and v1 jobs, a Flux job, odd entries' '
	mkdir -p $V2/system $V2/job_101/step_batch/user/task_0 \
		$V2/job_101/step_extern $V2/job_101/step_0 \
		$V2/job_101/step_1/user/task_0 \
		$V2/job_abc $V2/job_ &&
	touch $V2/cgroup.procs $V2/job_103 &&
	ln -s . $V2/job_104 &&
	mkdir -p cg/cpuset/slurm/uid_1/job_201/step_batch \
		cg/memory/slurm/uid_1/job_201/step_0 \
		cg/memory/slurm/uid_1/job_201/step_batch \
		cg/memory/slurm/uid_65534/job_202/step_extern \
		cg/memory/slurm/uid_1/job_ \
		cg/freezer/slurm/uid_x/job_9 cg/freezer/slurm/system &&
	mkdir -p cg/system.slice/imp-shell-0-fAbC9.service \
		cg/system.slice/sshd.service cg/system.slice/shell-x-f1.service
'

if test_have_prereq ROOT; then
	U101=daemon
	UFLUX=nobody
else
	U101=$(id -un)
	UFLUX=$U101
fi

test_expect_success ROOT 'fixture: owners (a job directory owned by its user, root-owned ones with the user'"'"'s processes)' '
	setpriv --reuid=65534 --regid=65534 --clear-groups sleep 600 \
		>/dev/null 2>&1 </dev/null &
	echo $! >nobody.pid &&
	chown -R 1 $V2/job_101 &&
	mkdir -p $V2/job_102/step_0/slurm $V2/job_102/step_0/user/task_0 &&
	echo $$ >$V2/job_102/step_0/slurm/cgroup.procs &&
	printf "%s\n%s\n" $$ $(cat nobody.pid) \
		>$V2/job_102/step_0/user/task_0/cgroup.procs &&
	printf "%s\n" $(cat nobody.pid) \
		>cg/system.slice/imp-shell-0-fAbC9.service/cgroup.procs &&
	wait_for "test \$(stat -c %u /proc/$(cat nobody.pid)) = 65534"
'

test_expect_success 'start tallyd on the fixture, omnistat = true' '
	port=$(free_port) &&
	cat >jobs.conf <<-EOF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = {
	  jobs = { plugin = "jobs"; cgroup_root = "$PWD/cg"; omnistat = true; };
	  self = { plugin = "self"; };
	};
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["jobs", "self"]; to = ["prom"]; }; };
	EOF
	start_tallyd --log jobs.log --wait "port_listening $port" jobs.conf &&
	wait_for "drops_per_read odd_name 5"
'

test_expect_success 'one tally_job_info and one rmsjob_info per job, exactly' '
	{
	cat <<-EOF
	rmsjob_info{batchflag="0",jobid="202",jobstep="",nodes="",partition="",type="slurm",user="nobody"} 1
	rmsjob_info{batchflag="0",jobid="fAbC9",jobstep="",nodes="",partition="",type="flux",user="$UFLUX"} 1
	rmsjob_info{batchflag="1",jobid="101",jobstep="1",nodes="",partition="",type="slurm",user="$U101"} 1
	rmsjob_info{batchflag="1",jobid="201",jobstep="0",nodes="",partition="",type="slurm",user="daemon"} 1
	tally_job_info{batchsystem="flux",jobid="fAbC9",user="$UFLUX"} 1
	tally_job_info{batchsystem="slurm",jobid="101",user="$U101"} 1
	tally_job_info{batchsystem="slurm",jobid="201",user="daemon"} 1
	tally_job_info{batchsystem="slurm",jobid="202",user="nobody"} 1
	EOF
	if test_have_prereq ROOT; then
		echo "rmsjob_info{batchflag=\"0\",jobid=\"102\",jobstep=\"0\",nodes=\"\",partition=\"\",type=\"slurm\",user=\"nobody\"} 1"
		echo "tally_job_info{batchsystem=\"slurm\",jobid=\"102\",user=\"nobody\"} 1"
	fi
	} | sort >expected &&
	page &&
	test_cmp expected jobs.txt &&
	grep "^# TYPE tally_job_info gauge$" page.txt &&
	grep "^# TYPE rmsjob_info gauge$" page.txt
'

# Per read: job_abc, job_ (v2), job_ (v1 memory uid_1), uid_x (v1
# freezer), shell-x-f1.service (Flux): odd_name; job_103 (a file) and
# job_104 (a symlink, never followed): odd_entry
test_expect_success 'odd names and entries: dropped and counted on every read, logged once' '
	wait_for "drops_per_read odd_name 5" &&
	wait_for "drops_per_read odd_entry 2" &&
	test $(grep -c "not a job name the batch system makes" jobs.log) = 1 &&
	test $(grep -c "not a directory: ignored" jobs.log) = 1 &&
	! grep "cgroup_root_error\|unreadable_dir" page.txt
'

# jobs_gone JOBID - no series of JOBID on the page
jobs_gone() {
	page && ! grep "jobid=\"$1\"" jobs.txt
}

test_expect_success 'a job that ends disappears from the page; the others stay' '
	rm -r cg/memory/slurm/uid_65534/job_202 &&
	wait_for "jobs_gone 202" &&
	grep "^tally_job_info{batchsystem=\"slurm\",jobid=\"101\"" jobs.txt &&
	rm -r cg/cpuset/slurm/uid_1/job_201 &&
	page && grep "jobid=\"201\"" jobs.txt &&
	rm -r cg/memory/slurm/uid_1/job_201 &&
	wait_for "jobs_gone 201"
'

test_expect_success 'a new job appears' '
	mkdir -p $V2/job_105/step_0 &&
	wait_for "page && grep -q \"jobid=\\\"105\\\"\" jobs.txt"
'

test_expect_success 'stop tallyd' '
	stop_tallyd
'

test_expect_success 'a cgroup root that does not exist: logged once, counted on every read, no series' '
	port=$(free_port) &&
	sed -e "s|cgroup_root = \"[^\"]*\"|cgroup_root = \"$PWD/nowhere\"|" \
		-e "s|127.0.0.1:[0-9]*|127.0.0.1:$port|" jobs.conf >none.conf &&
	start_tallyd --log none.log --wait "port_listening $port" none.conf &&
	wait_for "drops_per_read cgroup_root_error 1" &&
	test_must_be_empty jobs.txt &&
	test $(grep -c "$PWD/nowhere: No such file or directory" none.log) = 1 &&
	stop_tallyd
'

# A read of 10000 entries may outlast 0.2 s on a loaded machine, and the
# page forgets series older than three intervals: one second per read here.
test_expect_success '10000 job directories, max_jobs = 1000: 1000 reported, the rest counted' '
	mkdir -p many/system.slice/slurmstepd.scope &&
	(cd many/system.slice/slurmstepd.scope && seq -f "job_%g" 1 10000 |
		xargs mkdir) &&
	port=$(free_port) &&
	sed -e "s|cgroup_root = \"[^\"]*\"|cgroup_root = \"$PWD/many\"; max_jobs = 1000|" \
		-e "s|127.0.0.1:[0-9]*|127.0.0.1:$port|" \
		-e "s|interval = 0.2|interval = 1.0|" jobs.conf >many.conf &&
	start_tallyd --log many.log --wait "port_listening $port" many.conf &&
	wait_for "drops_per_read too_many_jobs 9000" &&
	test $(grep -c "^tally_job_info" jobs.txt) = 1000 &&
	test $(grep -c "more than max_jobs (1000) jobs" many.log) = 1 &&
	stop_tallyd
'

test_expect_success 'a deep tree and a symlink loop below a job: read as any job' '
	mkdir -p deep/system.slice/slurmstepd.scope/job_7/step_0 &&
	d=deep/system.slice/slurmstepd.scope/job_7/step_0 &&
	for i in $(seq 1 200); do d=$d/d; done &&
	mkdir -p $d &&
	ln -s ../../job_7 deep/system.slice/slurmstepd.scope/job_7/step_0/loop &&
	ln -s loop2 deep/system.slice/slurmstepd.scope/job_7/loop1 &&
	ln -s loop1 deep/system.slice/slurmstepd.scope/job_7/loop2 &&
	cat >deep.conf <<-EOF &&
	inputs = { jobs = { plugin = "jobs"; cgroup_root = "$PWD/deep"; }; };
	outputs = { cap = { plugin = "capture"; path = "deep.out"; }; };
	pipelines = { p = { from = ["jobs"]; to = ["cap"]; }; };
	EOF
	timeout 20 "$TALLYD" --once -c deep.conf 2>deep.log &&
	grep "^info tally_job_info{batchsystem=\"slurm\",jobid=\"7\",user=\"" deep.out &&
	test $(wc -l <deep.out) = 1
'

# once_jobs ROOT - one read of a jobs input on cgroup root ROOT (and the
# settings in $2): its records in NAME.got, sorted, its log in NAME.log
once_jobs() {
	cat >$1.conf <<-EOF &&
	inputs = { jobs = { plugin = "jobs"; cgroup_root = "$PWD/$1"; $2 }; };
	outputs = { cap = { plugin = "capture"; path = "$PWD/$1.out"; }; };
	pipelines = { p = { from = ["jobs"]; to = ["cap"]; }; };
	EOF
	rm -f $1.out &&
	timeout 20 "$TALLYD" --once -c $1.conf 2>$1.log &&
	sed "s/ ts=[0-9]*//" $1.out | sort >$1.got
}

test_expect_success 'a directory name with a newline is logged escaped, on one line' '
	mkdir -p nl/system.slice/slurmstepd.scope &&
	mkdir "nl/system.slice/slurmstepd.scope/$(printf "job_1\nforged: line")" &&
	once_jobs nl "" &&
	test_must_be_empty nl.got &&
	grep "slurmstepd.scope/job_1\\\\nforged: line: not a job name" nl.log &&
	! grep "^forged" nl.log
'

test_expect_success 'a proc that does not exist or is not a procfs: logged once, counted on every read' '
	port=$(free_port) &&
	sed -e "s|omnistat = true;|omnistat = true; proc = \"$PWD/noproc\";|" \
		-e "s|127.0.0.1:[0-9]*|127.0.0.1:$port|" jobs.conf >noproc.conf &&
	start_tallyd --log noproc.log --wait "port_listening $port" \
		noproc.conf &&
	wait_for "drops_per_read proc_error 1" &&
	test $(grep -c "proc $PWD/noproc: No such file or directory: the user of a job" noproc.log) = 1 &&
	stop_tallyd &&
	sed "s|proc = \"[^\"]*\"|proc = \"$PWD/cg\"|" noproc.conf >notproc.conf &&
	start_tallyd --log notproc.log --wait "port_listening $port" \
		notproc.conf &&
	wait_for "drops_per_read proc_error 1" &&
	test $(grep -c "proc $PWD/cg: not a procfs (no self/cgroup)" notproc.log) = 1 &&
	stop_tallyd
'

# Run as nobody, tallyd cannot read a directory of mode 000 (root can).
test_expect_success ROOT 'an unreadable hierarchy and job directory: logged, counted, the rest reported' '
	mkdir -p ur/memory/slurm/uid_1/job_301 ur/cpuset/slurm \
		ur/system.slice/slurmstepd.scope/job_302/step_0 \
		ur/system.slice/slurmstepd.scope/job_303 out &&
	chmod 000 ur/cpuset/slurm ur/system.slice/slurmstepd.scope/job_303 &&
	chmod 777 out && chmod -R o+rX ur &&
	chmod 000 ur/cpuset/slurm ur/system.slice/slurmstepd.scope/job_303 &&
	cat >ur.conf <<-EOF &&
	inputs = { jobs = { plugin = "jobs"; cgroup_root = "$PWD/ur"; }; };
	outputs = { cap = { plugin = "capture"; path = "$PWD/out/ur.out"; }; };
	pipelines = { p = { from = ["jobs"]; to = ["cap"]; }; };
	EOF
	setpriv --reuid=65534 --regid=65534 --clear-groups -- \
		timeout 20 "$TALLYD" --once -c "$PWD/ur.conf" 2>ur.log &&
	grep "$PWD/ur/cpuset/slurm: Permission denied" ur.log &&
	grep "job_303: Permission denied: the job is reported, without its steps" ur.log &&
	! grep "job_303: .*its jobs are not reported" ur.log &&
	sed "s/ ts=[0-9]*//" out/ur.out | sort >ur.got &&
	cat >ur.expect <<-EOF &&
	info tally_job_info{batchsystem="slurm",jobid="301",user="daemon"} 1
	info tally_job_info{batchsystem="slurm",jobid="302",user=""} 1
	info tally_job_info{batchsystem="slurm",jobid="303",user=""} 1
	EOF
	test_cmp ur.expect ur.got
'

# The user of a job whose directory is root's: its tasks' owner. Root's
# slurmstepd (the step's "slurm" cgroup, in every job) and a Flux IMP
# (root's in every multi-user job) name nobody; root's tasks name root.
test_expect_success ROOT 'jobs of root and jobs not started: user="root" and user=""' '
	R=rj/system.slice/slurmstepd.scope &&
	dirs="$R/job_106/step_0/slurm $R/job_107/step_0/slurm
		$R/job_107/step_0/user/task_0 $R/job_108/step_extern/slurm
		$R/job_108/step_extern/user/task_special
		rj/system.slice/imp-shell-0-fRoot.service
		rj/system.slice/shell-0-fSingle.service" &&
	mkdir -p $dirs &&
	for d in $dirs; do
		echo $$ >$d/cgroup.procs || return 1
	done &&
	once_jobs rj "omnistat = true;" &&
	cat >rj.expect <<-EOF &&
	info rmsjob_info{batchflag="0",jobid="106",jobstep="0",nodes="",partition="",type="slurm",user=""} 1
	info rmsjob_info{batchflag="0",jobid="107",jobstep="0",nodes="",partition="",type="slurm",user="root"} 1
	info rmsjob_info{batchflag="0",jobid="108",jobstep="",nodes="",partition="",type="slurm",user=""} 1
	info rmsjob_info{batchflag="0",jobid="fRoot",jobstep="",nodes="",partition="",type="flux",user=""} 1
	info rmsjob_info{batchflag="0",jobid="fSingle",jobstep="",nodes="",partition="",type="flux",user="root"} 1
	info tally_job_info{batchsystem="flux",jobid="fRoot",user=""} 1
	info tally_job_info{batchsystem="flux",jobid="fSingle",user="root"} 1
	info tally_job_info{batchsystem="slurm",jobid="106",user=""} 1
	info tally_job_info{batchsystem="slurm",jobid="107",user="root"} 1
	info tally_job_info{batchsystem="slurm",jobid="108",user=""} 1
	EOF
	test_cmp rj.expect rj.got
'

test_expect_success ROOT 'a job not started yet gets its user once its tasks run' '
	R=rj/system.slice/slurmstepd.scope &&
	mkdir -p $R/job_106/step_0/user/task_0 &&
	printf "%s\n%s\n" $$ $(cat nobody.pid) \
		>$R/job_106/step_0/user/task_0/cgroup.procs &&
	once_jobs rj "" &&
	grep "^info tally_job_info{batchsystem=\"slurm\",jobid=\"106\",user=\"nobody\"} 1$" rj.got
'

test_expect_success ROOT 'stop the process run as nobody' '
	kill $(cat nobody.pid)
'

test_done
