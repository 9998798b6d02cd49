#!/bin/sh
# gpubench: one call's worth of work on the GPU machine, after `make gpu-build`
# here (the binaries travel in .devbin/): regenerate the embedded PTX, run every
# kernel and end-to-end GPU test, write the synthetic Qwen3.5-35B-A3B checkpoint
# (tools/synth_model.sh: the real 256 experts, or EXPERTS=64) and bench it, then
# time each kernel of one decode step with ncu. Everything lands in $OUT; the
# last lines printed are the summaries.
#
# Usage (from the repository root): tools/gpubench.sh [stages]
#   stages: any of ptx tests sweep bench streams stream-trees ncu ncu-prefill ncu-verify ncu-batch (default: ptx tests bench ncu)
#   streams: replies decoded together (docs/batching.md's table: 1, 2, 4, 8 replies,
#          an 8,192-token prompt joining; again with oracle drafts of $STREAM_DRAFTS, default 4, and sampled), with the tiled GEMVs a model loaded for
#          several replies takes (BATCH_ENV overrides)
#   stream-trees: 1, 4, 8 replies, the oracle's drafts as trees of two branches in
#          the batch's steps
#   sweep: decode speed for each setting in $SWEEP, a space-separated list of
#          ';'-joined environment assignments, e.g.
#          "BAGEL_KERNEL_TUNING=QMV_ROWS=2,QMV_SPLIT=4 BAGEL_NO_CUDA_GRAPH=1"
# SUFFIX=-BRANCH takes the binaries of `make gpu-build-branch` (bagel-BRANCH,
# ptx-BRANCH, cuda-BRANCH.test, engine-BRANCH.test) instead of main's.
# The device tool brings back at most 8 files: logs go to $OUT/log.txt.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
stages=${*:-ptx tests bench ncu}
BAGEL=.devbin/bagel${SUFFIX:-}
LOG="$OUT/log.txt"
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total --format=csv,noheader >> "$LOG" 2>&1  # appended: several runs of one call share the log

if has ptx; then
	mkdir -p "$OUT/ptx" && .devbin/ptx${SUFFIX:-} -out "$OUT/ptx" >> "$LOG" 2>&1
	echo "ptx: rc $? $(cat "$OUT/ptx/kernels.sha256" 2>/dev/null | cut -c1-12)"
fi
if has tests; then
	(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 300 ../.devbin/cuda${SUFFIX:-}.test -test.v -test.count=1) > /tmp/cuda-tests.log 2>&1
	echo "cuda tests: rc $?; $(grep -c '^--- FAIL' /tmp/cuda-tests.log) failed; $(grep -o 'Kernel tests on [^|]*pass' /tmp/cuda-tests.log | head -2 | tr '\n' ' ')"
	(cd engine && BAGEL_REQUIRE_GPU=1 timeout 300 ../.devbin/engine${SUFFIX:-}.test -test.v -test.count=1 -test.run GPU) > /tmp/engine-tests.log 2>&1
	echo "engine GPU tests: rc $?; $(grep -c '^--- FAIL' /tmp/engine-tests.log) failed"
	cat /tmp/cuda-tests.log /tmp/engine-tests.log >> "$LOG"
	grep -h -A3 -- '--- FAIL' /tmp/cuda-tests.log /tmp/engine-tests.log | head -30
fi
if has bench || has streams || has ncu || has sweep || has ncu-prefill || has ncu-verify || has ncu-batch; then
	. tools/synth_model.sh  # M, the synthetic checkpoint
fi
if has sweep; then
	for t in ${SWEEP:-BAGEL_NO_CUDA_GRAPH=0}; do
		env $(echo "$t" | tr ';' ' ') timeout 120 $BAGEL bench -m $M --backend cuda --runs 1 --tokens 200 --prefill "" --long "" \
			--switches=false > /tmp/sweep.txt 2>> "$LOG"
		echo "sweep $t: $(grep -m1 '^decode greedy ' /tmp/sweep.txt | awk '{print $5, "tok/s greedy,", $10, "GPU ms/token,", $11, "dispatches/token"}')"
		cat /tmp/sweep.txt >> "$LOG"
	done
fi
if has bench; then
	timeout 420 $BAGEL bench -m $M --backend cuda --runs ${RUNS:-2} --tokens 128 --prefill ${PREFILL:-128,512,2048} --long ${LONG:-8192} --drafts ${DRAFTS:-4} \
		--json "$OUT/bench.json" > /tmp/bench.txt 2>> "$LOG"
	echo "bench: rc $?"
	cat /tmp/bench.txt | tee -a "$LOG"
fi
if has streams; then
	env ${BATCH_ENV:-BAGEL_TILED_GEMV=1} timeout 420 $BAGEL bench -m $M --backend cuda --runs 1 --tokens 128 --prefill "" --long "" \
		--switches=false --drafts "" --lookup=false --projections 0 --streams ${STREAMS:-1,2,4,8} --stall-prompt ${STALL:-8192} --stream-drafts ${STREAM_DRAFTS:-4} --stream-sampled \
		> /tmp/streams.txt 2>> "$LOG"
	echo "streams: rc $?"
	sed -n '/replies decoded together/,$p' /tmp/streams.txt | tee -a "$LOG"
fi
if has stream-trees; then
	# The oracle's guesses as trees of two branches in the batch's steps.
	env ${BATCH_ENV:-BAGEL_TILED_GEMV=1} timeout 300 $BAGEL bench -m $M --backend cuda --runs 1 --tokens 128 --prefill "" --long "" \
		--switches=false --drafts "" --lookup=false --projections 0 --streams ${STREAMS:-1,4,8} --stall-prompt 0 --stream-drafts ${STREAM_DRAFTS:-4} --stream-tree-width 2 \
		> /tmp/stream-trees.txt 2>> "$LOG"
	echo "stream-trees: rc $?"
	sed -n '/replies decoded together/,$p' /tmp/stream-trees.txt | tee -a "$LOG"
fi
if has ncu; then
	# One decode step without graphs (ncu times each kernel): skip the prefill
	# and the first steps, then profile about one step's launches.
	BAGEL_NO_CUDA_GRAPH=1 timeout 240 ncu --csv --clock-control none --cache-control ${NCU_CACHE:-all} --metrics gpu__time_duration.sum \
		--launch-skip ${NCU_SKIP:-4000} --launch-count ${NCU_COUNT:-1200} \
		$BAGEL generate -m $M --backend cuda --raw -p "Tell me about bagels." --max-tokens 8 > "$OUT/ncu.csv" 2>> "$LOG"
	echo "ncu: rc $?"
	python3 tools/ncu_summary.py "$OUT/ncu.csv"
fi
if has ncu-prefill; then
	# Every kernel of one prompt of PREFILL_TOKENS (2048) words, graphs off:
	# where a prefill spends its time (about a minute of device time).
	P=$(python3 -c "import random; random.seed(1); w='the of bagel dough water salt yeast oven boil bake crust seeds sesame poppy onion garlic rye wheat flour malt honey'.split(); print(' '.join(random.choice(w) for _ in range(${PREFILL_TOKENS:-2048} - 8)))")
	BAGEL_NO_CUDA_GRAPH=1 timeout 400 ncu --csv --clock-control none --metrics gpu__time_duration.sum --launch-count ${NCU_COUNT:-4000} \
		$BAGEL generate -m $M --backend cuda --raw -p "$P" --max-tokens 1 ${PREFILL_ARGS:-} > "$OUT/ncu-prefill.csv" 2>> "$LOG"
	echo "ncu-prefill: rc $?"
	python3 tools/ncu_summary.py "$OUT/ncu-prefill.csv"
fi
if has ncu-verify; then
	# Speculative verifies beside plain steps (prompt lookup on a code-editing
	# prompt, whose synthetic reply loops), graphs off, every kernel timed;
	# tools/ncu_forwards.py splits the capture at each logits GEMV, whose grid
	# tells a verify of 5 tokens (310400 at 35B-A3B) from a step (62080).
	P='func add(a, b int) int {
	return a + b
}

func sub(a, b int) int {
	return a - b
}

Rewrite both functions to take int64 instead of int, keeping everything else the same.'
	BAGEL_NO_CUDA_GRAPH=1 timeout 300 ncu --csv --clock-control none --metrics gpu__time_duration.sum \
		--launch-skip ${NCU_SKIP:-6000} --launch-count ${NCU_COUNT:-3000} \
		$BAGEL generate -m $M --backend cuda -p "$P" --speculative ngram --draft 4 --max-tokens 96 > "$OUT/ncu-verify.csv" 2>> "$LOG"
	echo "ncu-verify: rc $?"
	python3 tools/ncu_forwards.py "$OUT/ncu-verify.csv" 8
	gzip -9 "$OUT/ncu-verify.csv"
fi
if has ncu-batch; then
	# A batched step of BATCH (8) replies, graphs off, every kernel timed:
	# `bench --streams` runs one reply alone six times first (16 tokens each,
	# ~7,200 launches a run), then the batch (its prompts' prefills between
	# its first steps). tools/ncu_forwards.py splits at each logits GEMV and
	# labels the batched steps (the *_batch kernels) with their rows; the
	# last full one of BATCH rows is printed (those after it have fewer, as
	# replies end).
	env ${BATCH_ENV:-BAGEL_TILED_GEMV=1} BAGEL_NO_CUDA_GRAPH=1 timeout 400 ncu --csv --clock-control none --metrics gpu__time_duration.sum \
		--launch-skip ${NCU_SKIP:-43000} --launch-count ${NCU_COUNT:-6000} \
		$BAGEL bench -m $M --backend cuda --runs 1 --tokens 16 --prefill "" --long "" --switches=false --drafts "" \
		--lookup=false --projections 0 --streams ${BATCH:-8} > "$OUT/ncu-batch.csv" 2>> "$LOG"
	echo "ncu-batch: rc $?"
	python3 tools/ncu_forwards.py "$OUT/ncu-batch.csv" 24 > "$OUT/ncu-batch.txt"
	grep '^forward' "$OUT/ncu-batch.txt" | cut -c1-70
	awk -v rows="batched step of ${BATCH:-8} rows" '/^forward/ {n++; batched[n] = index($0, rows) > 0} {buf[n] = buf[n] $0 "\n"} END {for (i = n - 1; i > 0; i--) if (batched[i]) {printf "%s", buf[i]; exit}}' "$OUT/ncu-batch.txt"
	gzip -9 "$OUT/ncu-batch.csv"
fi
