#!/usr/bin/env bash
# Builds the execution environment's BASE image from Debian packages, offline from any
# container registry, the way testenv builds its targets (testenv/image/build.sh):
# mmdebstrap reads the host's apt sources, so no mirror address is written here. The
# collection is not in it: ee installs that in a thin layer on top (a Dockerfile written by
# ee.go, built in seconds), so a change to the collection reuses this ~100 s bootstrap. The
# layer's Dockerfile lives in Go rather than in a second script because its content is part
# of the EE image's content key and its build context (the Dockerfile and the tarball) is
# streamed to docker build from Go without a work directory.
#
# Usage: build.sh SUITE TAG PACKAGES
#   PACKAGES is the comma-separated Debian package list that ee.ReadDefinition derives
#   from execution-environment.yml (and the collection's meta/execution-environment.yml);
#   nothing is added here, so the definitions stay the one source of the image's content.
#   ee checks each name against Debian's package name syntax; here they are only ever
#   passed quoted.
#   TAG is the caller's unchecked tag: ee gives the image its content-keyed tag
#   (richt-services-ee-base:KEY) only after the versions printed here meet the definition.
#
# The base image's key covers this file, the suite and the requirements (packages and
# their version specifiers; ee.BaseTag), so a change to any of them builds a new base.
# Prints "package NAME VERSION" for each requested package (the caller checks them against
# the definition's version constraints) and records them in the image's label
# org.richt.ee.versions ("NAME=VERSION ...") for a later reuse to check (the EE image on
# top inherits the label), then "built TAG".
#
# Stopping: ee runs this script as the leader of its own process group. Cancelling sends
# SIGTERM to the group; a caller that dies sends SIGTERM to bash alone (Pdeathsig). Either
# way the TERM trap signals the whole group (mmdebstrap, docker build), waits for them and
# exits, and the EXIT trap removes the work directory (some 200 MB). mmdebstrap and docker
# build run as `cmd & wait $!`: bash runs a trap only once a foreground child has ended,
# while wait returns as soon as a trapped signal arrives. Run by hand, run it as its own
# process group too (an interactive shell does): `kill -TERM 0` reaches the whole group.
set -euo pipefail
if [ $# -ne 3 ]; then
  echo "usage: build.sh SUITE TAG PACKAGES" >&2
  exit 2
fi
suite=$1 tag=$2 packages=$3
work=$(mktemp -d /tmp/richt-ee.XXXXXX)
trap 'rm -rf "$work"' EXIT
stop() {
  trap '' TERM INT # kill -TERM 0 reaches this shell too
  kill -TERM 0 2>/dev/null || true
  wait || true
  exit "$1"
}
trap 'stop 143' TERM
trap 'stop 130' INT
IFS=, read -r -a wanted <<<"$packages"

# runner (uid 1000, primary group root) and /runner as home and work directory, as AWX's
# execution environments have them: group root with group write lets a platform that runs
# the image under an arbitrary uid in group 0 (OpenShift) use the same directories.
mmdebstrap --quiet --variant=essential \
  --include="$packages" \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook='echo "runner:x:1000:0:ansible-runner:/runner:/bin/bash" >> "$1/etc/passwd"' \
  --customize-hook='mkdir -p "$1/runner" && chown 1000:0 "$1/runner" && chmod 2775 "$1/runner"' \
  --customize-hook="chroot \"\$1\" dpkg-query -W -f '\${Package} \${Version}\n' > '$work/installed'" \
  "$suite" "$work/rootfs.tar" &
wait $!

# The requested packages' versions, in the requested order; the names stay data here
# (awk -v), never shell text.
: >"$work/versions"
for p in "${wanted[@]}"; do
  awk -v p="$p" '$1 == p' "$work/installed" >>"$work/versions"
done
label=$(awk '{printf "%s%s=%s", (NR > 1 ? " " : ""), $1, $2}' "$work/versions")

cat > "$work/Dockerfile" <<'DOCKERFILE'
FROM scratch
ADD rootfs.tar /
# ansible-core refuses a locale that is not UTF-8; glibc has C.UTF-8 built in.
ENV LANG=C.UTF-8 HOME=/runner
USER 1000
WORKDIR /runner
CMD ["ansible-runner", "--help"]
DOCKERFILE
docker build --quiet --label "org.richt.ee.suite=$suite" --label "org.richt.ee.versions=$label" -t "$tag" "$work" >/dev/null &
wait $!
sed 's/^/package /' "$work/versions"
echo "built $tag"
