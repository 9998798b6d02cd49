package ops

import "bagel/backend"

// RMSNorm normalises each row of x over the width of w: out = w ⊙ x̂ (MLX fast.rms_norm).
// x, out bf16 [R, N] (out may be x); w bf16 [N].
func RMSNorm(c *Ctx, x, w, out Tensor, eps float32) {
	checkDType("rms_norm x", x, backend.BF16)
	checkDType("rms_norm w", w, backend.BF16)
	n := w.Elements()
	if !(x.Elements()%n == 0 && out.Elements() == x.Elements()) {
		fail("rms_norm: x %v w %v out %v", x, w, out)
	}
	r := x.Elements() / n
	c.dispatch("rms_norm_bf16", x.Arg(), w.Arg(), out.Arg(), backend.Int(r), backend.Int(n), backend.Float(eps))
}

// RMSNormGated is the GDN output norm: out = (w ⊙ x̂) · silu(z), rows of width N.
// x, z, out bf16 [R, N]; w bf16 [N].
func RMSNormGated(c *Ctx, x, z, w, out Tensor, eps float32) {
	checkDType("rms_norm_gated x", x, backend.BF16)
	n := w.Elements()
	if !(x.Elements()%n == 0 && z.Elements() == x.Elements() && out.Elements() == x.Elements()) {
		fail("rms_norm_gated: x %v z %v w %v out %v", x, z, w, out)
	}
	r := x.Elements() / n
	c.dispatch("rms_norm_gated_bf16", x.Arg(), z.Arg(), w.Arg(), out.Arg(), backend.Int(r), backend.Int(n), backend.Float(eps))
}

// AddRMSNorm adds b into the residual stream and normalises the result in one
// dispatch: sum = a + b, out = w ⊙ norm(sum), bit for bit Add then RMSNorm.
// a, b, sum, out bf16 [R, N] (sum may be a: the residual updated in place); w bf16 [N], N even.
func AddRMSNorm(c *Ctx, a, b, w, sum, out Tensor, eps float32) {
	for _, t := range []struct {
		what string
		t    Tensor
	}{{"a", a}, {"b", b}, {"w", w}, {"sum", sum}, {"out", out}} {
		checkDTypeIn("add_rms_norm", t.what, t.t, backend.BF16)
	}
	n := w.Elements()
	e := a.Elements()
	if !(n%2 == 0 && e%n == 0 && b.Elements() == e && sum.Elements() == e && out.Elements() == e) {
		fail("add_rms_norm: a %v b %v w %v sum %v out %v", a, b, w, sum, out)
	}
	c.dispatch("add_rms_norm_bf16", a.Arg(), b.Arg(), w.Arg(), sum.Arg(), out.Arg(),
		backend.Int(e/n), backend.Int(n), backend.Float(eps))
}
