#!/bin/sh
# Each OpenCL kernel's registers, stack frame and local memory as NVIDIA's own compiler reports
# them, on the lent GPU machine (it has CUDA's ptxas; NVIDIA's OpenCL builds kernels to PTX).
# surfcl writes every program it builds into $SURFCL_DUMP_PROGRAMS (gpu.rs, DUMP_PROGRAMS_ENV);
# ptxas -v then reports per kernel. A stack frame means an array the compiler could not keep in
# registers (each work-item writes and reads it back through memory): see ARCHITECTURE, "The
# kernels" (Hessian and NMS).
#   sh ptxas-report.sh SURFCL_BINARY IMAGE [ARCH]   (ARCH: sm_90 for H100/H200)
set -u
bin=${1:?surfcl binary}
image=${2:?an image}
arch=${3:-sm_90}
mkdir -p /etc/OpenCL/vendors && echo libnvidia-opencl.so.1 > /etc/OpenCL/vendors/nvidia.icd
dir=$(mktemp -d)
# A SURF frame (surf.cl, select.cl), a match (match.cl) and Harris (harris.cl).
SURFCL_DUMP_PROGRAMS=$dir "$bin" match "$image" "$image" --device NVIDIA >/dev/null 2>&1
SURFCL_DUMP_PROGRAMS=$dir "$bin" detect "$image" --detector harris --device NVIDIA >/dev/null 2>&1
for f in "$dir"/*.bin; do
  echo "== $(basename "$f")"
  ptxas=$(command -v ptxas || echo /usr/local/cuda/bin/ptxas)
  "$ptxas" -arch="$arch" -v "$f" -o /dev/null 2>&1 | grep -E "Compiling entry|stack frame|registers"
done
rm -rf "$dir"
