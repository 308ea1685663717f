//! The generator's families keep their promise: every program of the
//! shared families (`gen::FAMILIES`, `reduce_other`) and of the kernels'
//! (`gen::kernels`) checks at its sizes, and every statement's ranges after
//! checking are the ones its description has, so an iterator left to
//! inference gets exactly the range the generator meant. The property
//! tests draw from these families too, but each case costs them a run or a
//! compile; this checks many more programs without either.

use std::collections::HashMap;

use ir::{DType, Stmt};
use testkit::gen::{self, kernels, Profile};
use testkit::Rng;

/// The kernels alone, over the widths and bounds the compiled path's test
/// uses.
const PROFILE: Profile = Profile {
    dtypes: &[(DType::F32, 2), (DType::F64, 1), (DType::I32, 1)],
    families: &[
        ("generic", kernels::generic, 1),
        ("matmul", kernels::matmul, 1),
        ("convolution", kernels::convolution, 1),
    ],
    float_literals: 50,
    nonlinear: true,
    lhs_widths: &[1, 3, 5, 7, 13, 16, 17, 19, 20, 33],
    reduction_widths: &[1, 2, 3, 5, 7, 13, 17],
    max_volume: 60_000,
    max_elements: 300_000,
};

/// The shared families, with every element type and operator.
const SHARED: Profile = Profile {
    dtypes: &[
        (DType::F32, 2),
        (DType::F64, 1),
        (DType::I32, 1),
        (DType::I64, 1),
    ],
    families: &gen::generate::NONLINEAR_FAMILIES,
    float_literals: 30,
    nonlinear: true,
    lhs_widths: &[1, 2, 3, 4, 5, 6],
    reduction_widths: &[1, 2, 3, 4],
    max_volume: 1500,
    max_elements: 100_000,
};

#[test]
fn kernels_check_with_the_ranges_they_describe() {
    check_ranges(&PROFILE, 3000);
}

#[test]
fn shared_families_check_with_the_ranges_they_describe() {
    check_ranges(&SHARED, 3000);
}

/// Generates `count` programs of `profile` (seeds 0 to `count - 1`) and
/// checks each at its sizes, its ranges against its description.
fn check_ranges(profile: &Profile, count: u64) {
    for seed in 0..count {
        let generated = gen::generate(&mut Rng::new(seed), profile);
        let prog = &generated.prog;
        let source = prog.source("random");
        let context = format!(
            "seed {seed} (family {}), sizes {:?}:\n{source}",
            generated.family, prog.sizes
        );
        let sizes: HashMap<String, i64> = prog.sizes.clone().into_iter().collect();
        let checked = tc::check_source_with_sizes(&source, &sizes).unwrap_or_else(|diags| {
            let diags: Vec<String> = diags.iter().map(ToString::to_string).collect();
            panic!("{context}does not check: {diags:?}")
        });
        let def = checked.program.def("random").expect("def random");
        let comps = def.stmts.iter().filter_map(|s| match s {
            Stmt::Comp(c) => Some(c),
            _ => None,
        });
        let value = |s: &str| sizes.get(s).copied();
        for (k, (c, st)) in comps.zip(&prog.stmts).enumerate() {
            for r in &st.ranges {
                let got = c.range(&r.name).expect("every iterator has a range");
                let lo = got.lo.eval(&value).expect("a bound of the sizes");
                let hi = got.hi.eval(&value).expect("a bound of the sizes");
                assert_eq!(
                    (lo, hi),
                    (r.lo, r.hi),
                    "{context}statement {k}: the range of `{}`",
                    r.name
                );
            }
        }
    }
}
