package qwen

import (
	"bagel/ops"
	"bagel/switches"
)

// The fused paths of the forward pass. Each has a switch (default on) read at
// model load; off runs the unfused ops, which stay as the reference: fused and
// unfused give the same bits on the CPU backend (engine tests hold them to it).
const (
	// SwitchFusedAddNorm joins each residual add with the RMSNorm after it
	// (add_rms_norm_bf16): two dispatches fewer per layer.
	SwitchFusedAddNorm = "fused-add-norm"
	// SwitchFusedProjections runs the projections that read the same x as one
	// launch (qmatmul_multi_bf16): GDN qkv/z/b/a, attention q/k/v, the MoE
	// router with the shared expert's gate, up and scalar gate, the dense MLP's
	// gate and up.
	SwitchFusedProjections = "fused-projections"
	// SwitchFusedExpertSwiGLU computes the experts' gate and up projections and
	// SwiGLU in one launch (qmatmul_gather_swiglu_bf16).
	SwitchFusedExpertSwiGLU = "fused-expert-swiglu"
	// SwitchFusedMoEDown runs the experts' down projections, their weighted sum,
	// the shared expert's down projection and its gate in one launch (moe_down_bf16).
	SwitchFusedMoEDown = "fused-moe-down"
	// SwitchSplitKV spreads decode attention over a long context across many
	// threadgroups (attention_split_f32 + attention_merge_bf16).
	SwitchSplitKV = "split-kv-attention"
)

func init() {
	for _, s := range []switches.Switch{
		{Name: SwitchFusedAddNorm, Env: "BAGEL_NO_FUSED_ADD_NORM",
			Description: "Fuse each residual add with the RMSNorm that follows it (applies at the next model load)."},
		{Name: SwitchFusedProjections, Env: "BAGEL_NO_FUSED_PROJECTIONS",
			Description: "Run the projections that read the same input as one launch (applies at the next model load)."},
		{Name: SwitchFusedExpertSwiGLU, Env: "BAGEL_NO_FUSED_EXPERT_SWIGLU",
			Description: "Compute the experts' gate and up projections and SwiGLU in one launch (applies at the next model load)."},
		{Name: SwitchFusedMoEDown, Env: "BAGEL_NO_FUSED_MOE_DOWN",
			Description: "Run the experts' down projections with their weighted sum and the shared expert's in one launch (applies at the next model load)."},
		{Name: SwitchSplitKV, Env: "BAGEL_NO_SPLIT_KV_ATTENTION",
			Description: "Split decode attention over a long context (1024 keys and more) across many threadgroups (applies at the next model load)."},
	} {
		s.Default = true
		switches.Register(s)
	}
}

// paths are the fused paths in effect for one loaded model.
type paths struct {
	addNorm, projections, expertSwiGLU, moeDown, splitKV bool
}

func currentPaths() paths {
	return paths{
		addNorm:      switches.On(SwitchFusedAddNorm),
		projections:  switches.On(SwitchFusedProjections),
		expertSwiGLU: switches.On(SwitchFusedExpertSwiGLU),
		moeDown:      switches.On(SwitchFusedMoEDown),
		splitKV:      switches.On(SwitchSplitKV),
	}
}

// project computes outs[i] = x·ws[i]ᵀ: in one launch on the fused path, one
// QMatmul each otherwise.
func (p paths) project(c *ops.Ctx, x ops.Tensor, ws []ops.QLinear, outs []ops.Tensor) {
	if p.projections {
		ops.QMatmulMulti(c, x, ws, outs)
		return
	}
	for i := range ws {
		ops.QMatmul(c, x, ws[i], outs[i])
	}
}
