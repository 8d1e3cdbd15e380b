#!/bin/sh
# Installs the Debian packages Loom needs, or stops with the exact command to run.
#   tools/deps.sh build   what `make run` / `make build` need (compiler, CMake, HTTP and JSON
#                         libraries, Vulkan headers, loader and shader compiler)
#   tools/deps.sh test    the above plus what `make test` needs (Mesa's software Vulkan device
#                         and validation layers, Node.js + npm for the HTTP client tests, Python's
#                         jsonschema as an independent validator)
# Set LOOM_NO_DEPS=1 to skip the check (e.g. a machine that is set up by other means).
# On a system without dpkg nothing is installed: CMake then builds what it finds.
set -eu
what=${1:-build}
[ "${LOOM_NO_DEPS:-0}" = 1 ] && exit 0
command -v dpkg-query >/dev/null 2>&1 || { echo "deps: no dpkg here; install the packages listed in tools/deps.sh yourself"; exit 0; }

pkgs="build-essential cmake pkg-config libmicrohttpd-dev libjansson-dev libvulkan-dev glslc"
if [ "$what" = test ]; then
  pkgs="$pkgs mesa-vulkan-drivers vulkan-validationlayers python3 python3-jsonschema tmux"
fi
missing=""
for p in $pkgs; do
  st=$(dpkg-query -W -f='${Status}' "$p" 2>/dev/null || true)
  case "$st" in *"install ok installed"*) ;; *) missing="$missing $p" ;; esac
done
# Node.js: any install that provides node and npm will do (Debian's or NodeSource's).
if [ "$what" = test ] && ! { command -v node >/dev/null 2>&1 && command -v npm >/dev/null 2>&1; }; then
  missing="$missing nodejs npm"
fi
[ -z "$missing" ] && exit 0

cmd="apt-get install -y --no-install-recommends$missing"
if [ "$(id -u)" = 0 ]; then SUDO=""
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then SUDO="sudo"
else
  echo "deps: missing Debian packages:$missing"
  echo "deps: run:  sudo apt-get update && sudo $cmd"
  exit 1
fi
echo "deps: installing$missing"
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q >/dev/null
$SUDO $cmd >/dev/null
