// Package ansible implements Ansible's JSON protocol for binary modules, in one place for
// every module of the collection.
//
// A module declares its parameters once, as a [Spec] whose [Param]s carry their
// documentation too, and its behaviour as a [Handler]. [Main] reads the parameters (an args
// file, JSON on standard input with "-", or command-line flags for debugging), validates
// them strictly before the handler runs, and prints exactly one JSON object. The handler
// reads them into the module's own typed struct with [Request.Decode]. Only this package
// turns an error into `failed: true`, and it masks every no_log value wherever it would
// appear in the output, including when validation fails.
//
// `MODULE --doc` prints the parameters' documentation ([Spec.Doc]); `go run ./cmd/gendoc`
// writes it into the options of the module's DOCUMENTATION.
package ansible
