#!/bin/sh
# moe-occupancy.sh: a batched step's experts' kernels, by how many of their
# threads a multiprocessor holds and how the down ranks its slots
# (moe-occupancy.patch; its knobs' defaults are main's launches and code).
# down-split (forty-second session, H100) lost at every tpg with the down's
# teams of two, one 576-thread threadgroup a multiprocessor at 74 registers,
# but with teams of one (MOE_DOWN_MMA_SPLIT=1, 288 threads, three a
# multiprocessor) tpg 1 beat main at 4 and 8 replies. Here:
#   MOE_UP_MMA_MIN_GROUPS=N   moe_up_mma_bf16 bounded to N threadgroups of 256
#                             a multiprocessor (main: 72 registers, 3)
#   MOE_DOWN_MMA_MIN_GROUPS=N the down's bound (main 1)
#   MOE_DOWN_RANK_BALLOT=1    the down's slot ranks by ballots (main: a thread
#                             a slot walking every slot before it)
#   BAGEL_EXP_DOWN_TPG=N      the down's tokens a threadgroup (main 16)
# and ncu's occupancy, memory and warp-state sections of the two kernels in
# a batched step of 8 rows, main's and the ballot's with teams of one at tpg 2.
# .devbin/bins.tar.xz: bagel, cuda.test, engine.test, ptx with the patch applied
# (make gpu-build; cd .devbin && tar cf bins.tar bagel cuda.test engine.test ptx && xz -T2 -9 bins.tar).
# On the device (carry .devbin): OUT=$OUT sh docs/experiments/moe-occupancy.sh
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel cuda.test engine.test ptx) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
mkdir -p $OUT/ptx && .devbin/ptx -out $OUT/ptx >> $LOG 2>&1
say "ptx (rc $?): $(cut -c1-12 $OUT/ptx/kernels.sha256)"
gzip -9 $OUT/ptx/kernels.ptx
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
.devbin/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
C="-m $M --backend cuda --runs 1 --long= --switches=false --lookup=false --projections 0 --stall-prompt 0"
# name tuning tpg: the batch at 1, 4 and 8 replies (all decoding, GPU ms a step)
bench() {
	BAGEL_KERNEL_TUNING=$2 BAGEL_EXP_DOWN_TPG=$3 BAGEL_TILED_GEMV=1 timeout 120 .devbin/bagel bench $C --prefill= --drafts= --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "[$1] (rc $?): alone $(grep -m1 'one reply alone' /tmp/b.txt | awk '{print $(NF-1)}'); all decoding at 1/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	cat /tmp/b.txt >> $LOG
}
bench main '' 16
bench ballot MOE_DOWN_RANK_BALLOT=1 16
bench up4 MOE_UP_MMA_MIN_GROUPS=4 16
bench up5 MOE_UP_MMA_MIN_GROUPS=5 16
bench split1-tpg2 MOE_DOWN_MMA_SPLIT=1 2
bench split1-tpg4 MOE_DOWN_MMA_SPLIT=1 4
bench down2-tpg2 MOE_DOWN_MMA_MIN_GROUPS=2 2
bench all-tpg2 MOE_DOWN_RANK_BALLOT=1,MOE_UP_MMA_MIN_GROUPS=4,MOE_DOWN_MMA_SPLIT=1 2
bench main-again '' 16
# The kernels' cases (tpg 1, 3, 5 among them) and the experts' token
# invariance with every knob away from main.
K=MOE_DOWN_RANK_BALLOT=1,MOE_UP_MMA_MIN_GROUPS=4,MOE_DOWN_MMA_MIN_GROUPS=2
(cd cuda && BAGEL_KERNEL_TUNING=$K BAGEL_REQUIRE_GPU=1 timeout 120 ../.devbin/cuda.test -test.count=1 -test.v \
	-test.run 'TestKernels$|TestTiledExpertsTokenInvariance') > /tmp/c.txt 2>&1
say "cuda kernel tests, $K (rc $?): $(grep -E '^(--- |ok|FAIL)' /tmp/c.txt | tr '\n' ' ')"
grep -E 'moe_(up|down)_mma|FAIL|differs' /tmp/c.txt | head -30 | tee -a $LOG
# The band test at main's defaults, every line kept (it failed with tpg 1 in
# the down-split call, its message not kept).
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 120 ../.devbin/engine.test -test.count=1 -test.v \
	-test.run 'TestGPUPathsMatchTheReference|TestGPUBatchEqualsSolo') > $OUT/band.txt 2>&1
say "engine band + batch tests, main (rc $?): $(grep -E '^(--- |ok|FAIL)' $OUT/band.txt | tr '\n' ' ')"
grep -vE '^\s*$' $OUT/band.txt | grep -iE 'fail|error|further|flips|band' | head -20 | tee -a $LOG
# ncu's sections for the experts' kernels in batched steps of 8 rows.
S="--section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats --section MemoryWorkloadAnalysis"
for cfg in "main||16" "all-tpg2|MOE_DOWN_RANK_BALLOT=1,MOE_UP_MMA_MIN_GROUPS=4,MOE_DOWN_MMA_SPLIT=1|2"; do
	name=${cfg%%|*}; rest=${cfg#*|}; tun=${rest%%|*}; tpg=${rest#*|}
	BAGEL_KERNEL_TUNING=$tun BAGEL_EXP_DOWN_TPG=$tpg BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 150 ncu $S --clock-control none \
		-k 'regex:moe_(up|down)_mma' --launch-skip 14000 --launch-count 4 \
		.devbin/bagel bench $C --prefill= --drafts= --tokens 128 --streams 8 > $OUT/ncu-$name.txt 2>&1
	say "ncu $name (rc $?): $(grep -cE '^\s+moe_' $OUT/ncu-$name.txt) kernels"
	grep -E '^\s+moe_|Duration|DRAM Throughput|Memory Throughput|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit Registers|Waves Per SM' $OUT/ncu-$name.txt | tee -a $LOG
	gzip -9 $OUT/ncu-$name.txt
done
