#!/usr/bin/env bash
# A real one-node Slurm cluster on THIS machine, for tests and CI (no GPU needed, no systemd, no
# cgroups). Debian's slurm-wlm, slurmdbd, munge and mariadb-server are installed with apt-get when
# missing; every daemon then runs as root with all of its state under one directory:
#
#   bash scripts/slurm-local.sh start     install if needed, start everything, wait for the node
#                                         to be idle; prints the exports a caller needs as the last
#                                         line(s) of stdout (progress goes to stderr), so
#                                         eval "$(bash scripts/slurm-local.sh start)" works.
#                                         Already running -> only prints the exports. Jobs
#                                         recovered from a previous run are cancelled.
#   bash scripts/slurm-local.sh stop      cancel all jobs, stop slurmd, slurmctld, slurmdbd,
#                                         mariadbd and munged (only those started from the state
#                                         directory); safe to run twice.
#   bash scripts/slurm-local.sh status    says what runs; exit 0 when the node is up, 1 otherwise.
#   bash scripts/slurm-local.sh env       prints the exports (whether running or not).
#
# Environment:
#   ATTNSCOPE_SLURM_DIR      state directory (config, munge key and socket, MariaDB data, spool,
#                            logs, pid files); default /tmp/attnscope-slurm. rm -rf it (after
#                            stop) for a clean slate: job ids then restart at 1.
#   ATTNSCOPE_SLURM_PORT     first of 4 TCP ports: slurmctld, slurmd, slurmdbd, MariaDB
#                            (default 6817 -> 6817..6820; MariaDB listens on 127.0.0.1 only).
#   ATTNSCOPE_SLURM_TIMEOUT  seconds to wait for each daemon / the node (default 60).
#
# Layout under the state directory: slurm.conf and slurmdbd.conf (the daemons get -f / SLURM_CONF;
# slurmdbd finds slurmdbd.conf next to $SLURM_CONF), munge/ (key, socket), mysql/ (data),
# spool/ctld and spool/slurmd, log/*.log, run/*.pid. Nothing is written to /etc/slurm, and the
# client commands (sbatch, squeue, sacct, scontrol, sinfo, scancel) need only SLURM_CONF: the
# munge socket is named in slurm.conf (AuthInfo, and AccountingStoragePass for slurmdbd).
#
# Why slurmdbd + MariaDB: on this Slurm (Debian 12: 22.05) sacct without slurmdbd answers only
# "Slurm accounting storage is disabled" (accounting_storage/filetxt no longer exists), and
# "sacct -c" over jobcomp/filetxt does not understand array jobs. With slurmdbd,
# sacct -j JOBID lists every array task (JOBID_0, JOBID_1, ...) with its state and exit code.
set -euo pipefail

DIR=${ATTNSCOPE_SLURM_DIR:-/tmp/attnscope-slurm}
case $DIR in /*) ;; *) DIR=$PWD/$DIR ;; esac
PORT=${ATTNSCOPE_SLURM_PORT:-6817}
TIMEOUT=${ATTNSCOPE_SLURM_TIMEOUT:-60}
CTLD_PORT=$PORT
SLURMD_PORT=$((PORT + 1))
DBD_PORT=$((PORT + 2))
DB_PORT=$((PORT + 3))
CONF=$DIR/slurm.conf
MUNGE_SOCKET=$DIR/munge/munge.socket.2
DB_SOCKET=$DIR/run/mysqld.sock
DB_PASS=attnscope-local   # the MariaDB account only listens on 127.0.0.1 and the socket here
export SLURM_CONF=$CONF

log() { echo "slurm-local: $*" >&2; }
die() { echo "slurm-local: error: $*" >&2; exit 1; }

# Prints the exports a caller needs (the last lines of stdout of start).
print_env() {
  echo "export SLURM_CONF=$CONF"
  echo "export ATTNSCOPE_SLURM_DIR=$DIR"
}

# Log tails of all daemons, for error messages.
show_logs() {
  local f
  for f in "$DIR"/log/*.log; do
    [[ -f $f ]] || continue
    echo "----- $f (last 15 lines) -----" >&2
    tail -n 15 "$f" >&2 || true
  done
}

# pid_of NAME -> pid of the live daemon NAME whose pid file is in $DIR/run (or munge/), else fails.
pid_of() {
  local name=$1 f pid
  case $name in
    munged) f=$DIR/munge/munged.pid ;;
    *) f=$DIR/run/$name.pid ;;
  esac
  pid=$(cat "$f" 2>/dev/null) || return 1   # the daemon may remove it at any moment
  [[ $pid =~ ^[0-9]+$ ]] || return 1
  # The comm check guards against a recycled pid; state Z (zombie) counts as gone.
  [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$name" ]] || return 1
  [[ $(awk '{print $3}' "/proc/$pid/stat" 2>/dev/null) != Z ]] || return 1
  echo "$pid"
}

# wait_for SECONDS DESCRIPTION COMMAND... : polls COMMAND every 0.5 s.
wait_for() {
  local secs=$1 what=$2 i
  shift 2
  for ((i = 0; i < secs * 2; i++)); do
    if "$@" >/dev/null 2>&1; then return 0; fi
    sleep 0.5
  done
  show_logs
  die "timed out after ${secs}s waiting for $what"
}

# stop_daemon NAME: SIGTERM, wait up to 30 s, then SIGKILL.
stop_daemon() {
  local name=$1 pid i
  pid=$(pid_of "$name") || return 0
  log "stopping $name (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for ((i = 0; i < 60; i++)); do
    pid_of "$name" >/dev/null || return 0
    sleep 0.5
  done
  log "$name (pid $pid) ignored SIGTERM for 30 s; sending SIGKILL"
  kill -KILL "$pid" 2>/dev/null || true
  sleep 0.5
}

# descendants PID -> the pids of all processes below PID.
descendants() {
  ps -e -o pid= -o ppid= | awk -v root="$1" '
    { parent[$1] = $2 }
    END {
      n = 1; q[1] = root
      for (i = 1; i <= n; i++)
        for (p in parent) if (parent[p] == q[i]) { q[++n] = p; printf "%s ", p }
    }'
}

# The node's state as sinfo reports it (idle, mixed, allocated, down*, drained, ...).
node_state() { sinfo -h -o %T 2>/dev/null | head -n 1; }
node_up() { [[ $(node_state) =~ ^(idle|mixed|allocated|completing)$ ]]; }

# ---------------------------------------------------------------------------------------------
# Installation (only what is missing).
install_packages() {
  local pkgs=() policy_added=0
  command -v sbatch >/dev/null && command -v slurmctld >/dev/null && command -v slurmd >/dev/null ||
    pkgs+=(slurm-wlm)
  command -v munged >/dev/null || pkgs+=(munge)
  command -v slurmdbd >/dev/null || pkgs+=(slurmdbd)
  command -v mariadbd >/dev/null && command -v mariadb-install-db >/dev/null || pkgs+=(mariadb-server)
  ((${#pkgs[@]})) || return 0
  command -v apt-get >/dev/null || die "missing ${pkgs[*]} and no apt-get to install them"
  log "installing ${pkgs[*]} with apt-get"
  # Keep the packages' own init scripts from starting system-wide munged/mariadb/slurm daemons
  # (they would use /etc/munge, /run/mysqld and port 3306); this script runs its own copies.
  if [[ ! -e /usr/sbin/policy-rc.d ]]; then
    printf '#!/bin/sh\nexit 101\n' >/usr/sbin/policy-rc.d
    chmod 755 /usr/sbin/policy-rc.d
    policy_added=1
  fi
  local rc=0
  {
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -q &&
      apt-get install -y -q --no-install-recommends "${pkgs[@]}"
  } >&2 || rc=$?
  ((policy_added)) && rm -f /usr/sbin/policy-rc.d
  ((rc == 0)) || die "apt-get install ${pkgs[*]} failed (rc $rc)"
}

# ---------------------------------------------------------------------------------------------
# Configuration (rewritten on every start, so a changed hostname or CPU count is picked up).
write_config() {
  local host cpus mem_mib real_mem
  host=$(hostname -s)
  cpus=$(nproc)
  mem_mib=$(awk '/^MemTotal:/ { print int($2 / 1024) }' /proc/meminfo)
  real_mem=$((mem_mib * 95 / 100))   # a bit below MemTotal, so slurmd never reports less
  log "node $host: CPUs=$cpus RealMemory=${real_mem}M (MemTotal ${mem_mib}M)"

  cat >"$CONF" <<EOF
# Generated by scripts/slurm-local.sh: a one-node cluster, every daemon as root, state in $DIR.
ClusterName=attnscope
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmdUser=root
SlurmctldPort=$CTLD_PORT
SlurmdPort=$SLURMD_PORT
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
CredType=cred/munge
StateSaveLocation=$DIR/spool/ctld
SlurmdSpoolDir=$DIR/spool/slurmd
SlurmctldPidFile=$DIR/run/slurmctld.pid
SlurmdPidFile=$DIR/run/slurmd.pid
SlurmctldLogFile=$DIR/log/slurmctld.log
SlurmdLogFile=$DIR/log/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups here: plain process tracking, no task binding or confinement.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
# One CPU per task: 2 single-CPU tasks at once on 2 CPUs, further tasks wait (PENDING).
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
# Small on purpose: a sweep with more tasks than an array may have must bundle its points (the
# tests submit --tasks 12 and expect 8 tasks). Real clusters say 1001 or more.
MaxArraySize=8
MaxJobCount=10000
# Finished jobs stay visible to squeue/scontrol for MinJobAge seconds; sacct keeps them forever.
MinJobAge=300
KillWait=10
ReturnToService=2
# No mail transport here (silences "Configured MailProg is invalid").
MailProg=/bin/true
# Use the node's values below even if slurmd detects another topology (e.g. hyperthreads).
SlurmdParameters=config_overrides
# Accounting through slurmdbd (MariaDB in $DIR/mysql), so that sacct works.
JobAcctGatherType=jobacct_gather/linux
JobAcctGatherFrequency=30
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$DBD_PORT
# With munge authentication this names the munge socket used to talk to slurmdbd.
AccountingStoragePass=$MUNGE_SOCKET
NodeName=$host NodeAddr=127.0.0.1 NodeHostname=$host CPUs=$cpus RealMemory=$real_mem State=UNKNOWN
PartitionName=debug Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
# A second partition on the same node, as a cluster's second GPU type would be: --partition
# debug,second runs the grid once on each (one sweep per partition).
PartitionName=second Nodes=$host Default=NO MaxTime=INFINITE State=UP OverSubscribe=NO
EOF

  # slurmdbd reads slurmdbd.conf from the directory of SLURM_CONF; it must be 0600.
  (
    umask 077
    cat >"$DIR/slurmdbd.conf" <<EOF
# Generated by scripts/slurm-local.sh.
AuthType=auth/munge
AuthInfo=socket=$MUNGE_SOCKET
DbdHost=$host
DbdAddr=127.0.0.1
DbdPort=$DBD_PORT
SlurmUser=root
LogFile=$DIR/log/slurmdbd.log
PidFile=$DIR/run/slurmdbd.pid
DebugLevel=info
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DB_PORT
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
EOF
  )
  chmod 600 "$DIR/slurmdbd.conf"
}

# ---------------------------------------------------------------------------------------------
# Daemons.
start_munged() {
  # munged wants its socket directory traversable by all and its key readable only by root.
  mkdir -p "$DIR/munge"
  chmod 755 "$DIR/munge"
  if [[ ! -s $DIR/munge/munge.key ]]; then
    log "creating munge key $DIR/munge/munge.key"
    (umask 077 && dd if=/dev/urandom of="$DIR/munge/munge.key" bs=1024 count=1 status=none)
  fi
  chmod 400 "$DIR/munge/munge.key"
  rm -f "$MUNGE_SOCKET" "$MUNGE_SOCKET.lock"
  log "starting munged"
  munged --key-file="$DIR/munge/munge.key" --socket="$MUNGE_SOCKET" \
    --pid-file="$DIR/munge/munged.pid" --log-file="$DIR/log/munged.log" \
    --seed-file="$DIR/munge/munged.seed" --num-threads=4 ||
    { show_logs; die "munged failed to start"; }
  wait_for "$TIMEOUT" munged bash -c "munge -S '$MUNGE_SOCKET' -n | unmunge -S '$MUNGE_SOCKET'"
}

# MariaDB options shared by the bootstrap and the server; --no-defaults ignores /etc/mysql.
# A small buffer pool on purpose: slurmdbd then logs "Database settings not recommended values:
# innodb_buffer_pool_size", which is harmless for a test cluster.
DB_OPTS=()
set_db_opts() {
  DB_OPTS=(--no-defaults --datadir="$DIR/mysql" --user=root
    --innodb-buffer-pool-size=128M --innodb-log-file-size=64M)
}

start_mariadb() {
  set_db_opts
  if [[ ! -d $DIR/mysql/mysql ]]; then
    log "initialising MariaDB in $DIR/mysql"
    rm -rf "$DIR/mysql"
    mkdir -p "$DIR/mysql"
    mariadb-install-db "${DB_OPTS[@]}" --auth-root-authentication-method=socket --skip-test-db \
      >"$DIR/log/mariadb-install-db.log" 2>&1 ||
      { tail -n 20 "$DIR/log/mariadb-install-db.log" >&2; die "mariadb-install-db failed"; }
  fi
  log "starting mariadbd (127.0.0.1:$DB_PORT)"
  setsid mariadbd "${DB_OPTS[@]}" --socket="$DB_SOCKET" --port="$DB_PORT" \
    --bind-address=127.0.0.1 --skip-name-resolve --pid-file="$DIR/run/mariadbd.pid" \
    --log-error="$DIR/log/mariadbd.log" --innodb-lock-wait-timeout=900 \
    </dev/null >/dev/null 2>&1 &
  wait_for "$TIMEOUT" mariadbd mariadb-admin --no-defaults -S "$DB_SOCKET" -u root ping
  # The account slurmdbd uses (idempotent).
  mariadb --no-defaults -S "$DB_SOCKET" -u root -e "
    CREATE USER IF NOT EXISTS 'slurm'@'127.0.0.1' IDENTIFIED BY '$DB_PASS';
    CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';
    GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
    FLUSH PRIVILEGES;" || { show_logs; die "could not create the MariaDB account for slurmdbd"; }
}

start_slurm() {
  log "starting slurmdbd (port $DBD_PORT)"
  slurmdbd || { show_logs; die "slurmdbd failed to start"; }
  wait_for "$TIMEOUT" slurmdbd sacctmgr -n -P list cluster
  log "starting slurmctld (port $CTLD_PORT)"
  slurmctld -f "$CONF" || { show_logs; die "slurmctld failed to start"; }
  wait_for "$TIMEOUT" slurmctld scontrol ping
  log "starting slurmd (port $SLURMD_PORT)"
  slurmd -f "$CONF" || { show_logs; die "slurmd failed to start"; }
  wait_for "$TIMEOUT" "the node to be idle (sinfo -h -o %T)" node_up
  # slurmctld adds the cluster to the accounting database when it first registers.
  wait_for "$TIMEOUT" "slurmctld to register with slurmdbd" \
    bash -c "sacctmgr -n -P list cluster format=cluster | grep -qx attnscope"
  # slurmctld recovers the jobs of the previous run from its state files: a new start should
  # not run old pending jobs, nor keep "running" ones whose processes are gone.
  cancel_all_jobs "cancelling jobs left from the previous run"
}

# cancel_all_jobs MESSAGE: scancel every job the controller knows of, wait up to 15 s for them.
cancel_all_jobs() {
  local jobs i
  jobs=$(squeue -h -o %A 2>/dev/null | sort -un | tr '\n' ' ')
  [[ -n ${jobs// /} ]] || return 0
  log "$1: $jobs"
  # shellcheck disable=SC2086
  scancel $jobs 2>/dev/null || true
  for ((i = 0; i < 30; i++)); do
    [[ -z $(squeue -h -t pending,running,completing -o %A 2>/dev/null) ]] && return 0
    sleep 0.5
  done
}

# True when every daemon runs and the node is up.
all_running() {
  local d
  for d in munged mariadbd slurmdbd slurmctld slurmd; do pid_of "$d" >/dev/null || return 1; done
  node_up
}

cmd_start() {
  ((EUID == 0)) || die "must run as root (apt-get, and every daemon runs as root)"
  if all_running; then
    log "already running ($DIR)"
    print_env
    return 0
  fi
  local t0=$SECONDS
  install_packages
  # Something may be half up (a daemon died): stop what is left and start everything afresh.
  cmd_stop quiet
  mkdir -p "$DIR"/{spool/ctld,spool/slurmd,log,run}
  write_config
  start_munged
  start_mariadb
  start_slurm
  log "up in $((SECONDS - t0))s: node $(hostname -s) $(node_state); state in $DIR"
  print_env
}

cmd_stop() {
  local quiet=${1:-} pids pid
  # Cancel all jobs first (this is a private cluster), so their tasks end as CANCELLED in sacct
  # and no job processes outlive slurmd.
  if pid_of slurmctld >/dev/null && scontrol ping >/dev/null 2>&1; then
    cancel_all_jobs "cancelling jobs"
  fi
  stop_daemon slurmd
  # Job steps left over from this cluster (possible when slurmctld was already gone, so nothing
  # could be cancelled): each slurmstepd carries our SLURM_CONF in its environment (inherited from
  # slurmd). Kill it together with the job's processes below it.
  pids=$(grep -lsFxz "SLURM_CONF=$CONF" /proc/[0-9]*/environ 2>/dev/null |
    awk -F/ '{print $3}' || true)
  for pid in $pids; do
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == slurmstepd ]] || continue
    local tree
    tree=$(descendants "$pid")
    log "killing leftover slurmstepd (pid $pid) and its processes: ${tree:-none}"
    # shellcheck disable=SC2086
    kill -KILL "$pid" $tree 2>/dev/null || true
  done
  stop_daemon slurmctld
  stop_daemon slurmdbd
  stop_daemon mariadbd
  stop_daemon munged
  [[ $quiet == quiet ]] || log "stopped ($DIR)"
}

cmd_status() {
  local d pid rc=0
  for d in munged mariadbd slurmdbd slurmctld slurmd; do
    if pid=$(pid_of "$d"); then echo "$d: running (pid $pid)"; else echo "$d: not running"; rc=1; fi
  done
  if ((rc == 0)) && node_up; then
    echo "node $(hostname -s): $(node_state) (SLURM_CONF=$CONF)"
    return 0
  fi
  local st=
  pid_of slurmctld >/dev/null && st=$(node_state)
  echo "node: not up${st:+ (sinfo: $st)}"
  return 1
}

case ${1:-} in
  start) cmd_start ;;
  stop) cmd_stop ;;
  status) cmd_status ;;
  env) print_env ;;
  -h | --help | help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0" ;;
  *) echo "usage: $0 start|stop|status|env" >&2; exit 2 ;;
esac
