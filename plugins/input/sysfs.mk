# plugins/input/sysfs.mk: the sysfs input and its tests (included from
# Makefile.am)

pkgplugin_LTLIBRARIES += plugins/input/sysfs.la
plugins_input_sysfs_la_SOURCES = \
	plugins/input/sysfs/sysfs.h \
	plugins/input/sysfs/sysfs.c \
	plugins/input/sysfs/hwmon.c \
	plugins/input/sysfs/thermal.c \
	plugins/input/sysfs/cpufreq.c \
	plugins/input/sysfs/edac.c
plugins_input_sysfs_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_input_sysfs_la_LIBADD = core/libtally.la

# The unit test includes the plugin's .c files to reach its static parsers.
check_PROGRAMS += t/unit/sysfs.t
t_unit_sysfs_t_SOURCES = t/unit/sysfs.c t/unit/procfs-util.h
t_unit_sysfs_t_LDADD = t/unit/libtap.la core/libtally.la -lm

TESTS += t/unit/sysfs.t t/t1010-sysfs.t
EXTRA_DIST += t/t1010-sysfs.t t/fixtures/sys-host
