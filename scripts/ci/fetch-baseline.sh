#!/usr/bin/env bash
# Fetch the baseline: the artifact of the last successful run of this workflow on the default
# branch, with the GitHub CLI (`gh run list`, `gh api`, `gh run download`). For CI systems other than
# GitHub Actions (scripts/ci/all.sh); the composite action reads the REST API through actions/github-script.
#
#   BASELINE_DIR       where the artifact goes (default: $REPORT_DIR/baseline)
#   REPORT_DIR         as for conformance.sh (default: specconform-reports)
#   BASELINE_ARTIFACT  the artifact's name (default: specconform-baseline)
#   BASELINE_BRANCH    the branch (default: the repository's default branch)
#   BASELINE_WORKFLOW  the workflow file (default: this run's, from GITHUB_WORKFLOW_REF)
#   GITHUB_REPOSITORY  owner/name (set by GitHub Actions); GH_TOKEN: a token that may read its actions
#
# Says plainly when there is no baseline (no successful run yet, none kept the artifact, or no gh to
# ask with) and exits 0 then; exits non-zero when it cannot ask (no repository) or a download fails.
set -euo pipefail
# shellcheck source=scripts/ci/lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
begin_step fetch-baseline
BASELINE_DIR=${BASELINE_DIR:-$REPORT_DIR/baseline}
BASELINE_ARTIFACT=${BASELINE_ARTIFACT:-specconform-baseline}
if [ -z "${GITHUB_REPOSITORY:-}" ]; then
  say "GITHUB_REPOSITORY (owner/name) is not set" >&2
  exit 2
fi
repo=$GITHUB_REPOSITORY
if ! command -v gh >/dev/null; then
  say "No baseline: the GitHub CLI (gh) is not installed on this runner (install it to compare with the last" \
    "successful run, or put that run's results.jsonl into $BASELINE_DIR yourself)"
  exit 0
fi
workflow=${BASELINE_WORKFLOW:-${GITHUB_WORKFLOW_REF:-}}
workflow=${workflow%@*}
workflow=${workflow##*/}
if [ -z "$workflow" ]; then
  say "set BASELINE_WORKFLOW (or GITHUB_WORKFLOW_REF) to the workflow whose runs hold the baseline" >&2
  exit 2
fi
branch=${BASELINE_BRANCH:-$(gh repo view "$repo" --json defaultBranchRef --jq .defaultBranchRef.name)}
rm -rf "$BASELINE_DIR"
mkdir -p "$BASELINE_DIR"
run_id=$(gh run list --repo "$repo" --workflow "$workflow" --branch "$branch" --status success --limit 1 \
  --json databaseId --jq '.[0].databaseId // empty')
if [ -z "$run_id" ]; then
  say "No baseline: $workflow has no successful run on $branch yet"
  exit 0
fi
kept=$(gh api "repos/$repo/actions/runs/$run_id/artifacts?name=$BASELINE_ARTIFACT" \
  --jq '[.artifacts[] | select(.expired | not)] | length')
if [ "$kept" = 0 ]; then
  say "No baseline: run $run_id of $workflow on $branch kept no artifact named $BASELINE_ARTIFACT" \
    "(never uploaded, or expired)"
  exit 0
fi
gh run download "$run_id" --repo "$repo" --name "$BASELINE_ARTIFACT" --dir "$BASELINE_DIR"
echo "run $run_id of $workflow on $branch (${GITHUB_SERVER_URL:-https://github.com}/$repo/actions/runs/$run_id)" \
  >"$BASELINE_DIR/SOURCE"
say "Baseline: $(cat "$BASELINE_DIR/SOURCE")"
