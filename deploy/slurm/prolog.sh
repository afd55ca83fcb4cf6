#!/bin/sh
# Slurm Prolog (slurm.conf: Prolog=/etc/slurm/prolog.d/ibfabric.sh, or
# call it from your prolog): records which devices the starting job holds
# in the exporter's job mapping directory (--host.job-mapping-dir), one
# file per device listing the job ids that hold it, as dcgm-exporter's
# --hpc-job-mapping-dir does for GPUs. The exporter turns a GPU index into
# the HCA nearest that GPU on PCIe; a job without GPUs holds every HCA of
# the node. deploy/slurm/epilog.sh takes the job out again. It never fails
# the job: whatever goes wrong here (a full disk, a read-only /run), it
# exits 0, since Slurm drains a node whose prolog fails.
#
#   IBFABRIC_JOB_MAPPING_DIR  the directory (default /run/ibfabric/jobs)
#   IBFABRIC_SYSFS            where sysfs is (default /sys)
# Slurm sets SLURM_JOB_ID and, for jobs given GPUs (gres/gpu), SLURM_JOB_GPUS.
PATH=/usr/sbin:/usr/bin:/sbin:/bin
trap 'exit 0' EXIT
set -eu
dir=${IBFABRIC_JOB_MAPPING_DIR:-/run/ibfabric/jobs}
sysfs=${IBFABRIC_SYSFS:-/sys}
job=${SLURM_JOB_ID:?SLURM_JOB_ID is not set: run as the Slurm Prolog}
mkdir -p "$dir"
exec 9>"$dir/.lock"
flock 9
add() { echo "$job" >>"$dir/$1"; }
if [ -n "${SLURM_JOB_GPUS:-}" ]; then
  for gpu in $(echo "$SLURM_JOB_GPUS" | tr ',' ' '); do add "$gpu"; done
else
  for d in "$sysfs"/class/infiniband/*; do
    [ -e "$d" ] && add "$(basename "$d")"
  done
fi
