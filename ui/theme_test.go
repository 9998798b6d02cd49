package ui

import (
	"testing"

	"fyne.io/fyne/v2"
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
