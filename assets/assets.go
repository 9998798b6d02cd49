// Package assets holds files bundled into the binary: the app icon. It
// imports nothing, so every package (and every cross-build) may use it.
package assets

import _ "embed"

//go:generate go run gen_icon.go

// IconPNG is the app icon, a 512×512 PNG drawn by gen_icon.go.
//
//go:embed icon.png
var IconPNG []byte
