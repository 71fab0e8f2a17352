# t/plugins/spangen.mk: spangen, the test-only input of the prometheus
# output's tests (spans, histograms, summaries, odd names); included from
# plugins/output/prometheus.mk
check_LTLIBRARIES += t/plugins/spangen.la
t_plugins_spangen_la_SOURCES = t/plugins/spangen.c
t_plugins_spangen_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_spangen_la_LIBADD = core/libtally.la -lm
