package jsonmsg

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestExplain(t *testing.T) {
	var v struct {
		Hidden int              `json:"hidden_size"`
		TopP   float64          `json:"top_p"`
		Names  []string         `json:"names"`
		Flag   *bool            `json:"flag"`
		Nested struct{ N uint } `json:"nested"`
	}
	for doc, want := range map[string]string{
		`{"hidden_size": "lots"}`:    "hidden_size is a string; want a whole number",
		`{"hidden_size": 1.5}`:       "hidden_size is the number 1.5; want a whole number",
		`{"top_p": true}`:            "top_p is true or false; want a number",
		`{"names": {"a": 1}}`:        "names is an object; want a list",
		`{"flag": 3}`:                "flag is a number; want true or false",
		`{"nested": {"N": -1}}`:      "nested.N is the number -1; want a whole number ≥ 0",
		"{\n\"top_p\": 1,\n\"x\": }": "invalid JSON at line 3",
	} {
		err := Explain(json.Unmarshal([]byte(doc), &v), []byte(doc))
		if err == nil || !strings.Contains(err.Error(), want) || strings.Contains(err.Error(), "Go ") {
			t.Errorf("%s: %v, want %q", doc, err, want)
		}
	}
}
