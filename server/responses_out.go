package server

import (
	"encoding/json"
	"fmt"
	"net/http"
	"strings"

	"bagel/engine"
)

// respBuilder turns one generation into a Responses API answer: output
// items in order (reasoning, message, function_call, custom_tool_call),
// and, when event is set, the stream's events as the items grow.
type respBuilder struct {
	a       *answer
	req     responsesRequest
	customs map[string]bool // the custom tools offered
	// event writes one streamed event (nil: a whole answer); false when the
	// client is gone.
	event func(kind string, fields map[string]any) bool

	output []map[string]any // the items so far
	open   string           // the item growing: "reasoning", "message" or ""
	text   strings.Builder  // the open item's text
}

func (b *respBuilder) itemID(prefix string) string {
	return fmt.Sprintf("%s_%s_%d", prefix, strings.TrimPrefix(b.a.id, "resp_"), len(b.output))
}

func (b *respBuilder) emit(kind string, fields map[string]any) bool {
	return b.event == nil || b.event(kind, fields)
}

// textItem is the open item as it stands.
func (b *respBuilder) textItem(status string) map[string]any {
	item := b.output[len(b.output)-1]
	text := b.text.String()
	if b.open == "reasoning" {
		item["content"] = []any{map[string]any{"type": "reasoning_text", "text": text}}
	} else {
		item["content"] = []any{outputText(text)}
	}
	item["status"] = status
	return item
}

func outputText(text string) map[string]any {
	return map[string]any{"type": "output_text", "text": text, "annotations": []any{}, "logprobs": []any{}}
}

// add appends text to the item of its kind, opening it (and closing the
// other) as needed.
func (b *respBuilder) add(text string, thinking bool) bool {
	kind := "message"
	if thinking {
		kind = "reasoning"
	}
	if b.open != kind {
		if !b.closeItem() {
			return false
		}
		b.open = kind
		var item map[string]any
		if thinking {
			item = map[string]any{"type": "reasoning", "id": b.itemID("rs"), "summary": []any{}, "content": []any{}}
		} else {
			item = map[string]any{"type": "message", "id": b.itemID("msg"), "role": "assistant", "content": []any{}}
		}
		item["status"] = "in_progress"
		b.output = append(b.output, item)
		index := len(b.output) - 1
		if !b.emit("response.output_item.added", map[string]any{"output_index": index, "item": item}) {
			return false
		}
		if !thinking && !b.emit("response.content_part.added", map[string]any{"item_id": item["id"], "output_index": index,
			"content_index": 0, "part": outputText("")}) {
			return false
		}
	}
	b.text.WriteString(text)
	delta := "response.output_text.delta"
	if thinking {
		delta = "response.reasoning_text.delta"
	}
	index := len(b.output) - 1
	return b.emit(delta, map[string]any{"item_id": b.output[index]["id"], "output_index": index, "content_index": 0, "delta": text})
}

// closeItem finishes the open reasoning or message item.
func (b *respBuilder) closeItem() bool {
	if b.open == "" {
		return true
	}
	index := len(b.output) - 1
	item := b.textItem("completed")
	text := b.text.String()
	ok := true
	if b.open == "reasoning" {
		ok = b.emit("response.reasoning_text.done", map[string]any{"item_id": item["id"], "output_index": index, "content_index": 0, "text": text})
	} else {
		ok = b.emit("response.output_text.done", map[string]any{"item_id": item["id"], "output_index": index, "content_index": 0, "text": text, "logprobs": []any{}}) &&
			b.emit("response.content_part.done", map[string]any{"item_id": item["id"], "output_index": index, "content_index": 0, "part": outputText(text)})
	}
	b.open = ""
	b.text.Reset()
	return ok && b.emit("response.output_item.done", map[string]any{"output_index": index, "item": item})
}

// call appends a tool call as its own item: a custom tool's call carries
// its text as input, a function's its arguments.
func (b *respBuilder) call(index int, c toolCall) bool {
	if !b.closeItem() {
		return false
	}
	callID := fmt.Sprintf("call_%s_%d", strings.TrimPrefix(b.a.id, "resp_"), index)
	item := map[string]any{"type": "function_call", "id": b.itemID("fc"), "call_id": callID, "name": c.name, "arguments": "", "status": "in_progress"}
	payload, kind := c.arguments, "function_call_arguments"
	if b.customs[c.name] {
		var args map[string]any
		json.Unmarshal([]byte(c.arguments), &args)
		input, ok := args[customInput].(string)
		if !ok {
			input = c.arguments
		}
		item = map[string]any{"type": "custom_tool_call", "id": b.itemID("ctc"), "call_id": callID, "name": c.name, "input": "", "status": "in_progress"}
		payload, kind = input, "custom_tool_call_input"
	}
	b.output = append(b.output, item)
	at := len(b.output) - 1
	field := "arguments"
	if kind == "custom_tool_call_input" {
		field = "input"
	}
	if !b.emit("response.output_item.added", map[string]any{"output_index": at, "item": item}) ||
		!b.emit("response."+kind+".delta", map[string]any{"item_id": item["id"], "output_index": at, "delta": payload}) ||
		!b.emit("response."+kind+".done", map[string]any{"item_id": item["id"], "output_index": at, field: payload}) {
		return false
	}
	item[field], item["status"] = payload, "completed"
	return b.emit("response.output_item.done", map[string]any{"output_index": at, "item": item})
}

// response is the response object: status in_progress, completed,
// incomplete (the token limit) or failed.
func (b *respBuilder) response(status string, o *outcome, err error) map[string]any {
	r := b.req
	toolChoice := any("auto")
	if len(r.ToolChoice) > 0 {
		toolChoice = r.ToolChoice
	}
	tools := r.Tools
	if tools == nil {
		tools = []json.RawMessage{}
	}
	output := b.output
	if output == nil {
		output = []map[string]any{}
	}
	resp := map[string]any{"id": b.a.id, "object": "response", "created_at": b.a.created, "status": status, "model": b.a.model,
		"output": output, "instructions": nilIfBlank(r.Instructions), "tools": tools, "tool_choice": toolChoice,
		"parallel_tool_calls": true, "temperature": r.Temperature, "top_p": r.TopP, "max_output_tokens": r.MaxOutputTokens,
		"previous_response_id": nil, "store": false, "truncation": "disabled", "text": map[string]any{"format": map[string]any{"type": "text"}},
		"metadata": map[string]any{}, "incomplete_details": nil, "error": nil, "usage": nil}
	if status == "incomplete" {
		resp["incomplete_details"] = map[string]any{"reason": "max_output_tokens"}
	}
	if err != nil {
		_, code := errorStatus(err)
		resp["error"] = map[string]any{"code": code, "message": err.Error()}
	}
	if o != nil {
		st := o.stats
		resp["usage"] = map[string]any{"input_tokens": st.PromptTokens, "input_tokens_details": map[string]any{"cached_tokens": st.ReusedPromptTokens},
			"output_tokens": st.GeneratedTokens, "output_tokens_details": map[string]any{"reasoning_tokens": o.reasoningTokens},
			"total_tokens": st.PromptTokens + st.GeneratedTokens}
		if why := nilIfEmpty(o.malformed); why != nil {
			resp["tool_call_error"] = why // Bagel's own: why a <tool_call> stayed text
		}
	}
	return resp
}

func nilIfBlank(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// finalStatus is the response's status once the reply ended.
func finalStatus(o outcome) string {
	if o.reason == "length" {
		return "incomplete"
	}
	return "completed"
}

// whole answers with one response object once the reply is complete.
func (b *respBuilder) whole(w http.ResponseWriter, events <-chan engine.Event) outcome {
	o := b.a.read(events, b.add, b.call)
	if o.err != nil {
		status, code := errorStatus(o.err)
		apiError(w, status, code, o.err.Error())
		return o
	}
	b.closeItem()
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(b.response(finalStatus(o), &o, nil))
	return o
}

// stream answers with the Responses API's events (event: TYPE, data: the
// event with its type and sequence_number): response.created and
// response.in_progress, each item's added, deltas, done, then
// response.completed (or response.incomplete; response.failed on an error
// once the stream began). Nothing is written before the first event, so a
// request the engine refuses still gets its status.
func (b *respBuilder) stream(w http.ResponseWriter, events <-chan engine.Event) outcome {
	s, seq := newSSE(w), 0
	write := func(kind string, fields map[string]any) bool {
		fields["type"], fields["sequence_number"] = kind, seq
		seq++
		return s.send(kind, fields)
	}
	begin := func() bool {
		if !s.open() {
			return true
		}
		return write("response.created", map[string]any{"response": b.response("in_progress", nil, nil)}) &&
			write("response.in_progress", map[string]any{"response": b.response("in_progress", nil, nil)})
	}
	b.event = func(kind string, fields map[string]any) bool { return begin() && write(kind, fields) }
	o := b.a.read(events, b.add, b.call)
	if o.err != nil {
		if !s.started {
			status, code := errorStatus(o.err)
			apiError(w, status, code, o.err.Error())
			return o
		}
		write("response.failed", map[string]any{"response": b.response("failed", &o, o.err)})
		return o
	}
	if !begin() || !b.closeItem() {
		return o
	}
	status := finalStatus(o)
	write("response."+status, map[string]any{"response": b.response(status, &o, nil)})
	return o
}
