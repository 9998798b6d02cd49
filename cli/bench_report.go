package cli

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"

	"bagel/engine"
)

// benchReport is what bagel bench prints and writes as JSON.
type benchReport struct {
	Model         string   `json:"model"`
	Backend       string   `json:"backend"`
	Device        string   `json:"device"`
	Host          string   `json:"host"`
	Date          string   `json:"date"`
	ContextLength int      `json:"context_length"`
	PrefillChunk  int      `json:"prefill_chunk"` // prompt tokens per forward
	Switches      []string `json:"switches"`      // name=on|off, as set for the runs
	WeightBytes   int64    `json:"weight_bytes"`
	CacheBytes    int64    `json:"cache_bytes"`
	// ScratchBytes is the activations' memory after every run (the longest
	// prompt chunk's).
	ScratchBytes int64 `json:"scratch_bytes"`
	// DecodeWeightBytes is what one decode token reads of the weights (the
	// experts in the router's proportion): weight_gb_per_s is it times tok/s.
	DecodeWeightBytes int64         `json:"decode_weight_bytes"`
	Results           []benchResult `json:"results"`
	// Projections is the decode GEMV on each matrix shape alone (--projections).
	Projections []engine.ProjectionTiming `json:"projections,omitempty"`
	// Server is the local server against the engine (--server).
	Server *serverBench `json:"server,omitempty"`
	// Streams is replies decoded together (--streams).
	Streams *streamsBench `json:"streams,omitempty"`
	// Images are images through the vision tower (--images).
	Images []imageRow `json:"images,omitempty"`
}

// benchResult is one measured figure (the median run).
type benchResult struct {
	Name                     string  `json:"name"`
	Switch                   string  `json:"switch,omitempty"` // the switch turned off (or on) for this run
	PromptTokens             int     `json:"prompt_tokens"`
	Tokens                   int     `json:"tokens"`
	DecodeTokPerSec          float64 `json:"decode_tok_per_s"`
	PrefillTokPerSec         float64 `json:"prefill_tok_per_s"`
	TTFTms                   float64 `json:"ttft_ms"`
	DispatchesPerToken       float64 `json:"dispatches_per_token"`
	CommandBuffersPerToken   float64 `json:"command_buffers_per_token"`
	GraphLaunchesPerToken    float64 `json:"graph_launches_per_token"`
	GraphNodeUpdatesPerToken float64 `json:"graph_node_updates_per_token,omitempty"` // replayed nodes whose arguments changed
	HostSyncsPerToken        float64 `json:"host_syncs_per_token"`
	SampledOnDevice          bool    `json:"sampled_on_device"`
	WeightGBPerSec           float64 `json:"weight_gb_per_s,omitempty"`
	GPUmsPerToken            float64 `json:"gpu_ms_per_token,omitempty"`
	HostMsPerToken           float64 `json:"host_ms_per_token,omitempty"`        // wall ms a token beyond its GPU ms
	IdleMsPerToken           float64 `json:"idle_ms_per_token,omitempty"`        // ms a token the GPU's queue stood empty (CUDA)
	IdleInsideMsPerToken     float64 `json:"idle_inside_ms_per_token,omitempty"` // of it, between one submit's graph segments
	PrefillGPUms             float64 `json:"prefill_gpu_ms,omitempty"`           // device time to the first token
	Verifies                 int     `json:"verifies,omitempty"`                 // speculative steps that verified guesses
	VerifyMs                 float64 `json:"verify_ms,omitempty"`                // wall ms a verify (its drafting excluded)
	// Mismatch says an oracle row's drafted reply differed from its plain
	// one (greedy speculative decoding must give the plain tokens).
	Mismatch string `json:"mismatch,omitempty"`
	Error    string `json:"error,omitempty"` // why this figure could not be measured
}

func writeBenchTable(w io.Writer, r *benchReport) {
	fmt.Fprintf(w, "bench %s on %s (%s), %s\n", r.Model, r.Device, r.Backend, r.Date)
	fmt.Fprintf(w, "weights %.2f GB (%.3f GB read per decode token), cache %.2f GB for %d tokens, scratch %.2f GB, prompts in chunks of %d; %s\n\n",
		float64(r.WeightBytes)/1e9, float64(r.DecodeWeightBytes)/1e9, float64(r.CacheBytes)/1e9, r.ContextLength,
		float64(r.ScratchBytes)/1e9, r.PrefillChunk, r.Host)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "figure\tswitch\tprompt\ttok/s decode\ttok/s prefill\tTTFT ms\tprefill GPU ms\tweights GB/s\tGPU ms/tok\tdispatches/tok\tsubmits/tok\tgraphs/tok\tsyncs/tok\thost ms/tok\t")
	for _, x := range r.Results {
		sw := x.Switch
		if sw == "" {
			sw = "-"
		}
		if x.Error != "" {
			fmt.Fprintf(tw, "%s\t%s\tfailed: %s\t\n", x.Name, sw, x.Error)
			continue
		}
		gbs := "-"
		if x.WeightGBPerSec > 0 {
			gbs = fmt.Sprintf("%.0f", x.WeightGBPerSec)
		}
		prefillGPU := "-"
		if x.PrefillGPUms > 0 {
			prefillGPU = fmt.Sprintf("%.1f", x.PrefillGPUms)
		}
		gpu := "-"
		if x.GPUmsPerToken > 0 {
			gpu = fmt.Sprintf("%.2f", x.GPUmsPerToken)
		}
		host := "-"
		if x.HostMsPerToken > 0 {
			host = fmt.Sprintf("%.2f", x.HostMsPerToken)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d\t%.1f\t%.0f\t%.1f\t%s\t%s\t%s\t%.0f\t%.1f\t%.1f\t%.1f\t%s\t\n", x.Name, sw, x.PromptTokens,
			x.DecodeTokPerSec, x.PrefillTokPerSec, x.TTFTms, prefillGPU, gbs, gpu, x.DispatchesPerToken, x.CommandBuffersPerToken,
			x.GraphLaunchesPerToken, x.HostSyncsPerToken, host)
	}
	tw.Flush()
	writeVerifyCosts(w, r.Results)
	if len(r.Projections) > 0 {
		writeProjectionTable(w, r.Projections)
	}
}

// writeVerifyCosts prints, for each row with speculative verifies, what one
// verify costs against one plain greedy decode step (the "decode greedy" row's
// wall time a token with the same other switches flipped, else the default
// row's): the figure a verify of γ+1 tokens is judged by.
func writeVerifyCosts(w io.Writer, rs []benchResult) {
	steps := map[string]float64{} // ms a plain step, by the row's switch setting
	for _, x := range rs {
		if _, seen := steps[x.Switch]; !seen && x.Name == "decode greedy" && x.DecodeTokPerSec > 0 {
			steps[x.Switch] = 1000 / x.DecodeTokPerSec
		}
	}
	first := true
	for _, x := range rs {
		if x.Verifies == 0 || x.VerifyMs <= 0 {
			continue
		}
		if first {
			fmt.Fprintf(w, "\nspeculative verifies (wall time, drafting excluded)\n")
			first = false
		}
		label, others := x.Name, strings.TrimSpace(strings.TrimSuffix(x.Switch, engine.SwitchSpeculative+"=on"))
		step, ok := steps[others]
		if others != "" {
			label += " with " + others
			if !ok {
				step = steps[""]
			}
		}
		if step > 0 {
			idle := ""
			if x.IdleMsPerToken > 0 && x.Tokens > 1 {
				// The reply's idle time (its rare plain steps' included) over its verifies.
				per := float64(x.Tokens-1) / float64(x.Verifies)
				idle = fmt.Sprintf("; GPU idle %.3f ms a verify, %.3f of it between graph segments", x.IdleMsPerToken*per, x.IdleInsideMsPerToken*per)
			}
			fmt.Fprintf(w, "%s: %d verifies, %.2f ms a verify = %.2f decode steps of %.2f ms%s\n", label, x.Verifies, x.VerifyMs, x.VerifyMs/step, step, idle)
		} else {
			fmt.Fprintf(w, "%s: %d verifies, %.2f ms a verify\n", label, x.Verifies, x.VerifyMs)
		}
		if x.Mismatch != "" {
			fmt.Fprintf(w, "  wrong: %s (greedy speculative decoding must give the plain reply: a verify did not give its decode steps' logits)\n", x.Mismatch)
		}
	}
}

// writeProjectionTable prints the GEMV timed on each matrix shape: a row per
// shape, its products a token and the bandwidth one product reaches.
func writeProjectionTable(w io.Writer, ps []engine.ProjectionTiming) {
	clock := "device time"
	for _, p := range ps {
		if !p.DeviceTime {
			clock = "wall time"
		}
	}
	fmt.Fprintf(w, "\nthe decode GEMV on each matrix shape alone (one token, %s)\n", clock)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "matrix (first of its shape)\trows × in\tbits/group\tproducts/tok\tMB a product\tµs a product\tGB/s\t")
	for _, p := range ps {
		shape := fmt.Sprintf("%d × %d", p.Rows, p.In)
		if p.Experts > 0 {
			shape += fmt.Sprintf(" of %d experts", p.Experts)
		}
		fmt.Fprintf(tw, "%s\t%s\t%d/%d\t%d\t%.2f\t%.1f\t%.1f\t\n", p.Name, shape, p.Bits, p.GroupSize, p.PerToken,
			float64(p.Bytes)/1e6, float64(p.Time.Nanoseconds())/1e3, p.GBPerSec)
	}
	tw.Flush()
}
