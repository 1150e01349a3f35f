// Command richt-ee builds the collection's execution environment image from Debian's
// packages (`make ee`, docs/ee.md): the packages execution-environment.yml asks for and
// the collection installed from its tarball, as a non-root user runner in /runner. An image
// with the same content key is reused, and so is the base image of Debian packages when
// only the collection changed; older keys of both are removed. It prints the image's tag,
// size, build time and package versions (ee.Image.Summary).
//
//	richt-ee -collection build/richt-services-VERSION.tar.gz [-definition execution-environment.yml] [-latest=true]
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"syscall"

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
	// The build runs in a process group of its own: ^C reaches it only through ctx, which
	// stops it and removes its work directory. Once the first ^C has cancelled ctx, the
	// signals get their default action back, so a second ^C ends richt-ee at once (the
	// build then gets SIGTERM from the kernel as its parent dies, ee's Pdeathsig).
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	go func() {
		<-ctx.Done()
		stop()
	}()
	img, err := ee.Ensure(ctx, ee.Options{Definition: *definition, Collection: *collection, Suite: *suite, Latest: *latest, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "richt-ee:", err)
		stop()
		os.Exit(1)
	}
	fmt.Print(img.Summary())
}
