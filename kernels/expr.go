package kernels

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// The launch annotations of the kernel files (see launch.go) hold small integer
// expressions over a kernel's scalar arguments and the files' #defines:
//
//	expr   = term { ("+" | "-") term }
//	term   = factor { ("*" | "/") factor }        "/" truncates, as in C
//	factor = number | name | "(" expr ")" | fn "(" expr { "," expr } ")"
//	fn     = ceil(n, d) = ⌈n/d⌉ | min(a, b) | max(a, b)
//	       | single(n, a, b) = a where n is 1, else b
//
// single lets a launch shape its threadgroups for one token apart from a few
// (a decode step's GEMV against a speculative verify's): the same kernel,
// whose SIMD-groups divide the work at run time.
//
// A name is a scalar argument of the kernel, or else a #define of the kernel
// files with an integer value. Expressions are compiled once, when the
// declarations are parsed, into closures over the argument list: a dispatch
// evaluates them without parsing.

// intExpr evaluates to an int given a dispatch's scalar values by parameter index.
type intExpr func(scalars []int) int

// exprEnv resolves names while compiling: a parameter index, or a constant.
type exprEnv struct {
	params  map[string]int // scalar argument name → index in the argument list
	defines map[string]int // #define NAME integer
}

// compileExpr parses src into an intExpr, or returns an error naming what it
// could not read.
func compileExpr(src string, env exprEnv) (intExpr, error) {
	p := &exprParser{src: src, env: env}
	p.next()
	e, err := p.expr()
	if err != nil {
		return nil, err
	}
	if p.tok != "" {
		return nil, fmt.Errorf("%q: unexpected %q", src, p.tok)
	}
	return e, nil
}

type exprParser struct {
	src string
	pos int
	tok string // the current token; "" at the end
	env exprEnv
}

// next reads the next token: a number, a name, or one punctuation character.
func (p *exprParser) next() {
	for p.pos < len(p.src) && p.src[p.pos] == ' ' {
		p.pos++
	}
	start := p.pos
	if p.pos >= len(p.src) {
		p.tok = ""
		return
	}
	word := func(r byte) bool { return r == '_' || unicode.IsLetter(rune(r)) || unicode.IsDigit(rune(r)) }
	if word(p.src[p.pos]) {
		for p.pos < len(p.src) && word(p.src[p.pos]) {
			p.pos++
		}
	} else {
		p.pos++
	}
	p.tok = p.src[start:p.pos]
}

func (p *exprParser) expect(tok string) error {
	if p.tok != tok {
		return fmt.Errorf("%q: want %q, found %q", p.src, tok, p.tok)
	}
	p.next()
	return nil
}

func (p *exprParser) expr() (intExpr, error) {
	return p.binary(p.term, "+-")
}

func (p *exprParser) term() (intExpr, error) {
	return p.binary(p.factor, "*/")
}

// binary parses operand { op operand } for the one-character operators in ops,
// left to right.
func (p *exprParser) binary(operand func() (intExpr, error), ops string) (intExpr, error) {
	left, err := operand()
	if err != nil {
		return nil, err
	}
	for len(p.tok) == 1 && strings.Contains(ops, p.tok) {
		op := p.tok
		p.next()
		right, err := operand()
		if err != nil {
			return nil, err
		}
		l := left
		switch op {
		case "+":
			left = func(s []int) int { return l(s) + right(s) }
		case "-":
			left = func(s []int) int { return l(s) - right(s) }
		case "*":
			left = func(s []int) int { return l(s) * right(s) }
		case "/":
			left = func(s []int) int { return l(s) / nonZero(right(s)) }
		}
	}
	return left, nil
}

func (p *exprParser) factor() (intExpr, error) {
	tok := p.tok
	switch {
	case tok == "":
		return nil, fmt.Errorf("%q: expression ends early", p.src)
	case tok == "(":
		p.next()
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		return e, p.expect(")")
	case tok[0] >= '0' && tok[0] <= '9':
		v, err := strconv.Atoi(tok)
		if err != nil {
			return nil, fmt.Errorf("%q: bad number %q", p.src, tok)
		}
		p.next()
		return func([]int) int { return v }, nil
	}
	p.next()
	if p.tok == "(" {
		return p.call(tok)
	}
	if i, ok := p.env.params[tok]; ok {
		return func(s []int) int { return s[i] }, nil
	}
	if v, ok := p.env.defines[tok]; ok {
		return func([]int) int { return v }, nil
	}
	return nil, fmt.Errorf("%q: %s is neither a scalar argument nor an integer #define", p.src, tok)
}

// call parses the arguments of fn(a, b) or fn(a, b, c).
func (p *exprParser) call(fn string) (intExpr, error) {
	arity := map[string]int{"ceil": 2, "min": 2, "max": 2, "single": 3}[fn]
	if arity == 0 {
		return nil, fmt.Errorf("%q: unknown function %s (ceil, min, max, single)", p.src, fn)
	}
	var args []intExpr
	for p.next(); ; {
		e, err := p.expr()
		if err != nil {
			return nil, err
		}
		args = append(args, e)
		if len(args) == arity {
			break
		}
		if err := p.expect(","); err != nil {
			return nil, fmt.Errorf("%s takes %d arguments: %w", fn, arity, err)
		}
	}
	if err := p.expect(")"); err != nil {
		return nil, fmt.Errorf("%s takes %d arguments: %w", fn, arity, err)
	}
	a, b := args[0], args[1]
	switch fn {
	case "ceil":
		return func(s []int) int { d := nonZero(b(s)); return (a(s) + d - 1) / d }, nil
	case "min":
		return func(s []int) int { return min(a(s), b(s)) }, nil
	case "max":
		return func(s []int) int { return max(a(s), b(s)) }, nil
	}
	c := args[2] // single
	return func(s []int) int {
		if a(s) == 1 {
			return b(s)
		}
		return c(s)
	}, nil
}

// nonZero panics on a zero divisor: a launch computed from a zero-sized
// argument is a caller's bug, better named than a runtime divide error.
func nonZero(d int) int {
	if d == 0 {
		panic("kernels: launch expression divides by zero")
	}
	return d
}
