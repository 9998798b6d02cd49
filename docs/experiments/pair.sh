#!/bin/sh
# pair.sh: two kernels for a load for several replies, each with its plain
# kernel's bits, at launches of 8 tokens or more:
#   moe_down_warp_bf16 (warp-down.patch; BAGEL_EXP_WARP=0 turns it off): a
#     token's 8 output rows on one SIMD-group walking its slots;
#   moe_up_pair_bf16 (BAGEL_EXP_PAIR=n: launches of n tokens or more, 0
#     off, 8 unset): an item's gate and up rows summed side by side on one
#     unpacked x, where moe_up_bf16 sums them in turn.
# First their bits against the plain kernels and eight greedy replies
# together against each alone; then all decoding at 1 / 4 / 8 replies (plain
# experts: BAGEL_TILED_GEMV=1) for main's kernels, each new one alone, both,
# both with the lone reply on the pair (PAIR=1) and the pair under a register
# cap (MOE_UP_PAIR_MIN_GROUPS=5), two rounds; then ncu of moe_up_bf16 and
# moe_up_pair_bf16 in a batched step of 8 (time, registers, instructions,
# issue slots) and the pair's executed instructions by opcode.
# Build (here, from the branch with both):
#   mkdir -p /tmp/sb && L="CGO_ENABLED=0 GOOS=linux GOARCH=amd64" &&
#   env $L go build -trimpath -ldflags="-s -w" -o /tmp/sb/bagel . &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/sb/cuda.test ./cuda &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/sb/engine.test ./engine &&
#   (cd /tmp/sb && tar c bagel cuda.test engine.test | xz -9 > $OLDPWD/.devbin/pair.tar.xz)
# About 300 s on the device (carry .devbin/pair.tar.xz):
#   OUT=$OUT sh docs/experiments/pair.sh
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
mkdir -p /tmp/br
(cd /tmp/br && xz -dc $OLDPWD/.devbin/pair.tar.xz | tar x && chmod +x bagel cuda.test engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
(cd cuda && BAGEL_KERNEL_TUNING=QMV_SB_EARLY=1 timeout 90 /tmp/br/cuda.test -test.run 'TestWarpExpertsMatchPlain' -test.v > $OUT/tests.txt 2>&1)
say "cuda tests (rc $?): $(grep -c -- '--- PASS' $OUT/tests.txt) passed, $(grep -c -- '--- FAIL' $OUT/tests.txt) failed"
(cd engine && timeout 90 /tmp/br/engine.test -test.run 'TestGPUBatchOfEightEqualsSolo' -test.v >> $OUT/tests.txt 2>&1)
say "+ engine tests (rc $?): $(grep -c -- '--- PASS' $OUT/tests.txt) passed, $(grep -c -- '--- FAIL' $OUT/tests.txt) failed"
grep -E -- '(--- FAIL|differ|batched|panic|error)' $OUT/tests.txt | head -12 | cut -c1-300 | tee -a $LOG
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
/tmp/br/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
C="-m $M --backend cuda --runs 1 --switches=false --lookup=false --projections 0 --stall-prompt 0 --long= --prefill= --drafts="
run() { # name env...
	name=$1; shift
	env "$@" BAGEL_TILED_GEMV=1 timeout 40 /tmp/br/bagel bench $C --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "[$name] (rc $?): $(grep -E '^ +(1|4|8) ' /tmp/b.txt | awk '{printf "%s: %s all decoding, %s ms a step; ", $1, $9, $7}')"
}
# QMV_SB_EARLY=1 (main's plain GEMVs loading a piece's scales and biases
# with its codes) must not change a token: greedy replies alone, both ways.
for sb in 0 1; do
	BAGEL_KERNEL_TUNING=QMV_SB_EARLY=$sb BAGEL_EXP_WARP=0 BAGEL_EXP_PAIR=0 timeout 60 /tmp/br/bagel generate -m $M --backend cuda \
		--temp 0 --max-tokens 96 --raw -p "The quick brown fox" > $OUT/gen-sb$sb.txt 2> /dev/null
	BAGEL_KERNEL_TUNING=QMV_SB_EARLY=$sb BAGEL_EXP_PAIR=1 timeout 60 /tmp/br/bagel generate -m $M --backend cuda \
		--temp 0 --max-tokens 96 --raw -p "The quick brown fox" > $OUT/gen-pair-sb$sb.txt 2> /dev/null
done
for f in gen-pair-sb0 gen-sb1 gen-pair-sb1; do
	say "$f against gen-sb0 ($(wc -c < $OUT/gen-sb0.txt) bytes): $(cmp -s $OUT/$f.txt $OUT/gen-sb0.txt && echo same || echo DIFFERENT)"
done
for round in 1 2; do
	run main BAGEL_EXP_WARP=0 BAGEL_EXP_PAIR=0
	run main-sb BAGEL_EXP_WARP=0 BAGEL_EXP_PAIR=0 BAGEL_KERNEL_TUNING=QMV_SB_EARLY=1
	run both
	run both-cap5 BAGEL_KERNEL_TUNING=MOE_UP_PAIR_MIN_GROUPS=5
	run both-cap5-sb BAGEL_KERNEL_TUNING=MOE_UP_PAIR_MIN_GROUPS=5,QMV_SB_EARLY=1
	run both-cap5-lone BAGEL_EXP_PAIR=1 BAGEL_KERNEL_TUNING=MOE_UP_PAIR_MIN_GROUPS=5
	run both-cap5-sb-lone BAGEL_EXP_PAIR=1 BAGEL_KERNEL_TUNING=MOE_UP_PAIR_MIN_GROUPS=5,QMV_SB_EARLY=1
done
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.pct_of_peak_sustained_active
for p in 0 8; do
	BAGEL_KERNEL_TUNING=MOE_UP_PAIR_MIN_GROUPS=5,QMV_SB_EARLY=1 BAGEL_EXP_PAIR=$p BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 100 ncu --csv --clock-control none -k regex:'moe_(up|down)' \
		--launch-skip-before-match 50700 --launch-count 8 --metrics "$METRICS" /tmp/br/bagel bench $C --tokens 16 --streams 8 > $OUT/ncu-$p.csv 2> /dev/null
	say "ncu PAIR=$p (rc $?)"
	python3 tools/ncu_metrics.py $OUT/ncu-$p.csv | tee -a $LOG
	gzip -9 $OUT/ncu-$p.csv
done
k=moe_up_pair_bf16
BAGEL_KERNEL_TUNING=MOE_UP_PAIR_MIN_GROUPS=5 BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 100 ncu --clock-control none -k regex:"^$k\$" \
	--launch-skip-before-match 50700 --launch-count 1 --section SourceCounters --section WarpStateStats \
	-f -o /tmp/$k /tmp/br/bagel bench $C --tokens 16 --streams 8 > /dev/null 2>&1
say "ncu source $k (rc $?)"
ncu --import /tmp/$k.ncu-rep --page source --csv --print-source sass > $OUT/$k-src.csv 2> /dev/null
python3 tools/ncu_source.py $OUT/$k-src.csv 24 | tee -a $LOG
gzip -9 $OUT/$k-src.csv
