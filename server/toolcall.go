package server

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
)

// Qwen3.5 calls a tool by writing, instead of (or after) its answer,
//
//	<tool_call>
//	<function=NAME>
//	<parameter=KEY>
//	VALUE
//	</parameter>
//	</function>
//	</tool_call>
//
// (the qwen3_coder format its chat template teaches); Qwen3 writes
// {"name": NAME, "arguments": {…}} between the same tags. toolScanner finds
// those blocks in the streamed text and parses each strictly into OpenAI's
// {name, arguments}; a block that does not parse, or calls a function the
// request did not offer, stays text, and the reply says why (never a server
// error: the model's mistakes are the client's to see).

const (
	callOpen  = "<tool_call>"
	callClose = "</tool_call>"
)

// toolCall is one parsed call: its function and arguments, a JSON object.
type toolCall struct {
	name, arguments string
}

// toolSchemas are the offered functions' parameter types by name.
type toolSchemas map[string]map[string]string

// parseTools checks the request's tools ({"type": "function", "function":
// {"name", "parameters": {"properties": {KEY: {"type": T}}}}}) and reads
// their parameter types.
func parseTools(tools []json.RawMessage) (toolSchemas, error) {
	out := toolSchemas{}
	for i, raw := range tools {
		var t struct {
			Type     string `json:"type"`
			Function *struct {
				Name       string `json:"name"`
				Parameters struct {
					Properties map[string]struct {
						Type json.RawMessage `json:"type"`
					} `json:"properties"`
				} `json:"parameters"`
			} `json:"function"`
		}
		if err := json.Unmarshal(raw, &t); err != nil {
			return nil, fmt.Errorf("tools[%d]: %s", i, jsonText(err))
		}
		if t.Type != "function" || t.Function == nil || t.Function.Name == "" {
			return nil, fmt.Errorf(`tools[%d]: want {"type": "function", "function": {"name": ..., "parameters": ...}}`, i)
		}
		if _, dup := out[t.Function.Name]; dup {
			return nil, fmt.Errorf("tools[%d]: a second function named %q", i, t.Function.Name)
		}
		types := map[string]string{}
		for key, p := range t.Function.Parameters.Properties {
			types[key] = schemaType(p.Type)
		}
		out[t.Function.Name] = types
	}
	return out, nil
}

// toolChoice is how a request lets the model use the tools it lists.
type toolChoice struct {
	mode string // "auto" (the model decides), "none", "required" or "named"
	name string // the function, when named
}

// chooseTools applies c to g, whose tools are read: "none" lists none;
// "required" and a named function begin the reply with a call's markup
// (engine.Request.ReplyPrefix), so the model's first words are a call, to a
// function of its choosing or to the one named. Thinking is off for them:
// the call is the reply's start, where the reasoning would be.
// prefix gives the model's template's opening of a call (Engine.ToolCallPrefix).
func (g *generation) chooseTools(c toolChoice, prefix func(name string) (string, error)) error {
	name := ""
	switch c.mode {
	case "auto":
		return nil
	case "none":
		g.tools, g.req.Tools = nil, nil
		return nil
	case "required":
	case "named":
		if _, ok := g.tools[c.name]; !ok {
			return fmt.Errorf("tool_choice names the function %q, which is not among the tools", clip(c.name))
		}
		if strings.ContainsAny(c.name, "<>\n\"\\") {
			return fmt.Errorf("tool_choice names %q: a forced function's name cannot hold <, >, a quote, a backslash or a line break", clip(c.name))
		}
		name = c.name
	default:
		return fmt.Errorf("tool_choice %q: want auto, none, required or a function", clip(c.mode))
	}
	p, err := prefix(name)
	if err != nil {
		return err
	}
	g.req.EnableThinking, g.thinkingOn = false, false
	g.req.ReplyPrefix = p
	return nil
}

// schemaType is a JSON schema's "type": a name, or the first of a list
// that is not "null".
func schemaType(raw json.RawMessage) string {
	var one string
	if json.Unmarshal(raw, &one) == nil {
		return one
	}
	var many []string
	json.Unmarshal(raw, &many)
	for _, t := range many {
		if t != "null" {
			return t
		}
	}
	return ""
}

// toolScanner splits a reply's text into plain text and tool calls.
type toolScanner struct {
	tools toolSchemas
	// buf holds back what may begin <tool_call>, or an open block. Bytes
	// appended, not strings joined: a call writing a 234 KB file token by
	// token copied its block again each token (3.5 s of copying).
	buf     []byte
	inBlock bool
	// searched is how much of an open block's buf has no </tool_call> starting
	// in it, so that each token's search starts near its end.
	searched int
}

// add takes more text and returns the plain text that may be sent now, the
// calls completed, and why a block stayed text (malformed).
func (s *toolScanner) add(text string) (out string, calls []toolCall, malformed []string) {
	s.buf = append(s.buf, text...)
	var b strings.Builder
	for {
		if !s.inBlock {
			i := bytes.Index(s.buf, []byte(callOpen))
			if i < 0 {
				keep := partialSuffix(string(s.buf[max(0, len(s.buf)-len(callOpen)):]), callOpen)
				b.Write(s.buf[:len(s.buf)-keep])
				s.buf = append(s.buf[:0], s.buf[len(s.buf)-keep:]...)
				return b.String(), calls, malformed
			}
			b.Write(s.buf[:i])
			s.buf, s.inBlock, s.searched = s.buf[i+len(callOpen):], true, 0
		}
		j := bytes.Index(s.buf[s.searched:], []byte(callClose))
		if j < 0 {
			s.searched = max(0, len(s.buf)-len(callClose)+1)
			return b.String(), calls, malformed
		}
		j += s.searched
		inner := string(s.buf[:j])
		s.buf, s.inBlock = s.buf[j+len(callClose):], false
		c, err := s.tools.parse(inner)
		if err != nil {
			b.WriteString(callOpen + inner + callClose)
			malformed = append(malformed, err.Error())
			continue
		}
		calls = append(calls, c)
	}
}

// flush returns what is held at the end of the reply: a block never closed
// is text, and malformed.
func (s *toolScanner) flush() (out string, malformed []string) {
	out = string(s.buf)
	if s.inBlock {
		out = callOpen + out
		malformed = []string{"a <tool_call> block was never closed"}
	}
	s.buf, s.inBlock, s.searched = nil, false, 0
	return out, malformed
}

// partialSuffix is the length of the longest end of s that begins marker.
func partialSuffix(s, marker string) int {
	for n := min(len(marker)-1, len(s)); n > 0; n-- {
		if strings.HasSuffix(s, marker[:n]) {
			return n
		}
	}
	return 0
}

// parse reads one block's inside: Qwen3.5's <function=NAME> then
// <parameter=KEY> VALUE </parameter> pairs then </function>, with only blank
// text between; or Qwen3's JSON object {"name": NAME, "arguments": {…}}.
func (ts toolSchemas) parse(inner string) (toolCall, error) {
	if strings.HasPrefix(strings.TrimSpace(inner), "{") {
		return ts.parseJSON(inner)
	}
	body, ok := strings.CutPrefix(strings.TrimSpace(inner), "<function=")
	if !ok {
		return toolCall{}, fmt.Errorf("a <tool_call> block without <function=NAME>")
	}
	name, body, ok := strings.Cut(body, ">")
	if !ok || name == "" || strings.ContainsAny(name, "<\n") {
		return toolCall{}, fmt.Errorf("a <function=NAME> tag that does not parse")
	}
	types, offered := ts[name]
	if !offered {
		return toolCall{}, fmt.Errorf("a call of %q, which the request did not offer", clip(name))
	}
	body, ok = strings.CutSuffix(strings.TrimSpace(body), "</function>")
	if !ok {
		return toolCall{}, fmt.Errorf("%s: no </function> before </tool_call>", name)
	}
	var args bytes.Buffer
	args.WriteByte('{')
	seen := map[string]bool{}
	for {
		body = strings.TrimSpace(body)
		if body == "" {
			break
		}
		rest, ok := strings.CutPrefix(body, "<parameter=")
		if !ok {
			return toolCall{}, fmt.Errorf("%s: text outside <parameter=KEY> tags", name)
		}
		key, rest, ok := strings.Cut(rest, ">")
		if !ok || key == "" || strings.ContainsAny(key, "<\n") {
			return toolCall{}, fmt.Errorf("%s: a <parameter=KEY> tag that does not parse", name)
		}
		value, after, ok := strings.Cut(rest, "</parameter>")
		if !ok {
			return toolCall{}, fmt.Errorf("%s: parameter %s has no </parameter>", name, clip(key))
		}
		if seen[key] {
			return toolCall{}, fmt.Errorf("%s: parameter %s given twice", name, clip(key))
		}
		seen[key] = true
		// The template writes "\nVALUE\n" between the tags.
		value = strings.TrimPrefix(value, "\n")
		value = strings.TrimSuffix(value, "\n")
		if args.Len() > 1 {
			args.WriteByte(',')
		}
		k, _ := json.Marshal(key)
		args.Write(k)
		args.WriteByte(':')
		args.Write(typedValue(value, types[key]))
		body = after
	}
	args.WriteByte('}')
	return toolCall{name: name, arguments: args.String()}, nil
}

// parseJSON reads Qwen3's call: one JSON object with the function's name
// and its arguments, an object (or a string holding one, as some models
// write it).
func (ts toolSchemas) parseJSON(inner string) (toolCall, error) {
	var c struct {
		Name      string          `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	dec := json.NewDecoder(strings.NewReader(inner))
	if err := dec.Decode(&c); err != nil || dec.More() {
		return toolCall{}, fmt.Errorf("a <tool_call> block whose JSON does not parse")
	}
	if c.Name == "" {
		return toolCall{}, fmt.Errorf("a <tool_call> object without a name")
	}
	if _, offered := ts[c.Name]; !offered {
		return toolCall{}, fmt.Errorf("a call of %q, which the request did not offer", clip(c.Name))
	}
	args := bytes.TrimSpace(c.Arguments)
	var quoted string
	if json.Unmarshal(args, &quoted) == nil {
		args = []byte(strings.TrimSpace(quoted))
	}
	if len(args) == 0 || string(args) == "null" {
		args = []byte("{}")
	}
	var b bytes.Buffer
	if args[0] != '{' || json.Compact(&b, args) != nil {
		return toolCall{}, fmt.Errorf("%s: arguments that are not a JSON object", c.Name)
	}
	return toolCall{name: c.Name, arguments: b.String()}, nil
}

// typedValue is a parameter's text as the JSON its schema type asks for; a
// value that does not read as that type, or one without a type, stays a
// string (the client's validation then names it).
func typedValue(v, typ string) []byte {
	t := strings.TrimSpace(v)
	switch typ {
	case "integer", "number":
		if _, err := strconv.ParseFloat(t, 64); err == nil && json.Valid([]byte(t)) {
			return []byte(t)
		}
	case "boolean":
		switch strings.ToLower(t) {
		case "true":
			return []byte("true")
		case "false":
			return []byte("false")
		}
	case "object", "array":
		if len(t) > 0 && (t[0] == '{' || t[0] == '[') && json.Valid([]byte(t)) {
			var b bytes.Buffer
			json.Compact(&b, []byte(t))
			return b.Bytes()
		}
	case "null":
		if t == "null" || t == "None" {
			return []byte("null")
		}
	}
	s, _ := json.Marshal(v)
	return s
}
