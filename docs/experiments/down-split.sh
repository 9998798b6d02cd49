#!/bin/sh
# down-split.sh: moe_down_mma_bf16 with its tokens split over threadgroups
# (tpg, tokens a threadgroup; down-split.patch, with BAGEL_EXP_DOWN_TPG
# choosing it, 16 = main's one threadgroup for all of a launch's tokens),
# and moe_up_mma_bf16 reading its codes MOE_UP_AHEAD chunks ahead (up-ahead,
# in the same patch: BAGEL_KERNEL_TUNING=MOE_UP_AHEAD=N, 1 = main's loop).
# The centred checkpoint's batched step of 8 rows spends 52 µs a layer in
# the down, its 65 items in 8 rounds of 9 in each of 128 threadgroups, and
# its up reads about 1 TB/s, its loops one read ahead (synth-centred.sh,
# forty-first session; docs/history/batching-log.md).
# .devbin/bins.tar.xz holds bagel, cuda.test, engine.test and ptx built with
# the patch applied (tpg 16 and MOE_UP_AHEAD 1 stand for main: the same
# launches and loops), and ptx-down, the PTX tool of the down's part alone
# (down-split.patch at 35dd083), should the up's part lose:
#   git show 35dd083:docs/experiments/down-split.patch | git apply && CGO_ENABLED=0 GOOS=linux go build -trimpath -o .devbin/ptx-down ./tools/ptx
#   git checkout kernels internal ops && git apply docs/experiments/down-split.patch
#   make gpu-build && (cd .devbin && tar cf bins.tar bagel cuda.test engine.test ptx ptx-down \
#     && xz -T2 -9e bins.tar && rm -f bagel cuda.test engine.test ptx ptx-down)
# On the device (carry .devbin): OUT=$OUT sh docs/experiments/down-split.sh
# (SLIM=1 TEST_S=70: the batch at tpg 16 and 1 and the tests alone). It
# brings back the PTX for main of either source ($OUT/ptx, $OUT/ptx-down).
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel cuda.test engine.test ptx ptx-down) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
mkdir -p $OUT/ptx && .devbin/ptx -out $OUT/ptx >> $LOG 2>&1
say "ptx (rc $?): $(cut -c1-12 $OUT/ptx/kernels.sha256)"
mkdir -p $OUT/ptx-down && .devbin/ptx-down -out $OUT/ptx-down >> $LOG 2>&1
say "ptx-down (rc $?): $(cut -c1-12 $OUT/ptx-down/kernels.sha256)"
gzip -9 $OUT/ptx/kernels.ptx $OUT/ptx-down/kernels.ptx
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
.devbin/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
C="-m $M --backend cuda --runs 1 --long= --switches=false --lookup=false --projections 0 --stall-prompt 0"
# A load for several replies at 1, 4 and 8: main, then each tpg.
tpgs="16 1 2 4"; [ -n "${SLIM:-}" ] && tpgs="16 1" # SLIM=1: little device time left
for b in $tpgs; do
	bin=.devbin/bagel; tpg=$b
	BAGEL_EXP_DOWN_TPG=$tpg BAGEL_TILED_GEMV=1 timeout 120 $bin bench $C --prefill= --drafts= --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "[$b] (rc $?): all decoding at 1/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	cat /tmp/b.txt >> $LOG
done
[ -n "${SLIM:-}" ] && tuning= || tuning='MOE_UP_AHEAD=2 MOE_UP_AHEAD=4 MOE_UP_AHEAD=8 MOE_DOWN_MMA_SPLIT=1 MOE_DOWN_MMA_SPLIT=3 MOE_MMA_IN_PER_WARP=256 MOE_MMA_IN_PER_WARP=1024'
# With a token a threadgroup: the up's codes 2, 4 or 8 chunks ahead (main 1),
# the down's teams of 1 or 3 SIMD-groups (main 2), and the up with 256 or
# 1024 inputs a SIMD-group (main 512).
for t in $tuning; do
	BAGEL_KERNEL_TUNING=$t BAGEL_EXP_DOWN_TPG=1 BAGEL_TILED_GEMV=1 timeout 120 .devbin/bagel bench $C --prefill= --drafts= --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "[1, $t] (rc $?): all decoding at 1/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
done
# Drafts of 4 in the batch (a reply's 5 rows share experts) and a lone
# reply's verifies (T 5), tiled GEMVs.
[ -n "${SLIM:-}" ] && drafts= || drafts="16 1"
for b in $drafts; do
	BAGEL_EXP_DOWN_TPG=$b BAGEL_TILED_GEMV=1 timeout 120 .devbin/bagel bench $C --prefill= --drafts= --tokens 128 --streams 8 --stream-drafts 4 > /tmp/b.txt 2>&1
	say "[$b] drafts of 4 in the batch (rc $?):"
	grep -B2 -A6 'streams  aggregate' /tmp/b.txt | tee -a $LOG
	BAGEL_EXP_DOWN_TPG=$b BAGEL_TILED_GEMV=1 timeout 120 .devbin/bagel bench $C --tokens 128 --prefill= --drafts 4 > /tmp/b.txt 2>&1
	say "[$b] lone, tiled (rc $?): $(grep -E 'a verify =' /tmp/b.txt | cut -c1-150)"
	grep -E '^decode greedy' /tmp/b.txt | cut -c1-130 | tee -a $LOG
done
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout ${TEST_S:-150} ../.devbin/cuda.test -test.count=1 -test.v \
	-test.run 'TestKernels$|TestTiledExpertsTokenInvariance|TestTiledGEMVTokenInvariance') > /tmp/c.txt 2>&1
say "cuda kernel tests (rc $?): $(grep -E '^(--- |ok|FAIL)' /tmp/c.txt | tr '\n' ' ')"
grep -E 'moe_down_mma|FAIL|differs' /tmp/c.txt | head -30 | tee -a $LOG
if [ -z "${SLIM:-}" ]; then # the experts' token invariance with the up 4 chunks ahead
	(cd cuda && BAGEL_KERNEL_TUNING=MOE_UP_AHEAD=4 BAGEL_REQUIRE_GPU=1 timeout 60 ../.devbin/cuda.test -test.count=1 -test.v \
		-test.run 'TestTiledExpertsTokenInvariance') > /tmp/c4.txt 2>&1
	say "invariance, MOE_UP_AHEAD=4 (rc $?): $(grep -E '^(--- |ok|FAIL)' /tmp/c4.txt | tr '\n' ' ')"
fi
# Main's batch tests and the verify's on the GPU with a token a threadgroup.
(cd engine && BAGEL_EXP_DOWN_TPG=1 BAGEL_REQUIRE_GPU=1 timeout ${TEST_S:-150} ../.devbin/engine.test -test.count=1 -test.v \
	-test.run 'TestGPUBatch|TestGPUShortChunks|TestGPUPromptsTogether|TestGPUSpeculative|TestGPUMTPVerify|TestGPUPooled|TestGPUPathsMatchTheReference') > /tmp/t.txt 2>&1
say "engine GPU tests, tpg 1 (rc $?): $(grep -E '^(--- |ok|FAIL)' /tmp/t.txt | tr '\n' ' ')"
grep -E 'FAIL|differ' /tmp/t.txt | head -20 | tee -a $LOG
[ -n "${SLIM:-}" ] && exit 0
# Every kernel of a batched step of 8 rows, tpg 1, graphs off.
BAGEL_EXP_DOWN_TPG=1 BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 150 ncu --csv --clock-control none --metrics gpu__time_duration.sum \
	--launch-skip 50000 --launch-count 3000 .devbin/bagel bench $C --prefill= --drafts= --tokens 16 --streams 8 > $OUT/ncu-batch.csv 2> /dev/null
say "ncu-batch (rc $?)"
python3 tools/ncu_forwards.py $OUT/ncu-batch.csv 30 > $OUT/ncu-batch.txt
grep '^forward' $OUT/ncu-batch.txt | cut -c1-70 | tee -a $LOG
awk '/^forward/ {n++; batched[n] = index($0, "batched step of 8 rows") > 0} {buf[n] = buf[n] $0 "\n"} END {for (i = n - 1; i > 0; i--) if (batched[i]) {printf "%s", buf[i]; exit}}' $OUT/ncu-batch.txt | tee -a $LOG
gzip -9 $OUT/ncu-batch.csv
