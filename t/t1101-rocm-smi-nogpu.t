#!/bin/sh
#
# t1101-rocm-smi-nogpu.t - the rocm_smi input on a node without an AMD GPU:
# one log line saying why, an idle input that asks again, the other inputs
# unaffected, exit status 0 with --once. As root the library gets an empty
# /sys of its own (a node with GPUs then runs the test too); otherwise the
# machine itself must have no KFD.

test_description='rocm_smi input: no GPU, no library, no helper'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/lib/rocm.sh"

if test_have_prereq ROOTNS; then
	mkdir empty-sys &&
	ns_tallyd "$PWD/empty-sys" &&
	TALLYD=$PWD/ns-tallyd
elif test -e /sys/class/kfd; then
	skip_all='this machine has a KFD and the test cannot hide it (not root)'
	test_done
fi

test_expect_success '--once: exit 0, one line saying why, host metrics there' '
	rocm_conf once.conf out.txt "" &&
	"$TALLYD" --once -c once.conf >log.txt 2>&1 &&
	cat log.txt &&
	test "$(count log.txt "rocm_smi[gpu]")" = 1 &&
	: --once never tries again, and says so &&
	grep "rocm_smi\[gpu\]: no GPU metrics: rsmi_init: .*; not tried again (tallyd --once reads once)$" log.txt &&
	! grep "trying again" log.txt &&
	! grep "^gauge rocm_" out.txt &&
	grep "^gauge node_load1 " out.txt &&
	test "$(event out.txt helper_crashed)" = 0
'

test_expect_success 'daemon: idle input asks again, logs once, host goes on' '
	rocm_conf run.conf out.txt "max_backoff = 0.2;" &&
	start_tallyd run.conf &&
	wait_for "test \$(event out.txt helper_starts) -ge 4" &&
	wait_for "test \$(count out.txt \"gauge node_load1 \") -ge 3" &&
	stop_tallyd &&
	cat tallyd.log &&
	test "$(count tallyd.log "no GPU metrics")" = 1 &&
	test "$(event out.txt helper_crashed)" = 0 &&
	test "$(event out.txt helper_timeout)" = 0 &&
	! grep "^gauge rocm_" out.txt
'

test_expect_success 'a library that cannot be loaded: said once, idle' '
	rocm_conf lib.conf out.txt "library = \"$PWD/no-such-lib.so\";" &&
	"$TALLYD" --once -c lib.conf >log.txt 2>&1 &&
	grep "no GPU metrics: cannot load $PWD/no-such-lib.so.*; not tried again (tallyd --once reads once)$" log.txt &&
	test "$(count log.txt "rocm_smi[gpu]")" = 1 &&
	grep "^gauge node_load1 " out.txt
'

test_expect_success 'a library without rsmi_init: said once, idle' '
	rocm_conf notrsmi.conf out.txt "library = \"libz.so.1\";" &&
	"$TALLYD" --once -c notrsmi.conf >log.txt 2>&1 &&
	grep "no GPU metrics: libz.so.1 has no rsmi_init: not a ROCm SMI library" log.txt
'

test_expect_success 'a helper that is not installed, or not a file: refused at check' '
	(HELPER=$PWD/nowhere/tally-rocm-helper && rocm_conf nohelper.conf out.txt "") &&
	test_must_fail "$REAL_TALLYD" --check-config -c nohelper.conf 2>err &&
	grep "helper $PWD/nowhere/tally-rocm-helper: No such file or directory (is tally installed whole?)" err &&
	(HELPER=$PWD && rocm_conf dirhelper.conf out.txt "") &&
	test_must_fail "$REAL_TALLYD" --check-config -c dirhelper.conf 2>err &&
	grep "helper $PWD: not a regular file" err
'

test_expect_success 'an empty library is refused at check' '
	rocm_conf nolib.conf out.txt "library = \"\";" &&
	test_must_fail "$REAL_TALLYD" --check-config -c nolib.conf 2>err &&
	grep "library: empty" err
'

test_expect_success 'a relative library path is refused at check' '
	rocm_conf rellib.conf out.txt "library = \"lib/librocm_smi64.so.1\";" &&
	test_must_fail "$REAL_TALLYD" --check-config -c rellib.conf 2>err &&
	cat err &&
	grep "rellib.conf:[0-9]*: error: inputs.gpu: library: \"lib/librocm_smi64.so.1\" is a relative path, which the helper would look up from its own working directory: give an absolute path, or a bare library name the loader searches (\"librocm_smi64.so.1\")" err &&
	rocm_conf dotlib.conf out.txt "library = \"./librocm_smi64.so.1\";" &&
	test_must_fail "$REAL_TALLYD" --check-config -c dotlib.conf 2>err &&
	grep "is a relative path" err &&
	: a bare name and an absolute path pass &&
	rocm_conf barelib.conf out.txt "library = \"librocm_smi64.so.1\";" &&
	"$REAL_TALLYD" --check-config -c barelib.conf &&
	rocm_conf abslib.conf out.txt "library = \"/opt/rocm/lib/librocm_smi64.so.1\";" &&
	"$REAL_TALLYD" --check-config -c abslib.conf
'

test_expect_success 'a helper gone after the start: counted, said once, tried again' '
	mkdir -p h && cp "$ROCM_HELPER" h/tally-rocm-helper &&
	(HELPER=$PWD/h/tally-rocm-helper &&
	 rocm_conf gone.conf gone.txt "max_backoff = 0.2;") &&
	start_tallyd --log gone.log gone.conf &&
	wait_for "test \$(event gone.txt helper_starts) -ge 2" &&
	mv h/tally-rocm-helper h/saved &&
	wait_for "test \$(event gone.txt helper_start_failed) -ge 3" &&
	test "$(count gone.log "cannot start the helper $PWD/h/tally-rocm-helper: No such file or directory")" = 1 &&
	n=$(event gone.txt helper_starts) &&
	mv h/saved h/tally-rocm-helper &&
	wait_for "test \$(event gone.txt helper_starts) -gt $n" &&
	stop_tallyd
'

test_expect_success 'timeout not shorter than the interval is refused' '
	rocm_conf bad.conf out.txt "timeout = 1.5;" &&
	test_must_fail "$REAL_TALLYD" --check-config -c bad.conf 2>err &&
	grep "timeout (1.5 s) must be shorter than the interval (1 s)" err
'

test_done
