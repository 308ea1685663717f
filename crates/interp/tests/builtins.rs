//! Every builtin of `ir::Builtin`'s table on the interpreter (float32)
//! against reference values at chosen points: exact values of elementary
//! identities (`acos(1/2) = pi/3`, `hypot(3, 4) = 5`, `tgamma(5) = 24`) and
//! tabulated values of the special functions (Abramowitz and Stegun's
//! tables; `erfinv(1/2)`, the normal quantile 0.6744897501960817), none
//! computed by the code under test. A result must be the float32 nearest
//! the reference, or within 3 float32 ulps of it.

mod common;

use common::*;
use ir::{Builtin, DType, Reduction};

/// `(builtin, arguments, reference)`; every argument is exact in float32.
const CASES: &[(&str, &[f64], f64)] = &[
    ("acos", &[0.5], std::f64::consts::FRAC_PI_3),
    ("acosh", &[2.0], 1.316_957_896_924_816_6),
    ("asin", &[0.5], std::f64::consts::FRAC_PI_6),
    ("asinh", &[1.0], 0.881_373_587_019_543),
    ("atan2", &[1.0, -1.0], 3.0 * std::f64::consts::FRAC_PI_4),
    ("atan", &[1.0], std::f64::consts::FRAC_PI_4),
    ("atanh", &[0.5], 0.549_306_144_334_054_9),
    ("cbrt", &[-27.0], -3.0),
    ("ceil", &[-2.5], -2.0),
    ("copysign", &[3.0, -0.0], -3.0),
    ("cos", &[1.0], 0.540_302_305_868_139_8),
    ("cosh", &[1.0], 1.543_080_634_815_243_7),
    ("cospi", &[0.25], std::f64::consts::FRAC_1_SQRT_2),
    ("cospi", &[0.5], 0.0),
    ("cospi", &[-3.0], -1.0),
    ("cyl_bessel_i0", &[1.0], 1.266_065_877_752_008_4),
    ("cyl_bessel_i1", &[1.0], 0.565_159_103_992_485),
    ("erfc", &[1.0], 0.157_299_207_050_285_13),
    ("erfcinv", &[0.5], 0.476_936_276_204_469_9),
    ("erfcinv", &[1.5], -0.476_936_276_204_469_9),
    ("erfcx", &[1.0], 0.427_583_576_155_807_05),
    ("erf", &[1.0], 0.842_700_792_949_714_9),
    ("erfinv", &[0.5], 0.476_936_276_204_469_9),
    ("erfinv", &[1.0], f64::INFINITY),
    ("exp10", &[2.0], 100.0),
    ("exp2", &[10.0], 1024.0),
    ("exp", &[1.0], std::f64::consts::E),
    ("expm1", &[0.0625], 0.064_494_458_917_859_43),
    ("fabs", &[-3.0], 3.0),
    ("fdim", &[5.0, 3.0], 2.0),
    ("fdim", &[3.0, 5.0], 0.0),
    ("fdivide", &[1.0, 4.0], 0.25),
    ("floor", &[-2.5], -3.0),
    ("fma", &[2.0, 3.0, 4.0], 10.0),
    ("fmax", &[1.0, 2.0], 2.0),
    ("fmin", &[1.0, 2.0], 1.0),
    ("max", &[-1.0, -2.0], -1.0),
    ("min", &[-1.0, -2.0], -2.0),
    ("fmod", &[-7.0, 3.0], -1.0),
    ("hypot", &[3.0, 4.0], 5.0),
    ("j0", &[1.0], 0.765_197_686_557_966_6),
    ("j1", &[1.0], 0.440_050_585_744_933_5),
    ("lgamma", &[0.5], 0.572_364_942_924_700_1),
    ("lgamma", &[-0.5], 1.265_512_123_484_645_4),
    ("log10", &[1000.0], 3.0),
    ("log1p", &[0.0625], 0.060_624_621_816_434_84),
    ("log2", &[8.0], 3.0),
    ("logb", &[10.0], 3.0),
    ("log", &[10.0], std::f64::consts::LN_10),
    // The next float32 after 1 toward 2 is 1 + 2^-23.
    ("nextafter", &[1.0, 2.0], 1.000_000_119_209_289_6),
    ("norm3d", &[2.0, 3.0, 6.0], 7.0),
    ("norm4d", &[1.0, 2.0, 2.0, 4.0], 5.0),
    ("normcdf", &[1.0], 0.841_344_746_068_542_9),
    ("normcdfinv", &[0.75], 0.674_489_750_196_081_7),
    ("pow", &[2.0, 10.0], 1024.0),
    ("rcbrt", &[8.0], 0.5),
    ("remainder", &[5.0, 3.0], -1.0),
    ("rhypot", &[3.0, 4.0], 0.2),
    ("rnorm3d", &[2.0, 3.0, 6.0], 1.0 / 7.0),
    ("rnorm4d", &[1.0, 2.0, 2.0, 4.0], 0.2),
    ("round", &[-2.5], -3.0),
    ("rsqrt", &[4.0], 0.5),
    ("sin", &[1.0], 0.841_470_984_807_896_5),
    ("sinh", &[1.0], 1.175_201_193_643_801_4),
    ("sinpi", &[0.5], 1.0),
    ("sinpi", &[1.0], 0.0),
    ("sqrt", &[2.0], std::f64::consts::SQRT_2),
    ("tan", &[1.0], 1.557_407_724_654_902_3),
    ("tanh", &[1.0], 0.761_594_155_955_764_9),
    ("tgamma", &[5.0], 24.0),
    ("tgamma", &[0.5], 1.772_453_850_905_516),
    ("trunc", &[-2.7], -2.0),
    ("y0", &[1.0], 0.088_256_964_215_676_96),
    ("y1", &[1.0], -0.781_212_821_300_288_7),
    ("sigmoid", &[0.0], 0.5),
];

/// The float32 interpreter's value of `name(args)`.
fn run(name: &str, args: &[f64]) -> f64 {
    let b = Builtin::from_name(name).unwrap_or_else(|| panic!("`{name}` is not a builtin"));
    let body = call(
        b,
        args.iter()
            .map(|x| lit_f(f64::from(*x as f32), DType::F32))
            .collect(),
    );
    let p = program(vec![DefBuilder::new("f")
        .output("O", DType::F32, &["1"])
        .comp(comp(
            "O",
            &["i"],
            Reduction::Assign,
            false,
            body,
            vec![upto("i", "1")],
        ))
        .build()]);
    let out = only_output(run_real(&p, &Default::default()));
    assert!(out.dtype().is_float(), "{name}: {out:?}");
    out.to_f64_vec()[0]
}

#[test]
fn every_builtin_matches_its_reference_values() {
    let mut failures = Vec::new();
    for (name, args, want) in CASES {
        let got = run(name, args);
        let nearest = *want as f32;
        let ulps = (got as f32).to_bits().abs_diff(nearest.to_bits());
        let same = got == f64::from(nearest) || (got.signum() == want.signum() && ulps <= 3);
        if !same {
            failures.push(format!("{name}{args:?} = {got}, want {want} ({ulps} ulps)"));
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // Every builtin of the table is among the cases.
    for b in Builtin::ALL {
        assert!(
            CASES.iter().any(|(n, _, _)| *n == b.name()),
            "`{}` has no reference case",
            b.name()
        );
    }
}

#[test]
fn domain_edges_give_nan_and_infinities() {
    assert!(run("acos", &[2.0]).is_nan());
    assert!(run("erfinv", &[1.5]).is_nan());
    assert!(run("erfcinv", &[-0.5]).is_nan());
    assert_eq!(run("erfcinv", &[0.0]), f64::INFINITY);
    assert_eq!(run("logb", &[0.0]), f64::NEG_INFINITY);
    assert_eq!(run("lgamma", &[0.0]), f64::INFINITY);
    assert!(run("tgamma", &[-1.0]).is_nan());
    // A NaN operand of max and min gives NaN; fmax and fmin pass over it.
    assert!(run("max", &[f64::NAN, 1.0]).is_nan());
    assert!(run("min", &[1.0, f64::NAN]).is_nan());
    assert_eq!(run("fmax", &[f64::NAN, 1.0]), 1.0);
    assert_eq!(run("fmin", &[1.0, f64::NAN]), 1.0);
    // cyl_bessel_i0(100) is about 1.07e42, beyond float32.
    assert_eq!(run("cyl_bessel_i0", &[100.0]), f64::INFINITY);
}
