#!/usr/bin/env bash
# Build LLM repositories on a GPU machine, as the paper does (Qwen3-4B-Instruct-2507, 500 seeds):
# serve the model with vLLM, run `isg build --builder llm` against it (JSON-schema constrained
# replies through vLLM's structured outputs), then print built / failed per stage, model calls,
# tokens and throughput, and the diversity of the built Specs beside the procedural builder's.
#
#   benchmarks/vllm_build.sh                 # GPU: vllm serve + isg build + report
#   benchmarks/vllm_build.sh --stub          # CPU: a scripted OpenAI server instead of vLLM
#
# Environment (defaults; --stub: scripted-model, 0:40, 4, runs/llm-specs-stub): MODEL
# (Qwen/Qwen3-4B-Instruct-2507), SEEDS (0:500), CONCURRENCY (64), CACHE (runs/llm-specs),
# PORT (8000), MAX_MODEL_LEN (16384), TEMPERATURE (0.7), PYTHON (python3), FAULTS (stub only:
# the first N design and dependents replies are faulty, default 3).
# Needs `pip install -e ".[eval]"` (and vllm on the GPU machine). Resumable: rerun to finish.
set -euo pipefail
cd "$(dirname "$0")/.."

STUB=0
if [[ "${1:-}" == "--stub" ]]; then STUB=1; shift; fi
if [[ $STUB == 1 ]]; then
    : "${MODEL:=scripted-model}" "${SEEDS:=0:40}" "${CONCURRENCY:=4}" "${CACHE:=runs/llm-specs-stub}"
else
    : "${MODEL:=Qwen/Qwen3-4B-Instruct-2507}" "${SEEDS:=0:500}" "${CONCURRENCY:=64}"
    : "${CACHE:=runs/llm-specs}"
    command -v vllm >/dev/null || { echo "vllm is not installed (pip install vllm)" >&2; exit 1; }
fi
PORT=${PORT:-8000}
MAX_MODEL_LEN=${MAX_MODEL_LEN:-16384}
TEMPERATURE=${TEMPERATURE:-0.7}
PYTHON=${PYTHON:-python3}
URL="http://127.0.0.1:${PORT}/v1"
LOG=$(mktemp -t isg-llm-server.XXXXXX.log)

if [[ $STUB == 1 ]]; then
    "$PYTHON" benchmarks/llm_build.py stub-server --port "$PORT" --faults "${FAULTS:-3}" >"$LOG" 2>&1 &
else
    vllm serve "$MODEL" --port "$PORT" --max-model-len "$MAX_MODEL_LEN" \
        --gpu-memory-utilization "${GPU_MEMORY_UTILIZATION:-0.9}" >"$LOG" 2>&1 &
fi
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true; wait $SERVER 2>/dev/null || true' EXIT

for _ in $(seq 1 600); do  # up to 10 minutes for the model to load
    if curl -sf "$URL/models" >/dev/null 2>&1; then break; fi
    if ! kill -0 $SERVER 2>/dev/null; then echo "the server died:"; tail -20 "$LOG"; exit 1; fi
    sleep 1
done
curl -sf "$URL/models" >/dev/null || { echo "no server at $URL"; tail -20 "$LOG"; exit 1; }

echo "== isg build: $MODEL, seeds $SEEDS, cache $CACHE, concurrency $CONCURRENCY (load: $(uptime | sed 's/.*load/load/'))"
status=0
"$PYTHON" -m isg_gym.cli build --builder llm --backend openai --model "$MODEL" --base-url "$URL" \
    --seeds "$SEEDS" --cache "$CACHE" --concurrency "$CONCURRENCY" \
    --temperature "$TEMPERATURE" --max-tokens 2048 --no-progress || status=$?
echo "== report ($CACHE)"
"$PYTHON" benchmarks/llm_build.py report "$CACHE" --model "$MODEL"
exit $status
