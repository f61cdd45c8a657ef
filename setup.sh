#!/usr/bin/env bash
# Installs everything Horizon needs on a fresh Debian or Ubuntu machine, idempotently:
# system packages (bubblewrap for the sandbox, git, a JDK and JUnit 5 for Java repositories, Go and
# Node.js and npm for Go and JavaScript repositories, ripgrep for code search, Chromium for the
# web UI's browser tests, cmake and g++, curl for the service's documented examples, a container
# engine (Debian's docker.io, when neither Docker's daemon nor podman is present) and mmdebstrap for the
# Terminal-Bench / Harbor tasks that run in a container built from their Dockerfile),
# a virtual environment in .venv, and Horizon itself with its Python dependencies
# (llama-cpp-python compiles from source the first time: about 6 minutes on 2 cores),
# the trainers' extras (train: TRL, transformers, datasets, a CPU build of torch; verl), so that the
# trainer tests run here and in CI.
set -euo pipefail
cd "$(dirname "$0")"

need=()
command -v bwrap >/dev/null || need+=(bubblewrap)
command -v git >/dev/null || need+=(git)
command -v javac >/dev/null || need+=(default-jdk-headless)
[ -f /usr/share/java/junit-platform-console-standalone.jar ] || need+=(junit5)
command -v rg >/dev/null || need+=(ripgrep)  # search_code's fast path
command -v go >/dev/null || need+=(golang-go)  # go test, for Go repositories
command -v node >/dev/null || need+=(nodejs)  # node --test, for JavaScript repositories
command -v npm >/dev/null || need+=(npm)  # npm ci from a JavaScript repository's lockfile
command -v chromium >/dev/null || need+=(chromium)  # the agent ui browser tests (driven by Playwright)
command -v cmake >/dev/null || need+=(cmake)
command -v g++ >/dev/null || need+=(g++)
command -v curl >/dev/null || need+=(curl)  # docs/service.md's examples (tests/integration/test_readme.py runs them)
python3 -c 'import ensurepip, venv' 2>/dev/null || need+=(python3-venv)
# Terminal-Bench / Harbor tasks run in a container (core/sandbox/container.py); the local base images
# are built with mmdebstrap (core/sandbox/images.py). Podman, where it is installed instead, is used as it is.
# The daemon is what counts: a machine may have a docker client alone (.ci/run starts dockerd).
command -v dockerd >/dev/null || command -v podman >/dev/null || need+=(docker.io)
command -v mmdebstrap >/dev/null || need+=(mmdebstrap)
if [ ${#need[@]} -gt 0 ]; then
  sudo=""; [ "$(id -u)" -ne 0 ] && sudo="sudo"
  echo "setup: installing Debian packages: ${need[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${need[@]}" >/dev/null
fi

# Jest, for JavaScript repositories that use it (the test of the jest runner needs it too); optional.
if command -v npm >/dev/null && [ ! -f "$(npm root -g)/jest/bin/jest.js" ]; then
  npm install -g --silent jest@29 >/dev/null 2>&1 || echo "setup: could not install jest (npm install -g jest@29); jest repositories will not run" >&2
fi

python3 -c 'import sys; sys.exit(sys.version_info < (3, 11))' || { echo "setup: Horizon needs Python 3.11 or newer" >&2; exit 1; }
[ -x .venv/bin/python ] || python3 -m venv .venv
.venv/bin/python -m pip install -q --upgrade pip
# llama.cpp is compiled for a fixed, widely available x86-64 level (AVX2) instead of -march=native:
# virtual machines often advertise AMX tiles their kernel will not let a process use, and a native
# build then dies with "Illegal instruction" on the first matrix product.
if [ "$(uname -m)" = x86_64 ]; then
  export CMAKE_ARGS="${CMAKE_ARGS:--DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON}"
fi
# torch for the train extra: a CPU build, installed first so that the extra's loose `torch>=2.5` is met by it
# (PyPI's default build is the CUDA one, gigabytes): a CPU wheel on disk in pip's find-links folder when there
# is one (HORIZON_TORCH_WHEEL names one), else PyTorch's CPU index.
if ! .venv/bin/python -c 'import torch' 2>/dev/null; then
  wheel="${HORIZON_TORCH_WHEEL:-$(ls "${PIP_FIND_LINKS:-/opt/wheels}"/torch-*+cpu-*.whl 2>/dev/null | sort -V | tail -n 1 || true)}"
  if [ -n "$wheel" ]; then
    .venv/bin/python -m pip install -q "$wheel"
  else
    .venv/bin/python -m pip install -q torch --index-url https://download.pytorch.org/whl/cpu
  fi
fi
.venv/bin/python -m pip install -q -e '.[all,dev,train,verl]'
echo "setup: done (.venv/bin/agent is the command line)"
