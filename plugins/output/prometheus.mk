# plugins/output/prometheus.mk: the prometheus output, its unit tests,
# integration tests and render benchmark (included from Makefile.am)

PROM_SOURCES = \
	plugins/output/prometheus/store.c \
	plugins/output/prometheus/store.h \
	plugins/output/prometheus/http.c \
	plugins/output/prometheus/http.h

pkgplugin_LTLIBRARIES += plugins/output/prometheus.la
plugins_output_prometheus_la_SOURCES = \
	plugins/output/prometheus/prometheus.c \
	plugins/output/prometheus/conn.c plugins/output/prometheus/conn.h \
	plugins/output/prometheus/page.c plugins/output/prometheus/page.h \
	plugins/output/prometheus/tls.c plugins/output/prometheus/tls.h \
	plugins/output/prometheus/auth.c plugins/output/prometheus/auth.h \
	$(PROM_SOURCES)
# TLS_*: OpenSSL, libevent_openssl and libcrypt, empty without them
# (configure --without-tls, or not found)
plugins_output_prometheus_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) \
	$(ZLIB_CFLAGS) $(TLS_CFLAGS)
plugins_output_prometheus_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_output_prometheus_la_LIBADD = core/libtally.la $(LIBEVENT_LIBS) \
	$(ZLIB_LIBS) $(TLS_LIBS) $(PTHREAD_LIBS) -lm

# Unit tests link the store and HTTP helpers directly.
check_PROGRAMS += t/unit/prometheus-store.t t/unit/prometheus-http.t
t_unit_prometheus_store_t_SOURCES = t/unit/prometheus-store.c $(PROM_SOURCES)
t_unit_prometheus_store_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) \
	$(ZLIB_CFLAGS)
t_unit_prometheus_store_t_LDADD = t/unit/libtap.la core/libtally.la \
	$(LIBEVENT_LIBS) $(ZLIB_LIBS) -lm
t_unit_prometheus_http_t_SOURCES = t/unit/prometheus-http.c $(PROM_SOURCES)
t_unit_prometheus_http_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) \
	$(ZLIB_CFLAGS)
t_unit_prometheus_http_t_LDADD = t/unit/libtap.la core/libtally.la \
	$(LIBEVENT_LIBS) $(ZLIB_LIBS) -lm
TESTS += t/unit/prometheus-store.t t/unit/prometheus-http.t
check_PROGRAMS += t/unit/prometheus-page.t
t_unit_prometheus_page_t_SOURCES = t/unit/prometheus-page.c \
	plugins/output/prometheus/page.c plugins/output/prometheus/page.h
t_unit_prometheus_page_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS)
t_unit_prometheus_page_t_LDADD = t/unit/libtap.la $(LIBEVENT_LIBS)
TESTS += t/unit/prometheus-page.t

# Render benchmark (contrib/bench, never part of make check).
noinst_PROGRAMS += contrib/bench/prom-render
contrib_bench_prom_render_SOURCES = contrib/bench/prom-render.c $(PROM_SOURCES)
contrib_bench_prom_render_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) \
	$(ZLIB_CFLAGS)
contrib_bench_prom_render_LDADD = core/libtally.la $(LIBEVENT_LIBS) $(ZLIB_LIBS) -lm

# The test-only input these tests use.
include t/plugins/spangen.mk

TESTS += t/t2001-prometheus-exposition.t t/t2002-prometheus-server.t \
	t/t2003-prometheus-expiry.t t/t2004-prometheus-concurrent.t \
	t/t2005-prometheus-http.t t/t2006-prometheus-limits.t \
	t/t2007-prometheus-slow-readers.t t/t2010-prometheus-tls.t \
	t/t2011-prometheus-auth.t
EXTRA_DIST += t/t2-prom-check.py t/t2-prom-clients.py t/t2-lib.sh \
	t/t2001-prometheus-exposition.t \
	t/t2002-prometheus-server.t t/t2003-prometheus-expiry.t \
	t/t2004-prometheus-concurrent.t t/t2005-prometheus-http.t \
	t/t2006-prometheus-limits.t t/t2007-prometheus-slow-readers.t \
	t/t2010-prometheus-tls.t t/t2011-prometheus-auth.t
EXTRA_DIST += doc/plugins/prometheus.md
