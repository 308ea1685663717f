//! Elementwise operators of any element type and rank, each node written
//! as one comprehension in the model def: the activations and functions
//! the prelude has no def for (`Reciprocal`, the trigonometric and
//! hyperbolic functions, `Floor`, `Ceil`, `Round`, `Sign`, `Elu`, `Selu`,
//! `Celu`, `HardSigmoid`, `HardSwish`, `Softplus`, `Softsign`, `Mish`,
//! `Swish`, `ThresholdedRelu`, `IsNaN`, `IsInf`), `Xor`, `BitShift`, the
//! bitwise operators, the variadic
//! `Max`, `Min`, `Sum` and `Mean`, and the arithmetic, comparisons and
//! `Where` on element types other than the prelude's.
//!
//! Operands broadcast as numpy's: aligned at the right, a dimension of 1
//! read at 0. Each operand is read once per point into a `let` (`_a`,
//! `_b`, ...), which the operator's expression uses; attributes are
//! written into the expression as literals, which take the operand's type.
//!
//! Requires: every operand of an element type the expression is defined
//! on (each importer checks its operator's, naming the type it refuses).
//! Guarantees: integer arithmetic means ONNX's (division truncates, `Mod`
//! takes the divisor's sign unless `fmod = 1`), and every operation wraps
//! in the operand's type as the interpreter's do.

use ir::DType;

use super::elementwise::broadcast;
use crate::build::{float, Node, Value, Var};
use crate::forms::MAX_RANK;
use crate::import::Importer;

/// The names of the operands' `let`s, in order.
const LETS: [&str; 8] = ["_a", "_b", "_c", "_d", "_e", "_f", "_g", "_h"];

/// Adds `expr` over `operands` (named `_a`, `_b`, ... in it), broadcast to
/// their common shape, as a new tensor of element type `out`.
pub(crate) fn map(
    im: &mut Importer,
    n: &Node,
    expr: &str,
    operands: &[Var],
    out: DType,
) -> Result<Var, String> {
    if operands.len() > LETS.len() {
        return Err(n.error(format!(
            "{} operands are not supported (at most {} are)",
            operands.len(),
            LETS.len()
        )));
    }
    let mut shape: Vec<usize> = Vec::new();
    for v in operands {
        shape = broadcast(&shape, &v.shape).ok_or_else(|| {
            let shapes: Vec<_> = operands.iter().map(|v| &v.shape).collect();
            n.error(format!("shapes {shapes:?} do not broadcast"))
        })?;
    }
    if shape.len() > MAX_RANK {
        return Err(n.error(format!(
            "a result of rank {} is not supported (ranks up to {MAX_RANK} are)",
            shape.len()
        )));
    }
    let lets: Vec<String> = operands
        .iter()
        .zip(LETS)
        .map(|(v, name)| format!("{name} = {}", read(v, &shape)))
        .collect();
    Ok(im.b.compute("=", expr, &lets, out, shape))
}

/// `v` read at the point `_i0, _i1, ...` of a result of `shape` under
/// numpy broadcasting: `v`'s axes align with the result's last ones, and an
/// axis of 1 that the result stretches is read at 0.
pub(crate) fn read(v: &Var, shape: &[usize]) -> String {
    let pad = shape.len() - v.shape.len();
    let ix: Vec<String> = v
        .shape
        .iter()
        .enumerate()
        .map(|(k, &d)| {
            if d == 1 && shape[pad + k] != 1 {
                "0".to_string()
            } else {
                format!("_i{}", pad + k)
            }
        })
        .collect();
    format!("{}({})", v.name, ix.join(", "))
}

/// Every input of `n`, as tensors of the model def.
pub(crate) fn inputs(im: &mut Importer, n: &Node) -> Result<Vec<Var>, String> {
    (0..n.proto.input.len())
        .filter(|&k| n.input(k).is_some())
        .map(|k| im.var(n, k))
        .collect()
}

/// Which element types an operator's expression is defined on.
#[derive(Clone, Copy, PartialEq)]
enum Types {
    Float,
    /// Signed integers and floats.
    Signed,
    /// Every integer and float type.
    Numeric,
    Bool,
    Integer,
}

impl Types {
    fn admits(self, t: DType) -> bool {
        let float = t.is_float();
        let signed = matches!(t, DType::I8 | DType::I16 | DType::I32 | DType::I64);
        let unsigned = matches!(t, DType::U8 | DType::U16 | DType::U32 | DType::U64);
        match self {
            Types::Float => float,
            Types::Signed => float || signed,
            Types::Numeric => float || signed || unsigned,
            Types::Bool => t == DType::Bool,
            Types::Integer => signed || unsigned,
        }
    }

    fn describe(self) -> &'static str {
        match self {
            Types::Float => "float32 and float64",
            Types::Signed => "float32, float64 and the signed integers",
            Types::Numeric => "float32, float64 and the integers",
            Types::Bool => "bool",
            Types::Integer => "the integers",
        }
    }
}

/// Fails unless every operand has one element type among `types`.
fn check_types(n: &Node, operands: &[Var], types: Types) -> Result<DType, String> {
    let t = operands.first().ok_or_else(|| n.error("no inputs"))?.dtype;
    if let Some(other) = operands.iter().find(|v| v.dtype != t) {
        return Err(n.error(format!(
            "operands of types {t} and {} (ONNX requires one type)",
            other.dtype
        )));
    }
    if !types.admits(t) {
        return Err(n.error(format!(
            "{} of {t} is not supported ({} are)",
            n.op,
            types.describe()
        )));
    }
    Ok(t)
}

/// A float attribute as a literal, `default` when absent.
fn attr(n: &Node, name: &str, default: f32) -> Result<String, String> {
    Ok(float(f64::from(n.float(name)?.unwrap_or(default))))
}

/// The unary operators this module imports: their expression over `_a`
/// and the types it is defined on.
fn unary_expr(n: &Node) -> Result<Option<(String, Types)>, String> {
    let builtin = |f: &str| (format!("{f}(_a)"), Types::Float);
    Ok(Some(match n.op {
        "Reciprocal" => ("1 / _a".to_string(), Types::Float),
        "Sin" | "Cos" | "Tan" | "Asin" | "Acos" | "Atan" | "Sinh" | "Cosh" | "Asinh" | "Acosh"
        | "Atanh" | "Floor" | "Ceil" | "Exp" | "Log" | "Sqrt" | "Tanh" | "Erf" | "Sigmoid" => {
            builtin(&n.op.to_lowercase())
        }
        // Halves round to the even neighbour (numpy's and ONNX's rounding),
        // C's `round` takes them away from zero.
        "Round" => (
            "_a - floor(_a) == 0.5 ? 2 * round(_a / 2) : round(_a)".to_string(),
            Types::Float,
        ),
        // A zero or a NaN is its own sign.
        "Sign" => (
            "_a > 0 ? 1 : (_a < 0 ? -1 : _a)".to_string(),
            Types::Numeric,
        ),
        "Neg" => ("-_a".to_string(), Types::Signed),
        "Abs" => ("fabs(_a)".to_string(), Types::Numeric),
        "Relu" => ("_a < 0 ? 0 : _a".to_string(), Types::Signed),
        "Not" => ("!_a".to_string(), Types::Bool),
        "Elu" => (
            format!("_a >= 0 ? _a : {} * (exp(_a) - 1)", attr(n, "alpha", 1.0)?),
            Types::Float,
        ),
        "Selu" => {
            let alpha = attr(n, "alpha", 1.673_263_2)?;
            let gamma = attr(n, "gamma", 1.050_701)?;
            (
                format!("_a > 0 ? {gamma} * _a : {gamma} * ({alpha} * exp(_a) - {alpha})"),
                Types::Float,
            )
        }
        // `ai.onnx.ml`'s: 1 above the threshold, else 0.
        "Binarizer" => {
            let threshold = attr(n, "threshold", 0.0)?;
            (format!("_a > {threshold} ? 1.0 : 0.0"), Types::Float)
        }
        // Toward zero by `bias` beyond `±lambd`, zero inside.
        "Shrink" => {
            let (lambd, bias) = (attr(n, "lambd", 0.5)?, attr(n, "bias", 0.0)?);
            (
                format!("_a < -{lambd} ? _a + {bias} : (_a > {lambd} ? _a - {bias} : 0)"),
                Types::Signed,
            )
        }
        "Celu" => {
            let alpha = attr(n, "alpha", 1.0)?;
            (
                format!("max(_a, 0) + min(0, {alpha} * expm1(_a / {alpha}))"),
                Types::Float,
            )
        }
        "HardSigmoid" => (
            format!(
                "max(0, min(1, {} * _a + {}))",
                attr(n, "alpha", 0.2)?,
                attr(n, "beta", 0.5)?
            ),
            Types::Float,
        ),
        "HardSwish" => (
            "_a * max(0, min(1, _a / 6 + 0.5))".to_string(),
            Types::Float,
        ),
        "Softplus" => ("log(exp(_a) + 1)".to_string(), Types::Float),
        "Softsign" => ("_a / (1 + fabs(_a))".to_string(), Types::Float),
        "Mish" => ("_a * tanh(log(exp(_a) + 1))".to_string(), Types::Float),
        "Swish" => (
            format!("_a * sigmoid({} * _a)", attr(n, "alpha", 1.0)?),
            Types::Float,
        ),
        "ThresholdedRelu" => (
            format!("_a > {} ? _a : 0", attr(n, "alpha", 1.0)?),
            Types::Float,
        ),
        "IsNaN" => ("_a != _a".to_string(), Types::Float),
        "IsInf" => {
            let negative = n.int("detect_negative")?.unwrap_or(1) != 0;
            let positive = n.int("detect_positive")?.unwrap_or(1) != 0;
            // An infinity is the one number whose difference with itself
            // is not zero (NaN's is NaN, which `==` tells apart too).
            let sign = match (negative, positive) {
                (true, true) => "",
                (true, false) => " && _a < 0",
                (false, true) => " && _a > 0",
                (false, false) => " && _a != _a",
            };
            (format!("_a == _a && _a - _a != 0{sign}"), Types::Float)
        }
        _ => return Ok(None),
    }))
}

/// A unary operator of [`unary_expr`]'s on a computed tensor.
pub fn unary(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let Some((expr, types)) = unary_expr(n)? else {
        return Err(n.error(format!("operator `{}` is not supported", n.op)));
    };
    let x = im.var(n, 0)?;
    let t = check_types(n, std::slice::from_ref(&x), types)?;
    let out = if matches!(n.op, "IsNaN" | "IsInf") {
        DType::Bool
    } else {
        t
    };
    let y = map(im, n, &expr, &[x], out)?;
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// A binary arithmetic operator (`Add`, `Sub`, `Mul`, `Div`, `Pow`, `Mod`)
/// on computed tensors of element types the prelude has no def for; `fmod`
/// is `Mod`'s attribute.
pub(crate) fn arithmetic(
    im: &mut Importer,
    n: &Node,
    a: Var,
    b: Var,
    fmod: bool,
) -> Result<Var, String> {
    // Pow's exponent may have another type than its base: it is converted.
    let b = if n.op == "Pow" && b.dtype != a.dtype {
        if !Types::Numeric.admits(b.dtype) {
            return Err(n.error(format!("an exponent of type {} is not supported", b.dtype)));
        }
        map(im, n, &format!("{}(_a)", a.dtype.name()), &[b], a.dtype)?
    } else {
        b
    };
    let operands = [a, b];
    let t = check_types(n, &operands, Types::Numeric)?;
    let int = !t.is_float();
    let expr = match n.op {
        "Add" => "_a + _b",
        "Sub" => "_a - _b",
        "Mul" => "_a * _b",
        // TC's integer `/` and `%` floor, ONNX's `Div` truncates: a
        // quotient of operands of different signs that is not exact is
        // one more.
        "Div" if int => "_a / _b + (_a % _b != 0 && (_a < 0) != (_b < 0) ? 1 : 0)",
        "Div" => "_a / _b",
        "Pow" if int => {
            // Through float64, exact for the results int32 holds.
            return map(
                im,
                n,
                &format!("{}(pow(float64(_a), float64(_b)))", t.name()),
                &operands,
                t,
            );
        }
        "Pow" => "pow(_a, _b)",
        // TC's `%` on floats is the remainder with the divisor's sign.
        "Mod" if !int && !fmod => "_a % _b",
        "Mod" if !int => "fmod(_a, _b)",
        // With `fmod` the remainder takes the dividend's sign: the floor
        // remainder less the divisor when the signs differ.
        "Mod" if fmod => "_a % _b != 0 && (_a < 0) != (_b < 0) ? _a % _b - _b : _a % _b",
        "Mod" => "_a % _b",
        other => return Err(n.error(format!("operator `{other}` is not supported"))),
    };
    map(im, n, expr, &operands, t)
}

/// A comparison or logical operator on computed tensors.
pub(crate) fn compare(im: &mut Importer, n: &Node, a: Var, b: Var) -> Result<Var, String> {
    let (expr, types) = match n.op {
        "Equal" => ("_a == _b", Types::Numeric),
        "Less" => ("_a < _b", Types::Numeric),
        "Greater" => ("_a > _b", Types::Numeric),
        "LessOrEqual" => ("_a <= _b", Types::Numeric),
        "GreaterOrEqual" => ("_a >= _b", Types::Numeric),
        "And" => ("_a && _b", Types::Bool),
        "Or" => ("_a || _b", Types::Bool),
        "Xor" => ("_a != _b", Types::Bool),
        other => return Err(n.error(format!("operator `{other}` is not supported"))),
    };
    let operands = [a, b];
    // Equal also compares booleans.
    let types = if n.op == "Equal" && operands[0].dtype == DType::Bool {
        Types::Bool
    } else {
        types
    };
    check_types(n, &operands, types)?;
    map(im, n, expr, &operands, DType::Bool)
}

/// `Xor` and `BitShift`.
pub fn binary(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let (a, b) = (im.var(n, 0)?, im.var(n, 1)?);
    let y = if n.op == "Xor" {
        compare(im, n, a, b)?
    } else if n.op == "SwiGLU" {
        // `a`'s Swish gate, `a * sigmoid(alpha * a)`, times `b`, of one
        // shape (SwiGLU does not broadcast).
        if a.shape != b.shape {
            return Err(n.error(format!(
                "inputs of shapes {:?} and {:?} (SwiGLU takes one shape)",
                a.shape, b.shape
            )));
        }
        let alpha = attr(n, "alpha", 1.0)?;
        let operands = [a, b];
        let t = check_types(n, &operands, Types::Float)?;
        let expr = format!("_a * (1 / (1 + exp(-{alpha} * _a))) * _b");
        map(im, n, &expr, &operands, t)?
    } else {
        let operands = [a, b];
        let t = check_types(n, &operands, Types::Integer)?;
        let expr = shift(n, t)?;
        map(im, n, &expr, &operands, t)?
    };
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `BitShift`'s expression on integers of type `t`: a shift by s is a
/// product or a floor quotient by 2^s (an arithmetic shift on signed
/// types), which float64 holds exactly for every shift of a 64-bit
/// integer. A shift that is negative or not less than the type's width
/// gives what the sign alone gives: -1 for a negative operand shifted
/// right, else 0.
fn shift(n: &Node, t: DType) -> Result<String, String> {
    let bits = t.bits();
    let name = t.name();
    // 2^s as an unsigned number converted to `t`: 2^(bits - 1) wraps to
    // the sign bit of a signed type, which a wrapping product shifts into.
    // The shift is clamped into the type's range first, because compiled
    // code may evaluate both sides of `?:` and a quotient by 0 traps.
    let scale = format!(
        "{name}(uint64(exp2(float64(max(0, min(_b, {}))))))",
        bits - 1
    );
    let out_of_range = format!("_b < 0 || _b >= {bits}");
    Ok(match n.string("direction")?.as_deref() {
        Some("LEFT") => format!("{out_of_range} ? 0 : _a * {scale}"),
        // A signed type's 2^(bits - 1) is negative: that shift keeps the
        // sign alone, as an out-of-range one does.
        Some("RIGHT") if t.is_signed() => {
            let scale = format!("{name}(exp2(float64(max(0, min(_b, {})))))", bits - 2);
            format!(
                "{out_of_range} || _b == {} ? (_a < 0 ? -1 : 0) : _a / {scale}",
                bits - 1
            )
        }
        Some("RIGHT") => format!("{out_of_range} ? 0 : _a / {scale}"),
        other => {
            return Err(n.error(format!(
                "direction {other:?} is not supported (LEFT and RIGHT are)"
            )))
        }
    })
}

/// `BitwiseAnd`, `BitwiseOr`, `BitwiseXor` and `BitwiseNot` of integers,
/// bit by bit: bit `b` of `v` is `(v / 2^b) % 2` (floor division and
/// modulo, so a negative number's bits are its two's complement's; the
/// top bit of a signed type is its sign), and
/// the result is the sum of its bits times `2^b`, which wraps into the
/// sign bit of a signed type as the bits do.
pub fn bitwise(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let operands = inputs(im, n)?;
    let t = check_types(n, &operands, Types::Integer)?;
    let name = t.name();
    let power = format!("{name}(uint64(exp2(float64(_k))))");
    // A signed type's top bit is its sign (2^b is negative there).
    let top = t.bits() - 1;
    let bit = |v: &str| {
        if t.is_signed() {
            format!("(_k == {top} ? ({v} < 0 ? 1 : 0) : ({v} / {power}) % 2)")
        } else {
            format!("(({v} / {power}) % 2)")
        }
    };
    let (a, b) = (bit("_a"), bit("_b"));
    let on = match n.op {
        "BitwiseAnd" => format!("{a} * {b}"),
        "BitwiseOr" => format!("max({a}, {b})"),
        "BitwiseXor" => format!("({a} + {b}) % 2"),
        _ => format!("1 - {a}"),
    };
    let expr = format!("({on}) * {power}");
    let mut shape: Vec<usize> = Vec::new();
    for v in &operands {
        shape = broadcast(&shape, &v.shape).ok_or_else(|| {
            n.error(format!(
                "shapes {:?} do not broadcast",
                operands.iter().map(|v| &v.shape).collect::<Vec<_>>()
            ))
        })?;
    }
    let mut lets: Vec<String> = operands
        .iter()
        .zip(LETS)
        .map(|(v, l)| format!("{l} = {}", read(v, &shape)))
        .collect();
    lets.push(format!("_k in 0:{}", t.bits()));
    let y = im.b.compute("+=!", &expr, &lets, t, shape);
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// The variadic `Max`, `Min`, `Sum` and `Mean`, broadcast to one shape.
pub fn variadic(im: &mut Importer, n: &Node) -> Result<(), String> {
    im.outputs(n, 1)?;
    let operands = inputs(im, n)?;
    let types = if n.op == "Mean" {
        Types::Float
    } else {
        Types::Numeric
    };
    let t = check_types(n, &operands, types)?;
    let lets = &LETS[..operands.len().min(LETS.len())];
    let expr = match n.op {
        "Max" | "Min" => {
            let f = n.op.to_lowercase();
            lets[1..]
                .iter()
                .fold(lets[0].to_string(), |acc, x| format!("{f}({acc}, {x})"))
        }
        "Sum" => lets.join(" + "),
        _ => format!("({}) / {}", lets.join(" + "), lets.len()),
    };
    let y = map(im, n, &expr, &operands, t)?;
    im.set(n, 0, Value::Var(y));
    Ok(())
}

/// `Where` on computed tensors of any element type.
pub(crate) fn select(im: &mut Importer, n: &Node, c: Var, a: Var, b: Var) -> Result<Var, String> {
    if a.dtype != b.dtype {
        return Err(n.error(format!(
            "operands of types {} and {} (ONNX requires one type)",
            a.dtype, b.dtype
        )));
    }
    let t = a.dtype;
    map(im, n, "_a ? _b : _c", &[c, a, b], t)
}

/// `PRelu` with a slope of any shape that broadcasts to the input's.
pub(crate) fn prelu(im: &mut Importer, n: &Node, x: Var, slope: Var) -> Result<Var, String> {
    let operands = [x, slope];
    let t = check_types(n, &operands, Types::Signed)?;
    let y = map(im, n, "_a < 0 ? _a * _b : _a", &operands, t)?;
    if y.shape != operands[0].shape {
        return Err(n.error(format!(
            "a slope of shape {:?} does not broadcast to the input's {:?}",
            operands[1].shape, operands[0].shape
        )));
    }
    Ok(y)
}
