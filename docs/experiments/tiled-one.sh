#!/bin/sh
# tiled-one.sh: the device call for docs/experiments/tiled-one.patch (written in
# the twenty-ninth session, never run: no GPU started). Before it, on the
# development machine, with the patch applied:
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'  # eval'd below
#   eval $L go build $F -o .devbin/bagel . && eval $L go test -c $F -o .devbin/engine.test ./engine
#   eval $L go test -c $F -o .devbin/cuda.test ./cuda
#   cp kernels/quant_mma.metal /tmp/q; for d in 1 4; do for u in 1 4; do for q in 1 4; do
#     sed -e "s/^#define QMM_BATCH 1$/#define QMM_BATCH $q/" -e "s/^#define MOE_UP_BATCH 1$/#define MOE_UP_BATCH $u/" \
#       -e "s/^#define MOE_DOWN_BATCH 1$/#define MOE_DOWN_BATCH $d/" /tmp/q > kernels/quant_mma.metal
#     eval $L go build $F -o .devbin/ptx-d${d}u${u}q${q} ./tools/ptx; done; done; done; cp /tmp/q kernels/quant_mma.metal
#   (cd .devbin && tar cf bins.tar bagel engine.test cuda.test ptx-* && xz -9e bins.tar)  # ~12 MB: carry .devbin
# then `sh docs/experiments/tiled-one.sh` on the device. The pick's PTX comes
# back in $OUT/ptx: commit it with the pick's defaults set by the same sed.
set -u
T0=$(date +%s)
LIMIT=${LIMIT:-540}
el() { echo $(( $(date +%s) - T0 )); }
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel engine.test cuda.test ptx-*) || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
( . tools/synth_model.sh ) > $OUT/synth.txt 2>&1 &
SP=$!
(cd cuda && BAGEL_KERNEL_TUNING=MOE_DOWN_BATCH=4,MOE_UP_BATCH=4,QMM_BATCH=4 BAGEL_REQUIRE_GPU=1 timeout 90 ../.devbin/cuda.test -test.v -test.count=1 -test.run 'Tiled') > $OUT/kernels-b4.txt 2>&1
echo "invariance, batches of 4: rc $? t=$(el)"; grep -E "^(--- FAIL|FAIL|ok|PASS)" $OUT/kernels-b4.txt | head -5
wait $SP
. tools/synth_model.sh
echo "synth done t=$(el)"
B="bench -m $M --backend cuda --runs 1 --tokens 200 --prefill= --long= --drafts= --switches=false --lookup=false --stall-prompt 0"
: > $OUT/sweep.txt
run() { # name, tuning
	BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=$2 timeout 100 .devbin/bagel $B --streams 1,8 > $OUT/bench-$1.txt 2>&1
	tps=$(grep -m1 '^decode greedy ' $OUT/bench-$1.txt | awk -F '  +' '{print $4}')
	all8=$(grep -A3 'streams  aggregate' $OUT/bench-$1.txt | awk '$1 == 8 {print $(NF-1)}')
	echo "$1 $tps $all8" >> $OUT/sweep.txt
	echo "$1 [$2]: $tps tok/s, $(grep -m1 '^decode greedy ' $OUT/bench-$1.txt | awk -F '  +' '{print $9}') GPU ms | $(grep -A3 'streams  aggregate' $OUT/bench-$1.txt | awk 'NR>1 {printf "%s: all %s, %s ms/step; ", $1, $(NF-1), $7}') t=$(el)"
}
tun() { # d1u1q1 -> tuning
	echo "MOE_DOWN_BATCH=$(echo $1 | cut -c2),MOE_UP_BATCH=$(echo $1 | cut -c4),QMM_BATCH=$(echo $1 | cut -c6)"
}
run base "MOE_DOWN_ONE=0,MOE_UP_ONE=0"
for v in ${VARIANTS:-d1u1q1 d4u1q1 d1u4q1 d1u1q4 d4u4q1 d4u4q4}; do run $v $(tun $v); done
timeout 60 .devbin/bagel $B > $OUT/bench-plain.txt 2>&1
echo "plain GEMVs: $(grep -m1 '^decode greedy ' $OUT/bench-plain.txt | awk -F '  +' '{print $4, "tok/s,", $9, "GPU ms"}') t=$(el)"
# The pick: the fastest lone reply among the ONE builds whose 8 replies are within 1% of d1u1q1's.
W=$(awk 'NR>1 && $1 != "base" {if ($1 == "d1u1q1") ref = $3; t[$1] = $2; a[$1] = $3} END {m = "d1u1q1"; for (k in t) if (a[k] >= 0.99 * ref && t[k] > t[m]) m = k; if (t[m] <= t["d1u1q1"] * 1.005) m = "d1u1q1"; print m}' $OUT/sweep.txt)
WT=$(tun $W)
echo "pick: $W [$WT] t=$(el)"
.devbin/ptx-$W -out $OUT/ptx > $OUT/ptx.txt 2>&1 &
PP=$!
(cd cuda && BAGEL_KERNEL_TUNING=$WT BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/cuda.test -test.v -test.count=1 -test.run 'TestKernels$|Tiled') > $OUT/kernels.txt 2>&1
echo "kernels [$WT] rc $? t=$(el)"; grep -E "^(--- FAIL|FAIL|ok|PASS)" $OUT/kernels.txt | head -5
(cd engine && BAGEL_KERNEL_TUNING=$WT BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/engine.test -test.v -test.count=1 -test.run GPU) > $OUT/engine.txt 2>&1
echo "engine GPU tests rc $? pass $(grep -c '^--- PASS' $OUT/engine.txt) fail $(grep -c '^--- FAIL' $OUT/engine.txt) t=$(el)"
grep -A5 -- '--- FAIL' $OUT/engine.txt | head -20
wait $PP; echo "ptx: $(cat $OUT/ptx.txt | tail -1) $(ls $OUT/ptx 2>/dev/null) t=$(el)"
for v in base:MOE_DOWN_ONE=0,MOE_UP_ONE=0 $W:$WT; do
	[ $(el) -lt $(( LIMIT - 160 )) ] || break
	n=${v%%:*}; t=${v#*:}
	BAGEL_NO_CUDA_GRAPH=1 BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=$t timeout 60 ncu --csv --clock-control none -k regex:'mma' \
		--launch-skip 800 --launch-count 180 --metrics gpu__time_duration.sum,launch__registers_per_thread \
		.devbin/bagel generate -m $M --backend cuda --raw -p "Tell me about bagels." --max-tokens 16 > $OUT/ncu-$n.csv 2> /dev/null
	echo "== ncu $n t=$(el)"; python3 tools/ncu_summary.py $OUT/ncu-$n.csv | head -9
	python3 - $OUT/ncu-$n.csv <<'PY'
import csv,sys
lines=[l for l in open(sys.argv[1]) if l.startswith('"')]
regs={}
for r in csv.DictReader(lines):
    if r.get("Metric Name")=="launch__registers_per_thread": regs[r["Kernel Name"].split("(")[0]]=r["Metric Value"]
print("regs:", regs)
PY
done
if [ $(el) -lt $(( LIMIT - 110 )) ]; then
	BAGEL_TILED_GEMV=1 BAGEL_KERNEL_TUNING=$WT timeout $(( LIMIT - 10 - $(el) )) .devbin/bagel bench -m $M --backend cuda --runs 1 --tokens 128 --prefill= --long= --drafts= --switches=false --lookup=false --streams 1,4,8 --stall-prompt 8192 > $OUT/batch.txt 2>&1
	echo "batch [$WT] t=$(el)"; grep -A8 'replies decoded together' $OUT/batch.txt; grep -i stall $OUT/batch.txt | head -3
fi
