# plugins/input/rocm_smi.mk: the rocm_smi input, its helper process and
# their tests (included from Makefile.am). Built only where configure found
# librocm_smi64 (Debian: librocm-smi-dev).

ROCM_SMI_TESTS = \
	t/t1101-rocm-smi-nogpu.t \
	t/t1102-rocm-smi-helper.t \
	t/t1103-rocm-smi-privdrop.t \
	t/t1104-rocm-smi-protocol.t \
	t/t1105-rocm-smi-restart.t

if BUILD_PLUGIN_ROCM_SMI
pkgplugin_LTLIBRARIES += plugins/input/rocm_smi.la
plugins_input_rocm_smi_la_SOURCES = \
	plugins/input/rocm_smi/rocm_smi.c \
	plugins/input/rocm_smi/proto.c \
	plugins/input/rocm_smi/proto.h
plugins_input_rocm_smi_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS)
plugins_input_rocm_smi_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_input_rocm_smi_la_LIBADD = core/libtally.la $(LIBEVENT_LIBS)

# The helper runs the library; it loads it by name at run time (dlopen),
# so it does not link against it and works with a site's newer one.
pkglibexec_PROGRAMS += plugins/input/rocm_smi/tally-rocm-helper
plugins_input_rocm_smi_tally_rocm_helper_SOURCES = \
	plugins/input/rocm_smi/helper.c \
	plugins/input/rocm_smi/proto.c \
	plugins/input/rocm_smi/proto.h core/utf8.c
plugins_input_rocm_smi_tally_rocm_helper_LDADD = -ldl -lm

# Unit test: the protocol, the metric table, units and the card order.
check_PROGRAMS += t/unit/rocm_smi.t
t_unit_rocm_smi_t_SOURCES = t/unit/rocm_smi.c \
	plugins/input/rocm_smi/proto.c core/utf8.c
t_unit_rocm_smi_t_LDADD = t/unit/libtap.la -lm
TESTS += t/unit/rocm_smi.t

TESTS += $(ROCM_SMI_TESTS)

# A library with a few of librocm_smi64's functions only (t1102).
check_LTLIBRARIES += t/rsmi_shim.la
t_rsmi_shim_la_SOURCES = t/rsmi-shim.c
t_rsmi_shim_la_LDFLAGS = -module -avoid-version -shared -rpath /nowhere \
	-export-symbols-regex '^rsmi_' $(SAN_LDFLAGS)
t_rsmi_shim_la_LIBADD = -ldl
endif
# libFuzzer target for the helper protocol's decoder (make fuzz): pure
# code, built with or without the library.
FUZZ_TARGETS += contrib/fuzz/rocm_proto_fuzz
ROCM_PROTO_FUZZ_SRC = $(top_srcdir)/contrib/fuzz/rocm_proto_fuzz.c \
	$(top_srcdir)/plugins/input/rocm_smi/proto.c \
	$(top_srcdir)/core/utf8.c
contrib/fuzz/rocm_proto_fuzz: $(ROCM_PROTO_FUZZ_SRC)
	@$(MKDIR_P) contrib/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(ROCM_PROTO_FUZZ_SRC) -lm

EXTRA_DIST += contrib/fuzz/rocm_proto_fuzz.c contrib/fuzz/corpus/rocm_proto
EXTRA_DIST += $(ROCM_SMI_TESTS) t/lib/rocm.sh \
	t/fixtures/sys-rocm t/fixtures/sys-rocm.md t/fixtures/mk-sys-rocm.sh
