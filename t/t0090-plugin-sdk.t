#!/bin/sh
test_description='custom plugins: tally installed into a temporary root
(make install DESTDIR=...), contrib/example-plugin built out of the tree
against the installed files only (pkg-config tally-plugin), loaded by the
installed tallyd from global.plugin_path into a pipeline to prometheus; a
plugin built for another ABI is refused with its file named'
# time limit: 1200 s (make install relinks every plugin: minutes on a
# loaded machine, more under the sanitizers)

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

require_cmd pkg-config "pkg-config not installed"
require_cmd curl "curl not installed"

BUILD=$SHARNESS_TEST_DIRECTORY/..
SRC=$SHARNESS_TEST_SRCDIR/..
# the temporary root: libtool cannot install below a path with a space
# (the trash directory has one)
ROOT=$(mktemp -d /tmp/tally-sdk.XXXXXX) || exit 1
tally_rm_at_exit "$ROOT"

# itallyd ARGS... - the installed tallyd, seeing none of the build tree:
# its plugins and libtally from the temporary root (its compiled-in plugin
# directory and rpath are the real prefix's), not the build's plugins the
# suite has in TALLY_PLUGIN_PATH
write_itallyd() {
	cat >itallyd <<-SH &&
	#!/bin/sh
	exec env TALLY_PLUGIN_PATH="$LIBDIR/tally" LD_LIBRARY_PATH="$LIBDIR" \\
		"$SBIN/tallyd" "\$@"
	SH
	chmod +x itallyd
}

# ipkg ARGS... - pkg-config over the temporary root only (pkgconf puts
# the root before variables too, pkg-config only before -I and -L)
ipkg() {
	PKG_CONFIG_LIBDIR="$LIBDIR/pkgconfig" PKG_CONFIG_PATH= \
	PKG_CONFIG_SYSROOT_DIR="$ROOT" pkg-config "$@"
}

test_expect_success 'make install into a temporary root' '
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL -u MAKEOVERRIDES \
		make -C "$BUILD" install DESTDIR="$ROOT" >install.log 2>&1 &&
	pc=$(find "$ROOT" -name tally-plugin.pc) &&
	test -n "$pc" &&
	LIBDIR=$(dirname "$(dirname "$pc")") &&
	SBIN=$(dirname "$(find "$ROOT" -path "*bin/tallyd" -type f)") &&
	test -x "$SBIN/tallyd" &&
	test -f "$LIBDIR/tally/prometheus.so" &&
	inc=$(ipkg --variable=includedir tally-plugin) &&
	case $inc in "$ROOT"*) ;; *) inc=$ROOT$inc ;; esac &&
	test -f "$inc/tally/plugin.h" &&
	man_dir=$(find "$ROOT" -type d -name man5) &&
	grep -q "^\.SS procfs" "$man_dir/tally-plugins.5" &&
	write_itallyd &&
	./itallyd --version
'

test_expect_success 'the example builds against the installed files only' '
	mkdir ex &&
	cp "$SRC/contrib/example-plugin/Makefile" \
	   "$SRC/contrib/example-plugin/example.c" \
	   "$SRC/contrib/example-plugin/test.sh" ex/ &&
	ipkg --cflags tally-plugin >cflags &&
	grep -F -- "-I$ROOT" cflags &&
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL \
		PKG_CONFIG_LIBDIR="$LIBDIR/pkgconfig" PKG_CONFIG_PATH= \
		PKG_CONFIG_SYSROOT_DIR="$ROOT" make -C ex >build.log 2>&1 &&
	test -f ex/example.so &&
	nm -D --defined-only ex/example.so | awk "\$2 != \"A\" { print \$3 }" |
		grep -v "^_" >exports &&
	echo tally_plugin >expect &&
	test_cmp expect exports
'

test_expect_success 'its own test passes with the installed tallyd' '
	TALLYD=$PWD/itallyd ex/test.sh
'

test_expect_success 'its options, described by the installed tallyd' '
	./itallyd --plugin-dir=ex --describe=example >desc &&
	grep "^example (input): the number in a file, as a gauge" desc &&
	grep -E "^  path +string \(required\)" desc &&
	grep -E "^  scale +number .*\(default: 1\)" desc
'

test_expect_success 'in a pipeline to prometheus, from global.plugin_path' '
	mkdir plugins && cp ex/example.so plugins/ &&
	echo 42 >value &&
	port=$(free_port) &&
	cat >sdk.conf <<-EOF &&
	global = { plugin_path = ["$PWD/plugins", "$LIBDIR/tally"];
		   interval = 0.2; };
	inputs = { e = { plugin = "example"; path = "$PWD/value";
			 scale = 0.5; name = "sdk_value"; };
		   self = { plugin = "self"; }; };
	outputs = { prom = { plugin = "prometheus";
			     listen = "127.0.0.1:$port"; }; };
	pipelines = { p = { from = ["e", "self"]; to = ["prom"]; }; };
	EOF
	TALLYD=$PWD/itallyd start_tallyd sdk.conf &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >page &&
		grep -qxF \"sdk_value{path=\\\"$PWD/value\\\"} 21\" page" &&
	echo oops >value &&
	wait_for "curl -sf http://127.0.0.1:$port/metrics >page &&
		grep \"^tally_dropped_total{.*instance=\\\"e\\\".*reason=\\\"bad_value\\\"} [1-9]\" page" &&
	grep "no number in the file (logged once)" tallyd.log &&
	stop_tallyd
'

test_expect_success 'a plugin built for another ABI is refused, its file named' '
	cat >old.c <<-\EOF &&
	#include <tally/plugin.h>
	__attribute__((visibility("default")))
	const struct tally_plugin tally_plugin = {
		.abi = TALLY_PLUGIN_ABI + 1,
		.size = sizeof(struct tally_plugin),
		.name = "old",
		.kind = TALLY_KIND_INPUT,
	};
	EOF
	${CC:-cc} -fPIC -shared $(ipkg --cflags tally-plugin) -o plugins/old.so old.c &&
	cat >old.conf <<-EOF &&
	global = { plugin_path = ["$PWD/plugins", "$LIBDIR/tally"]; };
	inputs = { o = { plugin = "old"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:1"; }; };
	pipelines = { p = { from = ["o"]; to = ["prom"]; }; };
	EOF
	test_must_fail ./itallyd --check-config -c old.conf 2>err &&
	cat err &&
	grep -F "$PWD/plugins/old.so: refused: ABI version mismatch" err
'

test_done
