# plugins/output/graphite.mk: the graphite output, its unit tests and
# integration tests against a real carbon-cache (included from Makefile.am)

pkgplugin_LTLIBRARIES += plugins/output/graphite.la
plugins_output_graphite_la_SOURCES = \
	plugins/output/graphite/graphite.c \
	plugins/output/graphite/render.c \
	plugins/output/graphite/render.h
plugins_output_graphite_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS)
plugins_output_graphite_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_output_graphite_la_LIBADD = core/libtally.la $(LIBEVENT_LIBS) -lm

# Unit test: the renderer (pure code), byte for byte.
check_PROGRAMS += t/unit/graphite-render.t
t_unit_graphite_render_t_SOURCES = t/unit/graphite-render.c \
	plugins/output/graphite/render.c plugins/output/graphite/render.h
t_unit_graphite_render_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS)
t_unit_graphite_render_t_LDADD = t/unit/libtap.la core/libtally.la \
	$(LIBEVENT_LIBS) -lm
TESTS += t/unit/graphite-render.t

EXTRA_DIST += doc/plugins/graphite.md

# Integration: a real carbon-cache started by the test (t/t24-carbon.sh).
TESTS += t/t2401-graphite-carbon.t t/t2402-graphite-restart.t \
	t/t2403-graphite-statsd.t t/t2404-graphite-stall.t \
	t/t2405-push-shutdown.t
EXTRA_DIST += t/t2401-graphite-carbon.t t/t2402-graphite-restart.t \
	t/t2403-graphite-statsd.t t/t2404-graphite-stall.t \
	t/t2405-push-shutdown.t t/t24-carbon.sh t/t24-carbon.py \
	t/t24-stall.sh
