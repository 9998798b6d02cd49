package kernels

// A small C scanner, for the MSL rules of mslrules_test.go and the threadgroup
// memory count of threadgroup.go: comments removed,
// the conditional directives (#if/#ifdef/#ifndef/#elif/#else/#endif) evaluated
// as Metal's compiler would see them (__METAL_VERSION__ defined, __CUDA_ARCH__
// not), #line followed for positions, and the active text cut into tokens.
// Macros are not expanded: the rules read the source as written, and the
// #define bodies are kept apart so that rules can read them too (the prelude's
// KERNEL and BUFFER carry the attributes and address spaces).

import (
	"fmt"
	"strconv"
	"strings"
)

type token struct {
	text string
	pos  string // file:line
}

func (t token) isIdent() bool {
	c := t.text[0]
	return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func (t token) isNumber() bool {
	c := t.text[0]
	return c >= '0' && c <= '9' || c == '.' && len(t.text) > 1
}

// macro is one active #define: its name and the tokens of its body (the
// parameter list of a function-like macro included).
type macro struct {
	name string
	body []token
	pos  string
}

// scanned is a source as the Metal compiler's preprocessor leaves it, without
// macro expansion: the active code outside directives, and the active #defines.
type scanned struct {
	code   []token
	macros []macro
}

// metalPredefined are the macros Metal's compiler defines that the kernel
// sources test (qgemm.metal picks its matrix layer by __METAL_VERSION__).
var metalPredefined = map[string]int{"__METAL_VERSION__": 310}

// scanMetal scans src (a kernels.MetalSource-like text).
func scanMetal(src string) (scanned, error) {
	var out scanned
	defined := map[string]int{}
	for k, v := range metalPredefined {
		defined[k] = v
	}
	type frame struct{ outer, taken, active bool }
	var stack []frame
	active := func() bool { return len(stack) == 0 || stack[len(stack)-1].active }
	file, line := "source", 0
	lines := strings.Split(stripComments(src), "\n")
	for i := 0; i < len(lines); i++ {
		line++
		pos := fmt.Sprintf("%s:%d", file, line)
		text := lines[i]
		for strings.HasSuffix(text, "\\") && i+1 < len(lines) { // continuation
			i++
			line++
			text = strings.TrimSuffix(text, "\\") + " " + lines[i]
		}
		text = strings.TrimSpace(text)
		if !strings.HasPrefix(text, "#") {
			if active() {
				out.code = append(out.code, tokenize(text, pos)...)
			}
			continue
		}
		word, rest, _ := strings.Cut(strings.TrimSpace(text[1:]), " ")
		rest = strings.TrimSpace(rest)
		switch word {
		case "line":
			n, name, _ := strings.Cut(rest, " ")
			v, err := strconv.Atoi(n)
			if err != nil {
				return out, fmt.Errorf("%s: bad #line %q", pos, rest)
			}
			line = v - 1
			if name != "" {
				file = strings.Trim(name, `"`)
			}
		case "if", "ifdef", "ifndef":
			var cond bool
			switch word {
			case "ifdef":
				_, cond = defined[rest]
			case "ifndef":
				_, cond = defined[rest]
				cond = !cond
			default:
				v, err := evalCondition(tokenize(rest, pos), defined)
				if err != nil {
					return out, fmt.Errorf("%s: #if %s: %v", pos, rest, err)
				}
				cond = v != 0
			}
			outer := active()
			stack = append(stack, frame{outer: outer, taken: cond, active: outer && cond})
		case "elif", "else":
			if len(stack) == 0 {
				return out, fmt.Errorf("%s: #%s without #if", pos, word)
			}
			f := &stack[len(stack)-1]
			cond := true
			if word == "elif" {
				v, err := evalCondition(tokenize(rest, pos), defined)
				if err != nil {
					return out, fmt.Errorf("%s: #elif %s: %v", pos, rest, err)
				}
				cond = v != 0
			}
			f.active = f.outer && !f.taken && cond
			f.taken = f.taken || cond
		case "endif":
			if len(stack) == 0 {
				return out, fmt.Errorf("%s: #endif without #if", pos)
			}
			stack = stack[:len(stack)-1]
		case "define":
			if !active() {
				continue
			}
			toks := tokenize(rest, pos)
			if len(toks) == 0 || !toks[0].isIdent() {
				return out, fmt.Errorf("%s: bad #define %q", pos, rest)
			}
			name := toks[0].text
			defined[name] = 0
			if len(toks) == 2 {
				if v, err := strconv.Atoi(toks[1].text); err == nil {
					defined[name] = v
				}
			}
			out.macros = append(out.macros, macro{name: name, body: toks[1:], pos: pos})
		case "undef":
			if active() {
				delete(defined, rest)
			}
		}
	}
	if len(stack) != 0 {
		return out, fmt.Errorf("%d #if without #endif", len(stack))
	}
	return out, nil
}

// stripComments blanks // and /* */ comments, keeping newlines (for positions)
// and string and character literals.
func stripComments(src string) string {
	var sb strings.Builder
	for i := 0; i < len(src); i++ {
		switch {
		case strings.HasPrefix(src[i:], "//"):
			for i < len(src) && src[i] != '\n' {
				i++
			}
			if i < len(src) {
				sb.WriteByte('\n')
			}
		case strings.HasPrefix(src[i:], "/*"):
			end := strings.Index(src[i+2:], "*/")
			if end < 0 {
				end = len(src) - i - 4
			}
			sb.WriteString(" " + strings.Repeat("\n", strings.Count(src[i:i+2+end], "\n")))
			i += end + 3
		case src[i] == '"' || src[i] == '\'':
			j := i + 1
			for j < len(src) && src[j] != src[i] && src[j] != '\n' {
				if src[j] == '\\' {
					j++
				}
				j++
			}
			sb.WriteString(src[i:min(j+1, len(src))])
			i = j
		default:
			sb.WriteByte(src[i])
		}
	}
	return sb.String()
}

// twoCharPunct are the two-character operators the rules need to tell apart
// from their one-character halves (&& from a reference's &).
var twoCharPunct = []string{"&&", "||", "::", "->", "==", "!=", "<=", ">=", "<<", ">>", "++", "--", "##"}

// tokenize cuts one logical line into identifiers, numbers, literals and
// punctuation.
func tokenize(s, pos string) []token {
	var toks []token
	isIdentChar := func(c byte) bool {
		return c == '_' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9'
	}
	for i := 0; i < len(s); {
		c := s[i]
		start := i
		switch {
		case c == ' ' || c == '\t' || c == '\r':
			i++
			continue
		case c >= '0' && c <= '9' || c == '.' && i+1 < len(s) && s[i+1] >= '0' && s[i+1] <= '9':
			hex := strings.HasPrefix(s[i:], "0x") || strings.HasPrefix(s[i:], "0X")
			for i++; i < len(s); i++ {
				d := s[i]
				sign := (d == '+' || d == '-') && (strings.ContainsRune("pP", rune(s[i-1])) || !hex && strings.ContainsRune("eE", rune(s[i-1])))
				if !isIdentChar(d) && d != '.' && !sign {
					break
				}
			}
		case isIdentChar(c):
			for i < len(s) && isIdentChar(s[i]) {
				i++
			}
		case c == '"' || c == '\'':
			for i++; i < len(s) && s[i] != c; i++ {
				if s[i] == '\\' {
					i++
				}
			}
			i = min(i+1, len(s))
		default:
			i++
			for _, p := range twoCharPunct {
				if strings.HasPrefix(s[start:], p) {
					i = start + 2
					break
				}
			}
		}
		toks = append(toks, token{text: s[start:i], pos: pos})
	}
	return toks
}

// evalCondition evaluates an #if expression: integers, defined(X), macros
// with an integer value (others are 0, as in C), !, comparisons, && and ||.
func evalCondition(toks []token, defined map[string]int) (int, error) {
	p := &condParser{toks: toks, defined: defined}
	v := p.or()
	if p.err == nil && p.i != len(toks) {
		p.err = fmt.Errorf("unexpected %q", toks[p.i].text)
	}
	return v, p.err
}

type condParser struct {
	toks    []token
	i       int
	defined map[string]int
	err     error
}

func (p *condParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i].text
	}
	return ""
}

func (p *condParser) next() string {
	s := p.peek()
	if s == "" && p.err == nil {
		p.err = fmt.Errorf("expression ends early")
	}
	p.i++
	return s
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (p *condParser) or() int {
	v := p.and()
	for p.peek() == "||" {
		p.next()
		w := p.and()
		v = b2i(v != 0 || w != 0)
	}
	return v
}

func (p *condParser) and() int {
	v := p.compare()
	for p.peek() == "&&" {
		p.next()
		w := p.compare()
		v = b2i(v != 0 && w != 0)
	}
	return v
}

func (p *condParser) compare() int {
	v := p.unary()
	switch op := p.peek(); op {
	case "==", "!=", "<", ">", "<=", ">=":
		p.next()
		w := p.unary()
		return b2i(map[string]bool{"==": v == w, "!=": v != w, "<": v < w, ">": v > w, "<=": v <= w, ">=": v >= w}[op])
	}
	return v
}

func (p *condParser) unary() int {
	switch t := p.next(); {
	case t == "!":
		return b2i(p.unary() == 0)
	case t == "(":
		v := p.or()
		if p.next() != ")" && p.err == nil {
			p.err = fmt.Errorf("missing )")
		}
		return v
	case t == "defined":
		name := p.next()
		if name == "(" {
			name = p.next()
			p.next()
		}
		_, ok := p.defined[name]
		return b2i(ok)
	case t != "" && t[0] >= '0' && t[0] <= '9':
		v, err := strconv.ParseInt(strings.TrimRight(t, "uUlL"), 0, 64)
		if err != nil && p.err == nil {
			p.err = err
		}
		return int(v)
	default:
		return p.defined[t]
	}
}

// joinTokens is the token texts joined by single spaces.
func joinTokens(toks []token) string {
	var parts []string
	for _, t := range toks {
		parts = append(parts, t.text)
	}
	return strings.Join(parts, " ")
}
