#!/bin/sh
# pair.sh: the experts' kernels for a load for several replies, each with its
# plain kernel's bits:
#   moe_down_warp_bf16 (BAGEL_EXP_WARP=0 turns it off; 8 tokens or more): a
#     token's 8 output rows on one SIMD-group walking its slots;
#   moe_up_pair_bf16 (BAGEL_EXP_PAIR=n: launches of n tokens or more, 0
#     off, 8 unset): an item's gate and up rows summed side by side on one
#     unpacked x, its scales and biases loaded with its codes, under a
#     register cap (MOE_UP_PAIR_MIN_GROUPS, 5);
#   QMV_SB_EARLY (1 here): every plain GEMV's 4-bit path loads a piece's
#     scales and biases with its codes, not row by row after its sums.
# The binaries are built from this branch (defaults above, "A"); ptx-B from
# the same source with QMV_SB_EARLY 0 ("B"). The call: both sources' PTX
# (cuda/ptx, whichever lands), greedy replies with QMV_SB_EARLY 0 and 1 and
# the lone reply on the pair (the same tokens), all decoding at 1 / 4 / 8
# replies (BAGEL_TILED_GEMV=1) for main's kernels, main's with the scales
# early, B, A, A with the pair at every launch and A uncapped, two rounds;
# `make gpu-test`'s two commands on A; ncu of the experts' kernels in a
# batched step of 8, and the pair's executed instructions by opcode.
# Build (here, from the branch):
#   mkdir -p /tmp/sb && L="CGO_ENABLED=0 GOOS=linux GOARCH=amd64" &&
#   env $L go build -trimpath -ldflags="-s -w" -o /tmp/sb/bagel . &&
#   env $L go build -trimpath -ldflags="-s -w" -o /tmp/sb/ptx-A ./tools/ptx &&
#   (ptx-B likewise from a worktree with QMV_SB_EARLY 0) &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/sb/cuda.test ./cuda &&
#   env $L go test -c -trimpath -ldflags="-s -w" -o /tmp/sb/engine.test ./engine &&
#   (cd /tmp/sb && tar c bagel cuda.test engine.test ptx-A ptx-B | xz -9 > $OLDPWD/.devbin/pair.tar.xz)
# About 420 s on the device (carry .devbin/pair.tar.xz):
#   OUT=$OUT sh docs/experiments/pair.sh
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
mkdir -p /tmp/br
(cd /tmp/br && xz -dc $OLDPWD/.devbin/pair.tar.xz | tar x && chmod +x bagel cuda.test engine.test ptx-A ptx-B) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
for v in A B; do
	timeout 120 /tmp/br/ptx-$v -out /tmp/ptx-$v > /dev/null 2>&1
	say "ptx $v (rc $?): $(cat /tmp/ptx-$v/kernels.sha256 | cut -c1-12)"
	(cd /tmp && tar c ptx-$v | xz -6 > $OUT/ptx-$v.tar.xz)
done
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
M=/tmp/m-new
/tmp/br/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
say "model ready"
gen() { # name env...
	name=$1; shift
	env "$@" timeout 60 /tmp/br/bagel generate -m $M --backend cuda --temp 0 --max-tokens 96 --raw \
		-p "The quick brown fox" > /tmp/gen-$name.txt 2> /dev/null
	echo "== $name (rc $?)" >> $OUT/gen.txt; cat /tmp/gen-$name.txt >> $OUT/gen.txt
}
gen main BAGEL_EXP_WARP=0 BAGEL_EXP_PAIR=0 BAGEL_KERNEL_TUNING=QMV_SB_EARLY=0
gen main-sb BAGEL_EXP_WARP=0 BAGEL_EXP_PAIR=0
gen A-lone BAGEL_EXP_PAIR=1
gen B-lone BAGEL_EXP_PAIR=1 BAGEL_KERNEL_TUNING=QMV_SB_EARLY=0
for f in main-sb A-lone B-lone; do
	say "greedy $f against main ($(wc -c < /tmp/gen-main.txt) bytes): $(cmp -s /tmp/gen-$f.txt /tmp/gen-main.txt && echo same || echo DIFFERENT)"
done
C="-m $M --backend cuda --runs 1 --switches=false --lookup=false --projections 0 --stall-prompt 0 --long= --prefill= --drafts="
run() { # name env...
	name=$1; shift
	env "$@" BAGEL_TILED_GEMV=1 timeout 40 /tmp/br/bagel bench $C --tokens 128 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "[$name] (rc $?): $(grep -E '^ +(1|4|8) ' /tmp/b.txt | awk '{printf "%s: %s all decoding, %s ms a step; ", $1, $9, $7}')"
}
for round in 1 2; do
	run main BAGEL_EXP_WARP=0 BAGEL_EXP_PAIR=0 BAGEL_KERNEL_TUNING=QMV_SB_EARLY=0
	run main-sb BAGEL_EXP_WARP=0 BAGEL_EXP_PAIR=0
	run B BAGEL_KERNEL_TUNING=QMV_SB_EARLY=0
	run A
	run A-lone BAGEL_EXP_PAIR=1
	run A-cap0 BAGEL_KERNEL_TUNING=MOE_UP_PAIR_MIN_GROUPS=0
done
mkdir -p .devbin && cp /tmp/br/cuda.test /tmp/br/engine.test .devbin/
(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/cuda.test -test.v -test.count=1 -test.timeout=20m > /tmp/tests.txt 2>&1)
say "gpu-test cuda (rc $?): $(grep -c -- '^--- PASS' /tmp/tests.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests.txt) failed, $(grep -c -- '^--- SKIP' /tmp/tests.txt) skipped"
(cd engine && BAGEL_REQUIRE_GPU=1 timeout 200 ../.devbin/engine.test -test.v -test.count=1 -test.run GPU -test.timeout=10m >> /tmp/tests.txt 2>&1)
say "+ gpu-test engine (rc $?): $(grep -c -- '^--- PASS' /tmp/tests.txt) passed, $(grep -c -- '^--- FAIL' /tmp/tests.txt) failed, $(grep -c -- '^--- SKIP' /tmp/tests.txt) skipped"
grep -E -- '^(--- FAIL|--- SKIP)|panic' /tmp/tests.txt | head -12 | cut -c1-300 | tee -a $LOG
gzip -9 -c /tmp/tests.txt > $OUT/tests.txt.gz
METRICS=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__warps_active.avg.pct_of_peak_sustained_active
BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 100 ncu --csv --clock-control none -k regex:'moe_(up|down)' \
	--launch-skip-before-match 50700 --launch-count 8 --metrics "$METRICS" /tmp/br/bagel bench $C --tokens 16 --streams 8 > $OUT/ncu.csv 2> /dev/null
say "ncu (rc $?)"
python3 tools/ncu_metrics.py $OUT/ncu.csv | tee -a $LOG
gzip -9 $OUT/ncu.csv
k=moe_up_pair_bf16
BAGEL_TILED_GEMV=1 BAGEL_NO_CUDA_GRAPH=1 timeout 100 ncu --clock-control none -k regex:"^$k\$" \
	--launch-skip-before-match 50700 --launch-count 1 --section SourceCounters --section WarpStateStats \
	-f -o /tmp/$k /tmp/br/bagel bench $C --tokens 16 --streams 8 > /dev/null 2>&1
say "ncu source $k (rc $?)"
ncu --import /tmp/$k.ncu-rep --page source --csv --print-source sass > $OUT/$k-src.csv 2> /dev/null
python3 tools/ncu_source.py $OUT/$k-src.csv 16 | tee -a $LOG
gzip -9 $OUT/$k-src.csv
