// Package mountns runs one command in a private mount namespace where a set of new file
// contents stand at their paths, so that a daemon's own checker (nginx -t, apachectl
// configtest, sshd -t, visudo -c) reads the whole new configuration tree — a main file and
// its snippets — while nothing on the host changes: the service module's tree validators
// (docs/configs.md).
//
// How: the module re-executes its own binary (/proc/self/exe) as a helper, born in a new
// mount namespace and a new PID namespace (clone's CLONE_NEWNS and CLONE_NEWPID); its
// first act makes every mount private recursively, so no mount propagates back to the
// host. The helper
// reads the contents from a pipe (they never touch the host's disk), mounts a tmpfs on
// /tmp for its staging, writes each content there with its final mode and owner and
// bind-mounts it over its path; a path that does not exist yet gets an overlay of its
// directory whose upper layer (in the same tmpfs) holds the new file. Then a second, fresh
// tmpfs covers /tmp, the staging unreachable beneath it, and the helper executes the
// command in its place. The namespace and every mount in it end with the command: the
// host's mount table never shows them, and there is no temporary file to remove.
//
// The command runs as root, as a `%s` validator does; its writes to a path of the set land
// in the namespace's tmpfs copy and are discarded, its writes under /tmp land in the fresh
// tmpfs and are discarded, and any other write reaches the host as the same checker's
// would outside (docs/configs.md says why the host is not made read-only).
//
// A helper is killed when the module dies (PR_SET_PDEATHSIG, kept across its exec into the
// command) and, with its process group, when the caller's context ends. It is the first
// process of its PID namespace: when it ends, the kernel kills whatever the command forked
// and left behind.
package mountns
