#!/bin/sh
# gdn.sh: gdn-early.patch (forty-seventh session) against main. The patch
#  - loads a block's first token's v rows in gdn_rec_rows (the recurrence of
#    a decode step, a verify and a batched step) with its q and k, before the
#    threadgroup's barrier, where main loaded them after it: a decode step's
#    token paid two round trips to memory one after the other;
#  - GDN_REC_BATCH_MIN_GROUPS (a knob for the measurement, default 0): caps
#    gdn_recurrence_batch_bf16's registers so that N threadgroups fit a
#    multiprocessor (its 1,024 threadgroups at 8 replies in one wave).
# The bits stay main's (the same sums in the same order; the kernel tests,
# the batch tests and the greedy replies check it).
# Build (here):
#   git apply docs/experiments/gdn-early.patch && mkdir -p /tmp/gb &&
#   L="CGO_ENABLED=0 GOOS=linux GOARCH=amd64" &&
#   env $L go build -trimpath -ldflags="-s -w" -o /tmp/gb/bagel . &&
#   env $L go build -trimpath -ldflags="-s -w" -o /tmp/gb/ptx ./tools/ptx &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/gb/cuda.test ./cuda &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/gb/engine.test ./engine &&
#   git checkout kernels && env $L go build -trimpath -ldflags="-s -w" -o /tmp/gb/bagel-main . &&
#   (cd /tmp/gb && tar c bagel bagel-main ptx cuda.test engine.test | xz -9 > $OLDPWD/.devbin/gdn.tar.xz)
# About 300 s on the device (carry .devbin/gdn.tar.xz): OUT=$OUT sh docs/experiments/gdn.sh
# The log comes back line by line.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
mkdir -p /tmp/bg
(cd /tmp/bg && xz -dc $OLDPWD/.devbin/gdn.tar.xz | tar x && chmod +x bagel bagel-main ptx cuda.test engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 120 /tmp/bg/ptx -out /tmp/ptx > /dev/null 2>&1
say "ptx (rc $?): $(cut -c1-12 /tmp/ptx/kernels.sha256)"
(cd /tmp && tar c ptx | xz -6 > $OUT/ptx.tar.xz)
cp /tmp/bg/cuda.test /tmp/bg/engine.test .devbin/
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/cuda.test -test.v -test.count=1 -test.run 'TestKernels$' > /tmp/tests.txt 2>&1)
say "cuda (rc $?): $(grep -c -- '^--- PASS' /tmp/tests.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests.txt) failed"
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/engine.test -test.v -test.count=1 -test.run 'GPU.*Batch|VerifyLogits' > /tmp/tests-engine.txt 2>&1)
say "engine (rc $?): $(grep -c -- '^--- PASS' /tmp/tests-engine.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests-engine.txt) failed"
cat /tmp/tests.txt /tmp/tests-engine.txt | grep -E -- '^--- FAIL|FAIL:|panic|differs' | head -12 | cut -c1-300 | tee -a $LOG
cat /tmp/tests.txt /tmp/tests-engine.txt | gzip -9 > $OUT/tests.txt.gz
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
/tmp/bg/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
for b in bagel-main bagel; do
	timeout 60 /tmp/bg/$b generate -m $M --backend cuda --temp 0 --max-tokens 96 --raw -p "The quick brown fox" > /tmp/gen-$b.txt 2> /dev/null
done
say "greedy replies: $(cmp -s /tmp/gen-bagel.txt /tmp/gen-bagel-main.txt && echo same || echo DIFFERENT) ($(wc -c < /tmp/gen-bagel-main.txt) bytes)"
C="-m $M --backend cuda --runs 1 --switches=false --lookup=false --projections 0 --stall-prompt 0 --long= --prefill= --drafts="
bench() { # label, env...; $B the binary
	label=$1; shift
	env "$@" BAGEL_TILED_GEMV=1 timeout 40 /tmp/bg/$B bench $C --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "[$label] (rc $?): $(grep -E '^ +(1|4|8) ' /tmp/b.txt | awk '{printf "%s: %s all decoding, %s ms a step; ", $1, $9, $7}')"
}
for round in 1 2; do
	B=bagel-main bench main X=1
	B=bagel bench gdn X=1
	B=bagel bench "gdn, GDN_REC_BATCH_MIN_GROUPS=8" BAGEL_KERNEL_TUNING=GDN_REC_BATCH_MIN_GROUPS=8
done
B=bagel bench "gdn, GDN_REC_BATCH_ROWS=16" BAGEL_KERNEL_TUNING=GDN_REC_BATCH_ROWS=16
for b in bagel-main bagel; do # the default load's lone reply (gdn_recurrence_bf16)
	timeout 40 /tmp/bg/$b bench -m $M --backend cuda --runs 3 --switches=false --lookup=false --projections 0 \
		--stall-prompt 0 --long= --prefill= --drafts= --tokens 200 > /tmp/lone.txt 2>&1
	say "lone [$b] (rc $?): $(grep -iE 'decode' /tmp/lone.txt | head -3 | tr -s ' ' | tr '\n' ';')"
	cat /tmp/lone.txt >> $OUT/lone.txt
done
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,launch__occupancy_limit_registers,launch__waves_per_multiprocessor,smsp__issue_active.avg.pct_of_peak_sustained_active
for b in bagel-main bagel; do # a batched step of 8 rows: the recurrence and the dense projections
	BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 100 ncu --csv --clock-control none \
		-k regex:'gdn_recurrence_batch_bf16|qmatmul_mma_multi_conv_batch_bf16|qmatmul_mma_bf16|qmatmul_mma_multi_bf16|add_rms_norm_bf16|attention_batch_bf16' \
		--launch-skip-before-match 50700 --launch-count 40 --metrics "$METRICS" /tmp/bg/$b bench $C --tokens 16 --streams 8 > /tmp/ncu-$b.csv 2> /dev/null
	say "ncu [$b] (rc $?)"
	python3 tools/ncu_metrics.py /tmp/ncu-$b.csv | tee -a $LOG
	gzip -9c /tmp/ncu-$b.csv > $OUT/ncu-$b.csv.gz
done
