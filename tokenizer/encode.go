package tokenizer

import "strings"

// Encode returns the token ids of text, with added tokens such as
// <|im_start|> recognised wherever they appear and no BOS/EOS added (Hugging
// Face's add_special_tokens=False; Qwen adds none either way). A chat prompt
// goes through EncodePrompt, which reads special tokens only where the
// template wrote them.
func (t *Tokenizer) Encode(text string) []int32 { return t.encode(text, nil) }

// encode is Encode where no special token is matched if it overlaps a span of
// content (spans in order, apart).
func (t *Tokenizer) encode(text string, content []span) []int32 {
	ids := make([]int32, 0, len(text)/3+1)
	start := 0 // start of the text not yet encoded
	for i := 0; i < len(text); {
		for len(content) > 0 && content[0].end <= i {
			content = content[1:]
		}
		id, n := t.matchAdded(text[i:], func(a addedToken) bool {
			return !a.special || len(content) == 0 || i+len(a.content) <= content[0].start
		})
		if n == 0 {
			i++
			continue
		}
		ids = t.encodeSegment(text[start:i], ids)
		ids = append(ids, id)
		i += n
		start = i
	}
	return t.encodeSegment(text[start:], ids)
}

// matchAdded returns the longest added token that text starts with, among
// those allowed.
func (t *Tokenizer) matchAdded(text string, allowed func(addedToken) bool) (id int32, n int) {
	for _, k := range t.addedByLen[text[0]] {
		if a := t.added[k]; strings.HasPrefix(text, a.content) && allowed(a) {
			return a.id, len(a.content)
		}
	}
	return 0, 0
}

// encodeSegment encodes text that contains no added token.
func (t *Tokenizer) encodeSegment(text string, ids []int32) []int32 {
	if text == "" {
		return ids
	}
	for _, form := range t.normalize {
		text = form.String(text)
	}
	spans, err := t.split.FindAllStringIndex(text, -1)
	if err != nil {
		// Only a match timeout or the backtracking limit can fail, and Load
		// sets neither. Keep going rather than lose text: treat the rest as
		// one piece.
		spans = nil
	}
	pos := 0 // matches and the gaps between them are both pieces (behavior Isolated)
	for _, s := range spans {
		if s[0] > pos {
			ids = t.model.encodePiece(text[pos:s[0]], ids)
		}
		if s[1] > s[0] {
			ids = t.model.encodePiece(text[s[0]:s[1]], ids)
		}
		pos = s[1]
	}
	if pos < len(text) {
		ids = t.model.encodePiece(text[pos:], ids)
	}
	return ids
}
