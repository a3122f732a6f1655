// surfcl: the strongest-N selection shared by every detector (OpenCL C 1.2).
//
// A detector's NMS appends its candidates in any order: KP_WORDS words each in `cand`, and a
// 64-bit key in `keys` whose ascending order is `Keypoint::rank_cmp` (strongest first). Keys are
// unique (they end with the candidate's position), so sorting them gives one order whatever the
// order of the appends. The sort is a merge sort in O(n log^2 n) work and no host round trip:
//   sort_runs   sorts runs of the work-group size in local memory (bitonic network);
//   merge_runs  merges pairs of sorted runs of `width`: every key lands at its own position in
//               its run plus the number of smaller keys in the partner run (a binary search);
//               the host launches it for width = run, 2 run, 4 run, ... below the candidate
//               bound, and a pass whose partner runs are empty only copies;
//   scatter_kept copies the records of the first min(n, max_keypoints) sorted candidates to
//               the result, strongest first.
// n, the candidate count, is read on the device from the result header; work-items past it
// leave at once. The layout names come from the host as -D options (record.rs).
#pragma OPENCL FP_CONTRACT OFF

inline uint candidate_count(__global const uint* result, uint capacity) {
    return min(result[H_CANDIDATES], capacity);
}

// (key, index) order; indices break the tie between padding entries (key ~0) and a real key ~0.
inline bool before(ulong ka, uint ia, ulong kb, uint ib) {
    return ka < kb || (ka == kb && ia < ib);
}

// Sorts keys[base .. base + lsz) (the part below n) in place and writes the candidate index of
// each sorted key to idx. The group size is a power of two.
__kernel void sort_runs(__global ulong* keys, __global uint* idx, uint capacity,
                        __global const uint* result, __local ulong* lk, __local uint* li) {
    uint n = candidate_count(result, capacity);
    uint lsz = get_local_size(0);
    uint lid = get_local_id(0);
    uint base = get_group_id(0) * lsz;
    // Uniform per work-group: whole groups past the candidates leave before any barrier.
    if (base >= n) return;
    uint p = base + lid;
    // Padding past n sorts last: the largest key, and indices past every real one.
    lk[lid] = p < n ? keys[p] : ~0ul;
    li[lid] = p;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint k = 2u; k <= lsz; k <<= 1) {
        for (uint j = k >> 1; j > 0u; j >>= 1) {
            uint q = lid ^ j;
            if (q > lid) {
                ulong a = lk[lid], b = lk[q];
                uint ia = li[lid], ib = li[q];
                bool ascending = (lid & k) == 0u;
                if (before(b, ib, a, ia) == ascending) {
                    lk[lid] = b;
                    lk[q] = a;
                    li[lid] = ib;
                    li[q] = ia;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    if (p < n) {
        keys[p] = lk[lid];
        idx[p] = li[lid];
    }
}

__kernel void merge_runs(__global const ulong* keys_in, __global const uint* idx_in,
                         __global ulong* keys_out, __global uint* idx_out, uint capacity,
                         __global const uint* result, uint width) {
    uint n = candidate_count(result, capacity);
    uint p = get_global_id(0);
    if (p >= n) return;
    ulong mine = keys_in[p];
    uint run = p / width;
    uint own = run * width;
    uint first = (run & ~1u) * width;
    uint partner = (run ^ 1u) * width;
    uint lo = min(partner, n);
    uint hi = min(partner + width, n);  // candidates are far below 2^31: no overflow
    // Smaller keys in the partner run (keys are unique, so "smaller" and "not larger" agree).
    uint a = lo, b = hi;
    while (a < b) {
        uint m = a + (b - a) / 2u;
        if (keys_in[m] < mine) a = m + 1u;
        else b = m;
    }
    uint out = first + (p - own) + (a - lo);
    keys_out[out] = mine;
    idx_out[out] = idx_in[p];
}

__kernel void scatter_kept(__global const uint* cand, __global const uint* idx, uint capacity,
                           uint max_keypoints, __global uint* result) {
    uint r = get_global_id(0);
    if (r >= min(candidate_count(result, capacity), max_keypoints)) return;
    __global uint* dst = result + HEADER_WORDS + (size_t)r * RECORD_WORDS;
    __global const uint* src = cand + (size_t)idx[r] * KP_WORDS;
    for (int k = 0; k < KP_WORDS; ++k) dst[k] = src[k];
}
