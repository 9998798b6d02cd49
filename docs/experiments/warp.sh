#!/bin/sh
# warp.sh: warp-down.patch's moe_down_warp_bf16 against moe_down_bf16 in a
# load for several replies: a token's 8 output rows on one SIMD-group walking
# its 8 slots and the shared expert (moe_down_bf16's sums through
# qmv_rows_w, the same bits), for launches of 8 tokens or more
# (ops.MoEDownWarpMinTokens); BAGEL_EXP_WARP=0 gives main's kernels.
# First its bits against moe_down_bf16 and eight greedy replies together
# against each alone; then all decoding at 1 / 4 / 8 replies (plain experts:
# BAGEL_TILED_GEMV=1), BAGEL_EXP_WARP=0 and the default in turn, two rounds.
# Build (here, from main with the patch applied):
#   git apply docs/experiments/warp-down.patch && mkdir -p /tmp/sb &&
#   L="CGO_ENABLED=0 GOOS=linux GOARCH=amd64" &&
#   env $L go build -trimpath -ldflags="-s -w" -o /tmp/sb/bagel . &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/sb/cuda.test ./cuda &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/sb/engine.test ./engine &&
#   (cd /tmp/sb && tar c bagel cuda.test engine.test | xz -9 > $OLDPWD/.devbin/warp.tar.xz)
# Then ncu's source page of moe_up_bf16 and moe_down_warp_bf16 in a batched
# step of 8: their executed instructions by opcode (docs/batching.md, Next 1).
# About 170 s on the device, after its start (carry .devbin/warp.tar.xz; the
# forty-fourth session left one built from the patch in .devbin):
#   OUT=$OUT sh docs/experiments/warp.sh
# If it wins at 8 replies, land it without BAGEL_EXP_WARP.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
mkdir -p /tmp/br
(cd /tmp/br && xz -dc $OLDPWD/.devbin/warp.tar.xz | tar x && chmod +x bagel cuda.test engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
(cd cuda && timeout 60 /tmp/br/cuda.test -test.run 'TestWarpExpertsMatchPlain' -test.v > $OUT/tests.txt 2>&1)
say "cuda tests (rc $?): $(grep -c '^--- PASS' $OUT/tests.txt) passed, $(grep -c '^--- FAIL' $OUT/tests.txt) failed"
(cd engine && timeout 60 /tmp/br/engine.test -test.run 'TestGPUBatchOfEightEqualsSolo' -test.v >> $OUT/tests.txt 2>&1)
say "engine tests (rc $?): $(grep -c -- '--- PASS' $OUT/tests.txt) passed, $(grep -c -- '--- FAIL' $OUT/tests.txt) failed"
grep -E -- '(--- FAIL|differ|batched|panic)' $OUT/tests.txt | head -10 | cut -c1-300 | tee -a $LOG
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
run main BAGEL_EXP_WARP=0
run warp
run main BAGEL_EXP_WARP=0
run warp
# Where the batch's plain up and the new down spend their instructions: ncu's
# source page (executed instructions by SASS opcode, and where warps wait)
# for one launch of each in a batched step of 8 rows.
for k in moe_up_bf16 moe_down_warp_bf16; do
	BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 100 ncu --clock-control none -k regex:"^$k\$" \
		--launch-skip-before-match 50700 --launch-count 1 --section SourceCounters --section WarpStateStats \
		-f -o /tmp/$k /tmp/br/bagel bench $C --tokens 16 --streams 8 > /dev/null 2>&1
	say "ncu source $k (rc $?)"
	ncu --import /tmp/$k.ncu-rep --page source --csv --print-source sass > $OUT/$k-src.csv 2> /dev/null
	python3 tools/ncu_source.py $OUT/$k-src.csv 24 | tee -a $LOG
	gzip -9 $OUT/$k-src.csv
done
