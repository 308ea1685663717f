//! The safe interface to compiled steps: `Kernel::load` checks that an
//! object was compiled from the program (its interface text) and
//! `Kernel::run_step` checks buffers and partitions before calling; a
//! parallel step runs only its partition; tensors convert to and from
//! the VM's values exactly; `#pragma GCC ivdep` is written only on vector
//! loops whose lanes are independent, and both kinds compute what the VM
//! does, but that a vector loop accumulating products by `+` rounds once
//! (a fused multiply-add) where the VM rounds twice. All programs share one compiled object, but for those that come
//! from the kernel cache: steps that compute the same thing on different
//! buffers share one function, the distinct functions are split into
//! units, and the units' objects load and run as the program (and are
//! refused in the wrong places).

mod emit_common;

use std::path::PathBuf;
use std::sync::OnceLock;

use codegen::cache::KernelCache;
use codegen::compile::Compiler;
use codegen::emit::{emit_c, CProgram, FUNCTIONS_PER_UNIT};
use codegen::exec::{partitions, run_serial};
use codegen::load::Kernel;
use ir::{DType, Value};
use kernel::Block;
use tensor::Tensor;

fn parse(text: &str) -> Block {
    kernel::parse_block(text).unwrap_or_else(|e| panic!("{e:?}\n{text}"))
}

/// `O = 2 * X` over a parallel index of range `n`.
fn double(n: usize) -> Block {
    parse(&format!(
        "block double []\n  in new X float32({n}):(1)\n  out new O float32({n}):(1)\n{{\n  block s [i:{n} #parallel] #parallel\n    in X[i] float32(1):(1)\n    out O[i] float32(1):(1)\n  {{\n    $x = load(X)\n    $two = const.float32(2.0)\n    $y = mul.float32($x, $two)\n    O = store($y)\n  }}\n}}\n"
    ))
}

/// A vector loop whose lane `i` reads what lane `i - 1` wrote.
const SHIFT: &str = "block shift []\n  inout new O float32(17):(1)\n{\n  block s [i:16] #vector\n    out O[i + 1] float32(1):(1)\n    in P = O[i] float32(1):(1)\n  {\n    $x = load(P)\n    O = store($x)\n  }\n}\n";

/// A vector loop whose lanes are independent.
const SCALE: &str = "block scale []\n  in new X float32(16):(1)\n  inout new O float32(16):(1)\n{\n  block s [i:16] #vector\n    in X[i] float32(1):(1)\n    inout O[i]:add float32(1):(1)\n  {\n    $x = load(X)\n    O = store($x)\n  }\n}\n";

/// A vector loop accumulating the products `X * Y` into `O` by `+`.
const MULADD: &str = "block muladd []\n  in new X float32(16):(1)\n  in new Y float32(16):(1)\n  inout new O float32(16):(1)\n{\n  block s [i:16] #vector\n    in X[i] float32(1):(1)\n    in Y[i] float32(1):(1)\n    inout O[i]:add float32(1):(1)\n  {\n    $x = load(X)\n    $y = load(Y)\n    $p = mul.float32($x, $y)\n    O = store($p)\n  }\n}\n";

/// The programs of these tests, compiled once into one object and loaded
/// (the object is removed once loaded), and what loading the object as
/// other programs gave.
struct Fixture {
    double: (CProgram, Kernel),
    shift: (CProgram, Kernel),
    scale: (CProgram, Kernel),
    muladd: (CProgram, Kernel),
    /// Loading as `double` at another size, under the same prefix.
    other_size: Result<Kernel, String>,
    /// Loading as a program whose symbols the object lacks.
    absent: Result<Kernel, String>,
}

fn fixture() -> &'static Fixture {
    static F: OnceLock<Fixture> = OnceLock::new();
    F.get_or_init(|| {
        let emit = |b: &Block, p: &str| emit_c(b, p).unwrap_or_else(|e| panic!("{e}"));
        let programs = [
            emit(&double(10), "double"),
            emit(&parse(SHIFT), "shift"),
            emit(&parse(SCALE), "scale"),
            emit(&parse(MULADD), "muladd"),
        ];
        let object = emit_common::scratch("api");
        let source: String = programs.iter().map(|p| p.source.as_str()).collect();
        Compiler::detect()
            .and_then(|c| c.compile(&source, &object))
            .unwrap_or_else(|e| panic!("{e}"));
        let [double_p, shift, scale, muladd] = programs;
        let load = |p: CProgram| {
            let k = Kernel::load(&object, &p).unwrap_or_else(|e| panic!("{e}"));
            (p, k)
        };
        let f = Fixture {
            other_size: Kernel::load(&object, &emit(&double(12), "double")),
            absent: Kernel::load(&object, &emit(&double(10), "absent")),
            double: load(double_p),
            shift: load(shift),
            scale: load(scale),
            muladd: load(muladd),
        };
        let _ = std::fs::remove_file(&object);
        let _ = std::fs::remove_file(object.with_extension("c"));
        f
    })
}

fn floats(v: &[f32]) -> Tensor {
    Tensor::from_slice(DType::F32, &[v.len()], v)
}

#[test]
fn a_vector_reduction_of_products_rounds_once_with_avx512() {
    // x * x = 1 + 2^-11 + 2^-24 exactly; rounded to float32 it is 1 + 2^-11
    // (the 2^-24 is half a unit in the last place, a tie to even). Added
    // to -(1 + 2^-11), the rounded product leaves 0 and the exact one
    // 2^-24.
    let x = 1.0 + 2f32.powi(-12);
    let o = -(1.0 + 2f32.powi(-11));
    let (program, k) = &fixture().muladd;
    assert!(program.source.contains("fmadd_ps"), "{}", program.source);
    let inputs: kernel::vm::Buffers = [
        ("X".to_string(), vec![Value::Float(f64::from(x)); 16]),
        ("Y".to_string(), vec![Value::Float(f64::from(x)); 16]),
        ("O".to_string(), vec![Value::Float(f64::from(o)); 16]),
    ]
    .into();
    let vm = kernel::vm::run(&parse(MULADD), inputs.clone()).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(vm["O"], vec![Value::Float(0.0); 16]);
    let got = run_serial(k, program, inputs).unwrap_or_else(|e| panic!("{e}"));
    // The C is compiled for this machine: the AVX-512 branch runs where it
    // has AVX-512, the scalar loop (two roundings, as the VM) elsewhere.
    let fused = cfg!(target_arch = "x86_64") && avx512();
    let want = if fused { 2f64.powi(-24) } else { 0.0 };
    assert_eq!(got["O"], vec![Value::Float(want); 16]);
}

fn avx512() -> bool {
    #[cfg(target_arch = "x86_64")]
    {
        std::is_x86_feature_detected!("avx512f")
    }
    #[cfg(not(target_arch = "x86_64"))]
    {
        false
    }
}

#[test]
fn run_step_checks_buffers_and_partitions_before_calling() {
    let k = &fixture().double.1;
    assert_eq!(k.steps()[0].parallel, Some(10));
    let x: Vec<f32> = (0..10).map(|i| i as f32).collect();
    let err = |r: Result<(), String>| r.expect_err("the call must be refused");
    let mut one = vec![floats(&x)];
    assert!(err(k.run_step(0, &mut one, 0, 10)).contains("takes 2 buffers, got 1"));
    let mut wrong_type = vec![floats(&x), Tensor::zeros(DType::F64, &[10])];
    assert!(err(k.run_step(0, &mut wrong_type, 0, 10))
        .contains("buffer `O` must be float32[10], got float64[10]"));
    let mut wrong_len = vec![floats(&x), floats(&[0.0; 9])];
    assert!(err(k.run_step(0, &mut wrong_len, 0, 10)).contains("must be float32[10]"));
    let mut bufs = vec![floats(&x), floats(&[0.0; 10])];
    for (lo, hi) in [(3, 2), (-1, 4), (0, 11)] {
        assert!(err(k.run_step(0, &mut bufs, lo, hi)).contains("not inside 0..10"));
    }
    assert!(err(k.run_step(1, &mut bufs, 0, 10)).contains("no step 1"));
    // One partition writes only its own elements.
    k.run_step(0, &mut bufs, 2, 5)
        .unwrap_or_else(|e| panic!("{e}"));
    let want: Vec<f32> = (0..10)
        .map(|i| {
            if (2..5).contains(&i) {
                2.0 * i as f32
            } else {
                0.0
            }
        })
        .collect();
    assert_eq!(bufs[1], floats(&want));
    for (lo, hi) in partitions(10) {
        k.run_step(0, &mut bufs, lo, hi)
            .unwrap_or_else(|e| panic!("{e}"));
    }
    let all: Vec<f32> = (0..10).map(|i| 2.0 * i as f32).collect();
    assert_eq!(bufs[1], floats(&all));
}

#[test]
fn objects_of_other_programs_are_refused() {
    let f = fixture();
    let e = f.other_size.as_ref().expect_err("a different interface");
    assert!(e.contains("was not compiled from this program"), "{e}");
    assert!(
        e.contains("float32[12]") && e.contains("float32[10]"),
        "{e}"
    );
    let e = f.absent.as_ref().expect_err("no such symbol");
    assert!(e.contains("has no `absent_abi`"), "{e}");
    let (double_p, k) = &f.double;
    let e = run_serial(k, &f.shift.0, Default::default()).expect_err("another program");
    assert!(e.contains("not loaded from program `shift`"), "{e}");
    let inputs = [("X".to_string(), vec![Value::Float(1.0); 3])].into();
    let e = run_serial(k, double_p, inputs).expect_err("a short input");
    assert!(e.contains("buffer `X` has 3 values, expected 10"), "{e}");
}

#[test]
fn ivdep_marks_only_independent_vector_loops_and_both_match_the_vm() {
    let f = fixture();
    assert!(
        f.scale.0.source.contains("#pragma GCC ivdep"),
        "{}",
        f.scale.0.source
    );
    assert!(!f.shift.0.source.contains("ivdep"), "{}", f.shift.0.source);
    let o: Vec<Value> = (0..17).map(|i| Value::Float(f64::from(i) + 0.5)).collect();
    let x: Vec<Value> = (0..16).map(|i| Value::Float(f64::from(i) * 3.0)).collect();
    for (text, (program, k), inputs) in [
        (SHIFT, &f.shift, vec![("O", o.clone())]),
        (SCALE, &f.scale, vec![("O", o[..16].to_vec()), ("X", x)]),
    ] {
        let inputs: kernel::vm::Buffers = inputs
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let want = kernel::vm::run(&parse(text), inputs.clone()).unwrap_or_else(|e| panic!("{e}"));
        let got = run_serial(k, program, inputs).unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(got, want, "{}", program.source);
    }
}

#[test]
fn tensors_convert_vm_values_exactly() {
    let cases: Vec<(DType, Vec<Value>)> = vec![
        (DType::Bool, vec![Value::Bool(true), Value::Bool(false)]),
        (DType::U8, vec![Value::Int(0), Value::Int(255)]),
        (DType::I8, vec![Value::Int(-128), Value::Int(127)]),
        (DType::U16, vec![Value::Int(65535)]),
        (DType::I16, vec![Value::Int(-32768)]),
        (DType::U32, vec![Value::Int(4_294_967_295)]),
        (DType::I32, vec![Value::Int(-2_147_483_648)]),
        // uint64 values are held as their bit patterns, as the VM does.
        (DType::U64, vec![Value::Int(-1), Value::Int(7)]),
        (DType::I64, vec![Value::Int(i64::MIN)]),
        (
            DType::F32,
            vec![Value::Float(0.5), Value::Float(f64::INFINITY)],
        ),
        (DType::F64, vec![Value::Float(0.1), Value::Float(-0.0)]),
    ];
    for (t, values) in cases {
        let b = Tensor::from_values(t, &[values.len()], &values);
        assert_eq!(b.dtype(), t);
        assert_eq!(b.len(), values.len());
        assert_eq!(b.values(), values, "{t}");
    }
    assert_eq!(
        Tensor::from_values(DType::U64, &[1], &[Value::Int(-1)]).as_slice::<u64>(),
        Some(&[u64::MAX][..])
    );
    // float32 tensors hold float32 values.
    assert_eq!(
        Tensor::from_values(DType::F32, &[1], &[Value::Float(0.1)]).values(),
        vec![Value::Float(f64::from(0.1f32))]
    );
    assert!(Tensor::zeros(DType::I16, &[0]).is_empty());
}

#[test]
fn partitions_cover_the_range_unevenly() {
    for range in [0u64, 1, 2, 3, 7, 10, 100] {
        let p = partitions(range);
        assert_eq!(p[0].0, 0);
        assert_eq!(p[2].1, range as i64);
        assert!(p.windows(2).all(|w| w[0].1 == w[1].0 && w[0].0 <= w[0].1));
    }
    assert_eq!(partitions(10), [(0, 2), (2, 6), (6, 10)]);
}

#[test]
fn kernels_load_from_the_cache_too() {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("emit-cache-{}", std::process::id()));
    let compiler = Compiler::detect().unwrap_or_else(|e| panic!("{e}"));
    let cache = KernelCache::open(dir.clone(), compiler).unwrap_or_else(|e| panic!("{e:?}"));
    let program = emit_c(&double(6), "cached").unwrap_or_else(|e| panic!("{e}"));
    let lib = cache
        .get(&program.source, "emit-api-test")
        .unwrap_or_else(|e| panic!("{e:?}"));
    let k = Kernel::from_library(lib, &program).unwrap_or_else(|e| panic!("{e}"));
    let x: Vec<Value> = (0..6).map(|i| Value::Float(f64::from(i))).collect();
    let got =
        run_serial(&k, &program, [("X".to_string(), x)].into()).unwrap_or_else(|e| panic!("{e}"));
    let want: Vec<Value> = (0..6).map(|i| Value::Float(2.0 * f64::from(i))).collect();
    assert_eq!(got["O"], want);
    drop(k);
    let _ = std::fs::remove_dir_all(&dir);
}

/// A chain of `steps` steps, `B{k+1} = B{k} * (2 + k % distinct)`, each
/// over a parallel index: steps `distinct` apart compute the same thing on
/// other buffers.
fn chain(steps: usize, distinct: usize) -> Block {
    let mut text = "block chain []\n  in new B0 float32(20):(1)\n".to_string();
    for k in 1..steps {
        text += &format!("  inout new B{k} float32(20):(1) #temp\n");
    }
    text += &format!("  out new B{steps} float32(20):(1)\n{{\n");
    for k in 0..steps {
        let (x, y, c) = (k, k + 1, 2 + k % distinct);
        text += &format!(
            "  block s{k} [i:20 #parallel] #parallel\n    in X = B{x}[i] float32(1):(1)\n    out Y = B{y}[i] float32(1):(1)\n  {{\n    $x = load(X)\n    $c = const.float32({c}.0)\n    $y = mul.float32($x, $c)\n    Y = store($y)\n  }}\n"
        );
    }
    text += "}\n";
    parse(&text)
}

#[test]
fn steps_with_the_same_code_share_a_function_and_units_run_as_the_program() {
    let distinct = FUNCTIONS_PER_UNIT + 2;
    let steps = 2 * distinct + 1;
    let block = chain(steps, distinct);
    let program = emit_c(&block, "chain").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(program.steps.len(), steps);
    assert_eq!(program.functions.len(), distinct, "{}", program.source);
    for (k, s) in program.steps.iter().enumerate() {
        assert_eq!(s.function, program.steps[k % distinct].function, "step {k}");
        assert_eq!(s.args, vec![k, k + 1], "step {k}");
    }
    // The readable file has each function once.
    for f in &program.functions {
        let definitions = program
            .source
            .matches(&format!("int32_t {}(", f.symbol))
            .count();
        assert_eq!(definitions, 1, "{}", f.symbol);
    }
    // More functions than one unit takes: several units, each function
    // defined in its own.
    assert!(program.units.len() >= 2, "{} units", program.units.len());
    for (u, unit) in program.units.iter().enumerate() {
        for &f in &unit.functions {
            assert_eq!(program.functions[f].unit, u);
            assert!(unit.source.contains(&program.functions[f].text));
        }
    }
    let again = emit_c(&block, "chain").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(again, program, "emitting is deterministic");

    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("emit-units-{}", std::process::id()));
    let compiler = Compiler::detect().unwrap_or_else(|e| panic!("{e}"));
    let cache = KernelCache::open(dir.clone(), compiler).unwrap_or_else(|e| panic!("{e:?}"));
    let sources: Vec<&str> = program.units.iter().map(|u| u.source.as_str()).collect();
    let libs: Vec<_> = cache
        .get_all(&sources, "emit-api-test")
        .into_iter()
        .map(|l| l.unwrap_or_else(|e| panic!("{e:?}")))
        .collect();
    let mut swapped = libs.clone();
    swapped.swap(0, 1);
    let e = Kernel::from_units(swapped, &program).expect_err("units in the wrong places");
    assert!(e.contains("was not compiled from this program"), "{e}");
    let e = Kernel::from_units(libs[1..].to_vec(), &program).expect_err("a unit missing");
    assert!(e.contains("units, got"), "{e}");
    let k = Kernel::from_units(libs, &program).unwrap_or_else(|e| panic!("{e}"));
    let x: Vec<Value> = (0..20).map(|i| Value::Float(f64::from(i) - 7.5)).collect();
    let inputs: kernel::vm::Buffers = [("B0".to_string(), x)].into();
    let want = kernel::vm::run(&block, inputs.clone()).unwrap_or_else(|e| panic!("{e}"));
    let got = run_serial(&k, &program, inputs).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(got, want);
    drop(k);
    let _ = std::fs::remove_dir_all(&dir);
}
