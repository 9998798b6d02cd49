#!/bin/sh
# call2.sh: two patches of the forty-seventh session against main, each in
# its own binary, and ncu of a batched step's kernels.
# gdn-early.patch (main's bits):
#  - gdn_rec_rows (the recurrence of a decode step, a verify, a batched step)
#    loads a block's first token's v rows with its q and k, before the
#    threadgroup's barrier, where main loads them after it: a decode step's
#    token paid two round trips to memory one after the other;
#  - GDN_REC_BATCH_MIN_GROUPS (measurement only, default 0): a register cap
#    for gdn_recurrence_batch_bf16 (its 1,024 threadgroups at 8 replies in
#    one wave).
# w8.patch (QMM_W8, other bits): the tiled GEMVs' shared loop (qmm_sums_x:
#    the dense projections, the head, the tiled experts) gives lane 4g + t
#    words 2t and 2t + 1 of a row's chunk, one 8-byte load, where main gives
#    it words t and t + 4, two 4-byte loads each half a sector; the matrix
#    unit then sums a chunk's codes in other groups of 16 (a token's output
#    still does not depend on the tokens beside it: the batch and verify
#    tests). BAGEL_KERNEL_TUNING=QMM_W8=0 gives main's layout in the same
#    binary.
# The tests run with both patches (cuda.test, engine.test); so does the PTX.
# Build (here):
#   L="CGO_ENABLED=0 GOOS=linux GOARCH=amd64" && mkdir -p /tmp/gb &&
#   env $L go build -trimpath -ldflags="-s -w" -o /tmp/gb/bagel-main . &&
#   git apply docs/experiments/gdn-early.patch && env $L go build -trimpath -ldflags="-s -w" -o /tmp/gb/bagel-gdn . &&
#   git apply docs/experiments/w8.patch && env $L go build -trimpath -ldflags="-s -w" -o /tmp/gb/ptx ./tools/ptx &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/gb/cuda.test ./cuda &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/gb/engine.test ./engine &&
#   git checkout kernels && git apply docs/experiments/w8.patch && env $L go build -trimpath -ldflags="-s -w" -o /tmp/gb/bagel-w8 . &&
#   git checkout kernels && (cd /tmp/gb && tar c bagel-main bagel-gdn bagel-w8 ptx cuda.test engine.test | xz -9 > $OLDPWD/.devbin/call2.tar.xz)
# About 420 s on the device (carry .devbin/call2.tar.xz): OUT=$OUT sh docs/experiments/call2.sh
# The log comes back line by line.
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
mkdir -p /tmp/bg
(cd /tmp/bg && xz -dc $OLDPWD/.devbin/call2.tar.xz | tar x && chmod +x bagel-main bagel-gdn bagel-w8 ptx cuda.test engine.test) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
timeout 120 /tmp/bg/ptx -out /tmp/ptx > /dev/null 2>&1
say "ptx, both patches (rc $?): $(cut -c1-12 /tmp/ptx/kernels.sha256)"
(cd /tmp && tar c ptx | xz -6 > $OUT/ptx.tar.xz)
cp /tmp/bg/cuda.test /tmp/bg/engine.test .devbin/
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/cuda.test -test.v -test.count=1 -test.run 'TestKernels$' > /tmp/tests.txt 2>&1)
say "cuda (rc $?): $(grep -c -- '^--- PASS' /tmp/tests.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests.txt) failed"
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 150 ../.devbin/engine.test -test.v -test.count=1 -test.run 'GPU.*Batch|VerifyLogits' > /tmp/tests-engine.txt 2>&1)
say "engine (rc $?): $(grep -c -- '^--- PASS' /tmp/tests-engine.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests-engine.txt) failed"
cat /tmp/tests.txt /tmp/tests-engine.txt | grep -E -- '^--- FAIL|FAIL:|panic|differs' | head -12 | cut -c1-300 | tee -a $LOG
cat /tmp/tests.txt /tmp/tests-engine.txt | gzip -9 > $OUT/tests.txt.gz
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
/tmp/bg/bagel-main synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
for b in bagel-main bagel-gdn; do
	timeout 60 /tmp/bg/$b generate -m $M --backend cuda --temp 0 --max-tokens 96 --raw -p "The quick brown fox" > /tmp/gen-$b.txt 2> /dev/null
done
say "greedy replies, gdn: $(cmp -s /tmp/gen-bagel-gdn.txt /tmp/gen-bagel-main.txt && echo same || echo DIFFERENT) ($(wc -c < /tmp/gen-bagel-main.txt) bytes)"
C="-m $M --backend cuda --runs 1 --switches=false --lookup=false --projections 0 --stall-prompt 0 --long= --prefill= --drafts="
bench() { # label, env...; $B the binary
	label=$1; shift
	env "$@" BAGEL_TILED_GEMV=1 timeout 40 /tmp/bg/$B bench $C --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "[$label] (rc $?): $(grep -E '^ +(1|4|8) ' /tmp/b.txt | awk '{printf "%s: %s all decoding, %s ms a step; ", $1, $9, $7}')"
}
for round in 1 2; do
	B=bagel-main bench main X=1
	B=bagel-gdn bench gdn X=1
	B=bagel-w8 bench w8 X=1
	B=bagel-w8 bench "w8, QMM_W8=0" BAGEL_KERNEL_TUNING=QMM_W8=0
done
B=bagel-gdn bench "gdn, GDN_REC_BATCH_MIN_GROUPS=8" BAGEL_KERNEL_TUNING=GDN_REC_BATCH_MIN_GROUPS=8
for b in bagel-main bagel-gdn; do # the default load's lone reply (plain GEMVs, gdn_recurrence_bf16)
	timeout 40 /tmp/bg/$b bench -m $M --backend cuda --runs 3 --switches=false --lookup=false --projections 0 \
		--stall-prompt 0 --long= --prefill= --drafts= --tokens 200 > /tmp/lone.txt 2>&1
	say "lone [$b] (rc $?): $(grep -iE 'decode' /tmp/lone.txt | head -3 | tr -s ' ' | tr '\n' ';')"
	cat /tmp/lone.txt >> $OUT/lone.txt
done
BASE=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,sm__warps_active.avg.pct_of_peak_sustained_active,launch__waves_per_multiprocessor,smsp__issue_active.avg.pct_of_peak_sustained_active
L1=l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__throughput.avg.pct_of_peak_sustained_active,lts__t_sectors_srcunit_tex_op_read.sum
ncu_step() { # binary, kernel regex, count
	for m in "$BASE,$L1" "$BASE"; do
		BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 100 ncu --csv --clock-control none -k regex:"$2" \
			--launch-skip-before-match 50700 --launch-count $3 --metrics "$m" /tmp/bg/$1 bench $C --tokens 16 --streams 8 > /tmp/ncu-$1.csv 2> /dev/null
		rc=$?
		[ $rc = 0 ] && break
	done
	say "ncu [$1] (rc $rc)"
	python3 tools/ncu_metrics.py /tmp/ncu-$1.csv | tee -a $LOG
	gzip -9c /tmp/ncu-$1.csv > $OUT/ncu-$1.csv.gz
}
ncu_step bagel-main 'gdn_recurrence_batch|conv_batch|qmatmul_mma|add_rms_norm|attention_batch|moe_up_bf16|moe_down_warp|router' 80
ncu_step bagel-w8 'conv_batch|qmatmul_mma' 30
ncu_step bagel-gdn 'gdn_recurrence_batch' 10
