package tokenizer

import (
	"bytes"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"bagel/internal/regular"
)

// Message is one turn of a conversation.
type Message struct {
	Role    string `json:"role"` // "system", "user", "assistant" or "tool"
	Content string `json:"content"`
	// Reasoning is an assistant turn's thinking, without <think> tags (the
	// templates' reasoning_content). Empty means "not given": the template
	// then looks for a <think>...</think> block inside Content instead.
	Reasoning string `json:"reasoning_content,omitempty"`
	// ToolCalls are the functions an assistant turn called, written after
	// its content in the template's tool-call format.
	ToolCalls []ToolCall `json:"tool_calls,omitempty"`
	// Parts, when set, are a user message's content in order, text and
	// images (the content lists of transformers' chat templates; Content is
	// then unused): an image is written as the template's image markers
	// (<|vision_start|><|image_pad|><|vision_end|>), and the caller gives
	// the images themselves in the same order.
	Parts []Part `json:"parts,omitempty"`
}

// Part is one piece of a message's content: text, or an image.
type Part struct {
	Text  string `json:"text,omitempty"`
	Image bool   `json:"image,omitempty"`
}

// Images counts the image parts of m.
func (m Message) Images() int {
	n := 0
	for _, p := range m.Parts {
		if p.Image {
			n++
		}
	}
	return n
}

// ToolCall is one function call of an assistant turn.
type ToolCall struct {
	Name string `json:"name"`
	// Arguments is a JSON object, its keys in the order they are written.
	Arguments json.RawMessage `json:"arguments,omitempty"`
}

// RenderOptions are the template variables a caller controls.
type RenderOptions struct {
	// AddGenerationPrompt appends the header of the assistant turn the model
	// is to write next.
	AddGenerationPrompt bool
	// EnableThinking lets the model think before answering. When false, the
	// generation prompt carries an empty <think>\n\n</think>\n\n block, which
	// is how Qwen templates turn thinking off.
	EnableThinking bool
	// Tools are the functions the model may call, each a JSON object as the
	// request gave it (OpenAI's {"type": "function", "function": {...}}),
	// listed in the system turn (Qwen3's as JSON, Qwen3.5's as JSON with its
	// own instructions).
	Tools []json.RawMessage
}

// Template renders conversations the way one recognised Qwen chat template
// does.
type Template struct {
	name   string
	render func(msgs []Message, opts RenderOptions) (Prompt, error)
}

// Name is the template family ("Qwen3", "Qwen3.5").
func (t *Template) Name() string { return t.name }

// ToolCallPrefix is how a reply that calls a tool begins under this template
// — of the function name when name is given, else up to where the name goes
// — for a caller that makes the model's first words a call (a forced
// tool_choice). name must hold no quote, backslash, angle bracket or line
// break.
func (t *Template) ToolCallPrefix(name string) string {
	if t.name == "Qwen3" { // {"name": NAME, "arguments": {…}}
		if name == "" {
			return "<tool_call>\n{\"name\": \""
		}
		return "<tool_call>\n{\"name\": \"" + name + "\", \"arguments\": "
	}
	if name == "" { // <function=NAME> <parameter=…>
		return "<tool_call>\n<function="
	}
	return "<tool_call>\n<function=" + name + ">\n"
}

// Render returns the prompt text for msgs (RenderPrompt's Text).
func (t *Template) Render(msgs []Message, opts RenderOptions) (string, error) {
	p, err := t.RenderPrompt(msgs, opts)
	return p.Text, err
}

// RenderPrompt renders msgs for Tokenizer.EncodePrompt, which tells the
// template's markers from the messages' text. It refuses what the template
// would refuse (no user turn in a Qwen3.5 conversation, a system turn after
// the first) and one thing the template would silently accept: a
// conversation that ends with an assistant turn when a generation prompt is
// asked for, which would open a second assistant turn after it.
func (t *Template) RenderPrompt(msgs []Message, opts RenderOptions) (Prompt, error) {
	if len(msgs) == 0 {
		return Prompt{}, errors.New("chat template: no messages")
	}
	for i, m := range msgs {
		switch m.Role {
		case "system", "user", "assistant", "tool":
		default:
			return Prompt{}, fmt.Errorf("chat template: message %d has role %q; want system, user, assistant or tool", i, m.Role)
		}
	}
	for i, m := range msgs {
		if len(m.Parts) > 0 && m.Role != "user" {
			return Prompt{}, fmt.Errorf("chat template: message %d (%s) has content parts; only a user message carries images", i, m.Role)
		}
		if len(m.Parts) > 0 && m.Content != "" {
			return Prompt{}, fmt.Errorf("chat template: message %d has both content and content parts", i)
		}
		for _, c := range m.ToolCalls {
			if m.Role != "assistant" {
				return Prompt{}, fmt.Errorf("chat template: message %d (%s) has tool calls; only an assistant turn calls tools", i, m.Role)
			}
			if c.Name == "" {
				return Prompt{}, fmt.Errorf("chat template: message %d calls a tool without a name", i)
			}
			if a := bytes.TrimSpace(c.Arguments); len(a) > 0 && (a[0] != '{' || !json.Valid(a)) {
				return Prompt{}, fmt.Errorf("chat template: message %d calls %s with arguments that are not a JSON object", i, c.Name)
			}
		}
	}
	for i, tool := range opts.Tools {
		if !json.Valid(tool) {
			return Prompt{}, fmt.Errorf("chat template: tool %d is not JSON", i)
		}
	}
	if opts.AddGenerationPrompt && msgs[len(msgs)-1].Role == "assistant" {
		return Prompt{}, errors.New("chat template: the conversation ends with an assistant turn, so a generation prompt cannot follow it (render without the generation prompt to continue that turn)")
	}
	return t.render(msgs, opts)
}

// LoadTemplate reads a model folder's chat template alone (a folder may have a
// template and no tokenizer.json): chat_template.jinja if present
// (transformers prefers it), else tokenizer_config.json's chat_template, and
// recognises it. Open does the same for a whole folder.
func LoadTemplate(dir string) (*Template, error) {
	return loadTemplate(dir, func() (*tokenizerConfig, error) { return readTokenizerConfig(dir) })
}

// loadTemplate finds the template; config gives tokenizer_config.json, read
// only when chat_template.jinja is absent (or already read by Open).
func loadTemplate(dir string, config func() (*tokenizerConfig, error)) (*Template, error) {
	data, err := regular.ReadFile(filepath.Join(dir, "chat_template.jinja"), tokenizerLimit)
	if err == nil {
		t, err := ParseTemplate(string(data))
		if err != nil {
			return nil, fmt.Errorf("chat_template.jinja: %w", err)
		}
		return t, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("chat_template.jinja: %w", err)
	}
	cfg, err := config()
	if err != nil {
		return nil, err
	}
	if cfg == nil || cfg.ChatTemplate == "" {
		return nil, fmt.Errorf("no chat template in %s: neither chat_template.jinja nor a chat_template in tokenizer_config.json", dir)
	}
	t, err := ParseTemplate(cfg.ChatTemplate)
	if err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	return t, nil
}

//go:embed templates/*.jinja
var knownTemplates embed.FS

// family is a known template: its text (templates/*.jinja, copied verbatim
// from the checkpoints) and the places where released checkpoints differ in
// ways that do not change what Render produces.
type family struct {
	name     string
	file     string
	variants [][]string // each row: interchangeable spellings of one passage
	render   func(msgs []Message, opts RenderOptions) (Prompt, error)
}

var families = []family{
	{name: "Qwen3", file: "templates/qwen3.jinja", render: renderQwen3},
	{
		name: "Qwen3.5", file: "templates/qwen35.jinja", render: renderQwen35,
		variants: [][]string{
			// Qwen3.6 adds an opt-in preserve_thinking variable; left undefined
			// (we never set it) it behaves like the Qwen3.5 line.
			{
				`{%- if loop.index0 > ns.last_query_index %}`,
				`{%- if (preserve_thinking is defined and preserve_thinking is true) or (loop.index0 > ns.last_query_index) %}`,
			},
			// Two spellings of the tool-call argument loop; Message has no tool
			// calls, so neither is ever reached.
			{
				"{%- if tool_call.arguments is mapping %}\n{%- for args_name in tool_call.arguments %}\n{%- set args_value = tool_call.arguments[args_name] %}",
				"{%- if tool_call.arguments is defined %}\n{%- for args_name, args_value in tool_call.arguments|items %}",
			},
			// The large checkpoints think unless enable_thinking is false, the
			// small ones (0.8B-9B) only when it is true. Render always defines
			// enable_thinking, so both give the same prompt.
			{
				"{%- if enable_thinking is defined and enable_thinking is false %}\n{{- '<think>\\n\\n</think>\\n\\n' }}\n{%- else %}\n{{- '<think>\\n' }}\n{%- endif %}",
				"{%- if enable_thinking is defined and enable_thinking is true %}\n{{- '<think>\\n' }}\n{%- else %}\n{{- '<think>\\n\\n</think>\\n\\n' }}\n{%- endif %}",
			},
		},
	},
}

// ParseTemplate recognises a chat template's source text. Recognition is by
// the whole text, compared line by line with indentation ignored, against the
// known Qwen templates, allowing only the listed variants: a fine-tune that
// edits anything else gets an error rather than a prompt its model was not
// trained on.
func ParseTemplate(src string) (*Template, error) {
	bestName, bestLine, bestText := "", -1, ""
	for _, f := range families {
		got := canonical(src)
		known, err := knownTemplates.ReadFile(f.file)
		if err != nil {
			panic(err) // embedded at build time
		}
		want := canonical(string(known))
		for i, row := range f.variants {
			marker := fmt.Sprintf("\x00variant %d\x00", i)
			for _, v := range row {
				got = strings.ReplaceAll(got, v, marker)
				want = strings.ReplaceAll(want, v, marker)
			}
		}
		if got == want {
			return &Template{name: f.name, render: f.render}, nil
		}
		if line, text := firstDifference(got, want); line > bestLine {
			bestName, bestLine, bestText = f.name, line, text
		}
	}
	if strings.TrimSpace(src) == "" {
		return nil, errors.New("unsupported chat template (empty)")
	}
	return nil, fmt.Errorf("unsupported chat template (not one of the known Qwen3 / Qwen3.5 templates; closest is %s, which differs at non-blank line %d: %q)", bestName, bestLine, bestText)
}

// canonical drops indentation, trailing blanks and empty lines: Qwen templates
// put every tag in {%- -%} form, so none of that reaches the output.
func canonical(src string) string {
	src = strings.ReplaceAll(src, "\r\n", "\n")
	var lines []string
	for _, l := range strings.Split(src, "\n") {
		if l = strings.TrimSpace(l); l != "" {
			lines = append(lines, l)
		}
	}
	return strings.Join(lines, "\n")
}

// firstDifference returns the 1-based line of got where it first departs from
// want, and that line.
func firstDifference(got, want string) (int, string) {
	g, w := strings.Split(got, "\n"), strings.Split(want, "\n")
	for i := range g {
		if i >= len(w) || g[i] != w[i] {
			return i + 1, strings.ReplaceAll(g[i], "\x00", "")
		}
	}
	return len(g) + 1, "(end of template)"
}
