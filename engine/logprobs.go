package engine

import "fmt"

// MaxTopLogprobs bounds Request.TopLogprobs (OpenAI's limit).
const MaxTopLogprobs = 20

// TokenLogprobs is a reply token's log-probability under the model — the
// untempered distribution of its position, before any penalty or filter —
// and the likeliest tokens there (Request.TopLogprobs of them, likeliest
// first).
type TokenLogprobs struct {
	TokenLogprob // the token picked
	Top          []TokenLogprob
}

// TokenLogprob is one token at a position: its id, the bytes it stands for
// (nil without a tokenizer) and its log-probability.
type TokenLogprob struct {
	Token   int32
	Bytes   []byte
	Logprob float64
}

// checkLogprobs refuses a top count outside its range, or asked without
// logprobs.
func checkLogprobs(req Request) error {
	switch {
	case req.TopLogprobs < 0 || req.TopLogprobs > MaxTopLogprobs:
		return fmt.Errorf("top logprobs must be 0 to %d, got %d", MaxTopLogprobs, req.TopLogprobs)
	case req.TopLogprobs > 0 && !req.Logprobs:
		return fmt.Errorf("top logprobs need logprobs on")
	}
	return nil
}

// logprobsOf reads a position's raw logits (before the sampler touches
// them): the log-sum-exp and the top tokens now, the chosen token's entry
// once it is picked (chosen).
func (e *Engine) logprobsOf(logits []float32, top int) (lse float64, entries []TokenLogprob) {
	lse = LogSumExp(logits)
	for _, id := range TopK(logits, top) {
		entries = append(entries, e.tokenLogprob(int32(id), float64(logits[id])-lse))
	}
	return lse, entries
}

func (e *Engine) tokenLogprob(id int32, logprob float64) TokenLogprob {
	t := TokenLogprob{Token: id, Logprob: logprob}
	if e.tok != nil {
		t.Bytes = e.tok.TokenBytes(id)
	}
	return t
}
