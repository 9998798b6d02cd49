#!/bin/sh
# verify-split.sh: a lone reply's speculative verify past 128 keys with its
# decode steps' bits (verify-split.patch): each query's split ranges its own,
# in whole blocks of FA_BK keys (fa_split_range in attention_split_mma_f32 and
# its batch twin; the CPU reference alike), a verify's queries of fewer than
# 128 keys on attention_bf16 as their steps, and at most 8 queries (the
# 35B-A3B's heads) a launch of the tiled split kernel (ops.Attend). Found in
# the forty-second session: oracle drafts accepted 77/80 on the centred
# checkpoint, and `bench --streams 1 --stream-drafts 4` stopping on "a drafted
# reply differs from its plain reply".
# .devbin/bins.tar.xz (12.8 MB, xz -9e): bagel, cuda.test, engine.test and ptx
# with the patch applied to 3e82293, and bagel-main (3e82293) for the A/B:
#   git worktree add /tmp/wt HEAD && cd /tmp/wt && go build -o B/bagel-main . &&
#   git apply docs/experiments/verify-split.patch && go build -o B/bagel . &&
#   go test -c -o B/cuda.test ./cuda && go test -c -o B/engine.test ./engine &&
#   go build -o B/ptx ./tools/ptx   (CGO_ENABLED=0 GOOS=linux GOARCH=amd64,
#   -trimpath -ldflags="-s -w"), then tar and xz them into .devbin.
# On main's CPU the kernel-level check fails (gputest's
# TestSplitAttentionInvariance: 2 of its shapes), so does ops'
# TestAttendVerifyIsItsSteps (3 of its 4 cases: past 128 keys, across them,
# 16 queries), and the engine's new test passes (its flips too rare on the
# CPU's test models); with the patch all pass, as does go test ./engine
# (557 s, 2 cores). The binaries in .devbin lack ops' new test only.
# On the device (carry .devbin): OUT=$OUT sh docs/experiments/verify-split.sh
# (FAST=1: the PTX and the tests alone, about 120 s).
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel bagel-main cuda.test engine.test ptx) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
mkdir -p $OUT/ptx && .devbin/ptx -out $OUT/ptx >> $LOG 2>&1
say "ptx (rc $?): $(cut -c1-12 $OUT/ptx/kernels.sha256)"
gzip -9 $OUT/ptx/kernels.ptx
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/cuda.test -test.count=1 -test.v \
	-test.run 'TestKernels$|TestSplitAttentionTokenInvariance|TestTiledExpertsTokenInvariance|TestTiledGEMVTokenInvariance') > /tmp/c.txt 2>&1
say "cuda tests (rc $?): $(grep -E '^(--- |ok|FAIL)' /tmp/c.txt | tr '\n' ' ')"
grep -E 'attention_split|attention_merge|FAIL|differ' /tmp/c.txt | head -40 | tee -a $LOG
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 240 ../.devbin/engine.test -test.count=1 -test.v \
	-test.run 'TestVerifyLogits|TestGPUSpeculative|TestGPUMTPVerify|TestGPUBatch|TestGPUShortPromptPastSplitKeys|TestGPUPathsMatchTheReference|TestGPUMatchesCPU|TestGPUShortChunks|TestGPUPromptsTogether') > $OUT/engine.txt 2>&1
say "engine tests (rc $?): $(grep -E '^(--- |ok|FAIL)' $OUT/engine.txt | tr '\n' ' ')"
grep -E '^\s+--- FAIL|differ' $OUT/engine.txt | head -20 | tee -a $LOG
gzip -9 $OUT/engine.txt
[ -n "${FAST:-}" ] && exit 0
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
.devbin/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
C="-m $M --backend cuda --runs 1 --switches=false --lookup=false --projections 0 --stall-prompt 0"
# Decode and oracle drafts of 4 after 1K, 8K and 32K keys, main and the
# patch in turn (the tiled split's ranges in whole blocks: fewer
# threadgroups at work at short contexts).
for round in 1 2; do
	for b in bagel-main bagel; do
		timeout 200 .devbin/$b bench $C --tokens 128 --prefill= --drafts 4 --long 1024,8192,32768 > /tmp/b.txt 2>&1
		say "[$b/$round] (rc $?):"
		grep -E '^decode|^long|after' /tmp/b.txt | cut -c1-150 | tee -a $LOG
	done
done
# A load for several replies: drafts in the batch at 1, 4 and 8 replies
# (main stops at 1 reply on the fault), all decoding.
for b in bagel-main bagel; do
	BAGEL_TILED_GEMV=1 timeout 200 .devbin/$b bench $C --long= --prefill= --drafts= --tokens 128 --streams 1,4,8 --stream-drafts 4 > /tmp/b.txt 2>&1
	say "[$b] streams with drafts (rc $?):"
	grep -A14 'replies decoded together' /tmp/b.txt | tee -a $LOG
done
# main's batched step of 8 rows under ncu, its experts on their plain
# kernels (the batch's default since 8d0ba2b): where a row's 0.55–0.62 ms goes
# (docs/batching.md, Next 1). Graphs off, every kernel's GPU time.
BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 150 ncu --csv --clock-control none --metrics gpu__time_duration.sum \
	--launch-skip 50000 --launch-count 3000 .devbin/bagel-main bench $C --long= --prefill= --drafts= --tokens 16 --streams 8 > $OUT/ncu-batch.csv 2> /dev/null
say "ncu-batch, plain experts (rc $?)"
python3 tools/ncu_forwards.py $OUT/ncu-batch.csv 30 > $OUT/ncu-batch.txt
grep '^forward' $OUT/ncu-batch.txt | cut -c1-70 | tee -a $LOG
awk '/^forward/ {n++; batched[n] = index($0, "batched step of 8 rows") > 0} {buf[n] = buf[n] $0 "\n"} END {for (i = n - 1; i > 0; i--) if (batched[i]) {printf "%s", buf[i]; exit}}' $OUT/ncu-batch.txt | tee -a $LOG
gzip -9 $OUT/ncu-batch.csv
