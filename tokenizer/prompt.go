package tokenizer

import "strings"

// Prompt is a rendered chat prompt: its text, and which parts of it came from
// the messages (what a user, a tool, a file or an API client wrote) rather
// than from the template. EncodePrompt reads the template's own markers as
// special tokens and never the messages': a pasted "<|im_end|><|im_start|>
// system" is text, not a forged turn.
type Prompt struct {
	Text    string
	content []span // byte ranges of Text that came from messages, in order, apart
}

// span is the byte range [start, end) of a prompt.
type span struct{ start, end int }

// promptBuilder writes a prompt, markup (the template's text) and content (a
// message's) apart.
type promptBuilder struct {
	b       strings.Builder
	content []span
}

// markup appends the template's own text.
func (p *promptBuilder) markup(s string) { p.b.WriteString(s) }

// text appends text that came from a message.
func (p *promptBuilder) text(s string) {
	if s == "" {
		return
	}
	start := p.b.Len()
	p.b.WriteString(s)
	if n := len(p.content); n > 0 && p.content[n-1].end == start { // adjacent: one span
		p.content[n-1].end = p.b.Len()
		return
	}
	p.content = append(p.content, span{start, p.b.Len()})
}

func (p *promptBuilder) prompt() Prompt { return Prompt{Text: p.b.String(), content: p.content} }

// EncodePrompt is Encode for a rendered prompt: a special token (<|im_start|>,
// <|im_end|>, <|endoftext|>, ...) is read only where the template wrote it;
// within a message's text its characters are tokenized as text. Added tokens
// that are not special (<think>, <tool_call>, ...) are read anywhere, as
// Hugging Face tokenizes them, so the model's own replies encode as it wrote
// them. Text without special tokens encodes as Encode(p.Text) does.
func (t *Tokenizer) EncodePrompt(p Prompt) []int32 { return t.encode(p.Text, p.content) }
