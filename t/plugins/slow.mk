# t/plugins/slow.mk: the test-only blocking input (core worker threads)
check_LTLIBRARIES += t/plugins/slow.la
t_plugins_slow_la_SOURCES = t/plugins/slow.c
t_plugins_slow_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_slow_la_LIBADD = core/libtally.la -lm
