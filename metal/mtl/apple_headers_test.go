package mtl

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
)

// What Apple's metal-cpp headers (testdata/metal-cpp, see its README) say about
// the Objective-C messages: every selector and class metal-cpp uses, and for
// each selector the C types metal-cpp sends it with. metal-cpp is Apple's own
// 1:1 C++ wrapper of the Objective-C API, so each of its inline methods is one
// objc_msgSend with the types of the Objective-C declaration: the same call
// the Go binding makes through purego.

// appleAPI is the parsed headers.
type appleAPI struct {
	selectors map[string]bool      // every selector string ("newBufferWithLength:options:")
	classes   map[string]bool      // every class metal-cpp looks up ("MTLCompileOptions")
	methods   map[string][]cMethod // the message sends of the inline methods, by selector
	bases     map[string]string    // C++ class → base class ("MTL::Buffer" → "MTL::Resource")
	aliases   map[string]string    // enum or `using` type → its type ("MTL::CommandBufferStatus" → "NS::UInteger")
}

// cMethod is one objc_msgSend in a metal-cpp inline method.
type cMethod struct {
	class       string   // the C++ class that defines it; "NS::Object" for NSObject's methods
	classMethod bool     // sent to the class object (alloc, stringWithCString:encoding:)
	ret         string   // the C result type of the send (sendMessage<ret>)
	args        []string // the C types of the arguments after the selector
	where       string   // "MTLDevice.hpp: MTL::Device::newBuffer", for messages
}

var (
	defSelRe   = regexp.MustCompile(`_(MTL|NS)_PRIVATE_DEF_SEL\(\s*(\w+)\s*,\s*"([^"]*)"\s*\)`)
	defClsRe   = regexp.MustCompile(`_(?:MTL|NS)_PRIVATE_DEF_CLS\(\s*(\w+)\s*\)`)
	enumRe     = regexp.MustCompile(`_(?:MTL|NS)_(?:ENUM|OPTIONS)\(\s*([\w:]+)\s*,\s*(\w+)\s*\)`)
	usingRe    = regexp.MustCompile(`using\s+(\w+)\s*=\s*([^;]+);`)
	baseRe     = regexp.MustCompile(`class\s+(?:_NS_EXPORT\s+)?(\w+)\s*:\s*public\s+(?:NS::)?(?:Referencing|Copying|SecureCoding)<\s*\w+\s*(?:,\s*([\w:]+)\s*)?>`)
	privSelRe  = regexp.MustCompile(`^_(MTL|NS)_PRIVATE_SEL\((\w+)\)$`)
	templateRe = regexp.MustCompile(`<[^<>]*>`)
	inlineRe   = regexp.MustCompile(`_(?:MTL|NS)_INLINE\s`)
)

// loadAppleAPI parses the .hpp files under dir (Metal/ is namespace MTL,
// Foundation/ is NS).
func loadAppleAPI(dir string) (*appleAPI, error) {
	api := &appleAPI{
		selectors: map[string]bool{}, classes: map[string]bool{},
		methods: map[string][]cMethod{}, bases: map[string]string{}, aliases: map[string]string{},
	}
	files, err := filepath.Glob(filepath.Join(dir, "*", "*.hpp"))
	if err != nil || len(files) == 0 {
		return nil, fmt.Errorf("no metal-cpp headers under %s: %v", dir, err)
	}
	texts := map[string]string{}
	// The selector names first: the inline methods name them by accessor
	// (_MTL_PRIVATE_SEL(newBufferWithLength_options_)), per namespace.
	accessors := map[string]string{} // "MTL.newBufferWithLength_options_" → "newBufferWithLength:options:"
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			return nil, err
		}
		text := string(b)
		texts[f] = text
		for _, m := range defSelRe.FindAllStringSubmatch(text, -1) {
			accessors[m[1]+"."+m[2]] = m[3]
			api.selectors[m[3]] = true
		}
		for _, m := range defClsRe.FindAllStringSubmatch(text, -1) {
			api.classes[m[1]] = true
		}
	}
	for _, f := range files {
		ns := map[string]string{"Metal": "MTL", "Foundation": "NS"}[filepath.Base(filepath.Dir(f))]
		if ns == "" {
			return nil, fmt.Errorf("%s: not under Metal/ or Foundation/", f)
		}
		text := texts[f]
		for _, m := range enumRe.FindAllStringSubmatch(text, -1) {
			api.aliases[ns+"::"+m[2]] = m[1]
		}
		for _, m := range usingRe.FindAllStringSubmatch(text, -1) {
			api.aliases[ns+"::"+m[1]] = strings.TrimSpace(m[2])
		}
		for _, m := range baseRe.FindAllStringSubmatch(text, -1) {
			base := m[2]
			if base == "" || base == "Object" {
				base = "NS::Object"
			} else if !strings.Contains(base, "::") {
				base = ns + "::" + base
			}
			api.bases[ns+"::"+m[1]] = base
		}
		if err := api.parseInlineMethods(filepath.Base(f), text, accessors); err != nil {
			return nil, err
		}
	}
	return api, nil
}

// parseInlineMethods reads every `_MTL_INLINE ret Class::method(params) { ...
// sendMessage<ret>(receiver, _MTL_PRIVATE_SEL(accessor), args...) ... }`.
func (api *appleAPI) parseInlineMethods(file, text string, accessors map[string]string) error {
	for _, loc := range inlineRe.FindAllStringIndex(text, -1) {
		open := strings.IndexByte(text[loc[1]:], '{')
		if open < 0 {
			continue
		}
		header := text[loc[1] : loc[1]+open]
		if strings.Contains(header, ";") || strings.Contains(header, "#") {
			continue // a declaration or a macro, not a definition
		}
		body, ok := balanced(text[loc[1]+open:], '{', '}')
		if !ok {
			return fmt.Errorf("%s: unbalanced braces after %q", file, header)
		}
		class, method, params, ok := parseDefinitionHeader(header)
		if !ok {
			continue
		}
		for _, send := range sendMessages(body) {
			m := privSelRe.FindStringSubmatch(send.selector)
			if m == nil {
				continue // NSObject's generic helpers forward a SEL variable
			}
			selector, ok := accessors[m[1]+"."+m[2]]
			if !ok {
				return fmt.Errorf("%s: %s::%s sends accessor %s, which no _PRIVATE_DEF_SEL defines", file, class, method, send.selector)
			}
			cm := cMethod{
				class:       class,
				classMethod: send.receiver != "this" && send.receiver != "pObj",
				ret:         send.ret,
				where:       file + ": " + class + "::" + method,
			}
			for _, a := range send.args {
				t, ok := params[a]
				if !ok {
					t = "? " + a // an expression, not a parameter: the check reports it if the binding sends this
				}
				cm.args = append(cm.args, t)
			}
			api.methods[selector] = append(api.methods[selector], cm)
		}
	}
	return nil
}

// parseDefinitionHeader splits `MTL::Buffer* MTL::Device::newBuffer(NS::UInteger
// length, MTL::ResourceOptions options) const` into the class, the method and
// the parameter types by name. NSObject's templates (NS::Referencing<_Class,
// _Base>::retain, NS::Object::alloc<_Class>) belong to NS::Object.
func parseDefinitionHeader(header string) (class, method string, params map[string]string, ok bool) {
	paren := strings.IndexByte(header, '(')
	if paren < 0 {
		return "", "", nil, false
	}
	plist, ok := balanced(header[paren:], '(', ')')
	if !ok {
		return "", "", nil, false
	}
	pre := header[:paren]
	for templateRe.MatchString(pre) {
		pre = templateRe.ReplaceAllString(pre, "")
	}
	fields := strings.Fields(pre)
	if len(fields) < 2 {
		return "", "", nil, false
	}
	qualified := fields[len(fields)-1]
	cut := strings.LastIndex(qualified, "::")
	if cut < 0 {
		return "", "", nil, false
	}
	class, method = qualified[:cut], qualified[cut+2:]
	switch class {
	case "NS::Referencing", "NS::Copying", "NS::SecureCoding":
		class = "NS::Object"
	}
	params = map[string]string{}
	for _, p := range splitTopLevel(plist) {
		name, typ := splitParam(p)
		if name != "" {
			params[name] = typ
		}
	}
	return class, method, params, true
}

// splitParam splits one C++ parameter into its name and type. A block
// parameter `void (^deallocator)(void*, NS::UInteger)` has the type "block";
// an array `const T* const xs[]` is a pointer.
func splitParam(p string) (name, typ string) {
	p = strings.TrimSpace(p)
	if i := strings.Index(p, "(^"); i >= 0 {
		end := strings.IndexByte(p[i:], ')')
		if end < 0 {
			return "", ""
		}
		return p[i+2 : i+end], "block"
	}
	array := strings.HasSuffix(p, "[]")
	p = strings.TrimSuffix(p, "[]")
	i := strings.LastIndexFunc(p, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	})
	name, typ = p[i+1:], strings.TrimSpace(p[:i+1])
	if array {
		typ += "*"
	}
	return name, typ
}

// cSend is one Object::sendMessage<ret>(receiver, selector, args...) call.
type cSend struct {
	ret, receiver, selector string
	args                    []string
}

// sendMessages finds the sendMessage and sendMessageSafe calls of a body.
func sendMessages(body string) []cSend {
	var sends []cSend
	for rest := body; ; {
		i := strings.Index(rest, "sendMessage")
		if i < 0 {
			return sends
		}
		rest = rest[i+len("sendMessage"):]
		rest = strings.TrimPrefix(rest, "Safe")
		if !strings.HasPrefix(rest, "<") {
			continue
		}
		tmpl, ok := balanced(rest, '<', '>')
		if !ok {
			continue
		}
		rest = rest[len(tmpl)+2:]
		if !strings.HasPrefix(rest, "(") {
			continue
		}
		inner, ok := balanced(rest, '(', ')')
		if !ok {
			continue
		}
		parts := splitTopLevel(inner)
		if len(parts) < 2 {
			continue
		}
		sends = append(sends, cSend{ret: strings.TrimSpace(tmpl), receiver: parts[0], selector: parts[1], args: parts[2:]})
	}
}

// balanced returns what lies between s's first character (open) and its
// matching close.
func balanced(s string, open, close byte) (string, bool) {
	if s == "" || s[0] != open {
		return "", false
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case open:
			depth++
		case close:
			depth--
			if depth == 0 {
				return s[1:i], true
			}
		}
	}
	return "", false
}

// splitTopLevel splits a C++ argument or parameter list at the commas outside
// parentheses, brackets and template arguments.
func splitTopLevel(s string) []string {
	var parts []string
	depth, start := 0, 0
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case '(', '<', '[':
			depth++
		case ')', '>', ']':
			depth--
		case ',':
			if depth == 0 {
				parts = append(parts, strings.TrimSpace(s[start:i]))
				start = i + 1
			}
		}
	}
	if last := strings.TrimSpace(s[start:]); last != "" {
		parts = append(parts, last)
	}
	return parts
}
