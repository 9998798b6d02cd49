#!/bin/sh
# pipe.sh: pipe.patch (forty-sixth session) against main. The patch
#  - sums every 4-bit GEMV's pieces through one helper (qmv4_piece_sums,
#    qmv4_piece_acc): qmv_rows_w and moe_up_bf16's widened copy of its loop;
#  - sums moe_up_bf16's 8 rows across the lanes in a tree (MOE_UP_TREE, the
#    forty-fifth session's tree.patch: 9 shuffles where 40);
#  - walks moe_down_warp_bf16's slots of 4-bit rows of up to 512 inputs with
#    the next slot's codes, scales and x in registers (MOE_DOWN_PIPE), and its
#    rows' sums in a tree;
#  - BAGEL_EXP_DOWN_WARP_MIN (pipe-knob.patch, for the measurement only): the
#    fewest tokens moe_down_warp_bf16 takes (main: 8).
# Every change keeps main's bits (GPU tests: TestWarpExpertsMatchPlain with
# ragged cases for the walk, the batch tests; greedy replies).
# Build (here; the forty-sixth session left them in .devbin/pipe.tar.xz):
#   git apply docs/experiments/pipe.patch docs/experiments/pipe-knob.patch && mkdir -p /tmp/sb &&
#   L="CGO_ENABLED=0 GOOS=linux GOARCH=amd64" &&
#   env $L go build -trimpath -ldflags="-s -w" -o /tmp/sb/bagel . &&
#   env $L go build -trimpath -ldflags="-s -w" -o /tmp/sb/ptx ./tools/ptx &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/sb/cuda.test ./cuda &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/sb/engine.test ./engine &&
#   git checkout kernels cuda ops && env $L go build -trimpath -ldflags="-s -w" -o /tmp/sb/bagel-main . &&
#   (cd /tmp/sb && tar c bagel bagel-main ptx cuda.test engine.test | xz -9 > $OLDPWD/.devbin/pipe.tar.xz)
# About 330 s on the device (carry .devbin/pipe.tar.xz): OUT=$OUT sh docs/experiments/pipe.sh
# The log comes back line by line, so a call cut short still reports what
# ran (the PTX, the tests and the first benches come first).
# To land: git apply docs/experiments/pipe.patch (pipe-knob.patch only if
# the down's kernel from 4 tokens wins: then MoEDownWarpMinTokens = 4 as a
# constant), the PTX from ptx.tar.xz into cuda/ptx (the patch's defaults
# are MOE_UP_TREE 1 and MOE_DOWN_PIPE 1; a knob that loses is deleted, and
# the PTX then needs another run of tools/ptx).
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
mkdir -p /tmp/br
(cd /tmp/br && xz -dc $OLDPWD/.devbin/pipe.tar.xz | tar x && chmod +x bagel bagel-main ptx cuda.test engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 120 /tmp/br/ptx -out /tmp/ptx > /dev/null 2>&1
say "ptx (rc $?): $(cut -c1-12 /tmp/ptx/kernels.sha256)"
(cd /tmp && tar c ptx | xz -6 > $OUT/ptx.tar.xz)
cp /tmp/br/cuda.test /tmp/br/engine.test .devbin/
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/cuda.test -test.v -test.count=1 -test.run 'TestKernels$|TestWarpExpertsMatchPlain' > /tmp/tests.txt 2>&1)
say "cuda (rc $?): $(grep -c -- '^--- PASS' /tmp/tests.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests.txt) failed"
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/engine.test -test.v -test.count=1 -test.run 'GPU.*Batch' > /tmp/tests-engine.txt 2>&1)
say "engine (rc $?): $(grep -c -- '^--- PASS' /tmp/tests-engine.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests-engine.txt) failed"
cat /tmp/tests.txt /tmp/tests-engine.txt | grep -E -- '^--- FAIL|FAIL:|panic|differs' | head -12 | cut -c1-300 | tee -a $LOG
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
bench() { # label, env..., binary
	label=$1; shift
	env "$@" BAGEL_TILED_GEMV=1 timeout 40 /tmp/br/$B bench $C --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "[$label] (rc $?): $(grep -E '^ +(1|4|8) ' /tmp/b.txt | awk '{printf "%s: %s all decoding, %s ms a step; ", $1, $9, $7}')"
}
for round in 1 2; do
	B=bagel-main bench main X=1
	B=bagel bench pipe X=1
	B=bagel bench "pipe, down warp from 4" BAGEL_EXP_DOWN_WARP_MIN=4
done
B=bagel bench "pipe, MOE_UP_TREE=0" BAGEL_KERNEL_TUNING=MOE_UP_TREE=0
B=bagel bench "pipe, MOE_DOWN_PIPE=0" BAGEL_KERNEL_TUNING=MOE_DOWN_PIPE=0
for b in bagel-main bagel; do # the default load's lone reply
	timeout 40 /tmp/br/$b bench -m $M --backend cuda --runs 3 --switches=false --lookup=false --projections 0 \
		--stall-prompt 0 --long= --prefill= --drafts= --tokens 200 > /tmp/lone.txt 2>&1
	say "lone [$b] (rc $?): $(grep -iE 'decode' /tmp/lone.txt | head -3 | tr -s ' ' | tr '\n' ';')"
	cat /tmp/lone.txt >> $OUT/lone.txt
done
(cd engine && BAGEL_EXP_DOWN_WARP_MIN=2 BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/engine.test -test.v -test.count=1 -test.run 'GPUBatch' > /tmp/tests-engine2.txt 2>&1)
say "engine, down warp from 2 tokens (rc $?): $(grep -c -- '^--- PASS' /tmp/tests-engine2.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests-engine2.txt) failed"
grep -E -- '^--- FAIL|FAIL:|panic|differs' /tmp/tests-engine2.txt | head -6 | cut -c1-300 | tee -a $LOG
gzip -9c /tmp/tests-engine2.txt > $OUT/tests-engine2.txt.gz
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
for b in bagel; do # main's: up 40.2, down 32.0 µs a launch (forty-fifth session)
	BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 100 ncu --csv --clock-control none -k regex:'moe_up_bf16|moe_down_warp_bf16' \
		--launch-skip-before-match 50700 --launch-count 8 --metrics "$METRICS" /tmp/br/$b bench $C --tokens 16 --streams 8 > /tmp/ncu.csv 2> /dev/null
	say "ncu [$b] (rc $?)"
	python3 tools/ncu_metrics.py /tmp/ncu.csv | tee -a $LOG
done
