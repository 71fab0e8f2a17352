# plugins/output/remote_write.mk: the remote_write output, its unit test
# and integration tests (included from Makefile.am). Built only where
# configure found protoc-c, libprotobuf-c and libsnappy (Debian:
# protobuf-c-compiler, libprotobuf-c-dev, libsnappy-dev).
#
# remote.pb-c.[ch] are made from remote.proto by protoc-c at build time,
# in the build tree; encode.c (records into a packed, compressed
# WriteRequest) is pure and unit-tested on its own.

RW_TESTS = t/t5101-remote-write-prometheus.t

EXTRA_DIST += plugins/output/remote_write/remote.proto \
	doc/plugins/remote_write.md $(RW_TESTS) t/t51-lib.sh

if BUILD_PLUGIN_REMOTE_WRITE
RW_GEN = plugins/output/remote_write/remote.pb-c.c \
	plugins/output/remote_write/remote.pb-c.h
BUILT_SOURCES += $(RW_GEN)
CLEANFILES += $(RW_GEN)
# one rule makes both files: the .c waits for the .h
plugins/output/remote_write/remote.pb-c.h: \
		$(srcdir)/plugins/output/remote_write/remote.proto
	@$(MKDIR_P) plugins/output/remote_write
	$(AM_V_GEN)$(PROTOC_C) \
		--proto_path=$(srcdir)/plugins/output/remote_write \
		--c_out=plugins/output/remote_write remote.proto
plugins/output/remote_write/remote.pb-c.c: \
		plugins/output/remote_write/remote.pb-c.h
	@test -f $@ || { rm -f $<; $(MAKE) $(AM_MAKEFLAGS) $<; }

RW_SOURCES = plugins/output/remote_write/encode.c \
	plugins/output/remote_write/encode.h
RW_CPPFLAGS = $(AM_CPPFLAGS) -I$(top_builddir)/plugins/output/remote_write \
	-I$(top_srcdir)/plugins/output/remote_write \
	$(LIBEVENT_CFLAGS) $(PROTOBUF_C_CFLAGS)
RW_LIBS = $(LIBEVENT_LIBS) $(PROTOBUF_C_LIBS) $(SNAPPY_LIBS)

pkgplugin_LTLIBRARIES += plugins/output/remote_write.la
plugins_output_remote_write_la_SOURCES = \
	plugins/output/remote_write/remote_write.c $(RW_SOURCES)
nodist_plugins_output_remote_write_la_SOURCES = $(RW_GEN)
plugins_output_remote_write_la_CPPFLAGS = $(RW_CPPFLAGS)
plugins_output_remote_write_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_output_remote_write_la_LIBADD = core/libtally.la $(RW_LIBS) -lm

# Unit test: records to bytes, decoded back with protobuf-c and snappy.
check_PROGRAMS += t/unit/remote-write-encode.t
t_unit_remote_write_encode_t_SOURCES = t/unit/remote-write-encode.c \
	$(RW_SOURCES)
nodist_t_unit_remote_write_encode_t_SOURCES = $(RW_GEN)
t_unit_remote_write_encode_t_CPPFLAGS = $(RW_CPPFLAGS)
t_unit_remote_write_encode_t_LDADD = t/unit/libtap.la core/libtally.la \
	$(RW_LIBS) -lm
TESTS += t/unit/remote-write-encode.t
endif
# run everywhere: they skip, with the reason, where the plugin is not built
TESTS += $(RW_TESTS)
