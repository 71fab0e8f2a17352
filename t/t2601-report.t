#!/bin/sh
test_description='report output: per-region time, GPU and host figures of
a known job (reportgen: 4 ranks, 4 GPUs, 10 s samples) against figures
computed by hand; the picture; jobs without GPU or trace; bad input;
SIGUSR1 and shutdown'

. /usr/share/sharness/sharness.sh
. "$SHARNESS_TEST_SRCDIR/lib/tally.sh"

tally_sock_dir xdg || exit 1
XDG_RUNTIME_DIR=$TALLY_SOCK_DIR
export XDG_RUNTIME_DIR

# conf FILE [REPORTGEN OPTIONS] [REPORT OPTIONS] - reportgen into the
# report output rep; self into self.out
conf() {
	cat >"$1" <<-EOF
	global = { log_level = "info"; interval = 10.0;
		   output_dir = "$PWD/out"; };
	inputs = {
		gen = { plugin = "reportgen"; $2 };
		self = { plugin = "self"; interval = 0.05; };
	};
	outputs = {
		rep = { plugin = "report"; $3 };
		health = { plugin = "capture"; path = "self.out"; };
	};
	pipelines = {
		p = { from = ["gen"]; to = ["rep"]; };
		h = { from = ["self"]; to = ["health"]; };
	};
	EOF
}

# selfval KIND EVENT_OR_REASON - the last tally_KIND_total of rep
selfval() {
	grep "^counter tally_$1_total{" self.out | grep -F "instance=\"rep\"," |
		grep -E "(event|reason)=\"$2\"" | tail -n1 | sed "s/.* //" |
		grep . || echo 0
}

# check.py FILE - report.json against the figures computed by hand below
cat >check.py <<'EOF'
import json, sys

GIB = 1024 ** 3
# The job (t/plugins/reportgen.c): [0, 1000] s; GPU c busy 20 + 10c % and
# 100 + 50c W up to 500 s, 80 % and 300 W after; VRAM 25 % then 50 % of
# 64 GiB; host CPU 40 % then 90 %, memory used 10 GiB then 30 GiB. Rank r
# sees GPU r and runs main [0,1000], init [0,100], io 4 x 100 s in
# [100,500], solve [500, 600 + 100r], kernel [500,550] in solve.
# Node view of a region: its windows' union on all 4 GPUs:
#   before 500 s: busy mean (20+30+40+50)/4 = 35, power 100+150+200+250
#   = 700 W; after: 80 %, 1200 W.
# main:   (35 + 80)/2 = 57.5 %, (700 + 1200)/2 = 950 W,
#         700*500 + 1200*500 = 950000 J, CPU 65 %, share 4000/4000
# io:     35 %, 700 W, 700*400 = 280000 J, share 1600/4000
# solve:  union [500,900]: 80 %, 1200 W, 480000 J, share 1000/4000
# init:   35 %, 700 W, 70000 J, share 400/4000
# kernel: 80 %, 1200 W, 60000 J, share 200/4000
rows = {
    # name: calls, total, mean, share, busy, power, energy, cpu, mem, vram
    "main": (4, 4000, 1000, 1.0, 57.5, 950, 950000, 65, 30, 32),
    "io": (16, 1600, 100, 0.4, 35, 700, 280000, 40, 10, 16),
    "solve": (4, 1000, 250, 0.25, 80, 1200, 480000, 90, 30, 32),
    "init": (4, 400, 100, 0.1, 35, 700, 70000, 40, 10, 16),
    "kernel": (4, 200, 50, 0.05, 80, 1200, 60000, 90, 30, 32),
}
# solve per rank: 100 (r+1) s on GPU r at 300 W: 30000 (r+1) J;
# median of four is the second (nearest rank)
solve_energy = (30000, 60000, 120000)

def near(a, b):
    return a is not None and abs(a - b) <= 1e-9 * max(1, abs(b))

d = json.load(open(sys.argv[1]))
bad = []
def want(what, got, exp):
    if not near(got, exp):
        bad.append("%s: got %r, want %r" % (what, got, exp))

want("wall", d["wall_seconds"], 1000)
want("period", d["sample_period_seconds"], 10)
want("job busy", d["job"]["gpu_util_percent"]["mean"], 57.5)
want("job energy", d["job"]["gpu_energy_joules"], 950000)
if [r["name"] for r in d["regions"]] != list(rows):
    bad.append("order: %r" % [r["name"] for r in d["regions"]])
for r in d["regions"]:
    e = rows.get(r["name"])
    if not e:
        continue
    n = r["name"]
    want(n + " calls", r["calls"], e[0])
    want(n + " total", r["total_seconds"], e[1])
    want(n + " mean", r["mean_seconds"], e[2])
    want(n + " share", r["share"], e[3])
    want(n + " busy", r["gpu_util_percent"]["mean"], e[4])
    want(n + " power", r["gpu_power_watts"]["mean"], e[5])
    want(n + " energy", r["gpu_energy_joules"], e[6])
    want(n + " cpu", r["cpu_util_percent"]["mean"], e[7])
    want(n + " mem peak", r["memory_used_bytes"]["max"], e[8] * GIB)
    want(n + " vram peak", r["gpu_vram_peak_bytes"], e[9] * GIB)
    if n == "solve":
        s = r["spread"]["gpu_energy_joules"]
        want("solve energy min", s["min"], solve_energy[0])
        want("solve energy median", s["median"], solve_energy[1])
        want("solve energy max", s["max"], solve_energy[2])
        s = r["spread"]["seconds"]
        want("solve time median", s["median"], 200)
for k in d["rank_summary"]:
    r = k["rank"]
    want("rank %d busy" % r, k["gpu_util_percent"]["mean"], 50 + 5 * r)
    want("rank %d energy" % r, k["gpu_energy_joules"], 200000 + 25000 * r)
    if k["gpus"] != [r]:
        bad.append("rank %d gpus %r" % (r, k["gpus"]))
# a build without cairo says that it has no picture, and nothing else
if [m for m in d["missing"]
    if not m.startswith("no picture: tally was built without cairo")]:
    bad.append("missing: %r" % d["missing"])
print("\n".join(bad))
sys.exit(1 if bad else 0)
EOF

test_expect_success 'bad option: file:line and the reason' '
	conf bad.conf "" "directory = \"\";" &&
	test_must_fail tallyd -c bad.conf --check-config 2>err &&
	grep "bad.conf:.*directory \"\": a directory is needed" err
'

test_expect_success 'tallyd --user -- CMD: the report, its place on stderr' '
	conf job.conf &&
	SLURM_JOB_ID=j1 tallyd --user -c job.conf -- true 2>user.err &&
	grep "^tally: job report in $PWD/out/report/report.txt" user.err &&
	grep "^tally job report: job j1 on " user.err &&
	grep -E "^missing: (nothing|no picture: tally was built without cairo)" user.err &&
	grep "^main  *4  *4  *4000.000  *1000.000 100.0%  *57.5  *80.0  *950.0  *950000.0  *32.00GiB  *65.0  *30.00GiB  *2.0$" user.err
'

test_expect_success 'report.json: every figure as computed by hand' '
	"$PYTHON3" check.py out/report/report.json
'

test_expect_success 'report.txt: the same figures, and the spread' '
	t=out/report/report.txt &&
	grep "^(job)  *4  *-  *1000.000  *-  *-  *57.5  *80.0  *950.0  *950000.0 " $t &&
	grep "^io  *4  *16  *1600.000  *100.000  40.0%  *35.0  *50.0  *700.0  *280000.0  *16.00GiB  *40.0  *10.00GiB  *20.0$" $t &&
	grep "^solve  *4  *4  *1000.000  *250.000  25.0%  *80.0  *80.0  *1200.0  *480000.0 " $t &&
	grep "^init  *4  *4  *400.000  *100.000  10.0%  *35.0 " $t &&
	grep "^kernel  *4  *4  *200.000  *50.000   5.0%  *80.0 " $t &&
	grep "^solve  *100.0/200.0/400.0  *80.0/80.0/80.0  *300.0/300.0/300.0  *30000.0/60000.0/120000.0  *90.0/90.0/90.0$" $t &&
	grep "^     2  *8  *1000.000 2  *60.0  *80.0  *250.0  *250000.0 " $t &&
	grep "T = 10 s" $t
'

grep -q "no picture: tally was built without cairo" out/report/report.txt ||
	test_set_prereq CAIRO

# pngsize FILE - WIDTHxHEIGHT from the PNG header
cat >pngsize.py <<'EOF'
import struct, sys
b = open(sys.argv[1], "rb").read(24)
assert b[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
print("%dx%d" % struct.unpack(">II", b[16:24]))
EOF

test_expect_success CAIRO 'report.svg is XML that rsvg-convert draws; report.png' '
	"$PYTHON3" -c "import sys, xml.dom.minidom as m; m.parse(sys.argv[1])" \
		out/report/report.svg &&
	echo 1200x442 >expect &&
	"$PYTHON3" pngsize.py out/report/report.png >got &&
	test_cmp expect got &&
	if command -v rsvg-convert >/dev/null; then
		rsvg-convert -o svg.png out/report/report.svg &&
		"$PYTHON3" pngsize.py svg.png >got &&
		test_cmp expect got
	else
		say "rsvg-convert missing (librsvg2-bin): SVG not drawn"
	fi &&
	test $(wc -c <out/report/report.png) -gt 5000
'

# missing KEYWORD - report.json lists what is missing, report.txt says it
missing() {
	"$PYTHON3" -c "
import json, sys
m = json.load(open(\"out/report/report.json\"))[\"missing\"]
sys.exit(not any(sys.argv[1] in x for x in m))" "$1" &&
	grep -F "$1" out/report/report.txt
}

test_expect_success 'a job without GPU: a valid report that says so' '
	rm -rf out && conf nogpu.conf "gpus = 0;" &&
	tallyd --user -c nogpu.conf -- true 2>err &&
	missing "no GPU metrics" &&
	grep "^io  *4  *16  *1600.000  *100.000  40.0%  *-  *-  *-  *-  *-  *40.0 " out/report/report.txt &&
	"$PYTHON3" -c "
import json, sys
d = json.load(open(\"out/report/report.json\"))
sys.exit(d[\"job\"][\"gpu_energy_joules\"] is not None or d[\"gpus\"] != [])"
'

test_expect_success 'a job without trace: a valid report that says so' '
	rm -rf out && conf notrace.conf "ranks = 0;" &&
	tallyd --user -c notrace.conf -- true 2>err &&
	missing "no application regions" &&
	grep "^(job)  *0  *-  *1000.000  *-  *-  *57.5 " out/report/report.txt &&
	"$PYTHON3" -c "
import json, sys
d = json.load(open(\"out/report/report.json\"))
sys.exit(d[\"regions\"] != [] or d[\"ranks\"] != 0)"
'

# A running collector without a command: SIGUSR1 writes the report, the
# run goes on, SIGTERM writes it again.
test_expect_success 'bad input, SIGUSR1 and shutdown' '
	rm -rf out self.out && conf badjob.conf "bad = true;" &&
	start_tallyd badjob.conf --user &&
	kill -USR1 $TALLYD_PID &&
	wait_for "grep -q SIGUSR1 out/report/report.json 2>/dev/null" &&
	"$PYTHON3" -c "
import json, sys
d = json.load(open(\"out/report/report.json\"))
c = d[\"counts\"]
assert c[\"clock_step\"] == 1, c
assert c[\"clamped_to_job\"] == 1, c
long = [r for r in d[\"regions\"] if r[\"name\"] == \"long\"][0]
assert abs(long[\"total_seconds\"] - 1000) < 1e-9, long
# GPU 3 sent nothing after 500 s: 3500 of 4000 GPU-seconds
assert abs(d[\"job\"][\"gpu_coverage\"] - 0.875) < 1e-9, d[\"job\"]
" &&
	missing "GPU samples cover 87.5% of the job" &&
	missing "1 samples not after their series" &&
	wait_for "test \$(selfval dropped clock_step) = 1" &&
	wait_for "test \$(selfval events clamped_to_job) = 1" &&
	stop_tallyd &&
	grep "\"written_at\":\"shutdown\"" out/report/report.json
'

# The installed SYSCONFDIR would come first: skip when this machine has one
sysconfdir=$("$TALLYD" --help | sed -n "s|^ *\(/.*\)/user.conf, else$|\1|p")
test -n "$sysconfdir" && ! test -e "$sysconfdir/user.conf" &&
	! test -e "$sysconfdir/conf.d" && test_set_prereq NOINSTALL

# The Python client announces its rank and ROCR_VISIBLE_DEVICES; the
# built-in user configuration (conf.d/user) must hand them to the report.
test_expect_success NOINSTALL 'built-in user configuration: a rank mapped to the GPUs it announces' '
	mkdir bi &&
	(
		cd bi &&
		SLURM_JOB_ID=bi7 SLURM_PROCID=3 ROCR_VISIBLE_DEVICES=2 \
		PYTHONPATH="$top_srcdir/contrib/python" HOME="$PWD" \
		"$TALLYD" --user -- "$PYTHON3" -c "
import tally_trace
tr = tally_trace.Tracer(None, \"app\")
with tr.span(\"solve\"):
    pass
tr.close()
" 2>../bi.err
	) &&
	"$PYTHON3" -c "
import json, sys
d = json.load(open(\"bi/tally-bi7/report/report.json\"))
r = [(k[\"rank\"], k[\"gpus\"]) for k in d[\"rank_summary\"]]
print(r)
sys.exit(r != [(3, [2])])
"
'

test_expect_success '100000 distinct regions: the top 20, the rest folded' '
	rm -rf out && conf many.conf "regions = 100000;" &&
	tallyd --user -c many.conf -- true 2>err &&
	grep "^(99980 more)  *4  *99980 " out/report/report.txt &&
	"$PYTHON3" -c "
import json, sys
d = json.load(open(\"out/report/report.json\"))
n = [r[\"name\"] for r in d[\"regions\"]]
assert n == [\"r%06d\" % i for i in range(99999, 99979, -1)], n
assert d[\"folded\"][\"regions\"] == 99980, d[\"folded\"]
assert d[\"folded\"][\"calls\"] == 99980, d[\"folded\"]
"
'

test_done
