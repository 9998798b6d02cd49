#!/bin/sh
# plain-dense.sh: a model loaded for several replies (tiled GEMVs) with its
# dense projections (mixers', output, head) on the plain GEMVs (a step's rows
# as threadgroups side by side, each row its lone step's bits), the experts
# tiled: BAGEL_EXP_PLAIN_DENSE=1 (plain-dense.patch). Then bagel bench A/B, two rounds; drafts in the batch; the
# engine's batch-equals-solo test under it; the plain GEMVs' lone reply.
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
for r in 1 2; do
	for a in "" 1; do
		BAGEL_TILED_GEMV=1 BAGEL_EXP_PLAIN_DENSE=$a timeout 90 .devbin/bagel $B > /tmp/b.txt 2>&1
		say "plain experts '$a' (round $r, rc $?): alone $(grep -m1 '^decode greedy ' /tmp/b.txt | awk -F '  +' '{print $4, "tok/s", $9, "ms"}'); all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	done
	timeout 60 .devbin/bagel bench $C --tokens 200 > /tmp/p.txt 2>&1
	say "plain GEMVs alone (round $r): $(grep -m1 '^decode greedy ' /tmp/p.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}')"
done
sed -n '/replies decoded together/,$p' /tmp/b.txt >> $LOG
for a in "" 1; do
	BAGEL_TILED_GEMV=1 BAGEL_EXP_PLAIN_DENSE=$a timeout 120 .devbin/bagel bench $C --tokens 128 --streams 1,4,8 --stream-drafts 4 > /tmp/d.txt 2>&1
	say "drafts of 4 in the batch, plain experts '$a': rc $?"; sed -n '/replies decoded together/,$p' /tmp/d.txt >> $LOG
done
(cd engine && BAGEL_EXP_PLAIN_DENSE=1 BAGEL_REQUIRE_GPU=1 timeout 180 ../.devbin/engine.test -test.count=1 -test.run 'GPUBatch|GPUPaths' -test.v) > /tmp/e.txt 2>&1
say "engine GPU tests under plain experts: rc $? $(grep -c -- '--- PASS' /tmp/e.txt) pass $(grep -- '--- FAIL' /tmp/e.txt | head -3)"
