#!/usr/bin/env bash
# A real one-host Slurm cluster for the fleet tests: munged, slurmctld and one slurmd per node name, all on
# 127.0.0.1, every file (config, key, sockets, spool, logs) under DIR. Debian's slurm-wlm (22.05) builds slurmd
# with multiple-slurmd support: each node name is its own slurmd (`slurmd -N NAME`) on its own port.
#
#   slurm_cluster.sh start DIR NODES PORT_BASE   # NODES: how many node names (n1 … nN); PORT_BASE: ctld port,
#                                                 # the slurmds listen on PORT_BASE+1 …; prints SLURM_CONF=DIR/slurm.conf
#   slurm_cluster.sh stop DIR                    # stops what start started (by the pid files under DIR)
#
# Nothing here touches /etc: the clients find the cluster through SLURM_CONF, the daemons through -f.
set -euo pipefail

cmd=${1:?start|stop}
dir=$(realpath -m "${2:?DIR}")

stop() {
  # every daemon is asked at once (each takes about 2 s to wind down: one after the other was 10 s), then waited for
  local pidfile pid pids=()
  for pidfile in "$dir"/run/*.pid; do
    [ -e "$pidfile" ] || continue
    pid=$(cat "$pidfile" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
      kill -TERM "$pid" 2>/dev/null || true
      pids+=("$pid")
    fi
    rm -f "$pidfile"
  done
  for pid in "${pids[@]}"; do
    for _ in $(seq 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.05; done
    kill -KILL "$pid" 2>/dev/null || true
  done
}

if [ "$cmd" = stop ]; then
  stop
  exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start DIR NODES PORT_BASE | stop DIR" >&2; exit 2; }
nodes=${3:?NODES}
base=${4:?PORT_BASE}

mkdir -p "$dir"/run "$dir"/log "$dir"/state "$dir"/spool
chmod 755 "$dir"/run  # munged: the socket's folder must be searchable
host=$(hostname -s)

# munge: its own key and socket
if [ ! -e "$dir/run/munge.key" ]; then
  dd if=/dev/urandom of="$dir/run/munge.key" bs=1024 count=1 status=none
  chmod 400 "$dir/run/munge.key"
fi
munged --force --key-file="$dir/run/munge.key" --socket="$dir/run/munge.sock" \
  --pid-file="$dir/run/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/run/munge.seed" \
  --num-threads=1

# MinJobAge=5: sbatch --wait sleeps 2 s before its first poll and multiplies the sleep by 4 (up to 32 s) while it is
# under MinJobAge/2 (Slurm's _job_wait): with 300 a 3 s job took 10 s and a 20 s array 42 s to return; with 5 it
# polls every 2 s (5/2 = 2, integer division; 6 already sleeps 8 s). A finished job stays in
# slurmctld at least MinJobAge seconds, more than one poll, so sbatch still reads its exit code (an array's tasks
# that ended earlier may be forgotten first: no test reads a failed task's exit status through an array's --wait).
names=""
{
  cat <<CONF
ClusterName=gfxgate-test
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
AuthInfo=socket=$dir/run/munge.sock
CredType=cred/munge
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool/%n
SlurmctldPidFile=$dir/run/slurmctld.pid
SlurmdPidFile=$dir/run/slurmd-%n.pid
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd-%n.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
MpiDefault=none
ReturnToService=2
SlurmctldTimeout=30
SlurmdTimeout=30
InactiveLimit=0
MinJobAge=5
KillWait=5
Waittime=0
SchedulerParameters=sched_interval=1
MessageTimeout=20
CONF
  for i in $(seq "$nodes"); do
    echo "NodeName=n$i NodeHostname=$host NodeAddr=127.0.0.1 Port=$((base + i)) CPUs=1 RealMemory=1000 State=UNKNOWN"
    names="$names${names:+,}n$i"
  done
  echo "PartitionName=gfx Nodes=ALL Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO"
} > "$dir/slurm.conf"
echo "CgroupPlugin=autodetect" > "$dir/cgroup.conf"
for i in $(seq "$nodes"); do mkdir -p "$dir/spool/n$i"; done

export SLURM_CONF="$dir/slurm.conf"
slurmctld -f "$SLURM_CONF" -c -i
for i in $(seq "$nodes"); do
  slurmd -f "$SLURM_CONF" -N "n$i"
done

# Ready when every node is idle (first registration may take a few seconds)
for _ in $(seq 300); do
  if [ "$(sinfo -h -N -o '%N %t' 2>/dev/null | awk '$2=="idle"' | wc -l)" -ge "$nodes" ]; then
    echo "SLURM_CONF=$SLURM_CONF"
    exit 0
  fi
  sleep 0.2
done
echo "the test cluster did not come up: sinfo says" >&2
sinfo -N >&2 || true
tail -20 "$dir"/log/*.log >&2 || true
stop
exit 1
