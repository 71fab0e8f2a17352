# core/json.mk: the JSON string escaper in libtally
# (included right after core/local.mk, which defines core_libtally_la_SOURCES)
core_libtally_la_SOURCES += core/json.c
pkginclude_HEADERS += include/tally/json.h

check_PROGRAMS += t/unit/json.t
t_unit_json_t_SOURCES = t/unit/json.c
t_unit_json_t_LDADD = t/unit/libtap.la core/libtally.la
TESTS += t/unit/json.t
