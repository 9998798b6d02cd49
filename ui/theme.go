package ui

import (
	"image/color"
	"math"

	"fyne.io/fyne/v2"
	"fyne.io/fyne/v2/theme"
)

// readableTheme is Fyne's default theme with the secondary text colours made
// readable: Fyne draws low-importance labels (panel labels, timestamps, hints,
// the stats line) in its "disabled" colour, which has a contrast of 1.55:1 on
// the dark background and 1.28:1 on the light one, and placeholders at 3.2:1 in
// the light variant. These meet WCAG's 4.5:1 for normal text against both the
// window background and the input background (theme_test.go computes it).
//
// textScale multiplies the text sizes (View › Bigger / Smaller text).
type readableTheme struct {
	fyne.Theme
	textScale float32
}

func newReadableTheme(textScale float32) fyne.Theme {
	if textScale <= 0 {
		textScale = 1
	}
	return readableTheme{Theme: theme.DefaultTheme(), textScale: textScale}
}

// Size scales the text sizes; the other sizes stay.
func (t readableTheme) Size(n fyne.ThemeSizeName) float32 {
	size := t.Theme.Size(n)
	switch n {
	case theme.SizeNameText, theme.SizeNameCaptionText, theme.SizeNameHeadingText, theme.SizeNameSubHeadingText:
		return size * t.textScale
	}
	return size
}

var (
	secondaryOnDark  = color.NRGBA{R: 0x8c, G: 0x8c, B: 0x8c, A: 0xff} // 5.3:1 on #171718
	secondaryOnLight = color.NRGBA{R: 0x6b, G: 0x6b, B: 0x6b, A: 0xff} // 5.3:1 on #ffffff
	placeholderLight = color.NRGBA{R: 0x6b, G: 0x6b, B: 0x6b, A: 0xff}
	// Fyne's orange and red statuses read at 2.2:1 and 3.7:1 on white, its
	// red at 4.4:1 on the dark input background: darker ones in the light
	// variant (5.3:1, 5.6:1), a lighter red in the dark (5.3:1).
	warningOnLight    = color.NRGBA{R: 0xa8, G: 0x54, B: 0x00, A: 0xff}
	errorOnLight      = color.NRGBA{R: 0xc6, G: 0x28, B: 0x28, A: 0xff}
	errorOnDark       = color.NRGBA{R: 0xff, G: 0x5c, B: 0x50, A: 0xff}
	readableTextNames = []fyne.ThemeColorName{theme.ColorNameForeground, theme.ColorNameDisabled, theme.ColorNamePlaceHolder,
		theme.ColorNameWarning, theme.ColorNameError}
)

func (t readableTheme) Color(n fyne.ThemeColorName, v fyne.ThemeVariant) color.Color {
	switch n {
	case theme.ColorNameDisabled:
		if v == theme.VariantLight {
			return secondaryOnLight
		}
		return secondaryOnDark
	case theme.ColorNamePlaceHolder:
		if v == theme.VariantLight {
			return placeholderLight
		}
	case theme.ColorNameWarning:
		if v == theme.VariantLight {
			return warningOnLight
		}
	case theme.ColorNameError:
		if v == theme.VariantLight {
			return errorOnLight
		}
		return errorOnDark
	}
	return t.Theme.Color(n, v)
}

// contrast is the WCAG 2 contrast ratio of two opaque colours, 1 to 21.
func contrast(a, b color.Color) float64 {
	la, lb := luminance(a), luminance(b)
	if la < lb {
		la, lb = lb, la
	}
	return (la + 0.05) / (lb + 0.05)
}

// luminance is the relative luminance of an sRGB colour.
func luminance(c color.Color) float64 {
	r, g, b, _ := c.RGBA()
	lin := func(v uint32) float64 {
		s := float64(v) / 0xffff
		if s <= 0.04045 {
			return s / 12.92
		}
		return math.Pow((s+0.055)/1.055, 2.4)
	}
	return 0.2126*lin(r) + 0.7152*lin(g) + 0.0722*lin(b)
}
