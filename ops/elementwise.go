package ops

import "bagel/backend"

func elementwise(c *Ctx, name string, a, b, out Tensor) {
	checkDType(name+" a", a, backend.BF16)
	n := a.Elements()
	if !(b.Elements() == n && out.Elements() == n) {
		fail("%s: %v %v → %v", name, a, b, out)
	}
	c.dispatch(name, a.Arg(), b.Arg(), out.Arg(), backend.Int(n))
}

// Add is out = a + b, bf16 (out may be a).
func Add(c *Ctx, a, b, out Tensor) { elementwise(c, "add_bf16", a, b, out) }

// SigmoidMul is out = x · σ(gate), bf16.
func SigmoidMul(c *Ctx, x, gate, out Tensor) { elementwise(c, "sigmoid_mul_bf16", x, gate, out) }

// SwiGLU is out = silu(gate) · up, bf16.
func SwiGLU(c *Ctx, gate, up, out Tensor) { elementwise(c, "swiglu_bf16", gate, up, out) }

// AddSigmoidScaled is out[t] = x[t] + σ(gate[t]) · y[t] for x, y, out bf16 [T, H] and
// one gate logit per token, gate bf16 [T] (the shared-expert gate).
func AddSigmoidScaled(c *Ctx, x, y, gate, out Tensor) {
	t := gate.Elements()
	if !(t > 0 && x.Elements()%t == 0 && y.Elements() == x.Elements() && out.Elements() == x.Elements()) {
		fail("add_sigmoid_scaled: x %v y %v gate %v", x, y, gate)
	}
	c.dispatch("add_sigmoid_scaled_bf16", x.Arg(), y.Arg(), gate.Arg(), out.Arg(), backend.Int(t), backend.Int(x.Elements()/t))
}
