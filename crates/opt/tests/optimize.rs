//! The program optimizer with a cost model the test controls: it keeps a
//! candidate only when the model measures it faster than the original
//! side by side (a lucky separate measurement of the original does not
//! hide it), returns the original otherwise, and the program it returns
//! computes what the original did; a product of constants alone (the
//! weights) is free, as it runs once at load.

use std::collections::HashMap;
use std::time::Duration;

use ir::{CallArg, Program, Stmt};
use opt::cost::{CostModel, Estimate};
use opt::optimize::{optimize, shipped_rules, Options};

/// Costs a def by the multiply-adds of its matrix products (M K N each,
/// from the declared shapes of their operands; a product of two of the
/// `constants` is free, as the engine hoists it to load), but for what
/// `timing` says.
struct Products {
    timing: Timing,
    constants: &'static [&'static str],
}

#[derive(Clone, Copy, PartialEq)]
enum Timing {
    /// As the products say.
    Faithful,
    /// Every def but the original `chain` measures a second.
    SlowCandidates,
    /// The original, measured alone, met a quiet spell and measures a
    /// nanosecond; side by side, every def measures as the products say.
    LuckyOriginal,
}

impl Products {
    fn products(&self, program: &Program, def: &str, sizes: &HashMap<String, i64>) -> f64 {
        let d = program.def(def).unwrap();
        let dims = |t: &str| -> Vec<i64> {
            d.tensor(t)
                .unwrap()
                .shape
                .iter()
                .map(|e| e.eval_map(sizes).unwrap())
                .collect()
        };
        let mut total = 0.0;
        for s in &d.stmts {
            if let Stmt::Call(c) = s {
                if c.callee == "matmul" {
                    let [CallArg::Tensor(a), CallArg::Tensor(b)] = &c.args[..] else {
                        panic!("a matmul of two tensors")
                    };
                    if self.constants.contains(&a.as_str()) && self.constants.contains(&b.as_str())
                    {
                        continue;
                    }
                    let (a, b) = (dims(a), dims(b));
                    total += (a[0] * a[1] * b[1]) as f64;
                }
            }
        }
        total
    }
}

impl CostModel for Products {
    type Error = String;

    fn estimate(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Estimate, String> {
        // An operator alone (the extraction's per-node costs): a product
        // its M K N, anything else one operation; a whole def: its
        // products.
        let flops = if def == "matmul" {
            (sizes["M"] * sizes["K"] * sizes["N"]) as f64
        } else {
            self.products(program, def, sizes).max(1.0)
        };
        Ok(Estimate {
            flops: flops as u64,
            bytes: 0,
            seconds: flops * 1e-9,
        })
    }

    fn measure(
        &self,
        program: &Program,
        def: &str,
        sizes: &HashMap<String, i64>,
    ) -> Result<Duration, String> {
        let p = self.products(program, def, sizes);
        let seconds = match self.timing {
            Timing::SlowCandidates if def != "chain" => 1.0,
            Timing::LuckyOriginal if def == "chain" => 1e-9,
            _ => p * 1e-9,
        };
        Ok(Duration::from_secs_f64(seconds))
    }

    fn compare(
        &self,
        program: &Program,
        defs: &[&str],
        sizes: &HashMap<String, i64>,
        _within: Duration,
    ) -> Result<Vec<Duration>, String> {
        let seconds = |def: &str| match self.timing {
            Timing::SlowCandidates if def != "chain" => 1.0,
            _ => self.products(program, def, sizes) * 1e-9,
        };
        Ok(defs
            .iter()
            .map(|d| Duration::from_secs_f64(seconds(d)))
            .collect())
    }
}

const CHAIN: &str = "def chain(float(M,K) A, float(K,N) B, float(N,P) C) -> (D) {\n  T = matmul(A, B)\n  D = matmul(T, C)\n}\n";

fn run(timing: Timing) -> opt::optimize::Outcome {
    run_at(timing, [32, 32, 32, 2], &[], Options::default().top_k)
}

/// The optimizer on `chain` at sizes M, K, N, P, with `constants` known
/// at load, measuring the `top_k` cheapest candidates by estimate.
fn run_at(
    timing: Timing,
    [m, k, n, p]: [i64; 4],
    constants: &'static [&'static str],
    top_k: usize,
) -> opt::optimize::Outcome {
    let program = testkit::with_prelude(CHAIN);
    let rules = shipped_rules(&program).unwrap();
    let sizes: HashMap<String, i64> = [("M", m), ("K", k), ("N", n), ("P", p)]
        .iter()
        .map(|(k, v)| (k.to_string(), *v))
        .collect();
    // Mutants off: the model prices `matmul` calls only, so a mutant's
    // `matmul_tb` would look free; this test is about the rules.
    let options = Options {
        budget: Duration::from_secs(30),
        depth: 0,
        top_k,
        constants: constants.iter().map(|c| c.to_string()).collect(),
        ..Default::default()
    };
    optimize(
        &program,
        "chain",
        &sizes,
        &rules,
        &Products { timing, constants },
        &options,
        &mut |_| {},
    )
    .unwrap_or_else(|e| panic!("{e:?}"))
}

#[test]
fn a_candidate_measured_faster_replaces_the_original_and_is_proved() {
    let out = run(Timing::Faithful);
    assert!(out.changed, "{}", opt::optimize::print_explanation(&out));
    assert!(out.time < out.original_time);
    assert!(out.proof.is_some());
    // The reassociated chain: B C first (32*32*2), then A times it.
    let def = out.program.def("chain").unwrap();
    let text = ir::print_def(&out.program, def);
    assert!(text.contains("matmul(B, C)"), "{text}");
    assert!(out.steps.iter().any(|s| s.rule == "matmul_associates"));
    // The returned program equals the original by the verifier too.
    let mut both = out.program.clone();
    let mut original = testkit::with_prelude(CHAIN).def("chain").unwrap().clone();
    original.name = "original".to_string();
    both.defs.push(original);
    let options = opt::verify::Options {
        sizes: [("M", 32), ("K", 32), ("N", 32), ("P", 2)]
            .iter()
            .map(|(k, v)| (k.to_string(), *v))
            .collect(),
        ..Default::default()
    };
    let report = opt::verify::verify(&both, "original", &both, "chain", &options).unwrap();
    assert!(report.equivalent());
}

#[test]
fn the_original_stays_when_every_candidate_measures_slower() {
    let out = run(Timing::SlowCandidates);
    assert!(!out.changed, "{}", opt::optimize::print_explanation(&out));
    assert_eq!(out.time, out.original_time);
    assert!(out.steps.is_empty());
    assert!(out.candidates.len() > 1, "candidates were measured");
    let def = out.program.def("chain").unwrap();
    assert_eq!(def, testkit::with_prelude(CHAIN).def("chain").unwrap());
}

#[test]
fn a_lucky_measurement_of_the_original_does_not_hide_a_faster_candidate() {
    // Measured alone, the original looks fastest of all; side by side,
    // the reassociated chain is faster, and it is what the search keeps.
    let out = run(Timing::LuckyOriginal);
    assert!(out.changed, "{}", opt::optimize::print_explanation(&out));
    let text = ir::print_def(&out.program, out.program.def("chain").unwrap());
    assert!(text.contains("matmul(B, C)"), "{text}");
    assert_eq!(out.side_by_side[0].0, "chain");
    assert!(out.time < out.side_by_side[0].1);
}

#[test]
fn a_product_of_weights_alone_is_free() {
    // With 2 rows of A, (A B) C takes 4096 multiply-adds and A (B C)
    // 34816, 32768 of them in B C: the search keeps the chain as it is,
    // unless B and C are weights, when B C runs once, at load. The one
    // candidate measured is the extraction's cheapest, so the extraction's
    // costs must know it, not only the measurement.
    let sizes = [2, 32, 32, 32];
    let plain = run_at(Timing::Faithful, sizes, &[], 1);
    assert!(
        !plain.changed,
        "{}",
        opt::optimize::print_explanation(&plain)
    );
    let weights = run_at(Timing::Faithful, sizes, &["B", "C"], 1);
    assert!(
        weights.changed,
        "{}",
        opt::optimize::print_explanation(&weights)
    );
    let text = ir::print_def(&weights.program, weights.program.def("chain").unwrap());
    assert!(text.contains("matmul(B, C)"), "{text}");
}
