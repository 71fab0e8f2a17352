#!/bin/sh
test_description='contrib/python installed with pip into a venv, as a site would, then used'
. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t35-lib.sh"

# Offline, as on a cluster: Debian's pyzmq, setuptools and wheel through
# --system-site-packages, no package index (--no-index), no build
# isolation (it would fetch setuptools).
if ! "$PYTHON3" -c "import zmq, setuptools, wheel, ensurepip" 2>/dev/null; then
	if test "$CI" = true; then
		test_expect_success 'the python3 packages are installed (CI installs them)' \
			'"$PYTHON3" -c "import zmq, setuptools, wheel, ensurepip"'
		test_done
	fi
	skip_all='needs python3-zmq, python3-setuptools, python3-wheel, python3-venv'
	test_done
fi
unset PYTHONPATH

test_expect_success 'pip install --no-build-isolation into a venv with the system packages' '
	cp -R "$top_srcdir/contrib/python" src &&
	chmod -R u+w src &&
	"$PYTHON3" -m venv --system-site-packages venv &&
	venv/bin/pip install --no-index --no-build-isolation ./src >pip.log 2>&1 ||
	{ cat pip.log; false; } &&
	venv/bin/pip show tally-trace >show &&
	grep "^Name: tally-trace$" show &&
	grep "^Requires: pyzmq$" show
'

test_expect_success 'the installed module is the one imported, and it traces' '
	mkdir elsewhere &&
	ep="ipc://$PWD/t.sock" &&
	start_recv "$ep" got --count 2 --idle 200 &&
	(cd elsewhere && ../venv/bin/python -c "
import sys, tally_trace
assert tally_trace.__file__.startswith(sys.prefix), tally_trace.__file__
t = tally_trace.Tracer(sys.argv[1], \"pip1\")
with t.span(\"installed\"):
    pass
t.close()
" "$ep") &&
	wait_recv &&
	grep -c "^begin trace=pip1 name=installed id=1 parent=0 " got >n &&
	echo 1 >expect && test_cmp expect n &&
	grep "^end trace=pip1 name=installed id=1 parent=0 " got
'

test_done
