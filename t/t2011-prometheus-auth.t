#!/bin/sh
# SPDX-License-Identifier: MIT
test_description='prometheus output: basic auth with bcrypt hashes, over HTTPS

Users and their bcrypt hashes are given as node_exporter'"'"'s web-config.yml
has them ($2y$ as htpasswd makes them, and $2b$). curl with the right and
wrong passwords, no credentials, an unknown user: 200, or 401 with
WWW-Authenticate, counted in the self metrics; failures from one address
back off (429) without stalling a scraper whose credentials are verified;
no password in the log. Then a real Prometheus scrapes the output over TLS
with basic auth, read back through its query API.'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"
. "$SHARNESS_TEST_SRCDIR/t2-lib.sh"

require_cmd curl
require_cmd openssl
require_cmd "${PROMETHEUS:-prometheus}" \
	"prometheus server not installed (Debian package prometheus)"
PROMETHEUS=${PROMETHEUS:-prometheus}

if ! "$TALLYD" --describe prometheus 2>&1 | grep -q basic_auth_users; then
	skip_all='prometheus output without basic auth'
	test_done
fi

# bcrypt HASH of PASSWORD at cost 10 (libxcrypt through Python's crypt)
bcrypt() {
	"$PYTHON3" -W ignore -c '
import crypt, sys
print(crypt.crypt(sys.argv[1], crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 10)))' "$1"
}

# code [CURL ARGS] - the HTTP status of GET /metrics over HTTPS
code() {
	curl -s --max-time 20 --cacert server.crt -o body.txt \
		-w "%{http_code}" "$@" "https://127.0.0.1:$port/metrics"
}

# self_event NAME - tally_events_total of output prom for NAME, or 0
self_event() {
	curl -s --max-time 20 --cacert server.crt -u alice:wonder-land-1 \
		"https://127.0.0.1:$port/metrics" >self.txt &&
	awk -v e="event=\"$1\"" '
		index($0, "tally_events_total{") == 1 &&
		index($0, "instance=\"prom\"") && index($0, e) {
			print $2; found = 1 }
		END { if (!found) print 0 }' self.txt
}

test_expect_success 'hashes and a certificate' '
	alice=$(bcrypt wonder-land-1 | sed "s/^\$2b\\$/\$2y\$/") &&
	bob=$(bcrypt "b0b pass:with colon") &&
	long=$(printf "dave-%067d" 7) &&
	test ${#long} = 72 &&
	dave=$(bcrypt "$long") &&
	case $alice in "\$2y\$10\$"*) ;; *) false ;; esac &&
	case $bob in "\$2b\$10\$"*) ;; *) false ;; esac &&
	self_signed_cert server tally-auth
'

test_expect_success 'a hash that is not bcrypt is refused at --check-config' '
	cat >bad.conf <<-EOF &&
	inputs = { self = { plugin = "self"; }; };
	outputs = { prom = { plugin = "prometheus"; listen = "127.0.0.1:0";
	                     basic_auth_users = { carol = "plain-text"; }; }; };
	pipelines = { p = { from = ["self"]; to = ["prom"]; }; };
	EOF
	test_must_fail tallyd --check-config -c bad.conf 2>err &&
	grep "basic_auth_users: the hash of user carol is not a bcrypt hash" err &&
	! grep plain-text err
'

test_expect_success 'a bad cost, or an empty user list: refused with the reason' '
	low="\$2y\$03\$${alice#\$2y\$10\$}" &&
	test ${#low} = 60 &&
	sed "s|carol = \"plain-text\"|carol = \"$low\"|" bad.conf >cost.conf &&
	test_must_fail tallyd --check-config -c cost.conf 2>err &&
	grep "the hash of user carol is not a bcrypt hash.*: its cost 03 is outside bcrypt.s 04 to 31" err &&
	sed "s|{ carol = \"plain-text\"; }|{}|" bad.conf >empty.conf &&
	test_must_fail tallyd --check-config -c empty.conf 2>err &&
	grep "basic_auth_users is empty: every scraper would get the page without a password" err
'

test_expect_success 'start tallyd: HTTPS and basic auth for alice and bob' '
	port=$(free_port) &&
	cat >auth.conf <<-EOF &&
	global = { interval = 0.5; log_level = "debug"; };
	inputs = { self = { plugin = "self"; }; };
	outputs = { prom = { plugin = "prometheus";
	                     listen = "127.0.0.1:$port";
	                     tls_cert_file = "$PWD/server.crt";
	                     tls_key_file = "$PWD/server.key";
	                     basic_auth_users = { alice = "$alice";
	                                          bob = "$bob";
	                                          dave = "$dave"; }; }; };
	pipelines = { p = { from = ["self"]; to = ["prom"]; }; };
	EOF
	tallyd --check-config -c auth.conf &&
	start_tallyd --wait "port_listening $port" auth.conf
'

test_expect_success 'no credentials: 401 with WWW-Authenticate' '
	test "$(code -D hdr.txt)" = 401 &&
	grep -i "^WWW-Authenticate: Basic realm=\"tally\", charset=\"UTF-8\"" hdr.txt &&
	! grep -q tally_build_info body.txt
'

test_expect_success 'the right passwords: 200 and the page ($2y$ and $2b$)' '
	test "$(code -u alice:wonder-land-1)" = 200 &&
	grep -q ^tally_build_info body.txt &&
	test "$(code -u "bob:b0b pass:with colon")" = 200 &&
	grep -q ^tally_build_info body.txt
'

test_expect_success 'a wrong password and an unknown user: 401, counted' '
	before=$(self_event unauthorized) &&
	test "$(code -u alice:wrong)" = 401 &&
	! grep -q tally_build_info body.txt &&
	test "$(code -u mallory:wonder-land-1 --interface 127.0.0.2)" = 401 &&
	test "$(code -H "Authorization: Basic !!!")" = 401 &&
	wait_for "test \$(self_event unauthorized) -ge $((before + 3))"
'

test_expect_success 'a password beyond bcrypt'"'"'s 72 bytes: 401, not its first 72' '
	# 200 once the failures of the tests before have backed off (429)
	wait_for "test \"\$(code -u \"dave:\$long\")\" = 200" &&
	test "$(code -u "dave:${long}tail")" = 401 &&
	test "$(code -u "dave:${long}other tail")" = 401
'

test_expect_success 'the same wrong password again: 401 at once, no backoff' '
	test "$(code -u alice:wrong-again --interface 127.0.0.4)" = 401 &&
	test "$(code -u alice:wrong-again --interface 127.0.0.4)" = 401 &&
	test "$(code -u alice:wrong-again --interface 127.0.0.4)" = 401
'

test_expect_success 'failures back off their address (429), not a verified scraper' '
	test "$(code -u alice:wrong-fresh --interface 127.0.0.3)" = 401 &&
	# the backoff doubles with each failure (1 s, 2 s, 4 s...): however
	# slow the machine, one of the next attempts falls inside it
	got= && n=0 &&
	while test "$got" != 429 && test $n -lt 8; do
		n=$((n + 1)) &&
		got=$(code -u alice:wrong-$n --interface 127.0.0.3 -D hdr429.txt)
	done &&
	test "$got" = 429 &&
	grep -i "^Retry-After: 1" hdr429.txt &&
	wait_for "test \$(self_event auth_rate_limited) -ge 1" &&
	for i in 1 2 3 4 5; do
		test "$(code -u alice:wonder-land-1)" = 200 || return 1
	done
'

test_expect_success 'a burst of wrong passwords does not stall the cached scraper' '
	pids= &&
	for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15 16 17 18 19 20; do
		curl -s --max-time 20 --cacert server.crt -o /dev/null \
			-u "alice:bad$i" --interface 127.0.0.$((10 + i)) \
			"https://127.0.0.1:$port/metrics" &
		pids="$pids $!"
	done &&
	test "$(code -u alice:wonder-land-1)" = 200 &&
	wait $pids &&
	test "$(code -u alice:wonder-land-1)" = 200
'

test_expect_success 'no password is ever logged' '
	! grep -e wonder-land -e "b0b pass" -e bad1 -e wrong "$TALLYD_LOG" &&
	! grep -F -e "$alice" -e "$bob" "$TALLYD_LOG"
'

cleanup stop_prometheus

test_expect_success 'a real Prometheus scrapes it over TLS with basic auth' '
	pport=$(free_port) &&
	printf "%s" "wonder-land-1" >alice.pass &&
	cat >prometheus.yml <<-EOF &&
	global:
	  scrape_interval: 1s
	  scrape_timeout: 1s
	scrape_configs:
	  - job_name: tally_auth
	    scheme: https
	    tls_config:
	      ca_file: $PWD/server.crt
	    basic_auth:
	      username: alice
	      password_file: $PWD/alice.pass
	    static_configs:
	      - targets: ["127.0.0.1:$port"]
	  - job_name: tally_wrong
	    scheme: https
	    tls_config:
	      ca_file: $PWD/server.crt
	    basic_auth:
	      username: alice
	      password: not-hers
	    static_configs:
	      - targets: ["127.0.0.1:$port"]
	EOF
	start_prometheus &&
	wait_for "curl -sf http://127.0.0.1:$pport/-/ready >/dev/null" 60 ||
	{ tally_diag <prometheus.log; false; }
'

test_expect_success 'the query API: the right job is up with the series, the wrong one down (401)' '
	wait_for "test \"\$(promq_one up{job=\\\"tally_auth\\\"})\" = 1" 30 &&
	wait_for "test \"\$(promq_one tally_build_info{job=\\\"tally_auth\\\"})\" = 1" 30 &&
	wait_for "test \"\$(promq_one up{job=\\\"tally_wrong\\\"})\" = 0" 30 &&
	curl -sS "http://127.0.0.1:$pport/api/v1/targets" >targets.json &&
	"$PYTHON3" -c "
import json
t = {x[\"labels\"][\"job\"]: x for x in
     json.load(open(\"targets.json\"))[\"data\"][\"activeTargets\"]}
assert t[\"tally_auth\"][\"health\"] == \"up\", t
assert t[\"tally_auth\"][\"scrapeUrl\"].startswith(\"https://\"), t
assert t[\"tally_wrong\"][\"health\"] == \"down\", t
assert \"401\" in t[\"tally_wrong\"][\"lastError\"] or \"429\" in t[\"tally_wrong\"][\"lastError\"], t
"
'

test_done
