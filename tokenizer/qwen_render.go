package tokenizer

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
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

// renderQwen3 renders the Qwen3 template: tools listed as JSON in the
// system turn, calls written as JSON objects.
func renderQwen3(msgs []Message, opts RenderOptions) (Prompt, error) {
	var b promptBuilder
	if len(opts.Tools) > 0 {
		// {%- if tools %}: the system message's content first, then the list.
		b.markup("<|im_start|>system\n")
		if msgs[0].Role == "system" {
			b.text(msgs[0].Content)
			b.markup("\n\n")
		}
		b.markup(qwen3ToolsHead)
		for _, tool := range opts.Tools {
			text, err := pyJSON(tool)
			if err != nil {
				return Prompt{}, fmt.Errorf("chat template: a tool: %w", err)
			}
			b.markup("\n")
			b.text(text)
		}
		b.markup(qwen3ToolsTail)
	} else if msgs[0].Role == "system" {
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
			if m.Images() > 0 {
				return Prompt{}, errors.New("chat template: the Qwen3 template has no image markers (a Qwen3.5 model's template does)")
			}
			b.markup("<|im_start|>" + m.Role + "\n")
			b.text(partsText(m))
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
			if err := writeQwen3ToolCalls(&b, m.ToolCalls, content != ""); err != nil {
				return Prompt{}, err
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

// renderQwen35 renders the Qwen3.5 template (without images). Unlike Qwen3
// it trims every message, insists on a user query, and gives every
// assistant turn after that query a think block, empty or not.
func renderQwen35(msgs []Message, opts RenderOptions) (Prompt, error) {
	var b promptBuilder
	if len(opts.Tools) > 0 {
		// {%- if tools and tools is iterable and tools is not mapping %}
		b.markup("<|im_start|>system\n" + qwen35ToolsHead)
		for _, tool := range opts.Tools {
			text, err := pyJSON(tool)
			if err != nil {
				return Prompt{}, fmt.Errorf("chat template: a tool: %w", err)
			}
			b.markup("\n")
			b.text(text)
		}
		b.markup("\n</tools>" + qwen35ToolsHowTo)
		if msgs[0].Role == "system" {
			if content := jinjaTrim(msgs[0].Content); content != "" {
				b.markup("\n\n")
				b.text(content)
			}
		}
		b.markup("<|im_end|>\n")
	} else if msgs[0].Role == "system" {
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
			if len(m.Parts) > 0 {
				writeParts(&b, m.Parts)
			} else {
				b.text(content)
			}
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
			if err := writeQwen35ToolCalls(&b, m.ToolCalls, jinjaTrim(content) != ""); err != nil {
				return Prompt{}, err
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

// qwen3ToolsHead and qwen3ToolsTail frame Qwen3's tool list, verbatim from
// its template.
const (
	qwen3ToolsHead = "# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>"
	qwen3ToolsTail = "\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{\"name\": <function-name>, \"arguments\": <args-json-object>}\n</tool_call><|im_end|>\n"
)

// writeQwen3ToolCalls writes an assistant turn's calls as Qwen3's template
// does: {"name": NAME, "arguments": tojson(arguments)} in <tool_call>
// blocks, a line break before each but a first one with no text before it.
func writeQwen3ToolCalls(b *promptBuilder, calls []ToolCall, afterText bool) error {
	for i, c := range calls {
		if i > 0 || afterText {
			b.markup("\n")
		}
		args := c.Arguments
		if len(bytes.TrimSpace(args)) == 0 {
			args = json.RawMessage("{}")
		}
		text, err := pyJSON(args)
		if err != nil {
			return fmt.Errorf("chat template: %s's arguments: %w", c.Name, err)
		}
		b.markup("<tool_call>\n{\"name\": \"")
		b.text(c.Name)
		b.markup("\", \"arguments\": ")
		b.text(text)
		b.markup("}\n</tool_call>")
	}
	return nil
}

// qwen35ToolsHead and qwen35ToolsHowTo frame the tool list in the system
// turn, verbatim from the template.
const (
	qwen35ToolsHead  = "# Tools\n\nYou have access to the following functions:\n\n<tools>"
	qwen35ToolsHowTo = "\n\nIf you choose to call a function ONLY reply in the following format with NO suffix:\n\n<tool_call>\n<function=example_function_name>\n<parameter=example_parameter_1>\nvalue_1\n</parameter>\n<parameter=example_parameter_2>\nThis is the value for the second parameter\nthat can span\nmultiple lines\n</parameter>\n</function>\n</tool_call>\n\n<IMPORTANT>\nReminder:\n- Function calls MUST follow the specified format: an inner <function=...></function> block must be nested within <tool_call></tool_call> XML tags\n- Required parameters MUST be specified\n- You may provide optional reasoning for your function call in natural language BEFORE the function call, but NOT after\n- If there is no function call available, answer the question like normal with your current knowledge and do not tell the user about function calls\n</IMPORTANT>"
)

// writeQwen35ToolCalls writes an assistant turn's tool calls after its
// content (afterText: the trimmed content is not empty):
//
//	<tool_call>\n<function=NAME>\n<parameter=KEY>\nVALUE\n</parameter>\n</function>\n</tool_call>
//
// an object or a list VALUE as tojson, any other as |string.
func writeQwen35ToolCalls(b *promptBuilder, calls []ToolCall, afterText bool) error {
	for i, c := range calls {
		switch {
		case i > 0:
			b.markup("\n<tool_call>\n<function=")
		case afterText:
			b.markup("\n\n<tool_call>\n<function=")
		default:
			b.markup("<tool_call>\n<function=")
		}
		b.text(c.Name)
		b.markup(">\n")
		if len(bytes.TrimSpace(c.Arguments)) > 0 {
			dec := json.NewDecoder(bytes.NewReader(c.Arguments))
			if _, err := dec.Token(); err != nil { // {
				return fmt.Errorf("chat template: %s's arguments: %w", c.Name, err)
			}
			for dec.More() {
				key, err := dec.Token()
				if err != nil {
					return fmt.Errorf("chat template: %s's arguments: %w", c.Name, err)
				}
				var raw json.RawMessage
				if err := dec.Decode(&raw); err != nil {
					return fmt.Errorf("chat template: %s's arguments: %w", c.Name, err)
				}
				value, err := pyString(raw)
				if err != nil {
					return fmt.Errorf("chat template: %s's argument %s: %w", c.Name, key, err)
				}
				b.markup("<parameter=")
				b.text(key.(string))
				b.markup(">\n")
				b.text(value)
				b.markup("\n</parameter>\n")
			}
		}
		b.markup("</function>\n</tool_call>")
	}
	return nil
}

// imageMarkup is what the Qwen3.5 template writes for an image
// (render_content: '<|vision_start|><|image_pad|><|vision_end|>').
const imageMarkup = "<|vision_start|><|image_pad|><|vision_end|>"

// writeParts writes a user message's parts as render_content(content)|trim
// does: images as their markers, texts as they are, the whole trimmed (the
// first text's start when it comes first, the last text's end when it
// comes last).
func writeParts(b *promptBuilder, parts []Part) {
	var merged []Part // adjacent texts joined, so that the trim sees the whole end
	for _, p := range parts {
		if n := len(merged); n > 0 && !p.Image && !merged[n-1].Image {
			merged[n-1].Text += p.Text
			continue
		}
		merged = append(merged, p)
	}
	parts = merged
	for i, p := range parts {
		if p.Image {
			b.markup(imageMarkup)
			continue
		}
		t := p.Text
		if i == 0 {
			t = strings.TrimLeftFunc(t, jinjaSpace)
		}
		if i == len(parts)-1 {
			t = strings.TrimRightFunc(t, jinjaSpace)
		}
		b.text(t)
	}
}

// partsText is a message's text: its content, or its text parts joined.
func partsText(m Message) string {
	if len(m.Parts) == 0 {
		return m.Content
	}
	var s strings.Builder
	for _, p := range m.Parts {
		s.WriteString(p.Text)
	}
	return s.String()
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
func jinjaTrim(s string) string { return strings.TrimFunc(s, jinjaSpace) }

// jinjaSpace is what Python's str.strip takes for whitespace.
func jinjaSpace(r rune) bool { return unicode.IsSpace(r) || (r >= 0x1C && r <= 0x1F) }
