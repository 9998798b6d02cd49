#!/bin/sh
# abrun: decode (and, with ABPREFILL, prefill) speed of several builds of bagel
# side by side in one device call, after `make gpu-build` and copies of other
# builds into .devbin/ (say .devbin/bagel-0 built from the previous commit):
# each round runs `bagel bench` once per build, so drift between rounds shows.
# Uses the synthetic checkpoint of tools/gpubench.sh, writing it if missing.
#
# Usage (from the repository root, on the GPU machine):
#   BINS='bagel-0 bagel' ROUNDS=2 ABPREFILL=2048 ABARGS='--prefill-chunk 2048' sh tools/abrun.sh
#   (ABARGS='--long 32768' adds decode after a 32K prompt: its own row)
# An entry of BINS may carry its own environment after a colon, ';'-joined:
#   BINS='bagel bagel-x bagel-x:BAGEL_NO_FUSED_GDN_NORM=1;BAGEL_KERNEL_TUNING=QMV_HEAD_GROUPS=4224'
# (the others run with ENVS), so one binary's switches are compared round by
# round beside the other builds.
set -u
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
. tools/synth_model.sh  # M, the synthetic checkpoint
for r in $(seq ${ROUNDS:-2}); do
	for b in ${BINS:-bagel}; do
		bin=${b%%:*} vars=${ENVS:-BAGEL_AB=1}
		case $b in *:*) vars=$(echo "${b#*:}" | tr ';' ' ') ;; esac
		env $vars timeout 150 .devbin/$bin bench -m $M --backend cuda --runs 1 --tokens 200 \
			--prefill "${ABPREFILL:-}" --long "" --switches=false --lookup=false ${ABARGS:-} > /tmp/ab.txt 2>> "$OUT/log.txt"
		# bench's columns are two or more spaces apart: figure, switch, prompt, tok/s decode, ...
		echo "$b: $(grep -m1 '^decode greedy ' /tmp/ab.txt | awk -F '  +' '{print $4, "tok/s,", $9, "GPU ms,", $10, "dispatches,", $14, "host ms"}')" \
			"$(grep -m1 '^decode greedy  *decode-pipeline=' /tmp/ab.txt | awk -F '  +' '{print "|", $2 ":", $4, "tok/s,", $14, "host ms"}')" \
			"$(grep -m1 '^decode sampled  *[(].*device-sampling=' /tmp/ab.txt | awk -F '  +' '{print "| sampled,", $2 ":", $4, "tok/s"}')" \
			"$(grep -m1 '^decode greedy, oracle' /tmp/ab.txt | awk -F '  +' '{print "| oracle drafts:", $4, "tok/s,", $9, "GPU ms/tok,", $14, "host ms/tok"}')" \
			"$(grep '^prefill ' /tmp/ab.txt | awk -F '  +' '{printf "| %s: %s tok/s, TTFT %s ms, GPU %s ms ", $1, $5, $6, $7}')" \
			"$(grep '^decode after ' /tmp/ab.txt | awk -F '  +' '{printf "| %s: %s tok/s, GPU %s ms ", $1, $4, $9}')" \
			"$(grep -m1 ' verifies, ' /tmp/ab.txt | sed 's/.* verifies, /| verify: /')"
	done
done
