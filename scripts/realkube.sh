#!/usr/bin/env bash
# A real Kubernetes control plane on loopback, built from the published Go modules.
#
#   scripts/realkube.sh build          build etcd, kube-apiserver, kube-scheduler and kubectl
#                                      into the cache (reused when present); prints the bin dir
#   scripts/realkube.sh bin-dir        print the bin dir; exit 1 when the build is missing
#   scripts/realkube.sh up [--scheduler]
#                                      start etcd and kube-apiserver (and kube-scheduler), apply
#                                      deploy/rbac.yaml and deploy/crds/, write a kubeconfig;
#                                      its path is the LAST line of stdout
#   scripts/realkube.sh scheduler-up   start kube-scheduler against the running API server
#   scripts/realkube.sh scheduler-down stop it
#   scripts/realkube.sh down           stop everything `up` started, by PID
#   scripts/realkube.sh env            print the running instance's settings (KEY=value lines)
#
# No kubelet, no controller manager: Node objects are created by hand (as upstream's
# scheduler_perf does), so pods are bound but never run.
#
# The kubeconfig has two contexts on the same cluster: `admin` (the default; a static
# token in group system:masters) and `gangsched` (a static token for the user
# system:serviceaccount:kube-system:gangsched in groups system:serviceaccounts and
# system:serviceaccounts:kube-system, so deploy/rbac.yaml's bindings apply to it, exactly as
# they would to the ServiceAccount's own token).
#
# Environment:
#   GANGSCHED_REALKUBE_CACHE   build cache (default ~/.cache/gangsched-realkube)
#   GANGSCHED_REALKUBE_STATE   state dir: certs, tokens, etcd data, logs, pid files
#                              (default /tmp/gangsched-realkube-$UID)
#   GANGSCHED_REALKUBE_ETCD_PORT, GANGSCHED_REALKUBE_ETCD_PEER_PORT,
#   GANGSCHED_REALKUBE_APISERVER_PORT
#                              ports on 127.0.0.1 (default: free ports)
#   GANGSCHED_REALKUBE_SCHEDULER_ARGS
#                              extra kube-scheduler flags (e.g. --config=FILE)
#   GANGSCHED_REALKUBE_APISERVER_ARGS
#                              extra kube-apiserver flags
#   GOFLAGS etc.               passed to go build as usual
set -euo pipefail

ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
TOOLS="$ROOT/tools/realkube"

# The Workload API in Kubernetes 1.37 (names checked in pkg/features/kube_features.go of
# k8s.io/kubernetes v1.37.2): GenericWorkload (beta, off by default; it absorbed the former
# gang-scheduling and workload-aware-preemption gates), TopologyAwareWorkloadScheduling
# (alpha) and CompositePodGroup (alpha; needs both). Workload and PodGroup are served in
# scheduling.k8s.io/v1beta1 and v1alpha3, CompositePodGroup only in v1alpha3.
FEATURE_GATES="GenericWorkload=true,TopologyAwareWorkloadScheduling=true,CompositePodGroup=true"
RUNTIME_CONFIG="scheduling.k8s.io/v1beta1=true,scheduling.k8s.io/v1alpha3=true"

log() { printf 'realkube: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

mod_version() { # module path, go.mod -> the version it requires
    awk -v m="$1" '$1 == m && $2 ~ /^v[0-9]/ { print $2; exit }
                   $2 == m && $3 ~ /^v[0-9]/ { print $3; exit }' "$2"
}

K8S_VERSION=$(mod_version k8s.io/kubernetes "$TOOLS/go.mod")
ETCD_VERSION=$(mod_version go.etcd.io/etcd/server/v3 "$TOOLS/etcd/go.mod")
[ -n "$K8S_VERSION" ] && [ -n "$ETCD_VERSION" ] || die "cannot read versions from $TOOLS"
CACHE=${GANGSCHED_REALKUBE_CACHE:-$HOME/.cache/gangsched-realkube}
KEY="k8s-$K8S_VERSION-etcd-$ETCD_VERSION-$(uname -s | tr 'A-Z' 'a-z')-$(uname -m)"
BIN="$CACHE/$KEY/bin"
STATE=${GANGSCHED_REALKUBE_STATE:-/tmp/gangsched-realkube-$(id -u)}
BINARIES="etcd kube-apiserver kube-scheduler kubectl"

have_build() {
    local b
    for b in $BINARIES; do [ -x "$BIN/$b" ] || return 1; done
}

# -- build --------------------------------------------------------------------------------

build_one() { # dir, package, output name, extra ldflags
    local dir=$1 pkg=$2 out=$3 ld=${4:-}
    [ -x "$BIN/$out" ] && { log "$out: cached"; return 0; }
    local start=$SECONDS
    log "$out: go build $pkg (slow the first time: minutes on 2 cores)"
    (cd "$dir" && go build -trimpath -ldflags="-s -w $ld" -o "$BIN/.$out.tmp" "$pkg")
    mv -f "$BIN/.$out.tmp" "$BIN/$out"
    log "$out: built in $((SECONDS - start))s"
}

cmd_build() {
    if have_build; then
        log "cached: $BIN"
        echo "$BIN"
        return 0
    fi
    command -v go >/dev/null 2>&1 || die "go is needed to build (and the Go module proxy)"
    mkdir -p "$BIN"
    local minor=${K8S_VERSION#v1.}
    minor=${minor%%.*}
    local v="k8s.io/component-base/version"
    local kv="-X $v.gitVersion=$K8S_VERSION -X $v.gitMajor=1 -X $v.gitMinor=$minor"
    kv="$kv -X $v.gitTreeState=clean"
    local start=$SECONDS
    build_one "$TOOLS/etcd" go.etcd.io/etcd/server/v3 etcd
    build_one "$TOOLS" k8s.io/kubernetes/cmd/kube-apiserver kube-apiserver "$kv"
    build_one "$TOOLS" k8s.io/kubernetes/cmd/kube-scheduler kube-scheduler "$kv"
    build_one "$TOOLS" k8s.io/kubernetes/cmd/kubectl kubectl "$kv"
    log "build done in $((SECONDS - start))s: $BIN"
    echo "$BIN"
}

# -- up / down ----------------------------------------------------------------------------

free_ports() { # three distinct free ports: each socket stays bound until all are chosen
    python3 -c 'import socket
socks = [socket.socket() for _ in range(3)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))'
}

alive() { # pid file -> running process started by us
    local f=$1 pid
    [ -f "$f" ] || return 1
    pid=$(cat "$f")
    [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

start_bg() { # name, then the command
    local name=$1
    shift
    nohup "$@" </dev/null >"$STATE/$name.log" 2>&1 &
    echo $! >"$STATE/$name.pid"
}

stop_pid() { # name
    local name=$1 f="$STATE/$1.pid" pid i
    [ -f "$f" ] || return 0
    pid=$(cat "$f")
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        # only the process we started (its command line names our binary)
        if tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null | grep -q "$BIN/$name\|/$name "; then
            kill -TERM "$pid" 2>/dev/null || true
            for i in $(seq 1 100); do
                kill -0 "$pid" 2>/dev/null || break
                sleep 0.1
            done
            kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null || true
            log "stopped $name (pid $pid)"
        else
            log "pid $pid of $name is not ours any more; left alone"
        fi
    fi
    rm -f "$f"
}

write_certs() {
    local d="$STATE/pki"
    mkdir -p "$d"
    openssl req -x509 -newkey rsa:2048 -nodes -days 30 -keyout "$d/ca.key" -out "$d/ca.crt" \
        -subj "/CN=gangsched-realkube-ca" \
        -addext "basicConstraints=critical,CA:TRUE" \
        -addext "keyUsage=critical,keyCertSign,cRLSign,digitalSignature" 2>/dev/null
    openssl req -newkey rsa:2048 -nodes -keyout "$d/apiserver.key" -out "$d/apiserver.csr" \
        -subj "/CN=kube-apiserver" 2>/dev/null
    cat >"$d/apiserver.ext" <<'EOF'
basicConstraints=critical,CA:FALSE
keyUsage=critical,digitalSignature,keyEncipherment
extendedKeyUsage=serverAuth
subjectAltName=IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc
subjectKeyIdentifier=hash
authorityKeyIdentifier=keyid,issuer
EOF
    openssl x509 -req -in "$d/apiserver.csr" -CA "$d/ca.crt" -CAkey "$d/ca.key" \
        -CAcreateserial -days 30 -out "$d/apiserver.crt" -extfile "$d/apiserver.ext" 2>/dev/null
    openssl genrsa -out "$d/sa.key" 2048 2>/dev/null
    openssl rsa -in "$d/sa.key" -pubout -out "$d/sa.pub" 2>/dev/null
}

token() { python3 -c 'import secrets; print(secrets.token_hex(24))'; }

write_kubeconfig() { # server, admin token, gangsched token
    cat >"$STATE/kubeconfig" <<EOF
apiVersion: v1
kind: Config
clusters:
- name: realkube
  cluster:
    server: $1
    certificate-authority: $STATE/pki/ca.crt
users:
- name: admin
  user:
    token: $2
- name: gangsched
  user:
    token: $3
contexts:
- name: admin
  context:
    cluster: realkube
    user: admin
- name: gangsched
  context:
    cluster: realkube
    user: gangsched
    namespace: kube-system
current-context: admin
EOF
    chmod 600 "$STATE/kubeconfig"
}

kubectl_admin() { "$BIN/kubectl" --kubeconfig "$STATE/kubeconfig" --context admin "$@"; }

wait_ready() { # url path, token, what, pid file, log, seconds
    local url=$1 tok=$2 what=$3 pidf=$4 logf=$5 secs=$6 i
    for i in $(seq 1 $((secs * 5))); do
        if curl -fsS --max-time 2 --cacert "$STATE/pki/ca.crt" ${tok:+-H "Authorization: Bearer $tok"} \
            "$url" >/dev/null 2>&1; then
            return 0
        fi
        if ! alive "$pidf"; then
            tail -n 30 "$logf" >&2 || true
            die "$what exited; log: $logf"
        fi
        sleep 0.2
    done
    tail -n 30 "$logf" >&2 || true
    die "$what not ready after ${secs}s; log: $logf"
}

cmd_up() {
    local with_scheduler=0 a
    for a in "$@"; do
        case $a in
            --scheduler) with_scheduler=1 ;;
            *) die "up: unknown option $a" ;;
        esac
    done
    have_build || die "no build in $BIN: run scripts/realkube.sh build first"
    if alive "$STATE/kube-apiserver.pid" || alive "$STATE/etcd.pid"; then
        die "already running in $STATE (scripts/realkube.sh down first)"
    fi
    if [ -d "$STATE" ] && [ -n "$(ls -A "$STATE")" ] && [ ! -f "$STATE/env" ]; then
        die "$STATE exists and is not a realkube state dir; set GANGSCHED_REALKUBE_STATE"
    fi
    rm -rf "$STATE"
    mkdir -p "$STATE"
    chmod 700 "$STATE"
    local free etcd_port peer_port api_port
    read -r -a free <<< "$(free_ports)"  # separate picks could repeat a port
    etcd_port=${GANGSCHED_REALKUBE_ETCD_PORT:-${free[0]}}
    peer_port=${GANGSCHED_REALKUBE_ETCD_PEER_PORT:-${free[1]}}
    api_port=${GANGSCHED_REALKUBE_APISERVER_PORT:-${free[2]}}
    write_certs
    local admin_token gs_token
    admin_token=$(token)
    gs_token=$(token)
    {
        echo "$admin_token,admin,admin-uid,\"system:masters\""
        echo "$gs_token,system:serviceaccount:kube-system:gangsched,gangsched-uid,\"system:serviceaccounts,system:serviceaccounts:kube-system\""
    } >"$STATE/tokens.csv"
    chmod 600 "$STATE/tokens.csv"
    local server="https://127.0.0.1:$api_port"
    write_kubeconfig "$server" "$admin_token" "$gs_token"
    cat >"$STATE/env" <<EOF
GANGSCHED_REALKUBE_BIN=$BIN
GANGSCHED_REALKUBE_STATE=$STATE
GANGSCHED_REALKUBE_KUBECONFIG=$STATE/kubeconfig
GANGSCHED_REALKUBE_SERVER=$server
GANGSCHED_REALKUBE_ETCD=http://127.0.0.1:$etcd_port
K8S_VERSION=$K8S_VERSION
ETCD_VERSION=$ETCD_VERSION
FEATURE_GATES=$FEATURE_GATES
RUNTIME_CONFIG=$RUNTIME_CONFIG
EOF

    log "etcd $ETCD_VERSION on 127.0.0.1:$etcd_port"
    start_bg etcd "$BIN/etcd" --name realkube --data-dir "$STATE/etcd" \
        --listen-client-urls "http://127.0.0.1:$etcd_port" \
        --advertise-client-urls "http://127.0.0.1:$etcd_port" \
        --listen-peer-urls "http://127.0.0.1:$peer_port" \
        --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
        --initial-cluster "realkube=http://127.0.0.1:$peer_port" \
        --unsafe-no-fsync --quota-backend-bytes 8589934592 --log-level warn
    wait_ready "http://127.0.0.1:$etcd_port/health" "" etcd "$STATE/etcd.pid" "$STATE/etcd.log" 60

    log "kube-apiserver $K8S_VERSION on $server"
    # Two admission plugins are off, as no controller manager runs: ServiceAccount (no
    # namespace gets its `default` ServiceAccount, and pods would be rejected for lacking
    # it) and TaintNodesByCondition (it taints every new Node node.kubernetes.io/not-ready
    # until the node lifecycle controller, absent here, sees the kubelet's Ready).
    # shellcheck disable=SC2086
    start_bg kube-apiserver "$BIN/kube-apiserver" \
        --bind-address 127.0.0.1 --advertise-address 127.0.0.1 --secure-port "$api_port" \
        --etcd-servers "http://127.0.0.1:$etcd_port" \
        --tls-cert-file "$STATE/pki/apiserver.crt" --tls-private-key-file "$STATE/pki/apiserver.key" \
        --client-ca-file "$STATE/pki/ca.crt" \
        --token-auth-file "$STATE/tokens.csv" \
        --authorization-mode Node,RBAC \
        --service-account-key-file "$STATE/pki/sa.pub" \
        --service-account-signing-key-file "$STATE/pki/sa.key" \
        --service-account-issuer https://kubernetes.default.svc \
        --service-cluster-ip-range 10.96.0.0/16 \
        --disable-admission-plugins ServiceAccount,TaintNodesByCondition \
        --feature-gates "$FEATURE_GATES" \
        --runtime-config "$RUNTIME_CONFIG" \
        --profiling=false --endpoint-reconciler-type none \
        --max-requests-inflight 2000 --max-mutating-requests-inflight 1000 \
        ${GANGSCHED_REALKUBE_APISERVER_ARGS:-}
    wait_ready "$server/readyz" "$admin_token" kube-apiserver "$STATE/kube-apiserver.pid" \
        "$STATE/kube-apiserver.log" 180

    log "applying deploy/rbac.yaml and deploy/crds/"
    kubectl_admin apply -f "$ROOT/deploy/rbac.yaml" -f "$ROOT/deploy/crds/" >&2
    kubectl_admin wait --for condition=Established --timeout 60s crd --all >&2
    if [ "$with_scheduler" = 1 ]; then
        cmd_scheduler_up
    fi
    log "up: kubeconfig (contexts admin, gangsched):"
    echo "$STATE/kubeconfig"
}

cmd_scheduler_up() {
    have_build || die "no build in $BIN"
    alive "$STATE/kube-apiserver.pid" || die "the API server is not running (scripts/realkube.sh up)"
    alive "$STATE/kube-scheduler.pid" && die "kube-scheduler already running"
    log "kube-scheduler $K8S_VERSION (feature gates $FEATURE_GATES)"
    # shellcheck disable=SC2086
    start_bg kube-scheduler "$BIN/kube-scheduler" \
        --kubeconfig "$STATE/kubeconfig" \
        --authentication-kubeconfig "$STATE/kubeconfig" \
        --authorization-kubeconfig "$STATE/kubeconfig" \
        --leader-elect=false --secure-port 0 \
        --feature-gates "$FEATURE_GATES" \
        ${GANGSCHED_REALKUBE_SCHEDULER_ARGS:-}
    sleep 1
    alive "$STATE/kube-scheduler.pid" || { tail -n 30 "$STATE/kube-scheduler.log" >&2; die "kube-scheduler exited"; }
    echo "$STATE/kube-scheduler.pid"
}

cmd_down() {
    stop_pid kube-scheduler
    stop_pid kube-apiserver
    stop_pid etcd
    log "down ($STATE kept for its logs)"
}

cmd="${1:-}"
[ $# -gt 0 ] && shift
case $cmd in
    build) cmd_build ;;
    bin-dir) have_build || die "no build in $BIN"; echo "$BIN" ;;
    up) cmd_up "$@" ;;
    scheduler-up) cmd_scheduler_up ;;
    scheduler-down) stop_pid kube-scheduler ;;
    down) cmd_down ;;
    env) cat "$STATE/env" ;;
    *) sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//' >&2; exit 2 ;;
esac
