# plugins/input/textfile.mk: the textfile input (*.prom files, as
# node_exporter's textfile collector) and its tests (included from
# Makefile.am). The parser it uses is the core's (core/expo-parse.c).

pkgplugin_LTLIBRARIES += plugins/input/textfile.la
plugins_input_textfile_la_SOURCES = plugins/input/textfile.c
plugins_input_textfile_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_input_textfile_la_LIBADD = core/libtally.la

TESTS += t/t1090-textfile.t
EXTRA_DIST += t/t1090-textfile.t t/fixtures/textfile doc/plugins/textfile.md
