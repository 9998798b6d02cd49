package tokenizer

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sort"

	"github.com/dlclark/regexp2/v2"
	"golang.org/x/text/unicode/norm"

	"bagel/internal/regular"
)

// Tokenizer is a byte-level BPE tokenizer loaded from tokenizer.json. It is
// safe for concurrent use.
type Tokenizer struct {
	vocab      map[string]int32 // token string (byte-level form) -> id, added tokens included
	idToToken  []string         // id -> token string; "" for unused ids
	tokenBytes [][]byte         // id -> the bytes it decodes to
	isAdded    []bool           // id -> an added (or special) token

	added      []addedToken    // matched in raw text before anything else
	addedByLen [256][]int      // first byte -> indexes into added, longest first
	normalize  []norm.Form     // applied in order to the text between added tokens
	split      *regexp2.Regexp // the Split pre-tokenizer; matches and gaps both become pieces
	model      *bpe

	eosID int32 // from tokenizer_config.json's eos_token; -1 when unknown

	template    *Template // the chat template; nil with templateErr saying why
	templateErr error
}

type addedToken struct {
	content string
	id      int32
	special bool
}

// tokenizerFile mirrors the parts of tokenizer.json this package reads.
type tokenizerFile struct {
	AddedTokens []struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Special    bool   `json:"special"`
	} `json:"added_tokens"`
	Normalizer   *component      `json:"normalizer"`
	PreTokenizer *component      `json:"pre_tokenizer"`
	Decoder      *component      `json:"decoder"`
	Model        json.RawMessage `json:"model"`
}

// component is any of tokenizer.json's pipeline stages; only the fields the
// supported stages use are declared.
type component struct {
	Type           string      `json:"type"`
	Normalizers    []component `json:"normalizers"`
	Pretokenizers  []component `json:"pretokenizers"`
	Decoders       []component `json:"decoders"`
	Pattern        *pattern    `json:"pattern"`
	Behavior       string      `json:"behavior"`
	Invert         bool        `json:"invert"`
	AddPrefixSpace bool        `json:"add_prefix_space"`
	UseRegex       *bool       `json:"use_regex"`
}

type pattern struct {
	Regex  *string `json:"Regex"`
	String *string `json:"String"`
}

type modelFile struct {
	Type                    string          `json:"type"`
	Vocab                   map[string]int  `json:"vocab"`
	Merges                  json.RawMessage `json:"merges"`
	ByteFallback            bool            `json:"byte_fallback"`
	IgnoreMerges            bool            `json:"ignore_merges"`
	ContinuingSubwordPrefix string          `json:"continuing_subword_prefix"`
	EndOfWordSuffix         string          `json:"end_of_word_suffix"`
	Dropout                 *float64        `json:"dropout"`
}

// gpt2Pattern is what a ByteLevel pre-tokenizer with use_regex=true splits on
// (tokenizers' byte_level.rs).
const gpt2Pattern = `'s|'t|'re|'ve|'m|'ll|'d| ?\p{L}+| ?\p{N}+| ?[^\s\p{L}\p{N}]+|\s+(?!\S)|\s+`

// maxIDGap bounds how far a tokenizer's ids may run past its count of
// tokens. Real ones are dense (Qwen's 151,643 vocabulary ids, then its added
// tokens); the tables below are sized by the largest id, so a lone id of
// 2³¹−1 in a damaged file would otherwise ask for some 90 GB.
const maxIDGap = 1 << 16

// tokenizerLimit bounds the tokenizer files (tokenizer.json is about 11 MB for Qwen).
const tokenizerLimit = 256 << 20

// Open is the one reader of a model folder's text files: tokenizer.json,
// tokenizer_config.json (read once, for the eos token and the chat template) and
// chat_template.jinja. Only what Qwen checkpoints use is supported: a BPE model
// over GPT-2 byte-level symbols, Unicode normalizers, a regex Split
// pre-tokenizer. Anything else is an error naming the file and the unsupported
// part. Without tokenizer.json the error satisfies errors.Is(err,
// fs.ErrNotExist). A missing or unrecognised chat template is not an error here:
// Template reports it.
func Open(dir string) (*Tokenizer, error) {
	data, err := regular.ReadFile(filepath.Join(dir, "tokenizer.json"), tokenizerLimit)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, notFoundError{dir}
		}
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	tok, err := parseTokenizer(data)
	if err != nil {
		return nil, fmt.Errorf("tokenizer.json: %w", err)
	}
	cfg, err := readTokenizerConfig(dir)
	if err != nil {
		return nil, err
	}
	if cfg != nil && cfg.EOSToken != "" {
		if id, ok := tok.TokenID(cfg.EOSToken); ok {
			tok.eosID = id
		}
	}
	tok.template, tok.templateErr = loadTemplate(dir, func() (*tokenizerConfig, error) { return cfg, nil })
	return tok, nil
}

// notFoundError is Open's error for a folder without tokenizer.json (which can
// still score token ids, so the engine tells it from a broken file).
type notFoundError struct{ dir string }

func (e notFoundError) Error() string { return "tokenizer.json: not found in " + e.dir }
func (e notFoundError) Unwrap() error { return fs.ErrNotExist }

// Template is the folder's chat template, found by Open, or why there is none.
func (t *Tokenizer) Template() (*Template, error) { return t.template, t.templateErr }

func parseTokenizer(data []byte) (*Tokenizer, error) {
	var f tokenizerFile
	if err := json.Unmarshal(data, &f); err != nil {
		return nil, fmt.Errorf("malformed JSON: %w", err)
	}
	if len(f.Model) == 0 || string(f.Model) == "null" {
		return nil, errors.New("no model section")
	}
	var m modelFile
	if err := json.Unmarshal(f.Model, &m); err != nil {
		return nil, fmt.Errorf("malformed model section: %w", err)
	}
	if m.Type == "" && m.Merges != nil {
		m.Type = "BPE" // files written before the type field existed
	}
	if m.Type != "BPE" {
		return nil, fmt.Errorf("tokenizer model %s is not supported (only BPE)", m.Type)
	}
	switch {
	case m.ByteFallback:
		return nil, errors.New("BPE byte_fallback is not supported")
	case m.ContinuingSubwordPrefix != "" || m.EndOfWordSuffix != "":
		return nil, errors.New("BPE continuing_subword_prefix / end_of_word_suffix are not supported")
	case m.Dropout != nil && *m.Dropout != 0:
		return nil, errors.New("BPE dropout is not supported")
	}

	t := &Tokenizer{vocab: make(map[string]int32, len(m.Vocab)+len(f.AddedTokens)), eosID: -1}
	size := 0
	for s, id := range m.Vocab {
		if id < 0 || id > math.MaxInt32 {
			return nil, fmt.Errorf("vocab entry %q has id %d, outside 0..2³¹-1", s, id)
		}
		t.vocab[s] = int32(id)
		size = max(size, id+1)
	}
	for _, a := range f.AddedTokens {
		if a.ID < 0 || a.ID > math.MaxInt32 || a.Content == "" {
			return nil, fmt.Errorf("added token %q has id %d", a.Content, a.ID)
		}
		if a.SingleWord || a.LStrip || a.RStrip {
			return nil, fmt.Errorf("added token %q uses single_word/lstrip/rstrip, which are not supported", a.Content)
		}
		t.vocab[a.Content] = int32(a.ID)
		t.added = append(t.added, addedToken{content: a.Content, id: int32(a.ID), special: a.Special})
		size = max(size, a.ID+1)
	}
	if entries := len(m.Vocab) + len(f.AddedTokens); size > entries+maxIDGap {
		return nil, fmt.Errorf("token ids run to %d, yet the file names only %d tokens: ids this sparse are not a tokenizer's (the file is damaged)", size-1, entries)
	}
	t.idToToken = make([]string, size)
	t.tokenBytes = make([][]byte, size)
	t.isAdded = make([]bool, size)
	for s, id := range m.Vocab {
		t.idToToken[id] = s
	}
	for _, a := range t.added {
		t.idToToken[a.id] = a.content
		t.isAdded[a.id] = true
	}
	for id, s := range t.idToToken {
		t.tokenBytes[id] = byteLevelDecode(s)
	}
	// Longest first, so the first candidate that matches at a position is the
	// longest one (leftmost-longest, as tokenizers' Aho-Corasick matcher does).
	order := make([]int, len(t.added))
	for i := range order {
		order[i] = i
	}
	sort.SliceStable(order, func(i, j int) bool { return len(t.added[order[i]].content) > len(t.added[order[j]].content) })
	for _, i := range order {
		first := t.added[i].content[0]
		t.addedByLen[first] = append(t.addedByLen[first], i)
	}

	var err error
	if t.normalize, err = parseNormalizer(f.Normalizer); err != nil {
		return nil, err
	}
	if t.split, err = parsePreTokenizer(f.PreTokenizer); err != nil {
		return nil, err
	}
	if err = checkDecoder(f.Decoder); err != nil {
		return nil, err
	}
	if t.model, err = newBPE(m.Vocab, m.Merges, m.IgnoreMerges); err != nil {
		return nil, err
	}
	return t, nil
}

func parseNormalizer(c *component) ([]norm.Form, error) {
	if c == nil {
		return nil, nil
	}
	switch c.Type {
	case "NFC":
		return []norm.Form{norm.NFC}, nil
	case "NFD":
		return []norm.Form{norm.NFD}, nil
	case "NFKC":
		return []norm.Form{norm.NFKC}, nil
	case "NFKD":
		return []norm.Form{norm.NFKD}, nil
	case "Sequence":
		var forms []norm.Form
		for i := range c.Normalizers {
			f, err := parseNormalizer(&c.Normalizers[i])
			if err != nil {
				return nil, err
			}
			forms = append(forms, f...)
		}
		return forms, nil
	}
	return nil, fmt.Errorf("normalizer %s is not supported", c.Type)
}

// parsePreTokenizer accepts what byte-level BPE checkpoints use: a regex Split
// (behavior Isolated) followed by a ByteLevel stage that does no splitting of
// its own, or a lone ByteLevel stage with GPT-2's built-in pattern.
func parsePreTokenizer(c *component) (*regexp2.Regexp, error) {
	if c == nil {
		return nil, errors.New("no pre_tokenizer; a byte-level BPE needs a ByteLevel pre-tokenizer")
	}
	stages := []component{*c}
	if c.Type == "Sequence" {
		stages = c.Pretokenizers
	}
	var expr string
	byteLevel := false
	for _, s := range stages {
		switch s.Type {
		case "Split":
			if expr != "" {
				return nil, errors.New("more than one Split pre-tokenizer is not supported")
			}
			if s.Behavior != "Isolated" || s.Invert {
				return nil, fmt.Errorf("Split pre-tokenizer with behavior %s (invert %v) is not supported", s.Behavior, s.Invert)
			}
			switch {
			case s.Pattern != nil && s.Pattern.Regex != nil:
				expr = *s.Pattern.Regex
			case s.Pattern != nil && s.Pattern.String != nil:
				expr = regexp2.Escape(*s.Pattern.String)
			default:
				return nil, errors.New("Split pre-tokenizer has no pattern")
			}
		case "ByteLevel":
			if s.AddPrefixSpace {
				return nil, errors.New("ByteLevel add_prefix_space is not supported")
			}
			if s.UseRegex == nil || *s.UseRegex {
				if expr != "" {
					return nil, errors.New("a Split followed by a ByteLevel stage that splits again is not supported")
				}
				expr = gpt2Pattern
			}
			byteLevel = true
		default:
			return nil, fmt.Errorf("pre-tokenizer %s is not supported", s.Type)
		}
	}
	if !byteLevel {
		return nil, errors.New("pre_tokenizer has no ByteLevel stage; only byte-level BPE is supported")
	}
	if expr == "" {
		return nil, errors.New("pre_tokenizer has no split pattern")
	}
	// A whitespace run is matched by \s+(?!\S) with one backtrack slot per
	// character, so long runs need an unbounded backtracking stack.
	re, err := regexp2.Compile(expr, regexp2.None, regexp2.OptionMaxBacktrackingStackSize(-1))
	if err != nil {
		return nil, fmt.Errorf("split pattern %q: %w", expr, err)
	}
	return re, nil
}

func checkDecoder(c *component) error {
	if c == nil {
		return errors.New("no decoder; a byte-level BPE needs a ByteLevel decoder")
	}
	if c.Type == "ByteLevel" {
		return nil
	}
	return fmt.Errorf("decoder %s is not supported (only ByteLevel)", c.Type)
}

// tokenizerConfig holds what this package reads from tokenizer_config.json.
type tokenizerConfig struct {
	EOSToken     string
	ChatTemplate string
}

// readTokenizerConfig returns nil, nil when the file does not exist.
func readTokenizerConfig(dir string) (*tokenizerConfig, error) {
	data, err := regular.ReadFile(filepath.Join(dir, "tokenizer_config.json"), tokenizerLimit)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: %w", err)
	}
	var raw struct {
		EOSToken     json.RawMessage `json:"eos_token"`
		ChatTemplate json.RawMessage `json:"chat_template"`
	}
	if err := json.Unmarshal(data, &raw); err != nil {
		return nil, fmt.Errorf("tokenizer_config.json: malformed JSON: %w", err)
	}
	cfg := &tokenizerConfig{}
	// eos_token is either a string or an AddedToken object {"content": ...}.
	if len(raw.EOSToken) > 0 && string(raw.EOSToken) != "null" {
		var obj struct {
			Content string `json:"content"`
		}
		if json.Unmarshal(raw.EOSToken, &cfg.EOSToken) != nil && json.Unmarshal(raw.EOSToken, &obj) == nil {
			cfg.EOSToken = obj.Content
		}
	}
	// chat_template is a string, or a list of {"name", "template"} of which
	// transformers uses the one named "default".
	if len(raw.ChatTemplate) > 0 && string(raw.ChatTemplate) != "null" {
		if err := json.Unmarshal(raw.ChatTemplate, &cfg.ChatTemplate); err != nil {
			var named []struct {
				Name     string `json:"name"`
				Template string `json:"template"`
			}
			if json.Unmarshal(raw.ChatTemplate, &named) != nil {
				return nil, errors.New("tokenizer_config.json: chat_template is neither a string nor a list of named templates")
			}
			for _, n := range named {
				if n.Name == "default" {
					cfg.ChatTemplate = n.Template
				}
			}
			if cfg.ChatTemplate == "" {
				return nil, errors.New("tokenizer_config.json: chat_template list has no template named \"default\"")
			}
		}
	}
	return cfg, nil
}

// VocabSize is one more than the largest token id, added tokens included.
func (t *Tokenizer) VocabSize() int { return len(t.idToToken) }

// TokenID returns the id of a token given in its vocabulary form: the
// byte-level string for BPE tokens ("Ġthe"), the content for added tokens
// ("<|im_end|>").
func (t *Tokenizer) TokenID(s string) (int32, bool) {
	id, ok := t.vocab[s]
	return id, ok
}

// TokenString returns a token's vocabulary form (see TokenID), or "" for an id
// outside the vocabulary.
func (t *Tokenizer) TokenString(id int32) string {
	if id < 0 || int(id) >= len(t.idToToken) {
		return ""
	}
	return t.idToToken[id]
}

// IsSpecial reports whether id is an added token (<|im_start|>, <think>, ...),
// which Encode matches before splitting and which decode to their literal text.
func (t *Tokenizer) IsSpecial(id int32) bool {
	return id >= 0 && int(id) < len(t.isAdded) && t.isAdded[id]
}

// EOSTokenID is tokenizer_config.json's eos_token, if the file names one that
// is in the vocabulary. Generation stops on the ids from generation_config.json
// or config.json first; this is the fallback.
func (t *Tokenizer) EOSTokenID() (int32, bool) { return t.eosID, t.eosID >= 0 }
