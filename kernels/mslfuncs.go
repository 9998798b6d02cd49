package kernels

// Function definitions and declarations of a scanned source, for the MSL rules.

// function is a function definition or declaration found at file, namespace or
// struct scope. A KERNEL(name, ...) { ... } is one too, with kernel set and
// the kernel's own name.
type function struct {
	name   string
	pos    string
	kernel bool
	params [][]token // one token list per parameter
	body   []token   // nil for a declaration
}

// functions finds every `name ( params ) [const] { body }` and `name ( params );`
// outside function bodies. Inside a body, `name (` is a call.
func functions(code []token) []function {
	var fns []function
	// A function is skipped whole, so every `name (` seen here is at file,
	// namespace or struct scope (struct and namespace braces are walked through).
	for i := 0; i < len(code); i++ {
		t := code[i]
		if !t.isIdent() || i+1 >= len(code) || code[i+1].text != "(" {
			continue
		}
		end := functionEnd(code, i)
		if end < 0 {
			continue
		}
		closeParen := matching(code, i+1)
		fn := function{name: t.text, pos: t.pos, params: splitParams(code[i+2 : closeParen])}
		if t.text == "KERNEL" && len(fn.params) > 0 && len(fn.params[0]) == 1 {
			fn.kernel, fn.name, fn.params = true, fn.params[0][0].text, fn.params[1:]
		}
		if code[end].text == "}" {
			open := closeParen + 1
			for code[open].text != "{" {
				open++
			}
			fn.body = code[open+1 : end]
		}
		fns = append(fns, fn)
		i = end
	}
	return fns
}

// functionEnd returns, for `name (` at i, the index of the `}` ending the
// function's body or of the `;` ending its declaration; -1 when `name (` does
// not start a function (a call, a declarator like `float (*f)(float)`).
func functionEnd(code []token, i int) int {
	closeParen := matching(code, i+1)
	if closeParen < 0 {
		return -1
	}
	after := closeParen + 1
	if after < len(code) && code[after].text == "const" {
		after++
	}
	switch {
	case after >= len(code):
		return -1
	case code[after].text == ";":
		return after
	case code[after].text == "{":
		return matching(code, after)
	}
	return -1
}

// matching returns the index of the bracket closing the one at open, or -1.
func matching(code []token, open int) int {
	pairs := map[string]string{"(": ")", "{": "}", "[": "]"}
	want := pairs[code[open].text]
	depth := 0
	for j := open; j < len(code); j++ {
		switch code[j].text {
		case code[open].text:
			depth++
		case want:
			depth--
			if depth == 0 {
				return j
			}
		}
	}
	return -1
}

// splitParams splits a parameter list at its top-level commas; "()" and
// "(void)" have none.
func splitParams(toks []token) [][]token {
	if len(toks) == 0 || len(toks) == 1 && toks[0].text == "void" {
		return nil
	}
	var params [][]token
	depth, start := 0, 0
	for j, t := range toks {
		switch t.text {
		case "(", "[", "<":
			depth++
		case ")", "]", ">":
			depth--
		case ",":
			if depth == 0 {
				params = append(params, toks[start:j])
				start = j + 1
			}
		}
	}
	return append(params, toks[start:])
}
