#!/bin/sh
#
# t1010-sysfs.t - the sysfs input (hwmon, thermal_zone, cpufreq, edac) on
# t/fixtures/sys-host, and against Debian's prometheus-node-exporter run on
# the same fixture (--path.sysfs) and on this machine's /sys
#
# The fixture: a coretemp chip with labels, a PCI chip without labels nor
# name file (chip named from its device link), an acpitz chip with a name
# only, an NVMe chip; two thermal zones (one below zero) and a cooling
# device; two CPUs with cpufreq (cpuinfo_cur_freq on one only, as a
# non-root reader sees it) and one without; two EDAC memory controllers
# with two csrows each. Expected values by hand: millidegrees * 0.001,
# microwatts and microjoules / 1e6, kHz * 1000.

test_description='sysfs input: hwmon, thermal zones, cpufreq, EDAC'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/hostinputs.sh"

NE=$(command -v prometheus-node-exporter || command -v node_exporter)
test -n "$NE" && test_set_prereq NE
if test "$CI" = true && ! test_have_prereq NE; then
	test_expect_success 'CI installs prometheus-node-exporter' 'false'
fi

test_expect_success 'every series of the fixture with its exact value' '
	once_input hw "plugin = \"sysfs\"; root = \"$FIXTURES/sys-host\";" &&
	cat >expected <<-\EXP &&
	gauge node_hwmon_chip_names{chip="platform_coretemp_0",chip_name="coretemp"} 1
	gauge node_hwmon_temp_crit_celsius{chip="platform_coretemp_0",sensor="temp1"} 100
	gauge node_hwmon_temp_crit_alarm_celsius{chip="platform_coretemp_0",sensor="temp1"} 0
	gauge node_hwmon_temp_celsius{chip="platform_coretemp_0",sensor="temp1"} 45
	gauge node_hwmon_sensor_label{chip="platform_coretemp_0",label="Package id 0",sensor="temp1"} 1
	gauge node_hwmon_temp_max_celsius{chip="platform_coretemp_0",sensor="temp1"} 80
	gauge node_hwmon_temp_celsius{chip="platform_coretemp_0",sensor="temp2"} 43
	gauge node_hwmon_sensor_label{chip="platform_coretemp_0",label="Core 0",sensor="temp2"} 1
	gauge node_hwmon_curr_amps{chip="pci0000:00_0000:00:18_3",sensor="curr1"} 5.2000000000000002
	counter node_hwmon_energy_joule_total{chip="pci0000:00_0000:00:18_3",sensor="energy1"} 123.456789
	gauge node_hwmon_fan_alarm{chip="pci0000:00_0000:00:18_3",sensor="fan1"} 0
	gauge node_hwmon_fan_rpm{chip="pci0000:00_0000:00:18_3",sensor="fan1"} 1200
	gauge node_hwmon_fan_min_rpm{chip="pci0000:00_0000:00:18_3",sensor="fan1"} 300
	gauge node_hwmon_in_volts{chip="pci0000:00_0000:00:18_3",sensor="in0"} 1.2
	gauge node_hwmon_power_average_watt{chip="pci0000:00_0000:00:18_3",sensor="power1"} 12.5
	gauge node_hwmon_pwm{chip="pci0000:00_0000:00:18_3",sensor="pwm1"} 128
	gauge node_hwmon_pwm_enable{chip="pci0000:00_0000:00:18_3",sensor="pwm1"} 2
	gauge node_hwmon_temp_celsius{chip="pci0000:00_0000:00:18_3",sensor="temp1"} 38.125
	gauge node_hwmon_update_interval_seconds{chip="pci0000:00_0000:00:18_3",sensor="update_interval0"} 1
	gauge node_hwmon_chip_names{chip="acpitz",chip_name="acpitz"} 1
	gauge node_hwmon_temp_celsius{chip="acpitz",sensor="temp1"} 27.800000000000001
	gauge node_hwmon_chip_names{chip="nvme_nvme0",chip_name="nvme"} 1
	gauge node_hwmon_temp_celsius{chip="nvme_nvme0",sensor="temp1"} 310.85000000000002
	gauge node_hwmon_sensor_label{chip="nvme_nvme0",label="Composite",sensor="temp1"} 1
	gauge node_hwmon_temp_max_celsius{chip="nvme_nvme0",sensor="temp1"} 357.85000000000002
	gauge node_thermal_zone_temp{type="x86_pkg_temp",zone="0"} 52
	gauge node_thermal_zone_temp{type="acpitz",zone="1"} -2.5
	gauge node_cooling_device_cur_state{name="0",type="Processor"} 3
	gauge node_cooling_device_max_state{name="0",type="Processor"} 10
	gauge node_cpu_frequency_hertz{cpu="0"} 2400000000
	gauge node_cpu_frequency_max_hertz{cpu="0"} 3500000000
	gauge node_cpu_frequency_min_hertz{cpu="0"} 800000000
	gauge node_cpu_scaling_frequency_hertz{cpu="0"} 2400120000
	gauge node_cpu_scaling_frequency_max_hertz{cpu="0"} 3500000000
	gauge node_cpu_scaling_frequency_min_hertz{cpu="0"} 800000000
	gauge node_cpu_frequency_max_hertz{cpu="1"} 3500001000
	gauge node_cpu_frequency_min_hertz{cpu="1"} 800000000
	gauge node_cpu_scaling_frequency_hertz{cpu="1"} 2400121000
	gauge node_cpu_scaling_frequency_max_hertz{cpu="1"} 3500000000
	gauge node_cpu_scaling_frequency_min_hertz{cpu="1"} 800000000
	counter node_edac_correctable_errors_total{controller="0"} 3
	counter node_edac_uncorrectable_errors_total{controller="0"} 0
	counter node_edac_csrow_correctable_errors_total{controller="0",csrow="unknown"} 1
	counter node_edac_csrow_uncorrectable_errors_total{controller="0",csrow="unknown"} 0
	counter node_edac_csrow_correctable_errors_total{controller="0",csrow="0"} 1
	counter node_edac_csrow_uncorrectable_errors_total{controller="0",csrow="0"} 0
	counter node_edac_csrow_correctable_errors_total{controller="0",csrow="1"} 2
	counter node_edac_csrow_uncorrectable_errors_total{controller="0",csrow="1"} 0
	counter node_edac_correctable_errors_total{controller="1"} 13
	counter node_edac_uncorrectable_errors_total{controller="1"} 1
	counter node_edac_csrow_correctable_errors_total{controller="1",csrow="unknown"} 2
	counter node_edac_csrow_uncorrectable_errors_total{controller="1",csrow="unknown"} 0
	counter node_edac_csrow_correctable_errors_total{controller="1",csrow="0"} 11
	counter node_edac_csrow_uncorrectable_errors_total{controller="1",csrow="0"} 0
	counter node_edac_csrow_correctable_errors_total{controller="1",csrow="1"} 2
	counter node_edac_csrow_uncorrectable_errors_total{controller="1",csrow="1"} 1
	EXP
	check expected &&
	! grep -E "warning|error" log.txt
'

test_expect_success 'each group is switched off by its option' '
	for g in hwmon:node_hwmon_ thermal_zone:node_thermal_ \
		 thermal_zone:node_cooling_ cpufreq:node_cpu_ edac:node_edac_; do
		once_input hw "plugin = \"sysfs\";
			root = \"$FIXTURES/sys-host\"; ${g%%:*} = false;" &&
		! grep -q " ${g#*:}" out.txt &&
		grep -q " node_" out.txt || return 1
	done
'

# ne_scrape OUT ARGS... - one page of node_exporter with the sysfs
# collectors (and ARGS), on a free loopback port, stopped after
ne_scrape() {
	ne_out=$1 && shift &&
	neport=$(free_port) &&
	{ "$NE" --web.listen-address=127.0.0.1:$neport \
		--collector.disable-defaults --collector.hwmon \
		--collector.thermal_zone --collector.cpufreq \
		--collector.edac "$@" >ne.log 2>&1 & } &&
	nepid=$! &&
	wait_for "curl -sf http://127.0.0.1:$neport/metrics >$ne_out"
	ret=$?
	kill $nepid && wait $nepid
	return $ret
}

# tally_scrape OUT ROOT - one page of tallyd with the sysfs input on ROOT,
# taken once the self input counts two reads of it (the first one's records
# are on the page then, even where there are none: a VM without sensors)
tally_scrape() {
	port=$(free_port) &&
	cat >prom.conf <<-CONF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { hw = { plugin = "sysfs"; root = "$2"; };
		   me = { plugin = "self"; }; };
	outputs = { prom = { plugin = "prometheus";
			     listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["hw", "me"]; to = ["prom"]; }; };
	CONF
	start_tallyd --wait "port_listening $port" prom.conf &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >$1 &&
		grep -Eq \"^tally_reads_total[{][^}]*\\\"hw\\\"[^}]*[}] ([2-9]|[1-9][0-9])\" $1" &&
	stop_tallyd
}

PREFIXES=node_hwmon_,node_thermal_zone_,node_cooling_device_,node_cpu_,node_edac_

test_expect_success NE 'the fixture: same series, values and help texts as node_exporter' '
	ne_scrape ne.out --path.sysfs="$FIXTURES/sys-host" &&
	tally_scrape tally.out "$FIXTURES/sys-host" &&
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t10-compare.py" "$PREFIXES" \
		ne.out tally.out ne.out >compare.out &&
	cat compare.out &&
	grep -q "^56 series compared, 0 differences" compare.out &&
	grep -E "^# HELP ($(echo $PREFIXES | sed "s/,/|/g"))" ne.out | sort >help.ne &&
	grep -E "^# HELP ($(echo $PREFIXES | sed "s/,/|/g"))" tally.out | sort >help.tally &&
	test_cmp help.ne help.tally
'

test_expect_success NE 'this machine: the same series as node_exporter' '
	ne_scrape ne.live &&
	tally_scrape tally.live /sys &&
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t10-compare.py" \
		node_hwmon_,node_thermal_zone_,node_cooling_device_,node_edac_ \
		ne.live tally.live ne.live >compare.live &&
	cat compare.live &&
	grep -q " 0 differences" compare.live &&
	grep "^node_cpu_.*frequency" ne.live | sed "s/{.*//" | sort -u >f.ne &&
	grep "^node_cpu_.*frequency" tally.live | sed "s/{.*//" | sort -u >f.tally &&
	test_cmp f.ne f.tally
'

test_expect_success 'a sensor that stops reading: skipped, logged once, back when it reads' '
	cp -R "$FIXTURES/sys-host" sys &&
	cat >run.conf <<-CONF &&
	global = { interval = 0.2; log_level = "info"; };
	inputs = { hw = { plugin = "sysfs"; root = "$PWD/sys"; hwmon = true;
			  thermal_zone = false; cpufreq = false; edac = false; }; };
	outputs = { cap = { plugin = "capture"; path = "out.txt";
			    source = true; timestamps = true; }; };
	pipelines = { p = { from = ["hw"]; to = ["cap"]; }; };
	CONF
	start_tallyd run.conf &&
	t="gauge node_hwmon_temp_celsius{chip=\"acpitz\",sensor=\"temp1\"} 27.800000000000001" &&
	wait_for "has hw \"\$t\"" &&
	f=sys/devices/virtual/thermal/thermal_zone0/hwmon2/temp1_input &&
	echo "N/A" >$f &&
	wait_for "! tick hw | grep -q chip=\\\"acpitz\\\",sensor=\\\"temp1\\\"" &&
	has hw "gauge node_hwmon_temp_celsius{chip=\"platform_coretemp_0\",sensor=\"temp1\"} 45" &&
	echo 27800 >$f &&
	wait_for "has hw \"\$t\"" &&
	stop_tallyd &&
	test $(grep -c "temp1_input: not a number, skipped until it reads again" tallyd.log) = 1 &&
	grep "temp1_input: reads again" tallyd.log
'

test_done
