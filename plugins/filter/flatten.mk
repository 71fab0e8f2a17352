# plugins/filter/flatten.mk: the flatten filter (nested spans to a flat
# sequence of fragments) and its tests (included from Makefile.am)

# Unit test: the state (pure code, no daemon), table-driven and on random
# nestings.
check_PROGRAMS += t/unit/flatten.t
t_unit_flatten_t_SOURCES = t/unit/flatten.c \
	plugins/filter/flatten/state.c \
	plugins/filter/flatten/state.h
t_unit_flatten_t_LDADD = t/unit/libtap.la core/libtally.la
TESTS += t/unit/flatten.t
