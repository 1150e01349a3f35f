// Package ansible implements Ansible's JSON protocol for binary modules, in one place for
// every module of the collection.
//
// A module declares its parameters as a [Spec] and its behaviour as a [Handler]. [Main]
// reads the parameters (an args file, JSON on standard input with "-", or command-line
// flags for debugging), validates them strictly before the handler runs, and prints exactly
// one JSON object. Only this package turns an error into `failed: true`, and it masks every
// no_log value wherever it would appear in the output, including when validation fails.
package ansible
