# python27: the Python 2.7 the Juno-era venvs are made with (scripts/juno.sh, glance.sh, keystone-pike.sh):
# BM2_JUNO_PYTHON, pyenv's 2.7.18, or python2.7 on the PATH. Sourced; prints its path, or says what
# to do and exits 1.
python27() {
  local p
  for p in "${BM2_JUNO_PYTHON:-}" "$HOME/.pyenv/versions/2.7.18/bin/python" "$(command -v python2.7 || true)"; do
    if [ -n "$p" ] && [ -x "$p" ]; then echo "$p"; return 0; fi
  done
  echo "no Python 2.7 (Juno's Ironic and Nova run on nothing newer): set BM2_JUNO_PYTHON, or 'pyenv install 2.7.18'" >&2
  exit 1
}

# py27_venv TAG VENV SPEC CHECK PIP_ARGS...: a Python 2.7 venv at VENV, built once per SPEC (kept in
# VENV/.spec, written last) under a lock: virtualenv (itself installed once into a bootstrap dir beside
# VENV, one per TAG, so two builds at once do not share one), `pip install PIP_ARGS` (its log
# VENV.pip.log), then `python -c CHECK`. Prints VENV; says what failed and exits 1 otherwise. The
# Pike-era services of the Juno tests use it (scripts/glance.sh, scripts/keystone-pike.sh).
py27_venv() {
  local tag=$1 venv=$2 spec=$3 check=$4 t0=$SECONDS py boot
  shift 4
  mkdir -p "$(dirname "$venv")"
  exec 9>"$venv.lock"
  flock 9
  if [ -x "$venv/bin/python" ] && [ "$(cat "$venv/.spec" 2>/dev/null)" = "$spec" ]; then
    echo "$venv"; return 0
  fi
  py=$(python27); boot=$(dirname "$venv")/bm2ironic-$tag-bootstrap
  echo "[$tag] building $venv: $* on $("$py" -V 2>&1) (one to two minutes; cached afterwards)" >&2
  rm -rf "$venv"
  if ! PYTHONPATH=$boot "$py" -m virtualenv --version >/dev/null 2>&1; then
    "$py" -m pip install -q --target "$boot" 'virtualenv<20.22' >&2 \
      || { echo "[$tag] ERROR: installing virtualenv for Python 2.7 failed" >&2; exit 1; }
  fi
  PYTHONPATH=$boot "$py" -m virtualenv -q "$venv" >/dev/null
  "$venv/bin/pip" install -q "$@" >"$venv.pip.log" 2>&1 \
    || { tail -30 "$venv.pip.log" >&2; echo "[$tag] ERROR: pip install $* failed (log: $venv.pip.log)" >&2; exit 1; }
  "$venv/bin/python" -c "$check" || { echo "[$tag] ERROR: the venv does not import what it is for ($check)" >&2; exit 1; }
  echo "$spec" > "$venv/.spec"
  echo "[$tag] ready in $((SECONDS - t0)) s" >&2
  echo "$venv"
}
