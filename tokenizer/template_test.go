package tokenizer

import (
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// templateSources returns the template text behind each reference template
// name, read the way the Go side reads it.
func templateSources(t *testing.T) map[string]*Template {
	t.Helper()
	out := map[string]*Template{}
	qwen3, err := LoadTemplate(qwen3Dir(t)) // chat_template in tokenizer_config.json
	if err != nil {
		t.Fatal(err)
	}
	out["qwen3"] = qwen3
	for name, path := range map[string]string{
		"qwen35":       "templates/qwen35.jinja",
		"qwen35_small": filepath.Join(testdataDir, "templates", "qwen35_small.jinja"),
		"qwen36":       filepath.Join(testdataDir, "templates", "qwen36.jinja"),
	} {
		dir := t.TempDir()
		src, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), src, 0o644); err != nil {
			t.Fatal(err)
		}
		if out[name], err = LoadTemplate(dir); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	return out
}

func TestTemplatesMatchReference(t *testing.T) {
	r := loadRefs(t)
	if len(r.Chat) == 0 {
		t.Fatal("refs.json.gz has no chat references")
	}
	templates := templateSources(t)
	for _, c := range r.Chat {
		tmpl := templates[c.Template]
		if tmpl == nil {
			t.Fatalf("reference uses unknown template %q", c.Template)
		}
		msgs := make([]Message, len(c.Messages))
		for i, m := range c.Messages {
			msgs[i] = Message{Role: m.Role, Content: m.Content}
			if m.ReasoningContent != nil {
				msgs[i].Reasoning = *m.ReasoningContent
			}
			for _, tc := range m.ToolCalls {
				msgs[i].ToolCalls = append(msgs[i].ToolCalls, tc.Function)
			}
		}
		opts := RenderOptions{AddGenerationPrompt: c.AddGenerationPrompt, EnableThinking: c.EnableThinking, Tools: c.Tools}
		got, err := tmpl.Render(msgs, opts)
		name := c.Template + "/" + c.Conversation
		switch {
		case c.Text == nil && err == nil:
			t.Errorf("%s %+v: the template raises %q, Render gave no error", name, opts, c.Error)
		case c.Text != nil && err != nil:
			t.Errorf("%s %+v: Render error %v", name, opts, err)
		case c.Text != nil && got != *c.Text:
			t.Errorf("%s %+v:\n got %q\nwant %q", name, opts, got, *c.Text)
		}
	}
}

func TestTemplateNames(t *testing.T) {
	for name, tmpl := range templateSources(t) {
		want := map[string]string{"qwen3": "Qwen3", "qwen35": "Qwen3.5", "qwen35_small": "Qwen3.5", "qwen36": "Qwen3.5"}[name]
		if tmpl.Name() != want {
			t.Errorf("%s recognised as %s, want %s", name, tmpl.Name(), want)
		}
	}
}

func TestUnsupportedTemplates(t *testing.T) {
	qwen35, err := knownTemplates.ReadFile("templates/qwen35.jinja")
	if err != nil {
		t.Fatal(err)
	}
	src := string(qwen35)
	cases := map[string]string{
		"empty":     "",
		"chatml":    "{% for m in messages %}<|im_start|>{{ m.role }}\n{{ m.content }}<|im_end|>\n{% endfor %}",
		"edited":    strings.Replace(src, "'<|im_start|>system\\n' + content", "'<|im_start|>system\\nYou are Bagel. ' + content", 1),
		"extra":     src + "\n{{- 'trailing text' }}",
		"truncated": src[:len(src)/2],
	}
	for name, text := range cases {
		_, err := ParseTemplate(text)
		if err == nil || !strings.Contains(err.Error(), "unsupported chat template") {
			t.Errorf("%s: ParseTemplate error = %v, want unsupported chat template", name, err)
		}
	}
	// Indentation and line endings are not part of the recognised text.
	relaxed := strings.ReplaceAll(strings.ReplaceAll(src, "\n    ", "\n\t"), "\n", "\r\n")
	if _, err := ParseTemplate(relaxed); err != nil {
		t.Errorf("re-indented CRLF template: %v", err)
	}
}

func TestLoadTemplateSources(t *testing.T) {
	dir := qwen3Dir(t)
	tmpl, err := LoadTemplate(dir)
	if err != nil || tmpl.Name() != "Qwen3" {
		t.Fatalf("tokenizer_config.json template: %v, %v", tmpl, err)
	}
	// chat_template.jinja wins over tokenizer_config.json, as in transformers.
	src, _ := knownTemplates.ReadFile("templates/qwen35.jinja")
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if tmpl, err = LoadTemplate(dir); err != nil || tmpl.Name() != "Qwen3.5" {
		t.Fatalf("chat_template.jinja: %v, %v", tmpl, err)
	}
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), []byte("{{ messages }}"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err = LoadTemplate(dir); err == nil || !strings.Contains(err.Error(), "chat_template.jinja: unsupported chat template") {
		t.Fatalf("unknown chat_template.jinja: error %v", err)
	}
	if _, err = LoadTemplate(t.TempDir()); err == nil || !strings.Contains(err.Error(), "no chat template") {
		t.Fatalf("empty folder: error %v", err)
	}
}

func TestRenderRefusals(t *testing.T) {
	for name, tmpl := range templateSources(t) {
		cases := []struct {
			msgs []Message
			opts RenderOptions
			want string
		}{
			{nil, RenderOptions{AddGenerationPrompt: true}, "no messages"},
			{[]Message{{Role: "user", Content: "hi"}, {Role: "assistant", Content: "hello"}}, RenderOptions{AddGenerationPrompt: true}, "ends with an assistant turn"},
			{[]Message{{Role: "developer", Content: "hi"}}, RenderOptions{}, `role "developer"`},
		}
		for _, c := range cases {
			if _, err := tmpl.Render(c.msgs, c.opts); err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("%s: Render error = %v, want one containing %q", name, err, c.want)
			}
		}
	}
}

// Open finds the template the way LoadTemplate does, from the one read of the folder.
func TestOpenFindsTemplate(t *testing.T) {
	dir := qwen3Dir(t)
	tok, err := Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	if tmpl, err := tok.Template(); err != nil || tmpl.Name() != "Qwen3" {
		t.Fatalf("Template() = %v, %v; want the Qwen3 template of tokenizer_config.json", tmpl, err)
	}
	src, _ := knownTemplates.ReadFile("templates/qwen35.jinja")
	if err := os.WriteFile(filepath.Join(dir, "chat_template.jinja"), src, 0o644); err != nil {
		t.Fatal(err)
	}
	if tok, err = Open(dir); err != nil {
		t.Fatal(err)
	}
	if tmpl, err := tok.Template(); err != nil || tmpl.Name() != "Qwen3.5" {
		t.Fatalf("Template() = %v, %v; want chat_template.jinja's Qwen3.5", tmpl, err)
	}
	if _, err := Open(t.TempDir()); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Open of a folder without tokenizer.json: %v, want a not-exist error", err)
	}
}

// TestImagePartsRender: a user message's images are written where its
// content list has them, as the Qwen3.5 template's markers, the whole
// content trimmed at its ends only; the Qwen3 template and other roles
// refuse images.
func TestImagePartsRender(t *testing.T) {
	tmpls := templateSources(t)
	msgs := []Message{{Role: "user", Parts: []Part{{Text: "  Look: "}, {Image: true}, {Text: " and "}, {Image: true}, {Text: " here. \n"}}}}
	for _, name := range []string{"qwen35", "qwen36"} {
		got, err := tmpls[name].Render(msgs, RenderOptions{AddGenerationPrompt: true})
		want := "<|im_start|>user\nLook: " + imageMarkup + " and " + imageMarkup + " here.<|im_end|>\n<|im_start|>assistant\n"
		if err != nil || !strings.HasPrefix(got, want) {
			t.Errorf("%s: %q, %v; want it to begin %q", name, got, err, want)
		}
		p, _ := tmpls[name].RenderPrompt([]Message{{Role: "user", Parts: []Part{{Image: true}, {Text: "What is it?"}}}}, RenderOptions{})
		if p.Text != "<|im_start|>user\n"+imageMarkup+"What is it?<|im_end|>\n" {
			t.Errorf("%s: an image first: %q", name, p.Text)
		}
	}
	for _, c := range []struct {
		tmpl string
		msgs []Message
		want string
	}{
		{"qwen3", msgs, "no image markers"},
		{"qwen35", []Message{{Role: "system", Parts: []Part{{Image: true}}}, {Role: "user", Content: "hi"}}, "only a user message carries images"},
		{"qwen35", []Message{{Role: "user", Content: "hi", Parts: []Part{{Image: true}}}}, "both content and content parts"},
	} {
		if _, err := tmpls[c.tmpl].Render(c.msgs, RenderOptions{AddGenerationPrompt: true}); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: %v, want an error naming %q", c.tmpl, err, c.want)
		}
	}
}
