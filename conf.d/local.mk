# conf.d/local.mk: the shipped example configuration
tallyconfdir = $(sysconfdir)/tally/conf.d
dist_tallyconf_DATA = \
	conf.d/00-global.conf \
	conf.d/10-host.conf \
	conf.d/12-jobs.conf \
	conf.d/15-textfile.conf \
	conf.d/20-traces.conf \
	conf.d/30-self.conf \
	conf.d/40-gpu.conf \
	conf.d/50-prometheus.conf \
	conf.d/60-statsd.conf \
	conf.d/61-span-metrics.conf \
	conf.d/70-graphite.conf \
	conf.d/70-influxdb.conf

# The main file, SYSCONFDIR/tally/tally.conf: installed only where there is
# none (it is the site's to edit), removed by uninstall only if unchanged.
EXTRA_DIST += contrib/tally.conf
install-data-local: install-tally-conf
install-tally-conf:
	$(MKDIR_P) '$(DESTDIR)$(sysconfdir)/tally'
	test -f '$(DESTDIR)$(sysconfdir)/tally/tally.conf' || \
		$(INSTALL_DATA) '$(srcdir)/contrib/tally.conf' \
			'$(DESTDIR)$(sysconfdir)/tally/tally.conf'
uninstall-local: uninstall-tally-conf
uninstall-tally-conf:
	if cmp -s '$(srcdir)/contrib/tally.conf' \
		'$(DESTDIR)$(sysconfdir)/tally/tally.conf'; then \
		rm -f '$(DESTDIR)$(sysconfdir)/tally/tally.conf'; fi
.PHONY: install-tally-conf uninstall-tally-conf

# The built-in configuration of a user collector that finds none
# (tallyd --user, tallyd(8)) is this conf.d, compiled into tallyd, where
# conf.d/user has a user collector's version of a file.
builtin_user_conf = conf.d/user/20-traces.conf conf.d/user/80-report.conf
core/builtin-conf.h: $(top_srcdir)/core/builtin-conf.sh $(dist_tallyconf_DATA) \
		     $(builtin_user_conf)
	$(AM_V_GEN)$(MKDIR_P) core && $(SHELL) $^ >$@.tmp && mv $@.tmp $@
core/tallyd-tallyd.$(OBJEXT): core/builtin-conf.h
CLEANFILES += core/builtin-conf.h
EXTRA_DIST += core/builtin-conf.sh $(builtin_user_conf)
