#!/usr/bin/env bash
# Install specconform into $PYTHON's environment without replacing the torch already there.
#
#   TORCH_SPEC      a pip requirement for torch to install first (e.g. torch==2.13.0 on a CPU machine);
#                   empty (the default): keep the torch that is installed, and fail if there is none
#                   while EXTRAS names any
#   EXTRAS          specconform's extras (default: triton); empty: the light install, which judges servers
#                   (--engine openai) and the oracle without torch, triton or transformers
#   PIP_ARGS        more arguments for the specconform install (e.g. --no-deps --no-build-isolation)
#   PYTHON          the interpreter whose environment gets specconform (default: python3)
#   SPECCONFORM_SRC the specconform checkout (default: the one this script is in)
#
# While specconform is installed, the installed torch (and triton, where present) are pinned by a
# constraints file ($REPORT_DIR/ci/install.constraints), so pip fails loudly rather than replacing
# them; the script then checks that torch's version and location are unchanged.
set -euo pipefail
# shellcheck source=scripts/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
begin_step install
SPECCONFORM_SRC=${SPECCONFORM_SRC:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)}
EXTRAS=${EXTRAS-triton}
TORCH_SPEC=${TORCH_SPEC:-}
read -r -a pip_args <<<"${PIP_ARGS:-}"

torch_location() {  # "version path" of the importable torch, or nothing
  "$PYTHON" -c 'import importlib.util as u, importlib.metadata as m
spec = u.find_spec("torch")
print(m.version("torch"), spec.origin) if spec else None'
}

if [ -n "$TORCH_SPEC" ]; then
  echo "specconform install: installing TORCH_SPEC=$TORCH_SPEC"
  "$PYTHON" -m pip install "$TORCH_SPEC"
fi
before=$(torch_location)
if [ -z "$before" ] && [ -n "$EXTRAS" ]; then
  say "$PYTHON has no torch and TORCH_SPEC is empty: install your torch build first, or set TORCH_SPEC" \
    "(e.g. TORCH_SPEC=torch==2.13.0), or set EXTRAS empty for the light install, which judges servers only" >&2
  exit 2
fi
if [ -n "$before" ]; then
  echo "specconform install: keeping torch ${before% *} (${before#* })"
fi

constraints=$STATE_DIR/install.constraints
"$PYTHON" -c 'import importlib.metadata as m
for name in ("torch", "triton"):
    try:
        print(f"{name}=={m.version(name)}")
    except m.PackageNotFoundError:
        pass' >"$constraints"
target=$SPECCONFORM_SRC
[ -n "$EXTRAS" ] && target="${SPECCONFORM_SRC}[$EXTRAS]"
"$PYTHON" -m pip install "${pip_args[@]}" --constraint "$constraints" --editable "$target"

after=$(torch_location)
if [ "$after" != "$before" ]; then
  say "torch changed from '$before' to '$after'" >&2
  exit 1
fi
installed="specconform $("$PYTHON" -c 'import importlib.metadata as m; print(m.version("specconform"))') installed"
if [ -z "$after" ]; then
  say "$installed without torch (the light install: it judges servers and the oracle)"
else
  say "$installed; torch ${after% *} left in place (${after#* })"
fi
