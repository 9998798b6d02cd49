package qwen

import "bagel/feature"

// SwitchFusedAddNorm joins each residual add with the RMSNorm after it in one
// kernel (add_rms_norm_bf16): two dispatches fewer per layer, the same bits.
const SwitchFusedAddNorm = "fused-add-norm"

func init() {
	feature.Register(feature.Switch{
		Name:        SwitchFusedAddNorm,
		Description: "Fuse each residual add with the RMSNorm that follows it (applies at the next model load).",
		Default:     true,
		Env:         "BAGEL_NO_FUSED_ADD_NORM",
	})
}
