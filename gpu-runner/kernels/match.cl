// surfcl: fused distance + 2-NN matcher (OpenCL C 1.2).
//
// One work-item per query; the train descriptors stream through local memory in tiles of
// `get_local_size(0)` descriptors, so no distance matrix ever reaches global memory (Chariot &
// Keriven 2008 reduce a full matrix; here the reduction is fused into the distance loop).
// Distances are accumulated component by component in index order, as in surfcl-core, so the
// f32 squared distances are bit-identical to the CPU's. Ties keep the lower train index.
// The same kernel run with query and train swapped gives the reverse nearest neighbour used by
// the mutual check.
#pragma OPENCL FP_CONTRACT OFF

#define DESC_LEN 64

// Whether the Laplacian signs allow a match (0 is compatible with anything).
inline bool sign_ok(char a, char b) { return a == 0 || b == 0 || a == b; }

// The squared L2 distance in surfcl-core's fixed 16-lane order (core/src/matcher.rs), as the
// bits of the non-negative f32: ordering the bits orders the distances.
inline uint dist_key_f32(const float* a, __local const float* b) {
    float acc[16];
    for (int j = 0; j < 16; ++j) acc[j] = 0.0f;
    for (int k = 0; k < 4; ++k)
        for (int j = 0; j < 16; ++j) {
            float d = a[16 * k + j] - b[16 * k + j];
            acc[j] = acc[j] + d * d;
        }
    float half_[8];
    for (int j = 0; j < 8; ++j) half_[j] = acc[j] + acc[j + 8];
    float q0 = half_[0] + half_[4], q1 = half_[1] + half_[5];
    float q2 = half_[2] + half_[6], q3 = half_[3] + half_[7];
    return as_uint((q0 + q2) + (q1 + q3));
}

// out[out_base + 3q ..] = (best index or -1, best key, second key); keys are u32::MAX when there is none.
// Without the sign test the host uploads zero signs (0 is compatible with everything).
__kernel void nn2_f32(__global const float* query, __global const char* qsign, uint nq,
                      __global const float* train, __global const char* tsign, uint nt,
                      __global uint* out, uint out_base, __local float* tile,
                      __local char* tile_sign) {
    uint q = get_global_id(0);
    uint lid = get_local_id(0), lsz = get_local_size(0);
    float mine[DESC_LEN];
    char s = 0;
    if (q < nq) {
        for (int k = 0; k < DESC_LEN; ++k) mine[k] = query[(size_t)q * DESC_LEN + k];
        s = qsign[q];
    }
    uint d1 = 0xffffffffu, d2 = 0xffffffffu;
    int best = -1;
    for (uint base = 0; base < nt; base += lsz) {
        uint count = min(lsz, nt - base);
        // Cooperative, coalesced load of the tile: lsz descriptors of 64 floats.
        for (uint k = lid; k < count * DESC_LEN; k += lsz)
            tile[k] = train[(size_t)base * DESC_LEN + k];
        if (lid < count) tile_sign[lid] = tsign[base + lid];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (q < nq) {
            for (uint t = 0; t < count; ++t) {
                if (!sign_ok(s, tile_sign[t])) continue;
                uint d = dist_key_f32(mine, tile + t * DESC_LEN);
                if (d < d1) {
                    d2 = d1;
                    d1 = d;
                    best = (int)(base + t);
                } else if (d < d2) {
                    d2 = d;
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (q < nq) {
        out += out_base;
        out[(size_t)q * 3 + 0] = (uint)best;
        out[(size_t)q * 3 + 1] = d1;
        out[(size_t)q * 3 + 2] = d2;
    }
}

// Q7: squared integer distance (exact), same tie rule.
__kernel void nn2_q7(__global const char* query, __global const char* qsign, uint nq,
                     __global const char* train, __global const char* tsign, uint nt,
                     __global uint* out, uint out_base, __local char* tile,
                     __local char* tile_sign) {
    uint q = get_global_id(0);
    uint lid = get_local_id(0), lsz = get_local_size(0);
    char mine[DESC_LEN];
    char s = 0;
    if (q < nq) {
        for (int k = 0; k < DESC_LEN; ++k) mine[k] = query[(size_t)q * DESC_LEN + k];
        s = qsign[q];
    }
    uint d1 = 0xffffffffu, d2 = 0xffffffffu;
    int best = -1;
    for (uint base = 0; base < nt; base += lsz) {
        uint count = min(lsz, nt - base);
        for (uint k = lid; k < count * DESC_LEN; k += lsz)
            tile[k] = train[(size_t)base * DESC_LEN + k];
        if (lid < count) tile_sign[lid] = tsign[base + lid];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (q < nq) {
            for (uint t = 0; t < count; ++t) {
                if (!sign_ok(s, tile_sign[t])) continue;
                int acc = 0;
                for (int k = 0; k < DESC_LEN; ++k) {
                    int diff = (int)mine[k] - (int)tile[t * DESC_LEN + k];
                    acc += diff * diff;
                }
                uint d = (uint)acc;
                if (d < d1) {
                    d2 = d1;
                    d1 = d;
                    best = (int)(base + t);
                } else if (d < d2) {
                    d2 = d;
                }
            }
        }
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    if (q < nq) {
        out += out_base;
        out[(size_t)q * 3 + 0] = (uint)best;
        out[(size_t)q * 3 + 1] = d1;
        out[(size_t)q * 3 + 2] = d2;
    }
}
