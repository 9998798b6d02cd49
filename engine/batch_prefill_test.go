package engine

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"bagel/internal/testmodel"
	"bagel/ops"
	"bagel/qwen"
	"bagel/switches"
	"bagel/tokenizer"
)

// TestPromptsTogetherEqualAlone: prompt chunks of several sequences run in
// one forward (ForwardPrompts) leave each cache as its own Forward of its
// chunk does, bit for bit: the next step's logits of each are those of a
// cache that took its chunks alone, chunk after chunk, the sequences at
// different positions, in a pool's slots and in caches of their own; and,
// with flash attention off, in a context long enough that a prompt's
// attention splits its keys (each sequence's partials sized for its own
// rows). On the CPU here and on each GPU backend in
// TestGPUPromptsTogetherEqualAlone.
func TestPromptsTogetherEqualAlone(t *testing.T) {
	testPromptsTogether(t, "cpu", 256)
	defer switches.Reset(SwitchPrefillFlashAttention)
	if err := switches.Set(SwitchPrefillFlashAttention, false); err != nil {
		t.Fatal(err)
	}
	testPromptsTogether(t, "cpu", 8192)
}

func TestGPUPromptsTogetherEqualAlone(t *testing.T) {
	for _, name := range gpuBackends() {
		t.Run(name, func(t *testing.T) { testPromptsTogether(t, name, 256) })
	}
}

func testPromptsTogether(t *testing.T, backendName string, capacity int) {
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e := batchEngine(t, name, backendName)
		err := e.loop.do(func() error {
			defer e.scratch.Reset()
			pool, err := e.model.NewCachePool(e.ctx, 3, capacity)
			if err != nil {
				return err
			}
			defer pool.Free(e.ctx)
			own, err := e.model.NewCache(e.ctx, capacity)
			if err != nil {
				return err
			}
			defer own.Free(e.ctx)
			together := []*qwen.Cache{pool.Caches()[1], own, pool.Caches()[2]}
			var alone []*qwen.Cache
			for range together {
				k, err := e.model.NewCache(e.ctx, capacity)
				if err != nil {
					return err
				}
				defer k.Free(e.ctx)
				alone = append(alone, k)
			}
			// Different positions: a first chunk of 0, 9 and 20 tokens alone.
			for i, n := range []int{0, 9, 20} {
				for _, k := range []*qwen.Cache{together[i], alone[i]} {
					if n > 0 {
						if _, err := e.model.Forward(e.ctx, k, longPrompt(i, n), false); err != nil {
							return err
						}
					}
				}
			}
			min := e.promptMin // 72 on the MoE (short prompts on the tiled GEMVs), 32 on the dense model
			for round, lengths := range [][]int{{min + 8, min, min + 25}, {min + 1, min + 38, min + 1}} {
				chunks := make([][]int32, len(lengths))
				for i, n := range lengths {
					chunks[i] = longPrompt(10*round+i+3, n)
					if _, err := e.model.Forward(e.ctx, alone[i], chunks[i], false); err != nil {
						return err
					}
				}
				if _, err := e.model.ForwardPrompts(e.ctx, together, chunks); err != nil {
					return err
				}
				for i := range together {
					if together[i].Offset != alone[i].Offset {
						return fmt.Errorf("round %d: sequence %d at %d, alone at %d", round, i, together[i].Offset, alone[i].Offset)
					}
				}
			}
			for i := range together {
				var got [2][]byte
				for j, k := range []*qwen.Cache{together[i], alone[i]} {
					logits, err := e.model.Forward(e.ctx, k, []int32{int32(40 + i)}, false)
					if err != nil {
						return err
					}
					if got[j], err = ops.ReadBytes(e.ctx, logits); err != nil {
						return err
					}
				}
				if !bytes.Equal(got[0], got[1]) {
					return fmt.Errorf("sequence %d: the step after its chunks together differs from the step after them alone", i)
				}
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s on %s, %d tokens: %v", name, backendName, capacity, err)
		}
		e.Close()
	}
}

// TestForwardPromptsRefusals: a chunk the prompt path would not take alone,
// two chunks for one cache, a chunk past its context and a token outside the
// vocabulary are refused with what is wrong, before any work; so are short
// chunks a batched step's rows would not take (ForwardPromptRows).
func TestForwardPromptsRefusals(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	err := e.loop.do(func() error {
		defer e.scratch.Reset()
		a, err := e.model.NewCache(e.ctx, 2*e.promptMin)
		if err != nil {
			return err
		}
		defer a.Free(e.ctx)
		b, err := e.model.NewCache(e.ctx, 2*e.promptMin)
		if err != nil {
			return err
		}
		defer b.Free(e.ctx)
		long := longPrompt(1, e.promptMin+8)
		bad := slices.Clone(long)
		bad[3] = int32(e.Config.VocabSize)
		for _, c := range []struct {
			caches []*qwen.Cache
			chunks [][]int32
			want   string
		}{
			{[]*qwen.Cache{a, b}, [][]int32{long, long[:e.promptMin-1]}, "takes the step kernels alone"},
			{[]*qwen.Cache{a, a}, [][]int32{long, long}, "shares its cache"},
			{[]*qwen.Cache{a, b}, [][]int32{long, longPrompt(2, 2*e.promptMin+1)}, "context full"},
			{[]*qwen.Cache{a, b}, [][]int32{long, bad}, "outside the vocabulary"},
			{[]*qwen.Cache{a}, nil, "0 chunks for 1 sequences"},
		} {
			_, err := e.model.ForwardPrompts(e.ctx, c.caches, c.chunks)
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
				t.Errorf("want an error with %q, got %v", c.want, err)
			}
		}
		// A prompt's short chunks as a step's rows: more than a step's rows,
		// one cache twice, a token outside the vocabulary, a count amiss.
		for _, c := range []struct {
			caches []*qwen.Cache
			chunks [][]int32
			want   string
		}{
			{[]*qwen.Cache{a, b}, [][]int32{long[:4], long[:qwen.RecordRows+1]}, "want 1 to 16"},
			{[]*qwen.Cache{a, b}, [][]int32{long[:9], long[:8]}, "17 tokens of 2 sequences, at most 16"},
			{[]*qwen.Cache{a, a}, [][]int32{long[:4], long[:4]}, "shares its cache"},
			{[]*qwen.Cache{a, b}, [][]int32{long[:4], bad[:5]}, "outside the vocabulary"},
			{[]*qwen.Cache{a}, nil, "0 token lists for 1 sequences"},
		} {
			_, err := e.model.ForwardPromptRows(e.ctx, c.caches, c.chunks)
			if err == nil || !bytes.Contains([]byte(err.Error()), []byte(c.want)) {
				t.Errorf("rows: want an error with %q, got %v", c.want, err)
			}
		}
		if a.Offset != 0 || b.Offset != 0 {
			t.Errorf("a refused forward moved the caches to %d and %d", a.Offset, b.Offset)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestBatchPromptsTogetherEqualSolo: replies that join a batch together
// prefill their prompts in shared forwards (fewer launches than with the
// switch off, where each chunk is a forward of its own), and each greedy
// and sampled reply is still its reply alone, token for token: prompts of
// 40 to 110 tokens in chunks of 48 where the prompt path starts at 32
// tokens (the dense model; the MoE with the tiled GEMVs on), 80 to 190 in
// chunks of 88 where it starts at 72 (the MoE's), some in several
// chunks beside shorter ones, their last chunks short of the prompt path
// (alone, then).
func TestBatchPromptsTogetherEqualSolo(t *testing.T) {
	withTiledGEMV(t, "batch", func(t *testing.T) { testBatchPromptsTogether(t, "cpu") })
}

func TestGPUBatchPromptsTogetherEqualSolo(t *testing.T) {
	for _, name := range gpuBackends() {
		t.Run(name, func(t *testing.T) { testBatchPromptsTogether(t, name) })
	}
}

// togetherAndApart runs reqs as a batch with the prompts-together switch on,
// then off (after a first batch that allocates the pool), and returns each
// run's replies and kernel launches.
func togetherAndApart(t *testing.T, e *Engine, reqs []Request) (got [2][][]int32, dispatches [2]int64) {
	t.Helper()
	runBatch(t, e, reqs, 0) // the pool's first allocation and what else a first batch launches
	for j, on := range []bool{true, false} {
		if err := switches.Set(SwitchPromptsTogether, on); err != nil {
			t.Fatal(err)
		}
		before := e.Counters().Dispatches
		got[j], _ = runBatch(t, e, reqs, 0)
		dispatches[j] = e.Counters().Dispatches - before
	}
	return got, dispatches
}

func testBatchPromptsTogether(t *testing.T, backendName string) {
	defer switches.Reset(SwitchPromptsTogether)
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e := batchEngineWith(t, name, backendName, 256)
		chunk := e.promptMin + 16
		var reqs []Request
		for i, n := range []int{chunk - 8, 2*chunk + 14, chunk + 19, 2*chunk + 3} {
			req := Request{PromptIDs: longPrompt(i, n), MaxTokens: 6, IgnoreStop: true, PrefillChunk: chunk, NoPromptCache: true}
			if i == 2 {
				req.Sampling = Sampling{Temperature: 0.8, TopK: 20, TopP: 1, Seed: 7}
			}
			reqs = append(reqs, req)
		}
		got, dispatches := togetherAndApart(t, e, reqs)
		t.Logf("%s on %s: %d kernels with the prompts together, %d apart", name, backendName, dispatches[0], dispatches[1])
		if dispatches[0] >= dispatches[1] {
			t.Errorf("%s: the batch launched %d kernels with its prompts together, %d apart", name, dispatches[0], dispatches[1])
		}
		for i, req := range reqs {
			want := solo(t, e, req)
			for j, mode := range []string{"together", "apart"} {
				if !slices.Equal(got[j][i], want) {
					t.Errorf("%s on %s, prompts %s: reply %d %v, alone %v", name, backendName, mode, i, got[j][i], want)
				}
			}
		}
		e.Close()
	}
}

// TestPromptGroupChoices: the next prefill forward takes the chunk of the
// sequence with the least prompt left, and beside it, least prompt first,
// the next chunks of the others that take the prompt path alone, as many as
// fit a prefill chunk's tokens; not a chunk under the prompt path, one
// holding an image, one past the budget, nor, with the switch off, any.
// A sequence cancelled while it prefills ends there.
func TestPromptGroupChoices(t *testing.T) {
	e := batchEngine(t, "tiny-moe", "cpu")
	defer e.Close()
	defer switches.Reset(SwitchPromptsTogether)
	min := e.promptMin
	e.prefillChunk = 2*min + 40
	seq := func(prompt, prefilled int) *batchSeq {
		s := newBatchSeq(context.Background(), e, Request{})
		t.Cleanup(s.cancel) // its stream's goroutine
		s.prompt, s.prefill = longPrompt(prompt, prompt), prefilled
		return s
	}
	short := seq(min, 0)    // a chunk of min−1 tokens: the step kernels
	a := seq(min+6, 0)      // min+5
	b := seq(min+21, 0)     // min+20
	image := seq(min+13, 0) // an image in its next chunk: without it, it would take b's place
	image.images = &imagePrompt{images: []placedImage{{at: 4, img: &Image{Tokens: 8}}}}
	long := seq(1000, 1000-(min+40)) // its chunk of min+39 tokens is past the budget beside a and b
	done := seq(50, 49)              // its prompt in but its last token
	cancelled := seq(min+10, 0)
	cancelled.cancel()
	all := []*batchSeq{long, image, b, done, short, a, cancelled}
	ends := func(group []promptChunk) []string {
		var out []string
		for _, pc := range group {
			out = append(out, fmt.Sprintf("%d:%d-%d", len(pc.s.prompt), pc.s.prefill, pc.end))
		}
		return out
	}
	got := ends(e.promptGroup(all))
	want := []string{fmt.Sprintf("%d:0-%d", min, min-1)} // the least prompt left goes alone: under the prompt path
	if !slices.Equal(got, want) {
		t.Errorf("with the shortest under the prompt path: %v, want %v", got, want)
	}
	if !cancelled.ended {
		t.Error("a cancelled sequence did not end")
	}
	short.ended = true
	got = ends(e.promptGroup(all))
	want = []string{fmt.Sprintf("%d:0-%d", min+6, min+5), fmt.Sprintf("%d:0-%d", min+21, min+20)}
	if !slices.Equal(got, want) {
		t.Errorf("together: %v, want %v (the image's chunk and the long one's past the budget stay out)", got, want)
	}
	if err := switches.Set(SwitchPromptsTogether, false); err != nil {
		t.Fatal(err)
	}
	if got = ends(e.promptGroup(all)); len(got) != 1 {
		t.Errorf("with the switch off: %v, want one chunk", got)
	}
	// Chunks under the prompt path go together as a step's rows, least
	// prompt first, up to qwen.MaxBatch rows: 5 and 6, not another 6 nor
	// 8 beside them, nor a chunk of more rows than a step takes.
	if err := switches.Set(SwitchPromptsTogether, true); err != nil {
		t.Fatal(err)
	}
	rows := []*batchSeq{seq(9, 0), seq(6, 0), seq(40, 33), seq(7, 0), seq(min, 0)}
	got = ends(e.promptGroup(rows))
	want = []string{"6:0-5", "40:33-39"}
	if !slices.Equal(got, want) {
		t.Errorf("short chunks: %v, want %v", got, want)
	}
}

// TestPromptsTogetherKeepTheHead: with the MTP head drafting, prompts run
// together leave each sequence's head cache as its own Forward leaves it:
// the head's guesses after them, and the logits of each guess, are bit for
// bit those after the chunks alone (the demo model's head, on the CPU), a
// first chunk at position 0 and a second after it; chunks on the prompt
// path together (ForwardPrompts), and short ones as a batched step's rows
// (ForwardPromptRows).
func TestPromptsTogetherKeepTheHead(t *testing.T) {
	withDemoHead(t, func(e *Engine) error {
		min := e.promptMin
		if err := headAfterChunks(e, [][]int{{min + 8, min + 25, min}, {min + 1, min, min + 38}}, func(caches []*qwen.Cache, chunks [][]int32) error {
			_, err := e.model.ForwardPrompts(e.ctx, caches, chunks)
			return err
		}); err != nil {
			return fmt.Errorf("prompts together: %w", err)
		}
		if err := headAfterChunks(e, [][]int{{5, 1, 9}, {3, 7, 2}}, func(caches []*qwen.Cache, chunks [][]int32) error {
			_, err := e.model.ForwardPromptRows(e.ctx, caches, chunks)
			return err
		}); err != nil {
			return fmt.Errorf("short chunks as rows: %w", err)
		}
		return nil
	})
}

// headAfterChunks runs rounds of chunks (their lengths) through
// runTogether for three sequences and alone through Forward for three others, then
// compares each pair's MTP guesses and their logits.
func headAfterChunks(e *Engine, rounds [][]int, runTogether func([]*qwen.Cache, [][]int32) error) error {
	defer e.scratch.Reset()
	var together, alone []*qwen.Cache
	for range 3 {
		for _, list := range []*[]*qwen.Cache{&together, &alone} {
			k, err := e.model.NewCache(e.ctx, 256)
			if err != nil {
				return err
			}
			defer k.Free(e.ctx)
			*list = append(*list, k)
		}
	}
	for round, lengths := range rounds {
		chunks := make([][]int32, len(lengths))
		for i, n := range lengths {
			chunks[i] = longPrompt(10*round+i, n)
			if _, err := e.model.Forward(e.ctx, alone[i], chunks[i], false); err != nil {
				return err
			}
		}
		if err := runTogether(together, chunks); err != nil {
			return err
		}
	}
	for i := range together {
		var guesses [2][]int32
		var logits [2][]byte
		for j, k := range []*qwen.Cache{together[i], alone[i]} {
			if !e.model.MTPReady(k) {
				return fmt.Errorf("sequence %d: the head is out of step (%s)", i, []string{"together", "alone"}[j])
			}
			var err error
			guesses[j], err = e.model.MTPDraft(e.ctx, k, 42, 3, func(l ops.Tensor) (int32, error) {
				raw, err := ops.ReadBytes(e.ctx, l)
				logits[j] = append(logits[j], raw...)
				if err != nil {
					return 0, err
				}
				rows, err := e.readTopK(l, 1, 1)
				if err != nil {
					return 0, err
				}
				return rows[0].ids[0], nil
			})
			if err != nil {
				return err
			}
		}
		if !slices.Equal(guesses[0], guesses[1]) || !bytes.Equal(logits[0], logits[1]) {
			return fmt.Errorf("sequence %d: the head guesses %v after the chunks together, %v after them alone (logits equal: %v)",
				i, guesses[0], guesses[1], bytes.Equal(logits[0], logits[1]))
		}
	}
	return nil
}

// TestRepliesStartThePromptPathSooner: a model loaded for several replies
// takes the prompt path from ops.RepliesPromptMinTokens (switch
// short-prompts-together), so that replies whose 20-token prompts arrive
// together prefill in one forward, each reply still its solo reply; with the
// switch off the prompt path starts where a lone model's does.
func TestRepliesStartThePromptPathSooner(t *testing.T) {
	defer switches.Reset(SwitchShortPromptsTogether)
	for _, on := range []bool{true, false} {
		if err := switches.Set(SwitchShortPromptsTogether, on); err != nil {
			t.Fatal(err)
		}
		e, err := Load(testmodel.Weights(t, "tiny-moe"), Options{Backend: "cpu", ContextLength: 96, PromptCacheBytes: -1, Replies: 4})
		if err != nil {
			t.Fatal(err)
		}
		want := ops.PromptMinTokens
		if on {
			want = ops.RepliesPromptMinTokens
		}
		if e.promptMin != want {
			t.Errorf("short-prompts-together %v: the prompt path starts at %d tokens, want %d", on, e.promptMin, want)
		}
		if on {
			var reqs []Request
			for i := range 3 {
				reqs = append(reqs, Request{PromptIDs: longPrompt(i, 21), MaxTokens: 4, IgnoreStop: true})
			}
			var waiting []*batchSeq
			for _, req := range reqs {
				s := newBatchSeq(context.Background(), e, req)
				t.Cleanup(s.cancel) // its stream's goroutine
				s.prompt = req.PromptIDs
				waiting = append(waiting, s)
			}
			if group := e.promptGroup(waiting); len(group) != len(reqs) {
				t.Errorf("%d of %d 20-token chunks go together", len(group), len(reqs))
			}
			got, _ := runBatch(t, e, reqs, 64)
			for i, req := range reqs {
				if want := solo(t, e, req); !slices.Equal(got[i], want) {
					t.Errorf("reply %d: batched %v, alone %v", i, got[i], want)
				}
			}
		}
		e.Close()
	}
}

// TestShortChunksTogetherEqualSolo: chunks under the prompt path of several
// replies go together as the rows of one batched step (rowsTogether): four
// chat replies arriving together, each prompt a short conversation whose
// few tokens after its end (where its state is kept for the next turn) and
// before the reply are a chunk of their own, each reply (three greedy, one
// seeded sampled) its solo reply token for token, with the tiled GEMVs on
// and off; with the switch off the same batch launches more kernels (but on
// a model loaded for one reply on CUDA, whose short chunks take the tiled
// GEMVs alone).
func TestShortChunksTogetherEqualSolo(t *testing.T) {
	withTiledGEMV(t, "batch", func(t *testing.T) { testShortChunksTogether(t, "cpu") })
}

func TestGPUShortChunksTogetherEqualSolo(t *testing.T) {
	for _, name := range gpuBackends() {
		withTiledGEMV(t, name, func(t *testing.T) { testShortChunksTogether(t, name) })
	}
}

func testShortChunksTogether(t *testing.T, backendName string) {
	defer switches.Reset(SwitchPromptsTogether)
	for _, name := range []string{"tiny-moe", "tiny-dense"} {
		e := loadOn(t, testmodel.Dir(t, name), Options{Backend: backendName, ContextLength: 128, PromptCacheBytes: -1})
		var reqs []Request
		for i, q := range []string{"Hi!", "What is a bagel?", "Why?", "Name an oven."} {
			req := Request{Messages: []tokenizer.Message{{Role: "user", Content: q}}, MaxTokens: 5, IgnoreStop: true}
			if i == 1 {
				req.Sampling = Sampling{Temperature: 0.8, TopK: 20, TopP: 1, Seed: 7}
			}
			prompt, err := e.PromptTokens(req)
			if err != nil {
				t.Fatal(err)
			}
			if end := e.conversationEnd(req, prompt); end >= len(prompt)-1 || len(prompt) > e.promptMin {
				t.Fatalf("%s: prompt %d of %d tokens, its conversation ending at %d: want a tail and no chunk on the prompt path", name, i, len(prompt), end)
			}
			reqs = append(reqs, req)
		}
		got, dispatches := togetherAndApart(t, e, reqs)
		t.Logf("%s on %s: %d kernels with the short chunks together, %d apart", name, backendName, dispatches[0], dispatches[1])
		// A model loaded for one reply on CUDA runs such chunks alone on the
		// tiled GEMVs (short-prompt-tiled), so they stay apart there.
		if apart := e.movesToTiled(2); dispatches[0] > dispatches[1] || apart != (dispatches[0] == dispatches[1]) {
			t.Errorf("%s: the batch launched %d kernels with its short chunks together, %d apart (want as many: %v)", name, dispatches[0], dispatches[1], apart)
		}
		for i, req := range reqs {
			want, _, _ := collect(t, e.Generate(context.Background(), req)) // its chunks cut where the batch cuts them
			for j, mode := range []string{"together", "apart"} {
				if !slices.Equal(got[j][i], want) {
					t.Errorf("%s on %s, short chunks %s: reply %d %v, alone %v", name, backendName, mode, i, got[j][i], want)
				}
			}
		}
		e.Close()
	}
}
