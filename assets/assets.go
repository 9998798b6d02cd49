// Package assets holds the files Bagel ships: the app icon, bundled into the
// binary, and the demo model (demo-model/, found on disk by DemoDir). It
// imports nothing of Bagel's, so every package (and every cross-build) may
// use it.
package assets

import _ "embed"

//go:generate go run gen_icon.go

// IconPNG is the app icon, a 512×512 PNG drawn by gen_icon.go.
//
//go:embed icon.png
var IconPNG []byte
