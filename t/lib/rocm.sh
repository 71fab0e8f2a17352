# t/lib/rocm.sh - helpers of the rocm_smi tests (t11xx)
#
# Source after t/lib/tally.sh. The real librocm_smi64 reads fixed paths
# (/sys/class/drm, /sys/class/kfd, /sys/class/hwmon, /dev/shm), so a test
# that wants it to see a fixture GPU node runs tallyd in a private mount
# namespace (unshare -m, root only) with the fixture bound over /sys:
# prerequisite ROOTNS.

ROCM_HELPER=${top_builddir:-$SHARNESS_TEST_DIRECTORY/..}/plugins/input/rocm_smi/tally-rocm-helper
# A library with a few of the real one's functions (t/rsmi-shim.c)
ROCM_SHIM=${top_builddir:-$SHARNESS_TEST_DIRECTORY/..}/t/.libs/rsmi_shim.so
REAL_TALLYD=$TALLYD

if test "$(id -u)" = 0 && unshare -m true 2>/dev/null; then
	test_set_prereq ROOTNS
fi

# ns_tallyd SYS [SHM] - write ./ns-tallyd, a tallyd that runs in a mount
# namespace of its own with directory SYS over /sys and, if given, SHM
# over /dev/shm (the node's shared memory, as both collectors of a node
# see it); the test then points TALLYD at it. The namespace holds no
# process but tallyd and its helpers: it is gone when they are.
ns_tallyd() {
	cat >ns-tallyd <<-EOF &&
	#!/bin/sh
	exec unshare -m --propagation private sh -c '
		mount --bind "\$0" /sys &&
		{ test -z "\$1" || mount --bind "\$1" /dev/shm; } &&
		shift && exec "\$@"' "$1" "${2:-}" "$REAL_TALLYD" "\$@"
	EOF
	chmod +x ns-tallyd
}

# rocm_empty_dirs SYS - make the empty directories of the fixture node in
# its copy SYS: git keeps no empty directory, and the library aborts on a
# KFD node without io_links (t/fixtures/mk-sys-rocm.sh makes them too)
rocm_empty_dirs() {
	for n in 0 1 2; do
		for d in caches io_links mem_banks p2p_links; do
			mkdir -p "$1/class/kfd/kfd/topology/nodes/$n/$d" || return 1
		done
	done &&
	mkdir -p "$1/devices/pci0000:00/0000:00:01.0/0000:03:00.0/drm/renderD128" \
		"$1/devices/pci0000:00/0000:00:02.0/0000:83:00.0/drm/renderD129"
}

# event FILE EVENT [INSTANCE] - the last tally_events_total of INSTANCE
# (default gpu) for EVENT in capture file FILE, or 0
event() {
	awk -v m="tally_events_total{event=\"$2\",instance=\"${3:-gpu}\"," '
		index($2, m) == 1 { v = $3 } END { print v + 0 }' "$1"
}

# dropped FILE REASON - the last tally_dropped_total of instance gpu for
# REASON in capture file FILE, or 0
dropped() {
	awk -v m="tally_dropped_total{instance=\"gpu\"," -v r="reason=\"$2\"" '
		index($2, m) == 1 && index($2, r) { v = $3 }
		END { print v + 0 }' "$1"
}

# count FILE PATTERN - lines of FILE that hold PATTERN (fixed string)
count() {
	grep -cF -- "$2" "$1" || true
}

# rocm_conf FILE OUT GPU_SETTINGS [OUTPUTS] [TO] - a configuration: input
# "gpu" (rocm_smi with GPU_SETTINGS, the build tree's helper or $HELPER),
# "host" (procfs on a fixture /proc) and "self", every interval 1 s, into
# capture OUT; OUTPUTS adds outputs, TO (', "name"') adds them to the
# pipeline
rocm_conf() {
	cat >"$1" <<-EOF
	global = { log_level = "info"; };
	inputs = {
	  gpu = { plugin = "rocm_smi"; helper = "${HELPER:-$ROCM_HELPER}";
	          interval = 1.0; $3 };
	  host = { plugin = "procfs"; root = "$FIXTURES/proc-6.1"; interval = 1.0; };
	  self = { plugin = "self"; interval = 1.0; };
	};
	outputs = { cap = { plugin = "capture"; path = "$2"; }; ${4:-} };
	pipelines = { p = { from = ["gpu", "host", "self"]; to = ["cap"${5:-}]; }; };
	EOF
}

# run_fake NAME SETTINGS CONDITION - run tallyd with the stand-in helper
# script ./NAME-helper and input settings SETTINGS until CONDITION holds
# (wait_for), capturing into NAME.txt and logging into NAME.log (shown)
run_fake() {
	chmod +x "$1-helper" &&
	HELPER=$PWD/$1-helper rocm_conf "$1.conf" "$1.txt" "$2" &&
	start_tallyd --log "$1.log" "$1.conf" &&
	wait_for "$3" &&
	stop_tallyd &&
	cat "$1.log"
}
