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
# the Ray temp dir (.dev-services/ray; when that path is too long for Ray's unix sockets, Ray is given
# a short symlink to it, /tmp/sdr-XXXXXXXX, recorded in .dev-services/ray_tmp). Two checkouts on one
# machine never share ports or processes, and `stop` never touches another checkout's Ray
# (`ray stop` would stop every Ray on the machine).
#
# Each service runs in a session of its own (setsid); `stop` signals every process of those
# sessions, whatever it renamed itself to (Ray's agents become ray::DashboardAgent, the client
# server's command line does not name the temp dir), waits until all are gone (SIGKILL after
# STOP_WAIT_S), removes the Ray temp dir, and exits 1 naming any survivor.
#
# Submitted jobs run with the head's environment, not the submitter's: the head starts with the
# tracking URI and the S3 settings of these services, so `ray job submit` logs to this MLflow server.
#
set -eEuo pipefail  # -E: the ERR trap of `start` fires inside the functions it calls
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
now_ms() { local t=$EPOCHREALTIME; echo $(( ${t%.*} * 1000 + 10#${t#*.} / 1000 )); }
pid_of() { cat "$STATE/$1.pid" 2>/dev/null || true; }
ray_tmp() { cat "$STATE/ray_tmp" 2>/dev/null || true; }
session_pids() {  # live (not zombie) processes of session $1; nothing for an empty or 0 id (0 means "mine")
  [ -n "${1:-}" ] && [ "$1" != 0 ] || return 0
  ps -s "$1" -o pid=,stat= 2>/dev/null | awk '$2 !~ /^Z/ {print $1}' || true
}
ray_pids() {  # every live process of this checkout's Ray head: its session, and any that names its temp dir
  local tmp; tmp=$(ray_tmp)
  { session_pids "$(pid_of ray)"; [ -z "$tmp" ] || pgrep -f -- "$tmp" 2>/dev/null || true; } | sort -un
}
service_pids() {  # every live process of moto, mlflow (their sessions) and the Ray head
  { for svc in moto mlflow; do alive "$(pid_of "$svc")" && echo "$(pid_of "$svc")"; session_pids "$(pid_of "$svc")"; done
    # an MLflow server whose launcher gave up before writing its pid still names this checkout's database
    pgrep -f -- "sqlite:///$STATE/mlflow.db" 2>/dev/null || true
    ray_pids; } | sort -un
}
remove_ray_tmp() {  # the head's temp dir under .dev-services/, and the short link to it if there is one
  local tmp; tmp=$(ray_tmp)
  if [ -n "$tmp" ] && [ -L "$tmp" ]; then rm -f "$tmp"; fi
  case "$tmp" in /tmp/scrutineer-dev-ray-*) rm -rf "$tmp" ;; esac  # where older versions of this script put it
  rm -rf "$STATE/ray"
  rm -f "$STATE/ray_tmp" "$STATE/ray.pid"
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
  # A start that fails part way (a port never opens, MLflow is not healthy in time) stops what it started.
  trap 'echo "start failed; stopping what it started" >&2; trap - ERR; stop >&2 || true' ERR
  if alive "$(pid_of moto)" || alive "$(pid_of mlflow)" || [ -n "$(ray_pids)" ]; then
    load_ports
  else
    choose_ports; load_ports
    remove_ray_tmp  # a head that is gone leaves nothing to keep
    local tmp=$STATE/ray
    mkdir -p "$tmp"
    # A unix socket path must fit in 107 bytes: <tmp>/session_<date>_<pid>/sockets/plasma_store adds ~64.
    if [ "${#tmp}" -gt 40 ]; then tmp=$(mktemp -u /tmp/sdr-XXXXXXXX); ln -s "$STATE/ray" "$tmp"; fi
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
    # In a session of its own (the wrapper writes the session id, its pid, before it becomes `ray
    # start`): every process the head starts stays in it. The tracking URI is in the head's
    # environment because submitted jobs get the head's, not the submitter's.
    MLFLOW_TRACKING_URI=http://127.0.0.1:${MLFLOW_PORT} SCRUTINEER_TRACKING_URI=http://127.0.0.1:${MLFLOW_PORT} \
    RAY_AUTH_MODE=disabled setsid bash -c 'echo $$ > "$0"; exec "$@"' "$STATE/ray.pid" ray start --head --node-ip-address=127.0.0.1 --port="$RAY_PORT" \
      --dashboard-host=127.0.0.1 --dashboard-port="$DASHBOARD_PORT" --include-dashboard=true \
      --dashboard-agent-listen-port="$RAY_AGENT_HTTP_PORT" --dashboard-agent-grpc-port="$RAY_AGENT_GRPC_PORT" \
      --metrics-export-port="$RAY_METRICS_PORT" --runtime-env-agent-port="$RAY_RUNTIME_ENV_AGENT_PORT" \
      --ray-client-server-port="$RAY_CLIENT_PORT" --node-manager-port="$RAY_NODE_MANAGER_PORT" \
      --object-manager-port="$RAY_OBJECT_MANAGER_PORT" \
      --temp-dir="$(ray_tmp)" --disable-usage-stats > "$STATE/ray.log" 2>&1 \
      || { echo "ray start failed; see $STATE/ray.log" >&2; tail -20 "$STATE/ray.log" >&2; trap - ERR; stop >&2 || true; exit 1; }
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
  local pids=() left=() pid sid
  read -r -a pids <<< "$(service_pids | tr '\n' ' ')"
  for svc in moto mlflow ray; do  # each service's process group at once, then every process of its session
    sid=$(pid_of "$svc")
    if [ -n "$(session_pids "$sid")" ]; then kill -TERM -- "-$sid" 2>/dev/null || true; fi
  done
  [ "${#pids[@]}" -eq 0 ] || kill -TERM "${pids[@]}" 2>/dev/null || true
  # milliseconds: $SECONDS ticks whole seconds, so "SECONDS + 2" could pass after 1.01 s
  local deadline=$(( $(now_ms) + STOP_WAIT_S * 1000 )) killed=0
  while :; do
    read -r -a left <<< "$(service_pids | tr '\n' ' ')"
    for pid in "${left[@]}"; do  # workers and agents started meanwhile count too
      [[ " ${pids[*]} " == *" $pid "* ]] || { kill -TERM "$pid" 2>/dev/null || true; pids+=("$pid"); }
    done
    [ "${#left[@]}" -eq 0 ] && break
    if [ "$(now_ms)" -ge "$deadline" ]; then
      [ "$killed" -eq 1 ] && break
      kill -KILL "${left[@]}" 2>/dev/null || true; killed=1; deadline=$(( $(now_ms) + 5000 ))
    fi
    sleep 0.2
  done
  if [ "${#left[@]}" -gt 0 ]; then  # keep the pid files and the temp dir: something still uses them
    echo "still running after ${STOP_WAIT_S}s and SIGKILL:" >&2
    ps -o pid=,args= -p "$(IFS=,; echo "${left[*]}")" >&2 || true
    return 1
  fi
  local where; where=$(ray_tmp)
  rm -f "$STATE/moto.pid" "$STATE/mlflow.pid"
  remove_ray_tmp
  echo "stopped ${#pids[@]} processes (moto, mlflow, ray head under ${where:-?}, now removed); none left"
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
