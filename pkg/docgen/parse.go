package docgen

import (
	"fmt"
	"reflect"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/richt/services/pkg/ansible"
)

// ParseOptions reads the options of a stub's DOCUMENTATION back, in their order, as a
// YAML parser sees them: it is how a test proves that the stub says what the Spec says.
func ParseOptions(stub string) ([]ansible.OptionDoc, error) {
	text, _, err := Documentation(stub)
	if err != nil {
		return nil, err
	}
	var doc yaml.Node
	if err := yaml.Unmarshal([]byte(text), &doc); err != nil {
		return nil, fmt.Errorf("DOCUMENTATION: %w", err)
	}
	if len(doc.Content) != 1 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("DOCUMENTATION is not a mapping")
	}
	opts := lookup(doc.Content[0], "options")
	if opts == nil {
		return nil, ErrNoOptions
	}
	return parseOptions(opts, "options")
}

func lookup(m *yaml.Node, key string) *yaml.Node {
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == key {
			return m.Content[i+1]
		}
	}
	return nil
}

func parseOptions(n *yaml.Node, where string) ([]ansible.OptionDoc, error) {
	if n.Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: not a mapping", where)
	}
	var out []ansible.OptionDoc
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, body := n.Content[i].Value, n.Content[i+1]
		at := where + "." + name
		if body.Kind != yaml.MappingNode {
			return nil, fmt.Errorf("%s: not a mapping", at)
		}
		o := ansible.OptionDoc{Name: name}
		for j := 0; j+1 < len(body.Content); j += 2 {
			key, v := body.Content[j].Value, body.Content[j+1]
			var err error
			switch key {
			case "description":
				if v.Kind == yaml.ScalarNode {
					o.Description = []string{v.Value}
				} else {
					err = v.Decode(&o.Description)
				}
			case "type":
				err = v.Decode(&o.Type)
			case "elements":
				err = v.Decode(&o.Elements)
			case "required":
				err = v.Decode(&o.Required)
			case "choices":
				err = v.Decode(&o.Choices)
			case "default":
				err = v.Decode(&o.Default)
				if n, ok := o.Default.(int); ok { // as JSON (the binary's --doc) gives numbers
					o.Default = float64(n)
				}
			case "version_added":
				err = v.Decode(&o.VersionAdded)
			case "suboptions":
				o.Suboptions, err = parseOptions(v, at)
			default:
				err = fmt.Errorf("key %q is not generated from the Spec", key)
			}
			if err != nil {
				return nil, fmt.Errorf("%s.%s: %w", at, key, err)
			}
		}
		for k, d := range o.Description {
			o.Description[k] = strings.Join(strings.Fields(d), " ")
		}
		out = append(out, o)
	}
	return out, nil
}

// Compare lists every difference between the options a stub documents and the ones the
// Spec declares, field by field ("options.packages.state: default: ...").
func Compare(stub, spec []ansible.OptionDoc) []string {
	return compare("options", stub, spec)
}

func compare(where string, stub, spec []ansible.OptionDoc) []string {
	var out []string
	names := func(l []ansible.OptionDoc) []string {
		n := make([]string, len(l))
		for i, o := range l {
			n[i] = o.Name
		}
		return n
	}
	if !reflect.DeepEqual(names(stub), names(spec)) {
		return []string{fmt.Sprintf("%s: the stub has %v, the Spec %v", where, names(stub), names(spec))}
	}
	for i, s := range spec {
		d := stub[i]
		at := where + "." + s.Name
		field := func(name string, got, want any) {
			if !reflect.DeepEqual(got, want) {
				out = append(out, fmt.Sprintf("%s: %s: the stub has %#v, the Spec %#v", at, name, got, want))
			}
		}
		field("description", d.Description, s.Description)
		field("type", d.Type, s.Type)
		field("elements", d.Elements, s.Elements)
		field("required", d.Required, s.Required)
		field("choices", d.Choices, s.Choices)
		field("default", d.Default, s.Default)
		field("version_added", d.VersionAdded, s.VersionAdded)
		out = append(out, compare(at+".suboptions", d.Suboptions, s.Suboptions)...)
	}
	return out
}
