#!/bin/sh
# Prints the console excerpts docs/from-builtins.md quotes, from the outputs
# TestConsoleSaysWhatHappened keeps:
#   mkdir -p /tmp/out && RICHT_DOC_OUTPUT=/tmp/out go test -count=1 -run TestConsoleSaysWhatHappened ./playbooks
#   docs/from-builtins.sh /tmp/out
# Each run's service task and its recap line, the target's random name replaced by web1.
set -eu
dir=${1:?usage: from-builtins.sh DIR}
for f in "$dir"/*-TestConsoleSaysWhatHappened*.txt; do
  name=$(basename "$f" .txt)
  case $name in
    1-*) title='First run: installs, enables and starts' ;;
    2-*) title='No-op, check mode (--check)' ;;
    3-*) title='No-op' ;;
    4-*) title='demo_level changed, check mode: the drop-in would reload the process' ;;
    5-*) title='demo_level changed: the drop-in reloads the process' ;;
    6-*) title='demo_version 2.0, check mode: the package move would restart it' ;;
    7-*) title='demo_version 2.0: the package move restarts it' ;;
    *) continue ;;
  esac
  host=$(sed -n 's/^changed: \[\(.*\)\]$/\1/p; s/^ok: \[\(.*\)\]$/\1/p' "$f" | head -n 1)
  printf '%s:\n\n```text\n' "$title"
  awk '/^TASK \[richt.services.service : Service/ {p=1} /^PLAY RECAP/ {p=0} p && NF' "$f" | sed "s/$host/web1/g"
  printf '```\n\n'
done
