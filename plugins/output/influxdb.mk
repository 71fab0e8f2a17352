# plugins/output/influxdb.mk: the influxdb output, its unit test, fuzz
# target and integration tests (included from Makefile.am)
#
# The line protocol (line.c) is pure: unit-tested and fuzzed on its own;
# influxdb.c batches points and sends them through the core's HTTP client
# (tally/http.h).

pkgplugin_LTLIBRARIES += plugins/output/influxdb.la
plugins_output_influxdb_la_SOURCES = \
	plugins/output/influxdb/influxdb.c \
	plugins/output/influxdb/line.c \
	plugins/output/influxdb/line.h
# own flags: the plugin and the unit test build line.c each their way
plugins_output_influxdb_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS)
plugins_output_influxdb_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_output_influxdb_la_LIBADD = core/libtally.la $(LIBEVENT_LIBS) -lm

# Unit test: escaping and rendering, byte for byte.
check_PROGRAMS += t/unit/influxdb-line.t
t_unit_influxdb_line_t_SOURCES = t/unit/influxdb-line.c \
	plugins/output/influxdb/line.c plugins/output/influxdb/line.h
t_unit_influxdb_line_t_LDADD = t/unit/libtap.la core/libtally.la -lm
TESTS += t/unit/influxdb-line.t

# libFuzzer target for the escaping (make fuzz).
FUZZ_TARGETS += contrib/fuzz/influxdb_line_fuzz
# the renderer reads records through the core (labels, interval records):
# it links all of libtally, as config_fuzz does, so the list cannot go stale
INFLUX_FUZZ_SRC = $(top_srcdir)/contrib/fuzz/influxdb_line_fuzz.c \
	$(top_srcdir)/plugins/output/influxdb/line.c \
	$(addprefix $(top_srcdir)/,$(filter %.c,$(core_libtally_la_SOURCES)))
contrib/fuzz/influxdb_line_fuzz: $(INFLUX_FUZZ_SRC) tally-dirs.h
	@$(MKDIR_P) contrib/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) $(LIBCONFIG_CFLAGS) \
		$(LIBEVENT_CFLAGS) $(ZLIB_CFLAGS) -o $@ $(INFLUX_FUZZ_SRC) \
		$(LIBCONFIG_LIBS) $(LIBEVENT_LIBS) $(ZLIB_LIBS) $(LTDL_LIBS) \
		$(PTHREAD_LIBS) -lm
EXTRA_DIST += contrib/fuzz/influxdb_line_fuzz.c \
	contrib/fuzz/corpus/influxdb_line

# Integration: the real influxd (Debian's influxdb 1.6), a recording
# server for the v2 API's request shape, a counting relay for restarts.
TESTS += t/t5001-influxdb.t t/t5002-influxdb-restart.t \
	t/t5003-influxdb-reload.t t/t5004-influxdb-413.t
EXTRA_DIST += t/t5001-influxdb.t t/t5002-influxdb-restart.t \
	t/t5003-influxdb-reload.t t/t5004-influxdb-413.t t/t50-lib.sh \
	doc/plugins/influxdb.md
