//! Scalar C: element types, literals, and the C for every intrinsic
//! operation, cast and aggregation, with the semantics of `ir::arith` as the
//! kernel VM applies them.
//!
//! How each rule of `ir::arith` is kept in C:
//! - integers are held in their own C type (`int8_t` ... `uint64_t`);
//!   `+ - *` and negation are done in the unsigned type of at least 32 bits
//!   and converted back (unsigned arithmetic wraps; signed overflow would be
//!   undefined; the conversion to a narrow signed type is modular in gcc and
//!   clang, which is arith's `wrap`);
//! - integer `/` and `%` are floor division and modulo through the
//!   prelude's `tsr_floordiv`/`tsr_floormod` on `int64_t` (every type but
//!   `uint64` fits), plain unsigned `/` and `%` for `uint64`; division by
//!   zero makes the step return [`super::ERR_DIV_ZERO`], as the VM fails;
//! - floats compute in their own type (`float32` in `float`: `+ - * /` of
//!   two floats rounded once equal arith's f64 result rounded to f32), `%` is
//!   arith's `float_mod` (exact `fmod`, moved to the divisor's sign);
//! - float builtins are spelled as `ir::Builtin::c_spelling` says: the
//!   functions tessera had first call `<math.h>` (or a prelude helper) in
//!   the operand type (`expf` for `float32`, except that `exp` on `float32`
//!   is the prelude's `tsr_expf`, `erf` its `tsr_erff` and `tanh` its
//!   `tsr_tanhf`, which gcc vectorizes, within one unit in the last place
//!   of the correctly rounded result (two for `tanh`), and may differ from arith's
//!   (f64, rounded once) in the last bits of a `float32`; the rest call
//!   the `double` function and round once, as arith does, so they differ
//!   only where the C library and Rust's disagree in the last bits of the
//!   `double`. The CUDA functions C lacks are prelude helpers that repeat
//!   `ir`'s `special.rs` operation for operation;
//! - casts follow `arith::cast_value` on the VM's representation of the
//!   operand: float to integer truncates with saturation and NaN to 0
//!   (`tsr_f2i`/`tsr_f2u`; a plain C conversion out of range is undefined),
//!   and, as the VM's cast sees only the operand's stored `i64`, a `uint64`
//!   operand converts to float as the `int64` of the same bits;
//! - aggregation `min`/`max` on floats is TC's `min`/`max` of the element
//!   and the stored value, the VM's rule (a NaN stored value makes the
//!   element NaN, and a NaN element stays); on `bool`
//!   the VM keeps `add`/`mul` as plain assignment and `min`/`max` as no
//!   change, and so does the C.
//!
//! Requires: operand types checked by the caller ([`intrinsic`] checks
//! them itself and returns an error for combinations the VM would reject or
//! compute on mismatched values). Guarantees: no generated expression has
//! undefined behaviour in C11 for any operand values.

use std::fmt::Write;

use ir::minifloat::{Format, Special};
use ir::{arith, BinOp, Builtin, CSpelling, DType, UnOp, Value};

use kernel::{Agg, Op};

/// The C type of a scalar of type `t` (a narrow float is held in a
/// `float`, which holds all of its values).
pub(crate) fn ctype(t: DType) -> &'static str {
    match t {
        DType::Bool => "bool",
        _ if t.narrow().is_some() => "float",
        other => storage_type(other),
    }
}

/// The C type of a buffer element of type `t` (`bool` is stored as a byte
/// holding 0 or 1).
pub(crate) fn storage_type(t: DType) -> &'static str {
    match t {
        DType::Bool | DType::U8 | DType::U4 | DType::U2 => "uint8_t",
        DType::I4 | DType::I2 => "int8_t",
        // Narrow floats are stored as their codes.
        DType::F4E2M1 | DType::F8E4M3FN | DType::F8E4M3FNUZ | DType::F8E5M2 | DType::F8E5M2FNUZ => {
            "uint8_t"
        }
        DType::F16 | DType::BF16 => "uint16_t",
        DType::I8 => "int8_t",
        DType::U16 => "uint16_t",
        DType::I16 => "int16_t",
        DType::U32 => "uint32_t",
        DType::I32 => "int32_t",
        DType::U64 => "uint64_t",
        DType::I64 => "int64_t",
        DType::F32 => "float",
        DType::F64 => "double",
    }
}

/// The unsigned type integer arithmetic of type `t` wraps in: at least 32
/// bits, so that narrow operands are not promoted to (overflowing) `int`.
fn wrap_type(t: DType) -> &'static str {
    if t.bits() == 64 {
        "uint64_t"
    } else {
        "uint32_t"
    }
}

/// The scalar a C expression `element` of a buffer of type `t` holds.
pub(crate) fn read_element(t: DType, element: &str) -> String {
    if t == DType::Bool {
        format!("({element} != 0)")
    } else if let Some(f) = t.narrow() {
        format!("(float)tsr_mf_decode({element}, {})", format_args(f))
    } else {
        element.to_string()
    }
}

/// `x` (a C expression of the integer type `t`, or of a wider one)
/// wrapped to `t`'s width where its C type is wider: the 2- and 4-bit
/// integers, held in a byte, keep their low bits, sign-extended when
/// signed (gcc converts to a narrow signed type modulo its width, and
/// shifts a negative `int` right arithmetically).
fn wrapped(t: DType, x: String) -> String {
    match t {
        DType::U2 => format!("(uint8_t)(({x}) & 0x3)"),
        DType::U4 => format!("(uint8_t)(({x}) & 0xf)"),
        DType::I2 => format!("(int8_t)((int8_t)((uint8_t)({x}) << 6) >> 6)"),
        DType::I4 => format!("(int8_t)((int8_t)((uint8_t)({x}) << 4) >> 4)"),
        _ => x,
    }
}

/// The prelude's arguments naming format `f`: mantissa and exponent
/// widths, bias and kind.
fn format_args(f: Format) -> String {
    let kind = match f.special {
        Special::Ieee => 0,
        Special::FiniteNan => 1,
        Special::UnsignedZero => 2,
        Special::Finite => 3,
    };
    format!("{}, {}, {}, {kind}", f.mantissa, f.exponent, f.bias)
}

/// `x` (a C `double` expression) rounded to the narrow float `t` and
/// held in a `float`; `x` itself for the other types.
fn rounded(t: DType, x: String) -> String {
    match t.narrow() {
        Some(f) => format!("(float)tsr_mf_round({x}, {})", format_args(f)),
        None => x,
    }
}

/// The code of `x` (a C expression of a value of the narrow float `t`)
/// to store in a buffer element.
fn code(t: DType, f: Format, x: &str) -> String {
    format!(
        "({})tsr_mf_encode({x}, {})",
        storage_type(t),
        format_args(f)
    )
}

/// The C literal of `value` converted to `t` as a kernel constant is.
pub(crate) fn literal(t: DType, value: Value) -> String {
    match arith::cast_value(t, value) {
        Value::Bool(b) => b.to_string(),
        Value::Float(x) => float_literal(t, x),
        Value::Int(i) => int_literal(t, i),
    }
}

fn float_literal(t: DType, x: f64) -> String {
    // A narrow float's value is held in a `float`.
    let t = if t.narrow().is_some() { DType::F32 } else { t };
    let (suffix, cast) = if t == DType::F32 {
        ("f", "")
    } else {
        ("", "(double)")
    };
    if x.is_nan() {
        format!("{cast}NAN")
    } else if x.is_infinite() {
        let sign = if x < 0.0 { "-" } else { "" };
        format!("{sign}{cast}INFINITY")
    } else if t == DType::F32 {
        // The shortest decimal that reads back as this f32.
        format!("{:?}{suffix}", x as f32)
    } else {
        format!("{x:?}")
    }
}

fn int_literal(t: DType, i: i64) -> String {
    let ty = ctype(t);
    if t == DType::U64 {
        format!("UINT64_C({})", i as u64)
    } else if i == i64::MIN {
        format!("({ty})INT64_MIN")
    } else if i32::try_from(i).is_ok() {
        format!("({ty}){i}")
    } else {
        format!("({ty})INT64_C({i})")
    }
}

/// The C of one intrinsic: statements that must run first (division-by-zero
/// checks, which return from the step) and the expression; also the
/// result's type. `args` are the operands' C names and types; `t` is the
/// statement's type.
pub(crate) struct Computed {
    pub checks: Vec<String>,
    pub expr: String,
    pub dtype: DType,
}

/// The C computing `op` in type `t` on `args`, or why the VM would not
/// compute it (or would compute it on values of mixed types, which the C
/// does not reproduce).
pub(crate) fn intrinsic(op: &Op, t: DType, args: &[(String, DType)]) -> Result<Computed, String> {
    let want = match op {
        Op::Unary(_) | Op::Cast => 1,
        Op::Binary(_) => 2,
        Op::Select => 3,
        Op::Builtin(f) => f.arity(),
    };
    if args.len() != want {
        return Err(format!("takes {want} operands, got {}", args.len()));
    }
    let same = |what: &str| -> Result<(), String> {
        match args.iter().find(|(_, at)| *at != t) {
            Some((n, at)) => Err(format!(
                "{what} computes in {t} but operand `{n}` is {at}; the C backend \
                 only emits operations on operands of the statement's type"
            )),
            None => Ok(()),
        }
    };
    let plain = |expr: String, dtype: DType| Computed {
        checks: Vec::new(),
        expr,
        dtype,
    };
    let a = args[0].0.as_str();
    let mut c = match op {
        Op::Cast => plain(cast(t, args[0].1, a), t),
        Op::Select => {
            if args[0].1 != DType::Bool {
                return Err(format!(
                    "select's condition `{a}` is {}, not bool",
                    args[0].1
                ));
            }
            if args[1].1 != t || args[2].1 != t {
                return Err(format!(
                    "select is {t} but its branches are {} and {}",
                    args[1].1, args[2].1
                ));
            }
            plain(format!("{a} ? {} : {}", args[1].0, args[2].0), t)
        }
        Op::Unary(UnOp::Not) => {
            if t != DType::Bool || args[0].1 != DType::Bool {
                return Err(format!("`not` needs bool, found {} of {}", t, args[0].1));
            }
            plain(format!("!{a}"), t)
        }
        Op::Unary(UnOp::Neg) => {
            same("neg")?;
            if t.is_float() {
                plain(format!("-{a}"), t)
            } else if t.is_int() {
                plain(format!("({})(0 - ({}){a})", ctype(t), wrap_type(t)), t)
            } else {
                return Err("`neg` of bool".to_string());
            }
        }
        Op::Binary(b) => {
            same(kernel::op_name(op))?;
            binary(*b, t, a, &args[1].0)?
        }
        Op::Builtin(f) => {
            same(f.name())?;
            plain(builtin(*f, t, args)?, t)
        }
    };
    c.expr = wrapped(c.dtype, c.expr);
    Ok(c)
}

fn binary(op: BinOp, t: DType, a: &str, b: &str) -> Result<Computed, String> {
    let plain = |expr: String, dtype: DType| Computed {
        checks: Vec::new(),
        expr,
        dtype,
    };
    if op.is_comparison() {
        // C compares in the operands' own type: unsigned for `uint64`, as
        // `arith::int_cmp`; NaN makes every comparison but `!=` false, as
        // the VM's `partial_cmp` does.
        return Ok(plain(format!("{a} {} {b}", op.symbol()), DType::Bool));
    }
    if op.is_logical() {
        if t != DType::Bool {
            return Err(format!("`{}` on {t}", op.symbol()));
        }
        return Ok(plain(format!("{a} {} {b}", op.symbol()), DType::Bool));
    }
    if t == DType::Bool {
        return Err(format!("`{}` on bool values", op.symbol()));
    }
    if t.narrow().is_some() {
        // Computed in `double` and rounded once, as arith does.
        let x = match op {
            BinOp::Mod => format!("tsr_fmod((double){a}, (double){b})"),
            _ => format!("(double){a} {} (double){b}", op.symbol()),
        };
        return Ok(plain(rounded(t, x), t));
    }
    if t.is_float() {
        return Ok(match op {
            BinOp::Mod => {
                let f = if t == DType::F32 {
                    "tsr_fmodf"
                } else {
                    "tsr_fmod"
                };
                plain(format!("{f}({a}, {b})"), t)
            }
            _ => plain(format!("{a} {} {b}", op.symbol()), t),
        });
    }
    let ty = ctype(t);
    Ok(match op {
        BinOp::Add | BinOp::Sub | BinOp::Mul => {
            let u = wrap_type(t);
            plain(format!("({ty})(({u}){a} {} ({u}){b})", op.symbol()), t)
        }
        BinOp::Div | BinOp::Mod => {
            let checks = vec![format!("if ({b} == 0) return TSR_ERR_DIV_ZERO;")];
            let expr = if t == DType::U64 {
                format!("{a} {} {b}", op.symbol())
            } else {
                let f = if op == BinOp::Div {
                    "tsr_floordiv"
                } else {
                    "tsr_floormod"
                };
                format!("({ty}){f}((int64_t){a}, (int64_t){b})")
            };
            Computed {
                checks,
                expr,
                dtype: t,
            }
        }
        _ => return Err(format!("`{}` on integers", op.symbol())),
    })
}

fn builtin(f: Builtin, t: DType, args: &[(String, DType)]) -> Result<String, String> {
    let x = args[0].0.as_str();
    if t.is_int() {
        let ty = ctype(t);
        return Ok(match f {
            Builtin::Abs if t.is_signed() => {
                let u = wrap_type(t);
                format!("({ty})({x} < 0 ? 0 - ({u}){x} : ({u}){x})")
            }
            Builtin::Abs => x.to_string(),
            // `arith`: max takes the first operand unless it is less.
            Builtin::Max | Builtin::Fmax => format!("{x} >= {y} ? {x} : {y}", y = args[1].0),
            Builtin::Min | Builtin::Fmin => format!("{x} <= {y} ? {x} : {y}", y = args[1].0),
            _ => return Err(format!("`{}` of integers", f.name())),
        });
    }
    if !t.is_float() {
        return Err(format!("`{}` of {t}", f.name()));
    }
    let operands: Vec<&str> = args.iter().map(|(n, _)| n.as_str()).collect();
    Ok(float_call(f, t, &operands))
}

/// A float builtin on a narrow float: the `double` function, rounded once
/// (`nextafter`, a property of the type, steps in the format itself).
fn narrow_call(f: Builtin, t: DType, operands: &[&str]) -> String {
    if let (Builtin::Nextafter, Some(format)) = (f, t.narrow()) {
        return format!(
            "(float)tsr_mf_nextafter((double){}, (double){}, {})",
            operands[0],
            operands[1],
            format_args(format)
        );
    }
    let wide: Vec<String> = operands.iter().map(|n| format!("(double){n}")).collect();
    let wide: Vec<&str> = wide.iter().map(String::as_str).collect();
    rounded(t, float_call(f, DType::F64, &wide))
}

/// The C calling float builtin `f` on `operands` of the float type `t`.
fn float_call(f: Builtin, t: DType, operands: &[&str]) -> String {
    if t.narrow().is_some() {
        return narrow_call(f, t, operands);
    }
    if f == Builtin::Exp && t == DType::F32 {
        return format!("tsr_expf({})", operands.join(", "));
    }
    if f == Builtin::Erf && t == DType::F32 {
        return format!("tsr_erff({})", operands.join(", "));
    }
    if f == Builtin::Tanh && t == DType::F32 {
        return format!("tsr_tanhf({})", operands.join(", "));
    }
    match f.c_spelling() {
        CSpelling::Typed(name) if t == DType::F32 => format!("{name}f({})", operands.join(", ")),
        CSpelling::Typed(name) => format!("{name}({})", operands.join(", ")),
        CSpelling::Double(name) if t == DType::F32 => {
            let wide: Vec<String> = operands.iter().map(|n| format!("(double){n}")).collect();
            format!("(float){name}({})", wide.join(", "))
        }
        CSpelling::Double(name) => format!("{name}({})", operands.join(", ")),
    }
}

/// The C converting `x` of type `from` to type `to`, as the VM's cast.
pub(crate) fn cast(to: DType, from: DType, x: &str) -> String {
    let ty = ctype(to);
    if to == from {
        return x.to_string();
    }
    if to == DType::Bool {
        return format!("{x} != 0");
    }
    if to.narrow().is_some() {
        return rounded(to, format!("(double){x}"));
    }
    if to.is_float() {
        return format!("({ty}){x}");
    }
    if from.is_float() {
        return if to == DType::U64 {
            format!("tsr_f2u((double){x})")
        } else {
            format!("({ty})tsr_f2i((double){x})")
        };
    }
    format!("({ty}){x}")
}

/// Statements storing scalar `x` (of the element's type `t`) into the
/// buffer element `dst` with aggregation `agg`.
pub(crate) fn store(agg: Agg, t: DType, dst: &str, x: &str) -> String {
    let mut out = String::new();
    if t == DType::Bool {
        let _ = match agg {
            Agg::Assign | Agg::Add | Agg::Mul => write!(out, "{dst} = (uint8_t){x};"),
            Agg::Min | Agg::Max => write!(
                out,
                "/* {} of bool keeps the element, as the VM does */",
                if agg == Agg::Min { "min" } else { "max" }
            ),
        };
        return out;
    }
    if let Some(f) = t.narrow() {
        // Read, combined in `float` (exact for `+` and `*` of two narrow
        // values but for the rounding the code makes), and written back.
        let old = read_element(t, dst);
        let new = match agg {
            Agg::Assign => x.to_string(),
            Agg::Add | Agg::Mul => format!("(double){old} {} (double){x}", agg_symbol(agg)),
            Agg::Min => format!("tsr_minimumf({old}, {x})"),
            Agg::Max => format!("tsr_maximumf({old}, {x})"),
        };
        let _ = write!(out, "{dst} = {};", code(t, f, &new));
        return out;
    }
    let ty = ctype(t);
    let _ = match agg {
        Agg::Assign => write!(out, "{dst} = {x};"),
        Agg::Add | Agg::Mul if t.is_float() => {
            write!(out, "{dst} = {dst} {} {x};", agg_symbol(agg))
        }
        Agg::Add | Agg::Mul => {
            let u = wrap_type(t);
            let sum = format!("({ty})(({u}){dst} {} ({u}){x})", agg_symbol(agg));
            write!(out, "{dst} = {};", wrapped(t, sum))
        }
        Agg::Min | Agg::Max if t.is_float() => {
            // TC's `max(element, x)`, the VM's rule. Stored unconditionally:
            // gcc vectorizes the select as well as a conditional store.
            let f = if agg == Agg::Min {
                Builtin::Min
            } else {
                Builtin::Max
            };
            write!(out, "{dst} = {};", float_call(f, t, &[dst, x]))
        }
        Agg::Min | Agg::Max => {
            let cmp = if agg == Agg::Min { "<" } else { ">" };
            write!(out, "if ({x} {cmp} {dst}) {dst} = {x};")
        }
    };
    out
}

fn agg_symbol(agg: Agg) -> &'static str {
    if agg == Agg::Mul {
        "*"
    } else {
        "+"
    }
}

/// Helpers every program uses, guarded so that several programs can share
/// one C file. Cheap to compile: the AVX-512 helpers, whose header costs
/// gcc several times as long as all the rest, are [`PRELUDE_AVX512`].
pub(crate) const PRELUDE: &str = r#"#ifndef TSR_PRELUDE
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
"#;

/// The helpers of explicit AVX-512 code (`func/vector.rs`), for C files
/// with a function that has some; guarded like [`PRELUDE`], which must
/// come first.
pub(crate) const PRELUDE_AVX512: &str = r#"#ifndef TSR_PRELUDE_AVX512
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
"#;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn literals_read_back_as_the_value() {
        assert_eq!(literal(DType::F32, Value::Float(0.1)), "0.1f");
        assert_eq!(literal(DType::F64, Value::Float(0.1)), "0.1");
        assert_eq!(
            literal(DType::F32, Value::Float(f64::NEG_INFINITY)),
            "-INFINITY"
        );
        assert_eq!(literal(DType::F64, Value::Float(f64::NAN)), "(double)NAN");
        assert_eq!(literal(DType::I8, Value::Int(200)), "(int8_t)-56");
        assert_eq!(
            literal(DType::I64, Value::Int(i64::MIN)),
            "(int64_t)INT64_MIN"
        );
        assert_eq!(
            literal(DType::I64, Value::Int(1 << 40)),
            "(int64_t)INT64_C(1099511627776)"
        );
        assert_eq!(
            literal(DType::U64, Value::Int(-1)),
            "UINT64_C(18446744073709551615)"
        );
        assert_eq!(literal(DType::Bool, Value::Int(3)), "true");
        assert_eq!(literal(DType::F32, Value::Int(16_777_217)), "16777216.0f");
    }

    #[test]
    fn mixed_operands_are_refused() {
        let args = [("a".to_string(), DType::F32), ("b".to_string(), DType::F64)];
        let e = intrinsic(&Op::Binary(BinOp::Add), DType::F32, &args).err();
        assert!(e.is_some_and(|m| m.contains("operand `b` is float64")));
    }
}
