#!/usr/bin/env python3
"""The demo model's training text: one {"term", "text", "source"} line per
entry of the Jargon File and of The Devil's Dictionary, both public domain,
as the Debian packages `jargon` and `dict-devil` install them.

    apt-get install jargon dict-devil
    python3 tools/demo/corpus.py --out .devbin/demo/corpus.jsonl

Standard library only. The output is deterministic: entries in the books'
order, each body unwrapped into paragraphs, the Jargon File's cross-reference
braces and `quotes' made plain, pronunciations kept out of the answer.
"""

import argparse
import base64
import gzip
import json
import re
import sys

JARGON = "/usr/share/info/jargon.info.gz"
DEVIL_DICT = "/usr/share/dictd/devil.dict.dz"
DEVIL_INDEX = "/usr/share/dictd/devil.index"
MAX_CHARS = 900  # an answer longer than this is cut at its last sentence before it


def paragraphs(lines):
    """Lines of an entry body as paragraphs, each one line of single spaces."""
    out, cur = [], []
    for line in lines:
        if line.strip():
            cur.append(line.strip())
        elif cur:
            out.append(" ".join(cur))
            cur = []
    if cur:
        out.append(" ".join(cur))
    return [re.sub(r"\s+", " ", p) for p in out]


def cut(text):
    """text cut to MAX_CHARS at a sentence end where it is longer."""
    if len(text) <= MAX_CHARS:
        return text
    head = text[:MAX_CHARS]
    end = max(head.rfind(". "), head.rfind(".\n"), head.rfind("? "), head.rfind("! "))
    return head[: end + 1] if end > MAX_CHARS // 3 else head.rsplit(" ", 1)[0] + " ..."


def plain_jargon(s):
    s = re.sub(r"\{\{([^{}]*)\}\}", r"\1", s)
    s = re.sub(r"\{([^{}]*)\}", r"\1", s)
    return re.sub(r"`([^`']*)'", r"'\1'", s)


def jargon_entries():
    """(term, text) for each ':TERM: /pron/ /pos/ body' entry of the info file."""
    raw = gzip.open(JARGON, "rt", encoding="latin-1").read()
    for node in raw.split("\x1f"):
        m = re.search(r"^:([^:\n]+)::? (.*)", node, re.M)
        if not m:
            continue
        term = m.group(1).strip()
        body = node[m.start(2):].split("\n")
        first = body[0]
        # Pronunciations and parts of speech lead the first line: /.../ pieces.
        first = re.sub(r"^(\s*/[^/\s][^/]*/\s*)+", "", first)
        first = re.sub(r"^(\d\. )(/[^/\s][^/]*/\s*)+", r"\1", first)
        body[0] = first
        paras = [plain_jargon(p) for p in paragraphs(body)]
        if not paras or len(paras[0]) < 20:
            continue
        yield term, cut("\n\n".join(paras))


def devil_entries():
    """(term, text) for each headword of the dictd index (the 00-database
    entries skipped), the body without its repeated headword line."""
    data = gzip.open(DEVIL_DICT, "rb").read()
    b64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"

    def num(s):
        v = 0
        for ch in s:
            v = v * 64 + b64.index(ch)
        return v

    seen = set()
    for line in open(DEVIL_INDEX, encoding="latin-1"):
        word, off, n = line.rstrip("\n").split("\t")
        if word.startswith("00database") or (off, n) in seen:
            continue
        seen.add((off, n))
        text = data[num(off):num(off) + num(n)].decode("latin-1")
        lines = text.split("\n")
        head = lines[0].strip()  # "ABASEMENT, n.  A decent and ..." or the bare headword
        term = head.split(",")[0].strip().title() if "," in head else word.title()
        if head.upper().startswith(word.upper()) and "," not in head:
            lines = lines[1:]
        paras = paragraphs(lines)
        if paras:
            paras[0] = re.sub(r"^[A-Z][A-Z' -]*,\s*(\w+\.\s*)*", "", paras[0]).strip()
        paras = [p for p in paras if p]
        if not paras or len(paras[0]) < 10:
            continue
        yield term, cut("\n\n".join(paras))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    args = ap.parse_args()
    n = {"jargon": 0, "devil": 0}
    with open(args.out, "w", encoding="utf-8") as f:
        for source, entries in (("jargon", jargon_entries()), ("devil", devil_entries())):
            for term, text in entries:
                f.write(json.dumps({"term": term, "text": text, "source": source}, ensure_ascii=False) + "\n")
                n[source] += 1
    print(f"corpus: {n['jargon']} Jargon File entries, {n['devil']} Devil's Dictionary entries -> {args.out}",
          file=sys.stderr)


if __name__ == "__main__":
    main()
