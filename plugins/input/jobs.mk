# plugins/input/jobs.mk: the jobs input (job attribution: tally_job_info,
# Omnistat's rmsjob_info) and its tests (included from Makefile.am)

pkgplugin_LTLIBRARIES += plugins/input/jobs.la
plugins_input_jobs_la_SOURCES = plugins/input/jobs.c
plugins_input_jobs_la_LDFLAGS = $(PLUGIN_LDFLAGS)
plugins_input_jobs_la_LIBADD = core/libtally.la

# The unit test includes jobs.c to reach its static parsers.
check_PROGRAMS += t/unit/jobs.t
t_unit_jobs_t_SOURCES = t/unit/jobs.c
t_unit_jobs_t_LDADD = t/unit/libtap.la core/libtally.la

TESTS += t/unit/jobs.t t/t1091-jobs.t t/t1092-jobs-user.t
EXTRA_DIST += t/t1091-jobs.t t/t1092-jobs-user.t doc/plugins/jobs.md
