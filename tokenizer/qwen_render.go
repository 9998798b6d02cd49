package tokenizer

import (
	"errors"
	"strings"
	"unicode"
)

// The two renderers below follow templates/qwen3.jinja and
// templates/qwen35.jinja statement by statement; comments quote the Jinja
// they stand for. Python string methods map as: s.strip('\n') ->
// strings.Trim(s, "\n"), s.lstrip('\n') -> strings.TrimLeft, x|trim ->
// jinjaTrim, s.split(sep)[0] -> before, s.split(sep)[-1] -> afterLast.
// What the template writes goes through markup, what a message holds through
// text (promptBuilder), so that the encoder can tell them apart.

// renderQwen3 renders the Qwen3 template (without tools).
func renderQwen3(msgs []Message, opts RenderOptions) (Prompt, error) {
	var b promptBuilder
	// {%- if messages[0].role == 'system' %} (no tools)
	if msgs[0].Role == "system" {
		b.markup("<|im_start|>system\n")
		b.text(msgs[0].Content)
		b.markup("<|im_end|>\n")
	}
	// last_query_index: the last user turn that is not a wrapped tool
	// response; it stays len-1 when there is none.
	lastQuery := len(msgs) - 1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && !isToolResponse(msgs[i].Content) {
			lastQuery = i
			break
		}
	}
	last := len(msgs) - 1
	for i, m := range msgs {
		switch {
		case m.Role == "user" || (m.Role == "system" && i > 0):
			b.markup("<|im_start|>" + m.Role + "\n")
			b.text(m.Content)
			b.markup("<|im_end|>\n")
		case m.Role == "assistant":
			content, reasoning := m.Content, ""
			if m.Reasoning != "" {
				reasoning = m.Reasoning
			} else if strings.Contains(m.Content, "</think>") {
				content = strings.TrimLeft(afterLast(m.Content, "</think>"), "\n")
				reasoning = strings.TrimLeft(afterLast(strings.TrimRight(before(m.Content, "</think>"), "\n"), "<think>"), "\n")
			}
			// Turns after the last user query keep their reasoning; earlier
			// ones lose it. An empty reasoning block is written only for the
			// final turn.
			if i > lastQuery && (i == last || reasoning != "") {
				b.markup("<|im_start|>assistant\n<think>\n")
				b.text(strings.Trim(reasoning, "\n"))
				b.markup("\n</think>\n\n")
				b.text(strings.TrimLeft(content, "\n"))
			} else {
				b.markup("<|im_start|>assistant\n")
				b.text(content)
			}
			b.markup("<|im_end|>\n")
		case m.Role == "tool":
			// Consecutive tool results share one user turn.
			if i == 0 || msgs[i-1].Role != "tool" {
				b.markup("<|im_start|>user")
			}
			b.markup("\n<tool_response>\n")
			b.text(m.Content)
			b.markup("\n</tool_response>")
			if i == last || msgs[i+1].Role != "tool" {
				b.markup("<|im_end|>\n")
			}
		}
	}
	if opts.AddGenerationPrompt {
		b.markup("<|im_start|>assistant\n")
		if !opts.EnableThinking {
			b.markup("<think>\n\n</think>\n\n")
		}
	}
	return b.prompt(), nil
}

// renderQwen35 renders the Qwen3.5 template (without tools or images). Unlike
// Qwen3 it trims every message, insists on a user query, and gives every
// assistant turn after that query a think block, empty or not.
func renderQwen35(msgs []Message, opts RenderOptions) (Prompt, error) {
	var b promptBuilder
	if msgs[0].Role == "system" {
		b.markup("<|im_start|>system\n")
		b.text(jinjaTrim(msgs[0].Content))
		b.markup("<|im_end|>\n")
	}
	lastQuery := -1
	for i := len(msgs) - 1; i >= 0; i-- {
		if msgs[i].Role == "user" && !isToolResponse(jinjaTrim(msgs[i].Content)) {
			lastQuery = i
			break
		}
	}
	if lastQuery < 0 {
		// raise_exception('No user query found in messages.')
		return Prompt{}, errors.New("chat template: the conversation has no user message (tool results do not count)")
	}
	last := len(msgs) - 1
	for i, m := range msgs {
		content := jinjaTrim(m.Content)
		switch m.Role {
		case "system":
			if i > 0 {
				// raise_exception('System message must be at the beginning.')
				return Prompt{}, errors.New("chat template: a system message may only be the first message")
			}
		case "user":
			b.markup("<|im_start|>user\n")
			b.text(content)
			b.markup("<|im_end|>\n")
		case "assistant":
			reasoning := ""
			if m.Reasoning != "" {
				reasoning = m.Reasoning
			} else if strings.Contains(content, "</think>") {
				reasoning = strings.TrimLeft(afterLast(strings.TrimRight(before(content, "</think>"), "\n"), "<think>"), "\n")
				content = strings.TrimLeft(afterLast(content, "</think>"), "\n")
			}
			reasoning = jinjaTrim(reasoning)
			if i > lastQuery {
				b.markup("<|im_start|>assistant\n<think>\n")
				b.text(reasoning)
				b.markup("\n</think>\n\n")
				b.text(content)
			} else {
				b.markup("<|im_start|>assistant\n")
				b.text(content)
			}
			b.markup("<|im_end|>\n")
		case "tool":
			// {%- if loop.previtem and loop.previtem.role != "tool" %}: a tool
			// message in first position gets no user header.
			if i > 0 && msgs[i-1].Role != "tool" {
				b.markup("<|im_start|>user")
			}
			b.markup("\n<tool_response>\n")
			b.text(content)
			b.markup("\n</tool_response>")
			if i == last || msgs[i+1].Role != "tool" {
				b.markup("<|im_end|>\n")
			}
		}
	}
	if opts.AddGenerationPrompt {
		b.markup("<|im_start|>assistant\n")
		if opts.EnableThinking {
			b.markup("<think>\n")
		} else {
			b.markup("<think>\n\n</think>\n\n")
		}
	}
	return b.prompt(), nil
}

func isToolResponse(s string) bool {
	return strings.HasPrefix(s, "<tool_response>") && strings.HasSuffix(s, "</tool_response>")
}

// before is s.split(sep)[0]: the text before the first sep.
func before(s, sep string) string {
	head, _, _ := strings.Cut(s, sep)
	return head
}

// afterLast is s.split(sep)[-1]: the text after the last sep.
func afterLast(s, sep string) string {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[i+len(sep):]
	}
	return s
}

// jinjaTrim is Jinja's trim filter, Python's str.strip(): it also strips the
// ASCII separators U+001C..U+001F, which Go's unicode.IsSpace does not count
// as space.
func jinjaTrim(s string) string {
	return strings.TrimFunc(s, func(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1C && r <= 0x1F) })
}
