#!/usr/bin/env bash
# Local stand-ins for a cluster, all on 127.0.0.1 and all owned by this checkout:
#   moto S3 server, MLflow tracking server (sqlite + artifacts on S3), Ray head (GCS + dashboard).
#
#   bash infra/dev_services.sh start    # free ports are picked; writes .dev-services/env.sh
#   source .dev-services/env.sh         # AWS_*, MLFLOW_TRACKING_URI, RAY_ADDRESS (dashboard) for your shell
#   bash infra/dev_services.sh status   # exit 0 when all three run, 1 otherwise
#   bash infra/dev_services.sh stop     # stops exactly what `start` started here; exit 1 if anything survives
#
# Everything lives under this checkout's .dev-services/: PIDs, ports, logs, the MLflow database and
# the Ray temp dir (or, when that path is too long for Ray's unix sockets, a unique one under /tmp
# recorded in .dev-services/ray_tmp). Two checkouts on one machine never share ports or processes,
# and `stop` never touches another checkout's Ray (`ray stop` would stop every Ray on the machine).
#
# Loopback only: Ray rewrites `--node-ip-address=127.0.0.1` to the machine's outward address
# (resolve_ip_for_localhost -> get_node_ip_address), and the GCS, raylet, agents and workers then
# listen there. RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0 makes that lookup answer 127.0.0.1, so every
# Ray process of the head binds 127.0.0.1 (tests/infra/test_ray_loopback.py checks the sockets).
# The head runs with RAY_AUTH_MODE=disabled for the same reason; Ray 2.60's secure default is token
# authentication: on a shared network start the head without that variable and give clients
# RAY_AUTH_MODE=token (token in ~/.ray/auth_token).
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
STATE=$ROOT/.dev-services
BUCKET=${BUCKET:-scrutineer-runs}
STOP_WAIT_S=${STOP_WAIT_S:-20}

export AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1 \
  MLFLOW_DISABLE_TELEMETRY=true RAY_USAGE_STATS_ENABLED=0 RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0

free_ports() {  # N distinct ports that nothing listens on now (kept open together so they differ)
  python - "$1" <<'PY'
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
PY
}

wait_port() { for _ in $(seq 1 600); do (echo > "/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.2; done; echo "port $1 never opened" >&2; return 1; }
alive() {  # a zombie (exited, not yet reaped by its parent) counts as gone
  [ -n "${1:-}" ] && kill -0 "$1" 2>/dev/null && [ "$(ps -o stat= -p "$1" 2>/dev/null | cut -c1)" != "Z" ]
}
pid_of() { cat "$STATE/$1.pid" 2>/dev/null || true; }
ray_tmp() { cat "$STATE/ray_tmp" 2>/dev/null || true; }
ray_pids() {  # every live process whose command line carries this checkout's Ray temp dir
  local tmp; tmp=$(ray_tmp)
  [ -n "$tmp" ] || return 0
  pgrep -f -- "$tmp" 2>/dev/null || true
}

load_ports() { [ -f "$STATE/ports.env" ] && . "$STATE/ports.env"; }

choose_ports() {
  local p; read -r -a p <<< "$(free_ports 12)"
  cat > "$STATE/ports.env" <<PORTS
S3_PORT=${S3_PORT:-${p[0]}}
MLFLOW_PORT=${MLFLOW_PORT:-${p[1]}}
RAY_PORT=${RAY_PORT:-${p[2]}}
DASHBOARD_PORT=${DASHBOARD_PORT:-${p[3]}}
RAY_AGENT_HTTP_PORT=${p[4]}
RAY_AGENT_GRPC_PORT=${p[5]}
RAY_METRICS_PORT=${p[6]}
RAY_RUNTIME_ENV_AGENT_PORT=${p[7]}
RAY_CLIENT_PORT=${p[8]}
RAY_NODE_MANAGER_PORT=${p[9]}
RAY_OBJECT_MANAGER_PORT=${p[10]}
PORTS
}

start() {
  mkdir -p "$STATE"
  if alive "$(pid_of moto)" || alive "$(pid_of mlflow)" || [ -n "$(ray_pids)" ]; then
    load_ports
  else
    choose_ports; load_ports
    local tmp=$STATE/ray
    # A unix socket path must fit in 107 bytes: <tmp>/session_<date>_<pid>/sockets/plasma_store adds ~70.
    if [ "${#tmp}" -gt 36 ]; then tmp=$(mktemp -d /tmp/scrutineer-dev-ray-XXXXXX); fi
    echo "$tmp" > "$STATE/ray_tmp"
  fi
  export AWS_ENDPOINT_URL="http://127.0.0.1:${S3_PORT}"
  if ! alive "$(pid_of moto)"; then
    nohup setsid moto_server -H 127.0.0.1 -p "$S3_PORT" > "$STATE/moto.log" 2>&1 & echo $! > "$STATE/moto.pid"
    wait_port "$S3_PORT"
    python -c "import boto3; c=boto3.client('s3'); [c.create_bucket(Bucket=b) for b in ('$BUCKET','scrutineer-mlflow')]"
  fi
  if ! alive "$(pid_of mlflow)"; then
    python mlflow/launch_server.py --detach --host 127.0.0.1 --port "$MLFLOW_PORT" \
      --backend "sqlite:///$STATE/mlflow.db" --artifacts s3://scrutineer-mlflow/artifacts > "$STATE/mlflow.pid"
  fi
  if [ -z "$(ray_pids)" ]; then
    RAY_AUTH_MODE=disabled ray start --head --node-ip-address=127.0.0.1 --port="$RAY_PORT" \
      --dashboard-host=127.0.0.1 --dashboard-port="$DASHBOARD_PORT" --include-dashboard=true \
      --dashboard-agent-listen-port="$RAY_AGENT_HTTP_PORT" --dashboard-agent-grpc-port="$RAY_AGENT_GRPC_PORT" \
      --metrics-export-port="$RAY_METRICS_PORT" --runtime-env-agent-port="$RAY_RUNTIME_ENV_AGENT_PORT" \
      --ray-client-server-port="$RAY_CLIENT_PORT" --node-manager-port="$RAY_NODE_MANAGER_PORT" \
      --object-manager-port="$RAY_OBJECT_MANAGER_PORT" \
      --temp-dir="$(ray_tmp)" --disable-usage-stats > "$STATE/ray.log" 2>&1 \
      || { echo "ray start failed; see $STATE/ray.log" >&2; tail -20 "$STATE/ray.log" >&2; exit 1; }
    wait_port "$DASHBOARD_PORT"
  fi
  cat > "$STATE/env.sh" <<ENV
# Written by infra/dev_services.sh start for the services of $ROOT; source it.
export AWS_ENDPOINT_URL=$AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID=testing AWS_SECRET_ACCESS_KEY=testing
export AWS_DEFAULT_REGION=us-east-1 AWS_REGION=us-east-1
export MLFLOW_TRACKING_URI=http://127.0.0.1:${MLFLOW_PORT} SCRUTINEER_TRACKING_URI=http://127.0.0.1:${MLFLOW_PORT}
export MLFLOW_DISABLE_TELEMETRY=true
export RAY_ADDRESS=http://127.0.0.1:${DASHBOARD_PORT} SCRUTINEER_RAY_GCS=127.0.0.1:${RAY_PORT}
export RAY_AUTH_MODE=disabled RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0
ENV
  status
  echo "source $STATE/env.sh, then: ray job submit --working-dir . -- python jobs/run_corpus.py --config configs/cluster.toml"
}

stop() {
  local pids=() pid
  for svc in moto mlflow; do
    pid=$(pid_of "$svc")
    # Both run in their own session (setsid / start_new_session): the group holds their workers.
    if alive "$pid"; then kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null || true; pids+=("$pid"); fi
  done
  read -r -a ray <<< "$(ray_pids | tr '\n' ' ')"
  if [ "${#ray[@]}" -gt 0 ]; then kill -TERM "${ray[@]}" 2>/dev/null || true; pids+=("${ray[@]}"); fi
  local deadline=$((SECONDS + STOP_WAIT_S)) left=()
  while :; do
    left=(); for pid in "${pids[@]}"; do alive "$pid" && left+=("$pid"); done
    read -r -a late <<< "$(ray_pids | tr '\n' ' ')"  # workers the raylet started meanwhile
    for pid in "${late[@]}"; do [[ " ${pids[*]} " == *" $pid "* ]] || { kill -TERM "$pid" 2>/dev/null || true; pids+=("$pid"); left+=("$pid"); }; done
    [ "${#left[@]}" -eq 0 ] && break
    if [ "$SECONDS" -ge "$deadline" ]; then
      kill -KILL "${left[@]}" 2>/dev/null || true; sleep 1
      left=(); for pid in "${pids[@]}"; do alive "$pid" && left+=("$pid"); done
      break
    fi
    sleep 0.2
  done
  rm -f "$STATE/moto.pid" "$STATE/mlflow.pid"
  if [ "${#left[@]}" -gt 0 ]; then
    echo "still running after ${STOP_WAIT_S}s and SIGKILL: ${left[*]}" >&2
    ps -o pid=,args= -p "$(IFS=,; echo "${left[*]}")" >&2 || true
    return 1
  fi
  echo "stopped ${#pids[@]} processes (moto, mlflow, ray head under $(ray_tmp)); none left"
}

status() {
  local rc=0 pid
  load_ports || true
  for svc in moto mlflow; do
    pid=$(pid_of "$svc")
    if alive "$pid"; then echo "$svc: running (pid $pid)"; else echo "$svc: stopped"; rc=1; fi
  done
  local ray; ray=$(ray_pids | wc -l)
  if [ "$ray" -gt 0 ]; then
    echo "ray head: running ($ray processes, GCS 127.0.0.1:${RAY_PORT:-?}, dashboard http://127.0.0.1:${DASHBOARD_PORT:-?})"
  else
    echo "ray head: stopped"; rc=1
  fi
  return $rc
}

case "${1:-}" in
  start) start ;;
  stop) stop ;;
  status) status ;;
  *) echo "usage: $0 start|stop|status" >&2; exit 2 ;;
esac
