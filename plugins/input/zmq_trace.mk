# plugins/input/zmq_trace.mk: the zmq_trace input (application spans over
# ZeroMQ), its tests and its fuzz target (included from Makefile.am)

pkgplugin_LTLIBRARIES += plugins/input/zmq_trace.la
plugins_input_zmq_trace_la_SOURCES = \
	plugins/input/zmq_trace/zmq_trace.c \
	plugins/input/zmq_trace/decode.c \
	plugins/input/zmq_trace/decode.h \
	plugins/input/zmq_trace/state.c \
	plugins/input/zmq_trace/state.h
plugins_input_zmq_trace_la_CPPFLAGS = $(AM_CPPFLAGS) $(LIBEVENT_CFLAGS) \
	$(LIBZMQ_CFLAGS)
plugins_input_zmq_trace_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_input_zmq_trace_la_LIBADD = core/libtally.la $(LIBEVENT_LIBS) \
	$(LIBZMQ_LIBS)

# Unit tests: the decoders (with the test vectors read from
# doc/wire-format.md) and the state machine, pure code without the daemon.
check_PROGRAMS += t/unit/zmq_trace_decode.t t/unit/zmq_trace_state.t
t_unit_zmq_trace_decode_t_SOURCES = t/unit/zmq_trace_decode.c \
	plugins/input/zmq_trace/decode.c core/utf8.c
t_unit_zmq_trace_decode_t_CPPFLAGS = $(AM_CPPFLAGS) \
	-DTOP_SRCDIR='"$(abs_top_srcdir)"'
t_unit_zmq_trace_decode_t_LDADD = t/unit/libtap.la
t_unit_zmq_trace_state_t_SOURCES = t/unit/zmq_trace_state.c \
	plugins/input/zmq_trace/state.c core/io.c core/hash.c
t_unit_zmq_trace_state_t_LDADD = t/unit/libtap.la
TESTS += t/unit/zmq_trace_decode.t t/unit/zmq_trace_state.t

# libFuzzer target for the decoders and the state machine (make fuzz).
FUZZ_TARGETS += contrib/fuzz/zmq_trace_decode_fuzz
ZMQ_TRACE_FUZZ_SRC = $(top_srcdir)/contrib/fuzz/zmq_trace_decode_fuzz.c \
	$(top_srcdir)/plugins/input/zmq_trace/decode.c \
	$(top_srcdir)/plugins/input/zmq_trace/state.c \
	$(top_srcdir)/core/utf8.c $(top_srcdir)/core/io.c \
	$(top_srcdir)/core/hash.c
contrib/fuzz/zmq_trace_decode_fuzz: $(ZMQ_TRACE_FUZZ_SRC)
	@$(MKDIR_P) contrib/fuzz
	$(AM_V_CC)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $(ZMQ_TRACE_FUZZ_SRC)

EXTRA_DIST += doc/plugins/zmq_trace.md contrib/fuzz/zmq_trace_decode_fuzz.c \
	contrib/fuzz/corpus/zmq_trace_decode

# Integration tests: tallyd with zmq_trace -> capture, driven by the C
# client's test program (t/trace-emit), by pyzmq (t/t30-zmq-send.py, the
# Omnistat tracer's way) and by contrib/python.
ZMQ_TRACE_TESTS = \
	t/t3001-zmq-trace-spans.t \
	t/t3002-zmq-trace-malformed.t \
	t/t3003-zmq-trace-endpoint.t \
	t/t3004-zmq-trace-load.t \
	t/t3005-zmq-trace-omnistat.t \
	t/t3006-zmq-trace-abandon.t \
	t/t3007-zmq-trace-wakeups.t \
	t/t3008-zmq-trace-python.t \
	t/t3009-zmq-trace-limits.t \
	t/t3012-zmq-trace-reload.t \
	t/t3013-zmq-trace-drops.t \
	t/t3014-zmq-trace-clock.t \
	t/t3020-zmq-trace-fdlimit.t \
	t/t3021-zmq-trace-omnistat-endpoint.t \
	t/t3022-zmq-trace-undelivered.t \
	t/t3023-zmq-trace-v2.t
TESTS += $(ZMQ_TRACE_TESTS)
EXTRA_DIST += $(ZMQ_TRACE_TESTS) t/t30-lib.sh t/t30-zmq-send.py
