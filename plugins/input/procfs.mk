# plugins/input/procfs.mk: the procfs input and its tests (included from
# Makefile.am)

pkgplugin_LTLIBRARIES += plugins/input/procfs.la
plugins_input_procfs_la_SOURCES = \
	plugins/input/procfs/procfs.h \
	plugins/input/procfs/procfs.c \
	plugins/input/procfs/netstat.c \
	plugins/input/procfs/diskstats.c \
	plugins/input/procfs/filesystem.c \
	plugins/input/procfs/system.c
plugins_input_procfs_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_input_procfs_la_LIBADD = core/libtally.la

# The unit test includes the plugin's .c files to reach its static parsers.
check_PROGRAMS += t/unit/procfs.t
t_unit_procfs_t_SOURCES = t/unit/procfs.c t/unit/procfs-util.h
t_unit_procfs_t_LDADD = t/unit/libtap.la core/libtally.la -lm

check_PROGRAMS += t/unit/procfs-host.t
t_unit_procfs_host_t_SOURCES = t/unit/procfs-host.c t/unit/procfs-util.h
t_unit_procfs_host_t_LDADD = t/unit/libtap.la core/libtally.la -lm

TESTS += t/unit/procfs.t t/unit/procfs-host.t
TESTS += t/t1001-procfs.t t/t1003-live.t t/t1007-procfs-host.t \
	t/t1008-filesystem.t t/t1009-node-exporter.t
EXTRA_DIST += t/t1001-procfs.t t/t1003-live.t t/fixtures/proc-6.1 t/fixtures/proc-2.6.18 \
	t/fixtures/proc-odd t/t1007-procfs-host.t t/t1008-filesystem.t \
	t/t1009-node-exporter.t t/t10-compare.py \
	t/fixtures/proc-host \
	t/fixtures/proc-host-4.4 t/fixtures/rootfs-os t/fixtures/udev-data
# Shell helpers of the procfs and netdev tests (t1001, t1002, t1004, t1005).
EXTRA_DIST += t/lib/hostinputs.sh
