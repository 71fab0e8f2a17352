#!/bin/sh
#
# t1104-rocm-smi-protocol.t - what tallyd does with a helper that says
# wrong things (a stand-in helper script, no library, no root): a card it
# does not have, NaN and infinities, text that is not UTF-8, a temperature
# placeholder are each dropped, counted under their own reason and logged
# once a minute at most; the good lines of the same read are kept and the
# helper is not taken for broken. Two rocm_smi inputs in one collector are
# refused at --check-config.

test_description='rocm_smi input: the helper protocol decoder, one instance'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/rocm.sh"

# A helper of 2 GPUs whose every read holds good and bad lines
cat >bad-helper <<'EOF_HELPER'
#!/bin/sh
printf 'hello\t2\t%s\nready\t2\tfake\n' $$
while read -r req <&3; do
	test "$req" = read || continue
	printf 'm\trocm_num_gpus\t-\t2\n'
	printf 'm\trocm_utilization_percentage\t0\t50\n'
	printf 'm\trocm_utilization_percentage\t1\t60\n'
	printf 'm\trocm_utilization_percentage\t7\t70\n'
	printf 'm\trocm_vram_busy_percentage\t1\tnan\n'
	printf 'm\trocm_vram_busy_percentage\t0\t-inf\n'
	printf 'm\trocm_version_info\t0\t1\tdriver_ver=\377\tvbios=a\ttype=b\tschema=1.0\n'
	printf 'm\trocm_temperature_celsius\t1\t-5\tlocation=edge\n'
	printf 'm\trocm_temperature_celsius\t0\t44\tlocation=edge\n'
	printf 'end\t0\n'
done
EOF_HELPER
chmod +x bad-helper

test_expect_success 'bad lines dropped and counted by reason, good ones kept' '
	HELPER=$PWD/bad-helper rocm_conf bad.conf bad.txt "" &&
	start_tallyd --log bad.log bad.conf &&
	wait_for "test \$(dropped bad.txt not_finite) -ge 6" &&
	stop_tallyd &&
	grep -qxF "gauge rocm_utilization_percentage{card=\"0\"} 50" bad.txt &&
	grep -qxF "gauge rocm_utilization_percentage{card=\"1\"} 60" bad.txt &&
	grep -qxF "gauge rocm_temperature_celsius{card=\"0\",location=\"edge\"} 44" bad.txt &&
	! grep "card=\"7\"" bad.txt &&
	! grep "rocm_vram_busy_percentage" bad.txt &&
	! grep "rocm_version_info" bad.txt &&
	! grep "rocm_temperature_celsius{card=\"1\"" bad.txt &&
	n=$(dropped bad.txt card_out_of_range) &&
	test "$n" -ge 3 &&
	: the last capture holds as many of each per read &&
	test "$(dropped bad.txt not_finite)" -ge $((2 * n - 2)) &&
	test "$(dropped bad.txt invalid_utf8)" -ge $((n - 1)) &&
	test "$(dropped bad.txt invalid_temperature)" -ge $((n - 1)) &&
	test "$(dropped bad.txt malformed)" = 0 &&
	test "$(event bad.txt helper_crashed)" = 0 &&
	test "$(event bad.txt helper_starts)" = 1
'

test_expect_success 'each reason said once a minute at most, the line escaped' '
	test "$(count bad.log "dropped a line for a card it does not have")" = 1 &&
	test "$(count bad.log "dropped a value that is not a finite number")" = 1 &&
	test "$(count bad.log "dropped a line that is not UTF-8 text")" = 1 &&
	test "$(count bad.log "dropped a temperature no GPU reads")" = 1 &&
	grep -F "rocm_smi[gpu]: dropped a line for a card it does not have from the helper (2 GPU(s)): \"m\\trocm_utilization_percentage\\t7\\t70\" (counted as card_out_of_range)" bad.log &&
	grep -F "(counted as invalid_utf8)" bad.log
'

test_expect_success 'two rocm_smi inputs in one collector: refused at check' '
	rocm_conf two.conf two.txt "" &&
	sed -i "s|^  host = {|  gpu2 = { plugin = \"rocm_smi\"; helper = \"$ROCM_HELPER\"; };\n  host = {|" two.conf &&
	test_must_fail "$TALLYD" --check-config -c two.conf 2>err &&
	cat err &&
	grep "two.conf:[0-9]*: error: inputs.gpu2: plugin .rocm_smi. takes one instance per collector, and inputs.gpu (.*two.conf:[0-9]*) is one: both would read the same devices and write the same series" err &&
	: one is fine &&
	rocm_conf one.conf one.txt "" &&
	"$TALLYD" --check-config -c one.conf
'

test_done
