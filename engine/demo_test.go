package engine

import (
	"compress/gzip"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"bagel/internal/testmodel"
	"bagel/tokenizer"
)

// demoReference is tools/demo/train.py's reference.json: transformers'
// float32 forward of the demo model's dequantized weights, per question the
// chat prompt (thinking off), the greedy reply, and every position's top-20
// logits over prompt + reply.
type demoReference struct {
	Prompts []struct {
		Question  string           `json:"question"`
		PromptIDs []int32          `json:"prompt_ids"`
		ReplyIDs  []int32          `json:"reply_ids"`
		Reply     string           `json:"reply"`
		Positions []goldenPosition `json:"positions"`
	} `json:"prompts"`
}

func loadDemo(t *testing.T) (string, *demoReference) {
	t.Helper()
	root := testmodel.Root(t)
	f, err := os.Open(filepath.Join(root, "testdata", "demo", "reference.json.gz"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	var ref demoReference
	if err := json.NewDecoder(zr).Decode(&ref); err != nil {
		t.Fatal(err)
	}
	if len(ref.Prompts) < 3 {
		t.Fatalf("demo reference has %d prompts, want ≥ 3", len(ref.Prompts))
	}
	return filepath.Join(root, "assets", "demo-model"), &ref
}

// TestDemoModelMatchesTransformers holds the demo model (a trained qwen3_5 in
// the MLX 4-bit layout, assets/demo-model) to transformers on its own
// weights: teacher-forced logits over each question and reply within the
// bf16 noise TestScoreMatchesTransformers states, and each greedy reply token
// for token up to the first step transformers itself was not clear about.
// A trained model's logits are larger than a random one's (the reference's
// spread 20–30 against ±11), so the bounds are relative to the top logit.
func TestDemoModelMatchesTransformers(t *testing.T) {
	dir, ref := loadDemo(t)
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 256})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	vocab := e.Config.VocabSize
	var rel []float64
	for pi, p := range ref.Prompts {
		seq := append(append([]int32(nil), p.PromptIDs...), p.ReplyIDs...)
		rows := scoreLogits(t, e, seq, len(p.PromptIDs))
		for pos, r := range p.Positions {
			got := rows[pos*vocab : (pos+1)*vocab]
			scale := math.Max(1, math.Abs(r.TopLogits[0]))
			for j, id := range r.TopIDs[:5] {
				rel = append(rel, math.Abs(float64(got[id])-r.TopLogits[j])/scale)
			}
			if r.Margin > clearMargin && argmax(got) != r.TopIDs[0] {
				t.Errorf("%q position %d: top-1 %d, transformers %d with margin %.3f", p.Question, pos, argmax(got), r.TopIDs[0], r.Margin)
			}
		}
		got := greedyIDs(t, e, p.PromptIDs, len(p.ReplyIDs))
		if n := len(got); n < len(p.ReplyIDs) && n == len(p.ReplyIDs)-1 && e.isEOS(p.ReplyIDs[n]) {
			got = append(got, p.ReplyIDs[n]) // the stop token ends Bagel's stream unsent
		}
		same := 0
		for same < len(got) && same < len(p.ReplyIDs) && got[same] == p.ReplyIDs[same] {
			same++
		}
		if same < len(p.ReplyIDs) {
			margin := p.Positions[len(p.PromptIDs)-1+same].Margin
			t.Logf("%q: first %d of %d reply tokens equal; transformers' margin at the next: %.3f", p.Question, same, len(p.ReplyIDs), margin)
			if margin > clearMargin {
				t.Errorf("%q: greedy reply parts from transformers at token %d, where its margin is %.3f", p.Question, same, margin)
			}
		} else if pi == 0 {
			t.Logf("%q: all %d reply tokens equal", p.Question, same)
		}
	}
	sort.Float64s(rel)
	median, p90 := rel[len(rel)/2], rel[len(rel)*9/10]
	t.Logf("%d top-5 logits: median |Δ|/|top| %.4f, p90 %.4f, max %.4f", len(rel), median, p90, rel[len(rel)-1])
	if median > 0.01 || p90 > 0.03 {
		t.Errorf("demo logits differ from transformers beyond bf16 noise: median %.4f (≤ 0.01), p90 %.4f (≤ 0.03) of the top logit", median, p90)
	}
}

// TestDemoModelAnswers asks the demo model a question through its own
// tokenizer and chat template, as the app does, and checks the known greedy
// reply: transformers' reply to the same question, as text.
func TestDemoModelAnswers(t *testing.T) {
	dir, ref := loadDemo(t)
	e, err := Load(dir, Options{Backend: "cpu", ContextLength: 512})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	want := ref.Prompts[0] // "What is a kludge?": a reply clear at every step
	var text strings.Builder
	req := Request{Messages: []tokenizer.Message{{Role: "user", Content: want.Question}}, MaxTokens: 40}
	for ev := range e.Generate(context.Background(), req) {
		switch ev.Kind {
		case EventToken:
			text.WriteString(ev.Text)
		case EventError:
			t.Fatal(ev.Err)
		}
	}
	got := strings.TrimSpace(text.String())
	prefix := []rune(want.Reply)[:60]
	if !strings.HasPrefix(got, string(prefix)) {
		t.Errorf("the demo model's reply to %q:\n%q\nwant it to begin as transformers' does:\n%q", want.Question, got, string(prefix))
	}
}
