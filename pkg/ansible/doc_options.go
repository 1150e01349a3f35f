package ansible

import "strings"

// SpecDoc is a module's parameters as its DOCUMENTATION describes them.
type SpecDoc struct {
	Module  string      `json:"module"`
	Options []OptionDoc `json:"options"`
}

// OptionDoc is one entry of DOCUMENTATION's options, in the order the Spec declares them.
type OptionDoc struct {
	Name         string      `json:"name"`
	Description  []string    `json:"description"`
	Type         string      `json:"type"`
	Elements     string      `json:"elements,omitempty"`
	Required     bool        `json:"required,omitempty"`
	Choices      []string    `json:"choices,omitempty"`
	Default      any         `json:"default,omitempty"`
	VersionAdded string      `json:"version_added,omitempty"`
	Suboptions   []OptionDoc `json:"suboptions,omitempty"`
}

// Doc is the documentation of the spec's parameters.
func (s *Spec) Doc() SpecDoc {
	return SpecDoc{Module: s.Name, Options: optionDocs(s.Params)}
}

func optionDocs(params []Param) []OptionDoc {
	out := make([]OptionDoc, 0, len(params))
	for _, p := range params {
		o := OptionDoc{
			Name: p.Name, Description: paragraphs(p.Description), Type: p.Kind.DocType(), Required: p.Required,
			Choices: p.Choices, Default: p.Default, VersionAdded: p.VersionAdded,
		}
		if p.Kind == List {
			o.Elements = p.Elements.DocType()
		}
		if len(p.Suboptions) > 0 {
			o.Suboptions = optionDocs(p.Suboptions)
		}
		out = append(out, o)
	}
	return out
}

// paragraphs joins the lines of each paragraph with single spaces, as YAML reads wrapped
// prose, so a description can be wrapped in Go source as it reads best there.
func paragraphs(ps []string) []string {
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = strings.Join(strings.Fields(p), " ")
	}
	return out
}
