#!/bin/sh
# tree.sh: tree.patch's moe_up_bf16 against main's. The patch sums the 8
# rows' partial sums across a SIMD-group's lanes with 9 shuffles where the
# butterfly of each row takes 40 (a lane hands its partner the half of its
# rows it gives up), each row's adds the butterfly's pairs in its order, so
# the bits are main's (checked in Python against f32 sums; on the GPU here
# by greedy replies and the batch tests). ncu put the up at 1,381
# instructions a warp an item, the reduction 80 of them (forty-fifth
# session).
# Build (here): bagel and ptx from main with the patch applied, bagel-main
# from main, cuda.test and engine.test with the patch:
#   git apply docs/experiments/tree.patch && mkdir -p /tmp/sb && L="CGO_ENABLED=0 GOOS=linux GOARCH=amd64" &&
#   env $L go build -trimpath -ldflags="-s -w" -o /tmp/sb/bagel . &&
#   env $L go build -trimpath -ldflags="-s -w" -o /tmp/sb/ptx ./tools/ptx &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/sb/cuda.test ./cuda &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/sb/engine.test ./engine &&
#   git checkout kernels && env $L go build -trimpath -ldflags="-s -w" -o /tmp/sb/bagel-main . &&
#   (cd /tmp/sb && tar c bagel bagel-main ptx cuda.test engine.test | xz -9 > $OLDPWD/.devbin/tree.tar.xz)
# About 260 s on the device (carry .devbin/tree.tar.xz):
#   OUT=$OUT sh docs/experiments/tree.sh
# If it wins, land the patch with the PTX it brings back (ptx.tar.xz).
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
mkdir -p /tmp/br
(cd /tmp/br && xz -dc $OLDPWD/.devbin/tree.tar.xz | tar x && chmod +x bagel bagel-main ptx cuda.test engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 120 /tmp/br/ptx -out /tmp/ptx > /dev/null 2>&1
say "ptx (rc $?): $(cut -c1-12 /tmp/ptx/kernels.sha256)"
(cd /tmp && tar c ptx | xz -6 > $OUT/ptx.tar.xz)
cp /tmp/br/cuda.test /tmp/br/engine.test .devbin/
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/cuda.test -test.v -test.count=1 -test.run 'TestKernels$|TestWarpExpertsMatchPlain' > /tmp/tests.txt 2>&1)
say "cuda (rc $?): $(grep -c -- '^--- PASS' /tmp/tests.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests.txt) failed"
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/engine.test -test.v -test.count=1 -test.run 'GPU.*Batch' > /tmp/tests-engine.txt 2>&1)
say "engine (rc $?): $(grep -c -- '^--- PASS' /tmp/tests-engine.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests-engine.txt) failed"
cat /tmp/tests.txt /tmp/tests-engine.txt | grep -E -- '^--- FAIL|FAIL:|panic' | head -12 | cut -c1-300 | tee -a $LOG
cat /tmp/tests.txt /tmp/tests-engine.txt | gzip -9 > $OUT/tests.txt.gz
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
/tmp/br/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
for b in bagel-main bagel; do
	timeout 60 /tmp/br/$b generate -m $M --backend cuda --temp 0 --max-tokens 96 --raw -p "The quick brown fox" > /tmp/gen-$b.txt 2> /dev/null
done
say "greedy replies: $(cmp -s /tmp/gen-bagel.txt /tmp/gen-bagel-main.txt && echo same || echo DIFFERENT) ($(wc -c < /tmp/gen-bagel-main.txt) bytes)"
C="-m $M --backend cuda --runs 1 --switches=false --lookup=false --projections 0 --stall-prompt 0 --long= --prefill= --drafts="
for round in 1 2; do
	for b in bagel-main bagel; do
		BAGEL_TILED_GEMV=1 timeout 40 /tmp/br/$b bench $C --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
		say "[$b] (rc $?): $(grep -E '^ +(1|4|8) ' /tmp/b.txt | awk '{printf "%s: %s all decoding, %s ms a step; ", $1, $9, $7}')"
	done
done
# The up's register cap for the patch's kernel (MOE_UP_MIN_GROUPS, 5 by
# default: 96 registers), one round each.
for cap in 4 6; do
	BAGEL_KERNEL_TUNING=MOE_UP_MIN_GROUPS=$cap BAGEL_TILED_GEMV=1 timeout 40 /tmp/br/bagel bench $C --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "[bagel, MOE_UP_MIN_GROUPS=$cap] (rc $?): $(grep -E '^ +(1|4|8) ' /tmp/b.txt | awk '{printf "%s: %s all decoding, %s ms a step; ", $1, $9, $7}')"
done
for b in bagel-main bagel; do # the default load's lone reply
	timeout 40 /tmp/br/$b bench -m $M --backend cuda --runs 3 --switches=false --lookup=false --projections 0 \
		--stall-prompt 0 --long= --prefill= --drafts= --tokens 200 > $OUT/lone-$b.txt 2>&1
	say "lone [$b] (rc $?)"
done
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
for b in bagel-main bagel; do
	BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 100 ncu --csv --clock-control none -k regex:'moe_up_bf16' \
		--launch-skip-before-match 50700 --launch-count 4 --metrics "$METRICS" /tmp/br/$b bench $C --tokens 16 --streams 8 > /tmp/ncu.csv 2> /dev/null
	say "ncu [$b] (rc $?)"
	python3 tools/ncu_metrics.py /tmp/ncu.csv | tee -a $LOG
done
