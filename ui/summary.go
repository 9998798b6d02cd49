package ui

import (
	"fmt"
	"strings"
	"time"

	"bagel/engine"

	"github.com/dustin/go-humanize"
)

// speculativeText is the Speculative row and summary part: "off", or the
// drafts proposed and accepted with the acceptance rate.
func speculativeText(st engine.Stats) string {
	if !st.Speculative {
		return "off"
	}
	if st.DraftProposed == 0 {
		return "on, no drafts yet"
	}
	text := fmt.Sprintf("%d/%d drafts accepted (%.0f%%)", st.DraftAccepted, st.DraftProposed,
		100*float64(st.DraftAccepted)/float64(st.DraftProposed))
	if st.Verifies > 0 {
		text += fmt.Sprintf(", %.1f tokens a verify of %s", st.TokensPerVerify(), duration(st.VerifyTime/time.Duration(st.Verifies)))
	}
	return text
}

// summaryLine is the one-line record under a finished reply: the same numbers
// as the performance panel.
func summaryLine(st engine.Stats, mem engine.Memory) string {
	parts := []string{
		fmt.Sprintf("%s tokens at %s tok/s", humanize.Comma(int64(st.GeneratedTokens)), rate(st.DecodeTokensPerSec)),
		"TTFT " + duration(st.TimeToFirstToken),
		fmt.Sprintf("prefill %s tokens at %s tok/s (%s cached)", humanize.Comma(int64(st.PromptTokens)),
			rate(st.PrefillTokensPerSec), humanize.Comma(int64(st.ReusedPromptTokens))),
		"KV " + kvText(st),
		fmt.Sprintf("%.0f dispatches/token", st.DispatchesPerToken),
	}
	if st.GPUTimePerToken > 0 {
		parts = append(parts, fmt.Sprintf("GPU %.2f ms/token", float64(st.GPUTimePerToken.Microseconds())/1000))
	}
	parts = append(parts, "speculative "+speculativeText(st), st.Backend)
	if mem.Weights > 0 {
		parts = append(parts, memoryText(mem))
	}
	return strings.Join(parts, " · ")
}

// rate formats tokens per second: one decimal below 100, none above.
func rate(tps float64) string {
	if tps >= 100 {
		return fmt.Sprintf("%.0f", tps)
	}
	return fmt.Sprintf("%.1f", tps)
}

// duration formats a short span in ms, a long one in s.
func duration(d time.Duration) string {
	if d < 10*time.Second {
		return fmt.Sprintf("%.0f ms", float64(d.Microseconds())/1000)
	}
	return fmt.Sprintf("%.1f s", d.Seconds())
}

func kvText(st engine.Stats) string {
	return humanize.Comma(int64(st.KVLength)) + " / " + humanize.Comma(int64(st.ContextLength))
}

func memoryText(mem engine.Memory) string {
	return "weights " + humanize.IBytes(uint64(mem.Weights)) + " + cache " + humanize.IBytes(uint64(mem.Cache))
}

func humanCount(n int) string { return humanize.Comma(int64(n)) }
