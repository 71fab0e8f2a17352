#!/bin/sh
#
# t1103-rocm-smi-privdrop.t - the rocm_smi input of a system collector that
# drops root (global.user): the first helper starts before the drop and
# reads what root may read; a helper restarted after it runs as the
# configured user, and the plugin names each metric that user cannot read.
# Real librocm_smi64 on the fixture node, in a private mount namespace.
# Root only (CI runs the suite as root).

test_description='rocm_smi input: a helper restarted after the privilege drop'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/rocm.sh"

if ! test_have_prereq ROOTNS; then
	skip_all='needs root and unshare -m to bind a fixture over /sys'
	test_done
fi
if ! getent passwd nobody >/dev/null; then
	skip_all='needs a user "nobody" to drop to'
	test_done
fi

cp -a "$FIXTURES/sys-rocm" sys &&
rocm_empty_dirs sys &&
mkdir shm &&
ns_tallyd "$PWD/sys" "$PWD/shm" &&
TALLYD=$PWD/ns-tallyd || exit 1
# card 1's power reading: root's alone, as some drivers' files are
power=$(ls sys/devices/pci0000:00/0000:00:01.0/0000:03:00.0/hwmon/*/power1_average)
chmod 0400 "$power" || exit 1
TALLY_RUNTIME_DIR=$PWD/run
export TALLY_RUNTIME_DIR

test_expect_success 'a helper restarted as global.user names what it lost; the rest goes on' '
	rocm_conf drop.conf drop.txt "" &&
	sed -i "s/^global = { /global = { user = \"nobody\"; /" drop.conf &&
	TALLY_TEST_ROCM_HELPER=abort_if:$PWD/crash start_tallyd --log drop.log drop.conf &&
	grep "now running as user nobody" drop.log &&
	line="gauge rocm_average_socket_power_watts{card=\"1\"} 87" &&
	wait_for "grep -qxF \"\$line\" drop.txt" &&
	test "$(ps -o user= -p $TALLYD_PID)" = nobody &&
	: the first helper runs as root, without capabilities &&
	hpid=$(pgrep -P $TALLYD_PID) &&
	test "$(ps -o user= -p $hpid)" = root &&
	touch crash &&
	wait_for "test \$(event drop.txt helper_crashed) -ge 1" 20 &&
	rm crash &&
	wait_for "test \$(event drop.txt metrics_lost) -ge 1" 20 &&
	grep "rocm_smi\[gpu\]: helper restarted as uid $(id -u nobody) reads 1 metric fewer than the first one: lost rocm_average_socket_power_watts on card 1 (what only root may read" drop.log &&
	n=$(count drop.txt "gauge rocm_num_gpus 2") &&
	wait_for "test \$(count drop.txt \"gauge rocm_num_gpus 2\") -gt $n" 20 &&
	hpid=$(pgrep -P $TALLYD_PID) &&
	test "$(ps -o user= -p $hpid)" = nobody &&
	stop_tallyd &&
	: what the restarted helper reads is still read &&
	tail -n 40 drop.txt | grep -qxF "gauge rocm_temperature_celsius{card=\"1\",location=\"edge\"} 45" &&
	test "$(event drop.txt metrics_lost)" = 1
'

test_expect_success 'a reload that replaces the input after the drop names what it lost too' '
	rocm_conf rl.conf rl.txt "" &&
	sed -i "s/^global = { /global = { user = \"nobody\"; /" rl.conf &&
	start_tallyd --log rl.log rl.conf &&
	line="gauge rocm_average_socket_power_watts{card=\"1\"} 87" &&
	wait_for "grep -qxF \"\$line\" rl.txt" &&
	rocm_conf rl.conf rl.txt "ras = true;" &&
	sed -i "s/^global = { /global = { user = \"nobody\"; /" rl.conf &&
	reload_tallyd &&
	wait_for "test \$(event rl.txt metrics_lost) -ge 1" 20 &&
	grep "rocm_smi\[gpu\]: helper started by a reload as uid $(id -u nobody) reads 1 metric fewer than the first one: lost rocm_average_socket_power_watts on card 1 (what only root may read" rl.log &&
	: the RAS metrics the first helper did not read are not lost &&
	! grep "lost .*rocm_ras" rl.log &&
	n=$(count rl.txt "gauge rocm_num_gpus 2") &&
	wait_for "test \$(count rl.txt \"gauge rocm_num_gpus 2\") -gt $n" 20 &&
	stop_tallyd &&
	test "$(event rl.txt metrics_lost)" = 1
'

test_expect_success 'a collector that keeps root loses nothing on a restart' '
	rocm_conf root.conf root.txt "" &&
	TALLY_TEST_ROCM_HELPER=abort_if:$PWD/crash start_tallyd --log root.log root.conf &&
	line="gauge rocm_average_socket_power_watts{card=\"1\"} 87" &&
	wait_for "grep -qxF \"\$line\" root.txt" &&
	touch crash &&
	wait_for "test \$(event root.txt helper_crashed) -ge 1" 20 &&
	rm crash &&
	n=$(count root.txt "$line") &&
	wait_for "test \$(count root.txt \"\$line\") -gt $n" 20 &&
	stop_tallyd &&
	test "$(event root.txt metrics_lost)" = 0 &&
	! grep "reads .* fewer" root.log
'

test_done
