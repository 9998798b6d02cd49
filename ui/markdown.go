package ui

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Fyne's Markdown renderer knows no tables: a GitHub-style table would show as
// one line of pipes. tablesAsText turns each table outside a code block into
// a fenced block of aligned columns, which the renderer shows monospaced.

var tableDelimiter = regexp.MustCompile(`^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$`)

// tablesAsText rewrites the tables of md as aligned plain-text blocks.
func tablesAsText(md string) string {
	if !strings.Contains(md, "|") {
		return md
	}
	lines := strings.Split(md, "\n")
	var out []string
	inCode := false
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			inCode = !inCode
		}
		if inCode || !strings.Contains(line, "|") || i+1 >= len(lines) || !tableDelimiter.MatchString(lines[i+1]) {
			out = append(out, line)
			continue
		}
		rows := [][]string{tableCells(line)}
		j := i + 2
		for ; j < len(lines) && strings.Contains(lines[j], "|") && strings.TrimSpace(lines[j]) != ""; j++ {
			rows = append(rows, tableCells(lines[j]))
		}
		out = append(out, alignedTable(rows)...)
		i = j - 1
	}
	return strings.Join(out, "\n")
}

// tableCells splits one table row into its trimmed cells.
func tableCells(line string) []string {
	line = strings.TrimSpace(line)
	line = strings.TrimPrefix(line, "|")
	line = strings.TrimSuffix(line, "|")
	cells := strings.Split(line, "|")
	for i, c := range cells {
		cells[i] = strings.TrimSpace(c)
	}
	return cells
}

// alignedTable lays rows out in padded columns, a rule under the header, in
// a fenced block.
func alignedTable(rows [][]string) []string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	format := func(r []string) string {
		var b strings.Builder
		for i, w := range widths {
			c := ""
			if i < len(r) {
				c = r[i]
			}
			if i > 0 {
				b.WriteString("  ")
			}
			b.WriteString(c + strings.Repeat(" ", w-utf8.RuneCountInString(c)))
		}
		return strings.TrimRight(b.String(), " ")
	}
	out := []string{"```", format(rows[0])}
	rule := make([]string, len(widths))
	for i, w := range widths {
		rule[i] = strings.Repeat("-", w)
	}
	out = append(out, format(rule))
	for _, r := range rows[1:] {
		out = append(out, format(r))
	}
	return append(out, "```")
}

// codeBlocks returns the contents of md's fenced code blocks, in order; an
// unclosed last block (a reply still streaming) counts to the end.
func codeBlocks(md string) []string {
	var blocks []string
	var cur []string
	inCode := false
	for _, line := range strings.Split(md, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			if inCode {
				blocks = append(blocks, strings.Join(cur, "\n"))
				cur = nil
			}
			inCode = !inCode
			continue
		}
		if inCode {
			cur = append(cur, line)
		}
	}
	if inCode && len(cur) > 0 {
		blocks = append(blocks, strings.Join(cur, "\n"))
	}
	return blocks
}

// completeBlocksEnd is the length of the longest prefix of md that ends with
// a blank line outside a code block: blocks that the text streaming after them
// cannot change. 0 when there is none.
func completeBlocksEnd(md string) int {
	end, pos := 0, 0
	inCode := false
	for _, line := range strings.SplitAfter(md, "\n") {
		pos += len(line)
		if !strings.HasSuffix(line, "\n") {
			break // the last line is still being written
		}
		t := strings.TrimSpace(line)
		if strings.HasPrefix(t, "```") {
			inCode = !inCode
		}
		if t == "" && !inCode {
			end = pos
		}
	}
	return end
}

// paragraphChunk is how long the growing end of a reply may get without a
// blank line before its finished sentences are set apart as a block of their
// own: Fyne lays a paragraph out again whole at every render, so a reply that
// is one long paragraph would cost the square of its length (3,000 tokens
// left the screen seconds behind the stream).
const paragraphChunk = 1500

// longParagraphCut is where to set apart the finished sentences of md, the
// growing end of a reply that holds no blank line: after the last sentence end
// (". ", "! ", "? " or a CJK full stop) at least paragraphChunk bytes in and
// well before the end, outside code. 0 when md is shorter or has none. The
// part set apart shows as a paragraph of its own.
func longParagraphCut(md string) int {
	if len(md) < paragraphChunk+200 || strings.Count(md, "```")%2 != 0 {
		return 0
	}
	limit := len(md) - 200 // leave the sentence being written alone
	best := 0
	for _, end := range []string{". ", "! ", "? ", "。"} {
		if i := strings.LastIndex(md[:limit], end); i >= 0 && i+len(end) > best {
			best = i + len(end)
		}
	}
	if best < paragraphChunk {
		return 0
	}
	return best
}
