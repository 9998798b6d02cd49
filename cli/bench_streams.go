package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"slices"
	"time"

	"bagel/drafter"
	"bagel/engine"
)

// streamsBench is several greedy replies decoded together (bench --streams,
// engine.GenerateBatch): for each count, the replies' summed rate, each
// reply's own, and their first tokens' wait; then the stall one long prompt
// prefilled beside the other replies puts between their tokens.
type streamsBench struct {
	PromptTokens int          `json:"prompt_tokens"`
	Tokens       int          `json:"tokens"` // per reply
	Runs         int          `json:"runs"`
	SoloTokPerS  float64      `json:"solo_tok_per_s"` // one reply through Generate (its decode plan: device pick, pipeline)
	Rows         []streamsRow `json:"rows"`
	// Drafts is the oracle's guesses a reply and step of the drafted rows
	// (--stream-drafts; 0: none), in trees of TreeWidth branches where set
	// (--stream-tree-width).
	Drafts    int `json:"drafts,omitempty"`
	TreeWidth int `json:"tree_width,omitempty"`
	// Sampled says whether the sampled rows ran (--stream-sampled).
	Sampled bool      `json:"sampled,omitempty"`
	Stall   *stallRow `json:"stall,omitempty"`
	Error   string    `json:"error,omitempty"`
}

// streamsRow is one count of replies (the median run by aggregate rate).
type streamsRow struct {
	Streams      int     `json:"streams"`
	AggregateTPS float64 `json:"aggregate_tok_per_s"` // every reply's tokens over the span all decoded
	// SteadyTPS is every reply's tokens while all of them decode: from the
	// last reply's first token to the first reply's last (AggregateTPS
	// counts the others' prefills and the batch's thinning end too).
	SteadyTPS    float64 `json:"steady_tok_per_s,omitempty"`
	PerStreamTPS float64 `json:"per_stream_tok_per_s"`
	SlowestTPS   float64 `json:"slowest_stream_tok_per_s"`
	TTFTms       float64 `json:"ttft_ms"` // the median reply's first token, all prompts sent at once
	// Per step of the batch, as the median reply saw its steps: the
	// device's time (where it measures it) and its dispatches.
	GPUmsPerStep      float64 `json:"gpu_ms_per_step,omitempty"`
	DispatchesPerStep float64 `json:"dispatches_per_step"`
	// The same replies again, their guesses verified in the batch's steps
	// (--stream-drafts): summed and median rate, tokens a step a reply.
	DraftedTPS          float64 `json:"drafted_aggregate_tok_per_s,omitempty"`
	DraftedPerStreamTPS float64 `json:"drafted_per_stream_tok_per_s,omitempty"`
	TokensPerStep       float64 `json:"drafted_tokens_per_step,omitempty"`
	// DraftedError says a drafted reply differed from its plain one (greedy
	// speculative decoding must give the plain tokens): the row's drafted
	// rates are not shown, its plain ones and the other rows are.
	DraftedError string `json:"drafted_error,omitempty"`
	// The same prompts' replies sampled (--stream-sampled): summed and
	// median rate.
	SampledTPS          float64 `json:"sampled_aggregate_tok_per_s,omitempty"`
	SampledPerStreamTPS float64 `json:"sampled_per_stream_tok_per_s,omitempty"`
}

// stallRow is a long prompt joining replies that decode.
type stallRow struct {
	Streams      int     `json:"streams"` // the decoding replies beside the long prompt
	PromptTokens int     `json:"prompt_tokens"`
	Chunk        int     `json:"chunk"`
	MedianGapMs  float64 `json:"median_gap_ms"` // between a decoding reply's tokens, before the long prompt's first token
	MaxGapMs     float64 `json:"max_gap_ms"`
}

// streamRun is what one reply of a batch did, as its reader saw it.
type streamRun struct {
	arrivals []time.Time
	ids      []int32
	stats    engine.Stats
}

// streams measures counts of replies of b.tokens tokens after prompts of
// promptLen tokens.
// streamDraft is the drafted rows' oracle: its guesses a reply and step
// (0: no drafted rows), in trees of width branches where width ≥ 2.
type streamDraft struct{ drafts, width int }

func (b *bench) streams(counts []int, promptLen, stallPrompt int, draft streamDraft, sampled bool) *streamsBench {
	r := &streamsBench{PromptTokens: promptLen, Tokens: b.tokens, Runs: b.runs, Drafts: draft.drafts, TreeWidth: draft.width, Sampled: sampled}
	solo := make([]float64, b.runs)
	for i := range solo {
		st, err := b.once(promptLen, b.tokens, engine.Sampling{})
		if err != nil {
			r.Error = err.Error()
			return r
		}
		solo[i] = st.DecodeTokensPerSec
	}
	slices.Sort(solo)
	r.SoloTokPerS = solo[len(solo)/2]
	for _, n := range counts {
		b.progress(fmt.Sprintf("%d replies decoded together", n))
		var rows []streamsRow
		for range b.runs {
			prompts := make([][]int32, n)
			for i := range prompts {
				prompts[i] = b.randomPrompt(promptLen)
			}
			reqs := b.streamRequests(prompts)
			runs, err := b.batch(reqs, promptLen+b.tokens+8)
			if err != nil {
				r.Error = err.Error()
				return r
			}
			row := streamsRowOf(runs)
			if draft.drafts > 0 {
				if err := b.draftedRow(&row, reqs, runs, draft, promptLen+b.tokens+8); err != nil {
					r.Error = err.Error()
					return r
				}
			}
			if sampled {
				if err := b.sampledRow(&row, reqs, promptLen+b.tokens+8); err != nil {
					r.Error = err.Error()
					return r
				}
			}
			rows = append(rows, row)
		}
		slices.SortFunc(rows, func(x, y streamsRow) int { return cmp.Compare(x.AggregateTPS, y.AggregateTPS) })
		r.Rows = append(r.Rows, rows[len(rows)/2])
	}
	if stallPrompt > 0 && len(counts) > 0 {
		b.progress(fmt.Sprintf("a %d-token prompt joining %d replies", stallPrompt, slices.Max(counts)-1))
		stall, err := b.stall(max(1, slices.Max(counts)-1), stallPrompt)
		if err != nil {
			r.Error = err.Error()
			return r
		}
		r.Stall = stall
	}
	return r
}

// streamRequests are greedy replies of b.tokens tokens to prompts.
func (b *bench) streamRequests(prompts [][]int32) []engine.Request {
	reqs := make([]engine.Request, len(prompts))
	for i, p := range prompts {
		reqs[i] = engine.Request{PromptIDs: p, MaxTokens: b.tokens, IgnoreStop: true}
	}
	return reqs
}

// draftedRow runs reqs again with speculative decoding, the oracle guessing
// up to draft.drafts tokens of each reply's known continuation (runs', the
// same replies decoded plainly) a step, in trees of draft.width branches
// where set, and puts the drafted rates in row.
func (b *bench) draftedRow(row *streamsRow, reqs []engine.Request, runs []streamRun, draft streamDraft, n int) error {
	was := engine.SwitchOn(engine.SwitchSpeculative)
	defer engine.SetSwitch(engine.SwitchSpeculative, was)
	if err := engine.SetSwitch(engine.SwitchSpeculative, true); err != nil {
		return err
	}
	drafted := slices.Clone(reqs)
	for i := range drafted {
		oracle := drafter.OracleDrafter{Continuation: runs[i].ids, PromptLen: len(reqs[i].PromptIDs)}
		drafted[i].Drafter, drafted[i].DraftLength = oracle, draft.drafts
		if draft.width >= 2 {
			drafted[i].Drafter = drafter.OracleTreeDrafter{Oracle: oracle, Width: draft.width}
		}
	}
	again, err := b.batch(drafted, n)
	if err != nil {
		return err
	}
	for i, r := range again {
		if !slices.Equal(r.ids, runs[i].ids) {
			row.DraftedError = fmt.Sprintf("a drafted reply differs from its plain reply (reply %d of %d, from token %d)",
				i, len(runs), firstDifference(r.ids, runs[i].ids))
			return nil
		}
	}
	d := streamsRowOf(again)
	row.DraftedTPS, row.DraftedPerStreamTPS = d.AggregateTPS, d.PerStreamTPS
	var steps []float64
	for _, r := range again {
		if st := r.stats; st.GeneratedTokens > st.DraftAccepted {
			steps = append(steps, float64(st.GeneratedTokens)/float64(st.GeneratedTokens-st.DraftAccepted))
		}
	}
	if len(steps) > 0 {
		slices.Sort(steps)
		row.TokensPerStep = steps[len(steps)/2]
	}
	return nil
}

// firstDifference is the first index where a and b differ (the shorter's
// length where one is the other's start).
func firstDifference(a, b []int32) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

// sampledRow runs reqs again sampled as a chat's reply with Qwen's
// recommended sampling is (drawn on the device), a seed each, and puts the
// sampled rates in row.
func (b *bench) sampledRow(row *streamsRow, reqs []engine.Request, n int) error {
	sampled := slices.Clone(reqs)
	for i := range sampled {
		sampled[i].Sampling = engine.Sampling{Temperature: 0.7, TopP: 0.95, TopK: 20, Seed: uint64(i + 1)}
	}
	runs, err := b.batch(sampled, n)
	if err != nil {
		return err
	}
	s := streamsRowOf(runs)
	row.SampledTPS, row.SampledPerStreamTPS = s.AggregateTPS, s.PerStreamTPS
	return nil
}

// batch runs reqs together in caches of n tokens and returns what each
// reader saw.
func (b *bench) batch(reqs []engine.Request, n int) ([]streamRun, error) {
	streams, err := b.e.GenerateBatch(context.Background(), reqs, n)
	if err != nil {
		return nil, err
	}
	runs := make([]streamRun, len(streams))
	errs := make(chan error, len(streams))
	for i, s := range streams {
		go func() {
			var err error
			for ev := range s.Events {
				switch ev.Kind {
				case engine.EventToken:
					runs[i].arrivals = append(runs[i].arrivals, time.Now())
					runs[i].ids = append(runs[i].ids, ev.Token)
				case engine.EventDone:
					runs[i].stats = ev.Stats
				case engine.EventError:
					err = ev.Err
				}
			}
			errs <- err
		}()
	}
	for range streams {
		if e := <-errs; e != nil && err == nil {
			err = e
		}
	}
	return runs, err
}

// streamsRowOf sums one batch: its tokens after each reply's first over the
// span from the first reply's first token to the last reply's last.
func streamsRowOf(runs []streamRun) streamsRow {
	row := streamsRow{Streams: len(runs)}
	var from, to time.Time
	tokens := 0
	var rates, ttfts, gpu, dispatches []float64
	for _, r := range runs {
		if len(r.arrivals) == 0 {
			continue
		}
		if first := r.arrivals[0]; from.IsZero() || first.Before(from) {
			from = first
		}
		if last := r.arrivals[len(r.arrivals)-1]; last.After(to) {
			to = last
		}
		tokens += len(r.arrivals) - 1
		rates = append(rates, r.stats.DecodeTokensPerSec)
		ttfts = append(ttfts, float64(r.stats.TimeToFirstToken.Microseconds())/1e3)
		gpu = append(gpu, float64(r.stats.GPUTimePerToken.Microseconds())/1e3)
		dispatches = append(dispatches, r.stats.DispatchesPerToken)
	}
	if len(rates) == 0 {
		return row
	}
	if span := to.Sub(from).Seconds(); span > 0 {
		row.AggregateTPS = float64(tokens) / span
	}
	row.SteadyTPS = steadyRate(runs)
	for _, v := range [][]float64{rates, ttfts, gpu, dispatches} {
		slices.Sort(v)
	}
	mid := len(rates) / 2
	row.PerStreamTPS, row.SlowestTPS, row.TTFTms = rates[mid], rates[0], ttfts[mid]
	row.GPUmsPerStep, row.DispatchesPerStep = gpu[mid], dispatches[mid]
	return row
}

// steadyRate is the replies' tokens over the span every one of them
// decodes (after its first token, up to its last), 0 where there is none.
func steadyRate(runs []streamRun) float64 {
	var from, to time.Time
	for _, r := range runs {
		if len(r.arrivals) < 2 {
			return 0
		}
		if first := r.arrivals[0]; first.After(from) {
			from = first
		}
		if last := r.arrivals[len(r.arrivals)-1]; to.IsZero() || last.Before(to) {
			to = last
		}
	}
	span := to.Sub(from).Seconds()
	if span <= 0 {
		return 0
	}
	tokens := 0
	for _, r := range runs {
		for _, at := range r.arrivals {
			if at.After(from) && !at.After(to) {
				tokens++
			}
		}
	}
	return float64(tokens) / span
}

// stall runs n short-prompt replies beside one of promptLen tokens and
// measures the gaps between the short ones' tokens while the long one
// prefills (before its first token).
func (b *bench) stall(n, promptLen int) (*stallRow, error) {
	prompts := [][]int32{b.randomPrompt(promptLen)}
	for range n {
		prompts = append(prompts, b.randomPrompt(32))
	}
	// The short replies go on past the long prompt's prefill.
	runs, err := b.batch(b.streamRequests(prompts), promptLen+b.tokens+8)
	if err != nil {
		return nil, err
	}
	if len(runs[0].arrivals) == 0 {
		return nil, fmt.Errorf("the %d-token prompt gave no token", promptLen)
	}
	joined := runs[0].arrivals[0]
	var gaps []float64
	for _, r := range runs[1:] {
		for i := 1; i < len(r.arrivals) && r.arrivals[i].Before(joined); i++ {
			gaps = append(gaps, float64(r.arrivals[i].Sub(r.arrivals[i-1]).Microseconds())/1e3)
		}
	}
	row := &stallRow{Streams: n, PromptTokens: promptLen, Chunk: b.e.PrefillChunk()}
	if len(gaps) > 0 {
		slices.Sort(gaps)
		row.MedianGapMs, row.MaxGapMs = gaps[len(gaps)/2], gaps[len(gaps)-1]
	}
	return row, nil
}

func writeStreamsBench(w io.Writer, s *streamsBench) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nreplies decoded together (greedy, %d-token prompts, %d tokens each, median of %d):\n", s.PromptTokens, s.Tokens, s.Runs)
	if s.Error != "" {
		fmt.Fprintf(w, "  failed: %s\n", s.Error)
		return
	}
	fmt.Fprintf(w, "  one reply alone (Generate): %.1f tok/s\n", s.SoloTokPerS)
	fmt.Fprintf(w, "  %7s  %13s  %8s  %10s  %11s  %9s  %11s  %14s  %13s  %8s\n", "streams", "aggregate t/s", "× alone", "per stream", "slowest t/s", "TTFT ms",
		"GPU ms/step", "dispatches/step", "all decoding", "× alone")
	none := false
	for _, r := range s.Rows {
		// No span with every reply decoding (replies of a few tokens, the
		// last one's prompt still prefilling when the first ended): "-".
		steady, times := "-", "-"
		if r.SteadyTPS > 0 {
			steady, times = fmt.Sprintf("%.1f", r.SteadyTPS), fmt.Sprintf("%.2f", r.SteadyTPS/s.SoloTokPerS)
		} else {
			none = true
		}
		fmt.Fprintf(w, "  %7d  %13.1f  %8.2f  %10.1f  %11.1f  %9.1f  %11.2f  %14.0f  %13s  %8s\n", r.Streams, r.AggregateTPS, r.AggregateTPS/s.SoloTokPerS,
			r.PerStreamTPS, r.SlowestTPS, r.TTFTms, r.GPUmsPerStep, r.DispatchesPerStep, steady, times)
	}
	fmt.Fprintf(w, "  (aggregate: every reply's tokens from the first reply's first to the last one's last, the others' prefills among them; all decoding: while every reply decodes)\n")
	if none {
		fmt.Fprintf(w, "  (-: the replies never all decoded at once; more --tokens give them a span)\n")
	}
	if s.Drafts > 0 {
		trees := ""
		if s.TreeWidth > 0 {
			trees = fmt.Sprintf(" in trees of %d branches, the right one first", s.TreeWidth)
		}
		fmt.Fprintf(w, "  the same replies with speculative decoding, the oracle guessing up to %d tokens a reply and step%s (every right guess kept; %d rows a step at most):\n",
			s.Drafts, trees, engine.MaxBatch)
		fmt.Fprintf(w, "  %7s  %13s  %8s  %10s  %15s\n", "streams", "aggregate t/s", "× plain", "per stream", "tokens/step")
		for _, r := range s.Rows {
			if r.DraftedError != "" {
				fmt.Fprintf(w, "  %7d  failed: %s\n", r.Streams, r.DraftedError)
				continue
			}
			fmt.Fprintf(w, "  %7d  %13.1f  %8.2f  %10.1f  %15.2f\n", r.Streams, r.DraftedTPS, r.DraftedTPS/r.AggregateTPS, r.DraftedPerStreamTPS, r.TokensPerStep)
		}
	}
	if s.Sampled {
		fmt.Fprintf(w, "  the same prompts' replies sampled (temperature 0.7, top-p 0.95, top-k 20; drawn on the device):\n")
		fmt.Fprintf(w, "  %7s  %13s  %8s  %10s\n", "streams", "aggregate t/s", "× greedy", "per stream")
		for _, r := range s.Rows {
			fmt.Fprintf(w, "  %7d  %13.1f  %8.2f  %10.1f\n", r.Streams, r.SampledTPS, r.SampledTPS/r.AggregateTPS, r.SampledPerStreamTPS)
		}
	}
	if st := s.Stall; st != nil {
		fmt.Fprintf(w, "  a %d-token prompt (chunks of %d) joining %d replies: their tokens %.1f ms apart (median), at most %.1f ms, until its first token\n",
			st.PromptTokens, st.Chunk, st.Streams, st.MedianGapMs, st.MaxGapMs)
	}
}
