// Package tokenizer turns text into Qwen token ids and back, and renders chat
// conversations into the prompt text a Qwen checkpoint was trained on.
//
// # Tokenizer
//
// Open reads a model folder's text files once: tokenizer.json (Hugging Face
// tokenizers format), tokenizer_config.json and chat_template.jinja. Encoding follows the same pipeline as the Rust library for a byte-level BPE model:
//
//  1. added tokens (<|im_start|>, <think>, ...) are cut out of the raw text
//     first, leftmost-longest, and map straight to their ids;
//  2. the text between them is NFC-normalized;
//  3. the Split pre-tokenizer's regex, read from the file, cuts it into pieces
//     (every character lands in some piece: matches and the gaps between them);
//  4. each piece's UTF-8 bytes become GPT-2 byte-level symbols, which are
//     merged pairwise by merge rank until no listed merge applies.
//
// Decoding maps tokens back to bytes and replaces invalid UTF-8 the way Rust's
// String::from_utf8_lossy does. StreamDecoder does the same one token at a
// time and holds back a partial UTF-8 sequence until a later token completes it.
//
// Why hand-written: the pure-Go BPE tokenizers we know of either read
// tiktoken rank files rather than tokenizer.json, hard-code one model's
// pre-tokenizer, or use Go's RE2 regexp, which has no lookahead. The Qwen
// patterns need `\s+(?!\S)`, and Qwen3.5 changes the pattern (it adds \p{M} to
// the letter and punctuation classes), so the pattern must come from the file.
// It is compiled with github.com/dlclark/regexp2 in its default (.NET-like)
// syntax, whose \s, \p{L}, \p{N}, \p{M}, (?i:...) and (?!...) agree with the
// Oniguruma engine that Hugging Face tokenizers uses.
//
// # Chat templates
//
// Open finds the checkpoint's Jinja chat template (Tokenizer.Template;
// LoadTemplate for a folder with a template alone) and Render produces the prompt. A general Jinja engine is not used: the Go ones we know of do not
// implement the Python-isms Qwen's templates lean on (str.split/lstrip/rstrip
// methods, namespace(), loop.previtem, reversed slices, raise_exception), and a
// partial implementation would fail quietly. Instead the template is
// recognised as a known Qwen family member and rendered by Go code that mirrors
// it statement by statement; a template that is not recognised is an error,
// never a guess. The renderings are checked against transformers'
// apply_chat_template in testdata/tokenizer/refs.json.gz.
package tokenizer
