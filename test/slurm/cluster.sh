# A one-node Slurm cluster of its own, for a test or a measurement: sourced, not run.
#
#   source test/slurm/cluster.sh
#   cluster_start DIR    # slurm.conf, state, logs and spool in DIR (which must exist);
#                        # exports SLURM_CONF; returns 77 (with a reason) if it cannot run
#   srun --mpi=pmix -n 4 ./prog
#   cluster_stop         # stops the daemons cluster_start started (call it from a trap)
#
# Debian's slurmctld and slurmd (scripts/setup.sh installs them) run as root on this
# host, in the foreground of background jobs whose pids we keep, on ports nobody else
# uses, so that other clusters on the host (another test's, the site's) are left alone.
# AuthType=auth/none: a test cluster of one host needs no munge daemon. MpiDefault=pmix,
# as a site that runs PMIx programs sets it. The node claims 8 CPUs whatever the host
# has (config_overrides), so that jobs of up to 8 ranks are placed on a small machine.

cluster_pids=()

cluster_skip() {
  echo "skipped: $*"
  return 77
}

# A TCP port free on this host now.
cluster_free_port() {
  python3 -c 'import socket; s = socket.socket(); s.bind(("", 0)); print(s.getsockname()[1])'
}

cluster_start() {
  local dir=$1
  PATH=$PATH:/usr/sbin:/sbin  # where Debian puts the daemons
  [ "$(id -u)" -eq 0 ] || { cluster_skip "needs root, to run slurmctld and slurmd"; return 77; }
  local t
  for t in slurmctld slurmd srun sinfo; do
    command -v "$t" > /dev/null || { cluster_skip "$t is not installed (scripts/setup.sh installs Slurm)"; return 77; }
  done
  local host ctld_port slurmd_port
  host=$(hostname -s)
  ctld_port=$(cluster_free_port)
  slurmd_port=$(cluster_free_port)
  while [ "$slurmd_port" = "$ctld_port" ]; do slurmd_port=$(cluster_free_port); done
  mkdir -p "$dir/state" "$dir/spool" "$dir/tmp"
  cat > "$dir/slurm.conf" <<EOF
ClusterName=midwaytest
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
AuthType=auth/none
CredType=cred/none
SlurmUser=root
SlurmdUser=root
StateSaveLocation=$dir/state
SlurmdSpoolDir=$dir/spool
TmpFS=$dir/tmp
SlurmctldPidFile=$dir/slurmctld.pid
SlurmdPidFile=$dir/slurmd.pid
SlurmctldLogFile=$dir/slurmctld.log
SlurmdLogFile=$dir/slurmd.log
ProctrackType=proctrack/pgid
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SwitchType=switch/none
MpiDefault=pmix
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SlurmdParameters=config_overrides
ReturnToService=2
KillWait=5
NodeName=mwnode NodeHostname=$host NodeAddr=127.0.0.1 CPUs=8 State=UNKNOWN
PartitionName=midway Nodes=mwnode Default=YES MaxTime=10 State=UP
EOF
  export SLURM_CONF=$dir/slurm.conf
  slurmctld -D -i -f "$SLURM_CONF" > "$dir/slurmctld.out" 2>&1 &
  cluster_pids+=($!)
  slurmd -D -N mwnode -f "$SLURM_CONF" > "$dir/slurmd.out" 2>&1 &
  cluster_pids+=($!)
  local i state=""
  for i in $(seq 100); do
    state=$(sinfo -h -N -o %T 2> /dev/null || true)
    [ "$state" = idle ] && return 0
    sleep 0.2
  done
  echo "the cluster did not come up (node state '$state'); its logs:"
  tail -n 20 "$dir"/slurmctld.log "$dir"/slurmd.log "$dir"/*.out 2> /dev/null || true
  return 1
}

cluster_stop() {
  local pid i
  for pid in "${cluster_pids[@]}"; do kill -TERM "$pid" 2> /dev/null || true; done
  for pid in "${cluster_pids[@]}"; do
    for i in $(seq 50); do
      kill -0 "$pid" 2> /dev/null || break
      sleep 0.1
    done
    kill -KILL "$pid" 2> /dev/null || true
    wait "$pid" 2> /dev/null || true
  done
  cluster_pids=()
}
