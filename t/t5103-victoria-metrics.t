#!/bin/sh
test_description='VictoriaMetrics (Debian victoria-metrics 1.79) fed both
ways: the remote_write output (/api/v1/write: every sample read back exactly
through /api/v1/export, with the instance and global labels) and the
prometheus_push output'"'"'s text import (/api/v1/import/prometheus: the
final values read back through /api/v1/query)'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"
. "$SHARNESS_TEST_SRCDIR/t51-lib.sh"

require_cmd curl
require_cmd "$VICTORIA_METRICS" "victoria-metrics not installed (Debian package victoria-metrics)"
test -f "$top_builddir/plugins/output/remote_write.la" && test_set_prereq REMOTE_WRITE

HOST=$(hostname)
SERIES=5
READS=40

test_expect_success 'start VictoriaMetrics' '
	vm_start
'

test_expect_success REMOTE_WRITE 'remote_write: every sample arrives, exact, with its labels' '
	cat >rw.conf <<-EOF &&
	global = { interval = 0.1; log_level = "info";
	           labels = { cluster = "frontier"; }; };
	inputs = { c = { plugin = "counter"; count = $SERIES;
	                 max_reads = $READS; name = "vm_rw"; }; };
	outputs = { rw = { plugin = "remote_write";
	                   url = "http://127.0.0.1:$vmport/api/v1/write";
	                   batch_size = 30; flush_interval = "0.1s"; }; };
	pipelines = { p = { from = ["c"]; to = ["rw"]; }; };
	EOF
	start_tallyd rw.conf &&
	wait_for "test \$(vm_query \"sum(count_over_time(vm_rw[1h]))\") = $((SERIES * READS))" 60 &&
	vm_export vm_rw >vm_rw.values &&
	"$PYTHON3" - $SERIES $READS "$HOST" <<-\EOF &&
	import json, sys
	n, reads, host = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
	lines = open("vm_rw.values").read().splitlines()
	assert len(lines) == n, lines
	for i, line in enumerate(lines):
	    labels, values = line.split("} ", 1)
	    labels = json.loads(labels + "}")
	    assert labels == {"__name__": "vm_rw", "cluster": "frontier",
	                      "instance": host, "i": str(i)}, labels
	    assert values == " ".join(str(k) for k in range(1, reads + 1)), values
	EOF
	stop_tallyd
'

test_expect_success 'text import: the pushed page, final values exact' '
	cat >push.conf <<-EOF &&
	global = { interval = 0.1; log_level = "info";
	           labels = { cluster = "frontier"; }; };
	inputs = { c = { plugin = "counter"; count = $SERIES;
	                 max_reads = $READS; name = "vm_txt"; type = "counter"; };
	           d = { plugin = "counter"; count = 1; max_reads = $READS;
	                 name = "vm_delta"; type = "counter"; form = "delta";
	                 step = 0.25; }; };
	outputs = { vm = { plugin = "prometheus_push"; api = "victoriametrics";
	                   url = "http://127.0.0.1:$vmport"; interval = 0.2;
	                   expire = "1h"; }; };
	pipelines = { p = { from = ["c", "d"]; to = ["vm"]; }; };
	EOF
	start_tallyd push.conf &&
	for i in $(seq 0 $((SERIES - 1))); do
		wait_for "test \"\$(vm_query \"max_over_time(vm_txt_total{i=\\\"$i\\\",instance=\\\"$HOST\\\",cluster=\\\"frontier\\\"}[1h])\")\" = $READS" 60 ||
		return 1
	done &&
	wait_for "test \"\$(vm_query \"max_over_time(vm_delta_total{instance=\\\"$HOST\\\"}[1h])\")\" = 10" 60 &&
	stop_tallyd &&
	! grep -i "refused\|not pushed" tallyd.log
'

test_done
