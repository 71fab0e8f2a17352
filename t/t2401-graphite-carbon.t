#!/bin/sh
test_description='graphite output into a real carbon-cache: paths, tags
and values read back from carbon'"'"'s whisper files, compared with what
the inputs produced; the escaping table as carbon accepts it'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

. "$SHARNESS_TEST_SRCDIR/t24-carbon.sh"

# captured SELECTOR - "SECONDS VALUE" of each capture line starting with
# SELECTOR (a record as t/plugins/capture.c prints it, up to its value;
# passed through the environment: awk -v would read its backslashes),
# the value as printed (%.17g), the last of a second kept
captured() {
	sel="$1 " awk '
		BEGIN { sel = ENVIRON["sel"] }
		index($0, sel) == 1 {
			rest = substr($0, length(sel) + 1)
			split(rest, f, " ")
			ts = f[length(f)]; sub(/^ts=/, "", ts)
			sec = substr(ts, 1, length(ts) - 9)
			v[sec] = f[1]
		}
		END { for (s in v) print s, v[s] }' cap.txt | sort -n
}

# same SELECTOR METRIC - carbon holds exactly the points the capture has
same() {
	captured "$1" >expect.$$ &&
	test -s expect.$$ &&
	carbon_points carbon "$2" $(wc -l <expect.$$) >actual.$$ &&
	test_cmp expect.$$ actual.$$
}

test_expect_success 'carbon-cache starts on free ports' '
	mkdir carbon &&
	start_carbon carbon
'

test_expect_success 'check: a bad layout and a bad server are refused' '
	cat >bad.conf <<-EOF &&
	inputs = { c = { plugin = "counter"; }; };
	outputs = { g = { plugin = "graphite"; server = "127.0.0.1";
			  layout = ["prefix", "labels"]; }; };
	pipelines = { p = { from = ["c"]; to = ["g"]; }; };
	EOF
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:2.*server \"127.0.0.1\": no port" err &&
	sed -i "s/server = \"127.0.0.1\"/server = \"127.0.0.1:1\"/" bad.conf &&
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:2.*layout: \"name\" must appear once" err
'

test_expect_success 'check: a scheme in server, layout with format tags' '
	cat >bad.conf <<-EOF &&
	inputs = { c = { plugin = "counter"; }; };
	outputs = { g = { plugin = "graphite"; server = "tcp://127.0.0.1:2003"; }; };
	pipelines = { p = { from = ["c"]; to = ["g"]; }; };
	EOF
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:2.*server \"tcp://127.0.0.1:2003\": no scheme" err &&
	! grep brackets err &&
	cat >bad.conf <<-EOF &&
	inputs = { c = { plugin = "counter"; }; };
	outputs = { g = { plugin = "graphite"; format = "tags";
			  layout = ["name", "labels"]; }; };
	pipelines = { p = { from = ["c"]; to = ["g"]; }; };
	EOF
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:2.*layout is for format = \"path\"" err
'

test_expect_success 'tallyd streams to carbon (path and tags formats)' '
	cat >g.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = {
	  c = { plugin = "counter"; interval = 1.0; name = "t24.app.requests";
		count = 2; max_reads = 4; };
	  s = { plugin = "spangen"; interval = 1.0; limit = 4; };
	};
	outputs = {
	  g = { plugin = "graphite"; server = "127.0.0.1:$CARBON_PORT";
		prefix = "tally.t24";
		labels = { host = "node-1.example"; site = "a b/c"; }; };
	  gt = { plugin = "graphite"; server = "127.0.0.1:$CARBON_PORT";
		 format = "tags"; prefix = "tagged";
		 labels = { host = "node-1.example"; site = "a b/c"; }; };
	  gu = { plugin = "graphite"; server = "127.0.0.1:$CARBON_PORT";
		 protocol = "udp"; max_datagram = 200; prefix = "udp";
		 labels = { host = "node-1.example"; site = "a b/c"; }; };
	  cap = { plugin = "capture"; path = "cap.txt"; timestamps = true; };
	};
	pipelines = { p = { from = ["c", "s"]; to = ["g", "gt", "gu", "cap"]; }; };
	EOF
	start_tallyd g.conf &&
	wait_for "test \$(grep -c \"^gauge t24.app.requests{i=\\\"1\\\"}\" \
cap.txt) -ge 4" 30 &&
	stop_tallyd &&
	grep "connected to 127.0.0.1:$CARBON_PORT" tallyd.log
'

test_expect_success 'a dotted name stays dotted; label values are nodes' '
	same "gauge t24.app.requests{i=\"0\"}" \
		tally.t24.node-1_example.t24.app.requests.0.a_b_c &&
	same "gauge t24.app.requests{i=\"1\"}" \
		tally.t24.node-1_example.t24.app.requests.1.a_b_c
'

test_expect_success 'counter, info, odd label values (escaping table)' '
	same "counter spangen_events" \
		tally.t24.node-1_example.spangen_events.a_b_c &&
	same "info spangen_build_info{version=\"1.0\"}" \
		tally.t24.node-1_example.spangen_build_info.a_b_c.1_0 &&
	same "gauge spangen.odd-name{__reserved=\"x\",label.with.dots=\"a\\\"b\\\\c\\nd\"}" \
		tally.t24.node-1_example.spangen.odd-name.x.a_b_c_d.a_b_c
'

test_expect_success 'histogram: _count, _sum and a bucket (le wins)' '
	captured "histogram spangen_latency_seconds{le=\"y\",path=\"/a\"}" |
		sed "s/count=//" >hc &&
	test -s hc &&
	carbon_points carbon \
		tally.t24.node-1_example.spangen_latency_seconds_count.y._a.a_b_c \
		$(wc -l <hc) >ha &&
	test_cmp hc ha &&
	awk "{ print \$1, \$2 / 2 }" hc >hb &&
	carbon_points carbon \
		tally.t24.node-1_example.spangen_latency_seconds_bucket.1._a.a_b_c \
		$(wc -l <hb) >hba &&
	test_cmp hb hba
'

test_expect_success 'tags: carbon parses the same tag set back' '
	same "gauge t24.app.requests{i=\"0\"}" \
		"tagged.t24.app.requests;host=node-1.example;i=0;site=a_b_c" &&
	same "gauge spangen.odd-name{__reserved=\"x\",label.with.dots=\"a\\\"b\\\\c\\nd\"}" \
		"tagged.spangen.odd-name;__reserved=x;host=node-1.example;label.with.dots=a_b_c_d;site=a_b_c"
'

test_expect_success 'protocol udp: the same points, in datagrams' '
	same "gauge t24.app.requests{i=\"1\"}" \
		udp.node-1_example.t24.app.requests.1.a_b_c &&
	same "gauge spangen.odd-name{__reserved=\"x\",label.with.dots=\"a\\\"b\\\\c\\nd\"}" \
		udp.node-1_example.spangen.odd-name.x.a_b_c_d.a_b_c
'

test_expect_success 'protocol udp refuses a host name (no resolution)' '
	cat >udp.conf <<-EOF &&
	inputs = { c = { plugin = "counter"; }; };
	outputs = { g = { plugin = "graphite"; server = "carbon.example:2003";
			  protocol = "udp"; }; };
	pipelines = { p = { from = ["c"]; to = ["g"]; }; };
	EOF
	test_must_fail tallyd -c udp.conf --check-config 2>err &&
	grep "udp.conf:2.*protocol \"udp\" takes a numeric address" err
'

test_expect_success 'NaN and infinities never reach carbon' '
	! find carbon/storage -name "spangen_*inf" | grep . &&
	! find carbon/storage -name "spangen_nan" | grep . &&
	find carbon/storage -name "spangen_events" | grep .
'

# A label value of 300 bytes would be a whisper file name over the 255
# bytes Linux allows (carbon logs "File name too long" and loses the
# point): the node is cut to 231 bytes, "_" and 8 hex digits of its FNV-1a
# hash (python3 -c: low 32 bits of FNV-1a 64 of 300 x: 1ba85555)
X300=$(printf "%0300d" 0 | tr 0 x)
X231=$(printf "%0231d" 0 | tr 0 x)

test_expect_success 'a path node of 300 bytes is cut, and carbon stores it' '
	cat >long.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { c = { plugin = "counter"; interval = 1.0; name = "t24.long";
			 max_reads = 3; label_key = "long";
			 label_value = "$X300"; }; };
	outputs = {
	  g = { plugin = "graphite"; server = "127.0.0.1:$CARBON_PORT";
		prefix = "long"; labels = { host = "n1"; }; };
	  cap = { plugin = "capture"; path = "cap.txt"; timestamps = true; };
	};
	pipelines = { p = { from = ["c"]; to = ["g", "cap"]; }; };
	EOF
	: >cap.txt &&
	start_tallyd long.conf &&
	wait_for "test \$(grep -c ^gauge.t24.long cap.txt) -ge 3" 30 &&
	stop_tallyd &&
	same "gauge t24.long{i=\"0\",long=\"$X300\"}" \
		long.n1.t24.long.0.${X231}_1ba85555 &&
	f=$(find carbon/storage -name "${X231}_1ba85555.wsp") &&
	test $(basename "$f" | wc -c) -eq $((240 + 4 + 1)) &&
	! grep -i "too long" carbon/carbon.out carbon/log/*/*.log 2>/dev/null
'

test_expect_success 'stop carbon' '
	stop_carbon
'

test_done
