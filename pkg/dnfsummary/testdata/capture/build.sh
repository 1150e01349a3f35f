#!/bin/bash
# Builds the fixture repositories the testdata was captured from: OUT/dsmain (with the
# comps group of comps.xml) and OUT/dslong. Packages have no scriptlets, so they install
# into the test images' empty RPM database without a /bin/sh provider.
# Usage: build.sh [OUT]   (OUT defaults to /tmp/dsfx)
set -e
here=$(cd "$(dirname "$0")" && pwd)
out=${1:-/tmp/dsfx}

# build NAME VERSION RELEASE EPOCH REPO [SPEC-LINE...]
build() {
  local name=$1 ver=$2 rel=$3 epoch=$4 repo=$5; shift 5
  local top; top=$(mktemp -d)
  mkdir -p "$top/SPECS" "$out/$repo"
  {
    echo "Name: $name"; echo "Version: $ver"; echo "Release: $rel"
    [ "$epoch" != 0 ] && echo "Epoch: $epoch"
    echo "Summary: dnfsummary fixture"; echo "License: MIT"; echo "BuildArch: noarch"; echo "AutoReqProv: no"
    for l in "$@"; do echo "$l"; done
    echo '%global debug_package %{nil}'
    echo '%description'; echo 'fixture'
    echo '%install'; echo "mkdir -p %{buildroot}/usr/share/ds; echo $name > %{buildroot}/usr/share/ds/$name"
    echo '%files'; echo "/usr/share/ds/$name"
  } > "$top/SPECS/$name.spec"
  rpmbuild -bb --quiet --define "_topdir $top" --define "_rpmdir $out/$repo" \
    --define '_build_name_fmt %%{NAME}-%%{VERSION}-%%{RELEASE}.%%{ARCH}.rpm' "$top/SPECS/$name.spec"
  rm -rf "$top"
}
rm -rf "$out/dsmain" "$out/dslong"
build ds-plain 1.0 1 0 dsmain
build ds-lib 1.0 1 0 dsmain
build ds-lib 2.0 1 0 dsmain
build ds-app 1.0 1 0 dsmain "Requires: ds-lib = 1.0-1"
build ds-app 2.0 1 0 dsmain "Requires: ds-lib = 2.0-1"
build ds-tool 1.0 1 0 dsmain "Recommends: ds-helper"
build ds-helper 1.0 1 0 dsmain
build ds-epoch 1.5 2 3 dsmain
build ds-epoch 1.4 1 3 dsmain
build ds-old 1.0 1 0 dsmain
build ds-new 2.0 1 0 dsmain "Obsoletes: ds-old < 2" "Provides: ds-old = 2.0"
build ds-broken 1.0 1 0 dsmain
build ds-broken 2.0 1 0 dsmain "Requires: ds-does-not-exist"
build ds-conflict 1.0 1 0 dsmain
build ds-conflict 2.0 1 0 dsmain "Conflicts: ds-plain"
build ds-a-rather-long-package-name-to-force-wrapping 1.0.0.20240101.gitabcdef0123456789 1.a.long.release.string 0 dslong
build ds-a-rather-long-package-name-to-force-wrapping 0.9 1 0 dslong
build ds-short 12.3.4.5.6.7.8.9.10.11.12.13 1.2.3.4.5.6.7.8 0 dslong "Requires: ds-plain"
createrepo_c --quiet -g "$here/comps.xml" "$out/dsmain"
createrepo_c --quiet "$out/dslong"
