//! The emitted C computes what the kernel VM computes, on hand-written
//! kernels that reach what the TC examples do not: every operation, cast,
//! builtin and aggregation on every element type, on edge values (integer
//! minima and maxima, zero divisors' neighbours, NaN, infinities, signed
//! zeros, values beyond the integer types), constraints with coefficients
//! other than ±1, passed indices, local arrays read by gathers, blocks that
//! run no points, names C cannot spell, and failing steps (gather out of bounds, division by
//! zero). Each kernel runs as written and after the cpu pipeline, on the VM
//! and as C; results must be identical (numerically: `-0 == 0`; NaN equals
//! NaN), except float builtins (every one of `ir::Builtin`'s table, on
//! every float type, the narrow ones included): the C calls the C library's functions where arith
//! calls Rust's `std` or the `libm` crate, so they must agree within 4
//! units in the last place (16 for the float64 special functions of
//! [`ulps`]). All kernels share one C file.

mod emit_common;

use std::collections::HashMap;

use codegen::compile::Compiler;
use codegen::emit::{emit_c, CProgram};
use codegen::exec::run_serial;
use codegen::load::Kernel;
use ir::{arith, Builtin, DType, Value};
use kernel::Block;
use testkit::Rng;

const INTS: [DType; 12] = [
    DType::I2,
    DType::U2,
    DType::I4,
    DType::U4,
    DType::I8,
    DType::U8,
    DType::I16,
    DType::U16,
    DType::I32,
    DType::U32,
    DType::I64,
    DType::U64,
];

/// Every float type: the narrow ones compute in `double` and round to
/// their format after every operation, in C as in arith.
const FLOATS: [DType; 9] = [
    DType::F32,
    DType::F64,
    DType::F16,
    DType::BF16,
    DType::F8E4M3FN,
    DType::F8E4M3FNUZ,
    DType::F8E5M2,
    DType::F8E5M2FNUZ,
    DType::F4E2M1,
];

/// One kernel, its inputs, and which outputs may differ in the last bits.
struct Test {
    name: String,
    block: Block,
    inputs: kernel::vm::Buffers,
    /// Outputs that may differ, with the units in the last place they may
    /// differ by.
    approx: HashMap<String, u64>,
    /// The VM must fail (and the C with it), with a message containing
    /// this.
    fails: Option<&'static str>,
}

fn parse(text: &str) -> Block {
    let b = kernel::parse_block(text).unwrap_or_else(|e| panic!("{e:?}\n{text}"));
    if let Err(errs) = kernel::verify_block(&b) {
        panic!("{}\n{text}", errs.join("\n"));
    }
    b
}

/// `n` integer values of type `t`: edge values, then random ones of every
/// magnitude, wrapped to `t` (as the VM holds them).
fn ints(t: DType, n: usize, seed: u64) -> Vec<Value> {
    let mut edge: Vec<i64> = vec![0, 1, -1, 2, -2, 3, 7, -7, 100, -100];
    let (min, max) = (ir::int_min(t), ir::int_max(t));
    for v in [min, max, min.wrapping_add(1), max.wrapping_sub(1)] {
        edge.push(v);
    }
    let mut rng = Rng::new(seed);
    let mut out: Vec<Value> = edge
        .into_iter()
        .map(|v| Value::Int(arith::wrap(t, v)))
        .collect();
    while out.len() < n {
        let shift = rng.next_u64() % 64;
        let v = (rng.next_u64() >> shift) as i64;
        out.push(Value::Int(arith::wrap(t, v)));
    }
    out.truncate(n);
    out
}

/// `n` float values of type `t`: edge values, then random ones.
fn floats(t: DType, n: usize, seed: u64) -> Vec<Value> {
    let edge = [
        0.0,
        -0.0,
        1.0,
        -1.0,
        0.5,
        -2.5,
        3.7,
        -128.5,
        300.7,
        1e30,
        -1e30,
        1e-40,
        f64::INFINITY,
        f64::NEG_INFINITY,
        f64::NAN,
        9.3e18,
        -9.3e18,
        1.9e19,
        4294967296.5,
    ];
    let mut rng = Rng::new(seed);
    let mut out: Vec<f64> = edge.to_vec();
    while out.len() < n {
        let m = (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64 - 0.5;
        let e = (rng.next_u64() % 20) as i32 - 10;
        out.push(m * 2f64.powi(e));
    }
    out.truncate(n);
    out.into_iter()
        .map(|x| Value::Float(arith::round(t, x)))
        .collect()
}

fn bools(n: usize, seed: u64) -> Vec<Value> {
    let mut rng = Rng::new(seed);
    (0..n)
        .map(|_| Value::Bool(rng.next_u64() % 2 == 1))
        .collect()
}

/// A kernel with one block over `i:n` that loads `ins` (buffers of `n`
/// elements, as scalars named like them) and stores each `(rhs, type)` of
/// `outs` into its own output `O{k}`.
fn elementwise(name: &str, n: usize, ins: &[(&str, DType)], outs: &[(String, DType)]) -> Block {
    let mut t = format!("block {name} []\n");
    for (b, ty) in ins {
        t.push_str(&format!("  in new {b} {ty}({n}):(1)\n"));
    }
    for (k, (_, ty)) in outs.iter().enumerate() {
        t.push_str(&format!("  out new O{k} {ty}({n}):(1)\n"));
    }
    t.push_str(&format!("{{\n  block s [i:{n}]\n"));
    for (b, ty) in ins {
        t.push_str(&format!("    in {b}[i] {ty}(1):(1)\n"));
    }
    for (k, (_, ty)) in outs.iter().enumerate() {
        t.push_str(&format!("    out O{k}[i] {ty}(1):(1)\n"));
    }
    t.push_str("  {\n");
    for (b, _) in ins {
        t.push_str(&format!("    ${b} = load({b})\n"));
    }
    for (k, (rhs, _)) in outs.iter().enumerate() {
        t.push_str(&format!("    $r{k} = {rhs}\n    O{k} = store($r{k})\n"));
    }
    t.push_str("  }\n}\n");
    parse(&t)
}

/// Casts of `$A` to every type (its own included).
fn casts() -> Vec<(String, DType)> {
    DType::ALL
        .iter()
        .map(|to| (format!("cast.{to}($A)"), *to))
        .collect()
}

fn comparisons(t: DType) -> Vec<(String, DType)> {
    ["lt", "le", "gt", "ge", "eq", "ne"]
        .iter()
        .map(|op| (format!("{op}.{t}($A, $B)"), DType::Bool))
        .collect()
}

fn integer_tests(tests: &mut Vec<Test>) {
    let n = 48;
    for (k, t) in INTS.into_iter().enumerate() {
        let mut outs: Vec<(String, DType)> = ["add", "sub", "mul", "div", "mod", "fmax", "fmin"]
            .iter()
            .map(|op| (format!("{op}.{t}($A, $B)"), t))
            .collect();
        outs.push((format!("neg.{t}($A)"), t));
        outs.push((format!("fabs.{t}($A)"), t));
        outs.extend(comparisons(t));
        outs.extend(casts());
        let a = ints(t, n, 11 + k as u64);
        // Every value as a divisor but zero (which fails; tested apart), in
        // another order than the dividends.
        let mut b = ints(t, n, 97 + k as u64);
        b.rotate_left(5);
        for v in &mut b {
            if *v == Value::Int(0) {
                *v = Value::Int(arith::wrap(t, 3));
            }
        }
        tests.push(Test {
            name: format!("int_{t}"),
            block: elementwise(&format!("int_{t}"), n, &[("A", t), ("B", t)], &outs),
            inputs: [("A".to_string(), a), ("B".to_string(), b)].into(),
            approx: HashMap::new(),
            fails: None,
        });
    }
}

fn float_tests(tests: &mut Vec<Test>) {
    let n = 64;
    for (k, t) in FLOATS.into_iter().enumerate() {
        let mut outs: Vec<(String, DType)> = ["add", "sub", "mul", "div", "mod"]
            .iter()
            .map(|op| (format!("{op}.{t}($A, $B)"), t))
            .collect();
        outs.push((format!("neg.{t}($A)"), t));
        outs.extend(comparisons(t));
        outs.extend(casts());
        let exact = outs.len();
        // Every builtin of `ir::Builtin`'s table, on its arity's operands.
        for b in Builtin::ALL {
            let operands = ["$A", "$B", "$C", "$D"][..b.arity()].join(", ");
            outs.push((format!("{}.{t}({operands})", b.name()), t));
        }
        let a = floats(t, n, 5 + k as u64);
        let mut b = floats(t, n, 50 + k as u64);
        b.rotate_left(3);
        let mut c = floats(t, n, 500 + k as u64);
        c.rotate_left(7);
        let mut d = floats(t, n, 5000 + k as u64);
        d.rotate_left(11);
        tests.push(Test {
            name: format!("float_{t}"),
            block: elementwise(
                &format!("float_{t}"),
                n,
                &[("A", t), ("B", t), ("C", t), ("D", t)],
                &outs,
            ),
            inputs: [
                ("A".to_string(), a),
                ("B".to_string(), b),
                ("C".to_string(), c),
                ("D".to_string(), d),
            ]
            .into(),
            approx: (exact..outs.len())
                .map(|k| (format!("O{k}"), ulps(t, Builtin::ALL[k - exact])))
                .collect(),
            fails: None,
        });
    }
}

/// A float32 builtin on a sweep of 4096 values evenly spaced from `lo` to
/// `hi`, the first of them replaced by `edges`, as written and vectorized
/// after the cpu pipeline: within `ulps` units in the last place of the
/// VM's (f64, rounded once).
fn sweep(tests: &mut Vec<Test>, f: &str, (lo, hi): (f64, f64), edges: &[f32], ulps: u64) {
    let n = 4096;
    let mut a: Vec<Value> = (0..n)
        .map(|k| Value::Float(f64::from((lo + (hi - lo) * k as f64 / n as f64) as f32)))
        .collect();
    for (k, x) in edges.iter().enumerate() {
        a[k] = Value::Float(f64::from(*x));
    }
    let name = format!("{f}_sweep");
    tests.push(Test {
        name: name.clone(),
        block: elementwise(
            &name,
            n,
            &[("A", DType::F32)],
            &[(format!("{f}.float32($A)"), DType::F32)],
        ),
        inputs: [("A".to_string(), a)].into(),
        approx: [("O0".to_string(), ulps)].into(),
        fails: None,
    });
}

/// `exp` (the C prelude's own `tsr_expf`) from -106 to 90, through the
/// subnormal results and the overflow threshold: within one ulp.
fn exp_tests(tests: &mut Vec<Test>) {
    let edges = [88.72283, 88.72284, -87.33655, -103.9721, -103.972];
    sweep(tests, "exp", (-106.0, 90.0), &edges, 1);
}

/// `erf` (the C prelude's own `tsr_erff`) from -5 to 5, through both of
/// its polynomials' intervals, their ends (0.875 and 4) and values down to
/// the subnormals: within one ulp.
fn erf_tests(tests: &mut Vec<Test>) {
    let edges = [
        0.875f32,
        -0.875,
        0.874_999_94,
        0.875_000_1,
        4.0,
        -4.0,
        3.999_999_8,
        1e-3,
        -1e-20,
        1e-40,
        0.0,
        -0.0,
    ];
    sweep(tests, "erf", (-5.0, 5.0), &edges, 1);
}

/// `tanh` (the C prelude's own `tsr_tanhf`) from -10 to 10, through both
/// of its pieces, their border (0.625), where the exponential overflows
/// (44.4), and values down to the subnormals: within two ulps.
fn tanh_tests(tests: &mut Vec<Test>) {
    let edges = [
        0.625f32,
        -0.625,
        0.624_999_94,
        0.625_000_06,
        44.0,
        45.0,
        -100.0,
        f32::INFINITY,
        f32::NEG_INFINITY,
        1e-3,
        -1e-20,
        1e-40,
        0.0,
        -0.0,
    ];
    sweep(tests, "tanh", (-10.0, 10.0), &edges, 2);
}

fn bool_tests(tests: &mut Vec<Test>) {
    let n = 24;
    let t = DType::Bool;
    let mut outs: Vec<(String, DType)> = ["and", "or"]
        .iter()
        .map(|op| (format!("{op}.bool($A, $B)"), t))
        .collect();
    outs.push(("not.bool($A)".to_string(), t));
    outs.push(("select.bool($A, $B, $C)".to_string(), t));
    outs.extend(comparisons(t));
    outs.extend(casts());
    tests.push(Test {
        name: "bool".to_string(),
        block: elementwise("bools", n, &[("A", t), ("B", t), ("C", t)], &outs),
        inputs: [
            ("A".to_string(), bools(n, 1)),
            ("B".to_string(), bools(n, 2)),
            ("C".to_string(), bools(n, 3)),
        ]
        .into(),
        approx: HashMap::new(),
        fails: None,
    });
    // Select on other types, with a computed condition.
    let mut t2 = String::from("block sel []\n  in new A float64(24):(1)\n  in new B float64(24):(1)\n  out new O float64(24):(1)\n  out new P int32(24):(1)\n{\n  block s [i:24]\n    in A[i] float64(1):(1)\n    in B[i] float64(1):(1)\n    out O[i] float64(1):(1)\n    out P[i] int32(1):(1)\n  {\n");
    t2.push_str("    $a = load(A)\n    $b = load(B)\n    $c = lt.float64($a, $b)\n    $s = select.float64($c, $a, $b)\n    O = store($s)\n    $x = cast.int32($a)\n    $y = cast.int32($b)\n    $z = select.int32($c, $y, $x)\n    P = store($z)\n  }\n}\n");
    tests.push(Test {
        name: "select".to_string(),
        block: parse(&t2),
        inputs: [
            ("A".to_string(), floats(DType::F64, 24, 8)),
            ("B".to_string(), floats(DType::F64, 24, 9)),
        ]
        .into(),
        approx: HashMap::new(),
        fails: None,
    });
}

/// Every aggregation of a row reduction, on initial values of the outputs.
fn aggregation_tests(tests: &mut Vec<Test>) {
    let (n, m) = (6, 7);
    let types = [
        DType::I8,
        DType::U8,
        DType::I32,
        DType::U64,
        DType::F32,
        DType::F64,
        DType::F16,
        DType::BF16,
        DType::F8E4M3FN,
        DType::Bool,
    ];
    for (k, t) in types.into_iter().enumerate() {
        let aggs = ["add", "mul", "min", "max"];
        let mut text = format!("block agg_{t} []\n  in new X {t}({n}, {m}):({m}, 1)\n");
        for a in aggs {
            text.push_str(&format!("  inout new O_{a} {t}({n}):(1)\n"));
        }
        text.push_str(&format!(
            "{{\n  block r [i:{n}, j:{m}]\n    in X[i, j] {t}(1, 1):({m}, 1)\n"
        ));
        for a in aggs {
            text.push_str(&format!("    out O_{a}[i]:{a} {t}(1):(1)\n"));
        }
        text.push_str("  {\n    $x = load(X)\n");
        for a in aggs {
            text.push_str(&format!("    O_{a} = store($x)\n"));
        }
        text.push_str("  }\n}\n");
        let gen = |len: usize, seed: u64| match t {
            DType::Bool => bools(len, seed),
            t if t.is_float() => floats(t, len, seed),
            t => ints(t, len, seed),
        };
        let mut inputs: kernel::vm::Buffers = [("X".to_string(), gen(n * m, 40 + k as u64))].into();
        for (j, a) in aggs.iter().enumerate() {
            inputs.insert(format!("O_{a}"), gen(n, 70 + j as u64));
        }
        tests.push(Test {
            name: format!("agg_{t}"),
            block: parse(&text),
            inputs,
            approx: HashMap::new(),
            fails: None,
        });
    }
}

/// Which points run: constraints with coefficients other than ±1 (folded
/// into loop bounds with floor division), constraints on passed indices
/// only (guards), a constraint that never holds, and
/// a local array filled by a child block and read by a gather.
fn structure_tests(tests: &mut Vec<Test>) {
    let text = "\
block shapes []
  out new O int64(8, 9):(9, 1)
  out new P int64(8):(1)
  out new Q int32(8):(1)
  out new R int64(8):(1)
{
  block s [x:8, y:9]
    2*x - 3*y + 4 >= 0
    -3*x + 2*y + 5 >= 0
    out O[x, y] int64(1, 1):(9, 1)
  {
    $v = index(10*x + y + 1)
    O = store($v)
  }
  block t [x:8]
    out P[x] int64(1):(1)
  {
    block inner [x:1 = x, k:5]
      x + k - 6 >= 0
      -x + 5 >= 0
      out P = P[0]:add int64(1):(1)
    {
      $v = index(k + 3*x)
      P = store($v)
    }
  }
  block u [x:8]
    out Q[x] int32(1):(1)
    inout new L int32(4):(1)
  {
    block fill [x:1 = x, j:4]
      out L[j] int32(1):(1)
    {
      $v = index(2*x + 3*j + 1)
      $w = cast.int32($v)
      L = store($w)
    }
    $p = index(3*x)
    $q = const.int64(4)
    $r = mod.int64($p, $q)
    $g = gather(L, $r)
    Q = store($g)
  }
  block never [x:8]
    -x - 1 >= 0
    out R[x] int64(1):(1)
  {
    $v = index(x)
    R = store($v)
  }
}
";
    tests.push(Test {
        name: "shapes".to_string(),
        block: parse(text),
        inputs: HashMap::new(),
        approx: HashMap::new(),
        fails: None,
    });
}

/// Names that are C keywords, library names, or no identifiers at all,
/// and comments that would end a C comment.
fn naming_tests(tests: &mut Vec<Test>) {
    let text = r#"block "weird names" [] // a */ comment ??/ with a trigraph
  in new "for" float32(4):(1)
  in new INT64_MAX int64(4):(1)
  out new "the out" float32(4):(1)
  out new buffers int64(4):(1)
{
  block "s*/x" [lo:4] // C(i) */ = 1
    in "for"[lo] float32(1):(1)
    in INT64_MAX[lo] int64(1):(1)
    out "the out"[lo] float32(1):(1)
    out buffers[lo] int64(1):(1)
  {
    $exp = load("for")
    $hi = exp.float32($exp)
    "the out" = store($hi)
    $int = load(INT64_MAX)
    $tsr_max = index(lo)
    $"1x" = add.int64($int, $tsr_max)
    buffers = store($"1x")
  }
}
"#;
    tests.push(Test {
        name: "names".to_string(),
        block: parse(text),
        inputs: [
            ("for".to_string(), floats(DType::F32, 4, 1)),
            ("INT64_MAX".to_string(), ints(DType::I64, 4, 2)),
        ]
        .into(),
        approx: [("the out".to_string(), 4)].into(),
        fails: None,
    });
}

/// Steps that fail where the VM fails.
fn failing_tests(tests: &mut Vec<Test>) {
    let gather = "\
block gather_oob []
  in new X float32(5):(1)
  in new I int32(4):(1)
  out new Z float32(4):(1)
{
  block g [i:4]
    in X_all = X[0] float32(5):(1)
    in I[i] int32(1):(1)
    out Z[i] float32(1):(1)
  {
    $k = load(I)
    $v = gather(X_all, $k)
    Z = store($v)
  }
}
";
    let idx = |v: &[i64]| v.iter().map(|x| Value::Int(*x)).collect::<Vec<_>>();
    for (name, index, fails) in [
        ("gather_ok", idx(&[0, 4, 2, 1]), None),
        ("gather_high", idx(&[0, 1, 5, 1]), Some("out of bounds")),
        (
            "gather_negative",
            idx(&[-1, 0, 0, 0]),
            Some("out of bounds"),
        ),
    ] {
        tests.push(Test {
            name: name.to_string(),
            block: parse(gather),
            inputs: [
                ("X".to_string(), floats(DType::F32, 5, 3)),
                ("I".to_string(), index),
            ]
            .into(),
            approx: HashMap::new(),
            fails,
        });
    }
    for (op, t) in [("div", DType::I32), ("mod", DType::U64), ("div", DType::I8)] {
        let outs = [(format!("{op}.{t}($A, $B)"), t)];
        let b = vec![Value::Int(1), Value::Int(0), Value::Int(2)];
        tests.push(Test {
            name: format!("{op}_{t}_by_zero"),
            block: elementwise(&format!("{op}_zero"), 3, &[("A", t), ("B", t)], &outs),
            inputs: [("A".to_string(), ints(t, 3, 1)), ("B".to_string(), b)].into(),
            approx: HashMap::new(),
            fails: Some("by zero"),
        });
    }
}

/// Whether `got` is `want`, or within 4 units in the last place of `t`.
/// How many units in the last place a builtin's C may differ from the
/// VM's: 4, except for float64 results of the functions arith takes from
/// the `libm` crate (a port of musl) where the C calls the C library's:
/// the two libraries' `lgamma` differ by 7 ulps at -2.5, where the result
/// is near a zero, so those get 16.
fn ulps(t: DType, b: Builtin) -> u64 {
    use Builtin as B;
    let from_libm = matches!(
        b,
        B::Lgamma | B::Tgamma | B::J0 | B::J1 | B::Y0 | B::Y1 | B::Erfc | B::Erfcx
    );
    if t == DType::F64 && from_libm {
        16
    } else {
        4
    }
}

fn agrees(got: &Value, want: &Value, t: DType, approx: Option<u64>) -> bool {
    match (got, want) {
        (Value::Float(a), Value::Float(b)) => {
            if a == b || (a.is_nan() && b.is_nan()) {
                return true;
            }
            let Some(ulps) = approx else { return false };
            if a.is_nan() || b.is_nan() || a.signum() != b.signum() {
                return false;
            }
            let d = if t == DType::F32 {
                u64::from((*a as f32).to_bits().abs_diff((*b as f32).to_bits()))
            } else if let Some(f) = t.narrow() {
                u64::from(f.encode(*a).abs_diff(f.encode(*b)))
            } else {
                a.to_bits().abs_diff(b.to_bits())
            };
            d <= ulps
        }
        _ => got == want,
    }
}

#[test]
fn the_c_computes_what_the_vm_computes() {
    let mut tests = Vec::new();
    integer_tests(&mut tests);
    float_tests(&mut tests);
    exp_tests(&mut tests);
    erf_tests(&mut tests);
    tanh_tests(&mut tests);
    bool_tests(&mut tests);
    aggregation_tests(&mut tests);
    structure_tests(&mut tests);
    naming_tests(&mut tests);
    failing_tests(&mut tests);
    // Each kernel as written and after the cpu pipeline.
    let mut runs: Vec<(String, Block, &Test)> = Vec::new();
    for t in &tests {
        runs.push((t.name.clone(), t.block.clone(), t));
        let piped = emit_common::cpu(&t.block, &kernel::Target::generic(), &t.name);
        runs.push((format!("{} after cpu", t.name), piped, t));
    }
    let programs: Vec<CProgram> = runs
        .iter()
        .enumerate()
        .map(|(k, (name, b, _))| {
            emit_c(b, &format!("sem{k}"))
                .unwrap_or_else(|e| panic!("{name}: {e}\n{}", kernel::print_block(b)))
        })
        .collect();
    let source: String = programs.iter().map(|p| p.source.as_str()).collect();
    let object = emit_common::scratch("semantics");
    Compiler::detect()
        .and_then(|c| c.compile(&source, &object))
        .unwrap_or_else(|e| panic!("{e}"));
    let mut failures = Vec::new();
    for ((name, block, test), program) in runs.iter().zip(&programs) {
        let kernel = Kernel::load(&object, program).unwrap_or_else(|e| panic!("{name}: {e}"));
        let want = kernel::vm::run(block, test.inputs.clone());
        let got = run_serial(&kernel, program, test.inputs.clone());
        match (want, got, test.fails) {
            (Err(w), Err(g), Some(fragment)) => {
                assert!(w.contains(fragment), "{name}: the VM failed with `{w}`");
                assert!(g.contains(fragment), "{name}: the C failed with `{g}`");
            }
            (Ok(want), Ok(got), None) => {
                for b in &program.buffers {
                    let approx = test.approx.get(&b.name).copied();
                    assert_eq!(
                        got[&b.name].len(),
                        want[&b.name].len(),
                        "{name}: `{}`",
                        b.name
                    );
                    for (k, (g, w)) in got[&b.name].iter().zip(&want[&b.name]).enumerate() {
                        if !agrees(g, w, b.dtype, approx) {
                            failures.push(format!(
                                "{name}: `{}`[{k}] is {g:?}, the VM has {w:?}",
                                b.name
                            ));
                        }
                    }
                }
            }
            (w, g, f) => failures.push(format!(
                "{name}: expected failure {f:?}, the VM gave {:?}, the C {:?}",
                w.err(),
                g.err()
            )),
        }
    }
    let _ = std::fs::remove_file(&object);
    let _ = std::fs::remove_file(object.with_extension("c"));
    assert!(
        failures.is_empty(),
        "{} differences:\n{}",
        failures.len(),
        failures.join("\n")
    );
}
