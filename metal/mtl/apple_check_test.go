package mtl

import (
	"fmt"
	"go/ast"
	"regexp"
	"strings"
)

// The check of the binding against Apple's headers: every selector and class
// it names exists in metal-cpp; every message it sends goes to a class (or a
// base class) that metal-cpp sends it to, with as many arguments as the
// selector has colons, each of the C type's kind, and a result read as the C
// result's kind. The tests are in apple_test.go.

// helperReceivers names the class of the bare objc.ID that a runtime helper
// sends to (function.parameter): what its callers pass.
var helperReceivers = map[string]string{
	"retain.id":     "NS::Object", // any object
	"release.id":    "NS::Object",
	"respondsTo.id": "NS::Object",
	"goString.s":    "NS::String",
	"nsError.e":     "NS::Error",
}

// checkBinding returns every disagreement between the binding b and api, and
// for each send that agrees the metal-cpp method it matched.
func checkBinding(api *appleAPI, b *goBinding) (matched []string, errs []error) {
	for _, n := range b.names {
		if n.kind == "selector" && !api.selectors[n.name] {
			errs = append(errs, fmt.Errorf("%s: selector %q is not in Apple's headers", n.pos, n.name))
		}
		if n.kind == "class" && !api.classes[n.name] {
			errs = append(errs, fmt.Errorf("%s: class %s is not in Apple's headers", n.pos, n.name))
		}
	}
	for _, s := range b.sends {
		m, err := checkSend(api, b, s)
		if err != nil {
			errs = append(errs, fmt.Errorf("%s: [%s] %v", s.pos, s.selector, err))
			continue
		}
		matched = append(matched, fmt.Sprintf("%s: [%s] matches %s: %s(%s)", s.pos, s.selector, m.where, m.ret, strings.Join(m.args, ", ")))
	}
	return matched, errs
}

func checkSend(api *appleAPI, b *goBinding, s goSend) (cMethod, error) {
	if !api.selectors[s.selector] {
		return cMethod{}, fmt.Errorf("selector is not in Apple's headers")
	}
	if colons := strings.Count(s.selector, ":"); colons != len(s.args) {
		return cMethod{}, fmt.Errorf("%d arguments for a selector of %d", len(s.args), colons)
	}
	class, classObject, err := receiverClass(api, b, s.fn, s.recv)
	if err != nil {
		return cMethod{}, err
	}
	candidates, err := api.lookup(class, classObject, s.selector)
	if err != nil {
		return cMethod{}, err
	}
	var mismatch error
	for _, m := range candidates {
		if mismatch = matchSend(api, b, s, m); mismatch == nil {
			return m, nil
		}
	}
	return cMethod{}, mismatch
}

// matchSend compares one send with one metal-cpp method of its selector.
func matchSend(api *appleAPI, b *goBinding, s goSend, m cMethod) error {
	if len(m.args) != len(s.args) {
		return fmt.Errorf("%d arguments, %s sends %d", len(s.args), m.where, len(m.args))
	}
	for i, a := range s.args {
		want, err := api.cKind(m.args[i], m.class)
		if err != nil {
			return fmt.Errorf("argument %d: %s: %v", i+1, m.where, err)
		}
		got, err := goArgKind(b, s.fn, a)
		if err != nil {
			return err
		}
		if !compatible(want, got) {
			return fmt.Errorf("argument %d is a Go %s, %s passes a C %s (%s)", i+1, got, m.where, m.args[i], want)
		}
	}
	want, err := api.cKind(m.ret, m.class)
	if err != nil {
		return fmt.Errorf("result: %s: %v", m.where, err)
	}
	switch {
	case s.ret == "":
		// A discarded result may be anything but a struct: arm64 returns a
		// large struct through memory the caller provides (x8), which the
		// objc.ID-returning Send does not.
		if want == "MTL::Size" {
			return fmt.Errorf("struct result of %s read by Send", m.where)
		}
	case goKind(s.ret) != want:
		return fmt.Errorf("result read as a Go %s, %s returns a C %s (%s)", s.ret, m.where, m.ret, want)
	}
	return nil
}

// compatible reports whether a Go argument of kind got may be passed where the
// C kind want is expected. A nil block is the integer 0.
func compatible(want, got string) bool {
	return want == got || want == "block" && (got == "uintptr" || got == "object")
}

// goArgKind is the kind of a Go argument; unsafe.Pointer(&x) with x an objc.ID
// is an out-parameter for an object (NSError **).
func goArgKind(b *goBinding, fn *goFunc, a ast.Expr) (string, error) {
	t, err := b.goType(fn, a)
	if err != nil {
		return "", err
	}
	if call, ok := a.(*ast.CallExpr); ok && t == "unsafe.Pointer" && len(call.Args) == 1 {
		if inner, err := b.goType(fn, call.Args[0]); err == nil && inner == "*objc.ID" {
			return "pointer to object", nil
		}
	}
	return goKind(t), nil
}

// goKind maps a Go type to the kind the C types are compared in.
func goKind(t string) string {
	switch t {
	case "uint64":
		return "unsigned 64-bit"
	case "int64":
		return "signed 64-bit"
	case "bool":
		return "bool"
	case "float64":
		return "double"
	case "Size":
		return "MTL::Size"
	case "objc.ID":
		return "object"
	case "objc.SEL":
		return "SEL"
	case "unsafe.Pointer", "*byte":
		return "pointer"
	case "uintptr":
		return "uintptr"
	}
	return t + " (no C counterpart)"
}

var constRe = regexp.MustCompile(`\bconst\b`)

// cKind maps a metal-cpp type to its kind; enums and `using` aliases become
// their type, looked up in the namespace of class when unqualified.
func (api *appleAPI) cKind(t, class string) (string, error) {
	if strings.HasPrefix(t, "? ") {
		return "", fmt.Errorf("passes the expression %q, not a parameter", t[2:])
	}
	t = strings.ReplaceAll(constRe.ReplaceAllString(t, ""), " ", "")
	switch t {
	case "void", "block", "SEL", "bool":
		return t, nil
	case "BOOL":
		return "bool", nil
	case "NS::UInteger", "UInteger", "uint64_t", "std::uint64_t", "uintptr_t", "std::uintptr_t":
		return "unsigned 64-bit", nil
	case "NS::Integer", "Integer", "int64_t", "std::int64_t", "intptr_t", "std::intptr_t":
		return "signed 64-bit", nil
	case "CFTimeInterval", "double":
		return "double", nil
	case "MTL::Size", "Size":
		return "MTL::Size", nil
	case "char*", "void*":
		return "pointer", nil
	}
	switch {
	case strings.HasSuffix(t, "**"):
		return "pointer to object", nil
	case strings.HasSuffix(t, "*"):
		return "object", nil
	}
	if under, ok := api.aliases[t]; ok {
		return api.cKind(under, class)
	}
	if ns, _, ok := strings.Cut(class, "::"); ok {
		if under, ok := api.aliases[ns+"::"+t]; ok {
			return api.cKind(under, class)
		}
	}
	return "", fmt.Errorf("unknown C type %q", t)
}

// lookup finds the metal-cpp sends of selector to class, or else to its
// nearest base class that has them; classObject: sent to the class itself.
func (api *appleAPI) lookup(class string, classObject bool, selector string) ([]cMethod, error) {
	for c := class; ; {
		var found []cMethod
		for _, m := range api.methods[selector] {
			if m.class == c && m.classMethod == classObject {
				found = append(found, m)
			}
		}
		if len(found) > 0 {
			return found, nil
		}
		if c == "NS::Object" {
			return nil, fmt.Errorf("no metal-cpp method sends it to %s or its base classes (class method: %v)", class, classObject)
		}
		base, ok := api.bases[c]
		if !ok {
			return nil, fmt.Errorf("class %s is not in the vendored headers", c)
		}
		c = base
	}
}

// receiverClass is the C++ class of the object a send goes to, and whether it
// is the class object itself.
func receiverClass(api *appleAPI, b *goBinding, fn *goFunc, e ast.Expr) (string, bool, error) {
	switch e := e.(type) {
	case *ast.SelectorExpr: // w.id of a wrapper type: MTL::<type>
		if t, err := b.goType(fn, e.X); err == nil && b.wrappers[t] && e.Sel.Name == "id" {
			return "MTL::" + t, false, nil
		}
	case *ast.Ident:
		if !fn.decl[e.Name] {
			if v, ok := fn.vars[e.Name]; ok {
				return receiverClass(api, b, fn, v)
			}
		} else if c, ok := helperReceivers[fn.name+"."+e.Name]; ok {
			return c, false, nil
		}
	case *ast.CallExpr:
		if isIdent(e.Fun, "class") && len(e.Args) == 1 {
			if name, ok := stringLit(e.Args[0]); ok {
				return cppClass(name), true, nil
			}
		}
		// The result of another send: alloc and init return their receiver's
		// class (metal-cpp's _Class*), anything else the class it returns.
		if f, ok := e.Fun.(*ast.SelectorExpr); ok && f.Sel.Name == "Send" && len(e.Args) > 0 {
			inner, isClass, err := receiverClass(api, b, fn, f.X)
			if err != nil {
				return "", false, err
			}
			sc, ok := e.Args[0].(*ast.CallExpr)
			if !ok || len(sc.Args) != 1 {
				break
			}
			selector, _ := stringLit(sc.Args[0])
			ms, err := api.lookup(inner, isClass, selector)
			if err != nil {
				return "", false, fmt.Errorf("[%s] %v", selector, err)
			}
			if ret := strings.TrimSpace(ms[0].ret); ret == "_Class*" {
				return inner, false, nil
			} else if strings.HasSuffix(ret, "*") {
				return strings.TrimSpace(strings.TrimSuffix(ret, "*")), false, nil
			}
		}
	}
	return "", false, fmt.Errorf("%s: cannot tell the class of the receiver %s (teach apple_check_test.go)", b.fset.Position(e.Pos()), exprString(e))
}

// cppClass is metal-cpp's name of an Objective-C class: MTLCompileOptions →
// MTL::CompileOptions, NSString → NS::String.
func cppClass(objc string) string {
	for _, ns := range []string{"MTL", "NS"} {
		if rest, ok := strings.CutPrefix(objc, ns); ok {
			return ns + "::" + rest
		}
	}
	return objc
}
