# contrib/local.mk: rules for this part of the tree (included from Makefile.am)
