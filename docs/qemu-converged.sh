#!/bin/bash
# Runs in a target that holds bin/richt-modules-* and the qemu-ARCH-static emulators in
# /usr/local/bin (docker cp them in); prints, per build, the median of 21 converged runs.
# Median of 21 converged runs of each module with each build, timed in the target.
set -e
mkdir -p /root/qb
printf '%s' '{"name":"richt-el-base"}' > /root/qb/rpm_exact.json
printf '%s' '{"unit":"dbus.service","state":"running"}' > /root/qb/systemd_lifecycle.json
printf '%s' '{"unit":"qb.service","name":"10-qb.conf","content":"[Service]\nEnvironment=QB=1\n"}' > /root/qb/unit_override.json
/usr/local/bin/richt-modules-x86_64 unit_override /root/qb/unit_override.json >/dev/null
for a in x86_64 aarch64 ppc64le s390x; do
  pre=; [ $a = x86_64 ] || pre=/usr/local/bin/qemu-$a-static
  line="$a"
  for m in rpm_exact unit_override systemd_lifecycle; do
    ts=()
    for i in $(seq 21); do
      s=$EPOCHREALTIME; $pre /usr/local/bin/richt-modules-$a $m /root/qb/$m.json > /root/qb/out; e=$EPOCHREALTIME
      grep -q '"changed":false' /root/qb/out || { echo "not converged: $a $m: $(cat /root/qb/out)"; exit 1; }
      ts+=($(( (${e/./} - ${s/./}) / 1000 )))
    done
    med=$(printf '%s\n' "${ts[@]}" | sort -n | sed -n 11p)
    line="$line $m=${med}ms"
  done
  echo "$line"
done
