#!/bin/sh
#
# t1102-rocm-smi-helper.t - the rocm_smi input with the real librocm_smi64
# reading a fixture two-GPU node (t/fixtures/sys-rocm, see sys-rocm.md)
# bound over /sys in a private mount namespace: exact values, names,
# labels and the per-device skip; a fixture that makes the library abort,
# a helper that hangs (test hook), and a system and a user collector
# reading the same GPUs at once. Root only (CI runs the suite as root).

test_description='rocm_smi input: real library on a fixture node, isolation'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/rocm.sh"

if ! test_have_prereq ROOTNS; then
	skip_all='needs root and unshare -m to bind a fixture over /sys'
	test_done
fi

# A copy the tests may break and mend; a node's /dev/shm of its own.
cp -a "$FIXTURES/sys-rocm" sys &&
rocm_empty_dirs sys &&
mkdir shm &&
ns_tallyd "$PWD/sys" "$PWD/shm" &&
TALLYD=$PWD/ns-tallyd || exit 1

# Library order is DRM order (card0 at bus 03, card1 at bus 83); the KFD
# topology lists bus 83 first, so HIP, Omnistat and tally call it card 0.
cat >expected <<'EXP'
gauge rocm_average_socket_power_watts{card="1"} 87
gauge rocm_energy_joules{card="1"} 1002.7008125
gauge rocm_mclk_clock_mhz{card="0"} 1600
gauge rocm_mclk_clock_mhz{card="1"} 1600
gauge rocm_num_gpus 2
gauge rocm_sclk_clock_mhz{card="0"} 800
gauge rocm_sclk_clock_mhz{card="1"} 800
gauge rocm_temperature_celsius{card="0",location="edge"} 61
gauge rocm_temperature_celsius{card="1",location="edge"} 45
gauge rocm_utilization_percentage{card="0"} 91
gauge rocm_utilization_percentage{card="1"} 37
gauge rocm_version_info{card="0",driver_ver="6.7.0",schema="1.0",type="Instinct MI210",vbios="113-D67301-064"} 1
gauge rocm_version_info{card="1",driver_ver="6.7.0",schema="1.0",type="Instinct MI210",vbios="113-D67301-063"} 1
gauge rocm_vram_busy_percentage{card="0"} 45
gauge rocm_vram_busy_percentage{card="1"} 12
gauge rocm_vram_total_bytes{card="0"} 68702699520
gauge rocm_vram_total_bytes{card="1"} 68702699520
gauge rocm_vram_used_percentage{card="0"} 50
gauge rocm_vram_used_percentage{card="1"} 10
EXP

test_expect_success 'fixture node: exact values, names and labels' '
	rocm_conf once.conf once.txt "" &&
	"$TALLYD" --once -c once.conf >log.txt 2>&1 &&
	grep "^gauge rocm_" once.txt | sort >got &&
	test_cmp expected got
'

# Omnistat keeps one sensor per card and family; card 1 has two
cat >expected-temps <<'EXP'
gauge rocm_temperature_sensor_celsius{card="0",location="edge"} 61
gauge rocm_temperature_sensor_celsius{card="1",location="edge"} 45
gauge rocm_temperature_sensor_celsius{card="1",location="junction"} 52
EXP

test_expect_success 'all_temperatures: every sensor, under a family of its own' '
	rocm_conf temps.conf temps.txt "all_temperatures = true;" &&
	"$TALLYD" --once -c temps.conf >temps.log 2>&1 &&
	grep "^gauge rocm_temperature_sensor_celsius" temps.txt | sort >got &&
	test_cmp expected-temps got &&
	test "$(grep -c "^gauge rocm_temperature_celsius{" temps.txt)" = 2 &&
	grep -qxF "gauge rocm_temperature_celsius{card=\"1\",location=\"edge\"} 45" temps.txt
'

edge1=sys/devices/pci0000:00/0000:00:01.0/0000:03:00.0/hwmon/hwmon2/temp1_input

test_expect_success 'a sensor placeholder at the start: the next sensor is taken' '
	echo -5000 >$edge1 &&
	"$TALLYD" --once -c once.conf >ph.log 2>&1 &&
	echo 45000 >$edge1 &&
	grep "^gauge rocm_temperature_celsius" once.txt | sort >got &&
	cat >want <<-\EOF &&
	gauge rocm_temperature_celsius{card="0",location="edge"} 61
	gauge rocm_temperature_celsius{card="1",location="junction"} 52
	EOF
	test_cmp want got
'

test_expect_success 'a sensor placeholder later: dropped, counted, said once' '
	rocm_conf ph.conf ph.txt "" &&
	start_tallyd --log ph.log ph.conf &&
	line="gauge rocm_temperature_celsius{card=\"1\",location=\"edge\"} 45" &&
	wait_for "grep -qxF \"\$line\" ph.txt" &&
	echo -5000 >$edge1 &&
	wait_for "test \$(dropped ph.txt invalid_temperature) -ge 3" 20 &&
	echo 45000 >$edge1 &&
	n=$(count ph.txt "$line") &&
	wait_for "test \$(count ph.txt \"\$line\") -gt $n" 20 &&
	stop_tallyd &&
	! grep "rocm_temperature_celsius{card=\"1\",location=\"edge\"} -5" ph.txt &&
	test "$(count ph.log "dropped a temperature no GPU reads")" = 1 &&
	grep -F "from the helper (2 GPU(s)): \"m\\trocm_temperature_celsius\\t1\\t-5\\tlocation=edge\" (counted as invalid_temperature)" ph.log &&
	test "$(event ph.txt helper_crashed)" = 0 &&
	test "$(event ph.txt query_errors)" = 0
'

# capabilities PID - the Cap* and NoNewPrivs lines of process PID
capabilities() {
	grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):" /proc/$1/status
}

test_expect_success 'the helper keeps no capability, bounding set included' '
	rocm_conf caps.conf caps.txt "" &&
	start_tallyd --log caps.log caps.conf &&
	wait_for "grep -q \"^gauge rocm_num_gpus 2\" caps.txt" &&
	hpid=$(pgrep -P $TALLYD_PID) &&
	test "$(ps -o user= -p $hpid)" = root &&
	capabilities $hpid >got &&
	stop_tallyd &&
	cat >want <<-\EOF &&
	CapInh:	0000000000000000
	CapPrm:	0000000000000000
	CapEff:	0000000000000000
	CapBnd:	0000000000000000
	CapAmb:	0000000000000000
	NoNewPrivs:	1
	EOF
	test_cmp want got &&
	! grep "capability bounding set kept" caps.log
'

test_expect_success 'tallyd without CAP_SETPCAP: the helper says what it keeps' '
	printf "#!/bin/sh\nexec setpriv --bounding-set -setpcap \"%s\" \"\$@\"\n" \
		"$PWD/ns-tallyd" >nocap-tallyd &&
	chmod +x nocap-tallyd &&
	rocm_conf nocap.conf nocap.txt "" &&
	TALLYD=$PWD/nocap-tallyd start_tallyd --log nocap.log nocap.conf &&
	wait_for "grep -q \"^gauge rocm_num_gpus 2\" nocap.txt" &&
	hpid=$(pgrep -P $TALLYD_PID) &&
	capabilities $hpid >got &&
	stop_tallyd &&
	grep "rocm_smi\[gpu\]: capability bounding set kept (.* capabilities; PR_CAPBSET_DROP: Operation not permitted: tallyd runs without CAP_SETPCAP): the effective, permitted and inheritable sets are emptied, no_new_privs set" nocap.log &&
	grep -x "CapEff:	0000000000000000" got &&
	grep -x "CapPrm:	0000000000000000" got &&
	grep -x "NoNewPrivs:	1" got &&
	! grep -x "CapBnd:	0000000000000000" got
'

test_expect_success 'power and energy skipped for the card without them only' '
	grep "rocm_smi\[gpu\]: not read: .*rocm_average_socket_power_watts on card 0 (RSMI_STATUS_NOT_SUPPORTED)" log.txt &&
	grep "rocm_smi\[gpu\]: not read: .*rocm_energy_joules on card 0 (RSMI_STATUS_NOT_SUPPORTED)" log.txt &&
	test "$(count log.txt "not read:")" = 1 &&
	grep "rocm_smi\[gpu\]: 2 GPU(s), ROCm SMI library" log.txt
'

cat >expected-opt <<'EXP'
gauge rocm_power_cap_watts{card="0"} 300
gauge rocm_power_cap_watts{card="1"} 300
gauge rocm_ras_gfx_correctable_count{card="1"} 3
gauge rocm_ras_gfx_uncorrectable_count{card="1"} 0
gauge rocm_ras_umc_correctable_count{card="1"} 17
gauge rocm_ras_umc_uncorrectable_count{card="1"} 2
EXP

test_expect_success 'options: power cap, RAS counts of the blocks with ECC on' '
	rocm_conf opt.conf opt.txt "power_cap = true; ras = true;" &&
	"$TALLYD" --once -c opt.conf >opt.log 2>&1 &&
	grep "^gauge rocm_\(ras\|power_cap\)" opt.txt | sort >got &&
	test_cmp expected-opt got &&
	grep "not read: .*rocm_ras_umc_correctable_count on card 0 (no RAS counts: ECC state RSMI_STATUS_NOT_SUPPORTED)" opt.log &&
	! grep "rocm_ras_[a-z_]* on cards" opt.log
'

cat >expected-old <<'EXP'
gauge rocm_num_gpus 2
gauge rocm_temperature_celsius{card="0",location="edge"} 61
gauge rocm_temperature_celsius{card="1",location="edge"} 45
gauge rocm_utilization_percentage{card="0"} 91
gauge rocm_utilization_percentage{card="1"} 37
gauge rocm_version_info{card="0",driver_ver="",schema="1.0",type="",vbios=""} 1
gauge rocm_version_info{card="1",driver_ver="",schema="1.0",type="",vbios=""} 1
EXP

test_expect_success 'a library without some functions: only their metrics go' '
	rocm_conf old.conf old.txt \
		"library = \"$ROCM_SHIM\"; ras = true;" &&
	"$TALLYD" --once -c old.conf >old.log 2>&1 &&
	grep "^gauge rocm_" old.txt | sort >got &&
	test_cmp expected-old got &&
	grep "not read: .*rocm_energy_joules on cards 1, 0 (rsmi_dev_energy_count_get not in $ROCM_SHIM)" old.log &&
	grep "not read: .*rocm_ras_umc_correctable_count on cards 1, 0 (no RAS counts: rsmi_dev_ecc_enabled_get or rsmi_dev_ecc_count_get not in $ROCM_SHIM)" old.log
'

test_expect_success 'the library writes its locks in a /dev/shm of its own' '
	: a stale lock of another user: the library cannot open it &&
	echo stale >shm/rocm_smi_card0 &&
	chown nobody shm/rocm_smi_card0 && chmod 600 shm/rocm_smi_card0 &&
	"$TALLYD" --once -c once.conf >log.txt 2>&1 &&
	grep "^gauge rocm_" once.txt | sort >got &&
	test_cmp expected got &&
	test "$(ls shm)" = rocm_smi_card0 &&
	test "$(cat shm/rocm_smi_card0)" = stale
'

test_expect_success 'a system and a user collector read the GPUs at once' '
	rocm_conf sys.conf sys.txt "" &&
	rocm_conf user.conf user.txt "" &&
	TALLY_RUNTIME_DIR=$PWD/sysrun start_tallyd --log sys.log sys.conf &&
	sys_pid=$TALLYD_PID &&
	start_tallyd --log user.log user.conf --user &&
	wait_for "test \$(count sys.txt \"gauge rocm_num_gpus 2\") -ge 3 &&
		  test \$(count user.txt \"gauge rocm_num_gpus 2\") -ge 3" 20 &&
	stop_tallyd &&
	stop_tallyd $sys_pid &&
	test "$(event sys.txt helper_crashed)" = 0 &&
	test "$(event user.txt helper_crashed)" = 0 &&
	test "$(event sys.txt helper_timeout)" = 0 &&
	test "$(event user.txt helper_timeout)" = 0 &&
	test "$(event sys.txt helper_starts)" = 1 &&
	test "$(event user.txt helper_starts)" = 1
'

test_expect_success 'a query that starts failing is counted and asked again' '
	rocm_conf fail.conf fail.txt "" &&
	start_tallyd --log fail.log fail.conf &&
	busy=sys/devices/pci0000:00/0000:00:01.0/0000:03:00.0/gpu_busy_percent &&
	line="gauge rocm_utilization_percentage{card=\"1\"} 37" &&
	wait_for "grep -qxF \"\$line\" fail.txt" &&
	mv $busy busy.saved &&
	wait_for "test \$(event fail.txt query_errors) -ge 2" &&
	n=$(count fail.txt "$line") &&
	mv busy.saved $busy &&
	wait_for "test \$(count fail.txt \"\$line\") -gt $n" 20 &&
	test "$(event fail.txt helper_crashed)" = 0 &&
	test "$(event fail.txt helper_starts)" = 1 &&
	grep -qx "gauge rocm_utilization_percentage{card=\"0\"} 91" fail.txt &&
	stop_tallyd
'

test_expect_success 'a card that is not a symlink: the library aborts, tallyd not' '
	: an AMD device whose card is a directory, not a symlink &&
	mv sys/class/drm/card1 card1.link &&
	mkdir sys/class/drm/card1 &&
	ln -s ../../../devices/pci0000:00/0000:00:02.0/0000:83:00.0 \
		sys/class/drm/card1/device &&
	rocm_conf abort.conf abort.txt "max_backoff = 0.5;" &&
	start_tallyd --log abort.log abort.conf &&
	wait_for "test \$(event abort.txt helper_crashed) -ge 3" 20 &&
	grep "rocm_smi\[gpu\]: helper died.*the library said: .*Assertion" abort.log &&
	! grep "^gauge rocm_" abort.txt &&
	n=$(count abort.txt "gauge node_load1 ") &&
	wait_for "test \$(count abort.txt \"gauge node_load1 \") -gt $n"
'

test_expect_success 'the GPU metrics come back once the node is mended' '
	: a KFD node without io_links aborts the library too: mend the card \
	  under it, so that no helper starts on a node with one GPU, then \
	  mend the node in one step &&
	rmdir sys/class/kfd/kfd/topology/nodes/2/io_links &&
	rm -rf sys/class/drm/card1 &&
	mv card1.link sys/class/drm/card1 &&
	mkdir sys/class/kfd/kfd/topology/nodes/2/io_links &&
	wait_for "grep -q \"^gauge rocm_num_gpus 2\" abort.txt" 20 &&
	wait_for "grep -q \"^gauge rocm_temperature_celsius{card=\\\"1\\\",location=\\\"edge\\\"} 45\" abort.txt" &&
	kill -0 $TALLYD_PID &&
	stop_tallyd
'

test_expect_success 'a helper that hangs is killed at the deadline; scrapes stay fast' '
	port=$(free_port) &&
	rocm_conf hang.conf hang.txt "timeout = 0.5; max_backoff = 0.5;" \
		"prom = { plugin = \"prometheus\"; listen = \"127.0.0.1:$port\"; };" \
		", \"prom\"" &&
	TALLY_TEST_ROCM_HELPER=hang_if:$PWD/hang start_tallyd --log hang.log \
		--wait "port_listening $port" hang.conf &&
	wait_for "grep -q \"^gauge rocm_num_gpus 2\" hang.txt" &&
	touch hang &&
	: every scrape while reads hang answers within 1 s &&
	wait_for "{ curl -sf --max-time 1 http://127.0.0.1:$port/metrics >scrape ||
		    echo failed >>scrape-failed; } &&
		  test \$(event hang.txt helper_timeout) -ge 3" 30 &&
	test ! -e scrape-failed &&
	grep "^node_load1 " scrape &&
	grep "rocm_smi\[gpu\]: helper did not answer in time" hang.log &&
	test "$(dropped hang.txt helper_timeout)" -ge 3 &&
	n=$(count hang.txt "gauge rocm_num_gpus 2") &&
	rm hang &&
	wait_for "test \$(count hang.txt \"gauge rocm_num_gpus 2\") -gt $n" 20 &&
	stop_tallyd
'

# children PID - "pid state" of each child process of PID
children() {
	for s in /proc/[0-9]*/stat; do
		read -r c_pid c_comm c_st c_pp c_rest <"$s" 2>/dev/null &&
		test "$c_pp" = "$1" && echo "$c_pid $c_st"
	done
	:
}

test_expect_success 'a reload that replaces the input reaps its old helper' '
	rocm_conf rl.conf rl.txt "" &&
	start_tallyd --log rl.log rl.conf &&
	wait_for "grep -q \"2 GPU(s)\" rl.log" &&
	for opt in "ras = true;" "power_cap = true;" "ras = true;" ""; do
		n=$(count rl.log "2 GPU(s)") &&
		rocm_conf rl.conf rl.txt "$opt" &&
		reload_tallyd &&
		wait_for "test \$(count rl.log \"2 GPU(s)\") -gt $n" || return 1
	done &&
	children $TALLYD_PID >kids &&
	cat kids &&
	test $(wc -l <kids) = 1 &&
	! grep " Z$" kids &&
	: the input removed by a reload: no child at all &&
	sed -i -e "/gpu = {/,/};/d" -e "s/\"gpu\", //" rl.conf &&
	! grep rocm_smi rl.conf &&
	reload_tallyd &&
	children $TALLYD_PID >kids &&
	test ! -s kids &&
	kill -0 $TALLYD_PID &&
	stop_tallyd
'

test_done
