package mtl

import (
	"go/ast"
	"go/parser"
	"go/token"
	"path/filepath"
	"slices"
	"strconv"
	"testing"
)

// TestTablesCoverTheBinding parses the darwin sources (whatever the host OS) and
// checks that every literal name given to sel, class or respondsTo is in
// selectorNames or classNames, and that every table entry is used. A missing
// entry would panic on a Mac at the first call.
func TestTablesCoverTheBinding(t *testing.T) {
	files, err := filepath.Glob("*_darwin.go")
	if err != nil || len(files) == 0 {
		t.Fatalf("no darwin sources found: %v", err)
	}
	usedSel, usedClass := map[string]bool{}, map[string]bool{}
	fset := token.NewFileSet()
	for _, f := range files {
		file, err := parser.ParseFile(fset, f, nil, 0)
		if err != nil {
			t.Fatal(err)
		}
		ast.Inspect(file, func(n ast.Node) bool {
			call, ok := n.(*ast.CallExpr)
			if !ok {
				return true
			}
			fn, ok := call.Fun.(*ast.Ident)
			if !ok {
				return true
			}
			arg := -1
			var table map[string]bool
			switch fn.Name {
			case "sel":
				arg, table = 0, usedSel
			case "class":
				arg, table = 0, usedClass
			case "respondsTo":
				arg, table = 1, usedSel
			default:
				return true
			}
			lit, ok := call.Args[arg].(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				if fn.Name != "sel" && fn.Name != "class" || !isParam(call.Args[arg]) {
					t.Errorf("%s: %s called with a non-literal name", fset.Position(call.Pos()), fn.Name)
				}
				return true
			}
			name, _ := strconv.Unquote(lit.Value)
			table[name] = true
			return true
		})
	}
	check := func(kind string, table []string, used map[string]bool) {
		seen := map[string]bool{}
		for _, name := range table {
			if seen[name] {
				t.Errorf("%s %q listed twice", kind, name)
			}
			seen[name] = true
			if !used[name] {
				t.Errorf("%s %q is in the table but no darwin source uses it", kind, name)
			}
		}
		for name := range used {
			if !slices.Contains(table, name) {
				t.Errorf("%s %q is used but not in the table (it would panic on a Mac)", kind, name)
			}
		}
	}
	check("selector", selectorNames, usedSel)
	check("class", classNames, usedClass)
	if len(usedSel) < 30 {
		t.Errorf("only %d selectors found in the sources: is the scan broken?", len(usedSel))
	}
}

// isParam reports whether e is a plain identifier (sel(name) inside a helper
// that forwards its parameter, as respondsTo does).
func isParam(e ast.Expr) bool {
	_, ok := e.(*ast.Ident)
	return ok
}
