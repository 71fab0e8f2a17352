# plugins/output/file.mk: the file output (JSON lines, Chrome trace JSON,
# CSV), its unit and integration tests (included from Makefile.am)

pkgplugin_LTLIBRARIES += plugins/output/file.la
plugins_output_file_la_SOURCES = \
	plugins/output/file/file.c \
	plugins/output/file/render.c \
	plugins/output/file/render.h
# own flags: the plugin and the unit test build render.c each their way
plugins_output_file_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS)
plugins_output_file_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_output_file_la_LIBADD = core/libtally.la $(LIBEVENT_LIBS) -lm

# Unit test: the renderers (pure code), byte for byte.
check_PROGRAMS += t/unit/file-render.t
t_unit_file_render_t_SOURCES = t/unit/file-render.c \
	plugins/output/file/render.c plugins/output/file/render.h
t_unit_file_render_t_LDADD = t/unit/libtap.la core/libtally.la -lm
TESTS += t/unit/file-render.t

EXTRA_DIST += doc/plugins/file.md

# Integration: the chrome format end to end (tallyd --user -- CMD, four
# traced ranks, procfs counters, SIGTERM, SIGHUP, a crash, rotation).
TESTS += t/t2101-file-chrome.t
EXTRA_DIST += t/t2101-file-chrome.t t/t21-chrome-check.py
# Integration: JSON lines and CSV, and files that cannot be written.
TESTS += t/t2102-file-errors.t
EXTRA_DIST += t/t2102-file-errors.t
