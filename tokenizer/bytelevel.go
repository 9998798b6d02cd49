package tokenizer

// GPT-2's byte-level alphabet (bytes_to_unicode in openai/gpt-2 encoder.py):
// printable Latin-1 bytes stand for themselves, the other 68 bytes are
// shifted to U+0100..U+0143 so that every byte is a visible character and a
// BPE vocabulary can be stored as JSON strings. A space is 'Ġ' (U+0120).
var (
	byteToRune [256]rune
	runeToByte = map[rune]byte{}
)

func init() {
	next := rune(256)
	for b := 0; b < 256; b++ {
		printable := (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF)
		if printable {
			byteToRune[b] = rune(b)
		} else {
			byteToRune[b] = next
			next++
		}
		runeToByte[byteToRune[b]] = byte(b)
	}
}

// byteLevelDecode turns a token's string form back into the bytes it stands
// for. Like the Rust ByteLevel decoder, a token with any character outside the
// alphabet (an added token such as "<|im_end|>" is inside it; one with a
// non-Latin-1 character would not be) contributes its raw UTF-8 instead.
func byteLevelDecode(token string) []byte {
	out := make([]byte, 0, len(token))
	for _, r := range token {
		b, ok := runeToByte[r]
		if !ok {
			return []byte(token)
		}
		out = append(out, b)
	}
	return out
}
