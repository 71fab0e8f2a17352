#!/bin/sh
#
# t1007-procfs-host.t - the procfs input's vmstat, netstat, sockstat,
# diskstats, filesystem, uname, time and os groups on fixture trees, one
# tick each through `tallyd --once` and the capture output
#
# Expected values are derived by hand from the fixtures: diskstats sectors
# are 512 bytes and times milliseconds (times 0.001, as node_exporter
# multiplies: 2800 ms gives 2.8000000000000003); sockstat memory is in
# pages (4096 bytes here). The filesystem group statvfs()s the fixture's
# mount points below a rootfs that does not exist, so every mount is a
# device error: its labels are what is checked here (sizes: t1008, on real
# mounts). The mount point with a tab keeps it (mountinfo's \011).

test_description='procfs host groups: exact values from fixture trees'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/hostinputs.sh"

test "$(getconf PAGESIZE)" = 4096 && test_set_prereq PAGE4K
NOSYS='uname = false; time = false; os = false;'

test_expect_success PAGE4K 'Linux 6.x tree: every series with its exact value' '
	once_input host "plugin = \"procfs\"; root = \"$FIXTURES/proc-host\";
		rootfs = \"$PWD/nonexistent\"; $NOSYS
		udev_data = \"$FIXTURES/udev-data\";" &&
	cat >expected <<-\EXP &&
	gauge node_vmstat_pgpgin 1234
	gauge node_vmstat_pgpgout 5678
	gauge node_vmstat_pswpin 1
	gauge node_vmstat_pswpout 2
	gauge node_vmstat_pgfault 99999
	gauge node_vmstat_pgmajfault 77
	gauge node_vmstat_oom_kill 3
	gauge node_netstat_TcpExt_SyncookiesSent 1
	gauge node_netstat_TcpExt_SyncookiesRecv 2
	gauge node_netstat_TcpExt_SyncookiesFailed 3
	gauge node_netstat_TcpExt_ListenOverflows 5
	gauge node_netstat_TcpExt_ListenDrops 6
	gauge node_netstat_TcpExt_TCPTimeouts 7
	gauge node_netstat_TcpExt_TCPSynRetrans 8
	gauge node_netstat_IpExt_InOctets 123456789012
	gauge node_netstat_IpExt_OutOctets 98765
	gauge node_netstat_Ip_Forwarding 1
	gauge node_netstat_Icmp_InMsgs 10
	gauge node_netstat_Icmp_InErrors 1
	gauge node_netstat_Icmp_OutMsgs 12
	gauge node_netstat_Tcp_ActiveOpens 500
	gauge node_netstat_Tcp_PassiveOpens 40
	gauge node_netstat_Tcp_CurrEstab 3
	gauge node_netstat_Tcp_InSegs 10000
	gauge node_netstat_Tcp_OutSegs 9000
	gauge node_netstat_Tcp_RetransSegs 12
	gauge node_netstat_Tcp_InErrs 2
	gauge node_netstat_Tcp_OutRsts 30
	gauge node_netstat_Udp_InDatagrams 700
	gauge node_netstat_Udp_NoPorts 5
	gauge node_netstat_Udp_InErrors 1
	gauge node_netstat_Udp_OutDatagrams 650
	gauge node_netstat_Udp_RcvbufErrors 0
	gauge node_netstat_Udp_SndbufErrors 0
	gauge node_netstat_UdpLite_InErrors 0
	gauge node_netstat_Ip6_InOctets 20000
	gauge node_netstat_Ip6_OutOctets 30000
	gauge node_netstat_Icmp6_InMsgs 4
	gauge node_netstat_Icmp6_InErrors 1
	gauge node_netstat_Icmp6_OutMsgs 5
	gauge node_netstat_Udp6_InDatagrams 9
	gauge node_netstat_Udp6_InErrors 0
	gauge node_netstat_UdpLite6_InErrors 0
	gauge node_sockstat_sockets_used 230
	gauge node_sockstat_TCP_inuse 12
	gauge node_sockstat_TCP_orphan 1
	gauge node_sockstat_TCP_tw 4
	gauge node_sockstat_TCP_alloc 15
	gauge node_sockstat_TCP_mem 3
	gauge node_sockstat_TCP_mem_bytes 12288
	gauge node_sockstat_UDP_inuse 2
	gauge node_sockstat_UDP_mem 5
	gauge node_sockstat_UDP_mem_bytes 20480
	gauge node_sockstat_UDPLITE_inuse 0
	gauge node_sockstat_RAW_inuse 1
	gauge node_sockstat_FRAG_inuse 0
	gauge node_sockstat_FRAG_memory 0
	gauge node_sockstat_TCP6_inuse 6
	gauge node_sockstat_UDP6_inuse 3
	gauge node_sockstat_UDPLITE6_inuse 0
	gauge node_sockstat_RAW6_inuse 0
	gauge node_sockstat_FRAG6_inuse 0
	gauge node_sockstat_FRAG6_memory 0
	counter node_disk_reads_completed_total{device="sda"} 1000
	counter node_disk_reads_merged_total{device="sda"} 10
	counter node_disk_read_bytes_total{device="sda"} 10240000
	counter node_disk_read_time_seconds_total{device="sda"} 0.5
	counter node_disk_writes_completed_total{device="sda"} 2000
	counter node_disk_writes_merged_total{device="sda"} 20
	counter node_disk_written_bytes_total{device="sda"} 20480000
	counter node_disk_write_time_seconds_total{device="sda"} 1.5
	gauge node_disk_io_now{device="sda"} 0
	counter node_disk_io_time_seconds_total{device="sda"} 1.8
	counter node_disk_io_time_weighted_seconds_total{device="sda"} 2
	counter node_disk_discards_completed_total{device="sda"} 5
	counter node_disk_discards_merged_total{device="sda"} 0
	counter node_disk_discarded_sectors_total{device="sda"} 80
	counter node_disk_discard_time_seconds_total{device="sda"} 0.0030000000000000001
	counter node_disk_flush_requests_total{device="sda"} 7
	counter node_disk_flush_requests_time_seconds_total{device="sda"} 0.0090000000000000011
	gauge node_disk_info{device="sda",major="8",minor="0",model="QEMU_HARDDISK",path="pci-0000:00:1f.2-ata-1",revision="",serial="",wwn=""} 1
	gauge node_disk_ata_write_cache{device="sda"} 1
	gauge node_disk_ata_write_cache_enabled{device="sda"} 0
	gauge node_disk_ata_rotation_rate_rpm{device="sda"} 7200
	counter node_disk_reads_completed_total{device="nvme0n1"} 3000
	counter node_disk_reads_merged_total{device="nvme0n1"} 0
	counter node_disk_read_bytes_total{device="nvme0n1"} 307200000
	counter node_disk_read_time_seconds_total{device="nvme0n1"} 1.2
	counter node_disk_writes_completed_total{device="nvme0n1"} 4000
	counter node_disk_writes_merged_total{device="nvme0n1"} 100
	counter node_disk_written_bytes_total{device="nvme0n1"} 409600000
	counter node_disk_write_time_seconds_total{device="nvme0n1"} 2.5
	gauge node_disk_io_now{device="nvme0n1"} 2
	counter node_disk_io_time_seconds_total{device="nvme0n1"} 3
	counter node_disk_io_time_weighted_seconds_total{device="nvme0n1"} 3.7000000000000002
	counter node_disk_discards_completed_total{device="nvme0n1"} 10
	counter node_disk_discards_merged_total{device="nvme0n1"} 1
	counter node_disk_discarded_sectors_total{device="nvme0n1"} 2048
	counter node_disk_discard_time_seconds_total{device="nvme0n1"} 0.0040000000000000001
	counter node_disk_flush_requests_total{device="nvme0n1"} 20
	counter node_disk_flush_requests_time_seconds_total{device="nvme0n1"} 0.0060000000000000001
	gauge node_disk_info{device="nvme0n1",major="259",minor="0",model="Samsung SSD 980 PRO 1TB",path="pci-0000:01:00.0-nvme-1",revision="5B2QGXA7",serial="S5GXNF0R123456",wwn="eui.002538b111b22222"} 1
	counter node_disk_reads_completed_total{device="dm-0"} 2500
	counter node_disk_reads_merged_total{device="dm-0"} 0
	counter node_disk_read_bytes_total{device="dm-0"} 281600000
	counter node_disk_read_time_seconds_total{device="dm-0"} 1.5
	counter node_disk_writes_completed_total{device="dm-0"} 4500
	counter node_disk_writes_merged_total{device="dm-0"} 0
	counter node_disk_written_bytes_total{device="dm-0"} 399360000
	counter node_disk_write_time_seconds_total{device="dm-0"} 6
	gauge node_disk_io_now{device="dm-0"} 1
	counter node_disk_io_time_seconds_total{device="dm-0"} 2.8000000000000003
	counter node_disk_io_time_weighted_seconds_total{device="dm-0"} 7.5
	counter node_disk_discards_completed_total{device="dm-0"} 0
	counter node_disk_discards_merged_total{device="dm-0"} 0
	counter node_disk_discarded_sectors_total{device="dm-0"} 0
	counter node_disk_discard_time_seconds_total{device="dm-0"} 0
	counter node_disk_flush_requests_total{device="dm-0"} 0
	counter node_disk_flush_requests_time_seconds_total{device="dm-0"} 0
	gauge node_disk_info{device="dm-0",major="253",minor="0",model="",path="",revision="",serial="",wwn=""} 1
	gauge node_disk_filesystem_info{device="dm-0",type="xfs",usage="filesystem",uuid="0b6e6e1a-1c1f-4d4e-9a53-2b9d2f4a1c11",version=""} 1
	gauge node_disk_device_mapper_info{device="dm-0",lv_layer="",lv_name="lv",name="vg-lv",uuid="LVM-abc123",vg_name="vg"} 1
	gauge node_filesystem_device_error{device="/dev/vda1",fstype="ext4",mountpoint="/"} 1
	gauge node_filesystem_device_error{device="tmp fs",fstype="tmpfs",mountpoint="/mnt/my data"} 1
	gauge node_filesystem_device_error{device="/dev/mapper/vg-lv",fstype="xfs",mountpoint="/srv/tab	back\\slash"} 1
	gauge node_filesystem_device_error{device="server:/export/home",fstype="nfs4",mountpoint="/home"} 1
	gauge node_filesystem_device_error{device="tmpfs",fstype="tmpfs",mountpoint="/run"} 1
	gauge node_filesystem_device_error{device="user@host:/",fstype="fuse.sshfs",mountpoint="/media/usb"} 1
	EXP
	check expected
'

NE=$(command -v prometheus-node-exporter || command -v node_exporter)
test -n "$NE" && test_set_prereq NE

test_expect_success NE 'the 6.x tree: the same series and values as node_exporter on it' '
	neport=$(free_port) &&
	{ "$NE" --web.listen-address=127.0.0.1:$neport \
		--path.procfs="$FIXTURES/proc-host" \
		--path.udev.data="$FIXTURES/udev-data" \
		--collector.disable-defaults --collector.diskstats \
		--collector.vmstat --collector.netstat --collector.sockstat \
		>ne.log 2>&1 & } &&
	nepid=$! &&
	wait_for "curl -sf http://127.0.0.1:$neport/metrics >ne.out" &&
	kill $nepid &&
	sed "s/^[a-z]* //" out.txt >tally.out &&
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t10-compare.py" \
		node_disk_,node_vmstat_,node_netstat_,node_sockstat_ \
		ne.out tally.out ne.out >compare.out &&
	cat compare.out &&
	grep -q "^122 series compared, 0 differences" compare.out
'

test_expect_success 'excluded: partitions, loop devices, pseudo and docker mounts' '
	! grep -E "device=\"(sda1|nvme0n1p1|loop0)\"" out.txt &&
	! grep -E "mountpoint=\"/(dev|proc|sys/fs/cgroup|var/lib/docker/.*|run/credentials/.*)\"" out.txt
'

test_expect_success 'a mount stacked on itself is exported once' '
	test $(grep -c "mountpoint=\"/home\"" out.txt) = 1
'

test_expect_success 'a statvfs error is logged once per mount' '
	test $(grep -c "statvfs .*nonexistent/home: No such file" log.txt) = 1 &&
	! grep -E "malformed|open .*/(vmstat|net/|diskstats|self/)" log.txt
'

test_expect_success 'Linux 4.x diskstats (11 counters) and malformed lines' '
	once_input host "plugin = \"procfs\"; root = \"$FIXTURES/proc-host-4.4\";
		filesystem = false; $NOSYS
		udev_data = \"$FIXTURES/udev-data\";" &&
	cat >expected <<-\EXP &&
	gauge node_vmstat_pgpgin 1
	gauge node_vmstat_oom_kill -3
	gauge node_netstat_Udp_InDatagrams 7
	gauge node_sockstat_sockets_used 5
	counter node_disk_reads_completed_total{device="sda"} 1000
	counter node_disk_reads_merged_total{device="sda"} 10
	counter node_disk_read_bytes_total{device="sda"} 10240000
	counter node_disk_read_time_seconds_total{device="sda"} 0.5
	counter node_disk_writes_completed_total{device="sda"} 2000
	counter node_disk_writes_merged_total{device="sda"} 20
	counter node_disk_written_bytes_total{device="sda"} 20480000
	counter node_disk_write_time_seconds_total{device="sda"} 1.5
	gauge node_disk_io_now{device="sda"} 0
	counter node_disk_io_time_seconds_total{device="sda"} 1.8
	counter node_disk_io_time_weighted_seconds_total{device="sda"} 2
	gauge node_disk_info{device="sda",major="8",minor="0",model="QEMU_HARDDISK",path="pci-0000:00:1f.2-ata-1",revision="",serial="",wwn=""} 1
	gauge node_disk_ata_write_cache{device="sda"} 1
	gauge node_disk_ata_write_cache_enabled{device="sda"} 0
	gauge node_disk_ata_rotation_rate_rpm{device="sda"} 7200
	counter node_disk_reads_completed_total{device="dm-1"} 10
	counter node_disk_reads_merged_total{device="dm-1"} 0
	counter node_disk_read_bytes_total{device="dm-1"} 40960
	counter node_disk_read_time_seconds_total{device="dm-1"} 0.0040000000000000001
	counter node_disk_writes_completed_total{device="dm-1"} 0
	counter node_disk_writes_merged_total{device="dm-1"} 0
	counter node_disk_written_bytes_total{device="dm-1"} 0
	counter node_disk_write_time_seconds_total{device="dm-1"} 0
	gauge node_disk_io_now{device="dm-1"} 0
	counter node_disk_io_time_seconds_total{device="dm-1"} 0.0040000000000000001
	counter node_disk_io_time_weighted_seconds_total{device="dm-1"} 0.0040000000000000001
	gauge node_disk_info{device="dm-1",major="253",minor="1",model="",path="",revision="",serial="",wwn=""} 1
	counter node_disk_reads_completed_total{device="sr0"} 0
	counter node_disk_reads_merged_total{device="sr0"} 0
	counter node_disk_read_bytes_total{device="sr0"} 0
	counter node_disk_read_time_seconds_total{device="sr0"} 0
	counter node_disk_writes_completed_total{device="sr0"} 0
	counter node_disk_writes_merged_total{device="sr0"} 0
	counter node_disk_written_bytes_total{device="sr0"} 0
	counter node_disk_write_time_seconds_total{device="sr0"} 0
	gauge node_disk_io_now{device="sr0"} 0
	counter node_disk_io_time_seconds_total{device="sr0"} 0
	counter node_disk_io_time_weighted_seconds_total{device="sr0"} 0
	counter node_disk_discards_completed_total{device="sr0"} 0
	counter node_disk_discards_merged_total{device="sr0"} 0
	counter node_disk_discarded_sectors_total{device="sr0"} 0
	counter node_disk_discard_time_seconds_total{device="sr0"} 0
	counter node_disk_flush_requests_total{device="sr0"} 0
	counter node_disk_flush_requests_time_seconds_total{device="sr0"} 0
	gauge node_disk_info{device="sr0",major="11",minor="0",model="",path="",revision="",serial="",wwn=""} 1
	EXP
	check expected
'

test_expect_success 'each malformed line is logged and dropped' '
	grep "diskstats: malformed line dropped: .*sdb 1 2 3" log.txt &&
	grep "vmstat: malformed line dropped: pgfault" log.txt &&
	grep "net/snmp: malformed line dropped: Ip: Forwarding DefaultTTL" log.txt &&
	grep "net/snmp: malformed line dropped: Tcp: ActiveOpens" log.txt &&
	grep "net/sockstat: malformed line dropped: TCP: inuse x" log.txt &&
	test $(grep -c "malformed line dropped" log.txt) = 5
'

test_expect_success 'os-release: quoting, escapes, VERSION_ID major.minor' '
	once_input host "plugin = \"procfs\"; root = \"$FIXTURES/proc-host\";
		rootfs = \"$FIXTURES/rootfs-os\"; filesystem = false;
		diskstats = false; vmstat = false; netstat = false;
		sockstat = false; uname = false; time = false;" &&
	cat >expected <<-\EXP &&
	gauge node_os_info{build_id="b\\\"1",id="rocky",id_like="rhel centos fedora",image_id="",image_version="",name="Rocky Linux",pretty_name="Rocky Linux 8.6 (Green Obsidian)",variant="with \"quotes\" and \\backslash",variant_id="",version="8.6 (Green Obsidian)",version_codename="",version_id="8.6.2203"} 1
	gauge node_os_version{id="rocky",id_like="rhel centos fedora",name="Rocky Linux"} 8.6
	EXP
	check expected &&
	grep "os-release: 2 malformed lines skipped" log.txt
'

test_expect_success 'uname and time: the system call and the clock' '
	before=$(date +%s) &&
	once_input host "plugin = \"procfs\"; root = \"$FIXTURES/proc-host\";
		filesystem = false; diskstats = false; vmstat = false;
		netstat = false; sockstat = false; os = false;" &&
	after=$(date +%s) &&
	grep -F "node_uname_info{domainname=\"$(cat /proc/sys/kernel/domainname)\",machine=\"$(uname -m)\",nodename=\"$(uname -n)\",release=\"$(uname -r)\",sysname=\"$(uname -s)\",version=\"$(uname -v)\"} 1" out.txt &&
	awk -v b=$before -v a=$after "/^gauge node_time_seconds / { n++; if (\$NF < b || \$NF > a + 1) exit 1 } END { exit n != 1 }" out.txt &&
	grep -F "gauge node_time_zone_offset_seconds{time_zone=\"$(date +%Z)\"} $(date +%z | awk "{ s = substr(\$0, 1, 1) == \"-\" ? -1 : 1; print s * (substr(\$0, 2, 2) * 3600 + substr(\$0, 4, 2) * 60) }")" out.txt
'

test_expect_success 'clocksources as node_exporter reads them' '
	mkdir -p sys/devices/system/clocksource/clocksource0 &&
	echo "tsc hpet acpi_pm " >sys/devices/system/clocksource/clocksource0/available_clocksource &&
	echo "hpet" >sys/devices/system/clocksource/clocksource0/current_clocksource &&
	once_input host "plugin = \"procfs\"; root = \"$FIXTURES/proc-host\";
		sysfs = \"$PWD/sys\"; $NOSYS filesystem = false;
		diskstats = false; vmstat = false; netstat = false;
		sockstat = false;" &&
	! grep -q node_time_clocksource out.txt &&
	once_input host "plugin = \"procfs\"; root = \"$FIXTURES/proc-host\";
		sysfs = \"$PWD/sys\"; uname = false; os = false;
		filesystem = false; diskstats = false; vmstat = false;
		netstat = false; sockstat = false;" &&
	grep node_time_clocksource out.txt >got &&
	cat >expected <<-\EXP &&
	gauge node_time_clocksource_available_info{clocksource="tsc",device="0"} 1
	gauge node_time_clocksource_available_info{clocksource="hpet",device="0"} 1
	gauge node_time_clocksource_available_info{clocksource="acpi_pm",device="0"} 1
	gauge node_time_clocksource_current_info{clocksource="hpet",device="0"} 1
	EXP
	test_cmp expected got
'

test_expect_success 'each group is switched off by its option' '
	for g in vmstat netstat sockstat diskstats filesystem uname time os; do
		once_input host "plugin = \"procfs\";
			root = \"$FIXTURES/proc-host\";
			rootfs = \"$FIXTURES/rootfs-os\"; $g = false;" &&
		case $g in
		diskstats) re=node_disk_ ;;
		uname) re=node_uname_ ;;
		os) re=node_os_ ;;
		*) re=node_${g}_ ;;
		esac &&
		! grep -q " $re" out.txt &&
		grep -q " node_" out.txt || return 1
	done
'

test_expect_success 'excludes are options: mount_exclude, fstype_exclude, device_exclude' '
	once_input host "plugin = \"procfs\"; root = \"$FIXTURES/proc-host\";
		rootfs = \"$PWD/nonexistent\"; $NOSYS vmstat = false;
		netstat = false; sockstat = false;
		mount_exclude = [\"^/home\$\"]; fstype_exclude = [\"^xfs\$\"];
		device_exclude = [\"^sd\"];" &&
	grep -q "mountpoint=\"/dev\"" out.txt &&
	! grep -q "mountpoint=\"/home\"" out.txt &&
	! grep -q "fstype=\"xfs\"" out.txt &&
	grep -q "device=\"loop0\"" out.txt &&
	! grep -q "device=\"sda\"" out.txt
'

test_done
