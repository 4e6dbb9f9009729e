#!/usr/bin/env bash
# Local dev services for a cluster-style run, all on 127.0.0.1:
#   moto S3 server (:9090), MLflow tracking server (:5000, sqlite + artifacts on S3), Ray head (:6379, dashboard :8265)
#
#   bash infra/dev_services.sh start    # start them; writes .dev-services/env.sh to source
#   source .dev-services/env.sh         # AWS_*, RAY_ADDRESS, MLFLOW_TRACKING_URI for your shell
#   bash infra/dev_services.sh status
#   bash infra/dev_services.sh stop
#
# The Ray head runs with RAY_AUTH_MODE=disabled because it listens on loopback only. Ray 2.60's
# secure default is token authentication: on a shared network start the head without that
# variable and give clients RAY_AUTH_MODE=token (token in ~/.ray/auth_token).
set -euo pipefail
cd "$(dirname "$0")/.."
STATE=.dev-services
S3_PORT=${S3_PORT:-9090}
MLFLOW_PORT=${MLFLOW_PORT:-5000}
RAY_PORT=${RAY_PORT:-6379}
DASHBOARD_PORT=${DASHBOARD_PORT:-8265}
BUCKET=${BUCKET:-scrutineer-runs}
RAY_TMP=/tmp/scrutineer-dev-ray

export AWS_ENDPOINT_URL="http://127.0.0.1:${S3_PORT}" AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing \
  AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 MLFLOW_DISABLE_TELEMETRY=true RAY_USAGE_STATS_ENABLED=0

wait_port() { for _ in $(seq 1 300); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.2; done; echo "port $1 never opened" >&2; return 1; }

start() {
  mkdir -p "$STATE"
  if [ ! -f "$STATE/moto.pid" ] || ! kill -0 "$(cat "$STATE/moto.pid")" 2>/dev/null; then
    nohup moto_server -H 127.0.0.1 -p "$S3_PORT" > "$STATE/moto.log" 2>&1 & echo $! > "$STATE/moto.pid"
    wait_port "$S3_PORT"
    python -c "import boto3; c=boto3.client('s3'); [c.create_bucket(Bucket=b) for b in ('$BUCKET','scrutineer-mlflow')]"
  fi
  if [ ! -f "$STATE/mlflow.pid" ] || ! kill -0 "$(cat "$STATE/mlflow.pid")" 2>/dev/null; then
    python mlflow/launch_server.py --detach --port "$MLFLOW_PORT" \
      --backend "sqlite:///$PWD/$STATE/mlflow.db" --artifacts s3://scrutineer-mlflow/artifacts > "$STATE/mlflow.pid"
  fi
  if ! ray status --address "127.0.0.1:${RAY_PORT}" > /dev/null 2>&1; then
    RAY_AUTH_MODE=disabled ray start --head --node-ip-address=127.0.0.1 --port="$RAY_PORT" \
      --dashboard-host=127.0.0.1 --dashboard-port="$DASHBOARD_PORT" --temp-dir="$RAY_TMP" --disable-usage-stats > "$STATE/ray.log" 2>&1
  fi
  cat > "$STATE/env.sh" <<ENV
export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
export MLFLOW_TRACKING_URI=http://127.0.0.1:${MLFLOW_PORT} MLFLOW_DISABLE_TELEMETRY=true
export RAY_ADDRESS=http://127.0.0.1:${DASHBOARD_PORT} RAY_AUTH_MODE=disabled
ENV
  status
  echo "source $STATE/env.sh, then: ray job submit --working-dir . -- python jobs/run_corpus.py --config configs/cluster.toml"
}

stop() {
  pkill -TERM -f "$RAY_TMP" 2>/dev/null || true  # only this head (ray stop would stop every Ray here)
  for svc in mlflow moto; do
    if [ -f "$STATE/$svc.pid" ]; then kill "$(cat "$STATE/$svc.pid")" 2>/dev/null || true; rm -f "$STATE/$svc.pid"; fi
  done
  echo "stopped"
}

status() {
  for svc in moto mlflow; do
    if [ -f "$STATE/$svc.pid" ] && kill -0 "$(cat "$STATE/$svc.pid")" 2>/dev/null; then echo "$svc: running (pid $(cat "$STATE/$svc.pid"))"; else echo "$svc: stopped"; fi
  done
  if ray status --address "127.0.0.1:${RAY_PORT}" > /dev/null 2>&1; then echo "ray head: running (127.0.0.1:${RAY_PORT}, dashboard :${DASHBOARD_PORT})"; else echo "ray head: stopped"; fi
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
