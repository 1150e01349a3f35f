package ee

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
)

// BaseTag is the content-keyed tag of the base image: a hash of its build recipe
// (build.sh), the suite and the requirements' packages and version specifiers. What the key
// does not cover is the state of Debian's archive: a suite's package updates build a
// different image under the same key only when the image is built again (it is not while
// one with the key exists); the recorded versions (versionsLabel) are checked again on
// reuse.
func BaseTag(suite string, req Requirements) string {
	return BaseRepository + ":" + baseKey(suite, req)[:keyLen]
}

// keyLen is how many hex digits of a content key go into a tag.
const keyLen = 12

func baseKey(suite string, req Requirements) string {
	return contentKey(struct {
		Script, Suite string
		Packages      []string
		Constraints   map[string]string
	}{string(buildScript), suite, req.Packages, req.Constraints})
}

// Tag is the content-keyed tag of the EE image: the collection's version (made a valid
// docker tag: tagVersion) and a hash of the base's key (BaseTag), the layer's recipe
// (layerDockerfile), the collections the definition installs and the collection's content.
// A change to any of them gives a new tag; only a change to the base's part builds a new
// base.
func Tag(suite string, req Requirements, c Collection) string {
	base := baseKey(suite, req)
	key := contentKey(struct {
		Base, Dockerfile string
		Collections      []string
		Collection       string
	}{base, layerDockerfile(BaseRepository + ":" + base[:keyLen]), req.Collections, c.Digest})
	return Repository + ":" + tagVersion(c.Version) + "-" + key[:keyLen]
}

// contentKey hashes a value's JSON: encoding/json writes map keys sorted, so one content
// gives one key.
func contentKey(v any) string {
	data, err := json.Marshal(v)
	if err != nil {
		panic(fmt.Sprintf("ee: content key: %v", err)) // strings, slices and maps of strings always encode
	}
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// maxTag is the longest tag docker accepts.
const maxTag = 128

// tagVersion makes the collection's version part of a docker tag, which allows only
// [A-Za-z0-9_.-], may not start with '.' or '-' and has at most maxTag characters: any other
// character becomes '-' (semver's "1.0.0+b1" is "1.0.0-b1"), a leading '.' or '-' becomes
// '_', and the version is cut to leave room for "-" and the key.
func tagVersion(v string) string {
	b := []byte(v)
	for i, c := range b {
		ok := c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_' || c == '.' || c == '-'
		if !ok {
			b[i] = '-'
		}
	}
	if len(b) > 0 && (b[0] == '.' || b[0] == '-') {
		b[0] = '_'
	}
	if n := maxTag - 1 - keyLen; len(b) > n {
		b = b[:n]
	}
	return string(b)
}
