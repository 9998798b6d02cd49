#!/bin/sh
# combo.sh: l1-head.sh's experiments and router8.sh's in one binary and one
# call (a device was scarce): .devbin/bins.tar.xz holds bagel, cuda.test,
# engine.test and ptx built on the combo branch (l1-head.patch applied, the
# router8 kernel and BAGEL_EXP_ROUTER8). Settings, each `bench --streams
# 1,2,4,8 --tokens 200` on the tiled load, two rounds (the second in reverse):
#   main:     QMM_X_L1=0,QMM_W_CG=0
#   router8:  main's kernels, BAGEL_EXP_ROUTER8=1
#   x-l1:     both on (the patch's defaults); x-l1 only: QMM_W_CG=0
#   head-ahead 2 and 4 (x-l1 off)
# then the plain lone reply, the kernel cases (patch defaults, head ahead 3,
# the 8-bit tiled branch, which every 8-bit matrix of a tiled multi launch
# takes), the engine's GPU batch and verify tests with router8 on, the PTX.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
el() { echo $(( $(date +%s) - T0 )); }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel cuda.test engine.test ptx) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
. tools/synth_model.sh
say "model ready"
C="-m $M --backend cuda --runs 1 --prefill= --long= --drafts= --switches=false --lookup=false --projections 0 --stall-prompt 0"
S1="0:QMM_X_L1=0,QMM_W_CG=0 1:QMM_X_L1=0,QMM_W_CG=0 0: 0:QMM_W_CG=0 0:QMM_X_L1=0,QMM_W_CG=0,QMM_HEAD_AHEAD=2 0:QMM_X_L1=0,QMM_W_CG=0,QMM_HEAD_AHEAD=4"
S2=$(echo $S1 | tr ' ' '\n' | tac | tr '\n' ' ')
for r in 1 2; do
	S=$S1; [ $r = 2 ] && S=$S2
	for s in $S; do
		[ $(el) -gt 400 ] && { say "skip $s round $r"; continue; }
		r8=${s%%:*}; a=${s#*:}
		BAGEL_EXP_ROUTER8=$r8 BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=$a timeout 100 .devbin/bagel bench $C --tokens 200 --streams 1,2,4,8 > /tmp/b.txt 2>&1
		say "router8=$r8 '$a' (round $r, rc $?): all decoding at 1/2/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	done
done
timeout 60 .devbin/bagel bench $C --tokens 200 > /tmp/p.txt 2>&1
say "plain GEMVs alone: $(grep -m1 '^decode greedy ' /tmp/p.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}')"
(cd cuda && BAGEL_KERNEL_TUNING=QMM_HEAD_AHEAD=3 BAGEL_REQUIRE_GPU=1 timeout 60 ../.devbin/cuda.test -test.count=1 -test.v -test.run 'TestKernels$') > /tmp/k.txt 2>&1
say "kernels (x-l1 on, head ahead 3, 8-bit tiled): rc $? $(grep -c '| pass |' /tmp/k.txt) pass"
grep -E "FAIL|panic|error" /tmp/k.txt | head -8 | tee -a $LOG
grep 'qmatmul_mma_multi_bf16' /tmp/k.txt | head -10 | tee -a $LOG
(cd engine && BAGEL_EXP_ROUTER8=1 BAGEL_REQUIRE_GPU=1 timeout 100 ../.devbin/engine.test -test.count=1 -test.run 'GPUBatch|GPUPaths|VerifyLogitsAreDecode' -test.v) > /tmp/e.txt 2>&1
say "engine GPU batch tests (x-l1 on, router8 on): rc $? $(grep -c -- '--- PASS' /tmp/e.txt) pass"
grep -- "--- FAIL\|panic" /tmp/e.txt | head -6 | tee -a $LOG
cp /tmp/k.txt /tmp/e.txt $OUT/ 2>/dev/null
[ $(el) -lt 540 ] && { mkdir -p $OUT/ptx; timeout 50 .devbin/ptx -out $OUT/ptx > /tmp/ptx.txt 2>&1; say "ptx: $(tail -1 /tmp/ptx.txt)"; }
say done
