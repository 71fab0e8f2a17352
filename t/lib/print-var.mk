# t/lib/print-var.mk - `make -f Makefile -f print-var.mk print-VAR` prints
# the value make has for VAR (installation directories, for t0011)
print-%:
	@echo '$($*)'
