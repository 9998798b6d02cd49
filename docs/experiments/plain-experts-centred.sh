#!/bin/sh
# plain-experts-centred.sh: a model loaded for several replies (the tiled
# GEMVs) with its experts on the plain kernels (moe_up_bf16, moe_down_bf16;
# BAGEL_EXP_PLAIN_EXPERTS=both, plain-experts-centred.patch) against the
# tiled experts (main), on the centred checkpoint, whose replies route apart:
# the forty-first session measured the plain experts faster at 1, 4 and 8
# replies (6.14 against 6.62 GPU ms a step at 8); here also drafts in the
# batch, a lone reply's verifies, short prompts together, two rounds, and
# the engine's batch tests with the plain experts.
# .devbin/bins.tar.xz: bagel and engine.test with the patch.
# On the device (carry .devbin): OUT=$OUT sh docs/experiments/plain-experts-centred.sh
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
.devbin/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
C="-m $M --backend cuda --runs 1 --long= --switches=false --lookup=false --projections 0 --stall-prompt 0"
BAGEL_TILED_GEMV=0 timeout 100 .devbin/bagel bench $C --prefill= --drafts= --tokens 200 > /tmp/b.txt 2>&1
say "plain load, lone (rc $?): $(grep -E '^decode greedy ' /tmp/b.txt | head -1 | cut -c1-120)"
for round in 1 2; do
	for pe in none both; do
		BAGEL_EXP_PLAIN_EXPERTS=$pe BAGEL_TILED_GEMV=1 timeout 150 .devbin/bagel bench $C --prefill= --drafts= --tokens 128 --streams 1,4,8 --stream-drafts 4 > /tmp/b.txt 2>&1
		say "[$pe/$round] (rc $?): all decoding at 1/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ && NF > 8 {printf "%s (%s ms) ", $(NF-1), $7}'); drafts of 4: $(grep -A5 'tokens/step' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s/step) ", $2, $NF}')"
		cat /tmp/b.txt >> $LOG
	done
done
for pe in none both; do
	BAGEL_EXP_PLAIN_EXPERTS=$pe BAGEL_TILED_GEMV=1 timeout 100 .devbin/bagel bench $C --tokens 128 --prefill= --drafts 4 > /tmp/b.txt 2>&1
	say "[$pe] lone verifies (rc $?): $(grep -E 'a verify =' /tmp/b.txt | cut -c1-150)"
	grep -E '^decode greedy' /tmp/b.txt | cut -c1-130 | tee -a $LOG
	BAGEL_EXP_PLAIN_EXPERTS=$pe BAGEL_TILED_GEMV=1 timeout 100 .devbin/bagel bench $C --prefill= --drafts= --tokens 32 --streams 4,8 --stream-prompt 8 > /tmp/b.txt 2>&1
	say "[$pe] 8-token prompts (rc $?):"
	grep -A4 'streams  aggregate' /tmp/b.txt | tee -a $LOG
done
(cd engine && BAGEL_EXP_PLAIN_EXPERTS=both BAGEL_REQUIRE_GPU=1 timeout 100 ../.devbin/engine.test -test.count=1 -test.v \
	-test.run 'TestGPUBatch|TestGPUShortChunks|TestGPUPromptsTogether|TestGPUSpeculative|TestGPUMTPVerify|TestGPUPooled') > /tmp/t.txt 2>&1
say "engine GPU tests, plain experts (rc $?): $(grep -E '^(--- |ok|FAIL)' /tmp/t.txt | tr '\n' ' ')"
grep -E 'FAIL|differ|_test.go' /tmp/t.txt | head -20 | tee -a $LOG
