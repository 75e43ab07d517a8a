#!/bin/sh
# pydeps.sh VENV: the Python environment the test suite runs in. Creates VENV (a virtual
# environment that also sees the system's packages) and pip-installs tools/requirements-test.txt
# into it; does nothing when VENV already holds this exact requirements list. The build is told
# to use VENV/bin/python (Makefile), so tests never depend on what the system Python happens to
# have, and nothing is installed into the system Python.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
venv=${1:?usage: pydeps.sh VENV}
req=$here/tools/requirements-test.txt
stamp=$venv/.wick-requirements
if [ -x "$venv/bin/python" ] && [ -f "$stamp" ] && cmp -s "$req" "$stamp"; then
    exit 0
fi
py=${PYTHON:-python3}
command -v "$py" >/dev/null 2>&1 || { echo "pydeps: $py not found (tools/deps.sh installs python3)"; exit 1; }
if [ ! -x "$venv/bin/python" ]; then
    echo "pydeps: creating $venv"
    "$py" -m venv --system-site-packages "$venv" || {
        echo "pydeps: '$py -m venv' failed (on Debian: apt-get install python3-venv)"; exit 1; }
fi
echo "pydeps: pip install -r tools/requirements-test.txt into $venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check -r "$req" || {
    echo "pydeps: pip install failed (PyPI unreachable?)"; exit 1; }
cp "$req" "$stamp"
