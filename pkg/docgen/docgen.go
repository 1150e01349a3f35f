// Package docgen writes what the collection's Python files must say about the Go modules,
// from the modules themselves: the options of each module's DOCUMENTATION (from its
// ansible.Spec, as the binary prints it with --doc) and the plugin routing in
// meta/runtime.yml that sends every module through the fast path's action plugin.
// `go run ./cmd/gendoc` writes them; its test fails while a checked-in file differs.
//
// Only the generated parts are touched: a stub's description, examples and return values
// stay hand-written, and runtime.yml keeps every other key.
package docgen

import (
	"errors"
	"fmt"
	"go/format"
	"regexp"
	"strconv"
	"strings"

	"github.com/richt/services/pkg/ansible"
)

// Width is the column the rendered YAML wraps prose at.
const Width = 96

// Options renders DOCUMENTATION's options block ("options:" and every option below it).
func Options(doc ansible.SpecDoc) (string, error) {
	var b strings.Builder
	b.WriteString("options:\n")
	if err := writeOptions(&b, doc.Options, "  ", doc.Module); err != nil {
		return "", err
	}
	return b.String(), nil
}

var docTypes = map[string]bool{"str": true, "bool": true, "int": true, "float": true, "list": true, "dict": true, "raw": true, "path": true}

func writeOptions(b *strings.Builder, opts []ansible.OptionDoc, indent, where string) error {
	if len(opts) == 0 {
		return fmt.Errorf("%s: no options", where)
	}
	for _, o := range opts {
		at := where + "." + o.Name
		if len(o.Description) == 0 {
			return fmt.Errorf("%s: no description", at)
		}
		if !docTypes[o.Type] {
			return fmt.Errorf("%s: type %q is not one of Ansible's option types", at, o.Type)
		}
		if (o.Type == "list") != (o.Elements != "") || (o.Elements != "" && !docTypes[o.Elements]) {
			return fmt.Errorf("%s: type %s with elements %q (a list needs the kind of its items, and only a list has one)", at, o.Type, o.Elements)
		}
		if len(o.Suboptions) > 0 && o.Type != "dict" && o.Elements != "dict" {
			return fmt.Errorf("%s: suboptions need a dict or a list of dict", at)
		}
		in := indent + "  "
		fmt.Fprintf(b, "%s%s:\n%sdescription:\n", indent, o.Name, in)
		for _, d := range o.Description {
			b.WriteString(scalar(in+"  - ", in+"    ", d))
		}
		fmt.Fprintf(b, "%stype: %s\n", in, o.Type)
		if o.Elements != "" {
			fmt.Fprintf(b, "%selements: %s\n", in, o.Elements)
		}
		if o.Required {
			fmt.Fprintf(b, "%srequired: true\n", in)
		}
		if len(o.Choices) > 0 {
			items := make([]string, len(o.Choices))
			for i, c := range o.Choices {
				items[i] = flowItem(c)
			}
			fmt.Fprintf(b, "%schoices: [%s]\n", in, strings.Join(items, ", "))
		}
		if o.Default != nil {
			v, err := value(o.Default)
			if err != nil {
				return fmt.Errorf("%s: default: %w", at, err)
			}
			fmt.Fprintf(b, "%sdefault: %s\n", in, v)
		}
		if o.VersionAdded != "" {
			fmt.Fprintf(b, "%sversion_added: %s\n", in, quoted(o.VersionAdded))
		}
		if len(o.Suboptions) > 0 {
			fmt.Fprintf(b, "%ssuboptions:\n", in)
			if err := writeOptions(b, o.Suboptions, in+"  ", at); err != nil {
				return err
			}
		}
	}
	return nil
}

// scalar writes prose as a plain scalar when YAML reads it back unchanged, else double
// quoted, wrapped at Width: first after prefix, the rest of the lines after cont.
func scalar(prefix, cont, s string) string {
	s = strings.Join(strings.Fields(s), " ")
	if lines, ok := wrap(s, prefix, cont); ok && plain(s) {
		return lines
	}
	lines, _ := wrap(quoted(s), prefix, cont)
	return lines
}

// wrap breaks s at spaces so lines stay within Width where words allow. It reports false
// when a continuation line would start with a character YAML reads as syntax there.
func wrap(s, prefix, cont string) (string, bool) {
	var b strings.Builder
	line, ok := prefix, true
	for i, w := range strings.Split(s, " ") {
		switch {
		case i == 0:
			line += w
		case len(line)+1+len(w) > Width:
			b.WriteString(line + "\n")
			line = cont + w
			ok = ok && !strings.ContainsRune("-?:#", rune(w[0]))
		default:
			line += " " + w
		}
	}
	b.WriteString(line + "\n")
	return b.String(), ok
}

// special are the values YAML 1.1 (PyYAML, which Ansible uses) reads as something else
// than a string when they are not quoted.
var special = regexp.MustCompile(strings.Join([]string{
	`^(?i:y|yes|n|no|true|false|on|off|null|~)$`,                                            // bool, null
	`^[-+]?(0b[01_]+|0[0-7_]+|0|[1-9][0-9_]*|0x[0-9a-fA-F_]+|[1-9][0-9_]*(:[0-5]?[0-9])+)$`, // int
	`^[-+]?([0-9][0-9_]*)?\.[0-9_]*([eE][-+][0-9]+)?$`, `^[-+]?\.(?i:inf)$`, `^\.(?i:nan)$`, // float
	`^[-+]?[0-9][0-9_]*(:[0-5]?[0-9])+\.[0-9_]*$`, // sexagesimal float
	`^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}`,             // timestamp
}, "|"))

// plain reports whether s can be written as a plain scalar and read back as the same
// string, in block context.
func plain(s string) bool {
	return s != "" && !strings.ContainsRune("-?:,[]{}#&*!|>'\"%@`", rune(s[0])) &&
		!strings.Contains(s, ": ") && !strings.Contains(s, " #") && !strings.HasSuffix(s, ":") &&
		!special.MatchString(s)
}

func flowItem(s string) string {
	if plain(s) && !strings.ContainsAny(s, ",[]{}") {
		return s
	}
	return quoted(s)
}

func quoted(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// value writes a default: a bool, a number or a string, quoted when YAML would read it as
// another type ("0644").
func value(v any) (string, error) {
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x), nil
	case float64:
		return strconv.FormatFloat(x, 'f', -1, 64), nil
	case int:
		return strconv.Itoa(x), nil
	case string:
		if plain(x) {
			return x, nil
		}
		return quoted(x), nil
	}
	return "", fmt.Errorf("%v (%T) is not a bool, number or string", v, v)
}

// The DOCUMENTATION string of a module's Python stub.
const (
	docStart = "DOCUMENTATION = r\"\"\"\n"
	docEnd   = "\"\"\""
)

// ErrNoOptions is a stub whose DOCUMENTATION has no top-level options key to replace.
var ErrNoOptions = errors.New("DOCUMENTATION has no top-level options: line")

// Documentation returns the YAML text of a stub's DOCUMENTATION, and where it starts.
func Documentation(stub string) (yaml string, at int, err error) {
	i := strings.Index(stub, docStart)
	if i < 0 {
		return "", 0, fmt.Errorf("no DOCUMENTATION = r\"\"\" line")
	}
	at = i + len(docStart)
	j := strings.Index(stub[at:], docEnd)
	if j < 0 {
		return "", 0, fmt.Errorf("DOCUMENTATION is not closed with \"\"\"")
	}
	return stub[at : at+j], at, nil
}

// SpliceOptions replaces the options block of a stub's DOCUMENTATION (from its top-level
// options key to the next top-level key) with block.
func SpliceOptions(stub, block string) (string, error) {
	doc, at, err := Documentation(stub)
	if err != nil {
		return "", err
	}
	start, end, ok := topLevel(doc, "options")
	if !ok {
		return "", ErrNoOptions
	}
	return stub[:at+start] + block + stub[at+end:], nil
}

// topLevel finds the lines of a top-level key of a YAML document: from the key's line to
// the next line that starts another top-level key (or the end).
func topLevel(doc, key string) (start, end int, ok bool) {
	off := 0
	start = -1
	for _, line := range strings.SplitAfter(doc, "\n") {
		top := line != "" && line[0] != ' ' && line[0] != '#' && line[0] != '\n'
		switch {
		case start < 0 && top && (strings.HasPrefix(line, key+":")):
			start = off
		case start >= 0 && top:
			return start, off, true
		}
		off += len(line)
	}
	return start, len(doc), start >= 0
}

// FastPathAction is the action plugin every module is routed to.
const FastPathAction = "richt.services.fastpath"

// Routing renders meta/runtime.yml's plugin_routing block: every module runs through the
// fast path's one action plugin.
func Routing(names []string) string {
	var b strings.Builder
	b.WriteString("plugin_routing:\n")
	b.WriteString("  # Written by `go run ./cmd/gendoc` from modules/*/module.go: every module runs through\n")
	b.WriteString("  # the fast path's one action plugin (plugins/action/fastpath.py).\n")
	b.WriteString("  modules:\n")
	for _, n := range names {
		fmt.Fprintf(&b, "    %s:\n      action_plugin: %s\n", n, FastPathAction)
	}
	return b.String()
}

// SpliceRouting replaces the plugin_routing block of runtime.yml, or adds it at the end;
// every other key stays as it is.
func SpliceRouting(runtime, block string) string {
	if start, end, ok := topLevel(runtime, "plugin_routing"); ok {
		return runtime[:start] + block + runtime[end:]
	}
	if runtime != "" && !strings.HasSuffix(runtime, "\n") {
		runtime += "\n"
	}
	return runtime + block
}

// MultiCall renders the Go file that lists the modules for the multi-call binary
// (cmd/richt-modules/modules.go): Go cannot import the packages of a directory glob, so the
// list is generated from the same directories as everything else. importPath gives a
// module's package import path.
func MultiCall(names []string, importPath func(string) string) string {
	var b strings.Builder
	b.WriteString("// Code generated by `go run ./cmd/gendoc` from modules/*/module.go. DO NOT EDIT.\n\npackage main\n\nimport (\n")
	for _, n := range names {
		fmt.Fprintf(&b, "\t%s %q\n", n, importPath(n))
	}
	b.WriteString(")\n\n// mains are the collection's modules, by name.\nvar mains = map[string]func(){\n")
	for _, n := range names {
		fmt.Fprintf(&b, "\t%q: %s.Main,\n", n, n)
	}
	b.WriteString("}\n")
	// gofmt's layout, so the checked-in file passes `gofmt -l`; the input is ours and
	// always parses (names are Go identifiers: module names are [a-z][a-z0-9_]*).
	out, err := format.Source([]byte(b.String()))
	if err != nil {
		return b.String()
	}
	return string(out)
}
