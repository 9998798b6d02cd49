package engine

import (
	"context"
	"math"
	"slices"
	"sync"
	"testing"

	"bagel/internal/testmodel"
	"bagel/switches"
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
	ids, lps := logprobsOf(t, e.Generate(context.Background(), req))
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

// logprobsOf is a stream's tokens and their logprobs entries.
func logprobsOf(t *testing.T, events <-chan Event) (ids []int32, lps []*TokenLogprobs) {
	t.Helper()
	for ev := range events {
		switch ev.Kind {
		case EventToken:
			if ev.Token >= 0 {
				ids, lps = append(ids, ev.Token), append(lps, ev.Logprobs)
			}
		case EventError:
			t.Error(ev.Err)
		}
	}
	return ids, lps
}

// TestBatchLogprobsEqualSolo: requests with logprobs step in a batch beside
// others (a greedy one, one sampled on the device with drafts on): each
// reply and each of its tokens' entries (the token's log-probability, the
// likeliest tokens of its position) are those it gets alone, greedy and
// sampled, with a repetition penalty and an additive one; through Parallel
// they step in its batches (its count of tokens holds theirs).
func TestBatchLogprobsEqualSolo(t *testing.T) {
	defer switches.Reset(SwitchSpeculative)
	if err := switches.Set(SwitchSpeculative, true); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		t.Run(name, func(t *testing.T) {
			e := batchEngine(t, name, "cpu")
			defer e.Close()
			reqs := []Request{
				{PromptIDs: batchPrompt(0), MaxTokens: 9, IgnoreStop: true, Logprobs: true, TopLogprobs: 3},
				{PromptIDs: batchPrompt(1), MaxTokens: 12, IgnoreStop: true, Logprobs: true, TopLogprobs: 2,
					Sampling: Sampling{Temperature: 0.8, TopK: 20, TopP: 1, RepetitionPenalty: 1.2, Seed: 7}},
				{PromptIDs: batchPrompt(2), MaxTokens: 10, IgnoreStop: true},
				{PromptIDs: batchPrompt(3), MaxTokens: 8, IgnoreStop: true, Logprobs: true,
					Sampling: Sampling{Temperature: 1, TopP: 0.9, PresencePenalty: 0.5, Seed: 8}},
				{PromptIDs: batchPrompt(2), MaxTokens: 16, IgnoreStop: true, Logprobs: true, TopLogprobs: 1,
					Sampling: Sampling{PresencePenalty: -2}}, // a greedy reply drawn to repeat itself: its entries are of the raw logits
				{PromptIDs: batchPrompt(0), MaxTokens: 11, IgnoreStop: true, Sampling: Sampling{Temperature: 0.7, TopK: 8, TopP: 1, Seed: 9}},
			}
			type reply struct {
				ids []int32
				lps []*TokenLogprobs
			}
			alone := make([]reply, len(reqs))
			for i, req := range reqs {
				req.NoPromptCache = true
				alone[i].ids, alone[i].lps = logprobsOf(t, e.Generate(context.Background(), req))
			}
			check := func(how string, i int, got reply) {
				t.Helper()
				if !slices.Equal(got.ids, alone[i].ids) {
					t.Errorf("%s, reply %d: %v, alone %v", how, i, got.ids, alone[i].ids)
					return
				}
				for j, lp := range got.lps {
					want := alone[i].lps[j]
					if (lp == nil) != (want == nil) || lp != nil && (lp.TokenLogprob.Token != want.TokenLogprob.Token ||
						lp.Logprob != want.Logprob || !slices.EqualFunc(lp.Top, want.Top, sameLogprob)) {
						t.Errorf("%s, reply %d, token %d: %+v, alone %+v", how, i, j, lp, want)
					}
				}
				if reqs[i].Logprobs && (len(got.lps) == 0 || got.lps[0] == nil || len(got.lps[0].Top) != reqs[i].TopLogprobs) {
					t.Errorf("%s, reply %d: no entries", how, i)
				}
			}
			streams, err := e.GenerateBatch(context.Background(), reqs, 96)
			if err != nil {
				t.Fatal(err)
			}
			got := make([]reply, len(reqs))
			var wg sync.WaitGroup
			for i, s := range streams {
				wg.Go(func() { got[i].ids, got[i].lps = logprobsOf(t, s.Events) })
			}
			wg.Wait()
			for i := range reqs {
				check("batch", i, got[i])
			}
			p, err := e.Parallel(len(reqs), 96)
			if err != nil {
				t.Fatal(err)
			}
			sent := 0
			for i, req := range reqs {
				wg.Go(func() { got[i].ids, got[i].lps = logprobsOf(t, p.Generate(context.Background(), req)) })
				sent += req.MaxTokens
			}
			wg.Wait()
			for i := range reqs {
				check("parallel", i, got[i])
			}
			if p.Tokens() != int64(sent) {
				t.Errorf("Parallel's batches sent %d tokens of the %d: a request left the batch", p.Tokens(), sent)
			}
		})
	}
}

func sameLogprob(a, b TokenLogprob) bool {
	return a.Token == b.Token && a.Logprob == b.Logprob && slices.Equal(a.Bytes, b.Bytes)
}
