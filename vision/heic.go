package vision

import "bytes"

// HEIC and HEIF (the format iPhone photos come in) are decoded by the
// system on a Mac (heic_darwin.go: ImageIO, the decoder Preview and Photos
// use, through purego); elsewhere they are refused by name (heic_other.go):
// no well-kept pure-Go HEVC decoder exists.

// heifBrands are the ISO-BMFF major brands of HEIF images.
var heifBrands = []string{"heic", "heix", "heim", "heis", "hevc", "hevx", "mif1", "msf1"}

// isHEIF tells a HEIF file by its ftyp box: bytes 4–8 "ftyp", 8–12 the brand.
func isHEIF(data []byte) bool {
	if len(data) < 12 || !bytes.Equal(data[4:8], []byte("ftyp")) {
		return false
	}
	for _, b := range heifBrands {
		if string(data[8:12]) == b {
			return true
		}
	}
	return false
}
