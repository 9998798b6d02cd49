set -u
T0=$(date +%s); el() { echo $(( $(date +%s) - T0 )); }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel) || exit 1
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader
. tools/synth_model.sh
C="-m $M --backend cuda --runs 1 --tokens 128 --prefill= --long= --switches=false --drafts= --lookup=false --projections 0"
BAGEL_TILED_GEMV=1 timeout 240 .devbin/bagel bench $C --streams 1,2,4,8 --stall-prompt 8192 --stream-drafts 4 --stream-sampled > /tmp/s.txt 2>&1
echo "streams rc $? t=$(el)"; sed -n '/replies decoded together/,$p' /tmp/s.txt
for v in 1 ""; do
	BAGEL_TILED_GEMV=1 BAGEL_NO_FUSED_GDN_CONV_BATCH=$v timeout 120 .devbin/bagel bench $C --streams 1,4,8 --stall-prompt 0 --stream-drafts 4 > /tmp/d.txt 2>&1
	echo "drafts of 4 in the batch, conv $( [ -n "$v" ] && echo apart || echo fused ): rc $? t=$(el)"; sed -n '/replies decoded together/,$p' /tmp/d.txt
done
BAGEL_TILED_GEMV=1 timeout 120 .devbin/bagel bench $C --streams 1,4,8 --stall-prompt 0 --stream-drafts 4 --stream-tree-width 2 > /tmp/t.txt 2>&1
echo "trees rc $? t=$(el)"; sed -n '/replies decoded together/,$p' /tmp/t.txt | tail -12
timeout 60 .devbin/bagel bench $C --tokens 200 > /tmp/p.txt 2>&1
echo "plain GEMVs alone: $(grep -m1 '^decode greedy ' /tmp/p.txt | awk -F '  +' '{print $4, "tok/s", $9, "GPU ms"}') t=$(el)"
