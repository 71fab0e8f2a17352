# doc/local.mk: man pages and reference documents
dist_man_MANS += doc/tallyd.8 doc/tally.conf.5
EXTRA_DIST += doc/plugins contrib/systemd/tallyd.service
