// Command richt-ee builds the collection's execution environment image from Debian's
// packages (`make ee`, docs/ee.md): the packages execution-environment.yml asks for and
// the collection installed from its tarball, as a non-root user runner in /runner. An image
// with the same content key is reused. It prints the image's tag, size and build time.
//
//	richt-ee -collection build/richt-services-VERSION.tar.gz [-definition execution-environment.yml] [-latest=true]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"sort"
	"strings"

	"github.com/richt/services/ee"
)

func main() {
	definition := flag.String("definition", "execution-environment.yml", "the ansible-builder definition the image follows")
	collection := flag.String("collection", "", "the collection tarball to install (make collection)")
	suite := flag.String("suite", ee.Suite, "Debian suite to build from")
	latest := flag.Bool("latest", true, "also tag the image "+ee.Repository+":latest")
	flag.Parse()
	if *collection == "" {
		fmt.Fprintln(os.Stderr, "richt-ee: -collection: the collection tarball is required (make collection builds it)")
		os.Exit(2)
	}
	img, err := ee.Ensure(context.Background(), ee.Options{Definition: *definition, Collection: *collection, Suite: *suite, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "richt-ee:", err)
		os.Exit(1)
	}
	if *latest {
		if out, err := exec.Command("docker", "tag", img.Tag, ee.Repository+":latest").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "richt-ee: docker tag %s %s:latest: %v\n%s", img.Tag, ee.Repository, err, out)
			os.Exit(1)
		}
	}
	how := "reused (same content key; nothing built)"
	if img.Built {
		how = fmt.Sprintf("built in %.0f s", img.BuildTime.Seconds())
	}
	fmt.Printf("ee: %s: %s, size %.0f MB (%d bytes)\n", img.Tag, how, float64(img.Size)/1e6, img.Size)
	if len(img.Versions) > 0 {
		var v []string
		for _, p := range img.Requirements.Packages {
			v = append(v, p+" "+img.Versions[p])
		}
		sort.Strings(v)
		fmt.Printf("ee: %s\n", strings.Join(v, ", "))
	}
}
