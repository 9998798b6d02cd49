package tokenizer

import (
	"strings"
	"unicode/utf8"
)

// Decode returns the text of ids. Added tokens decode to their literal text
// (<|im_end|>, <think>). Bytes that do not form valid UTF-8 become U+FFFD, one
// per maximal invalid subsequence, as Rust's String::from_utf8_lossy (and so
// Hugging Face's decode) does. Ids outside the vocabulary are skipped.
func (t *Tokenizer) Decode(ids []int32) string {
	var buf []byte
	for _, id := range ids {
		buf = t.appendBytes(buf, id)
	}
	return lossyString(buf)
}

// appendBytes appends the bytes token id stands for.
func (t *Tokenizer) appendBytes(buf []byte, id int32) []byte {
	if id < 0 || int(id) >= len(t.tokenBytes) {
		return buf
	}
	return append(buf, t.tokenBytes[id]...)
}

// StreamDecoder turns a stream of token ids into text deltas. A character
// whose UTF-8 bytes are spread over several tokens (common for emoji and CJK)
// is held back until its last byte arrives, so every delta is valid UTF-8 and
// the concatenated deltas plus Flush equal Decode of all the ids.
type StreamDecoder struct {
	t       *Tokenizer
	pending []byte // an incomplete UTF-8 sequence from earlier tokens
}

// NewStreamDecoder starts an empty stream.
func (t *Tokenizer) NewStreamDecoder() *StreamDecoder { return &StreamDecoder{t: t} }

// Add feeds one token and returns the text it completes (possibly "").
func (d *StreamDecoder) Add(id int32) string {
	d.pending = d.t.appendBytes(d.pending, id)
	n := completePrefix(d.pending)
	out := lossyString(d.pending[:n])
	d.pending = append(d.pending[:0], d.pending[n:]...)
	return out
}

// Flush returns whatever is still held back (an unfinished sequence becomes
// U+FFFD) and resets the stream.
func (d *StreamDecoder) Flush() string {
	out := lossyString(d.pending)
	d.pending = d.pending[:0]
	return out
}

// completePrefix returns the length of the longest prefix of b that can be
// decoded now: everything except a trailing sequence that is a valid but
// unfinished start of a character, which a later byte may complete.
func completePrefix(b []byte) int {
	i := 0
	for i < len(b) {
		if b[i] < utf8.RuneSelf {
			i++
			continue
		}
		if r, size := utf8.DecodeRune(b[i:]); r != utf8.RuneError || size > 1 {
			i += size
			continue
		}
		n := validPrefixLen(b[i:])
		if i+n == len(b) && n < seqLen(b[i]) {
			return i // unfinished: wait for more bytes
		}
		i += max(n, 1)
	}
	return i
}

// lossyString converts b to a string, replacing each maximal invalid
// subsequence (Unicode §3.9, "U+FFFD substitution of maximal subparts") with
// one U+FFFD, the same policy as Rust's String::from_utf8_lossy.
func lossyString(b []byte) string {
	if utf8.Valid(b) {
		return string(b)
	}
	var sb strings.Builder
	sb.Grow(len(b) + 8)
	for i := 0; i < len(b); {
		r, size := utf8.DecodeRune(b[i:])
		if r != utf8.RuneError || size > 1 {
			sb.Write(b[i : i+size])
			i += size
			continue
		}
		sb.WriteRune(utf8.RuneError)
		i += max(validPrefixLen(b[i:]), 1)
	}
	return sb.String()
}

// seqLen is the length of the sequence a lead byte starts; 0 if it cannot lead.
func seqLen(lead byte) int {
	switch {
	case lead >= 0xC2 && lead <= 0xDF:
		return 2
	case lead >= 0xE0 && lead <= 0xEF:
		return 3
	case lead >= 0xF0 && lead <= 0xF4:
		return 4
	}
	return 0
}

// validPrefixLen is how many bytes at the start of b form a valid prefix of
// some UTF-8 sequence (0 when b[0] cannot start one).
func validPrefixLen(b []byte) int {
	want := seqLen(b[0])
	if want == 0 {
		return 0
	}
	n := 1
	for ; n < want && n < len(b); n++ {
		lo, hi := byte(0x80), byte(0xBF)
		if n == 1 { // the second byte's range excludes overlongs, surrogates and > U+10FFFF
			switch b[0] {
			case 0xE0:
				lo = 0xA0
			case 0xED:
				hi = 0x9F
			case 0xF0:
				lo = 0x90
			case 0xF4:
				hi = 0x8F
			}
		}
		if b[n] < lo || b[n] > hi {
			break
		}
	}
	return n
}

// TokenBytes is the bytes token id stands for alone (possibly part of a
// character: a logprobs entry gives them as they are).
func (t *Tokenizer) TokenBytes(id int32) []byte { return t.appendBytes(nil, id) }
