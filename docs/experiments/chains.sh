#!/bin/sh
# chains.sh: the cost model of "two chains at once" (docs/batching.md, Next 0):
# a batch's replies in two groups, each stepped by its own engine (its own
# load, device goroutine and CUDA stream, non-blocking) at once
# (chains.patch: BAGEL_EXP_CHAINS=N in bench's --streams), against one
# engine stepping them all; and first `make gpu-test`'s two commands on
# main's binaries (b8afbf8).
# .devbin: chains.tar.xz (bagel, b8afbf8 with chains.patch), tests.tar.xz
# (cuda.test, engine.test of b8afbf8); CGO_ENABLED=0 GOOS=linux GOARCH=amd64,
# -trimpath -ldflags="-s -w", xz -9.
# On the device (carry .devbin): OUT=$OUT sh docs/experiments/chains.sh
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc chains.tar.xz | tar x && xz -dc tests.tar.xz | tar x && chmod +x bagel cuda.test engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
if [ -z "${BENCH:-}" ]; then
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/cuda.test -test.v -test.count=1 -test.timeout=20m) > $OUT/gpu-test.txt 2>&1
say "cuda.test (rc $?): $(grep -cE '^--- PASS' $OUT/gpu-test.txt) passed, $(grep -cE '^--- FAIL' $OUT/gpu-test.txt) failed"
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/engine.test -test.v -test.count=1 -test.run GPU -test.timeout=10m) >> $OUT/gpu-test.txt 2>&1
say "engine.test -run GPU (rc $?): $(grep -E '^(--- FAIL|ok|FAIL)' $OUT/gpu-test.txt | tr '\n' ' ')"
grep -E '^--- (PASS|FAIL)' $OUT/gpu-test.txt | cut -c1-80 | tr '\n' ' ' | tee -a $LOG; echo | tee -a $LOG
gzip -9 $OUT/gpu-test.txt
fi
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
.devbin/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
C="-m $M --backend cuda --runs 1 --switches=false --lookup=false --projections 0 --stall-prompt 0 --long= --prefill= --drafts= --tokens 128"
run() { # name, "VAR=value ...", streams
	env $2 timeout 200 .devbin/bagel bench $C --streams $3 > /tmp/b.txt 2>&1
	say "[$1] (rc $?):"
	grep -E 'one reply alone|^ +[0-9]+ +[0-9]' /tmp/b.txt | tee -a $LOG
	grep -iE 'error|failed|chains' /tmp/b.txt | head -3 | tee -a $LOG
}
run "one engine, load for several" "BAGEL_TILED_GEMV=1" 1,2,4,8
run "two engines at once, load for several" "BAGEL_TILED_GEMV=1 BAGEL_EXP_CHAINS=2" 2,4,8
run "two engines at once, plain load" "BAGEL_TILED_GEMV=0 BAGEL_EXP_CHAINS=2" 2,4
run "one engine, plain load" "BAGEL_TILED_GEMV=0" 1,2
