package ui

import (
	"testing"

	"fyne.io/fyne/v2"

	"bagel/engine"
	"fyne.io/fyne/v2/theme"
)

// TestTextContrast: every text colour of the app's theme reads at 4.5:1 or
// more against the window and the input background, in both variants.
func TestTextContrast(t *testing.T) {
	th := newReadableTheme()
	for _, v := range []fyne.ThemeVariant{theme.VariantDark, theme.VariantLight} {
		for _, bg := range []fyne.ThemeColorName{theme.ColorNameBackground, theme.ColorNameInputBackground} {
			for _, fg := range readableTextNames {
				if c := contrast(th.Color(fg, v), th.Color(bg, v)); c < 4.5 {
					t.Errorf("variant %d: %s on %s has contrast %.2f:1, want ≥ 4.5", v, fg, bg, c)
				}
			}
		}
	}
	// The formula itself, on a known pair: #6b6b6b on white is 5.33:1.
	if c := contrast(theme.DefaultTheme().Color(theme.ColorNameBackground, theme.VariantLight), secondaryOnLight); c < 5 || c > 6 {
		t.Errorf("#6b6b6b on white: %.2f", c)
	}
}

func TestSpeculativeText(t *testing.T) {
	for _, c := range []struct {
		st   engine.Stats
		want string
	}{
		{engine.Stats{}, "off"},
		{engine.Stats{Speculative: true}, "on, no drafts yet"},
		{engine.Stats{Speculative: true, DraftProposed: 40, DraftAccepted: 30}, "30/40 drafts accepted (75%)"},
	} {
		if got := speculativeText(c.st); got != c.want {
			t.Errorf("%+v: %q, want %q", c.st, got, c.want)
		}
	}
}
