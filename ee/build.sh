#!/usr/bin/env bash
# Builds the execution environment image from Debian packages, offline from any container
# registry, the way testenv builds its targets (testenv/image/build.sh): mmdebstrap reads
# the host's apt sources, so no mirror address is written here.
#
# Usage: build.sh SUITE TAG PACKAGES COLLECTION_TARBALL
#   PACKAGES is the comma-separated Debian package list that ee.ReadDefinition derives
#   from execution-environment.yml; nothing is added here, so the definition stays the one
#   source of the image's content. COLLECTION_TARBALL is `make collection`'s output.
#
# The image's content key (its tag) covers this file, the suite, the package list and the
# collection's content, so a change to any of them builds a new image.
# Prints "package NAME VERSION" for each requested package (the caller checks them against
# the definition's version constraints), then "built TAG".
set -euo pipefail
suite=$1 tag=$2 packages=$3 tarball=$4
work=$(mktemp -d /tmp/richt-ee.XXXXXX)
trap 'rm -rf "$work"' EXIT
cp "$tarball" "$work/collection.tar.gz"
# dpkg-query takes the names space-separated.
query=${packages//,/ }

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
  --customize-hook="chroot \"\$1\" dpkg-query -W -f '\${Package} \${Version}\n' $query > '$work/versions'" \
  "$suite" "$work/rootfs.tar"

cat > "$work/Dockerfile" <<'DOCKERFILE'
FROM scratch
ADD rootfs.tar /
# ansible-core refuses a locale that is not UTF-8; glibc has C.UTF-8 built in.
ENV LANG=C.UTF-8 HOME=/runner
USER 1000
WORKDIR /runner
CMD ["ansible-runner", "--help"]
DOCKERFILE
docker build --quiet --label "org.richt.ee.suite=$suite" -t "$tag" "$work" >/dev/null
sed 's/^/package /' "$work/versions"
echo "built $tag"
