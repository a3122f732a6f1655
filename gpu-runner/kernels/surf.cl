// surfcl: the SURF pipeline in OpenCL C 1.2.
//
// Every definition here reproduces docs/ARCHITECTURE.md (and surfcl-core): integer box sums
// (wrapping u32 arithmetic on the integral image), the determinant in exact 64-bit integers,
// one correctly rounded f32 multiply for the response, the packed 8-bit log-companded bytes,
// strict 3x3x3 NMS, the Newton step of Brown & Lowe, OpenSURF's orientation and descriptor.
// FP_CONTRACT is off so that no multiply-add is fused: the f32 results are then the same
// IEEE operations, in the same order, as the Rust reference. The Newton step and the elementary
// functions are the core's f32 definitions, and the host builds with
// -cl-fp32-correctly-rounded-divide-sqrt where the device has it, so divisions and square roots
// round as on the CPU; the descriptor's norm takes its root in double where the device has
// cl_khr_fp64, which rounds the same and does not depend on that option.
#pragma OPENCL FP_CONTRACT OFF

#ifdef cl_khr_fp64
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
#endif

// ---------------------------------------------------------------------------------------------
// The core's elementary functions (core/src/math.rs, docs/ARCHITECTURE.md), operation by
// operation and in the same order; constants by their bits so that no decimal conversion of the
// device compiler can differ.

// 2^k for k in -126..=127, exactly.
inline float pow2i(int k) { return as_float((uint)(k + 127) << 23); }

// e^x within 1.5 ulp (math::expf).
inline float surf_exp(float x) {
    if (isnan(x)) return x;
    if (x > as_float(0x42b17217u)) return INFINITY;  // 88.72283
    if (x < as_float(0xc2cff1b4u)) return 0.0f;      // -103.97208
    float t = x * as_float(0x3fb8aa3bu);             // log2(e)
    int k = (int)(t + (t < 0.0f ? -0.5f : 0.5f));
    float kf = (float)k;
    float r = (x - kf * as_float(0x3f317200u)) - kf * as_float(0x35bfbe8eu);  // ln 2 hi, lo
    float p = 1.0f +
              r * (1.0f +
                   r * (0.5f +
                        r * (as_float(0x3e2aaaabu) +                // 1/6
                             r * (as_float(0x3d2aaaabu) +           // 1/24
                                  r * (as_float(0x3c088889u) +      // 1/120
                                       r * (as_float(0x3ab60b61u) + // 1/720
                                            r * as_float(0x39500d01u)))))));  // 1/5040
    if (k > 127) return (p * pow2i(k - 1)) * 2.0f;
    if (k < -126) return (p * pow2i(k + 64)) * pow2i(-64);
    return p * pow2i(k);
}

// (sin x, cos x) within 2 ulp for |x| <= 4096 (math::sincosf).
inline float2 surf_sincos(float x) {
    if (!isfinite(x)) return (float2)(NAN, NAN);
    if (fabs(x) > 4096.0f) x = fmod(x, as_float(0x40c90fdbu));  // exact remainder by 2 pi
    float t = x * as_float(0x3f22f983u);                          // 2 / pi
    int k = (int)(t + (t < 0.0f ? -0.5f : 0.5f));
    float kf = (float)k;
    float r = ((x - kf * as_float(0x3fc90000u)) - kf * as_float(0x39fdb000u)) -
              kf * as_float(0xb33bbd2eu);  // pi / 2 in three parts
    float z = r * r;
    float s = ((as_float(0xb94ca1f9u) * z + as_float(0x3c08839eu)) * z - as_float(0x3e2aaaa3u)) *
                  z * r +
              r;
    float c = ((as_float(0x37ccf5ceu) * z - as_float(0x3ab6061au)) * z + as_float(0x3d2aaaa5u)) *
                  z * z -
              0.5f * z + 1.0f;
    switch (k & 3) {
        case 0: return (float2)(s, c);
        case 1: return (float2)(c, -s);
        case 2: return (float2)(-s, -c);
        default: return (float2)(-c, s);
    }
}

#define SURF_PI_HI as_float(0x40490fdbu)
#define SURF_PI_LO as_float(0xb3bbbd2eu)
#define SURF_PIO2_HI as_float(0x3fc90fdbu)
#define SURF_PIO2_LO as_float(0xb33bbd2eu)
#define SURF_PIO4_HI as_float(0x3f490fdbu)
#define SURF_PIO4_LO as_float(0xb2bbbd2eu)

// atan2(y, x) within 3 ulp, C's special values (math::atan2f).
inline float surf_atan2(float y, float x) {
    if (isnan(x) || isnan(y)) return x + y;
    float ax = fabs(x), ay = fabs(y);
    if (ax == 0.0f && ay == 0.0f) {
        return signbit(x) ? (signbit(y) ? -SURF_PI_HI : SURF_PI_HI) : y;
    }
    bool swap = ay > ax;
    float n = swap ? ax : ay;
    float d = swap ? ay : ax;
    float t = d == INFINITY ? (n == INFINITY ? 1.0f : 0.0f) : n / d;
    bool big = t > as_float(0x3ed413cdu);  // tan(pi / 8)
    float u = big ? (t - 1.0f) / (t + 1.0f) : t;
    float z = u * u;
    float p = (((as_float(0x3da4f0d1u) * z - as_float(0x3e0e1b85u)) * z + as_float(0x3e4c925fu)) *
                   z -
               as_float(0x3eaaaa2au)) *
                  z * u +
              u;
    float a = big ? SURF_PIO4_HI + (p + SURF_PIO4_LO) : p;
    if (swap) a = (SURF_PIO2_HI - a) + SURF_PIO2_LO;
    if (x < 0.0f) a = (SURF_PI_HI - a) + SURF_PI_LO;
    return signbit(y) ? -a : a;
}

// The result buffer's layout (HEADER_WORDS, KP_WORDS, DESC_LEN, RECORD_WORDS, the header words
// H_*, the record words KP_* and the META_*_SHIFT bytes of KP_META) and MAX_OCTAVES come from the
// host as -D build options: gpu-runner/src/opencl/record.rs is their one definition.

// ---------------------------------------------------------------------------------------------
// Integral image
//
// Two launches that read the 8-bit image twice and write every word of the table once (a row
// scan followed by a column scan in place read and wrote the table twice more, about 40 MB for
// a 1920x1080 frame, and scanned each row in up to 11 dependent steps). The frame is cut into
// bands of INTEGRAL_BAND rows: integral_band_sums gives every band the sums of its columns
// above it, integral_bands makes each band's rows from those in one work-group.
//
// INTEGRAL_BAND (rows per band), INTEGRAL_COLS (adjacent columns per work-item of
// integral_bands) and INTEGRAL_SEG (work-items per segment of its row scans) come from the host
// as -D build options: frame.rs (INTEGRAL_DEFINES) is their one definition, and it sizes the
// local memory layout of integral_bands below.
#if INTEGRAL_COLS != 8
#error "integral_bands loads and scans its columns as uchar8 / uint8"
#endif

// Sums above every band, into `band_sums` (rows of `width` words). A work-group covers
// `strip_cols` adjacent columns (each row's bytes in one memory sector) and a chunk of
// consecutive bands, `item_bands` of them per work-item and lsz / strip_cols work-items per
// column. Row b receives the sum of column x over the bands of b's chunk above b, row
// bands + c the total of chunk c. integral_bands then starts band b from its row plus the
// totals of the chunks above: the host makes the chunks long enough that these are at most a
// few loads per column however tall the frame, where a sum per band would cost one load per
// band above (for the last band of a 4096x4112 frame, 4 MB read by one work-group). `totals`
// holds lsz words. Group 0 also clears the counters of the result header, so a frame needs no
// separate fill command. (u32 sums are exact: every box sum fits.)
__kernel void integral_band_sums(__global const uchar* img, int width, int height,
                                 int strip_cols, int item_bands, __global uint* band_sums,
                                 __global uint* result, __local uint* totals) {
    uint lid = get_local_id(0), lsz = get_local_size(0);
    int group = get_group_id(0);
    if (group == 0) {
        for (uint k = lid; k < HEADER_WORDS; k += lsz) result[k] = 0u;
    }
    int cw = clamp(strip_cols, 1, (int)lsz);
    int segs = (int)lsz / cw;
    int per = max(item_bands, 1);
    int strips = (width + cw - 1) / cw;
    int chunk = group / strips;
    int cx = (int)lid % cw, seg = (int)lid / cw;
    int x = (group - chunk * strips) * cw + cx;
    int bands = (height + INTEGRAL_BAND - 1) / INTEGRAL_BAND;
    int b0 = (chunk * segs + seg) * per;
    int b1 = min(b0 + per, bands);
    // Groups past the bands (none with the host's count) idle rather than return: with an early
    // return before the barrier, which no group took, PoCL 3.1 left every sum at zero.
    bool live = x < width && seg < segs && chunk * segs * per < bands;
    uint sum = 0u;
    if (live) {
        for (int b = b0; b < b1; ++b) {
            // The first band's sum is the offset below, written after the barrier.
            if (b > b0) band_sums[(size_t)b * width + x] = sum;
            int y0 = b * INTEGRAL_BAND;
            __global const uchar* p = img + (size_t)y0 * width + x;
#pragma unroll
            for (int k = 0; k < INTEGRAL_BAND; ++k) {
                if (y0 + k < height) sum += p[(size_t)k * width];
            }
        }
    }
    totals[lid] = sum;
    barrier(CLK_LOCAL_MEM_FENCE);
    if (!live) return;
    uint above = 0u;
    for (int s = 0; s < seg; ++s) above += totals[s * cw + cx];
    if (b0 < b1) band_sums[(size_t)b0 * width + x] = above;
    for (int b = b0 + 1; b < b1; ++b) band_sums[(size_t)b * width + x] += above;
    if (seg == segs - 1) band_sums[(size_t)(bands + chunk) * width + x] = above + sum;
}

// Pixels at..at + 7 of the image where n >= 8 of them are in the row, else the first n and
// zeros: one 8-byte load where the address allows (buffers are aligned far beyond 8 bytes).
inline uchar8 integral_pixels(__global const uchar* img, size_t at, int n) {
    if (n >= INTEGRAL_COLS) {
        if ((at & 7) == 0) return *(__global const uchar8*)(img + at);
        return vload8(0, img + at);
    }
    uchar v[INTEGRAL_COLS];
    for (int k = 0; k < INTEGRAL_COLS; ++k) v[k] = k < n ? img[at + k] : (uchar)0;
    return vload8(0, v);
}

// The column sums above band `band` for columns x0..x0 + 7 (zeros past the row's n columns):
// its row of integral_band_sums plus the totals of the `chunks` chunks above.
inline uint8 integral_carry(__global const uint* band_sums, int width, int band, int bands,
                            int chunks, int x0, int n) {
    __global const uint* p = band_sums + (size_t)band * width + x0;
    __global const uint* t = band_sums + (size_t)bands * width + x0;
    if (n >= INTEGRAL_COLS && (width & 7) == 0) {
        // Every row starts 32 bytes aligned (x0 is a multiple of 8): whole-vector loads.
        uint8 c = *(__global const uint8*)p;
        for (int k = 0; k < chunks; ++k) c += *(__global const uint8*)(t + (size_t)k * width);
        return c;
    }
    if (n >= INTEGRAL_COLS) {
        uint8 c = vload8(0, p);
        for (int k = 0; k < chunks; ++k) c += vload8(0, t + (size_t)k * width);
        return c;
    }
    uint v[INTEGRAL_COLS];
    for (int i = 0; i < INTEGRAL_COLS; ++i) {
        uint c = 0u;
        if (i < n) {
            c = p[i];
            for (int k = 0; k < chunks; ++k) c += t[(size_t)k * width + i];
        }
        v[i] = c;
    }
    return vload8(0, v);
}

inline uint integral_hsum(uint8 v) {
    uint4 h = v.lo + v.hi;
    return (h.x + h.y) + (h.z + h.w);
}

inline uint8 integral_prefix(uint8 v) {
    v.s1 += v.s0;
    v.s2 += v.s1;
    v.s3 += v.s2;
    v.s4 += v.s3;
    v.s5 += v.s4;
    v.s6 += v.s5;
    v.s7 += v.s6;
    return v;
}

// The local memory layout of integral_bands for lsz work-items (frame.rs computes the same
// sizes). The row scans use INTEGRAL_BAND rows of `integral_scan_stride` words (1 mod 32, so
// that the work-items of a warp that scan the segments of different rows hit different banks)
// and INTEGRAL_BAND rows of segs + 1 segment offsets; the output rows are then staged, two
// at a time, in the same memory, with one pad word per 32 so that writing 8 adjacent words per
// work-item is free of bank conflicts.
inline uint integral_scan_stride(uint lsz) { return ((lsz + 31u) & ~31u) + 1u; }
inline uint integral_stage_words(uint lsz) {
    uint n = lsz * INTEGRAL_COLS;
    return n + (n >> 5);
}

// The table, one work-group per band of INTEGRAL_BAND rows, each row written once with
// coalesced stores. Every work-item owns INTEGRAL_COLS adjacent columns of a chunk of
// lsz * INTEGRAL_COLS columns; a wider frame takes several chunks, with each row's total so far
// carried from one to the next. Per chunk, a work-item loads its pixels of all the band's rows
// (kept in registers) and the column sums above the band, and writes, for every row, the sum of
// its columns down to that row; one two-level scan (segments of INTEGRAL_SEG work-items, then
// the segments) turns those into every row's prefix at each work-item, with a handful of
// barriers for the whole band instead of a scan per row. The rows are then added up again
// from the pixels in registers, staged in local memory and written out. `scratch` holds the
// words of the layout above.
__kernel void integral_bands(__global const uchar* img, __global uint* integral, int width,
                             int height, int chunk_bands, __global const uint* band_sums,
                             __local uint* scratch) {
    int band = get_group_id(0);
    uint lid = get_local_id(0), lsz = get_local_size(0);
    int y0 = band * INTEGRAL_BAND;
    if (y0 >= height) return;  // uniform per group
    int rows = min(INTEGRAL_BAND, height - y0);
    int bands = (height + INTEGRAL_BAND - 1) / INTEGRAL_BAND;
    int chunks = band / max(chunk_bands, 1);
    size_t stride = (size_t)width + 1;
    if (band == 0) {
        for (size_t x = lid; x < stride; x += lsz) integral[x] = 0u;
    }
    for (int r = (int)lid; r < rows; r += (int)lsz) integral[(size_t)(y0 + 1 + r) * stride] = 0u;

    uint rs = integral_scan_stride(lsz);
    uint segs = (lsz + INTEGRAL_SEG - 1u) / INTEGRAL_SEG;
    __local uint* tot = scratch;
    __local uint* off = scratch + INTEGRAL_BAND * rs;
    uint stage = integral_stage_words(lsz);
    uint own_seg = lid / INTEGRAL_SEG;
    bool seg_start = lid % INTEGRAL_SEG == 0u;
    uint row_carry[INTEGRAL_BAND];
#pragma unroll
    for (int r = 0; r < INTEGRAL_BAND; ++r) row_carry[r] = 0u;

    int chunk_cols = (int)lsz * INTEGRAL_COLS;
    for (int base = 0; base < width; base += chunk_cols) {
        int x0 = base + (int)lid * INTEGRAL_COLS;
        int n = width - x0;
        uint8 carry = integral_carry(band_sums, width, band, bands, chunks, x0, n);
        // 128 bytes of registers: the rows are summed twice, the pixels are loaded once.
        uchar8 px[INTEGRAL_BAND];
        uint8 acc = carry;
#pragma unroll
        for (int r = 0; r < INTEGRAL_BAND; ++r) {
            size_t at = (size_t)(y0 + r) * width + x0;
            px[r] = r < rows ? integral_pixels(img, at, n) : (uchar8)(0);
            acc += convert_uint8(px[r]);
            tot[r * rs + lid] = integral_hsum(acc);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        // Inclusive scans of the segments of every row...
        for (uint t = lid; t < INTEGRAL_BAND * segs; t += lsz) {
            uint r = t % INTEGRAL_BAND, s = t / INTEGRAL_BAND;
            __local uint* p = tot + r * rs + s * INTEGRAL_SEG;
            uint len = min((uint)INTEGRAL_SEG, lsz - s * INTEGRAL_SEG);
            uint run = 0u;
            for (uint j = 0; j < len; ++j) {
                run += p[j];
                p[j] = run;
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        // ...then the segments' exclusive offsets, one work-item per row; the last is the row's
        // total over the chunk.
        for (uint r = lid; r < INTEGRAL_BAND; r += lsz) {
            uint run = 0u;
            for (uint s = 0; s < segs; ++s) {
                off[r * (segs + 1u) + s] = run;
                run += tot[r * rs + min(s * INTEGRAL_SEG + INTEGRAL_SEG, lsz) - 1u];
            }
            off[r * (segs + 1u) + segs] = run;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        uint before[INTEGRAL_BAND];
#pragma unroll
        for (int r = 0; r < INTEGRAL_BAND; ++r) {
            __local const uint* o = off + r * (segs + 1u);
            before[r] = row_carry[r] + o[own_seg] + (seg_start ? 0u : tot[r * rs + lid - 1u]);
            row_carry[r] += o[segs];
        }
        barrier(CLK_LOCAL_MEM_FENCE);  // the staged rows below overwrite the scan
        int cols = min(chunk_cols, width - base);
        uint mine = lid * INTEGRAL_COLS;
        mine += mine >> 5;  // 8 adjacent columns never straddle a pad word
        acc = carry;
        // The barriers are not under `r < rows`: with them there, PoCL 3.1 had not compiled the
        // kernel after 20 minutes (it replicates the code after a barrier in a branch).
#pragma unroll
        for (int r = 0; r < INTEGRAL_BAND; ++r) {
            acc += convert_uint8(px[r]);
            uint8 v = integral_prefix(acc) + before[r];
            __local uint* st = scratch + (uint)(r & 1) * stage;
            vstore8(v, 0, st + mine);
            // One barrier per row: this row's area was last read two rows ago, before the
            // previous row's barrier.
            barrier(CLK_LOCAL_MEM_FENCE);
            if (r < rows) {
                __global uint* out = integral + (size_t)(y0 + r + 1) * stride + (size_t)base + 1;
                for (int i = (int)lid; i < cols; i += (int)lsz) out[i] = st[i + (i >> 5)];
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);  // the next chunk's scan overwrites the staged rows
    }
}

// ---------------------------------------------------------------------------------------------
// Box filters

inline uint box_sum(__global const uint* ii, int width, int height, int row, int col, int rows,
                    int cols) {
    int r0 = clamp(row, 0, height);
    int r1 = clamp(row + rows, 0, height);
    int c0 = clamp(col, 0, width);
    int c1 = clamp(col + cols, 0, width);
    if (r1 <= r0 || c1 <= c0) return 0u;
    size_t s = (size_t)width + 1;
    return ii[r1 * s + c1] - ii[r0 * s + c1] - ii[r1 * s + c0] + ii[r0 * s + c0];
}

// box_sum of the box at (dr, dc) from the table entry p (rows x cols), for a box inside the
// table: the same four corners and the same wrapping arithmetic, without the clamps.
inline uint box_at(__global const uint* p, int s, int dr, int dc, int rows, int cols) {
    int top = dr * s + dc, bottom = (dr + rows) * s + dc;
    return p[bottom + cols] - p[top + cols] - p[bottom] + p[top];
}

inline int filter_size(int octave, int interval) {
    return 3 * ((interval + 1) * (2 << octave) + 1);
}

// The exact determinant and the trace of the box-filter Hessian at pixel (r, c), filter L.
// For every filter of MAX_OCTAVES octaves (L <= 771, l <= 257) the box sums and the second
// derivatives fit in int (|Dxx|, |Dyy| <= 765 (2l - 1) l < 1.1e8, |Dxy| <= 510 l^2 < 3.4e7),
// so only the products take 64 bits (a widening 32 x 32 multiply); the same integers as the
// CPU's i64 arithmetic.
inline long hessian_det(__global const uint* ii, int w, int h, int r, int c, int L,
                        int* trace) {
    int l = L / 3;
    int b = (L - 1) / 2;
    int dxx, dyy, dxy;
    if (r - b >= 0 && r + b + 1 <= h && c - b >= 0 && c + b + 1 <= w) {
        // Every box lies in rows r - b ..= r + b + 1 and the same columns around c, inside the
        // table: box_sum's clamps would change nothing, so the corners are read at offsets
        // from (r, c) (32-bit index arithmetic, no clamping).
        int s = w + 1;
        __global const uint* p = ii + (size_t)r * (size_t)s + (size_t)c;
        dxx = (int)box_at(p, s, -l + 1, -b, 2 * l - 1, L) -
              3 * (int)box_at(p, s, -l + 1, -l / 2, 2 * l - 1, l);
        dyy = (int)box_at(p, s, -b, -l + 1, L, 2 * l - 1) -
              3 * (int)box_at(p, s, -l / 2, -l + 1, l, 2 * l - 1);
        dxy = (int)box_at(p, s, -l, 1, l, l) + (int)box_at(p, s, 1, -l, l, l) -
              (int)box_at(p, s, -l, -l, l, l) - (int)box_at(p, s, 1, 1, l, l);
    } else {
        dxx = (int)box_sum(ii, w, h, r - l + 1, c - b, 2 * l - 1, L) -
              3 * (int)box_sum(ii, w, h, r - l + 1, c - l / 2, 2 * l - 1, l);
        dyy = (int)box_sum(ii, w, h, r - b, c - l + 1, L, 2 * l - 1) -
              3 * (int)box_sum(ii, w, h, r - l / 2, c - l + 1, l, 2 * l - 1);
        dxy = (int)box_sum(ii, w, h, r - l, c + 1, l, l) +
              (int)box_sum(ii, w, h, r + 1, c - l, l, l) -
              (int)box_sum(ii, w, h, r - l, c - l, l, l) -
              (int)box_sum(ii, w, h, r + 1, c + 1, l, l);
    }
    *trace = dxx + dyy;
    return 100 * ((long)dxx * (long)dyy) - 81 * ((long)dxy * (long)dxy);
}

// response = (f32)det * norm(L): two round-to-nearest-even steps, as on the CPU.
inline float response_at(__global const uint* ii, int w, int h, int r, int c, int L, float norm,
                         int* trace) {
    long det = hessian_det(ii, w, h, r, c, L, trace);
    return convert_float_rte(det) * norm;
}

// Where sample `gid` lies in the octaves of one frame. Octave o has a (w / step) x (h / step)
// grid; its samples start at `offset` in the per-sample buffers (all octaves back to back).
typedef struct {
    int oc;
    int gw;
    int gh;
    int step;
    int offset;
} octave_site_t;

// Every work-item of the Hessian and NMS kernels computes this, so it is kept in registers: a
// walk over the octaves with constant bounds (unrolled), no array indexed by the octave (an
// array of the layout was placed in each work-item's stack by NVIDIA's compiler, 104 bytes
// written and read back per work-item). Two divisions, then shifts (w / (step0 2^k) =
// (w / step0) >> k for w >= 0, step0 >= 1). The octave is the first whose samples end past
// `gid` (empty octaves end where they start, so they are never picked); `oc` is -1 past the
// last sample.
inline octave_site_t octave_of(int w, int h, int octaves, int step0, int gid) {
    octave_site_t s = {-1, 0, 0, 0, 0};
    int gw0 = w / step0, gh0 = h / step0;
    int off = 0;
#pragma unroll
    for (int k = 0; k < MAX_OCTAVES; ++k) {
        int gw = k < octaves ? gw0 >> k : 0;
        int gh = k < octaves ? gh0 >> k : 0;
        int end = off + gw * gh;
        if (s.oc < 0 && gid < end) {
            s.oc = k;
            s.gw = gw;
            s.gh = gh;
            s.step = step0 << k;
            s.offset = off;
        }
        off = end;
    }
    return s;
}

// Number of codes k in 1..=127 with response >= table[k] (table ascending): a binary search
// for the last entry <= response.
inline uint packed_code(float r, __global const float* table) {
    uint lo = 0u, hi = 127u;
    while (lo < hi) {
        uint mid = (lo + hi + 1u) >> 1;
        if (r >= table[mid]) lo = mid; else hi = mid - 1u;
    }
    return lo;
}

// ---------------------------------------------------------------------------------------------
// Hessian responses, all octaves in one launch (one work-item per sample, 4 intervals each).
// f32 mode: 4 planes per octave, `resp[4 * offset[o] + i * gw * gh + sy * gw + sx]`.
// norms[o * 4 + i] = norm(L(o, i)).
__kernel void hessian_f32(__global const uint* ii, int w, int h, int octaves, int step0,
                          __global const float* norms, __global float* resp) {
    int gid = get_global_id(0);
    octave_site_t o = octave_of(w, h, octaves, step0, gid);
    if (o.oc < 0) return;
    int oc = o.oc;
    int local_id = gid - o.offset;
    int gw = o.gw, gh = o.gh;
    int sy = local_id / gw, sx = local_id - sy * gw;
    int r = sy * o.step, c = sx * o.step;
    size_t base = 4 * (size_t)o.offset + (size_t)local_id;
    for (int i = 0; i < 4; ++i) {
        int trace;
        float v = response_at(ii, w, h, r, c, filter_size(oc, i), norms[oc * 4 + i], &trace);
        resp[base + (size_t)i * (size_t)(gw * gh)] = v;
    }
}

// Packed mode: one u32 word per sample, byte i = interval i (sign bit = trace < 0).
// table[0..128): table[k] = threshold * 2^((k - 1) / 8) for k >= 1.
__kernel void hessian_packed(__global const uint* ii, int w, int h, int octaves, int step0,
                             __global const float* norms, __global const float* table,
                             __global uint* packed) {
    int gid = get_global_id(0);
    octave_site_t o = octave_of(w, h, octaves, step0, gid);
    if (o.oc < 0) return;
    int oc = o.oc;
    int local_id = gid - o.offset;
    int gw = o.gw;
    int sy = local_id / gw, sx = local_id - sy * gw;
    int r = sy * o.step, c = sx * o.step;
    uint word = 0u;
    for (int i = 0; i < 4; ++i) {
        int trace;
        float v = response_at(ii, w, h, r, c, filter_size(oc, i), norms[oc * 4 + i], &trace);
        uint byte = packed_code(v, table) | (trace < 0 ? 0x80u : 0u);
        word |= byte << (8 * i);
    }
    packed[gid] = word;
}

// ---------------------------------------------------------------------------------------------
// Non-maximum suppression, interpolation and the atomic append of candidates.

// Candidate record: 8 words (see KP_WORDS), plus a 64-bit sort key in its own array.
// word 0..4: x, y, scale, orientation (0), response as f32 bits;
// word 5: octave | interval << 8 | (laplacian as u8) << 16; word 6: sample_x; word 7: sample_y.

// Sort key: ascending key == Keypoint::rank_cmp order (response descending by total order,
// then octave, interval, sample row, sample column ascending). Fits 64 bits because the
// interval of a candidate is 1 or 2 and sample coordinates are < 2^14.
inline ulong rank_key(float response, int octave, int interval, int sy, int sx) {
    uint bits = as_uint(response);
    // f32::total_cmp as an unsigned order: flip all bits of negatives, the sign of positives.
    uint ord = (bits & 0x80000000u) ? ~bits : (bits | 0x80000000u);
    uint desc = ~ord;
    return ((ulong)desc << 32) | ((ulong)octave << 29) | ((ulong)(interval - 1) << 28) |
           ((ulong)sy << 14) | (ulong)sx;
}

// The exact power of two 2^m, m = clamp(127 - E, -126, 127) with E the biased exponent of v
// (surf::detect::unit_scale): scaling the cube by it changes no rounding but keeps the cubic
// products of tiny responses out of the subnormals.
inline float unit_scale(float v) {
    int e = (int)((as_uint(v) >> 23) & 0xffu);
    int m = clamp(127 - e, -126, 127);
    return as_float((uint)(m + 127) << 23);
}

// Fit and append; v[dz][dy][dx] holds the 27 f32 responses around the centre. The Newton step is
// surf::detect::newton_offset: f32, the same operations in the same order (ARCHITECTURE.md).
inline void refine_and_append(float v[3][3][3], int oc, int interval, int sy, int sx, int step,
                              int laplacian, __global uint* cand, __global ulong* keys,
                              uint capacity, __global uint* result) {
    float ks = unit_scale(v[1][1][1]);
#define C(s, y, x) (v[s][y][x] * ks)
    float m = C(1, 1, 1);
    float dx = (C(1, 1, 2) - C(1, 1, 0)) / 2.0f;
    float dy = (C(1, 2, 1) - C(1, 0, 1)) / 2.0f;
    float ds = (C(2, 1, 1) - C(0, 1, 1)) / 2.0f;
    float hxx = C(1, 1, 2) + C(1, 1, 0) - 2.0f * m;
    float hyy = C(1, 2, 1) + C(1, 0, 1) - 2.0f * m;
    float hss = C(2, 1, 1) + C(0, 1, 1) - 2.0f * m;
    float hxy = (C(1, 2, 2) - C(1, 2, 0) - C(1, 0, 2) + C(1, 0, 0)) / 4.0f;
    float hxs = (C(2, 1, 2) - C(2, 1, 0) - C(0, 1, 2) + C(0, 1, 0)) / 4.0f;
    float hys = (C(2, 2, 1) - C(2, 0, 1) - C(0, 2, 1) + C(0, 0, 1)) / 4.0f;
#undef C
    // Adjugate of the symmetric H = [[hxx hxy hxs] [hxy hyy hys] [hxs hys hss]].
    float a00 = hyy * hss - hys * hys;
    float a01 = hxs * hys - hxy * hss;
    float a02 = hxy * hys - hxs * hyy;
    float a11 = hxx * hss - hxs * hxs;
    float a12 = hxy * hxs - hxx * hys;
    float a22 = hxx * hyy - hxy * hxy;
    float det = hxx * a00 + hxy * a01 + hxs * a02;
    if (det == 0.0f || !isfinite(det)) return;
    float ox = -(a00 * dx + a01 * dy + a02 * ds) / det;
    float oy = -(a01 * dx + a11 * dy + a12 * ds) / det;
    float os = -(a02 * dx + a12 * dy + a22 * ds) / det;
    if (!(fabs(ox) < 0.5f && fabs(oy) < 0.5f && fabs(os) < 0.5f)) return;
    int L = filter_size(oc, interval);
    int Lp = filter_size(oc, interval - 1);
    float x = ((float)sx + ox) * (float)step;
    float y = ((float)sy + oy) * (float)step;
    float scale = as_float(0x3e087fccu) * ((float)L + os * (float)(L - Lp));  // 0.1333
    uint slot = atomic_inc(&result[H_CANDIDATES]);
    if (slot >= capacity) {
        atomic_inc(&result[H_OVERFLOW]);
        return;
    }
    __global uint* rec = cand + (size_t)slot * KP_WORDS;
    rec[KP_X] = as_uint(x);
    rec[KP_Y] = as_uint(y);
    rec[KP_SCALE] = as_uint(scale);
    rec[KP_ORIENTATION] = as_uint(0.0f);
    rec[KP_RESPONSE] = as_uint(v[1][1][1]);
    rec[KP_META] = ((uint)oc << META_OCTAVE_SHIFT) | ((uint)interval << META_INTERVAL_SHIFT) |
                   (((uint)(uchar)(char)laplacian) << META_LAPLACIAN_SHIFT);
    rec[KP_SAMPLE_X] = (uint)sx;
    rec[KP_SAMPLE_Y] = (uint)sy;
    keys[slot] = rank_key(v[1][1][1], oc, interval, sy, sx);
}

inline bool outside_border(int oc, int interval, int sx, int sy, int gw, int gh, int step) {
    int border = (filter_size(oc, interval + 1) + 1) / (2 * step);
    return sx <= border || sx >= gw - border || sy <= border || sy >= gh - border;
}

// One work-item per (sample, middle interval) of every octave: gid = 2 * sample + (i - 1).
__kernel void nms_f32(__global const uint* ii, int w, int h, int octaves, int step0,
                      float threshold, __global const float* resp, __global uint* cand,
                      __global ulong* keys, uint capacity, __global uint* result) {
    int gid = get_global_id(0);
    int sample = gid >> 1;
    int interval = 1 + (gid & 1);
    octave_site_t o = octave_of(w, h, octaves, step0, sample);
    if (o.oc < 0) return;
    int oc = o.oc;
    int local_id = sample - o.offset;
    int gw = o.gw, gh = o.gh, step = o.step;
    int sy = local_id / gw, sx = local_id - sy * gw;
    if (outside_border(oc, interval, sx, sy, gw, gh, step)) return;
    __global const float* base = resp + 4 * (size_t)o.offset;
    size_t plane = (size_t)(gw * gh);
    float centre = base[(size_t)interval * plane + (size_t)local_id];
    if (!(centre >= threshold)) return;
    float v[3][3][3];
    for (int dz = 0; dz < 3; ++dz)
        for (int dy = 0; dy < 3; ++dy)
            for (int dx = 0; dx < 3; ++dx) {
                float n = base[(size_t)(interval - 1 + dz) * plane +
                               (size_t)((sy - 1 + dy) * gw + (sx - 1 + dx))];
                v[dz][dy][dx] = n;
                if (!(dz == 1 && dy == 1 && dx == 1) && !(centre > n)) return;
            }
    // The Laplacian sign is only needed for the few maxima: recompute the trace here.
    int trace;
    (void)hessian_det(ii, w, h, sy * step, sx * step, filter_size(oc, interval), &trace);
    refine_and_append(v, oc, interval, sy, sx, step, trace >= 0 ? 1 : -1, cand, keys, capacity,
                      result);
}

inline uint packed_at(__global const uint* packed, int idx, int interval) {
    return (packed[idx] >> (8 * interval)) & 0x7fu;
}

// Packed mode: screen with the 8-bit codes (non-strict), then recompute the 27 responses
// exactly from the integral image and apply the f32 decision.
__kernel void nms_packed(__global const uint* ii, int w, int h, int octaves, int step0,
                         float threshold, __global const float* norms,
                         __global const uint* packed, __global uint* cand,
                         __global ulong* keys, uint capacity, __global uint* result) {
    int gid = get_global_id(0);
    int sample = gid >> 1;
    int interval = 1 + (gid & 1);
    octave_site_t o = octave_of(w, h, octaves, step0, sample);
    if (o.oc < 0) return;
    int oc = o.oc;
    int local_id = sample - o.offset;
    int gw = o.gw, gh = o.gh, step = o.step;
    int sy = local_id / gw, sx = local_id - sy * gw;
    if (outside_border(oc, interval, sx, sy, gw, gh, step)) return;
    int base = o.offset;
    uint code = packed_at(packed, sample, interval);
    if (code == 0u) return;
    for (int dy = -1; dy <= 1; ++dy)
        for (int dx = -1; dx <= 1; ++dx) {
            uint word = packed[base + (sy + dy) * gw + sx + dx];
            for (int dz = -1; dz <= 1; ++dz) {
                if (((word >> (8 * (interval + dz))) & 0x7fu) > code) return;
            }
        }
    float v[3][3][3];
    float centre = 0.0f;
    int laplacian = 1;
    for (int dz = 0; dz < 3; ++dz) {
        int L = filter_size(oc, interval - 1 + dz);
        float norm = norms[oc * 4 + interval - 1 + dz];
        for (int dy = 0; dy < 3; ++dy)
            for (int dx = 0; dx < 3; ++dx) {
                int trace;
                v[dz][dy][dx] = response_at(ii, w, h, (sy - 1 + dy) * step,
                                            (sx - 1 + dx) * step, L, norm, &trace);
                if (dz == 1 && dy == 1 && dx == 1) laplacian = trace >= 0 ? 1 : -1;
            }
    }
    centre = v[1][1][1];
    if (!(centre >= threshold)) return;
    for (int dz = 0; dz < 3; ++dz)
        for (int dy = 0; dy < 3; ++dy)
            for (int dx = 0; dx < 3; ++dx)
                if (!(dz == 1 && dy == 1 && dx == 1) && !(centre > v[dz][dy][dx])) return;
    refine_and_append(v, oc, interval, sy, sx, step, laplacian, cand, keys, capacity, result);
}

// The strongest N are selected by select.cl (shared with Harris) from `cand` and `keys`.

// ---------------------------------------------------------------------------------------------
// Orientation and descriptor

inline float haar_x(__global const uint* ii, int w, int h, int row, int col, int s) {
    long v = (long)box_sum(ii, w, h, row - s / 2, col, s, s / 2) -
             (long)box_sum(ii, w, h, row - s / 2, col - s / 2, s, s / 2);
    return (float)v;
}

inline float haar_y(__global const uint* ii, int w, int h, int row, int col, int s) {
    long v = (long)box_sum(ii, w, h, row, col - s / 2, s / 2, s) -
             (long)box_sum(ii, w, h, row - s / 2, col - s / 2, s / 2, s);
    return (float)v;
}

// Both Haar responses at (row, col) for an even size s from the 9 integral-image corners they
// share: rows {row - s/2, row, row + s/2} and columns likewise, each clamped as box_sum clamps
// its bounds. Clamping is monotonic, so every box of haar_x/haar_y is the same 4-corner
// difference of these (an empty clamped box gives 0 either way): identical to the two calls
// above, with 9 loads instead of 16.
inline long2 haar_pair_even(__global const uint* ii, int w, int h, int row, int col, int s) {
    int hs = s / 2;
    size_t stride = (size_t)w + 1;
    size_t r0 = (size_t)clamp(row - hs, 0, h) * stride;
    size_t r1 = (size_t)clamp(row, 0, h) * stride;
    size_t r2 = (size_t)clamp(row + hs, 0, h) * stride;
    size_t c0 = (size_t)clamp(col - hs, 0, w);
    size_t c1 = (size_t)clamp(col, 0, w);
    size_t c2 = (size_t)clamp(col + hs, 0, w);
    uint a00 = ii[r0 + c0], a01 = ii[r0 + c1], a02 = ii[r0 + c2];
    uint a10 = ii[r1 + c0], a12 = ii[r1 + c2];
    uint a20 = ii[r2 + c0], a21 = ii[r2 + c1], a22 = ii[r2 + c2];
    long right = (long)(uint)(a22 - a02 - a21 + a01);
    long left = (long)(uint)(a21 - a01 - a20 + a00);
    long bottom = (long)(uint)(a22 - a12 - a20 + a10);
    long top = (long)(uint)(a12 - a02 - a10 + a00);
    return (long2)(right - left, bottom - top);
}

// haar_pair_even's integers, each rounded to the nearest float (as the core's `as f32`).
inline float2 haar_xy_even(__global const uint* ii, int w, int h, int row, int col, int s) {
    long2 v = haar_pair_even(ii, w, h, row, col, s);
    return (float2)((float)v.x, (float)v.y);
}

#define ORI_SAMPLES 109
#define ORI_BINS 42
#define ORI_WINDOW_BINS 7
// The bin sums in parts of the samples, one work-item per (bin, part).
#define ORI_PARTS 3
#define ORI_PART_SAMPLES 37
#define PI_F M_PI_F
// 42 / (2 pi) in float: the core's ORIENTATION_BIN_SCALE, by its bits.
#define ORI_BIN_SCALE as_float(0x40d5e77cu)

// atan2(y, x) mapped into [0, 2 pi), as surfcl-core's `describe::angle` (with its atan2f).
inline float get_angle(float x, float y) {
    float a = surf_atan2(y, x);
    if (a < 0.0f) {
        float b = a + 2.0f * PI_F;
        // A tiny negative angle rounds up to 2 pi exactly.
        return b >= 2.0f * PI_F ? 0.0f : b;
    }
    return a;
}

inline uint kept_count(__global const uint* result, uint capacity, uint max_keypoints) {
    return min(min(result[H_CANDIDATES], capacity), max_keypoints);
}

// The orientation's scratch, in local memory shared with the descriptor's samples (a union:
// the orientation is done before the samples are written), so that describing an oriented
// keypoint needs no more local memory than an upright one (16 KB boards).
typedef struct {
    long wx[ORI_SAMPLES];
    long wy[ORI_SAMPLES];
    int bin[ORI_SAMPLES];
    long part_x[ORI_BINS * ORI_PARTS];
    long part_y[ORI_BINS * ORI_PARTS];
    float2 window_sum[ORI_BINS];
    float window_len[ORI_BINS];
    float angle;
} orientation_scratch_t;

// The orientation of the keypoint at `rec`, computed by the whole work-group (every work-item
// returns it). `ori_table[k]` = (i, j, G, -) of the 109 samples in OpenSURF's order, G the
// integer Gaussian weight in units of 2^-16 (the core's ORIENTATION_GRID, exact in a float).
//
// docs/ARCHITECTURE.md, orientation: each sample's weighted integer responses go to the bin of
// its angle (42 bins), a window is 7 consecutive bins, the orientation is the angle of the
// longest window sum. The sums are exact 64-bit integers, so the work-items may add in any
// order: one per (bin, part of the samples), then one per window adds its 7 x 3 partial sums.
inline float orient_keypoint(__global const uint* ii, int w, int h,
                             __global const float4* ori_table, __global const uint* rec,
                             __local orientation_scratch_t* o) {
    uint lid = get_local_id(0), lsz = get_local_size(0);
    float x = as_float(rec[KP_X]), y = as_float(rec[KP_Y]), scale = as_float(rec[KP_SCALE]);
    int s = (int)round(scale);
    int r = (int)round(y), c = (int)round(x);
    for (uint k = lid; k < ORI_SAMPLES; k += lsz) {
        float4 t = ori_table[k];
        int i = (int)t.x, j = (int)t.y;
        long g = (long)t.z;
        long2 hv = haar_pair_even(ii, w, h, r + j * s, c + i * s, 4 * s);
        o->wx[k] = g * hv.x;
        o->wy[k] = g * hv.y;
        // A (0, 0) response has angle 0 here (bin 0) and adds nothing wherever it lands.
        float a = get_angle(convert_float_rte(hv.x), convert_float_rte(hv.y));
        o->bin[k] = clamp((int)(a * ORI_BIN_SCALE), 0, ORI_BINS - 1);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint task = lid; task < ORI_BINS * ORI_PARTS; task += lsz) {
        int b = (int)(task / ORI_PARTS), part = (int)(task - (uint)b * ORI_PARTS);
        int first = part * ORI_PART_SAMPLES;
        int last = min(first + ORI_PART_SAMPLES, ORI_SAMPLES);
        long sx = 0, sy = 0;
        for (int k = first; k < last; ++k) {
            bool inside = o->bin[k] == b;
            sx += inside ? o->wx[k] : 0;
            sy += inside ? o->wy[k] : 0;
        }
        o->part_x[task] = sx;
        o->part_y[task] = sy;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = lid; k < ORI_BINS; k += lsz) {
        long sx = 0, sy = 0;
        for (uint d = 0; d < ORI_WINDOW_BINS; ++d) {
            uint b = k + d < ORI_BINS ? k + d : k + d - ORI_BINS;
            for (uint part = 0; part < ORI_PARTS; ++part) {
                sx += o->part_x[b * ORI_PARTS + part];
                sy += o->part_y[b * ORI_PARTS + part];
            }
        }
        float fx = convert_float_rte(sx), fy = convert_float_rte(sy);
        o->window_sum[k] = (float2)(fx, fy);
        o->window_len[k] = fx * fx + fy * fy;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    if (lid == 0) {
        // The first window of largest length (none when every length is 0), then its angle:
        // one atan2.
        float best = 0.0f;
        int winner = -1;
        for (int k = 0; k < ORI_BINS; ++k) {
            if (o->window_len[k] > best) {
                best = o->window_len[k];
                winner = k;
            }
        }
        o->angle = winner < 0 ? 0.0f : get_angle(o->window_sum[winner].x, o->window_sum[winner].y);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    float angle = o->angle;
    // Every work-item has read it before the scratch is reused for the descriptor's samples.
    barrier(CLK_LOCAL_MEM_FENCE);
    return angle;
}

// The descriptor's 16 sub-regions of 9 x 9 samples overlap (a step of 5): they sample a grid
// of 24 x 24 positions, k and l in -12..=11 spacings from the centre.
#define DESC_GRID 24
#define DESC_GRID_SAMPLES (DESC_GRID * DESC_GRID)

// One work-group per keypoint: unless upright, the keypoint's orientation first (stored in its
// record); then the rotated Haar responses at the 576 grid positions go to local memory (4.6
// KB), then 16 work-items sum one sub-region each in OpenSURF's order, weighting each sample
// as they go. Each position is sampled once (sub-regions sampling their 1296 positions apart
// read the table 2.25 times as often). One launch for both orientation and descriptor: the
// orientation, a launch of its own before, cost its launch and a pass over the records
// (docs/BENCHMARKS.md).
__kernel void descriptor(__global const uint* ii, int w, int h, uint capacity,
                         uint max_keypoints, int upright, __global uint* result, uint first,
                         uint end, __global const float4* ori_table) {
    __local union {
        float2 grid[DESC_GRID_SAMPLES];
        orientation_scratch_t orientation;
    } scratch;
    __local float2* grid = scratch.grid;
    __local float sub[DESC_LEN];
    __local float sub_len[16];
    __local float inv_len;
    // The sample Gaussian along one axis of a sub-region, on the sample grid (the CPU's
    // SAMPLE_WEIGHT_1D): sample p of 0..9 is p - 5 spacings from the centre.
    __local float sample_weight[9];
    uint n = kept_count(result, capacity, max_keypoints);
    uint lid = get_local_id(0), lsz = get_local_size(0);
    for (uint p = lid; p < 9; p += lsz) {
        int d = (int)p - 5;
        sample_weight[p] = surf_exp(-(float)(d * d) / 12.5f);
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // Keypoints first..end of the kept ones: the host may describe them in two launches and
    // read the first part back while the second runs (frame.rs, `DescribeSplit`).
    n = min(n, end);
    for (uint kp = first + get_group_id(0); kp < n; kp += get_num_groups(0)) {
        __global uint* rec = result + HEADER_WORDS + (size_t)kp * RECORD_WORDS;
        float scale = as_float(rec[KP_SCALE]);
        int xi = (int)round(as_float(rec[KP_X]));
        int yi = (int)round(as_float(rec[KP_Y]));
        float co = 1.0f, si = 0.0f;
        if (!upright) {
            float ori = orient_keypoint(ii, w, h, ori_table, rec, &scratch.orientation);
            if (lid == 0) rec[KP_ORIENTATION] = as_uint(ori);
            float2 sc = surf_sincos(ori);
            si = sc.x;
            co = sc.y;
        }
        int haar = 2 * (int)round(scale);
        float x = (float)xi, y = (float)yi;
        for (uint t = lid; t < DESC_GRID_SAMPLES; t += lsz) {
            int gk = t / DESC_GRID, gl = t - gk * DESC_GRID;
            int k = gk - 12, l = gl - 12;
            int sample_x = (int)round(x + (-(float)l * scale * si + (float)k * scale * co));
            int sample_y = (int)round(y + ((float)l * scale * co + (float)k * scale * si));
            // `haar` = 2 * round(scale) is even.
            float2 hv = haar_xy_even(ii, w, h, sample_y, sample_x, haar);
            float vx = hv.x, vy = hv.y;
            grid[t] = (float2)(-vx * si + vy * co, vx * co + vy * si);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint region = lid; region < 16; region += lsz) {
            int ib = region / 4, jb = region - ib * 4;
            float dx = 0.0f, dy = 0.0f, mdx = 0.0f, mdy = 0.0f;
            // Samples in OpenSURF's order (p over k, then q over l), each weighted as the CPU
            // weights it: one product of the 1-D factors (its SAMPLE_WEIGHTS; the Gaussian's
            // constant factor cancels in the unit vector), times the rotated response.
            for (int p = 0; p < 9; ++p) {
                __local const float2* row = grid + (5 * ib + p) * DESC_GRID + 5 * jb;
                for (int q = 0; q < 9; ++q) {
                    float g = sample_weight[p] * sample_weight[q];
                    float2 r = row[q];
                    float2 v = (float2)(g * r.x, g * r.y);
                    dx += v.x;
                    dy += v.y;
                    mdx += fabs(v.x);
                    mdy += fabs(v.y);
                }
            }
            float gx = (float)ib + 0.5f - 2.0f, gy = (float)jb + 0.5f - 2.0f;
            float g2 = surf_exp(-(gx * gx + gy * gy) / (2.0f * 1.5f * 1.5f));
            sub[region * 4 + 0] = dx * g2;
            sub[region * 4 + 1] = dy * g2;
            sub[region * 4 + 2] = mdx * g2;
            sub[region * 4 + 3] = mdy * g2;
            sub_len[region] = (dx * dx + dy * dy + mdx * mdx + mdy * mdy) * g2 * g2;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        if (lid == 0) {
            // Summed in sub-region order, as the CPU does; a flat patch gives zeros.
            float len = 0.0f;
            for (int k = 0; k < 16; ++k) len += sub_len[k];
#ifdef cl_khr_fp64
            // The correctly rounded float root also where float sqrt is approximate (PoCL's
            // CUDA driver): the double root rounded to float is it (53 >= 2 * 24 + 2 bits).
            len = (float)sqrt((double)len);
#else
            len = sqrt(len);
#endif
            inv_len = len > 0.0f && isfinite(len) ? len : 0.0f;
        }
        barrier(CLK_LOCAL_MEM_FENCE);
        for (uint k = lid; k < DESC_LEN; k += lsz) {
            rec[KP_WORDS + k] = as_uint(inv_len > 0.0f ? sub[k] / inv_len : 0.0f);
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
}
