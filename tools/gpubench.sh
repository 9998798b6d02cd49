#!/bin/sh
# gpubench: one call's worth of work on the GPU machine, after `make gpu-build`
# here (the binaries travel in .devbin/): regenerate the embedded PTX, run every
# kernel and end-to-end GPU test, write the synthetic Qwen3.5-35B-A3B checkpoint
# (64 experts: the bytes read per token are the real model's) and bench it, then
# time each kernel of one decode step with ncu. Everything lands in $OUT; the
# last lines printed are the summaries.
#
# Usage (from the repository root): tools/gpubench.sh [stages]
#   stages: any of ptx tests bench ncu (default: all)
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
stages=${*:-ptx tests bench ncu}
has() { case " $stages " in *" $1 "*) return 0 ;; esac; return 1; }
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,memory.total --format=csv,noheader > "$OUT/gpu.txt" 2>&1

if has ptx; then
	mkdir -p "$OUT/ptx" && .devbin/ptx -out "$OUT/ptx" > "$OUT/ptx.log" 2>&1
	echo "ptx: rc $? $(cat "$OUT/ptx/kernels.sha256" 2>/dev/null | cut -c1-12)"
fi
if has tests; then
	(cd cuda && BAGEL_REQUIRE_GPU=1 timeout 300 ../.devbin/cuda.test -test.v -test.count=1) > "$OUT/cuda-tests.log" 2>&1
	echo "cuda tests: rc $?; $(grep -c '^--- FAIL' "$OUT/cuda-tests.log") failed; $(grep -o 'Kernel tests on [^|]*pass' "$OUT/cuda-tests.log" | head -2 | tr '\n' ' ')"
	(cd engine && BAGEL_REQUIRE_GPU=1 timeout 300 ../.devbin/engine.test -test.v -test.count=1 -test.run GPU) > "$OUT/engine-tests.log" 2>&1
	echo "engine GPU tests: rc $?; $(grep -c '^--- FAIL' "$OUT/engine-tests.log") failed"
	grep -h -- '--- FAIL' "$OUT/cuda-tests.log" "$OUT/engine-tests.log" | head -20
fi
M=/tmp/qwen35-a3b-e64
if has bench || has ncu; then
	mkdir -p /tmp/tok
	gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
	gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
	[ -f $M/config.json ] || .devbin/bagel synth --like qwen3.5-35b-a3b --experts 64 --tokenizer /tmp/tok --out $M 2> "$OUT/synth.log"
fi
if has bench; then
	timeout 420 .devbin/bagel bench -m $M --backend cuda --runs 3 --tokens 128 --prefill ${PREFILL:-128,512,2048} --long ${LONG:-8192} \
		--json "$OUT/bench.json" > "$OUT/bench.txt" 2> "$OUT/bench.log"
	echo "bench: rc $?"
	cat "$OUT/bench.txt"
fi
if has ncu; then
	# One decode step without graphs (ncu times each kernel): skip the prefill
	# and the first steps, then profile about one step's launches.
	BAGEL_NO_CUDA_GRAPH=1 timeout 240 ncu --csv --clock-control none --metrics gpu__time_duration.sum \
		--launch-skip ${NCU_SKIP:-4000} --launch-count ${NCU_COUNT:-1200} \
		.devbin/bagel generate -m $M --backend cuda --raw -p "Tell me about bagels." --max-tokens 8 > "$OUT/ncu.csv" 2> "$OUT/ncu.log"
	echo "ncu: rc $?"
	python3 tools/ncu_summary.py "$OUT/ncu.csv"
fi
