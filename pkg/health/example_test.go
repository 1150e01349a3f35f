package health_test

import (
	"context"
	"fmt"
	"net"
	"time"

	"github.com/richt/services/pkg/health"
)

func ExampleParse() {
	p, err := health.Parse(map[string]any{"banner": "0.0.0.0:25", "expect": "ESMTP"})
	fmt.Println(p, err)

	_, err = health.Parse(map[string]any{"http": "https://localhost:8443/health"})
	fmt.Println(err)
	_, err = health.Parse(map[string]any{"tcp": "localhost:70000"})
	fmt.Println(err)
	// Output:
	// banner 127.0.0.1:25 (given as 0.0.0.0:25) expecting "ESMTP" <nil>
	// health.http: URL scheme "https" is not probed; give an http:// URL
	// health.tcp: port 70000 is out of range 1-65535
}

func ExampleWait() {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		panic(err)
	}
	defer ln.Close()
	_, port, _ := net.SplitHostPort(ln.Addr().String())

	// A service configured to listen on all addresses is probed on loopback.
	p, err := health.Parse(map[string]any{"tcp": "0.0.0.0:" + port})
	if err != nil {
		panic(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second) // the task's one deadline
	defer cancel()
	attempts, err := health.Wait(ctx, p, 100*time.Millisecond)
	fmt.Println(attempts, err)
	// Output: 1 <nil>
}
