#!/bin/sh
test_description='select filter: keep, drop and rename records by name and
label, rewrite labels, counted'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

send() {
	"$PYTHON3" "$SHARNESS_TEST_SRCDIR/t40-statsd-send.py" "$@"
}

test_expect_success 'check: bad rules are configuration errors' '
	cat >bad.conf <<-EOF &&
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:0"; }; };
	filters = { sel = { plugin = "select"; rename = ["nothing"];
			    keep_names = ["("]; }; };
	outputs = { c = { plugin = "capture"; path = "/dev/null"; }; };
	pipelines = { p = { from = ["sd"]; through = ["sel"]; to = ["c"]; }; };
	EOF
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:3: error: filters.sel: option .keep_names.: bad regular expression" err &&
	cat >bad2.conf <<-EOF &&
	inputs = { sd = { plugin = "statsd"; listen = "127.0.0.1:0"; }; };
	filters = { sel = { plugin = "select"; rename = ["nothing"]; }; };
	outputs = { c = { plugin = "capture"; path = "/dev/null"; }; };
	pipelines = { p = { from = ["sd"]; through = ["sel"]; to = ["c"]; }; };
	EOF
	test_must_fail tallyd -c bad2.conf --check-config 2>err &&
	grep "rename: \"nothing\": write KEY=NEW" err &&
	tallyd --describe select >out &&
	grep "^  keep_names  *list of regular expressions" out &&
	grep "^  add_labels " out
'

test_expect_success 'statsd -> select -> capture: exact records kept and rewritten' '
	udp=$(free_port) &&
	cat >sel.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = {
		sd = { plugin = "statsd"; listen = "127.0.0.1:$udp"; };
		self = { plugin = "self"; interval = 0.1; };
	};
	filters = { sel = { plugin = "select";
		keep_names = ["^req[.]", "^end\$"];
		drop_names = ["debug"];
		drop_if = ["pod=b.*"];
		rename = ["req.count=requests_total"];
		drop_labels = ["pod"];
		rename_labels = ["env=environment"];
		add_labels = { cluster = "c1"; };
	}; };
	outputs = {
		cap = { plugin = "capture"; path = "sel.out"; };
		health = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		p = { from = ["sd"]; through = ["sel"]; to = ["cap"]; };
		h = { from = ["self"]; to = ["health"]; };
	};
	EOF
	start_tallyd --wait "udp_bound $udp" sel.conf &&
	printf "%s\n" "req.count:1|c|#env:prod,pod:a1" "other:1|c" \
		"req.debug:1|c" "req.z:2|c|#pod:b2" "req.lat:3|ms|#env:dev" \
		"end:1|c" >d &&
	send udp4 127.0.0.1:$udp d &&
	wait_for "grep -q \"^delta counter end\" sel.out" &&
	cat >expected <<-\EOF &&
	delta counter requests_total{cluster="c1",environment="prod"} 1 rate=1
	observation summary req.lat{cluster="c1",environment="dev"} 0.0030000000000000001 rate=1
	delta counter end{cluster="c1"} 1 rate=1
	EOF
	test_cmp expected sel.out &&
	wait_for "grep -q \"^counter tally_events_total{event=\\\"filtered_out\\\",instance=\\\"sel\\\",kind=\\\"filter\\\",pipeline=\\\"p\\\",plugin=\\\"select\\\"} 3\\$\" self.out" &&
	stop_tallyd
'

test_done
