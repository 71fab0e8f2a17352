#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='prometheus output over HTTPS

The test makes a self-signed certificate for 127.0.0.1 with openssl req,
serves /metrics over HTTPS with it, reads it with curl (trusting that
certificate only), replaces the certificate and sends SIGHUP (the new one
is served, a broken one is refused and the old one kept), and has a real
Prometheus scrape the output over TLS, read back through its query API.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"

require_cmd curl
require_cmd openssl
require_cmd "${PROMETHEUS:-prometheus}" \
	"prometheus server not installed (Debian package prometheus)"
PROMETHEUS=${PROMETHEUS:-prometheus}

if ! "$TALLYD" --describe prometheus 2>&1 | grep -q tls_cert_file; then
	skip_all='prometheus output without TLS options'
	test_done
fi

# get CA [CURL ARGS] - GET https://127.0.0.1:$port/metrics trusting CA
get() {
	tally_g_ca=$1
	shift
	curl -sS --max-time 10 --cacert "$tally_g_ca" "$@" \
		"https://127.0.0.1:$port/metrics"
}

test_expect_success 'certificates made with openssl req' '
	self_signed_cert one tally-one &&
	self_signed_cert two tally-two &&
	cp one.crt server.crt &&
	cp one.key server.key
'

test_expect_success 'tls_cert_file without tls_key_file is refused' '
	cat >half.conf <<-EOF &&
	inputs = { self = { plugin = "self"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:0";
	                     tls_cert_file = "$PWD/server.crt"; }; };
	pipelines = { p = { from = ["self"]; to = ["prom"]; }; };
	EOF
	test_must_fail tallyd --check-config -c half.conf 2>err &&
	grep "tls_cert_file set without tls_key_file: HTTPS needs both" err
'

test_expect_success 'relative or missing TLS files are refused by --check-config' '
	cat >rel.conf <<-EOF &&
	inputs = { self = { plugin = "self"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:0";
	                     tls_cert_file = "server.crt";
	                     tls_key_file = "$PWD/nothere.key"; }; };
	pipelines = { p = { from = ["self"]; to = ["prom"]; }; };
	EOF
	test_must_fail tallyd --check-config -c rel.conf 2>err &&
	grep "tls_cert_file \"server.crt\": an absolute path is needed" err &&
	grep "tls_key_file $PWD/nothere.key: No such file or directory" err
'

test_expect_success 'an encrypted key: refused with the reason, no prompt even on a terminal' '
	openssl pkey -in one.key -aes128 -passout pass:secret \
		-out enc.key 2>openssl.err &&
	grep ENCRYPTED enc.key &&
	port=$(free_port) &&
	cat >enc.conf <<-EOF &&
	inputs = { self = { plugin = "self"; }; };
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port";
	                     tls_cert_file = "$PWD/one.crt";
	                     tls_key_file = "$PWD/enc.key"; }; };
	pipelines = { p = { from = ["self"]; to = ["prom"]; }; };
	EOF
	test_must_fail timeout 20 "$TALLYD" -c enc.conf --foreground 2>err &&
	grep "tls_key_file $PWD/enc.key is encrypted: tallyd cannot ask for a pass phrase" err &&
	if command -v script >/dev/null; then
		# a terminal: OpenSSL would prompt on it and wait
		test_must_fail timeout 20 script -qec \
			"\"$TALLYD\" -c enc.conf --foreground" tty.log \
			</dev/null >/dev/null 2>&1 &&
		grep "is encrypted" tty.log &&
		! grep -i "pass phrase:" tty.log
	fi
'

test_expect_success 'a key that is not the certificate'"'"'s: tallyd does not start' '
	port=$(free_port) &&
	cat >bad.conf <<-EOF &&
	global = { log_level = "info"; };
	inputs = { self = { plugin = "self"; }; };
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port";
	                     tls_cert_file = "$PWD/one.crt";
	                     tls_key_file = "$PWD/two.key"; }; };
	pipelines = { p = { from = ["self"]; to = ["prom"]; }; };
	EOF
	test_must_fail timeout 20 "$TALLYD" -c bad.conf --foreground 2>err &&
	grep "tls_key_file $PWD/two.key: cannot use it: .*key values mismatch" err
'

test_expect_success 'start tallyd serving HTTPS' '
	port=$(free_port) &&
	cat >tls.conf <<-EOF &&
	global = { interval = 0.5; log_level = "info"; };
	inputs = { self = { plugin = "self"; }; };
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port";
	                     tls_cert_file = "$PWD/server.crt";
	                     tls_key_file = "$PWD/server.key"; }; };
	pipelines = { p = { from = ["self"]; to = ["prom"]; }; };
	EOF
	start_tallyd --wait "port_listening $port" tls.conf &&
	grep "serving /metrics on 127.0.0.1:$port (HTTPS)" tallyd.log
'

test_expect_success 'curl reads /metrics over HTTPS, trusting the certificate' '
	wait_for "get one.crt -o page.txt 2>/dev/null && grep -q ^tally_build_info page.txt" &&
	get one.crt -v -o /dev/null 2>curl.err &&
	grep "subject: CN=tally-one" curl.err &&
	grep -E "SSL connection using TLSv1.[23]" curl.err
'

test_expect_success 'gzip, keep-alive and HEAD work over TLS too' '
	get one.crt --compressed -o gz.txt &&
	grep -q ^tally_build_info gz.txt &&
	get one.crt -o a.txt -o b.txt \
		"https://127.0.0.1:$port/metrics" 2>/dev/null &&
	grep -q ^tally_build_info b.txt &&
	get one.crt -I >head.txt &&
	grep -i "^content-type: text/plain; version=0.0.4" head.txt
'

test_expect_success 'plain HTTP and TLS below 1.2 get no page' '
	test_must_fail curl -sS --max-time 5 "http://127.0.0.1:$port/metrics" \
		-o plain.txt &&
	! grep -q tally_build_info plain.txt &&
	test_must_fail get one.crt --tls-max 1.1 -o old.txt &&
	test_must_fail get two.crt -o untrusted.txt
'

test_expect_success 'a replaced certificate is served after SIGHUP' '
	cp two.crt server.crt.new && mv server.crt.new server.crt &&
	cp two.key server.key.new && mv server.key.new server.key &&
	kill -HUP $TALLYD_PID &&
	wait_for "get two.crt -o new.txt 2>/dev/null" &&
	get two.crt -v -o /dev/null 2>curl2.err &&
	grep "subject: CN=tally-two" curl2.err &&
	test_must_fail get one.crt -o old.txt &&
	grep "TLS: certificate $PWD/server.crt and key $PWD/server.key reloaded" tallyd.log
'

test_expect_success 'a broken certificate at SIGHUP: the one in use stays' '
	echo "not a certificate" >server.crt.new && mv server.crt.new server.crt &&
	kill -HUP $TALLYD_PID &&
	wait_for "grep -q \"TLS: keeping the certificate loaded before\" tallyd.log" &&
	grep "tls_cert_file $PWD/server.crt: cannot use it" tallyd.log &&
	get two.crt -o still.txt &&
	grep -q ^tally_build_info still.txt &&
	kill -0 $TALLYD_PID
'

test_expect_success 'an expired certificate: a warning at load, still served' '
	mkdir ca &&
	printf "[ca]\ndefault_ca = d\n[d]\ndatabase = index.txt\nnew_certs_dir = .\nserial = serial\ndefault_md = sha256\npolicy = p\n[p]\ncommonName = supplied\n" >ca/ca.cnf &&
	: >ca/index.txt && echo 01 >ca/serial &&
	(cd ca &&
	 openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:prime256v1 \
		-nodes -subj /CN=tally-old -keyout ../old.key -out old.csr &&
	 openssl ca -batch -config ca.cnf -selfsign -keyfile ../old.key \
		-in old.csr -out ../old.crt -startdate 20200101000000Z \
		-enddate 20200102000000Z) >ca.log 2>&1 &&
	oport=$(free_port) &&
	sed -e "s/127.0.0.1:$port/127.0.0.1:$oport/" \
	    -e "s|$PWD/server.crt|$PWD/old.crt|" \
	    -e "s|$PWD/server.key|$PWD/old.key|" tls.conf >old.conf &&
	pid=$TALLYD_PID &&
	start_tallyd --log old.log --wait "port_listening $oport" old.conf &&
	grep "warning: .*tls_cert_file $PWD/old.crt: the certificate expired on 2020-01-02 00:00:00 UTC: clients will refuse it" old.log &&
	curl -sfk "https://127.0.0.1:$oport/metrics" | grep -q ^tally_build_info &&
	stop_tallyd &&
	TALLYD_PID=$pid
'

cleanup stop_prometheus

test_expect_success 'a real Prometheus scrapes it over TLS' '
	pport=$(free_port) &&
	cat >prometheus.yml <<-EOF &&
	global:
	  scrape_interval: 1s
	  scrape_timeout: 1s
	scrape_configs:
	  - job_name: tally_tls
	    scheme: https
	    tls_config:
	      ca_file: $PWD/two.crt
	    static_configs:
	      - targets: ["127.0.0.1:$port"]
	EOF
	start_prometheus &&
	wait_for "curl -sf http://127.0.0.1:$pport/-/ready >/dev/null" 60 ||
	{ tally_diag <prometheus.log; false; }
'

test_expect_success 'its query API has the target up and tallyd'"'"'s series' '
	wait_for "test \"\$(promq_one up{job=\\\"tally_tls\\\"})\" = 1" 30 &&
	wait_for "test \"\$(promq_one tally_build_info{job=\\\"tally_tls\\\"})\" = 1" 30 &&
	curl -sS "http://127.0.0.1:$pport/api/v1/targets" >targets.json &&
	"$PYTHON3" -c "
import json
t = json.load(open(\"targets.json\"))[\"data\"][\"activeTargets\"]
assert len(t) == 1 and t[0][\"health\"] == \"up\", t
assert t[0][\"scrapeUrl\"].startswith(\"https://\"), t
assert t[0][\"lastError\"] == \"\", t
"
'

test_done
