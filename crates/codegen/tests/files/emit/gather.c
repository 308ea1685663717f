/* tessera: kernel gather as C (symbols gather_*).
 * Buffers (buffers[k] of every step):
 *   0: X float32[5], in
 *   1: I int32[60], in
 *   2: Z float32[60], out
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

const char gather_abi[] = "tessera-c 1; buffers float32[5] int32[60] float32[60]; steps 2";

/* Step 0 of gather: block s1_Z_vec #parallel #unrolled
 * Z(i, j) = X(I(i, j)) where i in 0:A, j in 0:B
 * Runs lo <= i < hi of its parallel index (range 3).
 */
int32_t gather_0(void *const *buffers, int64_t lo, int64_t hi)
{
  int32_t tsr_err = 0;
  const float *restrict X = (const float *)buffers[0];
  const int32_t *restrict I = (const int32_t *)buffers[1];
  float *restrict Z = (float *)buffers[2];
  for (int64_t i = tsr_max(lo, 0); i < tsr_min(hi, 3); i++) {
    for (int64_t j = 0; j < 2; j++) {
      const int32_t t1_u0 = I[20*i + 8*j];
      const int64_t t2_u0_pos0 = (int64_t)t1_u0;
      const int t2_u0_pos0_ok = (t2_u0_pos0 >= 0) & (t2_u0_pos0 < 5);
      tsr_err |= !t2_u0_pos0_ok;
      const int64_t t2_u0_at0 = t2_u0_pos0_ok ? t2_u0_pos0 : 0;
      const float t2_u0 = X[t2_u0_at0];
      Z[20*i + 8*j] = t2_u0;
      const int32_t t1_u1 = I[20*i + 8*j + 1];
      const int64_t t2_u1_pos0 = (int64_t)t1_u1;
      const int t2_u1_pos0_ok = (t2_u1_pos0 >= 0) & (t2_u1_pos0 < 5);
      tsr_err |= !t2_u1_pos0_ok;
      const int64_t t2_u1_at0 = t2_u1_pos0_ok ? t2_u1_pos0 : 0;
      const float t2_u1 = X[t2_u1_at0];
      Z[20*i + 8*j + 1] = t2_u1;
      const int32_t t1_u2 = I[20*i + 8*j + 2];
      const int64_t t2_u2_pos0 = (int64_t)t1_u2;
      const int t2_u2_pos0_ok = (t2_u2_pos0 >= 0) & (t2_u2_pos0 < 5);
      tsr_err |= !t2_u2_pos0_ok;
      const int64_t t2_u2_at0 = t2_u2_pos0_ok ? t2_u2_pos0 : 0;
      const float t2_u2 = X[t2_u2_at0];
      Z[20*i + 8*j + 2] = t2_u2;
      const int32_t t1_u3 = I[20*i + 8*j + 3];
      const int64_t t2_u3_pos0 = (int64_t)t1_u3;
      const int t2_u3_pos0_ok = (t2_u3_pos0 >= 0) & (t2_u3_pos0 < 5);
      tsr_err |= !t2_u3_pos0_ok;
      const int64_t t2_u3_at0 = t2_u3_pos0_ok ? t2_u3_pos0 : 0;
      const float t2_u3 = X[t2_u3_at0];
      Z[20*i + 8*j + 3] = t2_u3;
      const int32_t t1_u4 = I[20*i + 8*j + 4];
      const int64_t t2_u4_pos0 = (int64_t)t1_u4;
      const int t2_u4_pos0_ok = (t2_u4_pos0 >= 0) & (t2_u4_pos0 < 5);
      tsr_err |= !t2_u4_pos0_ok;
      const int64_t t2_u4_at0 = t2_u4_pos0_ok ? t2_u4_pos0 : 0;
      const float t2_u4 = X[t2_u4_at0];
      Z[20*i + 8*j + 4] = t2_u4;
      const int32_t t1_u5 = I[20*i + 8*j + 5];
      const int64_t t2_u5_pos0 = (int64_t)t1_u5;
      const int t2_u5_pos0_ok = (t2_u5_pos0 >= 0) & (t2_u5_pos0 < 5);
      tsr_err |= !t2_u5_pos0_ok;
      const int64_t t2_u5_at0 = t2_u5_pos0_ok ? t2_u5_pos0 : 0;
      const float t2_u5 = X[t2_u5_at0];
      Z[20*i + 8*j + 5] = t2_u5;
      const int32_t t1_u6 = I[20*i + 8*j + 6];
      const int64_t t2_u6_pos0 = (int64_t)t1_u6;
      const int t2_u6_pos0_ok = (t2_u6_pos0 >= 0) & (t2_u6_pos0 < 5);
      tsr_err |= !t2_u6_pos0_ok;
      const int64_t t2_u6_at0 = t2_u6_pos0_ok ? t2_u6_pos0 : 0;
      const float t2_u6 = X[t2_u6_at0];
      Z[20*i + 8*j + 6] = t2_u6;
      const int32_t t1_u7 = I[20*i + 8*j + 7];
      const int64_t t2_u7_pos0 = (int64_t)t1_u7;
      const int t2_u7_pos0_ok = (t2_u7_pos0 >= 0) & (t2_u7_pos0 < 5);
      tsr_err |= !t2_u7_pos0_ok;
      const int64_t t2_u7_at0 = t2_u7_pos0_ok ? t2_u7_pos0 : 0;
      const float t2_u7 = X[t2_u7_at0];
      Z[20*i + 8*j + 7] = t2_u7;
    }
  }
  return tsr_err ? TSR_ERR_GATHER : 0;
}

/* Step 1 of gather: block s1_Z_tail_vec #parallel #tail #unrolled
 * Z(i, j) = X(I(i, j)) where i in 0:A, j in 0:B
 * Runs lo <= i < hi of its parallel index (range 3).
 */
int32_t gather_1(void *const *buffers, int64_t lo, int64_t hi)
{
  int32_t tsr_err = 0;
  const float *restrict X = (const float *)buffers[0];
  const int32_t *restrict I = (const int32_t *)buffers[1];
  float *restrict Z = (float *)buffers[2];
  for (int64_t i = tsr_max(lo, 0); i < tsr_min(hi, 3); i++) {
    const int32_t t1_u0 = I[20*i + 16];
    const int64_t t2_u0_pos0 = (int64_t)t1_u0;
    const int t2_u0_pos0_ok = (t2_u0_pos0 >= 0) & (t2_u0_pos0 < 5);
    tsr_err |= !t2_u0_pos0_ok;
    const int64_t t2_u0_at0 = t2_u0_pos0_ok ? t2_u0_pos0 : 0;
    const float t2_u0 = X[t2_u0_at0];
    Z[20*i + 16] = t2_u0;
    const int32_t t1_u1 = I[20*i + 17];
    const int64_t t2_u1_pos0 = (int64_t)t1_u1;
    const int t2_u1_pos0_ok = (t2_u1_pos0 >= 0) & (t2_u1_pos0 < 5);
    tsr_err |= !t2_u1_pos0_ok;
    const int64_t t2_u1_at0 = t2_u1_pos0_ok ? t2_u1_pos0 : 0;
    const float t2_u1 = X[t2_u1_at0];
    Z[20*i + 17] = t2_u1;
    const int32_t t1_u2 = I[20*i + 18];
    const int64_t t2_u2_pos0 = (int64_t)t1_u2;
    const int t2_u2_pos0_ok = (t2_u2_pos0 >= 0) & (t2_u2_pos0 < 5);
    tsr_err |= !t2_u2_pos0_ok;
    const int64_t t2_u2_at0 = t2_u2_pos0_ok ? t2_u2_pos0 : 0;
    const float t2_u2 = X[t2_u2_at0];
    Z[20*i + 18] = t2_u2;
    const int32_t t1_u3 = I[20*i + 19];
    const int64_t t2_u3_pos0 = (int64_t)t1_u3;
    const int t2_u3_pos0_ok = (t2_u3_pos0 >= 0) & (t2_u3_pos0 < 5);
    tsr_err |= !t2_u3_pos0_ok;
    const int64_t t2_u3_at0 = t2_u3_pos0_ok ? t2_u3_pos0 : 0;
    const float t2_u3 = X[t2_u3_at0];
    Z[20*i + 19] = t2_u3;
  }
  return tsr_err ? TSR_ERR_GATHER : 0;
}
