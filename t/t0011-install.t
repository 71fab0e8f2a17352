#!/bin/sh
test_description='make install: tallyd, plugins, unit, configuration, man pages'
# time limit: 1200 s (make install relinks every plugin: minutes on a
# loaded machine, more under the sanitizers)

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

# DESTDIR: libtool's install cannot take the trash directory's space
D=$(mktemp -d /tmp/tally-install.XXXXXX) || exit 1
tally_rm_at_exit "$D"

# make of the build tree, on its own: a `make -j check` running this test
# hands down a jobserver whose descriptors the test harness does not pass
mk() {
	env -u MAKEFLAGS -u MFLAGS -u MAKELEVEL make "$@"
}

# The build tree's installation directories, as make has them
mkvar() {
	mk -s -C "$top_builddir" --no-print-directory -f Makefile \
		-f "$SHARNESS_TEST_SRCDIR/lib/print-var.mk" print-"$1"
}

test_expect_success 'make install DESTDIR=...: the files a site needs' '
	mk -C "$top_builddir" install DESTDIR="$D" >install.log 2>&1 &&
	sbindir=$(mkvar sbindir) && sysconfdir=$(mkvar sysconfdir) &&
	mandir=$(mkvar mandir) && libdir=$(mkvar libdir) &&
	unitdir=$(mkvar systemdsystemunitdir) &&
	test -n "$sbindir" && test -n "$unitdir" &&
	test -x "$D$sbindir/tallyd" &&
	test -f "$D$libdir/tally/procfs.so" &&
	test -f "$D$libdir/tally/prometheus.so" &&
	test -f "$D$sysconfdir/tally/tally.conf" &&
	ls "$top_srcdir/conf.d" | grep "\.conf$" >shipped &&
	ls "$D$sysconfdir/tally/conf.d" >installed &&
	test_cmp shipped installed &&
	test -f "$D$mandir/man8/tallyd.8" &&
	test -f "$D$mandir/man5/tally.conf.5" &&
	test -f "$D$mandir/man3/tally-trace.3" &&
	test -f "$D$unitdir/tallyd.service"
'

test_expect_success 'the unit runs the installed tallyd, reloads, makes /run/tally' '
	u="$D$unitdir/tallyd.service" &&
	grep -x "ExecStartPre=$sbindir/tallyd --check-config" "$u" &&
	grep -x "ExecStart=$sbindir/tallyd --foreground --pid-file=/run/tally/tallyd.pid" "$u" &&
	grep -x "ExecReload=/bin/kill -HUP \$MAINPID" "$u" &&
	grep -x "RuntimeDirectory=tally" "$u" &&
	grep -x "ProtectKernelTunables=yes" "$u" &&
	! grep -x "PrivateDevices=yes" "$u" &&
	! grep -x "PrivateTmp=yes" "$u" &&
	! grep "@[a-z]*@" "$u"
'

prereq_cmd systemd-analyze SYSTEMD_ANALYZE
test_expect_success SYSTEMD_ANALYZE 'systemd-analyze verify accepts the unit' '
	: the unit names the installed path: verify a copy naming the DESTDIR one &&
	sed "s|$sbindir/tallyd|$D$sbindir/tallyd|" "$D$unitdir/tallyd.service" \
		>tallyd.service &&
	systemd-analyze verify --man=no ./tallyd.service >verify.out 2>&1 ||
	{ cat verify.out; false; } &&
	! grep "tallyd.service" verify.out
'

test_expect_success 'the installed configuration is valid for the installed tallyd' '
	LD_LIBRARY_PATH="$D$libdir" TALLY_PLUGIN_PATH= \
		"$D$sbindir/tallyd" --plugin-dir="$D$libdir/tally" \
		--check-config -c "$D$sysconfdir/tally/tally.conf" 2>check.err ||
	{ cat check.err; false; } &&
	grep "0 errors" check.err
'

test_expect_success 'a second install keeps the site'"'"'s tally.conf; uninstall leaves it' '
	echo "# edited by the site" >>"$D$sysconfdir/tally/tally.conf" &&
	mk -C "$top_builddir" install-tally-conf DESTDIR="$D" >install2.log 2>&1 &&
	grep "edited by the site" "$D$sysconfdir/tally/tally.conf" &&
	mk -C "$top_builddir" uninstall DESTDIR="$D" >uninstall.log 2>&1 &&
	test -f "$D$sysconfdir/tally/tally.conf" &&
	! test -e "$D$sbindir/tallyd" &&
	! test -e "$D$unitdir/tallyd.service"
'

test_done
