# plugins/input/self.mk: the self input (tallyd's own health)
pkgplugin_LTLIBRARIES += plugins/input/self.la
plugins_input_self_la_SOURCES = plugins/input/self.c
plugins_input_self_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_input_self_la_LIBADD = core/libtally.la
