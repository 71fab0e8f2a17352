#!/bin/sh
#
# t1001-procfs.t - the procfs input on fixture /proc trees, one tick each
# through `tallyd --once` and the capture output
#
# Expected values are derived by hand from the fixture files: /proc/stat
# times are USER_HZ ticks (100 per second), meminfo kB are 1024 bytes, PSI
# totals are microseconds. The expected text writes plain decimals
# (13932.8); norm (t/lib/hostinputs.sh) rewrites every value with %.17g, as
# capture prints a double, so both sides are compared exactly.

test_description='procfs input: exact values from fixture trees'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/hostinputs.sh"

test "$(getconf CLK_TCK)" = 100 && test_set_prereq HZ100

# once ROOT - one tick of procfs on ROOT: records in out.txt, log in log.txt.
# The groups of t1007 (disks, filesystems, network stack, system) are off.
once() {
	once_input host "plugin = \"procfs\"; root = \"$1\"; $PROCFS_BASE"
}

cat >expected-6.1 <<'EXP'
counter node_cpu_seconds_total{cpu="0",mode="user"} 13932.8
counter node_cpu_seconds_total{cpu="0",mode="nice"} 329.66
counter node_cpu_seconds_total{cpu="0",mode="system"} 5720.56
counter node_cpu_seconds_total{cpu="0",mode="idle"} 133432.92
counter node_cpu_seconds_total{cpu="0",mode="iowait"} 61.3
counter node_cpu_seconds_total{cpu="0",mode="irq"} 0
counter node_cpu_seconds_total{cpu="0",mode="softirq"} 178.75
counter node_cpu_seconds_total{cpu="0",mode="steal"} 0
counter node_cpu_guest_seconds_total{cpu="0",mode="user"} 239.33
counter node_cpu_guest_seconds_total{cpu="0",mode="nice"} 0
counter node_cpu_seconds_total{cpu="1",mode="user"} 13356.06
counter node_cpu_seconds_total{cpu="1",mode="nice"} 495.4
counter node_cpu_seconds_total{cpu="1",mode="system"} 5203.74
counter node_cpu_seconds_total{cpu="1",mode="idle"} 133629.24
counter node_cpu_seconds_total{cpu="1",mode="iowait"} 33.94
counter node_cpu_seconds_total{cpu="1",mode="irq"} 0
counter node_cpu_seconds_total{cpu="1",mode="softirq"} 24.74
counter node_cpu_seconds_total{cpu="1",mode="steal"} 0
counter node_cpu_guest_seconds_total{cpu="1",mode="user"} 0
counter node_cpu_guest_seconds_total{cpu="1",mode="nice"} 0
counter node_cpu_seconds_total{cpu="3",mode="user"} 14184.32
counter node_cpu_seconds_total{cpu="3",mode="nice"} 400.62
counter node_cpu_seconds_total{cpu="3",mode="system"} 5710.95
counter node_cpu_seconds_total{cpu="3",mode="idle"} 133211.06
counter node_cpu_seconds_total{cpu="3",mode="iowait"} 34.21
counter node_cpu_seconds_total{cpu="3",mode="irq"} 0
counter node_cpu_seconds_total{cpu="3",mode="softirq"} 23.06
counter node_cpu_seconds_total{cpu="3",mode="steal"} 0.12
counter node_cpu_guest_seconds_total{cpu="3",mode="user"} 301.09
counter node_cpu_guest_seconds_total{cpu="3",mode="nice"} 0.07
counter node_intr_total 8885917
counter node_context_switches_total 38014093
gauge node_boot_time_seconds 1795965488
counter node_forks_total 26442
gauge node_procs_running 2
gauge node_procs_blocked 1
gauge node_memory_MemTotal_bytes 25276473344
gauge node_memory_MemFree_bytes 24538075136
gauge node_memory_MemAvailable_bytes 24897318912
gauge node_memory_Buffers_bytes 8466432
gauge node_memory_Cached_bytes 487702528
gauge node_memory_SwapCached_bytes 0
gauge node_memory_Active_bytes 175357952
gauge node_memory_Inactive_bytes 422580224
gauge node_memory_Active_anon_bytes 172032
gauge node_memory_Inactive_anon_bytes 110747648
gauge node_memory_Active_file_bytes 175185920
gauge node_memory_Inactive_file_bytes 311832576
gauge node_memory_Unevictable_bytes 0
gauge node_memory_Mlocked_bytes 0
gauge node_memory_SwapTotal_bytes 0
gauge node_memory_SwapFree_bytes 0
gauge node_memory_Zswap_bytes 0
gauge node_memory_Zswapped_bytes 0
gauge node_memory_Dirty_bytes 528384
gauge node_memory_Writeback_bytes 0
gauge node_memory_AnonPages_bytes 110399488
gauge node_memory_Mapped_bytes 96907264
gauge node_memory_Shmem_bytes 978944
gauge node_memory_KReclaimable_bytes 29700096
gauge node_memory_Slab_bytes 63262720
gauge node_memory_SReclaimable_bytes 29700096
gauge node_memory_SUnreclaim_bytes 33562624
gauge node_memory_KernelStack_bytes 2867200
gauge node_memory_PageTables_bytes 2564096
gauge node_memory_SecPageTables_bytes 0
gauge node_memory_NFS_Unstable_bytes 0
gauge node_memory_Bounce_bytes 0
gauge node_memory_WritebackTmp_bytes 0
gauge node_memory_CommitLimit_bytes 12638236672
gauge node_memory_Committed_AS_bytes 493694976
gauge node_memory_VmallocTotal_bytes 35184372087808
gauge node_memory_VmallocUsed_bytes 11726848
gauge node_memory_VmallocChunk_bytes 0
gauge node_memory_Percpu_bytes 983040
gauge node_memory_AnonHugePages_bytes 4194304
gauge node_memory_ShmemHugePages_bytes 0
gauge node_memory_ShmemPmdMapped_bytes 0
gauge node_memory_FileHugePages_bytes 0
gauge node_memory_FilePmdMapped_bytes 0
gauge node_memory_Balloon_bytes 0
gauge node_memory_HugePages_Total 16
gauge node_memory_HugePages_Free 15
gauge node_memory_HugePages_Rsvd 1
gauge node_memory_HugePages_Surp 0
gauge node_memory_Hugepagesize_bytes 2097152
gauge node_memory_Hugetlb_bytes 33554432
gauge node_memory_DirectMap4k_bytes 100663296
gauge node_memory_DirectMap2M_bytes 6341787648
gauge node_memory_DirectMap1G_bytes 25769803776
gauge node_load1 0.53
gauge node_load5 0.63
gauge node_load15 12.5
counter node_pressure_cpu_waiting_seconds_total 31.5
counter node_pressure_io_waiting_seconds_total 12.25
counter node_pressure_io_stalled_seconds_total 10.125
counter node_pressure_memory_waiting_seconds_total 2
counter node_pressure_memory_stalled_seconds_total 1
counter node_pressure_irq_stalled_seconds_total 0.0625
EXP

test_expect_success HZ100 'Linux 6.x tree: every series with its exact value' '
	once "$FIXTURES/proc-6.1" &&
	check expected-6.1
'

test_expect_success HZ100 'offline cpu2 is a hole, not a zero series' '
	! grep "cpu=\"2\"" out.txt &&
	test $(grep -c "node_cpu_seconds_total{cpu=\"3\"" out.txt) = 8
'

test_expect_success HZ100 'a healthy tree logs no warning' '
	! grep -E "warning|error" log.txt
'

test_expect_success HZ100 'cpu pressure has no stalled series, as node_exporter' '
	! grep node_pressure_cpu_stalled out.txt
'

cat >expected-2.6.18 <<'EXP'
counter node_cpu_seconds_total{cpu="0",mode="user"} 26.46
counter node_cpu_seconds_total{cpu="0",mode="nice"} 0.1
counter node_cpu_seconds_total{cpu="0",mode="system"} 5
counter node_cpu_seconds_total{cpu="0",mode="idle"} 450
counter node_cpu_seconds_total{cpu="0",mode="iowait"} 0.5
counter node_cpu_seconds_total{cpu="0",mode="irq"} 0.03
counter node_cpu_seconds_total{cpu="0",mode="softirq"} 0.3
counter node_cpu_seconds_total{cpu="0",mode="steal"} 0.04
counter node_cpu_seconds_total{cpu="1",mode="user"} 26.46
counter node_cpu_seconds_total{cpu="1",mode="nice"} 0.1
counter node_cpu_seconds_total{cpu="1",mode="system"} 5
counter node_cpu_seconds_total{cpu="1",mode="idle"} 450
counter node_cpu_seconds_total{cpu="1",mode="iowait"} 0.5
counter node_cpu_seconds_total{cpu="1",mode="irq"} 0.03
counter node_cpu_seconds_total{cpu="1",mode="softirq"} 0.3
counter node_cpu_seconds_total{cpu="1",mode="steal"} 0.04
counter node_intr_total 1234567
counter node_context_switches_total 5678
gauge node_boot_time_seconds 1200000000
counter node_forks_total 999
gauge node_procs_running 1
gauge node_procs_blocked 0
gauge node_memory_MemTotal_bytes 2123788288
gauge node_memory_MemFree_bytes 156942336
gauge node_memory_Buffers_bytes 106967040
gauge node_memory_Cached_bytes 1325539328
gauge node_memory_SwapCached_bytes 0
gauge node_memory_Active_bytes 1114800128
gauge node_memory_Inactive_bytes 687022080
gauge node_memory_HighTotal_bytes 1207894016
gauge node_memory_HighFree_bytes 34197504
gauge node_memory_LowTotal_bytes 915894272
gauge node_memory_LowFree_bytes 122744832
gauge node_memory_SwapTotal_bytes 2146754560
gauge node_memory_SwapFree_bytes 2146754560
gauge node_memory_Dirty_bytes 24576
gauge node_memory_Writeback_bytes 0
gauge node_memory_AnonPages_bytes 369262592
gauge node_memory_Mapped_bytes 61513728
gauge node_memory_Slab_bytes 189132800
gauge node_memory_PageTables_bytes 3547136
gauge node_memory_NFS_Unstable_bytes 0
gauge node_memory_Bounce_bytes 0
gauge node_memory_CommitLimit_bytes 3208646656
gauge node_memory_Committed_AS_bytes 819732480
gauge node_memory_VmallocTotal_bytes 117432320
gauge node_memory_VmallocUsed_bytes 4276224
gauge node_memory_VmallocChunk_bytes 112812032
gauge node_memory_HugePages_Total 0
gauge node_memory_HugePages_Free 0
gauge node_memory_HugePages_Rsvd 0
gauge node_memory_Hugepagesize_bytes 4194304
gauge node_load1 0.08
gauge node_load5 0.03
gauge node_load15 0.01
EXP

test_expect_success HZ100 'Linux 2.6.18 tree: no guest columns, old meminfo, no PSI' '
	once "$FIXTURES/proc-2.6.18" &&
	check expected-2.6.18 &&
	! grep -E "warning|error" log.txt
'

cat >expected-odd <<'EXP'
counter node_cpu_seconds_total{cpu="0",mode="user"} 1
counter node_cpu_seconds_total{cpu="0",mode="nice"} 0
counter node_cpu_seconds_total{cpu="0",mode="system"} 0
counter node_cpu_seconds_total{cpu="0",mode="idle"} 2
counter node_cpu_seconds_total{cpu="0",mode="iowait"} 0
counter node_cpu_seconds_total{cpu="0",mode="irq"} 0
counter node_cpu_seconds_total{cpu="0",mode="softirq"} 0
counter node_cpu_seconds_total{cpu="0",mode="steal"} 0
counter node_cpu_guest_seconds_total{cpu="0",mode="user"} 0
counter node_cpu_guest_seconds_total{cpu="0",mode="nice"} 0
counter node_cpu_seconds_total{cpu="5",mode="user"} 3
counter node_cpu_seconds_total{cpu="5",mode="nice"} 0
counter node_cpu_seconds_total{cpu="5",mode="system"} 0
counter node_cpu_seconds_total{cpu="5",mode="idle"} 6
counter node_cpu_seconds_total{cpu="5",mode="iowait"} 0
counter node_cpu_seconds_total{cpu="5",mode="irq"} 0
counter node_cpu_seconds_total{cpu="5",mode="softirq"} 0
counter node_cpu_seconds_total{cpu="5",mode="steal"} 0
counter node_cpu_guest_seconds_total{cpu="5",mode="user"} 0
counter node_cpu_guest_seconds_total{cpu="5",mode="nice"} 0
counter node_context_switches_total 42
gauge node_memory_MemTotal_bytes 1024000000
gauge node_memory_Brand_new_bytes 12288
gauge node_memory_HugePages_Total 3
gauge node_load1 1
gauge node_load5 2
gauge node_load15 3
counter node_pressure_cpu_waiting_seconds_total 0.5
EXP

test_expect_success HZ100 'odd tree: CPU ids by number, unknown field kept, bad lines dropped' '
	once "$FIXTURES/proc-odd" &&
	check expected-odd &&
	grep "stat: malformed line dropped: cpu7 1 2" log.txt &&
	grep "meminfo: malformed line dropped: Garbage line" log.txt &&
	test $(grep -c warning log.txt) = 2
'

# A container's /host/proc may hold files that exist but cannot be read.
# As root, permissions do not stop a read: a directory (which open()
# accepts) and a FIFO (which would block open() without O_NONBLOCK) stand
# in for them; the next test uses real permissions (a write-only sysctl
# as root).
test_expect_success HZ100 'unreadable files: one log line each, the rest reports' '
	cp -R "$FIXTURES/proc-6.1" proc &&
	rm proc/meminfo proc/loadavg &&
	mkdir proc/meminfo &&
	mkfifo proc/loadavg &&
	once "$PWD/proc" &&
	grep -v -e node_memory_ -e node_load expected-6.1 >expected-partial &&
	check expected-partial &&
	test $(grep -c "meminfo: not a regular file, skipped" log.txt) = 1 &&
	test $(grep -c "loadavg: not a regular file, skipped" log.txt) = 1 &&
	test $(grep -c warning log.txt) = 2
'

# Root reads through any mode bits, except on /proc/sys, where the owner
# bits bind root too: a write-only sysctl is a file root cannot read.
wo_sysctl=
for f in /proc/sys/vm/compact_memory /proc/sys/net/ipv4/route/flush; do
	test -e "$f" && ! cat "$f" >/dev/null 2>&1 && wo_sysctl=$f && break
done
test "$(id -u)" != 0 || test -n "$wo_sysctl" && test_set_prereq UNREADABLE

test_expect_success HZ100,UNREADABLE 'permission denied: one log line, the rest reports' '
	rm -rf proc && cp -R "$FIXTURES/proc-6.1" proc &&
	if test "$(id -u)" = 0
	then
		rm proc/meminfo && ln -s "$wo_sysctl" proc/meminfo
	else
		chmod 000 proc/meminfo
	fi &&
	once "$PWD/proc" &&
	grep -v node_memory_ expected-6.1 >expected-partial &&
	check expected-partial &&
	test $(grep -c "meminfo: Permission denied, skipped" log.txt) = 1
'

test_expect_success 'a root that does not exist: logged, nothing exported, exit 0' '
	once "$PWD/no-such-proc" &&
	test_must_be_empty out.txt &&
	grep "open $PWD/no-such-proc/stat: No such file or directory" log.txt &&
	grep "open $PWD/no-such-proc/meminfo: No such file or directory" log.txt &&
	! grep pressure log.txt
'

test_done
