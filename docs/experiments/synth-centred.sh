#!/bin/sh
# synth-centred.sh: the synthetic 35B-A3B with its weights leaning by -scale/2 a
# group (old, BAGEL_SYNTH_OLD_BIAS=1 from synth-centred.patch) and centred on
# zero (new, main since d80a240), each checkpoint in turn on one machine:
# a lone reply's decode (plain GEMVs), a 2,048-token prefill, oracle drafts
# of 4, then a load for several replies at 1, 4 and 8 on three sets of
# kernels: the tiled GEMVs (main's load for several replies), the tiled
# GEMVs with the experts on the plain kernels (BAGEL_EXP_PLAIN_EXPERTS=both,
# the thirty-third session's plain-experts.patch, in synth-centred.patch),
# and the plain GEMVs throughout (the old checkpoint: the tiled GEMVs only);
# on the centred checkpoint, every kernel of
# a batched step of 8 rows under ncu (tools/gpubench.sh's ncu-batch), 8-token
# prompts' chunks together as a step's rows or apart, and main's batch tests
# (.devbin also holds engine.test, built from main without the patch).
# .devbin/bins.tar.xz holds bagel built with the patch applied:
#   git apply docs/experiments/synth-centred.patch
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && git checkout synth/write.go ops/experts.go && eval $L go test -c $F -o .devbin/engine.test ./engine
#   (cd .devbin && tar cf bins.tar bagel engine.test && xz -T2 -6 bins.tar && rm -f bagel engine.test)
# then on the device (carry .devbin): sh docs/experiments/synth-centred.sh
# (QUICK=1: only the three loads at 1, 4 and 8 and main's batch tests on the
# centred checkpoint; REST=1 on the same warm machine: the rest, the
# checkpoint that QUICK=1 wrote kept).
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
for kind in new old; do
	M=/tmp/m-$kind
	old=0; [ $kind = old ] && old=1
	[ -f $M/config.json ] || BAGEL_SYNTH_OLD_BIAS=$old .devbin/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
	say "$kind: model ready"
	C="-m $M --backend cuda --runs 1 --long= --switches=false --lookup=false --projections 0 --stall-prompt 0"
	if [ -z "${QUICK:-}" ]; then
		timeout 150 .devbin/bagel bench $C --tokens 200 --prefill 2048 --drafts 4 > /tmp/b.txt 2>&1
		say "$kind lone (rc $?):"
		grep -E '^(decode greedy|prefill 2048)|a verify =' /tmp/b.txt | grep -v 'pipeline=off' | cut -c1-160 | tee -a $LOG
		cp /tmp/b.txt $OUT/lone-$kind.txt
	fi
	loads='BAGEL_TILED_GEMV=1 BAGEL_TILED_GEMV=1;BAGEL_EXP_PLAIN_EXPERTS=both BAGEL_TILED_GEMV=0'
	[ $kind = old ] && loads=BAGEL_TILED_GEMV=1 # the old checkpoint: main's load for several replies only
	[ $kind = new ] && [ -n "${REST:-}" ] && loads= # REST=1: QUICK=1's part done by the call before
	for m in $loads; do
		env $(echo "$m" | tr ';' ' ') timeout 120 .devbin/bagel bench $C --prefill= --drafts= --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
		say "$kind [$m] (rc $?): all decoding at 1/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
		cp /tmp/b.txt "$OUT/streams-$kind-$(echo "$m" | tr ';=' '__').txt"
	done
	if [ $kind = new ] && [ -z "${QUICK:-}" ]; then # 8-token prompts: their chunks as a batched step's rows (main since 4541fd3) or each alone
		for m in BAGEL_TILED_GEMV=1 "BAGEL_TILED_GEMV=1;BAGEL_NO_PROMPTS_TOGETHER=1"; do
			env $(echo "$m" | tr ';' ' ') timeout 60 .devbin/bagel bench $C --prefill= --drafts= --tokens 32 --streams 4,8 --stream-prompt 8 > /tmp/b.txt 2>&1
			say "short prompts [$m] (rc $?):"
			grep -A4 'streams  aggregate' /tmp/b.txt | tee -a $LOG
		done
	fi
	if [ $kind = new ] && [ -z "${REST:-}" ]; then # main's batch tests on the GPU (engine.test built from main, without the patch)
		(cd engine && BAGEL_REQUIRE_GPU=1 timeout 170 ../.devbin/engine.test -test.count=1 -test.v \
			-test.run 'TestGPUShortChunks|TestGPUBatchEqualsSolo|TestGPUBatchPromptsTogether|TestGPUPromptsTogether') > /tmp/t.txt 2>&1
		say "engine GPU tests (rc $?): $(grep -E '^(--- |ok|FAIL)' /tmp/t.txt | tr '\n' ' ')"
		grep -E 'kernels with|FAIL|alone' /tmp/t.txt | head -20 | tee -a $LOG
	fi
	[ -n "${QUICK:-}" ] && exit 0 # QUICK=1: the three loads and the tests on the centred checkpoint only
	[ $kind = old ] && rm -rf $M # the centred one stays for ncu, last
done
C_NEW="-m /tmp/m-new --backend cuda --runs 1 --long= --switches=false --lookup=false --projections 0 --stall-prompt 0"
# every kernel of a batched step of 8 rows, tiled GEMVs, graphs off (tools/gpubench.sh's ncu-batch)
BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 120 ncu --csv --clock-control none --metrics gpu__time_duration.sum \
	--launch-skip 43000 --launch-count 6000 .devbin/bagel bench $C_NEW --prefill= --drafts= --tokens 16 --streams 8 > $OUT/ncu-batch.csv 2> /dev/null
say "ncu-batch (rc $?)"
python3 tools/ncu_forwards.py $OUT/ncu-batch.csv 30 > $OUT/ncu-batch.txt
awk '/^forward/ {n++; batched[n] = index($0, "batched step of 8 rows") > 0} {buf[n] = buf[n] $0 "\n"} END {for (i = n - 1; i > 0; i--) if (batched[i]) {printf "%s", buf[i]; exit}}' $OUT/ncu-batch.txt | tee -a $LOG
gzip -9 $OUT/ncu-batch.csv
