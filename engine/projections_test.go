package engine

import (
	"strings"
	"testing"

	"bagel/internal/testmodel"
)

// TestTimeProjections times the GEMV on each matrix shape of the tiny models:
// every shape once, the head among them, each with its bytes and a rate, and
// the products a token makes adding up to what a decode token reads of the
// quantized matrices.
func TestTimeProjections(t *testing.T) {
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		t.Run(name, func(t *testing.T) {
			e, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: 32})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			ts, err := e.TimeProjections(2)
			if err != nil {
				t.Fatal(err)
			}
			var perToken int64
			head, experts := false, false
			seen := map[[5]int]bool{}
			for _, p := range ts {
				shape := [5]int{p.Rows, p.In, p.Bits, p.GroupSize, min(p.Experts, 1)}
				if seen[shape] {
					t.Errorf("%s: shape %v listed twice", p.Name, shape)
				}
				seen[shape] = true
				if p.Bytes <= 0 || p.Time <= 0 || p.GBPerSec <= 0 || p.PerToken < 1 {
					t.Errorf("%s: %+v", p.Name, p)
				}
				head = head || strings.Contains(p.Name, "lm_head") || strings.Contains(p.Name, "embed_tokens")
				experts = experts || p.Experts > 0
				perToken += int64(p.PerToken) * p.Bytes
			}
			if !head {
				t.Errorf("no head among %d shapes", len(ts))
			}
			if experts != (e.Config.NumExperts > 0) {
				t.Errorf("expert stacks timed: %v, model has %d experts", experts, e.Config.NumExperts)
			}
			// The rest of a token's reads: norms, the conv, one embedding row.
			if total := e.DecodeWeightBytes(); perToken > total || perToken < total*8/10 {
				t.Errorf("the shapes' products read %d bytes a token, the decode path %d", perToken, total)
			}
			if _, err := e.TimeProjections(0); err == nil {
				t.Error("0 repetitions: no error")
			}
		})
	}
}
