#!/usr/bin/env bash
# Evaluate a small open model served by vLLM on isg-500 (needs one GPU).
#
#   benchmarks/vllm_eval.sh                                   # Qwen/Qwen2.5-0.5B-Instruct, 50 episodes
#   MODEL=Qwen/Qwen3-0.6B EPISODES=100 benchmarks/vllm_eval.sh
#
# Installs vLLM when it is missing, serves MODEL with Hermes tool calling
# (`vllm serve --enable-auto-tool-choice --tool-call-parser hermes`), waits until the server
# answers, runs `isg eval --backend openai` against it, prints accuracy and episodes/second
# from RESULTS/summary.json, and stops the server (also on error or Ctrl-C). Environment:
# MODEL, PORT, SPLIT, EPISODES, CONCURRENCY, RESULTS (a new directory), READY_TIMEOUT_S, PYTHON.
set -euo pipefail

MODEL="${MODEL:-Qwen/Qwen2.5-0.5B-Instruct}"
PORT="${PORT:-8000}"
SPLIT="${SPLIT:-isg-500}"
EPISODES="${EPISODES:-50}"
CONCURRENCY="${CONCURRENCY:-16}"
RESULTS="${RESULTS:-results/vllm-$(basename "$MODEL")-$(date +%Y%m%d-%H%M%S)}"
READY_TIMEOUT_S="${READY_TIMEOUT_S:-600}"
PYTHON="${PYTHON:-python3}"
LOG="${RESULTS}.server.log"

if ! "$PYTHON" -c "import vllm" 2>/dev/null; then
    echo "installing vLLM ..."
    "$PYTHON" -m pip install --quiet vllm
fi
command -v isg >/dev/null || { echo "isg is not on PATH: pip install -e ." >&2; exit 1; }
command -v curl >/dev/null || { echo "curl is needed to poll the server" >&2; exit 1; }

mkdir -p "$(dirname "$RESULTS")"
SERVER_PID=""
stop_server() {
    if [[ -n "$SERVER_PID" ]] && kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "stopping vLLM (pid $SERVER_PID)"
        kill "$SERVER_PID" 2>/dev/null || true
        for _ in $(seq 1 30); do kill -0 "$SERVER_PID" 2>/dev/null || break; sleep 1; done
        kill -9 "$SERVER_PID" 2>/dev/null || true
        wait "$SERVER_PID" 2>/dev/null || true
    fi
}
trap stop_server EXIT
trap "exit 130" INT TERM

echo "serving $MODEL on port $PORT (log: $LOG)"
vllm serve "$MODEL" --port "$PORT" --enable-auto-tool-choice --tool-call-parser hermes \
    >"$LOG" 2>&1 &
SERVER_PID=$!

deadline=$((SECONDS + READY_TIMEOUT_S))
until curl -sf "http://127.0.0.1:${PORT}/v1/models" >/dev/null; do
    if ! kill -0 "$SERVER_PID" 2>/dev/null; then
        echo "vLLM exited before it was ready; last lines of $LOG:" >&2
        tail -n 40 "$LOG" >&2
        exit 1
    fi
    if ((SECONDS > deadline)); then
        echo "vLLM not ready after ${READY_TIMEOUT_S}s; see $LOG" >&2
        exit 1
    fi
    sleep 2
done
echo "server ready"

start=$("$PYTHON" -c "import time; print(time.time())")
OPENAI_API_KEY="${OPENAI_API_KEY:-EMPTY}" isg eval --backend openai --model "$MODEL" \
    --base-url "http://127.0.0.1:${PORT}/v1" --split "$SPLIT" --episodes "$EPISODES" \
    --out "$RESULTS" --concurrency "$CONCURRENCY" --no-progress
end=$("$PYTHON" -c "import time; print(time.time())")

"$PYTHON" - "$RESULTS/summary.json" "$start" "$end" <<'EOF'
import json
import sys

summary = json.load(open(sys.argv[1]))
elapsed = float(sys.argv[3]) - float(sys.argv[2])
n, acc, ci = summary["n"], summary["accuracy"], summary.get("ci")
if not n:
    sys.exit("no episodes were recorded")
interval = f" (95% CI {ci[0]:.3f}-{ci[1]:.3f})" if ci else ""
print(f"model      {summary.get('run', {}).get('model', '?')}")
print(f"accuracy   {acc:.3f}{interval}, {summary['correct']}/{n} correct")
print(f"throughput {n / elapsed:.2f} episodes/s ({elapsed:.0f} s for {n} episodes, warm server)")
print(f"outcomes   {summary.get('outcomes')}")
EOF
