# core/exposition.mk: Prometheus text exposition helpers in libtally
# (included right after core/local.mk, which defines core_libtally_la_SOURCES)
core_libtally_la_SOURCES += core/exposition.c core/expo-parse.c
pkginclude_HEADERS += include/tally/exposition.h

check_PROGRAMS += t/unit/exposition.t
t_unit_exposition_t_SOURCES = t/unit/exposition.c
t_unit_exposition_t_LDADD = t/unit/libtap.la core/libtally.la -lm
TESTS += t/unit/exposition.t

# The text format parser (core/expo-parse.c)
check_PROGRAMS += t/unit/expo-parse.t
t_unit_expo_parse_t_SOURCES = t/unit/expo-parse.c
t_unit_expo_parse_t_LDADD = t/unit/libtap.la core/libtally.la -lm
TESTS += t/unit/expo-parse.t
