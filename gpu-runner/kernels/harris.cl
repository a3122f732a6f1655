// surfcl: the Harris corner detector in OpenCL C 1.2 (after Loundagin 2015: separable filters on
// local-memory tiles, a window-sum stage, a spiral-order NMS with early exit).
//
// Reproduces surfcl-core's `harris` module (docs/ARCHITECTURE.md "Harris") exactly: the Gaussian,
// Sobel, products and window sums are exact integers; the response is the same sequence of
// correctly rounded f32 operations (FP_CONTRACT off, so no fused multiply-add); the NMS compares
// the same f32 values with the same strict/non-strict rule; the strongest-N order is the core's
// `Keypoint::rank_cmp` as a 64-bit key. The output record layout is surf.cl's (HEADER_WORDS,
// KP_WORDS, RECORD_WORDS), so surf.cl's `descriptor` kernel describes the kept corners in place.
//
// The host prepends three defines: TILE_W, TILE_H (output tile of one work-group, in pixels;
// the work-group has TILE_W * TILE_H work-items, 1-D, id = ly * TILE_W + lx) and WIN_R (half the
// summation window). Every stage reads its input with replicated borders: a tile stores the value
// at the clamped coordinate, so an apron outside the image repeats the edge value of *that stage*
// (the Gaussian of a clamped pixel, not the Gaussian of clamped pixels), as the core defines it.
#pragma OPENCL FP_CONTRACT OFF

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

// The result buffer's layout (HEADER_WORDS, KP_WORDS, DESC_LEN, RECORD_WORDS, the header words
// H_*, the record words KP_* and the META_*_SHIFT bytes of KP_META) and MAX_OCTAVES come from the
// host as -D build options: gpu-runner/src/opencl/record.rs is their one definition.
// H_MAX holds the frame's largest response as an order-preserving uint (see `ordered`).

#define LSZ (TILE_W * TILE_H)

inline int clampi(int v, int hi) { return clamp(v, 0, hi); }

// f32 bits -> uint whose unsigned order is f32::total_cmp's order.
inline uint ordered(float v) {
    uint b = as_uint(v);
    return (b & 0x80000000u) ? ~b : (b | 0x80000000u);
}

inline float from_ordered(uint o) {
    return as_float((o & 0x80000000u) ? (o & 0x7fffffffu) : ~o);
}

// Which tile this work-group computes (1-D launch: groups in raster order of tiles).
inline void tile_origin(int width, int* tx0, int* ty0) {
    int tiles_x = (width + TILE_W - 1) / TILE_W;
    int g = get_group_id(0);
    *tx0 = (g % tiles_x) * TILE_W;
    *ty0 = (g / tiles_x) * TILE_H;
}

// ---------------------------------------------------------------------------------------------
// Stages 1-3: Gaussian, Sobel and the three products of one tile, in local memory.
//
// Tiles (local index 0 = the first apron column/row):
//   img: rows ty0-2 .. ty0+TILE_H+1, columns tx0-2 .. tx0+TILE_W+1  (I at clamped coordinates)
//   hor: rows as img, columns tx0-1 .. tx0+TILE_W                   ([1 2 1] along x)
//   gau: rows ty0-1 .. ty0+TILE_H, columns as hor                   (G at clamped coordinates)
// For a tile position whose coordinate c is outside the image, the value is the one at cx(c),
// which lies inside the tile (the tile intersects the image), so every stage reads its
// neighbours at local index (clamped coordinate - tile start).
#define IMG_W (TILE_W + 4)
#define IMG_H (TILE_H + 4)
#define G_W (TILE_W + 2)
#define G_H (TILE_H + 2)

__kernel void harris_gradients(__global const uchar* img, int width, int height,
                               __global int* pxx, __global int* pyy, __global int* pxy,
                               __global uint* result) {
    __local int t_img[IMG_H * IMG_W];
    __local int t_hor[IMG_H * G_W];
    __local int t_gau[G_H * G_W];
    int tx0, ty0;
    tile_origin(width, &tx0, &ty0);
    int lid = get_local_id(0);
    // The first work-item clears the result header: the frame needs no separate fill command,
    // and the response kernel (later on the in-order queue) finds the max word at 0.
    if (get_global_id(0) == 0) {
        for (int k = 0; k < HEADER_WORDS; ++k) result[k] = 0u;
    }
    int wm = width - 1, hm = height - 1;
    for (int k = lid; k < IMG_H * IMG_W; k += LSZ) {
        int i = k / IMG_W, j = k - i * IMG_W;
        int y = clampi(ty0 - 2 + i, hm), x = clampi(tx0 - 2 + j, wm);
        t_img[k] = (int)img[(size_t)y * (size_t)width + (size_t)x];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = lid; k < IMG_H * G_W; k += LSZ) {
        int i = k / G_W, j = k - i * G_W;
        // Local img column of the clamped coordinate of hor column j.
        int jj = clampi(tx0 - 1 + j, wm) - tx0 + 2;
        int base = i * IMG_W;
        t_hor[k] = t_img[base + jj - 1] + 2 * t_img[base + jj] + t_img[base + jj + 1];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int k = lid; k < G_H * G_W; k += LSZ) {
        int i = k / G_W, j = k - i * G_W;
        int ii = clampi(ty0 - 1 + i, hm) - ty0 + 2;
        t_gau[k] = t_hor[(ii - 1) * G_W + j] + 2 * t_hor[ii * G_W + j] + t_hor[(ii + 1) * G_W + j];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    int lx = lid % TILE_W, ly = lid / TILE_W;
    int x = tx0 + lx, y = ty0 + ly;
    if (x >= width || y >= height) return;
    // Local gau indices of the clamped neighbours (gau starts at tx0 - 1, ty0 - 1).
    int cl = clampi(x - 1, wm) - tx0 + 1, cc = x - tx0 + 1, cr = clampi(x + 1, wm) - tx0 + 1;
    int ru = clampi(y - 1, hm) - ty0 + 1, rc = y - ty0 + 1, rd = clampi(y + 1, hm) - ty0 + 1;
    __local const int* gu = t_gau + ru * G_W;
    __local const int* gc = t_gau + rc * G_W;
    __local const int* gd = t_gau + rd * G_W;
    int gx = (gu[cr] - gu[cl]) + 2 * (gc[cr] - gc[cl]) + (gd[cr] - gd[cl]);
    int gy = (gd[cl] - gu[cl]) + 2 * (gd[cc] - gu[cc]) + (gd[cr] - gu[cr]);
    size_t o = (size_t)y * (size_t)width + (size_t)x;
    pxx[o] = gx * gx;
    pyy[o] = gy * gy;
    pxy[o] = gx * gy;
}

// ---------------------------------------------------------------------------------------------
// Stages 4-5: window sums (separable: column sums in int, exact below 2^31; row sums in long,
// exact) and the response, plus the tile's largest response folded into the header with one
// atomic per work-group (the relative threshold needs the image max).
#define S_W (TILE_W + 2 * WIN_R)
#define S_H (TILE_H + 2 * WIN_R)

// The window sum of one product plane at this work-item's pixel: the tile with its apron to
// local memory, column sums (int), then the row sum (long). Every work-item must call it.
inline long window_sum(__global const int* p, __local int* t_p, __local int* t_v, int tx0,
                       int ty0, int width, int wm, int hm, int lid, int lx, int ly) {
    for (int q = lid; q < S_H * S_W; q += LSZ) {
        int i = q / S_W, j = q - i * S_W;
        int yy = clampi(ty0 - WIN_R + i, hm), xx = clampi(tx0 - WIN_R + j, wm);
        t_p[q] = p[(size_t)yy * (size_t)width + (size_t)xx];
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int q = lid; q < TILE_H * S_W; q += LSZ) {
        int i = q / S_W, j = q - i * S_W;
        int s = 0;
        for (int d = 0; d <= 2 * WIN_R; ++d) s += t_p[(i + d) * S_W + j];
        t_v[q] = s;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    long s = 0;
    for (int d = 0; d <= 2 * WIN_R; ++d) s += (long)t_v[ly * S_W + lx + d];
    // t_p and t_v are reused by the next call.
    barrier(CLK_LOCAL_MEM_FENCE);
    return s;
}

__kernel void harris_response(__global const int* pxx, __global const int* pyy,
                              __global const int* pxy, int width, int height, float k,
                              float norm, __global float* resp, __global uint* result) {
    __local int t_p[S_H * S_W];
    __local int t_v[TILE_H * S_W];
    __local uint t_max[LSZ];
    int tx0, ty0;
    tile_origin(width, &tx0, &ty0);
    int lid = get_local_id(0);
    int lx = lid % TILE_W, ly = lid / TILE_W;
    int x = tx0 + lx, y = ty0 + ly;
    bool inside = x < width && y < height;
    int wm = width - 1, hm = height - 1;
    // Three straight-line calls rather than a loop over the channels: with the barriers inside a
    // loop this kernel took about 1.5x longer on PoCL (1024x1024, same run as the core).
    long sxx = window_sum(pxx, t_p, t_v, tx0, ty0, width, wm, hm, lid, lx, ly);
    long sxy = window_sum(pxy, t_p, t_v, tx0, ty0, width, wm, hm, lid, lx, ly);
    long syy = window_sum(pyy, t_p, t_v, tx0, ty0, width, wm, hm, lid, lx, ly);
    // long -> float in the default rounding mode (round to nearest even), as the core's i32/f64
    // -> f32 (an explicit convert_float_rte is much slower on PoCL, which emulates it).
    float a = (float)sxx * norm;
    float b = (float)sxy * norm;
    float cc = (float)syy * norm;
    float det = a * cc - b * b;
    float tr = a + cc;
    float r = det - k * (tr * tr);
    if (inside) resp[(size_t)y * (size_t)width + (size_t)x] = r;
    // Tree reduction of the tile's max (ordered uints: total order, exact).
    t_max[lid] = inside ? ordered(r) : 0u;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (int s = LSZ / 2; s > 0; s >>= 1) {
        if (lid < s) t_max[lid] = max(t_max[lid], t_max[lid + s]);
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (lid == 0) {
        // An unsigned max through compare-and-swap rather than atomic_max: PoCL's CUDA driver
        // (7.0 and later) compiles atomic_max on uint to a signed max, which breaks this order.
        uint v = t_max[0], seen = 0u;
        for (uint old = 0u; old < v; old = seen) {
            seen = atomic_cmpxchg(&result[H_MAX], old, v);
            if (seen == old) break;
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Stages 6-8: threshold, 5x5 NMS, sub-pixel fit and the atomic append; one work-item per pixel.

// Neighbours nearest first (Loundagin's spiral order): most pixels fail on a direct neighbour.
__constant char SPIRAL_DY[24] = {0, 0, 1, -1, 1, -1, 1, -1, 0, 0, 2, -2,
                                 2, -2, 1, -1, 2, -2, -1, 1, 2, -2, 2, -2};
__constant char SPIRAL_DX[24] = {1, -1, 0, 0, 1, -1, -1, 1, 2, -2, 0, 0,
                                 1, -1, 2, -2, -1, 1, 2, -2, 2, -2, -2, 2};

// Strict against earlier pixels (raster order), non-strict against later ones; only pixels
// inside the image count.
inline bool local_max(__global const float* resp, int width, int height, int x, int y, float v) {
    bool interior = x >= 2 && y >= 2 && x + 2 < width && y + 2 < height;
    for (int n = 0; n < 24; ++n) {
        int dy = SPIRAL_DY[n], dx = SPIRAL_DX[n];
        int nx = x + dx, ny = y + dy;
        if (!interior && (nx < 0 || ny < 0 || nx >= width || ny >= height)) continue;
        float o = resp[(size_t)ny * (size_t)width + (size_t)nx];
        bool earlier = dy < 0 || (dy == 0 && dx < 0);
        if (earlier ? !(v > o) : !(v >= o)) return false;
    }
    return true;
}

// Vertex of the parabola through (-1, l), (0, c), (1, r), as the core's `parabola`. The division
// is correctly rounded: in double where available (a double quotient of two floats rounds to the
// correctly rounded float quotient, 53 >= 2 * 24 + 2), else with the build option
// -cl-fp32-correctly-rounded-divide-sqrt when the device supports it.
inline float parabola(float l, float c, float r) {
    float den = (l + r) - 2.0f * c;
    if (!(den < 0.0f)) return 0.0f;
    float num = l - r, d2 = 2.0f * den;
#ifdef cl_khr_fp64
    float q = (float)((double)num / (double)d2);
#else
    float q = num / d2;
#endif
    return clamp(q, -0.5f, 0.5f);
}

// Sort key: ascending key == Keypoint::rank_cmp (response descending by total order; octave and
// interval are 0; then sample row, sample column ascending; both < 2^14).
inline ulong harris_key(float response, int sy, int sx) {
    return ((ulong)(~ordered(response)) << 32) | ((ulong)sy << 16) | (ulong)sx;
}

// mode 0: absolute threshold `thr`; mode 1: `thr` is the fraction of the frame's max response.
__kernel void harris_nms(__global const float* resp, int width, int height, int mode, float thr,
                         int subpixel, float scale, __global uint* cand, __global ulong* keys,
                         uint capacity, __global uint* result) {
    int i = get_global_id(0);
    if (i >= width * height) return;
    int y = i / width, x = i - y * width;
    float v = resp[i];
    float t = mode == 1 ? thr * from_ordered(result[H_MAX]) : thr;
    if (!(v > 0.0f && v >= t)) return;
    if (!local_max(resp, width, height, x, y, v)) return;
    float fx = (float)x, fy = (float)y;
    if (subpixel) {
        if (x > 0 && x + 1 < width) fx += parabola(resp[i - 1], v, resp[i + 1]);
        if (y > 0 && y + 1 < height) fy += parabola(resp[i - width], v, resp[i + width]);
    }
    uint slot = atomic_inc(&result[H_CANDIDATES]);
    if (slot >= capacity) {
        atomic_inc(&result[H_OVERFLOW]);
        return;
    }
    __global uint* rec = cand + (size_t)slot * KP_WORDS;
    rec[KP_X] = as_uint(fx);
    rec[KP_Y] = as_uint(fy);
    rec[KP_SCALE] = as_uint(scale);
    rec[KP_ORIENTATION] = as_uint(0.0f);
    rec[KP_RESPONSE] = as_uint(v);
    rec[KP_META] = 0u;  // octave 0, interval 0, Laplacian 0
    rec[KP_SAMPLE_X] = (uint)x;
    rec[KP_SAMPLE_Y] = (uint)y;
    keys[slot] = harris_key(v, y, x);
}

// The strongest N are selected by select.cl (shared with SURF) from `cand` and `keys`.
