#!/bin/bash
# Runs inside a test image with the repositories of build.sh at /srv/dsfx; writes each
# case's standard output, standard error and exit status to /out/CASE.{txt,stderr,rc}.
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

[a-very-long-repository-id-for-wrapping]
name=dnfsummary long fixtures
baseurl=file:///srv/dsfx/dslong
enabled=1
gpgcheck=0
metadata_expire=0
R
# cap NAME ARGS... : dnf -y --assumeno ARGS, stdout/stderr/rc kept apart (as the project's runner does)
cap() {
  local n=$1; shift
  dnf -y --assumeno "$@" >/out/$n.txt 2>/out/$n.stderr; echo $? >/out/$n.rc
  echo "== $n: dnf -y --assumeno $* -> rc $(cat /out/$n.rc)"
}
# captty NAME COLS ARGS... : same under a pseudo-terminal COLS wide (DNF wraps only on a terminal)
captty() {
  local n=$1 cols=$2; shift 2
  script -qec "stty cols $cols; dnf -y --assumeno $*" /dev/null >/out/$n.txt 2>/out/$n.stderr; echo $? >/out/$n.rc
  echo "== $n (tty $cols): dnf -y --assumeno $* -> rc $(cat /out/$n.rc)"
}
real() { dnf -y -q "$@" >/dev/null 2>&1 || { echo "real $* failed"; dnf -y "$@"; }; }
dnf -q makecache >/dev/null 2>&1

cap install_plain install-nevra -- ds-plain-0:1.0-1.noarch
cap install_dep install-nevra -- ds-app-0:1.0-1.noarch
cap install_weak install-nevra -- ds-tool-0:1.0-1.noarch
cap install_n install-n -- ds-tool
cap install_epoch install-nevra -- ds-epoch-3:1.5-2.noarch
cap install_long install-nevra -- ds-a-rather-long-package-name-to-force-wrapping-0:1.0.0.20240101.gitabcdef0123456789-1.a.long.release.string.noarch ds-short-0:12.3.4.5.6.7.8.9.10.11.12.13-1.2.3.4.5.6.7.8.noarch
captty install_long_tty80 80 --setopt=color=never install-nevra -- ds-a-rather-long-package-name-to-force-wrapping-0:1.0.0.20240101.gitabcdef0123456789-1.a.long.release.string.noarch ds-short-0:12.3.4.5.6.7.8.9.10.11.12.13-1.2.3.4.5.6.7.8.noarch
captty install_long_tty60 60 --setopt=color=never install-nevra -- ds-a-rather-long-package-name-to-force-wrapping-0:1.0.0.20240101.gitabcdef0123456789-1.a.long.release.string.noarch ds-short-0:12.3.4.5.6.7.8.9.10.11.12.13-1.2.3.4.5.6.7.8.noarch
captty install_dep_tty80_color 80 --setopt=color=always install-nevra -- ds-app-0:1.0-1.noarch
cap unavailable install-nevra -- ds-nope-0:1.0-1.noarch
cap unavailable_n install -- ds-nope
cap remove_absent remove -- ds-nope

real install-nevra -- ds-plain-0:1.0-1.noarch
cap noop install-nevra -- ds-plain-0:1.0-1.noarch
cap reinstall reinstall -- ds-plain

real install-nevra -- ds-app-0:1.0-1.noarch
cap upgrade_forced install-nevra -- ds-lib-0:2.0-1.noarch
cap upgrade_dep install-nevra -- ds-app-0:2.0-1.noarch
cap upgrade_mixed install-nevra -- ds-app-0:2.0-1.noarch ds-tool-0:1.0-1.noarch
real install-nevra -- ds-app-0:2.0-1.noarch
cap downgrade_set install-nevra -- ds-app-0:1.0-1.noarch ds-lib-0:1.0-1.noarch
cap downgrade_forced install-nevra -- ds-lib-0:1.0-1.noarch
cap remove_dependents remove -- ds-lib
cap remove_unused remove -- ds-app

real install-nevra -- ds-epoch-3:1.5-2.noarch
cap downgrade_epoch install-nevra -- ds-epoch-3:1.4-1.noarch

real install-nevra -- ds-old-0:1.0-1.noarch
cap obsolete install-nevra -- ds-new-0:2.0-1.noarch

real install-nevra -- ds-broken-0:1.0-1.noarch
cap skip_broken_upgrade upgrade
cap skip_broken_install install -- ds-broken ds-tool
cap quiet -q install-nevra -- ds-tool-0:1.0-1.noarch
LANG=C.UTF-8 LC_ALL=C.UTF-8 cap install_weak_c_utf8 install-nevra -- ds-tool-0:1.0-1.noarch
