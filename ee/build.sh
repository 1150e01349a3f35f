#!/usr/bin/env bash
# Builds the execution environment image from Debian packages, offline from any container
# registry, the way testenv builds its targets (testenv/image/build.sh): mmdebstrap reads
# the host's apt sources, so no mirror address is written here.
#
# Usage: build.sh SUITE TAG PACKAGES COLLECTION_TARBALL
#   PACKAGES is the comma-separated Debian package list that ee.ReadDefinition derives
#   from execution-environment.yml (and the collection's meta/execution-environment.yml);
#   nothing is added here, so the definitions stay the one source of the image's content.
#   ee checks each name against Debian's package name syntax; here they are only ever
#   passed quoted. COLLECTION_TARBALL is `make collection`'s output.
#   TAG is the caller's unchecked tag: ee gives the image its content-keyed tag only after
#   the versions printed here meet the definition.
#
# The image's content key covers this file, the suite, the requirements and the
# collection's content (ee.Tag), so a change to any of them builds a new image.
# Prints "package NAME VERSION" for each requested package (the caller checks them against
# the definition's version constraints) and records them in the image's label
# org.richt.ee.versions ("NAME=VERSION ...") for a later reuse to check, then "built TAG".
# SIGTERM (ee cancels a build by signalling its process group) ends it through the EXIT
# trap, so the work directory (some 200 MB) goes with it.
set -euo pipefail
suite=$1 tag=$2 packages=$3 tarball=$4
work=$(mktemp -d /tmp/richt-ee.XXXXXX)
trap 'rm -rf "$work"' EXIT
trap 'exit 143' TERM
trap 'exit 130' INT
cp "$tarball" "$work/collection.tar.gz"
IFS=, read -r -a wanted <<<"$packages"

# runner (uid 1000, primary group root) and /runner as home and work directory, as AWX's
# execution environments have them: group root with group write lets a platform that runs
# the image under an arbitrary uid in group 0 (OpenShift) use the same directories.
# ansible-galaxy installs the collection from its own tarball, --offline: a collection
# without dependencies needs no Galaxy server. Its HOME is a scratch directory so that no
# ~/.ansible is left in the image.
mmdebstrap --quiet --variant=essential \
  --include="$packages" \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook='echo "runner:x:1000:0:ansible-runner:/runner:/bin/bash" >> "$1/etc/passwd"' \
  --customize-hook='mkdir -p "$1/runner" && chown 1000:0 "$1/runner" && chmod 2775 "$1/runner"' \
  --customize-hook="cp '$work/collection.tar.gz' \"\$1/tmp/richt-services.tar.gz\"" \
  --customize-hook='mkdir -p "$1/tmp/galaxy-home" && chroot "$1" env HOME=/tmp/galaxy-home LANG=C.UTF-8 ansible-galaxy collection install --offline -p /usr/share/ansible/collections /tmp/richt-services.tar.gz' \
  --customize-hook='rm -rf "$1/tmp/richt-services.tar.gz" "$1/tmp/galaxy-home"' \
  --customize-hook="chroot \"\$1\" dpkg-query -W -f '\${Package} \${Version}\n' > '$work/installed'" \
  "$suite" "$work/rootfs.tar"

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
docker build --quiet --label "org.richt.ee.suite=$suite" --label "org.richt.ee.versions=$label" -t "$tag" "$work" >/dev/null
sed 's/^/package /' "$work/versions"
echo "built $tag"
