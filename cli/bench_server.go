package cli

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"strings"
	"time"

	"bagel/engine"
	"bagel/server"
)

// serverBench is what the local server costs a client (bench --server): the
// same greedy request read straight from the engine and streamed through
// bagel serve's /v1/completions on a loopback socket, both timed by their
// reader — from the request to the first token, and from the first token to
// the last. The model needs a tokenizer (a streamed chunk is text).
type serverBench struct {
	PromptTokens int `json:"prompt_tokens"`
	Tokens       int `json:"tokens"`
	Runs         int `json:"runs"`
	// Medians over the runs.
	EngineTTFTms       float64 `json:"engine_ttft_ms"`
	ServerTTFTms       float64 `json:"server_ttft_ms"`
	AddedTTFTms        float64 `json:"added_ttft_ms"` // server − engine
	EngineTokPerSec    float64 `json:"engine_stream_tok_per_s"`
	ServerTokPerSec    float64 `json:"server_stream_tok_per_s"`
	ServerOfEngineRate float64 `json:"server_of_engine_rate"` // server ÷ engine
	Error              string  `json:"error,omitempty"`
}

// readTiming is one request as its reader saw it.
type readTiming struct {
	ttft        time.Duration // request → first token
	first, last time.Time     // the first and last token's arrival
	tokens      int
}

// arrived counts a token that came now, of a request sent at start.
func (r *readTiming) arrived(start time.Time) {
	now := time.Now()
	if r.tokens == 0 {
		r.ttft, r.first = now.Sub(start), now
	}
	r.last = now
	r.tokens++
}

func (r readTiming) rate() float64 {
	span := r.last.Sub(r.first).Seconds()
	if r.tokens < 2 || span <= 0 {
		return 0
	}
	return float64(r.tokens-1) / span
}

// server measures the server rows: runs of each path, alternating, after a
// warm-up of each.
func (b *bench) server(promptLen int) error {
	b.progress("the local server against the engine")
	sb := &serverBench{PromptTokens: promptLen, Tokens: b.tokens, Runs: b.runs}
	b.report.Server = sb
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		sb.Error = err.Error()
		return nil
	}
	srv, err := server.New(b.e, "bench", server.Options{})
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go srv.Serve(ctx, ln)
	url := "http://" + ln.Addr().String() + "/v1/completions"

	var engineRuns, serverRuns []readTiming
	for i := -1; i < b.runs; i++ { // run −1 warms both paths up
		// A prompt of its own for each path: the second would otherwise be
		// read from the prompt cache.
		e, err := b.readEngine(b.randomPrompt(promptLen))
		if err != nil {
			return err
		}
		s, err := b.readServer(url, b.randomPrompt(promptLen))
		if err != nil {
			sb.Error = err.Error()
			return nil
		}
		if i >= 0 {
			engineRuns, serverRuns = append(engineRuns, e), append(serverRuns, s)
		}
	}
	ms := func(runs []readTiming) float64 {
		return medianOf(runs, func(r readTiming) float64 { return float64(r.ttft.Microseconds()) / 1000 })
	}
	rate := func(runs []readTiming) float64 { return medianOf(runs, readTiming.rate) }
	sb.EngineTTFTms, sb.ServerTTFTms = ms(engineRuns), ms(serverRuns)
	sb.AddedTTFTms = sb.ServerTTFTms - sb.EngineTTFTms
	sb.EngineTokPerSec, sb.ServerTokPerSec = rate(engineRuns), rate(serverRuns)
	if sb.EngineTokPerSec > 0 {
		sb.ServerOfEngineRate = sb.ServerTokPerSec / sb.EngineTokPerSec
	}
	return nil
}

func medianOf[T any](xs []T, f func(T) float64) float64 {
	v := make([]float64, len(xs))
	for i, x := range xs {
		v[i] = f(x)
	}
	slices.Sort(v)
	if len(v) == 0 {
		return 0
	}
	return v[len(v)/2]
}

// readEngine times a greedy reply read from the engine's events, counting
// the tokens that carry text (what a stream would send).
func (b *bench) readEngine(prompt []int32) (readTiming, error) {
	var t readTiming
	start := time.Now()
	req := engine.Request{PromptIDs: prompt, MaxTokens: b.tokens, IgnoreStop: true}
	for ev := range b.e.Generate(context.Background(), req) {
		switch ev.Kind {
		case engine.EventToken:
			if ev.Text == "" {
				continue
			}
			t.arrived(start)
		case engine.EventError:
			return t, ev.Err
		}
	}
	return t, nil
}

// readServer times the same request streamed by the server: each data
// chunk with text is a token's (one chunk a token with text).
func (b *bench) readServer(url string, prompt []int32) (readTiming, error) {
	var t readTiming
	ids, _ := json.Marshal(prompt)
	body := fmt.Sprintf(`{"prompt":%s,"max_tokens":%d,"temperature":0,"ignore_eos":true,"stream":true}`, ids, b.tokens)
	start := time.Now()
	resp, err := http.Post(url, "application/json", strings.NewReader(body))
	if err != nil {
		return t, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		msg, _ := io.ReadAll(resp.Body)
		return t, fmt.Errorf("the server answered %d: %s", resp.StatusCode, msg)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		if !ok || data == "[DONE]" {
			continue
		}
		var chunk struct {
			Choices []struct{ Text string } `json:"choices"`
		}
		if json.Unmarshal([]byte(data), &chunk) != nil || len(chunk.Choices) == 0 || chunk.Choices[0].Text == "" {
			continue
		}
		t.arrived(start)
	}
	if t.tokens == 0 {
		return t, fmt.Errorf("the server streamed no text (does the model folder have a tokenizer?)")
	}
	return t, sc.Err()
}

// writeServerBench prints the server rows under the table.
func writeServerBench(w io.Writer, s *serverBench) {
	if s == nil {
		return
	}
	fmt.Fprintf(w, "\nlocal server (/v1/completions streamed on loopback, %d-token prompt, %d tokens, median of %d):\n", s.PromptTokens, s.Tokens, s.Runs)
	if s.Error != "" {
		fmt.Fprintf(w, "  failed: %s\n", s.Error)
		return
	}
	fmt.Fprintf(w, "  first token: engine %.2f ms, server %.2f ms (adds %.2f ms)\n", s.EngineTTFTms, s.ServerTTFTms, s.AddedTTFTms)
	fmt.Fprintf(w, "  stream: engine %.1f tok/s, server %.1f tok/s (%.1f%% of the engine's)\n", s.EngineTokPerSec, s.ServerTokPerSec, 100*s.ServerOfEngineRate)
}
