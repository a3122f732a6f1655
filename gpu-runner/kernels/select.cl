// surfcl: the strongest-N selection shared by every detector (OpenCL C 1.2).
//
// A detector's NMS appends its candidates in any order: KP_WORDS words each in `cand`, and a
// 64-bit key in `keys` whose ascending order is `Keypoint::rank_cmp` (strongest first). Keys are
// unique (they end with the candidate's position), so sorting them gives one order whatever the
// order of the appends. No host round trip:
//   sort_runs    sorts runs of RUN_PER_ITEM keys per work-item in local memory (bitonic);
// then, when the candidate bound spans few runs (the usual frame: two launches in all),
//   rank_runs    ranks every key by binary searches in the other runs (on a GPU, one run per
//                work-item of a key's lanes) and copies the kept records to their rank;
// and otherwise a merge sort, O(n log^2 n):
//   merge_runs   merges pairs of sorted runs of `width`: every key lands at its own position in
//                its run plus the number of smaller keys in the partner run; the host launches
//                it for width = run, 2 run, 4 run, ... below the candidate bound (a pass whose
//                partner runs are empty only copies);
//   scatter_kept copies the records of the first min(n, max_keypoints) sorted candidates to
//                the result, strongest first.
// n, the candidate count, is read on the device from the result header; work-items past it
// leave at once (in rank_runs they still pass its barriers). The layout names come from the
// host as -D options (record.rs).
#pragma OPENCL FP_CONTRACT OFF

inline uint candidate_count(__global const uint* result, uint capacity) {
    return min(result[H_CANDIDATES], capacity);
}

// (key, index) order; indices break the tie between padding entries (key ~0) and a real key ~0.
inline bool before(ulong ka, uint ia, ulong kb, uint ib) {
    return ka < kb || (ka == kb && ia < ib);
}

// Copies words first, first + stride, ... of candidate i's record to the result's record
// `rank` (stride 1: the whole record; several work-items may share a record's words).
inline void copy_record(__global const uint* cand, uint i, __global uint* result, uint rank,
                        uint first, uint stride) {
    __global uint* dst = result + HEADER_WORDS + (size_t)rank * RECORD_WORDS;
    __global const uint* src = cand + (size_t)i * KP_WORDS;
    for (uint k = first; k < KP_WORDS; k += stride) dst[k] = src[k];
}

// Sorts keys[base .. base + run) (the part below n) in place, run = RUN_PER_ITEM keys per
// work-item (a power of two), and writes the candidate index of each sorted key to idx.
__kernel void sort_runs(__global ulong* keys, __global uint* idx, uint capacity,
                        __global const uint* result, __local ulong* lk, __local uint* li) {
    uint n = candidate_count(result, capacity);
    uint lsz = get_local_size(0);
    uint lid = get_local_id(0);
    uint run = lsz * RUN_PER_ITEM;
    uint base = get_group_id(0) * run;
    // Uniform per work-group: whole groups past the candidates leave before any barrier.
    if (base >= n) return;
    for (uint t = lid; t < run; t += lsz) {
        uint p = base + t;
        // Padding past n sorts last: the largest key, and indices past every real one.
        lk[t] = p < n ? keys[p] : ~0ul;
        li[t] = p;
    }
    barrier(CLK_LOCAL_MEM_FENCE);
    // Bitonic network; comparator c joins i (bit j clear) and i + j, ascending where bit k of i
    // is clear.
    for (uint k = 2u; k <= run; k <<= 1) {
        for (uint j = k >> 1; j > 0u; j >>= 1) {
            for (uint c = lid; c < run / 2u; c += lsz) {
                uint i = 2u * c - (c & (j - 1u));
                uint q = i + j;
                ulong a = lk[i], b = lk[q];
                uint ia = li[i], ib = li[q];
                if (before(b, ib, a, ia) == ((i & k) == 0u)) {
                    lk[i] = b;
                    lk[q] = a;
                    li[i] = ib;
                    li[q] = ia;
                }
            }
            barrier(CLK_LOCAL_MEM_FENCE);
        }
    }
    for (uint t = lid; t < run; t += lsz) {
        uint p = base + t;
        if (p < n) {
            keys[p] = lk[t];
            idx[p] = li[t];
        }
    }
}

// Smaller keys in keys[lo .. hi) (sorted; keys are unique, so "smaller" and "not larger" agree).
inline uint smaller_in(__global const ulong* keys, uint lo, uint hi, ulong key) {
    uint a = lo, b = hi;
    while (a < b) {
        uint m = a + (b - a) / 2u;
        if (keys[m] < key) a = m + 1u;
        else b = m;
    }
    return a - lo;
}

// Few runs (the usual frame): every key's rank is its position in its run plus the smaller
// keys of every other run; the kept records go straight to their rank. `lanes` work-items
// (a power of two dividing the work-group) share a key, each searching every lanes-th run, so
// that on a GPU a key waits on one binary search instead of one per run; their counts are
// summed in `partial` (one word per work-item). O(n runs log run) in all.
__kernel void rank_runs(__global const ulong* keys, __global const uint* idx,
                        __global const uint* cand, uint capacity, uint max_keypoints,
                        __global uint* result, uint run, uint lanes, __local uint* partial) {
    uint n = candidate_count(result, capacity);
    uint lid = get_local_id(0);
    uint lane = lid % lanes;
    uint p = get_group_id(0) * (get_local_size(0) / lanes) + lid / lanes;
    uint count = 0u;
    if (p < n) {
        ulong mine = keys[p];
        uint own = p / run;
        uint runs = (n + run - 1u) / run;
        // A lane stops once its own count reaches max_keypoints: the key's total does too, so
        // it is not kept whatever the other lanes find (kept keys search every run).
        for (uint r = lane; r < runs && count < max_keypoints; r += lanes) {
            uint lo = r * run;
            count += r == own ? p - lo : smaller_in(keys, lo, min(lo + run, n), mine);
        }
    }
    // Every work-item reaches the barriers (groups past the candidates too: PoCL 5 crashed on
    // an early return of whole groups before this loop of barriers).
    partial[lid] = count;
    barrier(CLK_LOCAL_MEM_FENCE);
    for (uint step = lanes / 2u; step > 0u; step >>= 1) {
        if (lane < step) partial[lid] += partial[lid + step];
        barrier(CLK_LOCAL_MEM_FENCE);
    }
    uint rank = partial[lid - lane];
    if (p < n && rank < max_keypoints) copy_record(cand, idx[p], result, rank, lane, lanes);
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
    uint out = first + (p - own) + smaller_in(keys_in, lo, hi, mine);
    keys_out[out] = mine;
    idx_out[out] = idx_in[p];
}

__kernel void scatter_kept(__global const uint* cand, __global const uint* idx, uint capacity,
                           uint max_keypoints, __global uint* result) {
    uint r = get_global_id(0);
    if (r >= min(candidate_count(result, capacity), max_keypoints)) return;
    copy_record(cand, idx[r], result, r, 0u, 1u);
}
