#!/usr/bin/env bash
# One mutation run (python -m specconform.harness.mutation run ARGS...) on a many-core machine that has Python 3.12 and
# torch but not every package of the project: WHEELS_DIR (optional) holds cp312 wheels for the missing ones,
# installed into a temporary folder without a registry. Runs from the repository root without installing;
# the run folder goes to $OUT as mutation-<stamp>.tar.gz (or stays under reports/mutation without $OUT).
# TIME_LIMIT (seconds, default none): the run is stopped then, and what it judged so far is still packed.
set -uo pipefail
if [ -n "${WHEELS_DIR:-}" ]; then
  site=$(mktemp -d)
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target "$site" "$WHEELS_DIR"/*.whl \
    || { echo "could not install the wheels in $WHEELS_DIR" >&2; exit 1; }
  export PYTHONPATH="$site"
fi
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}" PYTHONUNBUFFERED=1
reports=$(mktemp -d)
echo "$(nproc) CPU cores; $(python3 -c 'import sys, torch; print(sys.version.split()[0], "torch", torch.__version__)')"
timeout -k 10 "${TIME_LIMIT:-0}" python3 -m specconform.harness.mutation run --report-dir "$reports" "$@" >/dev/null
status=$?
if [ -n "${OUT:-}" ]; then
  for run in "$reports"/*/; do tar -czf "$OUT/mutation-$(basename "$run").tar.gz" -C "$reports" "$(basename "$run")"; done
else
  mkdir -p reports/mutation && cp -r "$reports"/* reports/mutation/
fi
exit $status
