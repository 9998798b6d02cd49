// Package server serves a loaded model to other programs over HTTP, in the
// API the tools people already use speak: OpenAI's chat completions and
// completions with streaming (server-sent events), usage with the prompt
// tokens reused, and the model's reasoning as reasoning_content — what
// LM Studio and llama-server answer. It binds the loopback interface unless
// told otherwise, and then only with an API key; without a key it refuses
// requests whose Host is a domain name other than localhost (DNS
// rebinding), and it refuses browsers' cross-origin requests unless their
// origin is allowed.
//
// One request generates at a time (the engine has one cache), the others
// wait in a bounded queue, in order; a full queue answers 429. A client that
// goes away stops its generation. Built on net/http alone: the handful of
// endpoints and their JSON are simpler written out than adapted from a
// framework.
//
// The engine's errors keep their meaning: a prompt longer than the context is
// a 400 context_length_exceeded, streamed or not (nothing is written before
// the engine's first event).
//
// Tool calls: the request's tools go to the chat template (Qwen3.5's and
// Qwen3's list them in the system turn), the model's <tool_call> blocks
// (Qwen3.5's <function=…>, Qwen3's JSON) come back as OpenAI tool_calls with
// finish_reason "tool_calls" (toolcall.go);
// a block that does not parse stays text, flagged in tool_call_error.
// tool_choice "auto", "none", "required" and a named function: the last two
// write the call's opening in the template's form (Engine.ToolCallPrefix)
// as the reply's start (thinking off), so the model's first words complete
// a call.
//
// Anthropic's Messages API (anthropic.go) runs on the same generation:
// thinking, text and tool_use blocks, tool_result blocks in, stop sequences,
// its streaming events, cache_read_input_tokens for the reused prompt, its
// error shape; count_tokens.
//
// Ollama's API (ollama.go) for the clients that speak only it: /api/chat and
// /api/generate streamed as JSON lines (the default) or whole, /api/tags,
// /api/show, /api/ps, /api/version, options mapped to the same sampling,
// tools and tool_calls, "think": false; its error shape {"error": "…"}.
//
// OpenAI's Responses API (responses.go, responses_out.go), as Codex speaks
// it: input items (messages, reasoning, function and custom tool calls and
// their outputs; system and developer texts joined into one system turn),
// function and custom tools (a custom tool's free text travels as one
// parameter), output items whole or streamed as typed events. Nothing is
// stored: previous_response_id is refused, the prompt cache reuses the
// resent conversation.
//
// Log-probabilities (logprobs.go) for chat completions and completions:
// each content token's, with up to 20 likeliest at its position; the
// engine then reads the logits every step (no speculation, no pipeline).
//
// presence_penalty and frequency_penalty (OpenAI's and Ollama's) are the
// engine's Sampling fields, applied by the host to the reply's tokens (the
// logits read every step, as for logprobs).
//
// Images (images.go), for a model with a vision tower: OpenAI's image_url
// parts as data: URLs (a URL to fetch is refused: the server fetches
// nothing on a client's behalf), Anthropic's base64 image blocks, Ollama's
// images lists on /api/chat and /api/generate, the Responses API's
// input_image parts (data: URLs); each decoded and run
// through the tower before the request waits for its turn, a broken one a
// 400 naming it.
//
// Not yet: structured output, logprobs on /v1/responses (each asked for is
// a clear 400).
package server
