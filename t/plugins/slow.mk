# t/plugins/slow.mk: the test-only blocking input (core worker threads)
check_LTLIBRARIES += t/plugins/slow.la
t_plugins_slow_la_SOURCES = t/plugins/slow.c
t_plugins_slow_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_slow_la_LIBADD = core/libtally.la -lm

# t/plugins/stall: the test-only input that blocks the loop on cue
check_LTLIBRARIES += t/plugins/stall.la
t_plugins_stall_la_SOURCES = t/plugins/stall.c
t_plugins_stall_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_stall_la_LIBADD = core/libtally.la
