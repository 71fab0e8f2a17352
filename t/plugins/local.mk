# t/plugins/local.mk: test-only plugins, built for make check, never
# installed (TEST_PLUGIN_LDFLAGS adds -rpath /nowhere so libtool makes
# them shared modules). Tests find them through TALLY_PLUGIN_PATH.

# Working plugins: an input, a filter and an output whose behaviour tests
# can predict exactly (see the comment at the top of each source).
check_LTLIBRARIES += t/plugins/counter.la t/plugins/testfilter.la \
	t/plugins/capture.la
t_plugins_counter_la_SOURCES = t/plugins/counter.c
t_plugins_counter_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_counter_la_LIBADD = core/libtally.la
t_plugins_testfilter_la_SOURCES = t/plugins/testfilter.c
t_plugins_testfilter_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_testfilter_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS)
t_plugins_testfilter_la_LIBADD = core/libtally.la $(LIBEVENT_LIBS)
t_plugins_capture_la_SOURCES = t/plugins/capture.c
t_plugins_capture_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_capture_la_LIBADD = core/libtally.la -lm

# The typed options (numbers, sizes, durations, wide integers) end to end.
check_LTLIBRARIES += t/plugins/opttypes.la
t_plugins_opttypes_la_SOURCES = t/plugins/opttypes.c
t_plugins_opttypes_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_opttypes_la_LIBADD = core/libtally.la

# Broken plugins the loader must refuse, one defect each, all from
# broken.c.
check_LTLIBRARIES += t/plugins/badabi.la t/plugins/badsize.la \
	t/plugins/misnamed.la t/plugins/noops.la
t_plugins_badabi_la_SOURCES = t/plugins/broken.c
t_plugins_badabi_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_BADABI
t_plugins_badabi_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_badsize_la_SOURCES = t/plugins/broken.c
t_plugins_badsize_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_BADSIZE
t_plugins_badsize_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_misnamed_la_SOURCES = t/plugins/broken.c
t_plugins_misnamed_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_MISNAMED
t_plugins_misnamed_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)
t_plugins_noops_la_SOURCES = t/plugins/broken.c
t_plugins_noops_la_CPPFLAGS = $(AM_CPPFLAGS) -DBROKEN_NOOPS
t_plugins_noops_la_LDFLAGS = $(TEST_PLUGIN_LDFLAGS)

# capture's line format, pinned down line kind by line kind.
check_PROGRAMS += t/unit/capture.t
t_unit_capture_t_SOURCES = t/unit/capture.c
t_unit_capture_t_LDADD = t/unit/libtap.la core/libtally.la -lm
TESTS += t/unit/capture.t
