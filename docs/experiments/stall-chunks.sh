#!/bin/sh
# stall-chunks.sh (thirty-second session): what the prefill chunk trades in a
# batch. A long prompt joining replies that decode prefills a chunk between
# their steps, each chunk a lone reply's (so each cache gets its solo bits);
# the chunk (serve --prefill-chunk, the app's prompt chunk) sets how long the
# others wait between tokens against how fast the long prompt prefills.
# Tiled GEMVs, as a model loaded for several replies runs.
set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel) || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
. tools/synth_model.sh
C="-m $M --backend cuda --runs 1 --long= --switches=false --drafts= --lookup=false --projections 0"
for p in 8192 30720; do
	for c in 512 1024 2048 4096; do
		BAGEL_TILED_GEMV=1 timeout 120 .devbin/bagel bench $C --tokens 48 --prefill $p --prefill-chunk $c --streams 8 --stall-prompt $p > /tmp/s.txt 2>&1
		echo "prompt $p, chunks of $c (rc $?): alone $(grep -E '^prefill ' /tmp/s.txt | awk -F '  +' '{printf "%s tok/s, first token %s ms", $5, $6}'); $(grep -o 'joining 7 replies.*' /tmp/s.txt) t=$(el)"
	done
done
