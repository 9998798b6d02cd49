# synth_model.sh, sourced by the device-call scripts (tools/gpubench.sh,
# abrun.sh, ncu_regs.sh, ncu_stalls.sh): sets M to the synthetic Qwen3.5-35B-A3B
# checkpoint and writes it with .devbin/bagel if it is not there yet. Run from
# the repository root. EXPERTS=64 makes the smaller stand-in of the first
# sessions' figures (a token reads the same bytes; 6 GB on disk against 19 GB,
# but the router and the expert gather see a quarter of the real experts).
EXPERTS=${EXPERTS:-256}
M=/tmp/qwen35-a3b-e$EXPERTS
if [ ! -f $M/config.json ]; then
	mkdir -p /tmp/tok
	gzip -dc testdata/tokenizer/qwen3/tokenizer.json.gz > /tmp/tok/tokenizer.json
	gzip -dc testdata/tokenizer/qwen3/tokenizer_config.json.gz > /tmp/tok/tokenizer_config.json
	.devbin/bagel synth --like qwen3.5-35b-a3b --experts $EXPERTS --tokenizer /tmp/tok --out $M > /dev/null 2>&1
fi
