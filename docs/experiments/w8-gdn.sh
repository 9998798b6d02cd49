#!/bin/sh
# w8-gdn.sh: w8.patch (ahead by a little in one call of the forty-seventh
# session) beside main again with its own PTX, to land, and gdn-regs.patch on top of it.
# w8.patch (QMM_W8): the tiled GEMVs' lane takes words 2t and 2t + 1 of a
# row's chunk in one 8-byte load (main: words t and t + 4, two 4-byte loads
# each half a sector); other bits, a token's output still independent of the
# tokens beside it. gdn-regs.patch: gdn_recurrence_batch_bf16's path for a
# Dk other than 128 walks its rows one at a time, so that the launch's
# registers are those of the Dk = 128 paths (main's took 254 a thread: two
# threadgroups a multiprocessor, 3.88 waves at 8 replies); main's bits; and
# GDN_REC_BATCH_MIN_GROUPS, a register cap to sweep.
# Build (here):
#   L="CGO_ENABLED=0 GOOS=linux GOARCH=amd64" && mkdir -p /tmp/wb && o() { env $L go build -trimpath -ldflags="-s -w" -o /tmp/wb/$1 $2; } &&
#   o bagel-main . && git apply docs/experiments/w8.patch && o bagel-w8 . && o ptx-w8 ./tools/ptx &&
#   git apply docs/experiments/gdn-regs.patch && o bagel-wg . && o ptx-wg ./tools/ptx &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/wb/cuda.test ./cuda &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/wb/engine.test ./engine &&
#   git checkout kernels && (cd /tmp/wb && tar c * | xz -9 > $OLDPWD/.devbin/w8-gdn.tar.xz)
# About 490 s on the device (carry .devbin/w8-gdn.tar.xz): OUT=$OUT sh docs/experiments/w8-gdn.sh
# The log comes back line by line; the PTX first (ptx-w8.tar.xz lands w8
# alone, ptx-wg.tar.xz both), then make gpu-test's two commands on both
# patches, then the benches.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
mkdir -p /tmp/bw
(cd /tmp/bw && xz -dc $OLDPWD/.devbin/w8-gdn.tar.xz | tar x && chmod +x *) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
for p in w8 wg; do
	timeout 120 /tmp/bw/ptx-$p -out /tmp/ptx-$p/ptx > /dev/null 2>&1
	say "ptx-$p (rc $?): $(cut -c1-12 /tmp/ptx-$p/ptx/kernels.sha256)"
	(cd /tmp/ptx-$p && tar c ptx | xz -6 > $OUT/ptx-$p.tar.xz)
done
cp /tmp/bw/cuda.test /tmp/bw/engine.test .devbin/
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/cuda.test -test.v -test.count=1 > /tmp/tests.txt 2>&1)
say "cuda, both patches (rc $?): $(grep -c -- '--- PASS' /tmp/tests.txt) passed, $(grep -c -- '--- FAIL' /tmp/tests.txt) failed (the stale embedded PTX fails by design)"
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/engine.test -test.v -test.count=1 -test.run GPU > /tmp/tests-engine.txt 2>&1)
say "engine GPU, both patches (rc $?): $(grep -c -- '^--- PASS' /tmp/tests-engine.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests-engine.txt) failed"
cat /tmp/tests.txt /tmp/tests-engine.txt | grep -E -- '--- FAIL|FAIL:|panic|differs' | head -12 | cut -c1-300 | tee -a $LOG
cat /tmp/tests.txt /tmp/tests-engine.txt | gzip -9 > $OUT/tests.txt.gz
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
/tmp/bw/bagel-main synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
C="-m $M --backend cuda --runs 1 --switches=false --lookup=false --projections 0 --stall-prompt 0 --long= --prefill= --drafts="
bench() { # label, env...; $B the binary
	label=$1; shift
	env "$@" BAGEL_TILED_GEMV=1 timeout 40 /tmp/bw/$B bench $C --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "[$label] (rc $?): $(grep -E '^ +(1|4|8) ' /tmp/b.txt | awk '{printf "%s: %s all decoding, %s ms a step; ", $1, $9, $7}')"
}
for round in 1 2; do
	B=bagel-main bench main X=1
	B=bagel-w8 bench w8 X=1
	B=bagel-wg bench "w8 + gdn-regs" X=1
	for g in 4 6 8; do
		B=bagel-wg bench "w8 + gdn-regs, GDN_REC_BATCH_MIN_GROUPS=$g" BAGEL_KERNEL_TUNING=GDN_REC_BATCH_MIN_GROUPS=$g
	done
done
B=bagel-wg bench "w8 + gdn-regs, GDN_REC_BATCH_ROWS=4" BAGEL_KERNEL_TUNING=GDN_REC_BATCH_ROWS=4
for b in bagel-main bagel-wg; do # the default load's lone reply
	timeout 40 /tmp/bw/$b bench -m $M --backend cuda --runs 3 --switches=false --lookup=false --projections 0 \
		--stall-prompt 0 --long= --prefill= --drafts= --tokens 200 > /tmp/lone.txt 2>&1
	say "lone [$b] (rc $?): $(grep -E '^decode greedy +- ' /tmp/lone.txt | tr -s ' ' | cut -d' ' -f1-6)"
	cat /tmp/lone.txt >> $OUT/lone.txt
done
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,launch__waves_per_multiprocessor,smsp__issue_active.avg.pct_of_peak_sustained_active
for t in 0 6 8; do # main's: 19.5 µs a launch, 254 registers, 3.88 waves
	BAGEL_KERNEL_TUNING=GDN_REC_BATCH_MIN_GROUPS=$t BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 100 ncu --csv --clock-control none \
		-k regex:'gdn_recurrence_batch' --launch-skip-before-match 50700 --launch-count 10 --metrics "$METRICS" \
		/tmp/bw/bagel-wg bench $C --tokens 16 --streams 8 > /tmp/ncu.csv 2> /dev/null
	say "ncu [wg, GDN_REC_BATCH_MIN_GROUPS=$t] (rc $?)"
	python3 tools/ncu_metrics.py /tmp/ncu.csv | tee -a $LOG
done
# Where the GDN in-projection with its conv waits in a batched step of 8
# rows (20.1 µs a layer for 14 MB, DRAM 22%, issue slots 48%: Next 1 in
# docs/batching.md): ncu's warp sampling by SASS instruction, one launch.
k=qmatmul_mma_multi_conv_batch_bf16
BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 120 ncu --clock-control none -k regex:"^$k\$" \
	--launch-skip-before-match 50700 --launch-count 1 --section SourceCounters --section WarpStateStats \
	-f -o /tmp/$k /tmp/bw/bagel-w8 bench $C --tokens 16 --streams 8 > /tmp/$k.log 2>&1
say "ncu source [$k, w8] (rc $?)"
ncu --import /tmp/$k.ncu-rep --page source --csv --print-source sass > /tmp/$k-src.csv 2> /dev/null
python3 tools/ncu_source.py /tmp/$k-src.csv 24 | tee -a $LOG
gzip -9c /tmp/$k-src.csv > $OUT/$k-src.csv.gz
