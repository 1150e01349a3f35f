// Package diffmode is the shape of a change shown in Ansible's diff mode. It is a leaf, so
// the protocol package (ansible, which reports it) and the packages that draw a change
// (safefile for files) share the one type without a leaf importing the protocol.
package diffmode

// Diff is the diff mode result: Ansible prints it as a unified diff of Before and After.
type Diff struct {
	Before       string `json:"before"`
	After        string `json:"after"`
	BeforeHeader string `json:"before_header,omitempty"`
	AfterHeader  string `json:"after_header,omitempty"`
}
