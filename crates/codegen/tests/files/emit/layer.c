/* tessera: kernel layer as C (symbols layer_*).
 * Buffers (buffers[k] of every step):
 *   0: I float32[70], in
 *   1: Wt float32[54], in
 *   2: B float32[3], in
 *   3: X float32[105], inout, temporary
 *   4: Y float32[105], inout, temporary
 *   5: P float32[18], out
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

const char layer_abi[] = "tessera-c 1; buffers float32[70] float32[54] float32[3] float32[105] float32[105] float32[18]; steps 3";

/* Step 0 of layer: block s1_X_init_fused #fused #parallel
 * X(n, f, h, w) +=! I(n, c, h + r - 1, w + s - 1) * Wt(f, c, r, s) where n in 0:N, f in 0:F, h in 0:H, w in 0:W, c in 0:C, r in 0:KH, s in 0:KW
 * Runs lo <= f < hi of its parallel index (range 3).
 */
int32_t layer_0(void *const *buffers, int64_t lo, int64_t hi)
{
  int32_t tsr_err = 0;
  const float *restrict I = (const float *)buffers[0];
  const float *restrict Wt = (const float *)buffers[1];
  float *restrict X = (float *)buffers[3];
  for (int64_t f = tsr_max(lo, 0); f < tsr_min(hi, 3); f++) {
    for (int64_t h = 0; h < 5; h++) {
      for (int64_t w = 0; w < 7; w++) {
        float X_acc[1] = {0};
        const float id = 0.0f;
        X_acc[0] = id;
        /* block s1_X: X(n, f, h, w) +=! I(n, c, h + r - 1, w + s - 1) * Wt(f, c, r, s) where n in 0:N, f in 0:F, h in 0:H, w in 0:W, c in 0:C, r in 0:KH, s in 0:KW */
        for (int64_t c = 0; c < 2; c++) {
          for (int64_t r = tsr_max(-h + 1, 0); r < tsr_min(-h + 6, 3); r++) {
            for (int64_t s = tsr_max(-w + 1, 0); s < tsr_min(-w + 8, 3); s++) {
              const float t1 = I[7*h + w + 35*c + 7*r + s - 8];
              const float t2 = Wt[18*f + 9*c + 3*r + s];
              const float t3 = t1 * t2;
              X_acc[0] = X_acc[0] + t3;
            }
          }
        }
        const float acc = X_acc[0];
        X[35*f + 7*h + w] = acc;
      }
    }
  }
  return tsr_err ? TSR_ERR_GATHER : 0;
}

/* Step 1 of layer: block s2_Y #parallel
 * Y(n, f, h, w) = fmax(X(n, f, h, w) + B(f), 0.0) where n in 0:N, f in 0:F, h in 0:H, w in 0:W
 * Runs lo <= f < hi of its parallel index (range 3).
 */
int32_t layer_1(void *const *buffers, int64_t lo, int64_t hi)
{
  int32_t tsr_err = 0;
  const float *restrict B = (const float *)buffers[2];
  float *restrict X = (float *)buffers[3];
  float *restrict Y = (float *)buffers[4];
  for (int64_t f = tsr_max(lo, 0); f < tsr_min(hi, 3); f++) {
    for (int64_t h = 0; h < 5; h++) {
      for (int64_t w = 0; w < 7; w++) {
        const float t1 = X[35*f + 7*h + w];
        const float t2 = B[f];
        const float t3 = t1 + t2;
        const float t4 = 0.0f;
        const float t5 = tsr_fmaxf(t3, t4);
        Y[35*f + 7*h + w] = t5;
      }
    }
  }
  return tsr_err ? TSR_ERR_GATHER : 0;
}

/* Step 2 of layer: block s3_P_init_fused #fused #parallel
 * P(n, f, i, j) max=! Y(n, f, 2 * i + a, 2 * j + b) where n in 0:N, f in 0:F, i in 0:H/2, j in 0:W/2, a in 0:2, b in 0:2
 * Runs lo <= f < hi of its parallel index (range 3).
 */
int32_t layer_2(void *const *buffers, int64_t lo, int64_t hi)
{
  int32_t tsr_err = 0;
  float *restrict Y = (float *)buffers[4];
  float *restrict P = (float *)buffers[5];
  for (int64_t f = tsr_max(lo, 0); f < tsr_min(hi, 3); f++) {
    for (int64_t i = 0; i < 2; i++) {
      for (int64_t j = 0; j < 3; j++) {
        float P_acc[1] = {0};
        const float id = -INFINITY;
        P_acc[0] = id;
        /* block s3_P: P(n, f, i, j) max=! Y(n, f, 2 * i + a, 2 * j + b) where n in 0:N, f in 0:F, i in 0:H/2, j in 0:W/2, a in 0:2, b in 0:2 */
        for (int64_t a = 0; a < 2; a++) {
          for (int64_t b = 0; b < 2; b++) {
            const float t1 = Y[35*f + 14*i + 2*j + 7*a + b];
            if (t1 > P_acc[0] || P_acc[0] != P_acc[0]) P_acc[0] = t1;
          }
        }
        const float acc = P_acc[0];
        P[6*f + 3*i + j] = acc;
      }
    }
  }
  return tsr_err ? TSR_ERR_GATHER : 0;
}
