# conf.d/local.mk: the shipped example configuration
tallyconfdir = $(sysconfdir)/tally/conf.d
dist_tallyconf_DATA = \
	conf.d/00-global.conf \
	conf.d/10-host.conf \
	conf.d/20-traces.conf \
	conf.d/30-self.conf \
	conf.d/50-prometheus.conf
