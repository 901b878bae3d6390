// kvlab's CUDA calibration kernels, compiled at run time by NVRTC (src/calibrate/cuda/nvrtc.rs)
// to a cubin for the device's architecture. See docs/CALIBRATION.md.
//
// Pool layout (one layer): word k of plane p of slot o of block b is at word index
//   ((b * planes + p) * block_size + o) * plane_words + k
// A plane is K or V of one KV head, so within a block each (head, K|V) is one run of
// block_size * plane_bytes bytes: the head-major block layout of vLLM's paged-attention CUDA
// kernels (key_cache [num_blocks, num_kv_heads, head_size/x, block_size, x], value_cache
// [num_blocks, num_kv_heads, head_size, block_size]), where one (block, head) is contiguous.
//
// Reads use 16-byte vectors (two words) and keep UNROLL independent loads in flight per thread.
// Checksum of a gather: sum over sequences and tokens t of (2t + 1) * (sum of the token's words),
// wrapping at 2^64; it depends on which bytes sit at which logical position, not on read order.

typedef unsigned long long u64;
typedef unsigned int u32;

#define UNROLL 4

__device__ __forceinline__ u64 splitmix64(u64 z) {
    z += 0x9E3779B97F4A7C15ULL;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

__device__ __forceinline__ u32 umin(u32 a, u32 b) { return a < b ? a : b; }

__device__ __forceinline__ u64 kv_word(u64 seed, u32 index, u32 k) {
    return splitmix64(seed + ((((u64)index) << 32) | (u64)k));
}

__device__ __forceinline__ u64 vsum(ulonglong2 v) { return v.x + v.y; }

// Folds vectors first, first + step, ... (< vecs) of `run` into a checksum: UNROLL independent
// 16-byte loads in flight, then each vector's sum weighted by its token's 2t + 1, where
// t = t0 + (v >> pvshift) (pvshift = log2 of vectors per plane; 31 weights every vector 1).
__device__ __forceinline__ u64 fold_run(const ulonglong2* run, u32 vecs, u32 first, u32 step, u32 t0, u32 pvshift) {
    u64 acc = 0;
    for (u32 v = first; v < vecs; v += step * UNROLL) {
        ulonglong2 x[UNROLL];
#pragma unroll
        for (u32 u = 0; u < UNROLL; u++) {
            u32 vv = v + step * u;
            x[u] = vv < vecs ? __ldg(run + vv) : make_ulonglong2(0ull, 0ull);
        }
#pragma unroll
        for (u32 u = 0; u < UNROLL; u++) {
            acc += vsum(x[u]) * (2ull * (t0 + ((v + step * u) >> pvshift)) + 1ull);
        }
    }
    return acc;
}

// Every thread of the block must reach this (blockDim.x is a multiple of 32).
__device__ __forceinline__ void reduce_add(u64* out, u64 acc) {
    for (int o = 16; o > 0; o >>= 1) acc += __shfl_down_sync(0xffffffffu, acc, o);
    if ((threadIdx.x & 31u) == 0u) {
        u32 slot = (blockIdx.x * 131u + blockIdx.y * 31u + blockIdx.z * 7u + (threadIdx.x >> 5)) & 1023u;
        atomicAdd(out + slot, acc);
    }
}

// One thread block per write; desc holds (block, offset, n, seed) per write.
extern "C" __global__ void kv_write(u64* pool, const u64* desc, u32 planes, u32 block_size, u32 plane_words) {
    const u64* d = desc + 4ull * blockIdx.x;
    u32 block = (u32)d[0], offset = (u32)d[1], n = (u32)d[2];
    u64 seed = d[3];
    u32 token_words = planes * plane_words;
    u32 total = n * token_words;
    for (u32 w = threadIdx.x; w < total; w += blockDim.x) {
        u32 i = w / token_words, k = w % token_words;
        u32 p = k / plane_words, kk = k % plane_words;
        u64 idx = (((u64)block * planes + p) * block_size + offset + i) * plane_words + kk;
        pool[idx] = kv_word(seed, i, k);
    }
}

// The paged gather, shaped like vLLM's paged-attention kernel: grid x = a chunk of the
// sequence's blocks, y = sequence, z = plane (KV head and K|V). Each warp takes one block at a
// time: one block-table lookup per block, then the block's run for this plane read by the warp's
// lanes with 16-byte loads, UNROLL loads in flight per lane.
extern "C" __global__ void gather_paged(const ulonglong2* pool, const u32* tables, const u32* table_off,
        const u32* tokens, u32 planes, u32 bshift, u32 pvshift, u32 chunk_blocks, u64* out) {
    u32 s = blockIdx.y, p = blockIdx.z, n = tokens[s];
    u32 nblocks = (n + (1u << bshift) - 1u) >> bshift;
    u32 b_lo = blockIdx.x * chunk_blocks;
    u32 b_hi = umin(nblocks, b_lo + chunk_blocks);
    const u32* table = tables + table_off[s];
    u32 lane = threadIdx.x & 31u, nwarps = blockDim.x >> 5;
    u64 acc = 0;
    for (u32 j = b_lo + (threadIdx.x >> 5); j < b_hi; j += nwarps) {
        u64 phys = table[j];
        u32 t0 = j << bshift;
        u32 vecs = umin(n - t0, 1u << bshift) << pvshift;
        const ulonglong2* run = pool + (((phys * planes + p) << bshift) << pvshift);
        acc += fold_run(run, vecs, lane, 32u, t0, pvshift);
    }
    reduce_add(out, acc);
}

// The contiguous gather: the same tokens, grid and chunks as gather_paged, read from a copy that
// holds each (sequence, plane) as one run; all threads of the block stream the chunk's run.
extern "C" __global__ void gather_contiguous(const ulonglong2* staging, const u64* seq_base, const u32* tokens,
        u32 bshift, u32 pvshift, u32 chunk_blocks, u64* out) {
    u32 s = blockIdx.y, p = blockIdx.z, n = tokens[s];
    u32 t_lo = (blockIdx.x * chunk_blocks) << bshift;
    u32 t_hi = umin(n, t_lo + (chunk_blocks << bshift));
    u64 acc = 0;
    if (t_lo < t_hi) {
        const ulonglong2* base = staging + ((seq_base[s] + (((u64)p * n + t_lo) << (pvshift + 1u))) >> 1);
        acc = fold_run(base, (t_hi - t_lo) << pvshift, threadIdx.x, blockDim.x, t_lo, pvshift);
    }
    reduce_add(out, acc);
}

// Copies the batch into the contiguous layout (untimed). It walks the batch token by token with
// its own index arithmetic (not the gathers' loops); the calibration checks both gathers against
// a reference computed on the host from what was written, so a shared indexing bug cannot pass.
extern "C" __global__ void stage_contiguous(const u64* pool, const u32* tables, const u32* table_off,
        const u32* tokens, const u64* seq_base, u32 planes, u32 block_size, u32 plane_words, u64* staging) {
    u32 s = blockIdx.y, p = blockIdx.z, n = tokens[s];
    const u32* table = tables + table_off[s];
    u64* dst = staging + seq_base[s] + (u64)p * n * plane_words;
    u64 words = (u64)n * plane_words;
    for (u64 w = (u64)blockIdx.x * blockDim.x + threadIdx.x; w < words; w += (u64)gridDim.x * blockDim.x) {
        u32 t = (u32)(w / plane_words), k = (u32)(w % plane_words);
        u64 b = table[t / block_size];
        dst[w] = pool[((b * planes + p) * block_size + t % block_size) * plane_words + k];
    }
}

// Streams `vecs` 16-byte vectors once (a plain sum, fewer than 2^32 vectors): the device's
// streaming read bandwidth.
extern "C" __global__ void read_stream(const ulonglong2* data, u64 vecs, u64* out) {
    u32 first = blockIdx.x * blockDim.x + threadIdx.x;
    reduce_add(out, fold_run(data, (u32)vecs, first, gridDim.x * blockDim.x, 0u, 31u));
}
