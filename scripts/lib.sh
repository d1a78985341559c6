# Shared by scripts/serve and scripts/test. Installs only into ./.venv.
PYTHON="${PYTHON:-python3}"

ensure_venv() {
  local extras="${1:-}"
  local stamp=".venv/.installed${extras:+-$extras}"
  if [ ! -x .venv/bin/python ]; then
    "$PYTHON" -m venv .venv
  fi
  # Reinstall when pyproject.toml changed since the last install.
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    .venv/bin/python -m pip install --quiet --upgrade pip
    .venv/bin/python -m pip install --quiet -e ".${extras:+[$extras]}"
    touch "$stamp"
  fi
}
