# Shared by scripts/serve and scripts/test. Installs only into ./.venv.
PYTHON="${PYTHON:-python3}"

ensure_venv() {
  local extras="${1:-}"
  local stamp=".venv/.installed${extras:+-$extras}"
  if [ ! -x .venv/bin/python ]; then
    echo "setup: creating .venv with $("$PYTHON" --version 2>&1)" >&2
    "$PYTHON" -m venv .venv
  fi
  # Reinstall when pyproject.toml changed since the last install. One line per step; the
  # installer's own output only when it fails.
  if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
    local log=".venv/install.log"
    echo "setup: installing dependencies${extras:+ (with $extras)} (log: $log)" >&2
    if ! { .venv/bin/python -m pip install --quiet --upgrade pip &&
      .venv/bin/python -m pip install --quiet -e ".${extras:+[$extras]}"; } >"$log" 2>&1; then
      cat "$log" >&2
      echo "setup: installing failed; the installer's output is above" >&2
      return 1
    fi
    touch "$stamp"
    echo "setup: ready" >&2
  fi
}
