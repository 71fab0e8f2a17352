# plugins/output/prometheus_push.mk: the prometheus_push output (the
# prometheus output's page pushed to a Pushgateway or VictoriaMetrics) and
# its integration tests (included from Makefile.am, after prometheus.mk:
# it builds the prometheus output's series store, PROM_SOURCES, into
# itself, one source for both)

pkgplugin_LTLIBRARIES += plugins/output/prometheus_push.la
plugins_output_prometheus_push_la_SOURCES = \
	plugins/output/prometheus/push.c $(PROM_SOURCES)
plugins_output_prometheus_push_la_CPPFLAGS = $(AM_CPPFLAGS) \
	$(LIBEVENT_CFLAGS) $(ZLIB_CFLAGS)
plugins_output_prometheus_push_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_output_prometheus_push_la_LIBADD = core/libtally.la $(LIBEVENT_LIBS) \
	$(ZLIB_LIBS) -lm

PUSH_TESTS = t/t5102-push-pushgateway.t t/t5103-victoria-metrics.t
TESTS += $(PUSH_TESTS)
EXTRA_DIST += $(PUSH_TESTS) doc/plugins/prometheus_push.md
