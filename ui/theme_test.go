package ui

import (
	"math"
	"testing"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// TestTextContrast: every text colour of the app's theme reads at 4.5:1 or
// more against the window and the input background, in both variants.
func TestTextContrast(t *testing.T) {
	th := newReadableTheme(1)
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

// TestTextScale: View › Bigger text scales the text sizes (not the padding),
// stays within its bounds, is kept in the settings, and Actual size resets it.
func TestTextScale(t *testing.T) {
	s := testSettings()
	h := newHarness(t, &s, "", "")
	base := theme.DefaultTheme().Size(theme.SizeNameText)
	pad := theme.DefaultTheme().Size(theme.SizeNamePadding)
	h.a.scaleText(textStep)
	th := h.a.fyne.Settings().Theme()
	if got := th.Size(theme.SizeNameText); math.Abs(float64(got-base*textStep)) > 0.01 || th.Size(theme.SizeNamePadding) != pad {
		t.Errorf("bigger: text %g (want %g), padding %g (want %g)", got, base*textStep, th.Size(theme.SizeNamePadding), pad)
	}
	for range 20 {
		h.a.scaleText(textStep)
	}
	if h.a.settings.TextScale != maxTextScale {
		t.Errorf("scale %g after many steps, want the maximum %g", h.a.settings.TextScale, maxTextScale)
	}
	h.close()
	again := newHarness(t, nil, h.configDir, h.dataDir)
	if got := again.a.fyne.Settings().Theme().Size(theme.SizeNameText); math.Abs(float64(got-base*maxTextScale)) > 0.01 {
		t.Errorf("after a restart the text is %g, want %g", got, base*maxTextScale)
	}
	again.a.scaleText(0)
	if again.a.settings.TextScale != 1 {
		t.Errorf("actual size: scale %g", again.a.settings.TextScale)
	}
}
