#!/usr/bin/env bash
# Issue 42: data-parallel learners under MPI. Installs Open MPI and libclang from Debian when
# `mpirun` or the MPI headers are missing (the `mpi` crate's build script needs both), lints the
# `mpi` feature's code, then runs the exactness and fault tests under `mpirun`:
#   tests/data_parallel.rs                 one optimizer-step path on 1, 2 and 3 ranks
#   envrl-examples/tests/distributed_run.rs  `envrl train` on 2 ranks, killed ranks, watchdog
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/envrl-target}"

if ! command -v mpirun > /dev/null || ! [[ -e /usr/include/x86_64-linux-gnu/mpi/mpi.h || -e /usr/include/mpi.h ]] \
  || ! compgen -G "/usr/lib/llvm-*/lib/libclang*.so*" > /dev/null; then
  SUDO=""
  if [[ $(id -u) != 0 ]]; then SUDO=sudo; fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq openmpi-bin libopenmpi-dev libclang-dev > /dev/null
fi
mpirun --version | head -1

# mpirun refuses root without these (CI runs as root).
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
FEATURES=envrl/mpi,envrl-examples/mpi,envrl-tests/mpi
cargo clippy -p envrl -p envrl-examples -p envrl-tests --features "$FEATURES" --all-targets -- -D warnings
# One build for both test targets (the features unified), not one per package.
cargo test --release -p envrl-tests -p envrl-examples --features "$FEATURES" \
  --test data_parallel --test distributed_run -- --nocapture 2>&1 \
  | sed '/^\[\(WARN\|INFO\) \]/d'
