// Package health probes whether a unit's service answers: the check systemd_lifecycle runs
// after every start, restart or reload, and on a converged run with state: running.
//
// systemd's "active" is not "answering". A Type=simple service is active as soon as its
// process is exec'd, long before it listens; a Type=forking or Type=notify service is active
// when its daemon says so, which some daemons say before they accept connections, and a
// socket-activated service is "active" while only systemd holds the socket. A service can
// also stay active while it answers every request with 503 or greets with an error. The
// job result and the unit state are systemd's view; a probe is the client's view.
//
// A probe is one of three kinds, read from the module parameter `health` by [Parse]:
//
//	{tcp: "HOST:PORT"}                         a TCP connect
//	{http: "http://HOST[:PORT]/PATH"}          a GET answered with any 2xx
//	{banner: "HOST:PORT", expect: "SUBSTRING"} connect, read what the server says first,
//	                                           require the substring
//
// A wildcard host (0.0.0.0, ::, *, or empty as in ":8080") is what a service is configured to
// listen on, not an address to reach it at; the probe connects to loopback instead (::1 for
// an IPv6 wildcard, 127.0.0.1 otherwise).
//
// [Probe.Check] makes one attempt; [Wait] retries it until it passes or the context ends and
// reports the last evidence (the dial error, the HTTP status, the greeting read). Every
// network operation is bounded by the context and nothing else: the caller's one task
// deadline is the only timeout. A probe never restarts anything; it only reports.
//
// Decisions:
//   - http only. https is refused as "another URL scheme": a probe of loopback cannot verify
//     the certificate of the name the service is published under, and a probe that skips
//     verification would report a misconfigured certificate as healthy.
//   - An http URL without a port means port 80, as for any http URL; an empty port
//     ("http://host:/") or port 0 is refused.
//   - Redirects are never followed, to the same host or another: a 3xx is not healthy (a
//     health endpoint that redirects, typically to a login page, is not answering the probe).
//   - No proxy: the HTTP client is built per attempt with Proxy nil and no keep-alives, so an
//     http_proxy in the module's environment cannot route a loopback probe elsewhere.
//   - Banner: at most [MaxGreeting] bytes are read, stopping early at the first newline, at
//     the end of the stream, or at the context's deadline; the substring may be anywhere in
//     what was read. A server that says nothing is unhealthy ("nothing read").
package health
