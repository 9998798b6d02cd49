#!/bin/sh
# synth-centred.sh: the synthetic 35B-A3B with its weights leaning by -scale/2 a
# group (old, BAGEL_SYNTH_OLD_BIAS=1 from synth-centred.patch) and centred on
# zero (new, main since d80a240): a lone reply's decode, a 2,048-token prefill,
# oracle drafts of 4, and a load for several replies at 1, 4 and 8, each
# checkpoint in turn on one machine.
# .devbin/bins.tar.xz holds bagel built with the patch applied:
#   git apply docs/experiments/synth-centred.patch
#   L="env CGO_ENABLED=0 GOOS=linux GOARCH=amd64"; F='-trimpath -ldflags=-s\ -w'
#   eval $L go build $F -o .devbin/bagel . && (cd .devbin && tar cf bins.tar bagel && xz -T2 -6 bins.tar && rm -f bagel)
# then on the device (carry .devbin): sh docs/experiments/synth-centred.sh
set -u
T0=$(date +%s)
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
LOG=$OUT/log.txt
say() { echo "$* t=$(( $(date +%s) - T0 ))" | tee -a $LOG; }
(cd .devbin && xz -dc bins.tar.xz | tar x && chmod +x bagel) || exit 1
say "$(nvidia-smi --query-gpu=name --format=csv,noheader)"
mkdir -p /tmp/tok
gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
for kind in old new; do
	M=/tmp/m-$kind
	old=0; [ $kind = old ] && old=1
	BAGEL_SYNTH_OLD_BIAS=$old .devbin/bagel synth --like qwen3.5-35b-a3b --tokenizer /tmp/tok --out $M > /dev/null 2>&1
	say "$kind: model ready"
	C="-m $M --backend cuda --runs 1 --long= --switches=false --lookup=false --projections 0 --stall-prompt 0"
	timeout 120 .devbin/bagel bench $C --tokens 128 --prefill 2048 --drafts 4 > /tmp/b.txt 2>&1
	say "$kind lone (rc $?):"
	grep -E '^(decode greedy|prefill 2048)|a verify =' /tmp/b.txt | grep -v 'pipeline=off' | cut -c1-160 | tee -a $LOG
	BAGEL_TILED_GEMV=1 timeout 120 .devbin/bagel bench $C --prefill= --drafts= --tokens 64 --streams 1,4,8 > /tmp/b.txt 2>&1
	say "$kind tiled (rc $?): all decoding at 1/4/8: $(grep -A5 'streams  aggregate' /tmp/b.txt | awk '$1 ~ /^[1248]$/ {printf "%s (%s ms) ", $(NF-1), $7}')"
	cp /tmp/b.txt $OUT/streams-$kind.txt
	rm -rf $M
done
