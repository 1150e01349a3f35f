#!/bin/bash
# Second round, in a fresh container: groups, local files, conflicts.
set -u
mkdir -p /out
export LANG=C LC_ALL=C
cat > /etc/yum.repos.d/ds.repo <<'R'
[dsmain]
name=dnfsummary fixtures
baseurl=file:///srv/dsfx/dsmain
enabled=1
gpgcheck=0
metadata_expire=0
R
cap() {
  local n=$1; shift
  dnf -y --assumeno "$@" >/out/$n.txt 2>/out/$n.stderr; echo $? >/out/$n.rc
  echo "== $n: dnf -y --assumeno $* -> rc $(cat /out/$n.rc)"
}
real() { dnf -y -q "$@" >/dev/null 2>&1 || { echo "real $* failed"; dnf -y "$@"; }; }
dnf -q makecache >/dev/null 2>&1
cap group group install -- ds-group
cap commandline install -- /srv/dsfx/dsmain/ds-plain-1.0-1.noarch.rpm
cap conflict_error install-nevra -- ds-app-0:1.0-1.noarch ds-lib-0:2.0-1.noarch
real install-nevra -- ds-conflict-0:1.0-1.noarch ds-plain-0:1.0-1.noarch
cap skip_conflicts upgrade
cap erase_conflict install-nevra -- ds-conflict-0:2.0-1.noarch
cap erase_conflict_allowerasing --allowerasing install-nevra -- ds-conflict-0:2.0-1.noarch
