#!/bin/sh
# land-pair.sh: the landing call of the forty-fifth session's experts kernels
# (moe_up_bf16 summing the gate's and up's rows side by side with the scales
# loaded beside the codes; moe_down_warp_bf16 at 8 tokens or more): the PTX
# of the branch's kernels (cuda/ptx), `make gpu-test`'s two commands, then
# all decoding at 1 / 4 / 8 replies (BAGEL_TILED_GEMV=1) for main's binary
# and the branch's, in turn, two rounds.
# Build (here): bagel, ptx, cuda.test and engine.test from the branch,
# bagel-main from main, as `make gpu-build` does, into one tar:
#   (cd /tmp/sb && tar c bagel bagel-main ptx cuda.test engine.test | xz -9 > $OLDPWD/.devbin/land.tar.xz)
# About 170 s on the device (carry .devbin/land.tar.xz):
#   OUT=$OUT sh docs/experiments/land-pair.sh
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
mkdir -p /tmp/br
(cd /tmp/br && xz -dc $OLDPWD/.devbin/land.tar.xz | tar x && chmod +x bagel bagel-main ptx cuda.test engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 120 /tmp/br/ptx -out /tmp/ptx > /dev/null 2>&1
say "ptx (rc $?): $(cut -c1-12 /tmp/ptx/kernels.sha256)"
(cd /tmp && tar c ptx | xz -6 > $OUT/ptx.tar.xz)
cp /tmp/br/cuda.test /tmp/br/engine.test .devbin/
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/cuda.test -test.v -test.count=1 -test.timeout=20m > /tmp/tests.txt 2>&1)
say "gpu-test cuda (rc $?): $(grep -c -- '^--- PASS' /tmp/tests.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests.txt) failed"
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/engine.test -test.v -test.count=1 -test.run GPU -test.timeout=10m > /tmp/tests-engine.txt 2>&1)
say "gpu-test engine (rc $?): $(grep -c -- '^--- PASS' /tmp/tests-engine.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests-engine.txt) failed"
cat /tmp/tests.txt /tmp/tests-engine.txt | grep -E -- '^(--- FAIL|--- SKIP)|panic' | head -12 | cut -c1-300 | tee -a $LOG
cat /tmp/tests.txt /tmp/tests-engine.txt | gzip -9 > $OUT/tests.txt.gz
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
/tmp/br/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
C="-m $M --backend cuda --runs 1 --switches=false --lookup=false --projections 0 --stall-prompt 0 --long= --prefill= --drafts="
for round in 1 2; do
	for b in bagel-main bagel; do
		BAGEL_TILED_GEMV=1 timeout 40 /tmp/br/$b bench $C --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
		say "[$b] (rc $?): $(grep -E '^ +(1|4|8) ' /tmp/b.txt | awk '{printf "%s: %s all decoding, %s ms a step; ", $1, $9, $7}')"
	done
done
