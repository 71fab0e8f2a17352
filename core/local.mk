# core/local.mk: libtally (everything plugins and tallyd share) and tallyd

lib_LTLIBRARIES += core/libtally.la
core_libtally_la_SOURCES = \
	core/core-internal.h \
	core/hash.c \
	core/labels.c \
	core/utf8.c \
	core/record.c \
	core/quantile.c \
	core/log.c \
	core/options.c \
	core/config.c \
	core/conftext.c \
	core/loader.c \
	core/pipeline.c \
	core/instance.c \
	core/input.c \
	core/emit.c \
	core/outq.c \
	core/stats.c \
	core/graph.c \
	core/mode.c \
	core/jobid.c \
	core/priv.c \
	core/io.c \
	core/statfs.c \
	core/net-internal.h \
	core/net-addr.c \
	core/net-dns.c \
	core/net-unix.c \
	core/net-bind.c \
	core/net-drain.c \
	core/net-listen.c \
	core/net-sender.c \
	core/net-dgram.c \
	core/net-conf.c \
	core/http-client.c \
	core/http-batch.c \
	core/fdlimit.c
core_libtally_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) $(LIBCONFIG_CFLAGS) \
	$(ZLIB_CFLAGS)
core_libtally_la_LIBADD = $(LIBEVENT_LIBS) $(LIBCONFIG_LIBS) $(LTDL_LIBS) \
	$(PTHREAD_LIBS) $(ZLIB_LIBS) -lm
# Only the public API (and the core-private tally_* the unit tests use).
core_libtally_la_LDFLAGS = -version-info 0:0:0 -export-symbols-regex '^tally_'

pkginclude_HEADERS += \
	include/tally/plugin.h \
	include/tally/config.h \
	include/tally/record.h \
	include/tally/quantile.h \
	include/tally/labels.h \
	include/tally/hash.h \
	include/tally/list.h \
	include/tally/lru.h \
	include/tally/utf8.h \
	include/tally/log.h \
	include/tally/stats.h \
	include/tally/io.h \
	include/tally/statfs.h \
	include/tally/mode.h \
	include/tally/fdlimit.h \
	include/tally/net.h \
	include/tally/http.h \
	include/tally/wire.h

# Plugins built outside the tree: pkg-config tally-plugin (headers above,
# libtally, the plugin directory); contrib/example-plugin uses it.
pkgconfig_DATA += core/tally-plugin.pc
TESTS += t/t0090-plugin-sdk.t
EXTRA_DIST += t/t0090-plugin-sdk.t
EXTRA_DIST += core/tally-plugin.pc.in contrib/example-plugin/Makefile \
	contrib/example-plugin/example.c contrib/example-plugin/test.sh \
	contrib/example-plugin/README.md doc/plugin-guide.md

sbin_PROGRAMS += core/tallyd
core_tallyd_SOURCES = core/tallyd.c core/tallyd-accept.c
# accept and accept4 interpose libc's for libzmq and libevent (fdlimit.h)
core_tallyd_LDFLAGS = $(AM_LDFLAGS) -Wl,--export-dynamic-symbol=accept \
	-Wl,--export-dynamic-symbol=accept4
core_tallyd_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) $(LIBCONFIG_CFLAGS)
core_tallyd_LDADD = core/libtally.la

# Unit tests of the core
check_PROGRAMS += t/unit/labels.t t/unit/batch.t t/unit/options.t t/unit/log.t
t_unit_log_t_SOURCES = t/unit/log.c
t_unit_log_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_log_t_LDADD = t/unit/libtap.la core/libtally.la
t_unit_labels_t_SOURCES = t/unit/labels.c
t_unit_labels_t_LDADD = t/unit/libtap.la core/libtally.la $(PTHREAD_LIBS)
t_unit_batch_t_SOURCES = t/unit/batch.c
t_unit_batch_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_batch_t_LDADD = t/unit/libtap.la core/libtally.la -lm
t_unit_options_t_SOURCES = t/unit/options.c
t_unit_options_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_options_t_LDADD = t/unit/libtap.la core/libtally.la $(LIBCONFIG_LIBS)
check_PROGRAMS += t/unit/conftext.t
t_unit_conftext_t_SOURCES = t/unit/conftext.c
t_unit_conftext_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_conftext_t_LDADD = t/unit/libtap.la core/libtally.la $(LIBCONFIG_LIBS)
TESTS += t/unit/conftext.t
check_PROGRAMS += t/unit/conf-same.t
t_unit_conf_same_t_SOURCES = t/unit/conf-same.c
t_unit_conf_same_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_conf_same_t_LDADD = t/unit/libtap.la core/libtally.la $(LIBCONFIG_LIBS)
check_PROGRAMS += t/unit/interval.t
t_unit_interval_t_SOURCES = t/unit/interval.c
t_unit_interval_t_LDADD = t/unit/libtap.la core/libtally.la -lm
TESTS += t/unit/interval.t
check_PROGRAMS += t/unit/hash.t t/unit/utf8.t
t_unit_hash_t_SOURCES = t/unit/hash.c
t_unit_hash_t_LDADD = t/unit/libtap.la core/libtally.la
t_unit_utf8_t_SOURCES = t/unit/utf8.c
t_unit_utf8_t_LDADD = t/unit/libtap.la core/libtally.la
check_PROGRAMS += t/unit/list.t t/unit/lru.t
t_unit_list_t_SOURCES = t/unit/list.c
t_unit_list_t_LDADD = t/unit/libtap.la
t_unit_lru_t_SOURCES = t/unit/lru.c
t_unit_lru_t_LDADD = t/unit/libtap.la core/libtally.la
check_PROGRAMS += t/unit/fdlimit.t
t_unit_fdlimit_t_SOURCES = t/unit/fdlimit.c
t_unit_fdlimit_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_fdlimit_t_LDADD = t/unit/libtap.la core/libtally.la
check_PROGRAMS += t/unit/ticks.t
t_unit_ticks_t_SOURCES = t/unit/ticks.c
t_unit_ticks_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_ticks_t_LDADD = t/unit/libtap.la core/libtally.la -lm
TESTS += t/unit/ticks.t
check_PROGRAMS += t/unit/heap-trim.t
t_unit_heap_trim_t_SOURCES = t/unit/heap-trim.c
t_unit_heap_trim_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_heap_trim_t_LDADD = t/unit/libtap.la core/libtally.la
check_PROGRAMS += t/unit/mode.t
t_unit_mode_t_SOURCES = t/unit/mode.c
t_unit_mode_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_mode_t_LDADD = t/unit/libtap.la core/libtally.la
check_PROGRAMS += t/unit/static-labels.t
t_unit_static_labels_t_SOURCES = t/unit/static-labels.c
t_unit_static_labels_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_static_labels_t_LDADD = t/unit/libtap.la core/libtally.la
check_PROGRAMS += t/unit/drops.t
t_unit_drops_t_SOURCES = t/unit/drops.c
t_unit_drops_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_drops_t_LDADD = t/unit/libtap.la core/libtally.la $(PTHREAD_LIBS)
TESTS += t/unit/labels.t t/unit/batch.t t/unit/options.t t/unit/log.t \
	t/unit/conf-same.t t/unit/heap-trim.t t/unit/hash.t t/unit/utf8.t \
	t/unit/mode.t t/unit/drops.t t/unit/static-labels.t t/unit/list.t \
	t/unit/lru.t \
	t/unit/fdlimit.t

# Unit tests of networking (tally/net.h)
check_PROGRAMS += t/unit/net-addr.t t/unit/net-unix.t t/unit/net-listen.t \
	t/unit/net-sender.t t/unit/net-dgram.t
t_unit_net_addr_t_SOURCES = t/unit/net-addr.c
t_unit_net_addr_t_LDADD = t/unit/libtap.la core/libtally.la
t_unit_net_unix_t_SOURCES = t/unit/net-unix.c
t_unit_net_unix_t_LDADD = t/unit/libtap.la core/libtally.la
t_unit_net_listen_t_SOURCES = t/unit/net-listen.c
t_unit_net_listen_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) \
	$(LIBCONFIG_CFLAGS)
t_unit_net_listen_t_LDADD = t/unit/libtap.la core/libtally.la \
	$(LIBEVENT_LIBS)
t_unit_net_sender_t_SOURCES = t/unit/net-sender.c
t_unit_net_sender_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS)
t_unit_net_sender_t_LDADD = t/unit/libtap.la core/libtally.la \
	$(LIBEVENT_LIBS)
t_unit_net_dgram_t_SOURCES = t/unit/net-dgram.c
t_unit_net_dgram_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS)
t_unit_net_dgram_t_LDADD = t/unit/libtap.la core/libtally.la \
	$(LIBEVENT_LIBS)
TESTS += t/unit/net-addr.t t/unit/net-unix.t t/unit/net-listen.t \
	t/unit/net-sender.t t/unit/net-dgram.t

# The HTTP client (tally/http.h), against t/http-recorder.py
check_PROGRAMS += t/unit/http-client.t
t_unit_http_client_t_SOURCES = t/unit/http-client.c
t_unit_http_client_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS)
t_unit_http_client_t_LDADD = t/unit/libtap.la core/libtally.la \
	$(LIBEVENT_LIBS)
TESTS += t/unit/http-client.t
EXTRA_DIST += t/http-recorder.py

# The HTTP client against misbehaving servers (t/http-faults.py)
check_PROGRAMS += t/unit/http-faults.t
t_unit_http_faults_t_SOURCES = t/unit/http-faults.c
t_unit_http_faults_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS)
t_unit_http_faults_t_LDADD = t/unit/libtap.la core/libtally.la \
	$(LIBEVENT_LIBS)
TESTS += t/unit/http-faults.t
EXTRA_DIST += t/http-faults.py

# Integration tests of the core (t/plugins provides their plugins)
TESTS += t/t0002-config-errors.t t/t0003-pipelines.t t/t0004-loader.t \
	t/t0005-user-mode.t t/t0006-threads-self.t t/t0007-daemon.t \
	t/t0008-reload.t t/t0009-user-files.t t/t0010-privileges.t \
	t/t0011-install.t t/t0012-both-modes.t \
	t/t0015-record-forms.t \
	t/t0016-core-contracts.t
EXTRA_DIST += t/t0002-config-errors.t t/t0003-pipelines.t t/t0004-loader.t \
	t/t0005-user-mode.t t/t0006-threads-self.t t/t0007-daemon.t \
	t/t0008-reload.t t/t0009-user-files.t t/t0010-privileges.t \
	t/t0011-install.t t/t0012-both-modes.t \
	t/t0015-record-forms.t \
	t/t0016-core-contracts.t \
	t/fixtures/config

# t0090 and t0011 run `make install` in this build tree, and libtool
# relinks each plugin in place while it installs it: a test loading that
# plugin meanwhile finds no loadable file ("cannot load"). So they run
# after every other test has finished, one after the other.
INSTALL_TEST_LOGS = t/t0090-plugin-sdk.log t/t0011-install.log
t/t0090-plugin-sdk.log: $(filter-out $(INSTALL_TEST_LOGS),$(TEST_LOGS))
t/t0011-install.log: $(filter-out t/t0011-install.log,$(TEST_LOGS))
