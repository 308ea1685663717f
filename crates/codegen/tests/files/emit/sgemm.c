/* tessera: kernel sgemm as C (symbols sgemm_*).
 * Buffers (buffers[k] of every step):
 *   0: a float32[1], in
 *   1: b float32[1], in
 *   2: A float32[4096], in
 *   3: B float32[4096], in
 *   4: C float32[4096], inout
 */
#ifndef TSR_PRELUDE
#define TSR_PRELUDE
#include <math.h>
#include <stdbool.h>
#include <stdint.h>

/* What a step returns when it fails, as the kernel VM does. */
#define TSR_ERR_GATHER 1   /* a gather position is out of bounds */
#define TSR_ERR_DIV_ZERO 2 /* an integer division or modulo by zero */

/* fmax and fmin as C defines them (a NaN operand is ignored), written as
   comparisons so that gcc vectorizes them instead of calling libm. */
static inline float tsr_fmaxf(float x, float y) { return (x >= y || y != y) ? x : y; }
static inline float tsr_fminf(float x, float y) { return (x <= y || y != y) ? x : y; }
static inline double tsr_fmax(double x, double y) { return (x >= y || y != y) ? x : y; }
static inline double tsr_fmin(double x, double y) { return (x <= y || y != y) ? x : y; }
static inline int64_t tsr_max(int64_t a, int64_t b) { return a > b ? a : b; }
static inline int64_t tsr_min(int64_t a, int64_t b) { return a < b ? a : b; }

#if defined(__AVX512F__)
#include <immintrin.h>
/* The mask of lanes lo <= v < hi of a 16-lane vector (0 <= lo, hi <= 16). */
static inline __mmask16 tsr_lanes16(int64_t lo, int64_t hi) {
  if (hi <= lo) return 0;
  return (__mmask16)(((1u << hi) - 1u) & ~((1u << lo) - 1u));
}
/* tsr_fmaxf and tsr_fminf lane by lane: x where the comparison holds or y
   is NaN, else y. */
static inline __m512 tsr_fmax16(__m512 x, __m512 y) {
  __mmask16 k = _mm512_cmp_ps_mask(x, y, _CMP_GE_OQ) | _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
  return _mm512_mask_blend_ps(k, y, x);
}
static inline __m512 tsr_fmin16(__m512 x, __m512 y) {
  __mmask16 k = _mm512_cmp_ps_mask(x, y, _CMP_LE_OQ) | _mm512_cmp_ps_mask(y, y, _CMP_UNORD_Q);
  return _mm512_mask_blend_ps(k, y, x);
}
#endif

/* Floor division and modulo (Python's // and %) for b != 0. b == -1 is
   handled apart: INT64_MIN / -1 overflows, and its true quotient 2^63
   wraps to INT64_MIN. */
static inline int64_t tsr_floordiv(int64_t a, int64_t b) {
  if (b == -1) return (int64_t)(0 - (uint64_t)a);
  int64_t q = a / b, r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? q - 1 : q;
}
static inline int64_t tsr_floormod(int64_t a, int64_t b) {
  if (b == -1) return 0;
  int64_t r = a % b;
  return (r != 0 && ((r < 0) != (b < 0))) ? r + b : r;
}

/* Float modulo with the sign of the divisor: the exact fmod, moved into
   the divisor's sign by adding the divisor once. */
static inline float tsr_fmodf(float a, float b) {
  float r = fmodf(a, b);
  if (r == 0) return copysignf(0.0f, b);
  return ((r < 0) != (b < 0)) ? r + b : r;
}
static inline double tsr_fmod(double a, double b) {
  double r = fmod(a, b);
  if (r == 0) return copysign(0.0, b);
  return ((r < 0) != (b < 0)) ? r + b : r;
}

/* Float to integer: truncation toward zero, saturating at the ends of
   int64 (uint64 for tsr_f2u), NaN to 0. */
static inline int64_t tsr_f2i(double x) {
  if (x != x) return 0;
  if (x >= 9223372036854775808.0) return INT64_MAX;
  if (x <= -9223372036854775808.0) return INT64_MIN;
  return (int64_t)x;
}
static inline uint64_t tsr_f2u(double x) {
  if (x >= 0) return x >= 18446744073709551616.0 ? UINT64_MAX : (uint64_t)x;
  return (uint64_t)tsr_f2i(x);
}
#endif

const char sgemm_abi[] = "tessera-c 1; buffers float32[1] float32[1] float32[4096] float32[4096] float32[4096]; steps 1";

/* Step 0 of sgemm: block s1_C_fused_vec #fused #parallel
 * C(i, j) = b * C(i, j) where i in 0:N, j in 0:K; C(i, j) += a * A(i, k) * B(k, j) where i in 0:N, j in 0:K, k in 0:M
 * Runs lo <= i < hi of its parallel index (range 64).
 */
int32_t sgemm_0(void *const *buffers, int64_t lo, int64_t hi)
{
  int32_t tsr_err = 0;
  const float *restrict a = (const float *)buffers[0];
  const float *restrict b = (const float *)buffers[1];
  const float *restrict A = (const float *)buffers[2];
  const float *restrict B = (const float *)buffers[3];
  float *restrict C = (float *)buffers[4];
  for (int64_t i = tsr_max(lo, 0); i < tsr_min(hi, 64); i++) {
    for (int64_t j = 0; j < 8; j++) {
      /* block s1_C_fused_tile #interchanged */
      {
        _Alignas(64) float C_acc[8] = {0};
        /* block s1_C_fused_tile_pre #vector */
#if defined(__AVX512F__)
        const __mmask16 lanes = tsr_lanes16(0, 8);
        if (lanes) {
          const __m512 init = _mm512_maskz_loadu_ps(lanes, &C[64*i + 8*j]);
          _mm512_mask_storeu_ps(&C_acc[0], lanes, init);
          const __m512 t1 = _mm512_set1_ps(b[0]);
          const __m512 t2 = _mm512_maskz_loadu_ps(lanes, &C_acc[0]);
          const __m512 t3 = _mm512_mul_ps(t1, t2);
          _mm512_mask_storeu_ps(&C_acc[0], lanes, t3);
        }
#else
        #pragma GCC ivdep
        for (int64_t j_2 = 0; j_2 < 8; j_2++) {
          const float init_2 = C[64*i + 8*j + j_2];
          C_acc[j_2] = init_2;
          const float t1_2 = b[0];
          const float t2_2 = C_acc[j_2];
          const float t3_2 = t1_2 * t2_2;
          C_acc[j_2] = t3_2;
        }
#endif
        /* block s2_C #vector: C(i, j) += a * A(i, k) * B(k, j) where i in 0:N, j in 0:K, k in 0:M */
#if defined(__AVX512F__)
        const __mmask16 lanes_2 = tsr_lanes16(0, 8);
        if (lanes_2) {
          const __m512 t1_3 = _mm512_set1_ps(a[0]);
          for (int64_t k = 0; k < 64; k++) {
            const __m512 t2_3 = _mm512_set1_ps(A[64*i + k]);
            const __m512 t3_3 = _mm512_mul_ps(t1_3, t2_3);
            const __m512 t4 = _mm512_maskz_loadu_ps(lanes_2, &B[8*j + 64*k]);
            const __m512 t5 = _mm512_mul_ps(t3_3, t4);
            _mm512_mask_storeu_ps(&C_acc[0], lanes_2, _mm512_add_ps(_mm512_maskz_loadu_ps(lanes_2, &C_acc[0]), t5));
          }
        }
#else
        for (int64_t k = 0; k < 64; k++) {
        #pragma GCC ivdep
          for (int64_t j_lane = 0; j_lane < 8; j_lane++) {
            const float t1_4 = a[0];
            const float t2_4 = A[64*i + k];
            const float t3_4 = t1_4 * t2_4;
            const float t4_2 = B[8*j + 64*k + j_lane];
            const float t5_2 = t3_4 * t4_2;
            C_acc[j_lane] = C_acc[j_lane] + t5_2;
          }
        }
#endif
        /* block s1_C_fused_tile_post #vector */
#if defined(__AVX512F__)
        const __mmask16 lanes_3 = tsr_lanes16(0, 8);
        if (lanes_3) {
          const __m512 acc = _mm512_maskz_loadu_ps(lanes_3, &C_acc[0]);
          _mm512_mask_storeu_ps(&C[64*i + 8*j], lanes_3, acc);
        }
#else
        #pragma GCC ivdep
        for (int64_t j_3 = 0; j_3 < 8; j_3++) {
          const float acc_2 = C_acc[j_3];
          C[64*i + 8*j + j_3] = acc_2;
        }
#endif
      }
    }
  }
  return tsr_err ? TSR_ERR_GATHER : 0;
}
