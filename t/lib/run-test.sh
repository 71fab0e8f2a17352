#!/bin/sh
# t/lib/run-test.sh TEST [ARGS...] - run one test with a time limit
#
# make check runs every test through this (T_LOG_COMPILER in t/local.mk):
# a hung test must fail with a reason instead of holding make check, and
# CI, forever. timeout(1) signals the test's whole process group, so the
# daemons and children it started go too. The limit is TALLY_TEST_TIMEOUT
# seconds (default 300; a sanitizer build is several times slower), or
# for a test that builds (make install, a plugin), the "# time limit: N s"
# line in its header.
limit=${TALLY_TEST_TIMEOUT:-$(sed -n 's/^# time limit: \([0-9][0-9]*\) s.*$/\1/p' \
	"$1" | head -n 1)}
limit=${limit:-300}

timeout -k 10 "$limit" "$@"
rc=$?
if test $rc -eq 124 || test $rc -eq 137; then
	# After the test's own output: the driver reports it as an error.
	echo "Bail out! $1 timed out after $limit s (TALLY_TEST_TIMEOUT)"
fi
exit $rc
