# core/exposition.mk: Prometheus text exposition helpers in libtally
# (included right after core/local.mk, which defines core_libtally_la_SOURCES)
core_libtally_la_SOURCES += core/exposition.c
pkginclude_HEADERS += include/tally/exposition.h

check_PROGRAMS += t/unit/exposition.t
t_unit_exposition_t_SOURCES = t/unit/exposition.c
t_unit_exposition_t_LDADD = t/unit/libtap.la core/libtally.la -lm
TESTS += t/unit/exposition.t
