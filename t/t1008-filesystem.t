#!/bin/sh
#
# t1008-filesystem.t - the procfs input's filesystem group on real mounts:
# tmpfs mounts of known size inside a private mount namespace (unshare -m,
# root), one of them read-only, one with a space in its path; then a mount
# whose statvfs(3) hangs (the core's test hook, tally/statfs.h) while
# tallyd runs: it is reported with node_filesystem_device_error 1 and the
# ticks go on; once it answers, its sizes come back.
#
# A tmpfs of size=1m has 256 blocks of 4096 bytes, all free; nr_inodes=1000
# gives 1000 files, 999 free (the root directory takes one).

test_description='procfs filesystem group: tmpfs sizes, hung mounts'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/hostinputs.sh"

test "$(id -u)" = 0 && unshare -m --propagation private true 2>/dev/null &&
	test_set_prereq NS
test "$(getconf PAGESIZE)" = 4096 && test_set_prereq PAGE4K
if test "$CI" = true && ! test_have_prereq NS; then
	test_expect_success 'CI runs as root with unshare -m' 'false'
fi

ONLY_FS='diskstats = false; vmstat = false; netstat = false;
	sockstat = false; uname = false; time = false; os = false;'

# in_ns SCRIPT - run SCRIPT in a private mount namespace where mnt/a b
# (1 MiB), mnt/ro (2 MiB, read-only) and mnt/hang (1 MiB, 64 KiB used) are
# tmpfs mounts. It execs: call it in a subshell or in the background.
in_ns() {
	exec unshare -m --propagation private sh -c '
		mount -t tmpfs -o size=1m,nr_inodes=1000 tfa "mnt/a b" &&
		mount -t tmpfs -o size=2m,nr_inodes=500,ro tfro mnt/ro &&
		mount -t tmpfs -o size=1m,nr_inodes=1000 tfhang mnt/hang &&
		dd if=/dev/zero of=mnt/hang/f bs=4096 count=16 2>/dev/null &&
		'"$1"
}

test_expect_success NS,PAGE4K 'tmpfs mounts: exact sizes, files, read-only' '
	mkdir -p "mnt/a b" mnt/ro mnt/hang &&
	cat >once.conf <<-CONF &&
	global = { log_level = "info"; };
	inputs = { host = { plugin = "procfs"; $ONLY_FS
		mount_exclude = ["^/(dev|proc|sys)(\$|/)"]; }; };
	outputs = { cap = { plugin = "capture"; path = "out.txt"; }; };
	pipelines = { p = { from = ["host"]; to = ["cap"]; }; };
	CONF
	(in_ns "timeout 20 \"\$TALLYD\" --once -c once.conf >log.txt 2>&1") &&
	grep "mountpoint=\"$PWD/mnt/" out.txt >got &&
	cat >expected <<-EXP &&
	gauge node_filesystem_device_error{device="tfa",fstype="tmpfs",mountpoint="$PWD/mnt/a b"} 0
	gauge node_filesystem_size_bytes{device="tfa",fstype="tmpfs",mountpoint="$PWD/mnt/a b"} 1048576
	gauge node_filesystem_free_bytes{device="tfa",fstype="tmpfs",mountpoint="$PWD/mnt/a b"} 1048576
	gauge node_filesystem_avail_bytes{device="tfa",fstype="tmpfs",mountpoint="$PWD/mnt/a b"} 1048576
	gauge node_filesystem_files{device="tfa",fstype="tmpfs",mountpoint="$PWD/mnt/a b"} 1000
	gauge node_filesystem_files_free{device="tfa",fstype="tmpfs",mountpoint="$PWD/mnt/a b"} 999
	gauge node_filesystem_readonly{device="tfa",fstype="tmpfs",mountpoint="$PWD/mnt/a b"} 0
	gauge node_filesystem_device_error{device="tfro",fstype="tmpfs",mountpoint="$PWD/mnt/ro"} 0
	gauge node_filesystem_size_bytes{device="tfro",fstype="tmpfs",mountpoint="$PWD/mnt/ro"} 2097152
	gauge node_filesystem_free_bytes{device="tfro",fstype="tmpfs",mountpoint="$PWD/mnt/ro"} 2097152
	gauge node_filesystem_avail_bytes{device="tfro",fstype="tmpfs",mountpoint="$PWD/mnt/ro"} 2097152
	gauge node_filesystem_files{device="tfro",fstype="tmpfs",mountpoint="$PWD/mnt/ro"} 500
	gauge node_filesystem_files_free{device="tfro",fstype="tmpfs",mountpoint="$PWD/mnt/ro"} 499
	gauge node_filesystem_readonly{device="tfro",fstype="tmpfs",mountpoint="$PWD/mnt/ro"} 1
	gauge node_filesystem_device_error{device="tfhang",fstype="tmpfs",mountpoint="$PWD/mnt/hang"} 0
	gauge node_filesystem_size_bytes{device="tfhang",fstype="tmpfs",mountpoint="$PWD/mnt/hang"} 1048576
	gauge node_filesystem_free_bytes{device="tfhang",fstype="tmpfs",mountpoint="$PWD/mnt/hang"} 983040
	gauge node_filesystem_avail_bytes{device="tfhang",fstype="tmpfs",mountpoint="$PWD/mnt/hang"} 983040
	gauge node_filesystem_files{device="tfhang",fstype="tmpfs",mountpoint="$PWD/mnt/hang"} 1000
	gauge node_filesystem_files_free{device="tfhang",fstype="tmpfs",mountpoint="$PWD/mnt/hang"} 998
	gauge node_filesystem_readonly{device="tfhang",fstype="tmpfs",mountpoint="$PWD/mnt/hang"} 0
	EXP
	test_cmp expected got
'

test_expect_success NS 'a mount whose statvfs hangs: device error, the loop goes on' '
	cat >run.conf <<-CONF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { host = { plugin = "procfs"; $ONLY_FS mount_timeout = 0.3;
		mount_exclude = ["^/(dev|proc|sys)(\$|/)"]; }; };
	outputs = { cap = { plugin = "capture"; path = "out.txt";
			    source = true; timestamps = true; }; };
	pipelines = { p = { from = ["host"]; to = ["cap"]; }; };
	CONF
	: >hang.flag &&
	: >out.txt &&
	TALLY_TEST_STATFS_HANG="$PWD/mnt/hang:$PWD/hang.flag" &&
	export TALLY_TEST_STATFS_HANG &&
	{ in_ns "exec \"\$TALLYD\" -c run.conf --foreground" \
		>tallyd.log 2>&1 & } &&
	TALLYD_PID=$! && TALLYD_PIDS="$TALLYD_PIDS $TALLYD_PID" &&
	unset TALLY_TEST_STATFS_HANG &&
	hang="{device=\"tfhang\",fstype=\"tmpfs\",mountpoint=\"$PWD/mnt/hang\"}" &&
	aok="{device=\"tfa\",fstype=\"tmpfs\",mountpoint=\"$PWD/mnt/a b\"}" &&
	wait_for "has host \"gauge node_filesystem_device_error\$hang 1\"" &&
	! tick host | grep -q "node_filesystem_size_bytes$hang" &&
	has host "gauge node_filesystem_size_bytes$aok 1048576" &&
	grep "statvfs $PWD/mnt/hang: no answer within 0.3s" tallyd.log
'

test_expect_success NS 'while it hangs, ticks keep their interval and it is logged once' '
	n=$(grep -c "^host: gauge node_filesystem_device_error$hang 1" out.txt) &&
	wait_for "test \$(grep -c \"^host: gauge node_filesystem_device_error\$hang 1\" out.txt) -ge \$((n + 5))" &&
	test $(grep -c "no answer within" tallyd.log) = 1
'

test_expect_success NS 'once it answers, its sizes are back' '
	rm hang.flag &&
	wait_for "has host \"gauge node_filesystem_device_error\$hang 0\"" &&
	wait_for "has host \"gauge node_filesystem_size_bytes\$hang 1048576\"" &&
	grep "statvfs $PWD/mnt/hang: answers again" tallyd.log &&
	stop_tallyd &&
	! grep -E "error|malformed" tallyd.log | grep -v "device error"
'

# mountinfo spells a newline in a mount point \012, which the input
# decodes: a mount hidden below another one fails its statvfs, and the log
# line naming it must stay one line.
test_expect_success NS 'a mount point with a newline: logged escaped, on one line' '
	nl="$PWD/mnt/hide/$(printf "nl\nforged line")" &&
	mkdir -p "$nl" &&
	cat >nl.conf <<-CONF &&
	inputs = { host = { plugin = "procfs"; $ONLY_FS
		mount_exclude = ["^/(dev|proc|sys)(\$|/)"]; }; };
	outputs = { cap = { plugin = "capture"; path = "nl.out"; }; };
	pipelines = { p = { from = ["host"]; to = ["cap"]; }; };
	CONF
	(exec unshare -m --propagation private sh -c "
		mount -t tmpfs -o size=1m tfnl \"\$1\" &&
		mount -t tmpfs -o size=1m tfhide mnt/hide &&
		timeout 20 \"\$TALLYD\" --once -c nl.conf" sh "$nl" \
		>nl.log 2>&1) &&
	grep "statvfs $PWD/mnt/hide/nl\\\\nforged line: No such file or directory, reported as a device error" nl.log &&
	! grep "^forged" nl.log
'

test_done
