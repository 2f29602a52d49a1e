# python27: the Python 2.7 the Juno-era venvs are made with (scripts/juno.sh, scripts/glance.sh):
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
