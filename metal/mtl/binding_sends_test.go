package mtl

import (
	"fmt"
	"go/ast"
	"go/token"
	"strconv"
	"strings"
)

// The Objective-C messages the Go binding sends, read from the syntax of its
// darwin sources (go/types cannot load purego's darwin-only objc package on
// Linux, and the binding's few expression forms do not need it). Each form the
// reader does not understand is an error, so a new kind of call cannot slip
// past the check unexamined.

// goSend is one message send of the binding.
type goSend struct {
	pos      string
	selector string
	recv     ast.Expr   // the receiver expression
	ret      string     // the Go result type; "objc.ID" for the Send method, "" when discarded
	args     []ast.Expr // the arguments after the selector
	fn       *goFunc    // the enclosing function
}

// goFunc is a function of the binding with its variables' types.
type goFunc struct {
	name string
	vars map[string]ast.Expr // a declared type, or the expression of `x := expr`
	decl map[string]bool     // which of vars are declared types
}

// goBinding is the parsed darwin sources.
type goBinding struct {
	fset     *token.FileSet
	sends    []goSend
	names    []goName            // every literal selector or class name
	funcs    map[string]ast.Expr // package function → its result type
	wrappers map[string]bool     // the types `T struct{ id objc.ID }` (Device, Buffer, ...)
}

// goName is a literal name given to sel, class or respondsTo.
type goName struct {
	pos, kind, name string // kind: "selector" or "class"
}

// readBinding collects the sends, names, functions and wrapper types of files.
func readBinding(fset *token.FileSet, files []*ast.File) (*goBinding, error) {
	b := &goBinding{fset: fset, funcs: map[string]ast.Expr{}, wrappers: map[string]bool{}}
	for _, f := range files {
		for _, d := range f.Decls {
			switch d := d.(type) {
			case *ast.FuncDecl:
				if d.Recv == nil && d.Type.Results != nil && len(d.Type.Results.List) == 1 {
					b.funcs[d.Name.Name] = d.Type.Results.List[0].Type
				}
			case *ast.GenDecl:
				for _, s := range d.Specs {
					if ts, ok := s.(*ast.TypeSpec); ok && isIDWrapper(ts.Type) {
						b.wrappers[ts.Name.Name] = true
					}
				}
			}
		}
	}
	for _, f := range files {
		for _, d := range f.Decls {
			fd, ok := d.(*ast.FuncDecl)
			if !ok || fd.Body == nil {
				continue
			}
			if err := b.readFunc(fd); err != nil {
				return nil, err
			}
		}
	}
	return b, nil
}

// isIDWrapper reports whether t is `struct{ id objc.ID }`.
func isIDWrapper(t ast.Expr) bool {
	st, ok := t.(*ast.StructType)
	return ok && len(st.Fields.List) == 1 && len(st.Fields.List[0].Names) == 1 &&
		st.Fields.List[0].Names[0].Name == "id" && typeString(st.Fields.List[0].Type) == "objc.ID"
}

func (b *goBinding) readFunc(fd *ast.FuncDecl) error {
	fn := &goFunc{name: fd.Name.Name, vars: map[string]ast.Expr{}, decl: map[string]bool{}}
	declare := func(fields *ast.FieldList) {
		if fields == nil {
			return
		}
		for _, f := range fields.List {
			for _, n := range f.Names {
				fn.vars[n.Name], fn.decl[n.Name] = f.Type, true
			}
		}
	}
	declare(fd.Recv)
	declare(fd.Type.Params)
	var err error
	discarded := map[*ast.CallExpr]bool{}
	ast.Inspect(fd.Body, func(n ast.Node) bool {
		switch n := n.(type) {
		case *ast.ExprStmt:
			if c, ok := n.X.(*ast.CallExpr); ok {
				discarded[c] = true
			}
		case *ast.AssignStmt:
			if n.Tok == token.DEFINE && len(n.Lhs) == len(n.Rhs) {
				for i, l := range n.Lhs {
					if id, ok := l.(*ast.Ident); ok {
						fn.vars[id.Name] = n.Rhs[i]
					}
				}
			}
		case *ast.ValueSpec:
			for _, id := range n.Names {
				if n.Type != nil {
					fn.vars[id.Name], fn.decl[id.Name] = n.Type, true
				}
			}
		case *ast.CallExpr:
			if e := b.readCall(fn, n, discarded[n]); e != nil && err == nil {
				err = e
			}
		}
		return true
	})
	return err
}

// readCall records a literal name (sel, class, respondsTo) or a send: the
// method form recv.Send(sel("s"), args...) returns an objc.ID; the generic
// objc.Send[T](recv, sel("s"), args...) returns T.
func (b *goBinding) readCall(fn *goFunc, call *ast.CallExpr, discarded bool) error {
	pos := b.fset.Position(call.Pos()).String()
	if id, ok := call.Fun.(*ast.Ident); ok {
		kind, arg := map[string]string{"sel": "selector", "class": "class", "respondsTo": "selector"}[id.Name], 0
		if id.Name == "respondsTo" {
			arg = 1
		}
		if kind == "" || len(call.Args) <= arg {
			return nil
		}
		if name, ok := stringLit(call.Args[arg]); ok {
			b.names = append(b.names, goName{pos, kind, name})
		} else if _, param := call.Args[arg].(*ast.Ident); !param || id.Name == "respondsTo" {
			return fmt.Errorf("%s: %s with a name that is not a literal", pos, id.Name)
		}
		return nil
	}
	send := goSend{pos: pos, fn: fn}
	var rest []ast.Expr
	switch f := call.Fun.(type) {
	case *ast.SelectorExpr: // recv.Send(sel, args...)
		if f.Sel.Name != "Send" || isIdent(f.X, "objc") {
			return nil
		}
		send.recv, send.ret, rest = f.X, "objc.ID", call.Args
	case *ast.IndexExpr: // objc.Send[T](recv, sel, args...)
		s, ok := f.X.(*ast.SelectorExpr)
		if !ok || !isIdent(s.X, "objc") || s.Sel.Name != "Send" || len(call.Args) < 1 {
			return nil
		}
		send.recv, send.ret, rest = call.Args[0], typeString(f.Index), call.Args[1:]
	default:
		return nil
	}
	if len(rest) == 0 {
		return fmt.Errorf("%s: Send without a selector", pos)
	}
	sc, ok := rest[0].(*ast.CallExpr)
	var name string
	if ok && isIdent(sc.Fun, "sel") && len(sc.Args) == 1 {
		name, ok = stringLit(sc.Args[0])
	}
	if !ok {
		return fmt.Errorf("%s: Send whose selector is not sel(\"literal\")", pos)
	}
	if discarded && send.ret == "objc.ID" {
		send.ret = ""
	}
	send.selector, send.args = name, rest[1:]
	b.sends = append(b.sends, send)
	return nil
}

// goType is the Go type of an argument or receiver expression of the binding,
// as a string ("uint64", "objc.ID", "unsafe.Pointer", "*objc.ID").
func (b *goBinding) goType(fn *goFunc, e ast.Expr) (string, error) {
	switch e := e.(type) {
	case *ast.ParenExpr:
		return b.goType(fn, e.X)
	case *ast.Ident:
		v, ok := fn.vars[e.Name]
		if !ok {
			return "", fmt.Errorf("%s: %s is not a variable of %s", b.fset.Position(e.Pos()), e.Name, fn.name)
		}
		if fn.decl[e.Name] {
			return typeString(v), nil
		}
		return b.goType(fn, v)
	case *ast.SelectorExpr:
		if e.Sel.Name == "id" { // the objc.ID inside a wrapper (d.id)
			return "objc.ID", nil
		}
	case *ast.UnaryExpr:
		if e.Op == token.AND {
			t, err := b.goType(fn, e.X)
			return "*" + t, err
		}
	case *ast.CallExpr:
		switch f := e.Fun.(type) {
		case *ast.Ident:
			switch f.Name {
			case "sel":
				return "objc.SEL", nil
			case "class":
				return "objc.ID", nil
			case "uint64", "int64", "uint32", "int32", "int", "uint", "uintptr", "bool", "float64", "float32":
				return f.Name, nil // a conversion
			}
			if t, ok := b.funcs[f.Name]; ok {
				return typeString(t), nil
			}
		case *ast.SelectorExpr:
			if isIdent(f.X, "unsafe") && f.Sel.Name == "Pointer" {
				return "unsafe.Pointer", nil
			}
			if f.Sel.Name == "Send" && !isIdent(f.X, "objc") {
				return "objc.ID", nil
			}
		case *ast.IndexExpr:
			if s, ok := f.X.(*ast.SelectorExpr); ok && isIdent(s.X, "objc") && s.Sel.Name == "Send" {
				return typeString(f.Index), nil
			}
		}
	}
	return "", fmt.Errorf("%s: cannot tell the Go type of %s (teach binding_sends_test.go)", b.fset.Position(e.Pos()), exprString(e))
}

func isIdent(e ast.Expr, name string) bool {
	id, ok := e.(*ast.Ident)
	return ok && id.Name == name
}

func stringLit(e ast.Expr) (string, bool) {
	lit, ok := e.(*ast.BasicLit)
	if !ok || lit.Kind != token.STRING {
		return "", false
	}
	s, err := strconv.Unquote(lit.Value)
	return s, err == nil
}

// typeString spells a type expression: "uint64", "objc.ID", "*byte".
func typeString(e ast.Expr) string {
	switch e := e.(type) {
	case *ast.Ident:
		return e.Name
	case *ast.SelectorExpr:
		return typeString(e.X) + "." + e.Sel.Name
	case *ast.StarExpr:
		return "*" + typeString(e.X)
	}
	return exprString(e)
}

// exprString is a short rendering of e for messages.
func exprString(e ast.Expr) string {
	var sb strings.Builder
	ast.Inspect(e, func(n ast.Node) bool {
		if id, ok := n.(*ast.Ident); ok {
			if sb.Len() > 0 {
				sb.WriteByte('.')
			}
			sb.WriteString(id.Name)
		}
		return true
	})
	return fmt.Sprintf("%T(%s)", e, sb.String())
}
