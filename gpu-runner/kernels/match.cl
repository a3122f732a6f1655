// surfcl: fused distance + 2-NN matcher (OpenCL C 1.2).
//
// A work-group takes `get_local_size(0)` queries (one per work-item, its descriptor in
// registers as 16 float4) against one *chunk* of the train set: the train descriptors of the
// chunk stream through local memory in tiles of `get_local_size(0)` descriptors (float4 loads,
// read by every work-item at the same address: a broadcast), so no distance matrix ever reaches
// global memory. Splitting the train set into chunks gives (query groups x chunks) work-groups,
// enough to fill the device even for a few thousand queries; `nn2_merge` then combines the
// chunks' 2-NN in chunk order, which is the same as one sequential pass (ties keep the lower
// train index). With one chunk the 2-NN kernel writes the final result directly.
// Distances are accumulated in surfcl-core's 16-lane order, so the f32 squared distances are
// bit-identical to the CPU's. The same kernel run with query and train swapped gives the
// reverse nearest neighbour used by the mutual check.
#pragma OPENCL FP_CONTRACT OFF

#define DESC_VEC 16

// Whether the Laplacian signs allow a match (0 is compatible with anything).
inline bool sign_ok(char a, char b) { return a == 0 || b == 0 || a == b; }

// The squared L2 distance in surfcl-core's fixed 16-lane order (core/src/matcher.rs): lane j
// accumulates components j, 16 + j, 32 + j, 48 + j; then lanes j and j + 8, then j and j + 4,
// then (0 + 2) + (1 + 3). As the bits of the non-negative f32: ordering the bits orders the
// distances.
inline uint dist_key_f32(const float4* a, __local const float4* b) {
    float4 acc0 = (float4)(0.0f), acc1 = (float4)(0.0f), acc2 = (float4)(0.0f),
           acc3 = (float4)(0.0f);
    for (int k = 0; k < 4; ++k) {
        float4 d0 = a[4 * k + 0] - b[4 * k + 0];
        float4 d1 = a[4 * k + 1] - b[4 * k + 1];
        float4 d2 = a[4 * k + 2] - b[4 * k + 2];
        float4 d3 = a[4 * k + 3] - b[4 * k + 3];
        acc0 = acc0 + d0 * d0;
        acc1 = acc1 + d1 * d1;
        acc2 = acc2 + d2 * d2;
        acc3 = acc3 + d3 * d3;
    }
    float4 h0 = acc0 + acc2;  // lanes 0..3 + lanes 8..11
    float4 h1 = acc1 + acc3;  // lanes 4..7 + lanes 12..15
    float4 q = h0 + h1;
    return as_uint((q.x + q.z) + (q.y + q.w));
}

// Work-items take their group's queries in Laplacian-sign order (-1, 0, +1, then the padding
// past `nq`; stable): a warp's queries then mostly share a sign, so the trains of the other sign
// are skipped by the whole warp at once instead of diverging, and with the sign test on about
// half the distances are never computed. Returns the query of this work-item. Needs every
// work-item of the group (two barriers).
inline uint query_in_sign_order(__global const char* qsign, uint nq, uint qbase,
                                __local uchar* qclass, __local ushort* order) {
    uint lid = get_local_id(0), lsz = get_local_size(0);
    uint qraw = qbase + lid;
    uchar c = 3;
    if (qraw < nq) {
        char sv = qsign[qraw];
        c = sv < 0 ? 0 : (sv == 0 ? 1 : 2);
    }
    qclass[lid] = c;
    barrier(CLK_LOCAL_MEM_FENCE);
    uint rank = 0;
    for (uint k = 0; k < lsz; ++k) {
        uchar ck = qclass[k];
        rank += (ck < c) || (ck == c && k < lid);
    }
    order[rank] = (ushort)lid;
    barrier(CLK_LOCAL_MEM_FENCE);
    return qbase + order[lid];
}

// Writes (best index or -1, best key, second key) of query q for chunk `chunk` at
// out[out_base + 3 * (chunk * nq + q)]; keys are u32::MAX when there is none.
// Without the sign test the host uploads zero signs (0 is compatible with everything).
// Work-group g: chunk = g / qgroups, query group = g % qgroups.
__kernel void nn2_f32(__global const float* query, __global const char* qsign, uint nq,
                      __global const float* train, __global const char* tsign, uint nt,
                      __global uint* out, uint out_base, uint chunk_len, uint qgroups,
                      __local float4* tile, __local char* tile_sign, __local uchar* qclass,
                      __local ushort* order) {
    uint lid = get_local_id(0), lsz = get_local_size(0);
    uint g = get_group_id(0);
    uint chunk = g / qgroups;
    uint q = query_in_sign_order(qsign, nq, (g - chunk * qgroups) * lsz, qclass, order);
    uint t_begin = chunk * chunk_len;
    uint t_end = min(t_begin + chunk_len, nt);
    float4 mine[DESC_VEC];
    char s = 0;
    if (q < nq) {
        for (int k = 0; k < DESC_VEC; ++k) mine[k] = vload4((size_t)q * DESC_VEC + k, query);
        s = qsign[q];
    } else {
        for (int k = 0; k < DESC_VEC; ++k) mine[k] = (float4)(0.0f);
    }
    uint d1 = 0xffffffffu, d2 = 0xffffffffu;
    int best = -1;
    for (uint base = t_begin; base < t_end; base += lsz) {
        uint count = min(lsz, t_end - base);
        // Cooperative, coalesced load of the tile: `count` descriptors of 16 float4.
        for (uint k = lid; k < count * DESC_VEC; k += lsz)
            tile[k] = vload4((size_t)base * DESC_VEC + k, train);
        if (lid < count) tile_sign[lid] = tsign[base + lid];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (q < nq) {
            for (uint t = 0; t < count; ++t) {
                if (!sign_ok(s, tile_sign[t])) continue;
                uint d = dist_key_f32(mine, tile + t * DESC_VEC);
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
        __global uint* o = out + out_base + 3 * ((size_t)chunk * nq + q);
        o[0] = (uint)best;
        o[1] = d1;
        o[2] = d2;
    }
}

// Q7: squared integer distance (exact), same chunking and tie rule.
__kernel void nn2_q7(__global const char* query, __global const char* qsign, uint nq,
                     __global const char* train, __global const char* tsign, uint nt,
                     __global uint* out, uint out_base, uint chunk_len, uint qgroups,
                     __local char* tile, __local char* tile_sign, __local uchar* qclass,
                     __local ushort* order) {
    uint lid = get_local_id(0), lsz = get_local_size(0);
    uint g = get_group_id(0);
    uint chunk = g / qgroups;
    uint q = query_in_sign_order(qsign, nq, (g - chunk * qgroups) * lsz, qclass, order);
    uint t_begin = chunk * chunk_len;
    uint t_end = min(t_begin + chunk_len, nt);
    int mine[DESC_LEN];
    char s = 0;
    for (int k = 0; k < DESC_LEN; ++k)
        mine[k] = q < nq ? (int)query[(size_t)q * DESC_LEN + k] : 0;
    if (q < nq) s = qsign[q];
    uint d1 = 0xffffffffu, d2 = 0xffffffffu;
    int best = -1;
    for (uint base = t_begin; base < t_end; base += lsz) {
        uint count = min(lsz, t_end - base);
        for (uint k = lid; k < count * DESC_LEN; k += lsz)
            tile[k] = train[(size_t)base * DESC_LEN + k];
        if (lid < count) tile_sign[lid] = tsign[base + lid];
        barrier(CLK_LOCAL_MEM_FENCE);
        if (q < nq) {
            for (uint t = 0; t < count; ++t) {
                if (!sign_ok(s, tile_sign[t])) continue;
                int acc = 0;
                for (int k = 0; k < DESC_LEN; ++k) {
                    int diff = mine[k] - (int)tile[t * DESC_LEN + k];
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
        __global uint* o = out + out_base + 3 * ((size_t)chunk * nq + q);
        o[0] = (uint)best;
        o[1] = d1;
        o[2] = d2;
    }
}

// Combines the per-chunk 2-NN of every query, chunks in ascending order: a later chunk's best
// replaces the running best only when strictly smaller (ties keep the lower train index), which
// gives exactly the result of one pass over all trains.
__kernel void nn2_merge(__global const uint* part, uint part_base, uint nq, uint chunks,
                        __global uint* out, uint out_base) {
    uint q = get_global_id(0);
    if (q >= nq) return;
    uint best = 0xffffffffu, d1 = 0xffffffffu, d2 = 0xffffffffu;
    for (uint c = 0; c < chunks; ++c) {
        __global const uint* p = part + part_base + 3 * ((size_t)c * nq + q);
        uint b = p[0], e1 = p[1], e2 = p[2];
        if (e1 < d1) {
            d2 = min(d1, e2);
            d1 = e1;
            best = b;
        } else {
            d2 = min(d2, e1);
        }
    }
    __global uint* o = out + out_base + 3 * (size_t)q;
    o[0] = best;
    o[1] = d1;
    o[2] = d2;
}

// Copies the descriptors (and Laplacian signs) of the kept records of a result buffer into the
// matcher's flat arrays, so a frame's descriptors are matched without leaving the device:
// min(n, found) records, where found is the header's H_CANDIDATES word, so a gather can be
// enqueued before the host knows the count. The layout is record.rs's, passed as -D options
// (HEADER_WORDS, records of KP_WORDS keypoint words and DESC_LEN descriptor words; the sign is the
// META_LAPLACIAN_SHIFT byte of KP_META). `sign_test` 0 writes zero signs (compatible with all).
__kernel void gather_records(__global const uint* result, uint n, int sign_test,
                             __global float* desc, __global char* sign) {
    uint gid = get_global_id(0);
    uint count = min(n, result[H_CANDIDATES]);
    if (gid >= count * DESC_LEN) return;
    uint r = gid / DESC_LEN, k = gid - r * DESC_LEN;
    __global const uint* rec = result + HEADER_WORDS + (size_t)r * RECORD_WORDS;
    desc[gid] = as_float(rec[KP_WORDS + k]);
    if (k == 0) sign[r] = sign_test ? (char)(uchar)((rec[KP_META] >> META_LAPLACIAN_SHIFT) & 0xffu) : (char)0;
}
