package engine

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"math"
	"os"
	"path/filepath"
	"testing"

	"bagel/internal/testmodel"
)

// golden is the transformers reference written by tools/goldens/make_goldens.py.
type golden struct {
	Model   string `json:"model"`
	Prompts []struct {
		IDs       []int `json:"ids"`
		Positions []struct {
			TopIDs    []int     `json:"top_ids"`
			TopLogits []float64 `json:"top_logits"`
			LogSumExp float64   `json:"logsumexp"`
		} `json:"positions"`
	} `json:"prompts"`
	Greedy []struct {
		PromptIDs    []int     `json:"prompt_ids"`
		GeneratedIDs []int     `json:"generated_ids"`
		Margins      []float64 `json:"margins"`
	} `json:"greedy"`
}

func loadGolden(t *testing.T, name string) *golden {
	t.Helper()
	base := filepath.Join(testmodel.Root(t), "testdata", "goldens", name+".json")
	var r io.Reader
	f, err := os.Open(base)
	if err != nil {
		f, err = os.Open(base + ".gz")
		if err != nil {
			t.Fatalf("golden for %s: %v", name, err)
		}
		zr, err := gzip.NewReader(f)
		if err != nil {
			t.Fatal(err)
		}
		r = zr
	} else {
		r = f
	}
	defer f.Close()
	var g golden
	if err := json.NewDecoder(r).Decode(&g); err != nil {
		t.Fatalf("golden for %s: %v", name, err)
	}
	return &g
}

// Logit tolerance against the f32 reference: our residual stream and
// activations are bf16 as in MLX, so a logit may move by a few hundredths of
// its scale. The top-1 token must agree wherever the reference margin exceeds it.
const (
	logitAbsTol = 0.08
	logitRelTol = 0.02
)

func logitTol(ref float64) float64 { return logitAbsTol + logitRelTol*math.Abs(ref) }

// TestScoreMatchesTransformers compares teacher-forced logits with transformers'
// at every position, with the first half of each prompt prefilled in one forward
// and the rest decoded token by token (both GDN paths, and attention over a
// growing cache).
func TestScoreMatchesTransformers(t *testing.T) {
	for _, name := range testmodel.Names {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			e, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: 256})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			if len(g.Prompts) < 2 {
				t.Fatalf("golden has %d prompts, want ≥ 2", len(g.Prompts))
			}
			vocab := e.Config.VocabSize
			for pi, p := range g.Prompts {
				prefill := max(1, len(p.IDs)/2)
				rows := scoreLogits(t, e, p.IDs, prefill)
				var worst, worstLSE float64
				checkedTop1 := 0
				for pos, ref := range p.Positions {
					got := rows[pos*vocab : (pos+1)*vocab]
					for j, id := range ref.TopIDs {
						d := math.Abs(float64(got[id]) - ref.TopLogits[j])
						worst = math.Max(worst, d)
						if d > logitTol(ref.TopLogits[j]) {
							t.Errorf("prompt %d pos %d: logit of id %d = %.4f, reference %.4f", pi, pos, id, got[id], ref.TopLogits[j])
						}
					}
					lse := LogSumExp(got)
					worstLSE = math.Max(worstLSE, math.Abs(lse-ref.LogSumExp))
					if math.Abs(lse-ref.LogSumExp) > logitTol(ref.LogSumExp) {
						t.Errorf("prompt %d pos %d: logsumexp %.4f, reference %.4f", pi, pos, lse, ref.LogSumExp)
					}
					if margin := ref.TopLogits[0] - ref.TopLogits[1]; margin > 2*logitTol(ref.TopLogits[0]) {
						checkedTop1++
						if top := argmax(got); top != ref.TopIDs[0] {
							t.Errorf("prompt %d pos %d: top-1 %d, reference %d (margin %.3f)", pi, pos, top, ref.TopIDs[0], margin)
						}
					}
				}
				t.Logf("prompt %d (%d tokens, prefill %d): max |Δlogit| %.4f, max |Δlogsumexp| %.4f, top-1 checked at %d positions",
					pi, len(p.IDs), prefill, worst, worstLSE, checkedTop1)
			}
		})
	}
}

// scoreLogits returns the full logits [len(ids), vocab] after prefilling ids[:prefill].
func scoreLogits(t *testing.T, e *Engine, ids []int, prefill int) []float32 {
	t.Helper()
	if err := e.resetCache(); err != nil {
		t.Fatal(err)
	}
	tokens := toInt32(ids)
	out, err := e.forward(tokens[:prefill], true)
	if err != nil {
		t.Fatal(err)
	}
	for i := prefill; i < len(tokens); i++ {
		row, err := e.forward(tokens[i:i+1], false)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, row...)
	}
	return out
}

// TestGreedyMatchesTransformers generates greedily from the reference prompts and
// compares tokens up to the first step whose reference margin is too thin to be
// decided in bf16 (after that the sequences may legitimately part).
func TestGreedyMatchesTransformers(t *testing.T) {
	for _, name := range testmodel.Names {
		t.Run(name, func(t *testing.T) {
			g := loadGolden(t, name)
			if len(g.Greedy) == 0 {
				t.Fatal("golden has no greedy references")
			}
			e, err := Load(testmodel.Weights(t, name), Options{Backend: "cpu", ContextLength: 256})
			if err != nil {
				t.Fatal(err)
			}
			defer e.Close()
			for gi, ref := range g.Greedy {
				got := greedyIDs(t, e, ref.PromptIDs, len(ref.GeneratedIDs))
				compared := 0
				for i, id := range ref.GeneratedIDs {
					if ref.Margins[i] < 2*logitTol(0) {
						break
					}
					compared++
					if i >= len(got) {
						t.Fatalf("greedy %d: generation stopped after %d tokens: %v, reference %v", gi, len(got), got, ref.GeneratedIDs)
					}
					if got[i] != id {
						t.Fatalf("greedy %d step %d: token %d, reference %d (margin %.3f); got %v want %v", gi, i, got[i], id, ref.Margins[i], got, ref.GeneratedIDs)
					}
				}
				t.Logf("greedy %d: %d of %d tokens compared", gi, compared, len(ref.GeneratedIDs))
				if compared < 4 {
					t.Errorf("greedy %d: only %d tokens have a clear margin; pick a clearer prompt", gi, compared)
				}
			}
		})
	}
}

// greedyIDs runs a greedy Generate from prompt for n tokens (no stop tokens are
// reached: the test models' eos ids are rarely the argmax; a stop ends early).
func greedyIDs(t *testing.T, e *Engine, prompt []int, n int) []int {
	t.Helper()
	var out []int
	for ev := range e.Generate(context.Background(), Request{PromptIDs: prompt, MaxTokens: n}) {
		switch ev.Kind {
		case EventToken:
			if ev.Token >= 0 {
				out = append(out, ev.Token)
			}
		case EventError:
			t.Fatal(ev.Err)
		}
	}
	return out
}
