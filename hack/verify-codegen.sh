#!/usr/bin/env bash
# Fails when the checked-in generated code or CRD differs from what
# hack/update-codegen.sh produces from the current API types.
set -euo pipefail

repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scratch="$(mktemp -d "${TMPDIR:-/tmp}/nhc-verify-codegen.XXXXXX")"
trap 'rm -rf "${scratch}"' EXIT

# Regenerate in a copy of the work tree, so that a stale tree is reported and
# never overwritten.
(cd "${repo_root}" && git ls-files --cached --others --exclude-standard -z | xargs -0 cp --parents -t "${scratch}" 2>/dev/null || true)
(cd "${scratch}" && GOFLAGS="${GOFLAGS:-} -modcacherw" bash hack/update-codegen.sh >/dev/null)

status=0
for dir in pkg/apis pkg/generated pkg/health pkg/nodeview pkg/nodecache manifests/crd; do
  if ! diff -Naupr "${repo_root}/${dir}" "${scratch}/${dir}"; then
    status=1
  fi
done
if [[ ${status} -ne 0 ]]; then
  echo "Generated files are out of date: run hack/update-codegen.sh (make generate)." >&2
  exit 1
fi
echo "Generated code and CRD are up to date."
