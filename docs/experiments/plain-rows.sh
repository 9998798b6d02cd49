#!/bin/sh
# plain-rows.sh: the dense projections of a batched step on plain GEMVs that
# take all of a step's rows in one threadgroup a row block
# (qmatmul_rows_bf16, qmatmul_multi_rows_bf16: each weight read once a step,
# each row its lone launch's bits), the experts tiled; against main's tiled
# GEMVs and the plain GEMVs a threadgroup a row (plain-dense). Branch
# plain-rows: BAGEL_EXP_PLAIN_DENSE=1 BAGEL_EXP_ROWS=1.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
. tools/synth_model.sh
say "synth"
C="-m $M --backend cuda --runs 1 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0"
B="bench $C --tokens 200 --streams 1,2,4,8"
run() { # label, env...
	l=$1; shift
	env BAGEL_TILED_GEMV=1 "$@" timeout 120 .devbin/bagel $B > /tmp/b.txt 2>&1
	say "$l (rc $?): alone $(grep -m1 '^decode greedy ' /tmp/b.txt | awk -F '  +' '{print $4, "tok/s", $9, "ms"}'); all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
}
(cd engine && BAGEL_EXP_PLAIN_DENSE=1 BAGEL_EXP_ROWS=1 BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/engine.test -test.count=1 -test.run 'GPUBatch|GPUPaths' -test.v) > /tmp/e.txt 2>&1
say "engine GPU batch tests, dense on the rows GEMVs: rc $? $(grep -c -- '--- PASS' /tmp/e.txt) pass"
grep -- "--- FAIL\|panic\|differ" /tmp/e.txt | head -6 | tee -a $LOG
run "tiled (main)"
run "rows" BAGEL_EXP_PLAIN_DENSE=1 BAGEL_EXP_ROWS=1
run "plain dense a row a threadgroup" BAGEL_EXP_PLAIN_DENSE=1
run "tiled (main)"
run "rows" BAGEL_EXP_PLAIN_DENSE=1 BAGEL_EXP_ROWS=1
timeout 60 .devbin/bagel bench $C --tokens 200 > /tmp/p.txt 2>&1
say "plain GEMVs alone: $(grep -m1 '^decode greedy ' /tmp/p.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}')"
BAGEL_TILED_GEMV=1 BAGEL_EXP_PLAIN_DENSE=1 BAGEL_EXP_ROWS=1 timeout 120 .devbin/bagel bench $C --tokens 128 --streams 1,4,8 --stream-drafts 4 > /tmp/d.txt 2>&1
say "drafts of 4 in the batch, rows: rc $? $(sed -n '/the oracle guessing/,$p' /tmp/d.txt | awk '$1 ~ /^[148]$/ {printf "%s: %s ", $1, $2}')"
