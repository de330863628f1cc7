#!/usr/bin/env bash
# The two commands of README.md:
#   bash tools/tessera.sh tour [tour flags...]   build (Release, Serial) and run tessera-tour
#   bash tools/tessera.sh test                   configure, build and run every test (ctest)
# Missing Debian packages are installed with apt-get when this runs as root (or with
# passwordless sudo); otherwise the exact install line is printed and the script stops.
# TESSERA_PRESET selects another CMake preset (default: serial).
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ libeigen3-dev doctest-dev libtrilinos-kokkos-dev gnuplot-nox
          nlohmann-json3-dev libcli11-dev libboost-context-dev libopenmpi-dev openmpi-bin
          libscalapack-openmpi-dev)

ensure_packages() {
  local missing=()
  for p in "${packages[@]}"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  echo "tessera: installing missing Debian packages: ${missing[*]}"
  local sudo=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
      sudo="sudo"
    else
      echo "tessera: cannot install packages without root. Run:" >&2
      echo "  sudo apt-get update && sudo apt-get install -y ${missing[*]}" >&2
      exit 1
    fi
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}"
}

preset="${TESSERA_PRESET:-serial}"
cmd="${1:-}"
shift || true
case "$cmd" in
  tour)
    ensure_packages
    cmake --preset "$preset"
    cmake --build --preset "$preset" --target tessera-tour
    exec "build/$preset/bench/tessera-tour" "$@"
    ;;
  test)
    ensure_packages
    exec cmake --workflow --preset "$preset"
    ;;
  *)
    echo "usage: bash tools/tessera.sh {tour [flags]|test}" >&2
    exit 2
    ;;
esac
