//! Random derivation sequences on random comprehensions preserve results.
//!
//! The shared generator (`testkit::gen`, multi-linear profile, seeded)
//! writes small defs; each is taken to its sizes, and a random walk applies
//! up to `STEPS` derivation rules (every rule of OLLIE's Table 1, drawn
//! among all their applications at all statements). After every step the
//! state's def must pass `ir::verify_program` and the equivalence
//! verifier (exact over Z_p: the programs are multi-linear) must call it
//! equal to the original. Beside the generated programs, a few written
//! out (a transposed matmul, a padded convolution, a dilated G2BMM, a
//! transposed convolution guarded by `?:` as the prelude writes it, a
//! convolution 5 wide in NHWC for Winograd along the width) are
//! walked `WALKS` times each, since the generator rarely writes an exact
//! matmul. The test also asserts that the walks applied every rule at
//! least once, so that a rule that stopped applying fails it.

use std::collections::{BTreeMap, HashMap};

use ir::{DType, Program};
use opt::derive::rules::{all, Applied};
use opt::derive::{at_sizes, State};
use opt::verify::{verify, Options};
use testkit::gen::{generate, Profile, FAMILIES};
use testkit::Rng;

const CASES: u64 = 300;
const STEPS: usize = 4;
const SEED: u64 = 0xde71_7e00_0000_0001;
const WALKS: usize = 25;

/// Programs written out, with their sizes.
const WRITTEN: [(&str, &[(&str, i64)]); 5] = [
    (
        "def f(float(K,M) A, float(N,K) B) -> (C) { C(i, j) +=! A(k, i) * B(j, k) }",
        &[("M", 3), ("N", 4), ("K", 5)],
    ),
    (
        "def f(float(N,C,H,W) A, float(F,C,3,3) K) -> (O) {
           O(n, f, h, w) +=! A(n, c, h + r - 1, w + s - 1) * K(f, c, r, s) where h in 0:H, w in 0:W
         }",
        &[("N", 1), ("C", 2), ("H", 4), ("W", 3), ("F", 2)],
    ),
    (
        "def f(float(B,M,K) Q, float(B,M,K) P) -> (O) {
           O(b, i, w) +=! Q(b, i, k) * P(b, i + 2 * (w - 1), k) where i in 0:M, w in 0:3
         }",
        &[("B", 1), ("M", 6), ("K", 2)],
    ),
    (
        "def f(float(N,C,H,W) X, float(C,F,4,4) Wt) -> (Y) {
           Y(n, f, oh, ow) +=! (th % 2 == 0 && th >= 0 && th < 2 * H && tw % 2 == 0 && tw >= 0 && tw < 2 * W)
                               ? X(n, c, th / 2, tw / 2) * Wt(c, f, kh, kw) : 0.0
             where oh in 0:2 * H, ow in 0:2 * W, kh in 0:4, kw in 0:4, th = oh + 1 - kh, tw = ow + 1 - kw
         }",
        &[("N", 1), ("C", 2), ("H", 2), ("W", 2), ("F", 2)],
    ),
    (
        "def f(float(N,H,W,C) A, float(3,5,C,F) K) -> (O) {
           O(n, h, w, f) +=! A(n, h + r - 1, w + s - 2, c) * K(r, s, c, f) where h in 0:H, w in 0:W
         }",
        &[("N", 1), ("C", 2), ("H", 3), ("W", 5), ("F", 2)],
    ),
];

const PROFILE: Profile = Profile {
    dtypes: &[(DType::F32, 1)],
    families: &FAMILIES,
    float_literals: 0,
    nonlinear: false,
    lhs_widths: &[1, 2, 3, 4],
    reduction_widths: &[1, 2, 3],
    max_volume: 600,
    max_elements: 20_000,
};

#[test]
fn random_derivations_preserve_results() {
    let mut rng = Rng::new(SEED);
    let mut applied: BTreeMap<&'static str, usize> = BTreeMap::new();
    for name in all().iter().map(|r| r.name()) {
        applied.insert(name, 0);
    }
    let mut walks = 0;
    let mut cases: Vec<(String, HashMap<String, i64>)> = (0..CASES)
        .map(|_| {
            let prog = generate(&mut rng, &PROFILE).prog;
            let sizes = prog.sizes.iter().map(|(k, &v)| (k.clone(), v)).collect();
            (prog.source("f"), sizes)
        })
        .collect();
    for (text, sizes) in WRITTEN {
        let sizes: HashMap<String, i64> = sizes.iter().map(|(k, v)| (k.to_string(), *v)).collect();
        cases.extend(std::iter::repeat_n((text.to_string(), sizes), WALKS));
    }
    for (case, (text, sizes)) in cases.into_iter().enumerate() {
        let checked = tc::check_source(&text).unwrap_or_else(|d| {
            panic!(
                "case {case}: the generator's program does not check:\n{}",
                tc::render_diagnostics(&d, "case", &text)
            )
        });
        let def = checked.program.def("f").expect("the generator writes `f`");
        let start = at_sizes(def, &sizes);
        let Ok(mut state) = State::new(start.clone()) else {
            continue;
        };
        walks += 1;
        for step in 0..STEPS {
            let mut options: Vec<(&'static str, Applied)> = Vec::new();
            for rule in all() {
                for at in 0..state.statements() {
                    let mut out = Vec::new();
                    rule.apply(&state, at, &mut out);
                    options.extend(out.into_iter().map(|a| (rule.name(), a)));
                }
            }
            if options.is_empty() {
                break;
            }
            let (rule, a) = options.swap_remove(rng.below(options.len()));
            *applied.entry(rule).or_default() += 1;
            let mut original = start.clone();
            original.name = "original".to_string();
            let mut derived = a.state.def.clone();
            derived.name = "derived".to_string();
            let program = Program {
                defs: vec![original, derived],
            };
            let context = || {
                format!(
                    "case {case}, step {step}, {rule}: {}\noriginal:\n{}\nderived:\n{}",
                    a.what,
                    ir::print_def(&program, &program.defs[0]),
                    ir::print_def(&program, &program.defs[1])
                )
            };
            if let Err(e) = ir::verify_program(&program) {
                panic!("{}\nthe derived def does not verify: {e:?}", context());
            }
            let report = verify(
                &program,
                "original",
                &program,
                "derived",
                &Options::default(),
            )
            .unwrap_or_else(|e| panic!("{}\nthe verifier failed: {e}", context()));
            assert!(
                report.equivalent(),
                "{}\n{}",
                context(),
                opt::verify::print_report(&report)
            );
            state = a.state;
        }
    }
    eprintln!("{walks} walks; applications per rule: {applied:?}");
    for (rule, n) in &applied {
        assert!(*n > 0, "no walk applied {rule}: {applied:?}");
    }
}
