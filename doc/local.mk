# doc/local.mk: man pages and reference documents
dist_man_MANS += doc/tallyd.8 doc/tally.conf.5
EXTRA_DIST += doc/plugins

# The system collector's systemd unit, with the installation's paths
EXTRA_DIST += contrib/systemd/tallyd.service.in
if INSTALL_SYSTEMD_UNIT
systemdsystemunit_DATA = contrib/systemd/tallyd.service
endif
contrib/systemd/tallyd.service: $(top_srcdir)/contrib/systemd/tallyd.service.in Makefile
	$(AM_V_GEN)$(MKDIR_P) contrib/systemd && \
	sed -e 's|@sbindir[@]|$(sbindir)|g' \
		$(top_srcdir)/contrib/systemd/tallyd.service.in >$@.tmp && \
	mv -f $@.tmp $@
all-local: contrib/systemd/tallyd.service
CLEANFILES += contrib/systemd/tallyd.service

# tally-plugins(5): the option tables of the plugins built here, printed by
# the tallyd built here (tallyd --describe), so the reference cannot drift
# from the code. Leak checks are off: a sanitizer build runs it too.
man_MANS = doc/tally-plugins.5
EXTRA_DIST += doc/gen-plugins-man
CLEANFILES += doc/tally-plugins.5
doc/tally-plugins.5: $(srcdir)/doc/gen-plugins-man core/tallyd$(EXEEXT) \
		$(pkgplugin_LTLIBRARIES)
	$(AM_V_GEN)$(MKDIR_P) doc && \
	ASAN_OPTIONS=detect_leaks=0 $(SHELL) $(srcdir)/doc/gen-plugins-man \
		core/tallyd$(EXEEXT) "$(PACKAGE_VERSION)" \
		plugins/input/.libs:plugins/filter/.libs:plugins/output/.libs \
		>$@.tmp && mv -f $@.tmp $@
