package engine

import (
	"context"
	"math"
	"slices"
	"testing"

	"bagel/internal/testmodel"
)

// TestLogprobsAreTheModels: with logprobs on, a greedy reply's tokens are
// those it has without, each event carries the token's log-probability (the
// likeliest at its position: greedy) and the position's top tokens in order,
// and they equal a teacher-forced scoring of the same tokens (Score,
// decoded a token at a time as the reply was).
func TestLogprobsAreTheModels(t *testing.T) {
	e, err := Load(testmodel.Dir(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 256, PromptCacheBytes: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	prompt := []int32{9707, 11, 1246, 525}
	req := Request{PromptIDs: prompt, MaxTokens: 8, IgnoreStop: true}
	plain, _, _ := collect(t, e.Generate(context.Background(), req))
	req.Logprobs, req.TopLogprobs = true, 3
	var ids []int32
	var lps []*TokenLogprobs
	for ev := range e.Generate(context.Background(), req) {
		switch ev.Kind {
		case EventToken:
			if ev.Token >= 0 {
				ids, lps = append(ids, ev.Token), append(lps, ev.Logprobs)
			}
		case EventError:
			t.Fatal(ev.Err)
		}
	}
	if !slices.Equal(ids, plain) {
		t.Fatalf("with logprobs %v, without %v", ids, plain)
	}
	scored, err := e.Score(append(slices.Clone(prompt), ids...), ScoreOptions{Top: 3, Prefill: len(prompt)})
	if err != nil {
		t.Fatal(err)
	}
	for i, lp := range lps {
		if lp == nil || len(lp.Top) != 3 {
			t.Fatalf("token %d: logprobs %+v, want the token's and 3 likeliest", i, lp)
		}
		if lp.Top[0].Token != ids[i] || lp.Logprob != lp.Top[0].Logprob || lp.Logprob > 0 {
			t.Errorf("token %d (%d): logprob %g, top %+v: a greedy token is its position's likeliest", i, ids[i], lp.Logprob, lp.Top)
		}
		if lp.Top[1].Logprob > lp.Top[0].Logprob || lp.Top[2].Logprob > lp.Top[1].Logprob || len(lp.Top[0].Bytes) == 0 && lp.Top[0].Token < 151643 {
			t.Errorf("token %d: top not in order or without bytes: %+v", i, lp.Top)
		}
		pos := scored[len(prompt)-1+i] // the logits after the token before it
		for j, want := range pos.TopIDs {
			got := lp.Top[j]
			if int(got.Token) != want || math.Abs(got.Logprob-(float64(pos.TopLogits[j])-pos.LogSumExp)) > 1e-4 {
				t.Errorf("token %d, top %d: %d %g; Score gives %d %g", i, j, got.Token, got.Logprob, want, float64(pos.TopLogits[j])-pos.LogSumExp)
			}
		}
	}
	refused := false
	for ev := range e.Generate(context.Background(), Request{PromptIDs: prompt, MaxTokens: 2, TopLogprobs: 2}) {
		refused = refused || ev.Kind == EventError
	}
	if !refused {
		t.Error("top logprobs without logprobs were accepted")
	}
}
