package ui

import (
	"regexp"
	"strings"
	"unicode/utf8"
)

// Fyne's Markdown renderer knows no tables: a GitHub-style table would show as
// one line of pipes. tablesAsText turns each table outside a code block into
// a fenced block drawn as a grid (box-drawing rules between the cells, each
// column aligned as its delimiter row says: ---: right, :---: centred), which
// the renderer shows monospaced. It also keeps math untouched (mathAsCode).

var tableDelimiter = regexp.MustCompile(`^\s*\|?\s*:?-{3,}:?\s*(\|\s*:?-{3,}:?\s*)*\|?\s*$`)

// tablesAsText rewrites the tables of md as aligned plain-text grids, and
// its math as code (mathAsCode).
func tablesAsText(md string) string {
	md = mathAsCode(md)
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
		align := tableAlignment(lines[i+1])
		j := i + 2
		for ; j < len(lines) && strings.Contains(lines[j], "|") && strings.TrimSpace(lines[j]) != ""; j++ {
			rows = append(rows, tableCells(lines[j]))
		}
		out = append(out, alignedTable(rows, align)...)
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

// tableAlignment reads a delimiter row's alignment per column: 'l' (---
// or :---), 'r' (---:) or 'c' (:---:).
func tableAlignment(delimiter string) []byte {
	var align []byte
	for _, c := range tableCells(delimiter) {
		left, right := strings.HasPrefix(c, ":"), strings.HasSuffix(c, ":")
		switch {
		case left && right:
			align = append(align, 'c')
		case right:
			align = append(align, 'r')
		default:
			align = append(align, 'l')
		}
	}
	return align
}

// alignedTable lays rows out as a grid in a fenced block: cells padded to
// their column's width as align says (a missing entry is 'l'), "│" between
// them, and a rule of "─" crossed by "┼" under the header.
func alignedTable(rows [][]string, align []byte) []string {
	var widths []int
	for _, r := range rows {
		for i, c := range r {
			if i >= len(widths) {
				widths = append(widths, 0)
			}
			widths[i] = max(widths[i], utf8.RuneCountInString(c))
		}
	}
	pad := func(c string, w int, a byte) string {
		gap := w - utf8.RuneCountInString(c)
		switch a {
		case 'r':
			return strings.Repeat(" ", gap) + c
		case 'c':
			return strings.Repeat(" ", gap/2) + c + strings.Repeat(" ", gap-gap/2)
		}
		return c + strings.Repeat(" ", gap)
	}
	format := func(r []string) string {
		var b strings.Builder
		for i, w := range widths {
			c, a := "", byte('l')
			if i < len(r) {
				c = r[i]
			}
			if i < len(align) {
				a = align[i]
			}
			if i > 0 {
				b.WriteString(" │ ")
			}
			b.WriteString(pad(c, w, a))
		}
		return strings.TrimRight(b.String(), " ")
	}
	rule := make([]string, len(widths))
	for i, w := range widths {
		rule[i] = strings.Repeat("─", w)
	}
	out := []string{"```", format(rows[0]), strings.Join(rule, "─┼─")}
	for _, r := range rows[1:] {
		out = append(out, format(r))
	}
	return append(out, "```")
}

// Math: a model writes $…$ and $$…$$ (TeX), which the Markdown renderer would
// alter (a*b*c loses its stars to italics, x_1 + y_2 its underscores) and
// Bagel does not typeset. mathAsCode shows it as written, as code: display
// math ($$ on lines of its own, or a whole line $$…$$) as a fenced block,
// inline math as a code span. Inline math follows pandoc's rule, so prices
// stay text: the opening $ is followed by a non-space, the closing $ is
// preceded by a non-space and not followed by a digit.
var inlineMath = regexp.MustCompile(`(^|[^$\\])\$([^\s$](?:[^$\n]*[^\s$\\])?)\$([^0-9$]|$)`)

// mathAsCode rewrites md's math, outside code blocks and spans, as code.
func mathAsCode(md string) string {
	if !strings.Contains(md, "$") {
		return md
	}
	lines := strings.Split(md, "\n")
	var out []string
	inCode, inMath := false, false
	for _, line := range lines {
		t := strings.TrimSpace(line)
		switch {
		case strings.HasPrefix(t, "```") && !inMath:
			inCode = !inCode
			out = append(out, line)
		case inCode:
			out = append(out, line)
		case t == "$$":
			inMath = !inMath
			out = append(out, "```")
		case inMath:
			out = append(out, line)
		case len(t) > 4 && strings.HasPrefix(t, "$$") && strings.HasSuffix(t, "$$"):
			out = append(out, "```", strings.TrimSpace(t[2:len(t)-2]), "```")
		default:
			out = append(out, inlineMathAsCode(line))
		}
	}
	return strings.Join(out, "\n")
}

// inlineMathAsCode turns a line's inline math into code spans, leaving its
// code spans alone.
func inlineMathAsCode(line string) string {
	if !strings.Contains(line, "$") {
		return line
	}
	parts := strings.Split(line, "`")
	for i := 0; i < len(parts); i += 2 { // even parts lie outside code spans
		parts[i] = inlineMath.ReplaceAllStringFunc(parts[i], func(m string) string {
			sub := inlineMath.FindStringSubmatch(m)
			return sub[1] + "`$" + sub[2] + "$`" + sub[3]
		})
	}
	return strings.Join(parts, "`")
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
