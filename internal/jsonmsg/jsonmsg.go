// Package jsonmsg turns encoding/json's errors into sentences a person can
// act on: the field by its JSON name and the value it wants, never a Go type
// or struct name ("hidden_size is a string; want a whole number" for
// "cannot unmarshal string into Go struct field rawText.hidden_size of type int").
package jsonmsg

import (
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
)

// Explain returns err reworded when it is a JSON type or syntax error (data
// is the document, for the line of a syntax error; nil is fine), else err.
func Explain(err error, data []byte) error {
	var typ *json.UnmarshalTypeError
	var syn *json.SyntaxError
	switch {
	case errors.As(err, &typ):
		field := typ.Field
		if field == "" {
			field = "the document"
		}
		return fmt.Errorf("%s is %s; want %s", field, article(typ.Value), want(typ.Type))
	case errors.As(err, &syn):
		line := 1
		for _, c := range data[:min(int(syn.Offset), len(data))] {
			if c == '\n' {
				line++
			}
		}
		return fmt.Errorf("invalid JSON at line %d: %s", line, syn.Error())
	}
	return err
}

// article names a JSON value kind ("string", "number", "object", ...) as "a
// string", "an object".
func article(kind string) string {
	switch kind {
	case "object", "array":
		return "an " + kind
	case "bool":
		return "true or false"
	case "":
		return "of the wrong kind"
	}
	if len(kind) > 6 && kind[:6] == "number" {
		return "the number" + kind[6:]
	}
	return "a " + kind
}

// want names what a Go type accepts in JSON.
func want(t reflect.Type) string {
	if t == nil {
		return "another kind of value"
	}
	switch t.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return "a whole number"
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return "a whole number ≥ 0"
	case reflect.Float32, reflect.Float64:
		return "a number"
	case reflect.Bool:
		return "true or false"
	case reflect.String:
		return "a string"
	case reflect.Slice, reflect.Array:
		return "a list"
	case reflect.Map, reflect.Struct:
		return "an object"
	case reflect.Pointer:
		return want(t.Elem())
	}
	return "another kind of value"
}
