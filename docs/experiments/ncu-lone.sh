set -u
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel) || exit 1
nvidia-smi --query-gpu=name --format=csv,noheader
. tools/synth_model.sh
for t in 1 0; do
	BAGEL_TILED_GEMV=$t BAGEL_NO_CUDA_GRAPH=1 timeout 200 ncu --csv --clock-control none --metrics gpu__time_duration.sum,launch__registers_per_thread \
		--launch-skip 4000 --launch-count 1300 .devbin/bagel generate -m $M --backend cuda --raw -p "Tell me about bagels." --max-tokens 24 > $OUT/lone-tiled$t.csv 2>/tmp/err$t.txt
	echo "tiled-gemv=$t: rc $?"
	python3 tools/ncu_forwards.py $OUT/lone-tiled$t.csv 30 | awk '/^forward/{n++} n==2'
	gzip -9 $OUT/lone-tiled$t.csv
done
