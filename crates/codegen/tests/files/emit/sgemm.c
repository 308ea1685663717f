/* tessera: kernel sgemm as C (symbols sgemm_*): 1 step calling 1 distinct
 * function.
 * Buffers:
 *   0: a float32[1], in
 *   1: b float32[1], in
 *   2: A float32[4096], in
 *   3: B float32[4096], in
 *   4: C float32[4096], inout
 * Steps, in the order they run, each a call with its buffers as args[0], args[1], ...:
 *   0: block s1_C_fused_vec calls sgemm_f7b225bab4296891b(b, C, a, B, A)
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
   comparisons so that gcc vectorizes them instead of calling libm. Each
   is two selects rather than one on `a || b`: gcc leaves a loop scalar
   whose body has that short-circuit next to other work (a clamp before an
   exp). */
static inline float tsr_fmaxf(float x, float y) { float m = x >= y ? x : y; return y != y ? x : m; }
static inline float tsr_fminf(float x, float y) { float m = x <= y ? x : y; return y != y ? x : m; }
static inline double tsr_fmax(double x, double y) { double m = x >= y ? x : y; return y != y ? x : m; }
static inline double tsr_fmin(double x, double y) { double m = x <= y ? x : y; return y != y ? x : m; }
/* TC's max and min (IEEE 754-2019 maximum and minimum): NaN when either
   operand is NaN, else the larger (smaller), the first of equal ones. */
static inline float tsr_maximumf(float x, float y) { float m = x >= y ? x : y; return x != x ? x : m; }
static inline float tsr_minimumf(float x, float y) { float m = x <= y ? x : y; return x != x ? x : m; }
static inline double tsr_maximum(double x, double y) { double m = x >= y ? x : y; return x != x ? x : m; }
static inline double tsr_minimum(double x, double y) { double m = x <= y ? x : y; return x != x ? x : m; }
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

/* exp on float32 as straight-line arithmetic that gcc vectorizes across
   a vector block's lanes (the C library's expf is a call it vectorizes
   only under -ffast-math): x = n ln2 + r with n = round(x / ln2) and ln2
   in two parts, exp(r) by a degree-7 polynomial, 2^n as two powers of two
   so that results down to the subnormals scale exactly. Within one unit in
   the last place of the correctly rounded result (the semantics test
   sweeps it); x above 88.72... is infinity, x below -104 gives 0, NaN
   stays NaN. The ternaries compile to compares and blends. */
static inline float tsr_expf(float x) {
  float c = x < -104.0f ? -104.0f : x;
  c = c > 89.0f ? 89.0f : c;
  /* 1.5 * 2^23 added and taken away rounds to the nearest integer. */
  float n = fmaf(c, 1.44269504088896341f, 12582912.0f) - 12582912.0f;
  float r = fmaf(n, -0.693359375f, c);
  r = fmaf(n, 2.12194440e-4f, r);
  float p = 1.9875691500e-4f;
  p = fmaf(p, r, 1.3981999507e-3f);
  p = fmaf(p, r, 8.3334519073e-3f);
  p = fmaf(p, r, 4.1665795894e-2f);
  p = fmaf(p, r, 1.6666665459e-1f);
  p = fmaf(p, r, 5.0000001201e-1f);
  p = fmaf(p, r * r, r) + 1.0f;
  int32_t e = (int32_t)n;
  int32_t e1 = e >> 1;
  union { int32_t i; float f; } s1, s2;
  s1.i = (e1 + 127) << 23;
  s2.i = (e - e1 + 127) << 23;
  float y = p * s1.f * s2.f;
  y = x > 88.72283935546875f ? INFINITY : y;
  return x != x ? x : y;
}

/* erf on float32 as straight-line arithmetic that gcc vectorizes across
   a vector block's lanes (the C library's erff is a call it does not
   vectorize): below 0.875 in magnitude, x times a degree-6 polynomial in
   x^2; up to 4, 1 - erfc(|x|) with erfc a degree-14 polynomial (its
   absolute error is what matters there, since erf is near 1); beyond 4,
   +-1 (erfc(4) is under half a unit in the last place of 1). The
   polynomials are least-squares fits on Chebyshev nodes in the variables
   s and u, which map their intervals onto [-1, 1], so that their float32
   coefficients stay small. Within one unit in the last place of the
   correctly rounded result (the semantics test sweeps it); NaN stays NaN.
   The ternaries compile to compares and blends. */
static inline float tsr_erff(float x) {
  const float a = fabsf(x);
  const float s = x * x * 2.6122449f - 1.0f;
  float p = 2.736337592068594e-07f;
  p = fmaf(p, s, -5.112301096232841e-06f);
  p = fmaf(p, s, 8.216009882744402e-05f);
  p = fmaf(p, s, -0.0011216917773708701f);
  p = fmaf(p, s, 0.012622533366084099f);
  p = fmaf(p, s, -0.11501988768577576f);
  p = fmaf(p, s, 0.9995275139808655f);
  const float u = (a - 0.875f) * 0.64f - 1.0f;
  float q = -0.0006021613953635097f;
  q = fmaf(q, u, 0.00020407733973115683f);
  q = fmaf(q, u, 0.003763388143852353f);
  q = fmaf(q, u, -0.0043207742273807526f);
  q = fmaf(q, u, -0.006098805461078882f);
  q = fmaf(q, u, 0.01789953000843525f);
  q = fmaf(q, u, -0.014806987717747688f);
  q = fmaf(q, u, -0.009044620208442211f);
  q = fmaf(q, u, 0.043703190982341766f);
  q = fmaf(q, u, -0.06701675802469254f);
  q = fmaf(q, u, 0.06378818303346634f);
  q = fmaf(q, u, -0.04105018451809883f);
  q = fmaf(q, u, 0.017649129033088684f);
  q = fmaf(q, u, -0.004633743781596422f);
  q = fmaf(q, u, 0.000566542090382427f);
  const float big = copysignf(1.0f - q, x);
  const float r = a < 0.875f ? x * p : a < 4.0f ? big : copysignf(1.0f, x);
  return x != x ? x : r;
}

/* tanh on float32 as straight-line arithmetic that gcc vectorizes across
   a vector block's lanes (the C library's tanhf is a call, which an LSTM
   or NAS cell made a third of its time): below 0.625 in magnitude,
   x + x^3 p(s) with p a degree-5 polynomial in s = x^2 (a least-squares
   fit on Chebyshev nodes in u, which maps s onto [-1, 1]); above,
   1 - 2 / (exp(2|x|) + 1) with the prelude's tsr_expf (exactly 1 once the
   exponential overflows), signed as x. Within two units in the last place
   of the correctly rounded result (the semantics test sweeps it); NaN
   stays NaN. */
static inline float tsr_tanhf(float x) {
  const float a = fabsf(x);
  const float s = x * x;
  const float u = s * 5.12f - 1.0f;
  float p = 6.090214128562366e-07f;
  p = fmaf(p, u, -8.854130101099145e-06f);
  p = fmaf(p, u, 1.2017459084745497e-04f);
  p = fmaf(p, u, -1.638164627365768e-03f);
  p = fmaf(p, u, 2.2366100922226906e-02f);
  p = fmaf(p, u, -0.30919939279556274f);
  const float small = fmaf(x * s, p, x);
  const float big = copysignf(1.0f - 2.0f / (tsr_expf(2.0f * a) + 1.0f), x);
  const float r = a < 0.625f ? small : big;
  return x != x ? x : r;
}

/* rsqrt and sigmoid in the operand type. */
static inline float tsr_rsqrtf(float x) { return 1.0f / sqrtf(x); }
static inline double tsr_rsqrt(double x) { return 1.0 / sqrt(x); }
static inline float tsr_sigmoidf(float x) { return 1.0f / (1.0f + tsr_expf(-x)); }
static inline double tsr_sigmoid(double x) { return 1.0 / (1.0 + exp(-x)); }

/* The C library's functions that strict C11 does not declare. */
double j0(double);
double j1(double);
double y0(double);
double y1(double);
double lgamma_r(double, int *);

/* TC's CUDA functions that C lacks, in double, each repeating ir's
   special.rs (and arith.rs) operation for operation. The constants are
   the doubles nearest pi, 1/sqrt(2) and sqrt(2), as Rust's. */
#define TSR_PI 3.141592653589793
#define TSR_FRAC_1_SQRT_2 0.7071067811865476
#define TSR_SQRT_2 1.4142135623730951
static inline double tsr_fdivide(double x, double y) { return x / y; }
static inline double tsr_exp10(double x) { return pow(10.0, x); }
static inline double tsr_rcbrt(double x) { return 1.0 / cbrt(x); }
static inline double tsr_rhypot(double x, double y) { return 1.0 / hypot(x, y); }
/* lgamma_r rather than lgamma, which writes the global signgam. */
static inline double tsr_lgamma(double x) { int sign; return lgamma_r(x, &sign); }
static inline double tsr_norm3d(double a, double b, double c) {
  return sqrt(0.0 + a * a + b * b + c * c);
}
static inline double tsr_norm4d(double a, double b, double c, double d) {
  return sqrt(0.0 + a * a + b * b + c * c + d * d);
}
static inline double tsr_rnorm3d(double a, double b, double c) { return 1.0 / tsr_norm3d(a, b, c); }
static inline double tsr_rnorm4d(double a, double b, double c, double d) {
  return 1.0 / tsr_norm4d(a, b, c, d);
}
static inline double tsr_cospi(double x) {
  double r = fabs(fmod(x, 2.0));
  if (r > 1.0) r = 2.0 - r;
  return sin(TSR_PI * (0.5 - r));
}
static inline double tsr_sinpi(double x) {
  double s = fmod(x, 2.0);
  if (s > 1.0) s -= 2.0;
  else if (s < -1.0) s += 2.0;
  if (s > 0.5) s = 1.0 - s;
  else if (s < -0.5) s = -1.0 - s;
  return sin(TSR_PI * s);
}
static double tsr_bessel_i(double n, double x) {
  if (x != x) return x;
  double q = (x / 2.0) * (x / 2.0);
  double term = n == 0.0 ? 1.0 : x / 2.0;
  double sum = term;
  for (double k = 1.0; k <= 1000.0; k += 1.0) {
    term *= q / (k * (k + n));
    double next = sum + term;
    if (next == sum) break;
    sum = next;
  }
  return sum;
}
static inline double tsr_bessel_i0(double x) { return tsr_bessel_i(0.0, x); }
static inline double tsr_bessel_i1(double x) { return tsr_bessel_i(1.0, x); }
static inline double tsr_erfcx(double x) {
  if (x < 26.0) return exp(x * x) * erfc(x);
  double v = 1.0 / (x * x);
  double series = 1.0 - v * (0.5 - v * (0.75 - v * 1.875));
  return series / (x * sqrt(TSR_PI));
}
static double tsr_solve_erf(double y, bool use_erfc) {
  double lo = 0.0, hi = 28.0;
  double x = use_erfc ? sqrt(fmax(-log(y), 0.0)) : y * sqrt(TSR_PI) / 2.0;
  x = x < lo ? lo : (x > hi ? hi : x);
  for (int i = 0; i < 100; i++) {
    double f = use_erfc ? erfc(x) - y : erf(x) - y;
    if (f == 0.0) return x;
    if ((f < 0.0) != use_erfc) lo = x;
    else hi = x;
    double slope = 2.0 / sqrt(TSR_PI) * exp(-x * x);
    double next = use_erfc ? x + f / slope : x - f / slope;
    if (!(next > lo && next < hi)) next = (lo + hi) / 2.0;
    if (next == x) return x;
    x = next;
  }
  return x;
}
static double tsr_erfinv(double y) {
  double a = fabs(y);
  if (y != y || a > 1.0) return NAN;
  if (a == 1.0) return copysign(INFINITY, y);
  if (a == 0.0) return y;
  double x = a <= 0.5 ? tsr_solve_erf(a, false) : tsr_solve_erf(1.0 - a, true);
  return copysign(x, y);
}
static double tsr_erfcinv(double y) {
  if (y != y || y < 0.0 || y > 2.0) return NAN;
  if (y == 0.0) return INFINITY;
  if (y == 2.0) return -INFINITY;
  if (y == 1.0) return 0.0;
  if (y > 1.0) return -tsr_erfcinv(2.0 - y);
  return y >= 0.5 ? tsr_solve_erf(1.0 - y, false) : tsr_solve_erf(y, true);
}
static inline double tsr_normcdf(double x) { return 0.5 * erfc(-x * TSR_FRAC_1_SQRT_2); }
static inline double tsr_normcdfinv(double p) { return -TSR_SQRT_2 * tsr_erfcinv(2.0 * p); }

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

/* The narrow floats, as ir's minifloat.rs computes them, operation for
   operation. A format is its mantissa width m, exponent width e, bias b
   and kind k (0: IEEE infinities and NaNs; 1: no infinity, the all-ones
   code NaN; 2: no infinity, NaN in place of negative zero; 3: no special
   codes). Every call passes constants, which gcc folds. */
static inline double tsr_mf_max(int m, int e, int b, int k) {
  int field = k == 0 ? (1 << e) - 2 : (1 << e) - 1;
  int top = k == 1 ? (1 << m) - 2 : (1 << m) - 1;
  return ldexp((double)((1 << m) + top), field - b - m);
}
/* x rounded to the format, to nearest with ties to even; beyond the
   largest finite value, infinity, NaN or (k = 3) the largest finite value.
   The value its code holds: every NaN is NAN, and a zero keeps its sign
   but where the format has no negative zero (k = 2). */
static inline double tsr_mf_round(double x, int m, int e, int b, int k) {
  if (x != x) return k == 3 ? -0.0 : NAN;
  double a = fabs(x), max = tsr_mf_max(m, e, b, k);
  double over = k == 0 ? INFINITY : k == 3 ? max : NAN;
  double r = over;
  if (a <= 2 * max) {
    int ex;
    frexp(a, &ex);
    ex = ex - 1 < 1 - b ? 1 - b : ex - 1;
    double q = ldexp(1.0, ex - m);
    r = rint(a / q) * q;
    r = r > max ? over : r;
  }
  return r != r || (r == 0 && k == 2) ? r : copysign(r, x);
}
static inline uint32_t tsr_mf_encode(double x, int m, int e, int b, int k) {
  double r = tsr_mf_round(x, m, e, b, k);
  uint32_t sign = signbit(r) ? 1u << (e + m) : 0, top = (1u << e) - 1;
  if (r != r) return k == 0 ? (top << m) | (1u << (m - 1)) : k == 1 ? (top << m) | ((1u << m) - 1) : 1u << (e + m);
  if (isinf(r)) return sign | (top << m);
  double a = fabs(r);
  if (a == 0) return k == 2 ? 0 : sign;
  int ex;
  frexp(a, &ex);
  ex -= 1;
  if (ex < 1 - b) return sign | (uint32_t)(a / ldexp(1.0, 1 - b - m));
  return sign | ((uint32_t)(ex + b) << m) | (uint32_t)(a / ldexp(1.0, ex - m) - (double)(1u << m));
}
static inline double tsr_mf_decode(uint32_t bits, int m, int e, int b, int k) {
  uint32_t negative = (bits >> (e + m)) & 1, top = (1u << e) - 1;
  uint32_t field = (bits >> m) & top, man = bits & ((1u << m) - 1);
  if ((k == 0 && field == top && man != 0) || (k == 1 && field == top && man == (1u << m) - 1) ||
      (k == 2 && negative && field == 0 && man == 0))
    return NAN;
  double a = k == 0 && field == top ? INFINITY
           : field == 0 ? ldexp((double)man, 1 - b - m)
           : ldexp((double)(man | (1u << m)), (int)field - b - m);
  return negative ? -a : a;
}
static inline double tsr_mf_nextafter(double x, double y, int m, int e, int b, int k) {
  if (x != x || y != y) return NAN;
  if (x == y) return y;
  if (x == 0) return copysign(ldexp(1.0, 1 - b - m), y - x);
  uint32_t bits = tsr_mf_encode(x, m, e, b, k), sign = bits & (1u << (e + m));
  uint32_t magnitude = bits & ~sign;
  magnitude = (y > x) == (x > 0) ? magnitude + 1 : magnitude - 1;
  return tsr_mf_decode(sign | magnitude, m, e, b, k);
}
#endif
#ifndef TSR_PRELUDE_AVX512
#define TSR_PRELUDE_AVX512
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
/* tsr_maximumf and tsr_minimumf lane by lane: x where the comparison holds
   or x is NaN, else y. (_mm512_max_ps would give y when either is NaN.) */
static inline __m512 tsr_maximum16(__m512 x, __m512 y) {
  __mmask16 k = _mm512_cmp_ps_mask(x, y, _CMP_GE_OQ) | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_blend_ps(k, y, x);
}
static inline __m512 tsr_minimum16(__m512 x, __m512 y) {
  __mmask16 k = _mm512_cmp_ps_mask(x, y, _CMP_LE_OQ) | _mm512_cmp_ps_mask(x, x, _CMP_UNORD_Q);
  return _mm512_mask_blend_ps(k, y, x);
}
#endif
#endif

const char sgemm_abi[] = "tessera-c 2; sgemm_f7b225bab4296891b(float32[1], float32[4096] written, float32[1], float32[4096], float32[4096])";

/* Step 0 of sgemm: block s1_C_fused_vec #fused #parallel
 * C(i, j) = b * C(i, j) where i in 0:N, j in 0:K; C(i, j) += a * A(i, k) * B(k, j) where i in 0:N, j in 0:K, k in 0:M
 * Runs lo <= i < hi of its parallel index (range 8).
 * In step 0, tsr_b0 is b, tsr_b1 is C, tsr_b2 is a, tsr_b3 is B, tsr_b4 is A.
 * Called by 1 step.
 */
int32_t sgemm_f7b225bab4296891b(void *const *args, int64_t lo, int64_t hi)
{
  int32_t tsr_err = 0;
  const float *restrict tsr_b0 = (const float *)args[0];
  float *restrict tsr_b1 = (float *)args[1];
  const float *restrict tsr_b2 = (const float *)args[2];
  const float *restrict tsr_b3 = (const float *)args[3];
  const float *restrict tsr_b4 = (const float *)args[4];
  for (int64_t i = tsr_max(lo, 0); i < tsr_min(hi, 8); i++) {
    for (int64_t j = 0; j < 8; j++) {
      /* block s1_C_fused_tile #interchanged */
      {
        /* tsr_l0: local buffer C_acc */
        _Alignas(64) float tsr_l0[64] = {0};
        /* block s1_C_fused_tile_pre #vector */
#if defined(__AVX512F__)
        const __mmask16 lanes = tsr_lanes16(0, 8);
        if (lanes) {
          const __m512 t1 = _mm512_set1_ps(tsr_b0[0]);
          for (int64_t i_2 = 0; i_2 < 8; i_2++) {
            const __m512 init = _mm512_maskz_loadu_ps(lanes, &tsr_b1[512*i + 8*j + 64*i_2]);
            _mm512_mask_storeu_ps(&tsr_l0[8*i_2], lanes, init);
            const __m512 t2 = _mm512_maskz_loadu_ps(lanes, &tsr_l0[8*i_2]);
            const __m512 t3 = _mm512_mul_ps(t1, t2);
            _mm512_mask_storeu_ps(&tsr_l0[8*i_2], lanes, t3);
          }
        }
#else
        for (int64_t i_2 = 0; i_2 < 8; i_2++) {
        #pragma GCC ivdep
          for (int64_t j_2 = 0; j_2 < 8; j_2++) {
            const float init_2 = tsr_b1[512*i + 8*j + 64*i_2 + j_2];
            tsr_l0[8*i_2 + j_2] = init_2;
            const float t1_2 = tsr_b0[0];
            const float t2_2 = tsr_l0[8*i_2 + j_2];
            const float t3_2 = t1_2 * t2_2;
            tsr_l0[8*i_2 + j_2] = t3_2;
          }
        }
#endif
        /* block s2_C #vector: C(i, j) += a * A(i, k) * B(k, j) where i in 0:N, j in 0:K, k in 0:M */
        for (int64_t k = 0; k < 64; k++) {
#if defined(__AVX512F__)
          const __mmask16 lanes_2 = tsr_lanes16(0, 8);
          if (lanes_2) {
            const __m512 t1_3 = _mm512_set1_ps(tsr_b2[0]);
            const __m512 t4 = _mm512_maskz_loadu_ps(lanes_2, &tsr_b3[8*j + 64*k]);
            for (int64_t i_lane = 0; i_lane < 8; i_lane++) {
              const __m512 t2_3 = _mm512_set1_ps(tsr_b4[512*i + k + 64*i_lane]);
              const __m512 t3_3 = _mm512_mul_ps(t1_3, t2_3);
              const __m512 t5 = _mm512_mul_ps(t3_3, t4);
              _mm512_mask_storeu_ps(&tsr_l0[8*i_lane], lanes_2, _mm512_fmadd_ps(t3_3, t4, _mm512_maskz_loadu_ps(lanes_2, &tsr_l0[8*i_lane])));
            }
          }
#else
          for (int64_t i_lane = 0; i_lane < 8; i_lane++) {
        #pragma GCC ivdep
            for (int64_t j_lane = 0; j_lane < 8; j_lane++) {
              const float t1_4 = tsr_b2[0];
              const float t2_4 = tsr_b4[512*i + k + 64*i_lane];
              const float t3_4 = t1_4 * t2_4;
              const float t4_2 = tsr_b3[8*j + 64*k + j_lane];
              const float t5_2 = t3_4 * t4_2;
              tsr_l0[8*i_lane + j_lane] = tsr_l0[8*i_lane + j_lane] + t5_2;
            }
          }
#endif
        }
        /* block s1_C_fused_tile_post #vector */
#if defined(__AVX512F__)
        const __mmask16 lanes_3 = tsr_lanes16(0, 8);
        if (lanes_3) {
          for (int64_t i_3 = 0; i_3 < 8; i_3++) {
            const __m512 acc = _mm512_maskz_loadu_ps(lanes_3, &tsr_l0[8*i_3]);
            _mm512_mask_storeu_ps(&tsr_b1[512*i + 8*j + 64*i_3], lanes_3, acc);
          }
        }
#else
        for (int64_t i_3 = 0; i_3 < 8; i_3++) {
        #pragma GCC ivdep
          for (int64_t j_3 = 0; j_3 < 8; j_3++) {
            const float acc_2 = tsr_l0[8*i_3 + j_3];
            tsr_b1[512*i + 8*j + 64*i_3 + j_3] = acc_2;
          }
        }
#endif
      }
    }
  }
  return tsr_err ? TSR_ERR_GATHER : 0;
}
