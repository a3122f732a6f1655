#!/bin/sh
# Puts CudaSift's sources (github.com/Celebrandil/CudaSift, MIT licence; not part of this
# repository) and scripts/device/cudasift-bench.cu into .device-gpu/ (git-ignored), for the
# same-run comparison on the lent GPU machine, which has nvcc but no network:
#   scripts/device/prepare-cudasift.sh PATH_TO_A_CUDASIFT_CHECKOUT_OR_BARE_REPO
# then, there: cd .device-gpu && nvcc -O3 -arch=sm_90 -Icudasift cudasift-bench.cu \
#   cudasift/cudaImage.cu cudasift/cudaSiftH.cu cudasift/matching.cu -o cudasift-bench
set -eu
src=${1:?usage: $0 CUDASIFT_CHECKOUT_OR_GIT_DIR}
cd "$(dirname "$0")/../.."
mkdir -p .device-gpu/cudasift
files="cudaImage.cu cudaImage.h cudaSift.h cudaSiftD.cu cudaSiftD.h cudaSiftH.cu cudaSiftH.h cudautils.h matching.cu LICENSE"
for f in $files; do
  if [ -f "$src/$f" ]; then
    cp "$src/$f" .device-gpu/cudasift/
  else
    git --git-dir="$src" show "HEAD:$f" > ".device-gpu/cudasift/$f"
  fi
done
# CUDA 13 dropped cudaDeviceProp::memoryClockRate, which InitCuda only prints: print 0 instead.
sed -i 's/prop\.memoryClockRate/0/g' .device-gpu/cudasift/cudaSiftH.cu
cp scripts/device/cudasift-bench.cu .device-gpu/
echo "ready: .device-gpu/cudasift ($(git --git-dir="$src" rev-parse --short HEAD 2>/dev/null || echo checkout))"
