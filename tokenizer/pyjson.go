package tokenizer

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// The Qwen templates print tools and tool-call arguments with transformers'
// tojson filter (Python's json.dumps(x, ensure_ascii=False): ", " and ": "
// between items, keys in the order given, only quotes, backslashes and
// control characters escaped) and scalars with Jinja's |string (Python's
// str(): True, None, 1.0). Go's encoding/json writes none of these the same
// way, so the two are written out here, reading the JSON token by token to
// keep the caller's key order.

// pyJSON is tojson of the JSON value raw.
func pyJSON(raw json.RawMessage) (string, error) {
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var b strings.Builder
	if err := pyValue(dec, &b); err != nil {
		return "", err
	}
	if _, err := dec.Token(); err != io.EOF {
		return "", fmt.Errorf("more than one JSON value")
	}
	return b.String(), nil
}

func pyValue(dec *json.Decoder, b *strings.Builder) error {
	tok, err := dec.Token()
	if err != nil {
		return err
	}
	switch v := tok.(type) {
	case json.Delim:
		closing, sep := json.Delim('}'), ": "
		b.WriteByte(byte(v))
		if v == '[' {
			closing = ']'
		}
		for i := 0; dec.More(); i++ {
			if i > 0 {
				b.WriteString(", ")
			}
			if v == '{' {
				key, err := dec.Token()
				if err != nil {
					return err
				}
				b.WriteString(pyQuote(key.(string)))
				b.WriteString(sep)
			}
			if err := pyValue(dec, b); err != nil {
				return err
			}
		}
		if end, err := dec.Token(); err != nil || end != closing {
			return fmt.Errorf("unbalanced JSON")
		}
		b.WriteByte(byte(closing))
	case string:
		b.WriteString(pyQuote(v))
	case json.Number:
		b.WriteString(pyNumber(v))
	case bool:
		b.WriteString(strconv.FormatBool(v))
	case nil:
		b.WriteString("null")
	}
	return nil
}

// pyString is |string of the JSON value raw: a string as it is, an object
// or a list as tojson (the templates print those with tojson first), true
// as True, null as None, a number as Python prints it.
func pyString(raw json.RawMessage) (string, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 {
		return "", fmt.Errorf("an empty value")
	}
	switch raw[0] {
	case '"':
		var s string
		err := json.Unmarshal(raw, &s)
		return s, err
	case '{', '[':
		return pyJSON(raw)
	}
	switch string(raw) {
	case "true":
		return "True", nil
	case "false":
		return "False", nil
	case "null":
		return "None", nil
	}
	var n json.Number
	if err := json.Unmarshal(raw, &n); err != nil {
		return "", err
	}
	return pyNumber(n), nil
}

// pyNumber is how Python prints a JSON number: an integer as written, any
// other as repr(float): the shortest digits, positional from 1e-4 up to
// 1e16 with at least one decimal, else d.ddde±XX.
func pyNumber(n json.Number) string {
	s := n.String()
	if !strings.ContainsAny(s, ".eE") {
		return s
	}
	f, err := n.Float64()
	if err != nil { // out of range: Python reads it as inf
		if strings.HasPrefix(s, "-") {
			return "-inf"
		}
		return "inf"
	}
	e := strconv.FormatFloat(f, 'e', -1, 64) // -d.ddde±XX
	_, expText, _ := strings.Cut(e, "e")
	exp, _ := strconv.Atoi(expText)
	if exp < -4 || exp >= 16 {
		return e
	}
	s = strconv.FormatFloat(f, 'f', -1, 64)
	if !strings.Contains(s, ".") {
		s += ".0"
	}
	return s
}

// pyQuote is json.dumps of a string with ensure_ascii=False.
func pyQuote(s string) string {
	var b strings.Builder
	b.WriteByte('"')
	for _, r := range s {
		switch r {
		case '"':
			b.WriteString(`\"`)
		case '\\':
			b.WriteString(`\\`)
		case '\n':
			b.WriteString(`\n`)
		case '\r':
			b.WriteString(`\r`)
		case '\t':
			b.WriteString(`\t`)
		case '\b':
			b.WriteString(`\b`)
		case '\f':
			b.WriteString(`\f`)
		default:
			if r < 0x20 {
				fmt.Fprintf(&b, `\u%04x`, r)
			} else {
				b.WriteRune(r)
			}
		}
	}
	b.WriteByte('"')
	return b.String()
}
