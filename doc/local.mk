# doc/local.mk: man pages and reference documents
dist_man_MANS += doc/tallyd.8 doc/tally.conf.5
EXTRA_DIST += doc/plugins contrib/systemd/tallyd.service

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
