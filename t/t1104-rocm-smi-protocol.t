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

# A helper whose lines are well formed but say what cannot be: a value out
# of its range, a metric not asked for or skipped, a series twice
cat >range-helper <<'EOF_HELPER'
#!/bin/sh
printf 'hello\t2\t%s\n' $$
printf 'skip\t1\trocm_average_socket_power_watts\tRSMI_STATUS_NOT_SUPPORTED\n'
printf 'ready\t2\tfake\n'
while read -r req <&3; do
	test "$req" = read || continue
	printf 'm\trocm_num_gpus\t-\t2\n'
	printf 'm\trocm_num_gpus\t-\t3\n'
	printf 'm\trocm_utilization_percentage\t0\t50\n'
	printf 'm\trocm_utilization_percentage\t1\t150\n'
	printf 'm\trocm_utilization_percentage\t0\t60\n'
	printf 'm\trocm_vram_used_percentage\t1\t100\n'
	printf 'm\trocm_average_socket_power_watts\t0\t-3\n'
	printf 'm\trocm_average_socket_power_watts\t1\t100\n'
	printf 'm\trocm_ras_umc_correctable_count\t0\t0\n'
	printf 'm\trocm_power_cap_watts\t0\t300\n'
	printf 'm\trocm_temperature_sensor_celsius\t0\t40\tlocation=edge\n'
	printf 'm\trocm_temperature_celsius\t0\t44\tlocation=edge\n'
	printf 'm\trocm_temperature_celsius\t0\t45\tlocation=junction\n'
	printf 'm\trocm_temperature_celsius\t1\t50\tlocation=edge\n'
	printf 'm\trocm_temperature_celsius\t1\t51\tlocation=edge\n'
	printf 'm\trocm_energy_joules\t1\t1000\n'
	printf 'end\t0\n'
done
EOF_HELPER

test_expect_success 'out of range, not asked for, skipped, twice: dropped by reason' '
	run_fake range "" "test \$(dropped range.txt duplicate_series) -ge 12" &&
	grep -qxF "gauge rocm_num_gpus 2" range.txt &&
	grep -qxF "gauge rocm_utilization_percentage{card=\"0\"} 50" range.txt &&
	grep -qxF "gauge rocm_vram_used_percentage{card=\"1\"} 100" range.txt &&
	grep -qxF "gauge rocm_temperature_celsius{card=\"0\",location=\"edge\"} 44" range.txt &&
	grep -qxF "gauge rocm_temperature_celsius{card=\"1\",location=\"edge\"} 50" range.txt &&
	grep -qxF "gauge rocm_energy_joules{card=\"1\"} 1000" range.txt &&
	! grep -e "rocm_num_gpus 3" -e "percentage{card=\"0\"} 60" \
		-e "percentage{card=\"1\"} 150" -e "location=\"junction\"" \
		-e "celsius{card=\"1\",location=\"edge\"} 51" \
		-e rocm_average_socket_power_watts -e rocm_ras_ \
		-e rocm_power_cap_watts -e rocm_temperature_sensor_celsius \
		range.txt &&
	n=$(dropped range.txt invalid_percentage) &&
	test "$n" -ge 3 &&
	: four duplicates, one each of the others per read &&
	test "$(dropped range.txt duplicate_series)" -ge $((4 * n - 4)) &&
	test "$(dropped range.txt negative_value)" -ge $((n - 1)) &&
	test "$(dropped range.txt skipped_metric)" -ge $((n - 1)) &&
	test "$(dropped range.txt not_requested)" -ge $((3 * n - 3)) &&
	test "$(dropped range.txt malformed)" = 0 &&
	test "$(event range.txt helper_crashed)" = 0 &&
	test "$(count range.log "dropped a percentage outside 0 to 100")" = 1 &&
	grep -F "dropped a metric it said it skips on that card from the helper (2 GPU(s)): \"m\\trocm_average_socket_power_watts\\t1\\t100\" (counted as skipped_metric)" range.log &&
	grep -F "(counted as not_requested)" range.log &&
	grep -F "(counted as negative_value)" range.log &&
	grep -F "(counted as duplicate_series)" range.log
'

# A helper whose read holds a line of 1025 bytes, newline included,
# after one of exactly 1024
long=$(printf "%01019d" 0)
cat >long-helper <<EOF_HELPER
#!/bin/sh
printf 'hello\t2\t%s\nready\t2\tfake\n' \$\$
printf 'note\t%s\n' "${long%?}"
while read -r req <&3; do
	test "\$req" = read || continue
	printf 'm\trocm_num_gpus\t-\t2\n'
	printf 'note\t%s\n' "$long"
	printf 'end\t0\n'
done
EOF_HELPER

test_expect_success 'a line longer than 1024 bytes is a crash, counted as line_too_long' '
	run_fake long "max_backoff = 1.0;" "test \$(event long.txt helper_crashed) -ge 2" &&
	: the line of 1024 bytes was taken &&
	grep -q "rocm_smi\[gpu\]: ${long%?}$" long.log &&
	test "$(dropped long.txt line_too_long)" -ge 2 &&
	test "$(dropped long.txt helper_crashed)" -ge 2 &&
	grep -F "rocm_smi[gpu]: helper broke the protocol (a line longer than 1024 bytes)" long.log &&
	! grep "rocm_smi\[gpu\]: $long" long.log
'

# The library's text (not protocol) that is not UTF-8, then a death
cat >utf8-helper <<'EOF_HELPER'
#!/bin/sh
printf 'hello\t2\t%s\nready\t2\tfake\n' $$
while read -r req <&3; do
	printf 'card Radeon \303\251 \377\376 MI\303\n'
	exit 3
done
EOF_HELPER

test_expect_success 'the library text in the log is escaped where not UTF-8' '
	run_fake utf8 "max_backoff = 1.0;" "test \$(event utf8.txt helper_crashed) -ge 1" &&
	grep -F "helper died (exit status 3): GPU metrics missing until it is restarted in 1 s; the library said: card Radeon $(printf "\303\251") \\xff\\xfe MI\\xc3" utf8.log &&
	iconv -f UTF-8 -t UTF-8 utf8.log >/dev/null
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
