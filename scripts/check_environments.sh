#!/usr/bin/env bash
# The README's test command under the machine states a new user may have (issue: tests pass
# anywhere): each case runs the suite in a fresh clone of HEAD and prints one line of outcome.
#   bash scripts/check_environments.sh [CASE...]    cases: ci colsunset cols80 nonroot
# Needs root (for the non-root case: a user, and a mount namespace hiding Graphviz and Chromium).
#   bash scripts/check_environments.sh names        the private torch names each torch venv here
#       (.venv, .venv-torch-*) lacks, one line each (scripts/torch_names.py); exit 1 on a BROKEN one
set -uo pipefail
cd "$(dirname "$0")/.."
if [ "${1:-}" = names ]; then
  rc=0
  for v in .venv .venv-torch-*; do
    [ -x "$v/bin/python" ] || continue
    "$v/bin/python" scripts/torch_names.py 2>/dev/null || rc=1
  done
  exit $rc
fi
repo=$PWD
work=${CHECK_DIR:-/tmp/dynaprof-envcheck}
rm -rf "$work" && mkdir -p "$work"
long=$(printf 'L%.0s' $(seq 1 150))
cases=("$@")
[ ${#cases[@]} -gt 0 ] || cases=(ci colsunset cols80 nonroot)

summary() { grep -E '^[0-9]+ (passed|failed)|^=+ .*(passed|failed)' "$1" | tail -1; }

for c in "${cases[@]}"; do
  dir="$work/$c"
  git clone -q "$repo" "$dir"
  log="$work/$c.log"
  start=$(date +%s)
  case $c in
    ci)  # .ci/run as CI calls it (COLUMNS=40, 150-character basetemp), in the C locale
      (cd "$dir" && env -u COLUMNS LANG=C LC_ALL=C CI=true bash .ci/run </dev/null) >"$log" 2>&1 ;;
    colsunset)  # no COLUMNS, a 150-character TMPDIR, two CPU-bound processes beside the suite
      tmp="$work/$long"; mkdir -p "$tmp"
      yes >/dev/null & y1=$!; yes >/dev/null & y2=$!
      (cd "$dir" && env -u COLUMNS TMPDIR="$tmp" bash scripts/test.sh </dev/null) >"$log" 2>&1
      rc=$?; kill $y1 $y2; (exit $rc) ;;
    cols80)
      (cd "$dir" && COLUMNS=80 bash scripts/test.sh </dev/null) >"$log" 2>&1 ;;
    nonroot)  # COLUMNS=250 as user nobody, where `dot` and `chromium` are not installed
      chown -R nobody:nogroup "$dir"; mkdir -p "$work/home" && chown nobody:nogroup "$work/home"
      unshare -m bash -c "mount --bind /dev/null /usr/bin/dot && mount --bind /dev/null /usr/bin/chromium &&
        cd '$dir' && setpriv --reuid=nobody --regid=nogroup --init-groups \
        env HOME='$work/home' COLUMNS=250 bash scripts/test.sh </dev/null" >"$log" 2>&1 ;;
    *) echo "unknown case $c" >&2; exit 2 ;;
  esac
  rc=$?
  echo "$c: exit $rc in $(( $(date +%s) - start )) s: $(summary "$log")"
done
