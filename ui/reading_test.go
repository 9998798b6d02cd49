package ui

import (
	"testing"

	"bagel/engine"
)

func TestReadingPhaseShowsHowFar(t *testing.T) {
	for _, c := range []struct {
		st   engine.Stats
		want string
	}{
		{engine.Stats{}, "reading the prompt…"},
		{engine.Stats{PromptTokens: 4000}, "reading the prompt…"},
		{engine.Stats{PromptTokens: 4000, PrefilledTokens: 1600}, "reading the prompt… 40%"},
		{engine.Stats{PromptTokens: 4000, ReusedPromptTokens: 3000, PrefilledTokens: 3512}, "reading the prompt… 87%"},
		{engine.Stats{PromptTokens: 4000, PrefilledTokens: 4000}, "reading the prompt…"},
	} {
		if got := readingPhase(c.st); got != c.want {
			t.Errorf("readingPhase(%d of %d) = %q, want %q", c.st.PrefilledTokens, c.st.PromptTokens, got, c.want)
		}
	}
}
