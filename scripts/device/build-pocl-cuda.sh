#!/bin/bash
# Builds PoCL with its CUDA driver (OpenCL on an NVIDIA GPU without NVIDIA's OpenCL: the route for
# a Jetson) against the LLVM 16 runtime libraries that a machine already has, when that machine has
# no LLVM headers, no llvm-config and no network (the lent GPU machine: Ubuntu 24.04, CUDA 13.0,
# libLLVM-16 and libclang-cpp16 installed, clang-16, cmake and ninja). Two steps:
#
#   scripts/device/build-pocl-cuda.sh stage DIR
#       on a Debian 12 machine with network: puts into DIR the pinned PoCL source (with the
#       CUDA 13 fix below) and the parts of Debian's LLVM 16.0.6 development packages that PoCL's
#       build needs (headers, CMake files, llvm-config, clang, opt, llc, llvm-as, llvm-link, lli,
#       llvm-dis, and the libz3.so.4 that Debian's llvm-config links), about 15 MB compressed.
#       Set POCL_GIT_DIR to a clone or bare mirror of PoCL to take the source from there
#       instead of cloning it.
#   scripts/device/build-pocl-cuda.sh build DIR
#       on the GPU machine: configures, builds and installs PoCL into $POCL_PREFIX (default
#       /opt/pocl-cuda), CUDA driver only, and packs the installation into
#       DIR/pocl-cuda-install.tar.xz so that a fresh machine can unpack it (`unpack`).
#       POCL_WITHOUT_CUDA=1 configures without the CUDA driver (to try the LLVM side on a
#       machine without CUDA); POCL_HOST_CPU=ON adds PoCL's CPU device.
#   scripts/device/build-pocl-cuda.sh unpack DIR
#       unpacks that archive into $POCL_PREFIX.
#   scripts/device/build-pocl-cuda.sh register
#       writes /etc/OpenCL/vendors/pocl-cuda.icd pointing at $POCL_PREFIX/lib/libpocl.so.
#
# Then `POCL_DEVICES=cuda` limits PoCL to its CUDA devices. Where the ICD loader is the one that
# CUDA ships (the GPU machine: its image sets OCL_ICD_FILENAMES), name the library instead:
# `OCL_ICD_FILENAMES=$POCL_PREFIX/lib/libpocl.so`, and keep another PoCL's libpocl.so.2 out of the
# same process (scripts/device/pocl-cuda-run.sh shows how).
#
# Why these versions: PoCL 7.0 is the newest release that still accepts LLVM 16 (7.1 needs LLVM
# 17 to 21), and LLVM 16 is the one whose runtime libraries the GPU machine has. CUDA 13 changed
# cuCtxCreate's signature; upstream fixed that after 7.0 (commit 7146cd55, in 7.1), and
# pocl-v7.0-cuda13.patch beside this script is that fix, applied at `stage`.
set -euo pipefail

POCL_TAG=v7.0
POCL_COMMIT=85654efe89894af6d0fbc701d597b2f9be5441fe
POCL_URL=${POCL_URL:-https://github.com/pocl/pocl.git}
LLVM_MAJOR=16
LLVM_DEB_VERSION=1:16.0.6-15~deb12u1
Z3_DEB_VERSION=4.8.12-3.1
POCL_PREFIX=${POCL_PREFIX:-/opt/pocl-cuda}
# Where `build` looks for the machine's libLLVM-16.so.1 and libclang-cpp.so.16.
LLVM_RUNTIME_DIRS=${LLVM_RUNTIME_DIRS:-/usr/lib/llvm-16/lib /usr/lib/x86_64-linux-gnu}
if [ -z "${CUDA_ROOT:-}" ]; then
  CUDA_ROOT=/usr/local/cuda
  [ -d "$CUDA_ROOT" ] || { nvcc=$(command -v nvcc) && CUDA_ROOT=$(dirname "$(dirname "$(readlink -f "$nvcc")")"); } || true
fi

script_dir=$(cd "$(dirname "$0")" && pwd)

die() { echo "build-pocl-cuda: $*" >&2; exit 1; }

stage_source() {
  local dir=$1 tmp
  tmp=$(mktemp -d)
  if [ -n "${POCL_GIT_DIR:-}" ]; then
    git --git-dir="$POCL_GIT_DIR" cat-file -e "$POCL_COMMIT^{commit}" \
      || die "$POCL_GIT_DIR does not hold PoCL $POCL_TAG ($POCL_COMMIT)"
    git_dir=$POCL_GIT_DIR
  else
    git clone --quiet --bare --depth 1 --branch "$POCL_TAG" "$POCL_URL" "$tmp/pocl.git"
    git_dir=$tmp/pocl.git
  fi
  local got
  got=$(git --git-dir="$git_dir" rev-parse "$POCL_TAG^{commit}")
  [ "$got" = "$POCL_COMMIT" ] || die "tag $POCL_TAG is $got, expected $POCL_COMMIT"
  # The examples, tests and documentation are not built here (ENABLE_TESTS/EXAMPLES=OFF).
  mkdir -p "$tmp/pocl"
  git --git-dir="$git_dir" archive "$POCL_COMMIT" -- \
    $(git --git-dir="$git_dir" ls-tree --name-only "$POCL_COMMIT" | grep -v -x -e examples -e tests -e doc) \
    | tar -x -C "$tmp/pocl"
  mkdir -p "$tmp/pocl/examples" "$tmp/pocl/tests"
  patch -s -d "$tmp/pocl" -p1 < "$script_dir/pocl-v7.0-cuda13.patch"
  XZ_OPT=-T0 tar -C "$tmp" -cJf "$dir/pocl-src.tar.xz" pocl
  rm -rf "$tmp"
}

stage_llvm() {
  local dir=$1 tmp pkg deb
  tmp=$(mktemp -d)
  local pkgs="llvm-16 llvm-16-dev llvm-16-runtime libclang-16-dev libclang-common-16-dev clang-16"
  (cd "$tmp" && for pkg in $pkgs; do apt-get download -q "$pkg=$LLVM_DEB_VERSION" >/dev/null; done)
  # Debian's llvm-config links libz3, which the GPU machine lacks.
  (cd "$tmp" && apt-get download -q "libz3-4=$Z3_DEB_VERSION" >/dev/null)
  (cd "$tmp" && sha256sum -c --quiet "$script_dir/llvm-16-debs.sha256") \
    || die "the downloaded LLVM packages differ from llvm-16-debs.sha256"
  mkdir -p "$tmp/root"
  for deb in "$tmp"/*.deb; do dpkg-deb -x "$deb" "$tmp/root"; done
  local src=$tmp/root/usr/lib/llvm-$LLVM_MAJOR dst=$tmp/llvm-$LLVM_MAJOR
  mkdir -p "$dst/bin" "$dst/include" "$dst/lib/cmake" "$dst/lib/clang"
  for b in llvm-config clang opt llc llvm-as llvm-link lli llvm-dis; do
    cp "$src/bin/$b" "$dst/bin/"
  done
  ln -s clang "$dst/bin/clang++"
  # include/llvm and include/llvm-c are links into /usr/include/llvm-16: copy what they point to.
  cp -rL "$src/include/llvm" "$src/include/llvm-c" "$src/include/clang" "$src/include/clang-c" "$dst/include/"
  cp -r "$src/lib/cmake/llvm" "$src/lib/cmake/clang" "$dst/lib/cmake/" 2>/dev/null \
    || cp -rL "$tmp/root/usr/lib/cmake/llvm-$LLVM_MAJOR" "$dst/lib/cmake/llvm"
  cp -rL "$src/lib/clang/$LLVM_MAJOR" "$dst/lib/clang/"
  cp "$tmp/root/usr/lib/x86_64-linux-gnu/libz3.so.4" "$dst/lib/"
  XZ_OPT=-T0 tar -C "$tmp" -cJf "$dir/llvm-$LLVM_MAJOR-dev.tar.xz" "llvm-$LLVM_MAJOR"
  rm -rf "$tmp"
}

# The machine's runtime libraries, under the unversioned names that the linker looks for.
link_runtime_libs() {
  local libdir=$1 d llvm_so="" clang_so=""
  for d in $LLVM_RUNTIME_DIRS; do
    [ -z "$llvm_so" ] && [ -e "$d/libLLVM-$LLVM_MAJOR.so.1" ] && llvm_so=$d/libLLVM-$LLVM_MAJOR.so.1
    [ -z "$clang_so" ] && [ -e "$d/libclang-cpp.so.$LLVM_MAJOR" ] && clang_so=$d/libclang-cpp.so.$LLVM_MAJOR
  done
  [ -n "$llvm_so" ] || die "no libLLVM-$LLVM_MAJOR.so.1 in $LLVM_RUNTIME_DIRS"
  [ -n "$clang_so" ] || die "no libclang-cpp.so.$LLVM_MAJOR in $LLVM_RUNTIME_DIRS"
  echo "runtime libraries: $(readlink -f "$llvm_so") $(readlink -f "$clang_so")"
  ln -sf "$llvm_so" "$libdir/libLLVM-$LLVM_MAJOR.so.1"
  ln -sf "$llvm_so" "$libdir/libLLVM-$LLVM_MAJOR.so"
  ln -sf "$llvm_so" "$libdir/libLLVM.so"
  ln -sf "$clang_so" "$libdir/libclang-cpp.so.$LLVM_MAJOR"
  ln -sf "$clang_so" "$libdir/libclang-cpp.so"
}

build() {
  local dir=$1 work=${POCL_BUILD_DIR:-/tmp/pocl-cuda-build}
  [ -d /opt/torch/.venv/bin ] && PATH=$PATH:/opt/torch/.venv/bin
  [ -d "$CUDA_ROOT/bin" ] && PATH=$CUDA_ROOT/bin:$PATH
  export PATH
  rm -rf "$work" && mkdir -p "$work"
  tar -C "$work" -xJf "$dir/pocl-src.tar.xz"
  tar -C "$work" -xJf "$dir/llvm-$LLVM_MAJOR-dev.tar.xz"
  local llvm=$work/llvm-$LLVM_MAJOR
  link_runtime_libs "$llvm/lib"
  export LD_LIBRARY_PATH=$llvm/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
  "$llvm/bin/llvm-config" --version | grep -q "^$LLVM_MAJOR\." || die "llvm-config does not run"
  local cuda_opts=(-DENABLE_CUDA=ON -DCUDA_TOOLKIT_ROOT_DIR="$CUDA_ROOT")
  [ "${POCL_WITHOUT_CUDA:-0}" = 1 ] && cuda_opts=(-DENABLE_CUDA=OFF)
  local t0=$SECONDS
  cmake -S "$work/pocl" -B "$work/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DCMAKE_INSTALL_PREFIX="$POCL_PREFIX" \
    -DWITH_LLVM_CONFIG="$llvm/bin/llvm-config" -DSTATIC_LLVM=OFF \
    "${cuda_opts[@]}" -DENABLE_HOST_CPU_DEVICES="${POCL_HOST_CPU:-OFF}" \
    -DENABLE_ICD=ON -DENABLE_TESTS=OFF -DENABLE_EXAMPLES=OFF -DENABLE_SPIRV=OFF \
    -DENABLE_POCLCC=OFF -DENABLE_HWLOC=OFF
  local t1=$SECONDS
  cmake --build "$work/build" -j "$(nproc)"
  local t2=$SECONDS
  cmake --install "$work/build" >/dev/null
  echo "configure: $((t1 - t0)) s, build: $((t2 - t1)) s on $(nproc) cores"
  tar -C "$(dirname "$POCL_PREFIX")" -cJf "$dir/pocl-cuda-install.tar.xz" "$(basename "$POCL_PREFIX")"
  ls -l "$dir/pocl-cuda-install.tar.xz"
}

unpack() {
  mkdir -p "$(dirname "$POCL_PREFIX")"
  tar -C "$(dirname "$POCL_PREFIX")" -xJf "$1/pocl-cuda-install.tar.xz"
}

register() {
  [ -e "$POCL_PREFIX/lib/libpocl.so" ] || die "no $POCL_PREFIX/lib/libpocl.so"
  mkdir -p /etc/OpenCL/vendors
  echo "$POCL_PREFIX/lib/libpocl.so" > /etc/OpenCL/vendors/pocl-cuda.icd
}

case ${1:-} in
  stage) mkdir -p "${2:?DIR}"; stage_source "$2"; stage_llvm "$2"; ls -l "$2" ;;
  build) build "${2:?DIR}" ;;
  unpack) unpack "${2:?DIR}" ;;
  register) register ;;
  *) die "usage: $0 stage DIR | build DIR | unpack DIR | register" ;;
esac
