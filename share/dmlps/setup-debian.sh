#!/bin/sh
# Installs what building, testing and running dmlps needs on Debian (12 or
# later): the compiler and CMake, the libraries, scdoc for the man pages and
# the Fashion-MNIST data set, gnuplot for the trace plots, clang and its
# sanitizer and libFuzzer runtimes for check-hardening.sh, clang-format for
# the formatting test. Uses sudo unless
# already root; does nothing when everything is present.
set -eu
packages="g++ make cmake cppzmq-dev libeigen3-dev libcxxopts-dev libspdlog-dev
libmsgpack-cxx-dev doctest-dev zlib1g-dev scdoc dataset-fashion-mnist gnuplot-nox
clang libclang-rt-dev clang-format"
# Open MPI's mpirun and iproute2's ip and tc, for the launcher and multi-host tests.
packages="$packages openmpi-bin iproute2"
# pybind11 and NumPy for the Python module (python/), PyTorch for its torch
# adapter and tests, a threaded OpenBLAS for NumPy and PyTorch.
packages="$packages pybind11-dev python3-dev python3-numpy python3-torch libopenblas0-pthread"
# pip, setuptools, wheel and venv for pip install of the Python package
# (python/pyproject.toml) and its test.
packages="$packages python3-pip python3-setuptools python3-wheel python3-venv"
# PyYAML for the test that reads the Kubernetes manifest in launch/.
packages="$packages python3-yaml"
# jq for share/dmlps/experiments/reproduce-all.sh and its test.
packages="$packages jq"
# fortunes: the text corpus of the language example
# (share/dmlps/examples/torch-charlm) and its test.
packages="$packages fortunes"
missing=""
for p in $packages; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" ||
    missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "setup-debian.sh: installing$missing" >&2
sudo=""
[ "$(id -u)" -eq 0 ] || sudo=sudo
$sudo apt-get update -qq
# shellcheck disable=SC2086
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends $missing >&2
