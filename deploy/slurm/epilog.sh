#!/bin/sh
# Slurm Epilog (slurm.conf: Epilog=...): takes the ending job out of the
# exporter's job mapping directory (see prolog.sh); a device no job holds
# any more loses its file. The exporter drops the job at its next sweep.
# It never fails: Slurm drains a node whose epilog fails.
#
#   IBFABRIC_JOB_MAPPING_DIR  the directory (default /run/ibfabric/jobs)
PATH=/usr/sbin:/usr/bin:/sbin:/bin
trap 'exit 0' EXIT
set -eu
dir=${IBFABRIC_JOB_MAPPING_DIR:-/run/ibfabric/jobs}
job=${SLURM_JOB_ID:?SLURM_JOB_ID is not set: run as the Slurm Epilog}
[ -d "$dir" ] || exit 0
exec 9>"$dir/.lock"
flock 9
for f in "$dir"/*; do
  [ -f "$f" ] || continue
  # A dot file is the exporter's to skip: no reader sees half a list.
  tmp="$dir/.$(basename "$f").tmp"
  grep -Fvx -- "$job" "$f" >"$tmp" || true
  if [ -s "$tmp" ]; then mv "$tmp" "$f"; else rm -f "$f" "$tmp"; fi
done
