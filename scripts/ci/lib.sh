# shellcheck shell=bash
# Shared by the scripts in scripts/ci/ (sourced, not run). Each step keeps, in $REPORT_DIR/ci/:
#   <step>.status  its exit status (written whatever way it ends)
#   <step>.line    one line for the verdict
#   <step>.md      details for the job summary (optional)
# verdict.sh reads them.
REPORT_DIR=${REPORT_DIR:-specconform-reports}
PYTHON=${PYTHON:-python3}
STATE_DIR=$REPORT_DIR/ci

# begin_step NAME: forget NAME's earlier state and record its exit status when the script ends.
begin_step() {
  STEP=$1
  mkdir -p "$STATE_DIR"
  rm -f "$STATE_DIR/$STEP".*
  trap 'echo "$?" >"$STATE_DIR/$STEP.status"' EXIT
}

# say TEXT...: print TEXT and keep it as the step's line for the verdict.
say() {
  echo "$*" | tee "$STATE_DIR/$STEP.line"
}
