# plugins/input/netdev.mk: the netdev input and its tests (included from
# Makefile.am)

pkgplugin_LTLIBRARIES += plugins/input/netdev.la
plugins_input_netdev_la_SOURCES = \
	plugins/input/netdev/netdev.h \
	plugins/input/netdev/netdev.c \
	plugins/input/netdev/netclass.c \
	plugins/input/netdev/infiniband.c
plugins_input_netdev_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_input_netdev_la_LIBADD = core/libtally.la

# The unit test includes the plugin's .c files to reach its static parsers,
# and applies options with the core's option code (libconfig), as tallyd.
check_PROGRAMS += t/unit/netdev.t
t_unit_netdev_t_SOURCES = t/unit/netdev.c t/unit/procfs-util.h
t_unit_netdev_t_CPPFLAGS = $(AM_CPPFLAGS) $(LIBCONFIG_CFLAGS)
t_unit_netdev_t_LDADD = t/unit/libtap.la core/libtally.la $(LIBCONFIG_LIBS)

TESTS += t/unit/netdev.t
TESTS += t/t1002-netdev.t t/t1004-ticks.t t/t1005-netns.t \
	t/t1006-prometheus.t
EXTRA_DIST += t/t1002-netdev.t t/t1004-ticks.t t/t1005-netns.t \
	t/t1006-prometheus.t \
	t/fixtures/proc-netdev-columns \
	t/fixtures/sys-6.1
