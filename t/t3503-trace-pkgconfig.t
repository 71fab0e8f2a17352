#!/bin/sh
test_description='an application built with pkg-config from a private
install prefix starts (libtally-trace.so.0 is found without LD_LIBRARY_PATH)'
. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd pkg-config
: "${CC:=cc}"
# a sanitizer build's library needs its runtime in the program too
ldd "$top_builddir/core/client/.libs/libtally-trace.so" | grep -q libasan &&
	CC="$CC -fsanitize=address,undefined"

cat >app.c <<\EOF
#include <stdio.h>
#include <tally/trace.h>

int main(int argc, char **argv)
{
	struct tally_trace *tr = tally_trace_open(argv[1], "pc");
	struct tally_trace_close_stats st;

	tally_trace_end(tr, tally_trace_begin(tr, "a"));
	tally_trace_close_stats(tr, &st);
	printf("%s events=%llu\n", tr ? "opened" : "failed",
	       (unsigned long long)st.events);
	return !tr;
}
EOF

# What `make install` installs for applications (the libraries, the
# headers, the .pc), under DESTDIR: the prefix stays the configured one,
# and pkg-config --define-prefix finds the files where they are. Not in
# the trash directory: libtool cannot install to a path with a space. The
# make running the tests is not this make's parent: no jobserver.
ROOT=$(mktemp -d /tmp/tally-t3503.XXXXXX) || exit 1
tally_rm_at_exit "$ROOT"

test_expect_success 'install the client library under a temporary root' '
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		${MAKE:-make} -C "$top_builddir" DESTDIR="$ROOT" \
		install-libLTLIBRARIES install-pkgincludeHEADERS \
		install-pkgconfigDATA >install.log 2>&1 &&
	pc=$(find "$ROOT" -name tally-trace.pc) &&
	test -n "$pc" &&
	dirname "$pc" >pcdir
'

test_expect_success 'build with pkg-config, run without LD_LIBRARY_PATH' '
	PKG_CONFIG_PATH=$(cat pcdir) pkg-config --define-prefix \
		--cflags --libs tally-trace >flags &&
	tally_diag <flags &&
	grep -- "-Wl,-rpath,$ROOT/" flags &&
	$CC -o app app.c $(cat flags) &&
	env -u LD_LIBRARY_PATH ./app "ipc://$PWD/none.sock" >out &&
	echo "opened events=2" >expect &&
	test_cmp expect out
'

echo "opened events=2" >expect
test_expect_success 'the build-tree line of the README works the same' '
	$CC -o app2 app.c -I"$top_srcdir/include" \
		-L"$top_builddir/core/client/.libs" \
		-Wl,-rpath,"$top_builddir/core/client/.libs" -ltally-trace &&
	env -u LD_LIBRARY_PATH ./app2 "ipc://$PWD/none.sock" >out &&
	test_cmp expect out
'

test_done
