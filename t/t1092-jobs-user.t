#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='jobs input, user collector: the job it serves

tallyd --user reports the job of its environment (SLURM_JOB_ID,
FLUX_JOB_ID, ...) as tally_job_info, and with omnistat = true as
rmsjob_info with what the batch system tells the job (partition, nodes,
step) and the step of its own cgroup (a fixture /proc/self/cgroup). The
shipped configuration has it: the built-in one of a user collector serves
it on the prometheus page.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd curl

tally_sock_dir xdg || exit 1
RT=$TALLY_SOCK_DIR
XDG_RUNTIME_DIR=$RT
export XDG_RUNTIME_DIR
unset SLURM_JOB_ID FLUX_JOB_ID PBS_JOBID LSB_JOBID SLURM_JOB_PARTITION \
	SLURM_JOB_NUM_NODES SLURM_NNODES SLURM_STEP_ID FLUX_JOB_NNODES
ME=$(id -un)

# once SETTINGS - one tick of the jobs input configured with SETTINGS
# under tallyd --user --once: its records in got (sorted, no timestamps)
once() {
	cat >u.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { jobs = { plugin = "jobs"; $1 }; };
	outputs = { cap = { plugin = "capture"; path = "u.out"; }; };
	pipelines = { p = { from = ["jobs"]; to = ["cap"]; }; };
	EOF
	rm -f u.out &&
	timeout 20 "$TALLYD" --user --once -c u.conf 2>u.log &&
	touch u.out &&
	sed "s/ ts=[0-9]*$//" u.out | sort >got
}

test_expect_success 'fixture: the cgroup of a batch step and of step 3' '
	mkdir -p proc-batch/self proc-step/self &&
	cat >proc-batch/self/cgroup <<-\EOF &&
	0::/system.slice/slurmstepd.scope/job_4242/step_batch/user/task_0
	EOF
	cat >proc-step/self/cgroup <<-\EOF
	12:freezer:/slurm/uid_1000/job_4242/step_3/task_0
	4:memory:/slurm/uid_1000/job_4242/step_3/task_0
	1:name=systemd:/user.slice
	EOF
'

test_expect_success 'SLURM_JOB_ID: tally_job_info of the job, with the collector'"'"'s user' '
	SLURM_JOB_ID=4242 once "" &&
	echo "info tally_job_info{batchsystem=\"slurm\",jobid=\"4242\",user=\"$ME\"} 1" >expected &&
	test_cmp expected got
'

test_expect_success 'omnistat = true: rmsjob_info from the batch step, the job'"'"'s variables' '
	SLURM_JOB_ID=4242 SLURM_JOB_PARTITION=gpu SLURM_JOB_NUM_NODES=2 \
		once "omnistat = true; proc = \"$PWD/proc-batch\";" &&
	cat >expected <<-EOF &&
	info rmsjob_info{batchflag="1",jobid="4242",jobstep="",nodes="2",partition="gpu",type="slurm",user="$ME"} 1
	info tally_job_info{batchsystem="slurm",jobid="4242",user="$ME"} 1
	EOF
	test_cmp expected got
'

test_expect_success 'rmsjob_info: the step from the cgroup (v1), SLURM_STEP_ID over it' '
	SLURM_JOB_ID=4242 SLURM_NNODES=8 \
		once "omnistat = true; proc = \"$PWD/proc-step\";" &&
	grep "^info rmsjob_info{batchflag=\"0\",jobid=\"4242\",jobstep=\"3\",nodes=\"8\",partition=\"\",type=\"slurm\",user=\"$ME\"} 1$" got &&
	SLURM_JOB_ID=4242 SLURM_STEP_ID=5 \
		once "omnistat = true; proc = \"$PWD/proc-step\";" &&
	grep "^info rmsjob_info{batchflag=\"0\",jobid=\"4242\",jobstep=\"5\"," got
'

test_expect_success 'a cgroup of another job is not taken for this one' '
	SLURM_JOB_ID=99 once "omnistat = true; proc = \"$PWD/proc-batch\";" &&
	grep "^info rmsjob_info{batchflag=\"0\",jobid=\"99\",jobstep=\"\"," got
'

test_expect_success 'a proc that does not exist: one log line saying what is not known' '
	SLURM_JOB_ID=4242 once "omnistat = true; proc = \"$PWD/nowhere\";" &&
	grep "^info rmsjob_info{batchflag=\"0\",jobid=\"4242\",jobstep=\"\"," got &&
	test $(grep -c "proc $PWD/nowhere: No such file or directory: the collector'"'"'s own cgroup is not read" u.log) = 1
'

# One rule for a job id longer than 64 bytes (core/jobid.c): bounded where
# it is read, the same in tally_job_info, in the jobid label of every other
# record, in the log, and in the system collector's cgroup reading.
test_expect_success 'a job id longer than 64 bytes: the same bounded id everywhere' '
	long=$(printf "1%.0s" $(seq 100)) &&
	cat >long.conf <<-EOF &&
	inputs = { jobs = { plugin = "jobs"; }; self = { plugin = "self"; }; };
	outputs = { cap = { plugin = "capture"; path = "long.out"; }; };
	pipelines = { p = { from = ["jobs", "self"]; to = ["cap"]; }; };
	EOF
	SLURM_JOB_ID=$long timeout 20 "$TALLYD" --user --once -c long.conf \
		2>long.log &&
	jid=$(sed -n "s/^info tally_job_info{batchsystem=\"slurm\",jobid=\"\([^\"]*\)\",.*/\1/p" long.out) &&
	test ${#jid} = 64 &&
	test "${jid%-*}" = "$(printf "1%.0s" $(seq 55))" &&
	grep -v "^info tally_job_info" long.out >other &&
	test -s other &&
	! grep -v "jobid=\"$jid\"" other &&
	test $(grep -c "SLURM_JOB_ID is 100 bytes long, more than the 64 a job id may have: the job is \"$jid\"" long.log) = 1 &&
	mkdir -p cg/system.slice/slurmstepd.scope/job_$long &&
	cat >sys.conf <<-EOF &&
	inputs = { jobs = { plugin = "jobs"; cgroup_root = "$PWD/cg"; }; };
	outputs = { cap = { plugin = "capture"; path = "sys.out"; }; };
	pipelines = { p = { from = ["jobs"]; to = ["cap"]; }; };
	EOF
	timeout 20 "$TALLYD" --once -c sys.conf 2>sys.log &&
	grep "^info tally_job_info{batchsystem=\"slurm\",jobid=\"$jid\",user=\"" sys.out
'

test_expect_success 'FLUX_JOB_ID: batchsystem flux' '
	FLUX_JOB_ID=fXyZ FLUX_JOB_NNODES=4 once "omnistat = true;" &&
	cat >expected <<-EOF &&
	info rmsjob_info{batchflag="0",jobid="fXyZ",jobstep="",nodes="4",partition="",type="flux",user="$ME"} 1
	info tally_job_info{batchsystem="flux",jobid="fXyZ",user="$ME"} 1
	EOF
	test_cmp expected got
'

test_expect_success 'outside a job: no record, one log line' '
	once "" &&
	test_must_be_empty got &&
	grep "not inside a batch job" u.log
'

# The installed SYSCONFDIR would come first: skip when this machine has one
sysconfdir=$("$TALLYD" --help | sed -n "s|^ *\(/.*\)/user.conf, else$|\1|p")
test -n "$sysconfdir" && ! test -e "$sysconfdir/user.conf" &&
	! test -e "$sysconfdir/conf.d" && test_set_prereq NOINSTALL

test_expect_success NOINSTALL 'the built-in configuration serves tally_job_info on its page' '
	SLURM_JOB_ID=5151 HOME=$PWD/home "$TALLYD" --user -- sh -c "
		addr=\$(sed -n \"s/^prom //p\" \"$RT/tally/job-5151/listen\") &&
		i=0 &&
		until curl -sf http://\$addr/metrics >builtin.page &&
			grep -q ^tally_job_info builtin.page; do
			i=\$((i + 1)); test \$i -lt 300 || exit 1; sleep 0.1
		done
	" 2>builtin.err &&
	echo "tally_job_info{batchsystem=\"slurm\",jobid=\"5151\",user=\"$ME\"} 1" >expected &&
	grep "^tally_job_info" builtin.page >got &&
	test_cmp expected got
'

test_done
