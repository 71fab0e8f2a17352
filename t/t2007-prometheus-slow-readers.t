#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='prometheus output: memory of pages in flight is bounded

Each scrape used to render the page into its own reply buffer, held until
the client had read it all: 60 clients reading a 16 MB page at a byte a
second took tallyd from 77 MB to 1 GB. Concurrent scrapes of an unchanged
store now share one rendered page, and pages held by replies in progress
are bounded by max_reply_bytes (the slowest replies are cut).'
# time limit: 900 s (8 MB pages to 60 readers: over 300 s at load 15)

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"

require_cmd curl

# RSS is the measure here: under AddressSanitizer, freed memory waits in
# its quarantine (256 MiB) before reuse, so pages freed would still count.
ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}quarantine_size_mb=0
export ASAN_OPTIONS

# scrape FILE - GET /metrics
scrape() {
	curl -sS --max-time 20 -o "$1" "http://127.0.0.1:$port/metrics"
}

# rss_kib PID - resident set size in KiB
rss_kib() {
	awk '/^VmRSS:/ { print $2 }' "/proc/$1/status"
}


# dropped FILE REASON - tally_dropped_total of instance "prom", or 0
dropped() {
	self_count "$1" tally_dropped_total prom "reason=\"$2\""
}

test_expect_success '60 slow readers of an 8 MB page: tallyd grows by one page, not 60' '
	port=$(free_port) &&
	cat >big.conf <<-EOF &&
	global = { interval = 0.5; log_level = "info"; };
	inputs = { gen = { plugin = "spangen"; mode = "generations";
	                   count = 320000; limit = 1; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:$port";
	                     max_series = 400000; expire = 600.0; }; };
	pipelines = { p = { from = ["gen"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" big.conf &&
	wait_for "scrape page && grep -q ^spangen_gen_hist_count page" 60 &&
	size=$(wc -c <page) &&
	tally_diag "page: $size bytes" &&
	test $size -gt 8000000 &&
	rss0=$(rss_kib $TALLYD_PID) &&
	clients slowread 60 120 slow.out &&
	wait_for "grep -q started slow.out" 60 &&
	rss1=$(rss_kib $TALLYD_PID) &&
	grow=$(( (rss1 - rss0) / 1024 )) &&
	tally_diag "RSS $((rss0 / 1024)) MiB before, $((rss1 / 1024)) MiB with 60 slow readers: +$grow MiB" &&
	# one page is 8 MiB; 60 copies were 480 MiB
	test $grow -lt 100 &&
	# the page they share is still served, whole, to a normal scrape
	scrape again &&
	test_cmp page again &&
	! grep -q closed slow.out &&
	stop_tallyd
'

# A reply cut short still has its socket buffers' worth on the way (the
# kernel's memory, not tallyd's), so a slow reader sees the end only long
# after: the cuts are counted by tallyd, and its RSS tells the bound.
test_expect_success 'max_reply_bytes: pages held by slow readers are bounded, the slowest cut' '
	cat >cap.conf <<-EOF &&
	global = { interval = 0.5; log_level = "info"; };
	inputs = {
	  gen = { plugin = "spangen"; mode = "generations"; count = 100000; };
	  self = { plugin = "self"; };
	};
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:$port";
	                     max_reply_bytes = 6291456; }; };
	pipelines = { p = { from = ["gen", "self"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" cap.conf &&
	wait_for "scrape page && grep -q ^spangen_gen_hist_count page" 30 &&
	size=$(wc -c <page) &&
	tally_diag "page: $size bytes" &&
	rss0=$(rss_kib $TALLYD_PID) &&
	# a new page every read (0.5 s), a reader every 0.6 s: each reader
	# holds a page of its own, about 2.5 MB; 6 MiB hold two. Unbounded,
	# 20 readers held 50 MB.
	clients slowread 20 120 slow.out 0.6 &&
	wait_for "grep -q started slow.out" 60 &&
	rss1=$(rss_kib $TALLYD_PID) &&
	grow=$(( (rss1 - rss0) / 1024 )) &&
	tally_diag "RSS $((rss0 / 1024)) MiB before, $((rss1 / 1024)) MiB with 20 slow readers: +$grow MiB" &&
	test $grow -lt 30 &&
	wait_for "scrape s && test \$(dropped s reply_memory) -ge 14" &&
	grep "(max_reply_bytes 6291456): cut the" tallyd.log &&
	stop_tallyd
'

test_done
