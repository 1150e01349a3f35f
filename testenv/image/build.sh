#!/usr/bin/env bash
# Builds a systemd + DNF 4 target image from Debian packages, offline from any container
# registry. Usage: build.sh SUITE TAG [EXTRA_PACKAGES]. mmdebstrap reads the host's apt sources, so no
# mirror address is written here. The image's content key (its tag) is the hash of this
# file, so everything the image is made of lives in this file: any change to the package
# list, the customisation or the richt-el-base package below builds a new image.
set -euo pipefail
suite=$1 tag=$2 extra=${3:-}
# mmdebstrap's apt hooks fail ("Sub-process cat >&11 returned an error code (2)") when the
# caller leaves three or more descriptors open beyond 0-2 (a lock wrapper's, a CI agent's):
# the build needs none of them. 255 is bash's own hold on this script.
for fd in /proc/$$/fd/*; do
  fd=${fd##*/}
  if [ "$fd" -gt 2 ] && [ "$fd" -lt 255 ]; then eval "exec $fd>&-"; fi
done
work=$(mktemp -d /tmp/richt-image.XXXXXX)
trap 'rm -rf "$work"' EXIT

# rpm before 4.20 (bookworm has 4.18) matches a %transfiletriggerpostun against its first
# prefix only (fixed upstream by rpm PR #3267), and rpmbuild sorts the prefixes, so EL's
# two-prefix triggers would never see a removed /usr/lib/systemd/system file there. Such
# rpm versions get one trigger per prefix: the same effect, and a second reload when a
# package removes files from both directories.
split_postun=1
case "$suite" in
  trixie) releasever=13 split_postun=0 ;;
  bookworm) releasever=12 ;;
  *) releasever=$suite ;;
esac

# richt-el-base stands in, in the RPM database, for what every AlmaLinux system has and
# Debian's rpmdb lacks: a package providing the shell (rpmbuild makes every scriptlet
# require /bin/sh) and systemd (packages with EL's systemd scriptlets require it), and the
# systemd package's update helper and transaction file triggers, so that EL's
# %systemd_post/%systemd_preun/%systemd_postun_with_restart scriptlets act as on EL: units
# marked for restart by the old package's %postun restart once, at the end of the
# transaction, after the manager has loaded the new unit files.
el="$work/el-base"
mkdir -p "$el/SOURCES" "$el/rpms"
cat > "$el/SOURCES/systemd-update-helper" <<'HELPER'
#!/bin/sh
# richt testenv's own implementation of the interface EL's systemd RPM macros and file
# triggers call. Scriptlets call it with "|| :" and a unit that is unknown or fails to
# (re)start must never fail a package transaction, so it always exits 0.
marks=/run/systemd/rpm/restart
# Outside a booted system (an image build, a chroot) there is no manager to reload or
# restart, but presets can still be applied offline.
running() { [ -d /run/systemd/system ]; }

reload() {
  if running; then systemctl daemon-reload; fi
}

restart_marked() {
  set --
  for m in "$marks"/*; do
    [ -f "$m" ] && set -- "$@" "${m##*/}"
  done
  [ $# -gt 0 ] || return 0
  # Blocking, so the transaction ends with the services already running their new code.
  if running; then systemctl try-restart "$@"; fi
  for u in "$@"; do rm -f "$marks/$u"; done
}

cmd=${1:-}
[ $# -eq 0 ] || shift
case $cmd in
  install-system-units)
    [ $# -eq 0 ] || systemctl --no-reload preset "$@" ;;
  remove-system-units)
    if [ $# -gt 0 ]; then
      if running; then systemctl --no-reload disable --now "$@"; else systemctl --no-reload disable "$@"; fi
    fi ;;
  mark-restart-system-units)
    mkdir -p "$marks"
    for u in "$@"; do : > "$marks/$u"; done ;;
  system-reload-restart) reload; restart_marked ;;
  system-reload) reload ;;
  system-restart) restart_marked ;;
esac
exit 0
HELPER
cat > "$el/richt-el-base.spec" <<'SPEC'
Name: richt-el-base
Version: 1.0
Release: 1
Summary: What an AlmaLinux rpmdb provides and Debian's lacks, for richt testenv targets
License: MIT
BuildArch: noarch
AutoReqProv: no
Source0: systemd-update-helper
Provides: /bin/sh
Provides: /bin/bash
Provides: /usr/bin/sh
Provides: /usr/bin/bash
Provides: systemd
Provides: systemd-units
%global debug_package %{nil}
%global __os_install_post %{nil}
%define _build_id_links none

%description
Provides the shell and systemd (both are Debian packages in this image), ships a
systemd-update-helper for EL's systemd scriptlets, and reloads and restarts units at the
end of package transactions as EL's systemd package does.

%install
install -D -m 0755 %{SOURCE0} %{buildroot}/usr/lib/systemd/systemd-update-helper
mkdir -p %{buildroot}/etc/dnf/protected.d
echo richt-el-base > %{buildroot}/etc/dnf/protected.d/richt-el-base.conf

%transfiletriggerin -P 900900 -- /usr/lib/systemd/system /etc/systemd/system
/usr/lib/systemd/systemd-update-helper system-reload-restart || :

%if 0%{?split_postun}
%transfiletriggerpostun -P 1000100 -- /usr/lib/systemd/system
/usr/lib/systemd/systemd-update-helper system-reload || :

%transfiletriggerpostun -P 1000100 -- /etc/systemd/system
/usr/lib/systemd/systemd-update-helper system-reload || :

%transfiletriggerpostun -P 10000 -- /usr/lib/systemd/system
/usr/lib/systemd/systemd-update-helper system-restart || :

%transfiletriggerpostun -P 10000 -- /etc/systemd/system
/usr/lib/systemd/systemd-update-helper system-restart || :
%else
%transfiletriggerpostun -P 1000100 -- /usr/lib/systemd/system /etc/systemd/system
/usr/lib/systemd/systemd-update-helper system-reload || :

%transfiletriggerpostun -P 10000 -- /usr/lib/systemd/system /etc/systemd/system
/usr/lib/systemd/systemd-update-helper system-restart || :
%endif

%files
/usr/lib/systemd/systemd-update-helper
%config(noreplace) /etc/dnf/protected.d/richt-el-base.conf
SPEC
rpmbuild -bb --quiet --define "_topdir $el" --define "_rpmdir $el/rpms" \
  --define "_build_name_fmt richt-el-base.rpm" --define "split_postun $split_postun" \
  "$el/richt-el-base.spec"

# Packages: systemd as PID 1 and its bus; libpam-systemd so user managers (user@UID.service,
# lingering) start; DNF 4 and rpm; procps for /bin/kill (ExecReload
# lines use it); sudo for become tests; openssh-server for SSH-connection tests;
# libnss-extrausers, an NSS source besides the files (not enabled in nsswitch.conf), for
# tests of owners that only SSSD or LDAP know on EL.
# A booted host's state, so that a boot does only what a host's every boot does (0.94 s
# of the machine's CPU per target booted and removed, 0.74 s with these; about 170 targets
# per make test): the first-boot updates are done here (ldconfig by dpkg's trigger, the
# journal's catalog, the system users by their packages), and /etc/.updated and
# /var/.updated say so, so ldconfig.service and its kind skip the boot unless a package
# changes /usr later, as on EL; kernel modules (modprobe@) and the kernel's debug, tracing,
# configfs, hugepages and fuse file systems, which a container neither loads nor needs, are
# masked, and so is the boot's population of /dev (systemd-tmpfiles-setup-dev and its early
# half; Docker makes a container's /dev, and the kernel modules' static device nodes
# they would add do not exist here).
# The system generators are masked too: each boot and each daemon-reload runs every one
# of them, and in a container they find nothing to make a unit of (no fstab, console,
# kernel command line, partition, TPM, hibernation image, rc.local or SysV script that
# EL has). A daemon-reload took 126 ms of the machine's CPU with them and 68 ms without
# (50 in a row on a booted target); a make test makes about 460 reloads and 158 boots
# (process accounting: each generator ran 620 times, systemd-remount-fs 158).
# User generators stay (environment.d reaches user managers through one).
# EL's settings: a preset policy that disables every unit no earlier preset enables (Debian
# enables them all), and EL's dnf.conf, whose best and skip_if_unavailable differ from
# Debian's.
mmdebstrap --quiet --variant=essential \
  --include=systemd,systemd-sysv,dbus,libpam-systemd,dnf,rpm,procps,sudo,openssh-server,libnss-extrausers${extra:+,$extra} \
  --dpkgopt='path-exclude=/usr/share/man/*' \
  --dpkgopt='path-exclude=/usr/share/locale/*' \
  --dpkgopt='path-exclude=/usr/share/doc/*' \
  --dpkgopt='path-exclude=/usr/share/info/*' \
  --customize-hook='mkdir -p "$1/etc/yum.repos.d" "$1/etc/dnf/vars" "$1/etc/rpm" "$1/var/lib/rpm"' \
  --customize-hook="echo $releasever > \"\$1/etc/dnf/vars/releasever\"" \
  --customize-hook='echo "%_dbpath /var/lib/rpm" > "$1/etc/rpm/macros.dbpath"' \
  --customize-hook='chroot "$1" rpmdb --initdb' \
  --customize-hook="cp '$el/rpms/richt-el-base.rpm' \"\$1/tmp/richt-el-base.rpm\"" \
  --customize-hook='chroot "$1" rpm -i --nodeps /tmp/richt-el-base.rpm && rm -f "$1/tmp/richt-el-base.rpm"' \
  --customize-hook='mkdir -p "$1/usr/lib/systemd/system-preset" && echo "disable *" > "$1/usr/lib/systemd/system-preset/99-default-disable.preset"' \
  --customize-hook='printf "[main]\ngpgcheck=1\ninstallonly_limit=3\nclean_requirements_on_remove=True\nbest=True\nskip_if_unavailable=False\n" > "$1/etc/dnf/dnf.conf"' \
  --customize-hook='if [ -e "$1/usr/bin/dnf-3" ]; then ln -sf dnf-3 "$1/usr/bin/yum"; else ln -sf dnf "$1/usr/bin/yum"; fi' \
  --customize-hook='ln -sf /dev/null "$1/etc/systemd/system/systemd-modules-load.service"' \
  --customize-hook='for u in modprobe@.service dev-hugepages.mount sys-kernel-debug.mount sys-kernel-tracing.mount sys-kernel-config.mount sys-fs-fuse-connections.mount systemd-tmpfiles-setup-dev-early.service systemd-tmpfiles-setup-dev.service; do ln -sf /dev/null "$1/etc/systemd/system/$u"; done' \
  --customize-hook='mkdir -p "$1/etc/systemd/system-generators" && for g in "$1"/usr/lib/systemd/system-generators/*; do ln -sf /dev/null "$1/etc/systemd/system-generators/${g##*/}"; done' \
  --customize-hook='chroot "$1" journalctl --update-catalog' \
  --customize-hook='touch "$1/etc/.updated" "$1/var/.updated"' \
  --customize-hook='ln -sf /dev/null "$1/etc/systemd/system/ssh.service"; ln -sf /dev/null "$1/etc/systemd/system/ssh.socket"' \
  --customize-hook='rm -f "$1/etc/ssh/ssh_host_"*' \
  --customize-hook='echo richt-target > "$1/etc/hostname"' \
  "$suite" "$work/rootfs.tar"

cat > "$work/Dockerfile" <<'DOCKERFILE'
FROM scratch
ADD rootfs.tar /
# systemd re-executes on SIGTERM; SIGRTMIN+3 is its halt signal, so stop takes < 1 s.
STOPSIGNAL SIGRTMIN+3
CMD ["/sbin/init"]
DOCKERFILE
docker build --quiet --label "org.richt.testenv.suite=$suite" -t "$tag" "$work" >/dev/null
echo "built $tag"
