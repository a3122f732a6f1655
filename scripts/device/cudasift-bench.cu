// Times CudaSift (github.com/Celebrandil/CudaSift, SIFT in CUDA) on one PGM image, for the
// same-run comparisons of docs/BENCHMARKS.md. Built on the lent GPU machine against CudaSift's
// sources, which are not part of this repository (scripts/device/prepare-cudasift.sh puts a
// snapshot beside this file, in a git-ignored folder):
//   nvcc -O3 -arch=sm_90 -Icudasift cudasift-bench.cu cudasift/cudaImage.cu \
//        cudasift/cudaSiftH.cu cudasift/matching.cu -o cudasift-bench
//   ./cudasift-bench IMAGE.pgm [FRAMES] > /dev/null      (results on stderr)
// Settings of CudaSift's own demo (mainSift.cpp): 5 octaves, initial blur 1.0, threshold 3.0.
// "with upload": the float image (CudaSift's input format) copied from pinned host memory,
// extraction, keypoints and descriptors read back (ExtractSift does that when the SiftData has
// host memory), then a device synchronisation; "on the GPU": the same without the upload.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

#include <cuda_runtime.h>

#include "cudaImage.h"
#include "cudaSift.h"

static bool read_pgm(const char *path, std::vector<unsigned char> &px, int &w, int &h) {
  std::ifstream f(path, std::ios::binary);
  std::string magic;
  int maxval = 0;
  f >> magic;
  auto skip = [&f]() {
    while (f >> std::ws && f.peek() == '#') {
      std::string line;
      std::getline(f, line);
    }
  };
  skip(); f >> w; skip(); f >> h; skip(); f >> maxval;
  if (!f || magic != "P5" || maxval != 255 || w <= 0 || h <= 0) return false;
  f.get();
  px.resize(size_t(w) * h);
  f.read(reinterpret_cast<char *>(px.data()), px.size());
  return bool(f);
}

static double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v[v.size() / 2];
}

int main(int argc, char **argv) {
  if (argc < 2) {
    fprintf(stderr, "usage: %s IMAGE.pgm [FRAMES]\n", argv[0]);
    return 2;
  }
  int w = 0, h = 0;
  std::vector<unsigned char> px;
  if (!read_pgm(argv[1], px, w, h)) {
    fprintf(stderr, "%s: not a binary 8-bit PGM\n", argv[1]);
    return 1;
  }
  int frames = argc > 2 ? std::max(1, atoi(argv[2])) : 200;
  InitCuda(0);
  float *host = nullptr;
  if (cudaMallocHost(&host, sizeof(float) * px.size()) != cudaSuccess) return 1;
  for (size_t i = 0; i < px.size(); i++) host[i] = px[i];
  CudaImage img;
  img.Allocate(w, h, iAlignUp(w, 128), false, NULL, host);
  SiftData data;
  InitSiftData(data, 32768, true, true);
  float *tmp = AllocSiftTempMemory(w, h, 5, false);
  using clock = std::chrono::steady_clock;
  auto ms = [](clock::time_point a, clock::time_point b) {
    return std::chrono::duration<double, std::milli>(b - a).count();
  };
  for (int i = 0; i < 20; i++) {  // warm-up: clocks, caches
    img.Download();
    ExtractSift(data, img, 5, 1.0, 3.0f, 0.0f, false, tmp);
  }
  std::vector<double> with_upload, resident;
  for (int i = 0; i < frames; i++) {
    auto t0 = clock::now();
    img.Download();
    ExtractSift(data, img, 5, 1.0, 3.0f, 0.0f, false, tmp);
    cudaDeviceSynchronize();
    with_upload.push_back(ms(t0, clock::now()));
    t0 = clock::now();
    ExtractSift(data, img, 5, 1.0, 3.0f, 0.0f, false, tmp);
    cudaDeviceSynchronize();
    resident.push_back(ms(t0, clock::now()));
  }
  fprintf(stderr,
          "cudasift %s %dx%d: %d keypoints, median of %d: with upload %.3f ms, image on the GPU "
          "%.3f ms\n",
          argv[1], w, h, data.numPts, frames, median(with_upload), median(resident));
  FreeSiftTempMemory(tmp);
  FreeSiftData(data);
  cudaFreeHost(host);
  return 0;
}
