# core/exposition.mk: Prometheus text exposition helpers in libtally
