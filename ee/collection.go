package ee

import (
	"archive/tar"
	"compress/gzip"
	"crypto/sha256"
	_ "embed"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"strings"
)

// Collection is what a collection tarball holds, as far as the image is concerned.
type Collection struct {
	// Name is the collection's namespace.name, from MANIFEST.json.
	Name string
	// Version is the collection's version, from MANIFEST.json.
	Version string
	// Digest is a hash of the members' names, modes, link targets and contents, not of
	// the archive: ansible-galaxy writes build times into it, so two builds of one commit
	// differ as files but not here.
	Digest string
	// Requirements are what the collection's own meta/execution-environment.yml (or its
	// requirements.txt and bindep.txt) asks of the image (CollectionRequirements).
	Requirements Requirements
}

// maxMetaFile is the largest member ReadCollection keeps for CollectionRequirements:
// requirements files are small, the collection's binaries are not.
const maxMetaFile = 64 << 10

// ReadCollection reads a collection tarball's MANIFEST.json, digests its content and reads
// what the collection asks of the image (CollectionRequirements).
func ReadCollection(path string) (Collection, error) {
	f, err := os.Open(path)
	if err != nil {
		return Collection{}, fmt.Errorf("collection tarball: %w", err)
	}
	defer f.Close()
	gz, err := gzip.NewReader(f)
	if err != nil {
		return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
	}
	tr := tar.NewReader(gz)
	h := sha256.New()
	var c Collection
	small := map[string][]byte{}
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
		}
		fmt.Fprintf(h, "%s\x00%c\x00%o\x00%s\x00", hdr.Name, hdr.Typeflag, hdr.Mode, hdr.Linkname)
		name := strings.TrimPrefix(hdr.Name, "./")
		if hdr.Typeflag != tar.TypeReg || hdr.Size > maxMetaFile {
			if _, err := io.Copy(h, tr); err != nil {
				return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
			}
			continue
		}
		data, err := io.ReadAll(tr)
		if err != nil {
			return Collection{}, fmt.Errorf("collection tarball %s: %s: %w", path, name, err)
		}
		h.Write(data)
		small[name] = data
		if name == "MANIFEST.json" {
			var m struct {
				Info struct{ Namespace, Name, Version string } `json:"collection_info"`
			}
			if err := json.Unmarshal(data, &m); err != nil {
				return Collection{}, fmt.Errorf("collection tarball %s: MANIFEST.json: %w", path, err)
			}
			c.Name, c.Version = m.Info.Namespace+"."+m.Info.Name, m.Info.Version
		}
	}
	if c.Name == "" || c.Version == "" {
		return Collection{}, fmt.Errorf("collection tarball %s: no MANIFEST.json naming the collection and its version", path)
	}
	c.Digest = hex.EncodeToString(h.Sum(nil))
	c.Requirements, err = CollectionRequirements(func(name string) ([]byte, bool) {
		data, ok := small[name]
		return data, ok
	})
	if err != nil {
		return Collection{}, fmt.Errorf("collection tarball %s: %w", path, err)
	}
	return c, nil
}
