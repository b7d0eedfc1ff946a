#!/usr/bin/env bash
# A one-machine Slurm cluster for tests (Debian's slurm-wlm and munge; needs root):
#
#   slurm-cluster.sh up DIR [CPUS]   config, state and logs in DIR; one node (this machine, with
#                                    CPUS cpus, default 4, so a few ranks share its cores); starts
#                                    munged, slurmctld and slurmd and waits until the node is idle
#   slurm-cluster.sh down DIR        stops them
#   slurm-cluster.sh env DIR         prints the SLURM_CONF=... line for srun, sbatch and squeue
#
# Example: slurm-cluster.sh up /tmp/slurm && eval "$(slurm-cluster.sh env /tmp/slurm)" &&
#          srun --mpi=pmix -n 4 build/tools/strider train ...
set -euo pipefail
die() { echo "slurm-cluster: $*" >&2; exit 1; }
[ "$(id -u)" -eq 0 ] || die "needs root (munged, slurmctld and slurmd)"
cmd=${1:-}
dir=${2:-}
[ -n "$dir" ] || die "usage: slurm-cluster.sh up DIR [CPUS] | down DIR | env DIR"

up() {
  local cpus=${1:-4}
  command -v slurmctld > /dev/null || die "slurm-wlm is not installed (scripts/install-deps.sh --slurm)"
  down 2>/dev/null || true
  mkdir -p "$dir"/{state,spool,log,munge}
  local host
  host=$(hostname -s)
  cat > "$dir/slurm.conf" <<EOF
ClusterName=strider-test
SlurmctldHost=$host
AuthType=auth/munge
AuthInfo=socket=$dir/munge/munge.socket
CredType=cred/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=pmix
ReturnToService=2
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldPort=16817
SlurmdPort=16818
SlurmdSpoolDir=$dir/spool
StateSaveLocation=$dir/state
SlurmctldLogFile=$dir/log/slurmctld.log
SlurmdLogFile=$dir/log/slurmd.log
SlurmUser=root
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
NodeName=$host CPUs=$cpus State=UNKNOWN
PartitionName=test Nodes=$host Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
  [ -f "$dir/munge/munge.key" ] || dd if=/dev/urandom of="$dir/munge/munge.key" bs=1024 count=1 2>/dev/null
  chmod 700 "$dir/munge"; chmod 400 "$dir/munge/munge.key"
  munged --force --key-file="$dir/munge/munge.key" --socket="$dir/munge/munge.socket" \
    --pid-file="$dir/munge/munged.pid" --log-file="$dir/log/munged.log" --seed-file="$dir/munge/seed"
  SLURM_CONF="$dir/slurm.conf" slurmctld -f "$dir/slurm.conf"
  SLURM_CONF="$dir/slurm.conf" slurmd -f "$dir/slurm.conf"
  for _ in $(seq 1 100); do
    SLURM_CONF="$dir/slurm.conf" sinfo -h -o %T 2>/dev/null | grep -q idle && return 0
    sleep 0.2
  done
  die "the node did not become idle; see $dir/log/"
}

down() {
  for pid_file in "$dir/slurmd.pid" "$dir/slurmctld.pid" "$dir/munge/munged.pid"; do
    [ -f "$pid_file" ] && kill "$(cat "$pid_file")" 2>/dev/null || true
  done
  sleep 0.5
}

case "$cmd" in
  up) up "${3:-4}" ;;
  down) down ;;
  env) echo "export SLURM_CONF=$dir/slurm.conf" ;;
  *) die "usage: slurm-cluster.sh up DIR [CPUS] | down DIR | env DIR" ;;
esac
