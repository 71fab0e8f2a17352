#!/bin/sh
#
# t1105-rocm-smi-restart.t - what tallyd says when its helper is restarted
# (stand-in helper scripts, no library, no root): the metrics a restarted
# helper no longer reads are named in one whole line, once per change of
# what is lost and not at every restart; a dead helper's old library text
# is not quoted as the cause of a later death; a new library version is
# said.

test_description='rocm_smi input: lost metrics and library text across restarts'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/rocm.sh"

# Each helper makes one read and exits. The first reads 64 cards; the
# second and third card 0 alone; later ones cards 0 and 1.
cat >lost-helper <<EOF_HELPER
#!/bin/sh
n=\$(cat "$PWD/lost-runs" 2>/dev/null || echo 0)
echo \$((n + 1)) >"$PWD/lost-runs"
printf 'hello\t2\t%s\nready\t64\tfake\n' \$\$
while read -r req <&3; do
	printf 'm\trocm_num_gpus\t-\t64\n'
	c=0
	while test \$c -lt 64; do
		if test \$n = 0 || test \$c = 0 || { test \$n -ge 3 && test \$c = 1; }; then
			printf 'm\trocm_utilization_percentage\t%d\t5\n' \$c
		fi
		c=\$((c + 1))
	done
	printf 'end\t0\n'
	exit 0
done
EOF_HELPER

# lost_line FILE N - the "lost" lines of FILE for N metrics
lost_line() {
	grep "rocm_smi\[gpu\]: helper restarted as uid [0-9]* reads $2 metrics fewer than the first one: lost " "$1"
}

test_expect_success 'metrics lost: one whole line per change, not per restart' '
	run_fake lost "max_backoff = 1.0;" \
		"test \$(event lost.txt helper_starts) -ge 6 &&
		 test \$(event lost.txt metrics_lost) -ge $((2 * 63 + 2 * 62))" &&
	test "$(lost_line lost.log 63 | wc -l)" = 1 &&
	test "$(lost_line lost.log 62 | wc -l)" = 1 &&
	for n in 63 62; do
		line=$(lost_line lost.log $n) &&
		: whole names, then how many more &&
		echo "$line" | grep -E "lost (rocm_utilization_percentage on card [0-9]+; )*rocm_utilization_percentage on card [0-9]+ and [0-9]+ more( \(what only root may read comes back when tallyd restarts; see doc/plugins/rocm_smi.md\))?$" &&
		listed=$(echo "$line" | grep -o "on card [0-9]*" | wc -l) &&
		more=$(echo "$line" | sed "s/.* and \([0-9]*\) more.*/\1/") &&
		test $((listed + more)) = $n || return 1
	done &&
	lost_line lost.log 62 | grep -v "on card 1[;]" | grep -q "on card 2;"
'

# A helper that the library talks to at its start, then reads twice and
# is killed in its third read; each helper's library version is new.
cat >lib-helper <<EOF_HELPER
#!/bin/sh
n=\$(cat "$PWD/lib-runs" 2>/dev/null || echo 0)
echo \$((n + 1)) >"$PWD/lib-runs"
printf 'hello\t2\t%s\n' \$\$
printf 'rocm_smi_lib: warming up the card\n'
printf 'ready\t2\tfake-%s\n' \$n
r=0
while read -r req <&3; do
	r=\$((r + 1))
	test \$r = 3 && kill -9 \$\$
	printf 'm\trocm_num_gpus\t-\t2\nend\t0\n'
done
EOF_HELPER

test_expect_success 'a death after good reads quotes no old library text; a new library is said' '
	run_fake lib "max_backoff = 1.0;" "test \$(event lib.txt helper_crashed) -ge 2" &&
	grep -F "rocm_smi[gpu]: helper died (killed by signal 9): GPU metrics missing until it is restarted in 1 s" lib.log &&
	! grep "the library said" lib.log &&
	grep -F "rocm_smi[gpu]: 2 GPU(s), ROCm SMI library fake-0" lib.log &&
	grep -F "rocm_smi[gpu]: 2 GPU(s), ROCm SMI library fake-1" lib.log
'

test_done
