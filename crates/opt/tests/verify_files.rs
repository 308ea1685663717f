//! The verifier's verdicts on the paper examples (`tests/files/verify/`),
//! checked against the reference interpreter: both defs of each pair run
//! in floating point on the same random inputs, and the elements where
//! their outputs differ must be exactly the union of the reported regions
//! (and none, for a pair reported equivalent). This is independent of the
//! file tests' blessed output, which only records what the CLI prints.

use std::collections::HashMap;
use std::path::Path;

use interp::{Arg, Mode, Tensor};
use ir::{Param, Program};
use opt::verify::{verify, Method, Options, Verdict};

/// `--def`, `--def-b` and `--size` from a file's `# test: verify` header.
fn header(text: &str) -> (String, String, HashMap<String, i64>) {
    let first = text.lines().next().unwrap_or("");
    let words: Vec<&str> = first
        .strip_prefix("# test: verify")
        .unwrap_or_else(|| panic!("not a verify test: {first}"))
        .split_whitespace()
        .collect();
    let (mut a, mut b, mut sizes) = (String::new(), String::new(), HashMap::new());
    for w in words.chunks(2) {
        match w {
            ["--def", x] => a = x.to_string(),
            ["--def-b", x] => b = x.to_string(),
            ["--size", kv] => {
                let (k, v) = kv.split_once('=').unwrap();
                sizes.insert(k.to_string(), v.parse().unwrap());
            }
            other => panic!("unexpected header words {other:?}"),
        }
    }
    (a, b, sizes)
}

/// The output elements (output position, index) where `a` and `b` differ
/// on any of three random draws.
fn differing(
    p: &Program,
    a: &str,
    b: &str,
    sizes: &HashMap<String, i64>,
) -> Vec<(usize, Vec<usize>)> {
    let (da, db) = (p.def(a).unwrap(), p.def(b).unwrap());
    let sa = interp::bind_sizes(da, &HashMap::new(), sizes).unwrap();
    let mut out = Vec::new();
    for seed in [1u64, 2, 3] {
        let (mut xa, mut xb) = (HashMap::new(), HashMap::new());
        for (k, (p, q)) in da.params.iter().zip(&db.params).enumerate() {
            let Param::Tensor(t) = p else {
                // Integer scalars are sizes, given in the header.
                let v = Arg::Scalar(ir::Value::Int(sizes[p.name()]));
                xa.insert(p.name().to_string(), v.clone());
                xb.insert(q.name().to_string(), v);
                continue;
            };
            let shape = interp::param_shape(da, t, &sa).unwrap();
            let dtype = da.tensor(t).unwrap().dtype;
            let x = if dtype.is_int() {
                // Valid indices for any table.
                let n: usize = shape.iter().product();
                Tensor::from_i64(
                    dtype,
                    &shape,
                    (0..n).map(|i| ((i as u64 + seed) % 2) as i64).collect(),
                )
            } else {
                Tensor::random(dtype, &shape, seed * 100 + k as u64)
            };
            xa.insert(t.clone(), Arg::Tensor(x.clone()));
            xb.insert(q.name().to_string(), Arg::Tensor(x));
        }
        let ra = interp::run(p, a, &xa, sizes, Mode::Real).unwrap();
        let rb = interp::run(p, b, &xb, &HashMap::new(), Mode::Real).unwrap();
        for (k, ((_, x), (_, y))) in ra.iter().zip(&rb).enumerate() {
            let (u, v) = (x.to_f64_vec(), y.to_f64_vec());
            let scale = u.iter().fold(1e-30f64, |m, a| m.max(a.abs()));
            for (flat, (p, q)) in u.iter().zip(&v).enumerate() {
                if (p - q).abs() > 1e-4 * scale {
                    let mut index = vec![0; x.shape().len()];
                    let mut rest = flat;
                    for d in (0..index.len()).rev() {
                        index[d] = rest % x.shape()[d];
                        rest /= x.shape()[d];
                    }
                    out.push((k, index));
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn reported_regions_are_exactly_where_the_interpreter_differs() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/files/verify");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "tc"))
        .collect();
    files.sort();
    let (mut equivalent, mut partial) = (0, 0);
    for f in &files {
        let text = std::fs::read_to_string(f).unwrap();
        let (a, b, sizes) = header(&text);
        let p = tc::check_source(&text)
            .unwrap_or_else(|d| panic!("{}", tc::render_diagnostics(&d, "file", &text)))
            .program;
        let options = Options {
            sizes: sizes.clone(),
            ..Options::default()
        };
        let report =
            verify(&p, &a, &p, &b, &options).unwrap_or_else(|e| panic!("{}: {e}", f.display()));
        let truth = differing(&p, &a, &b, &sizes);
        match &report.verdict {
            Verdict::Equivalent { .. } => {
                assert!(
                    truth.is_empty(),
                    "{}: reported equivalent, but the interpreter differs at {:?}",
                    f.display(),
                    &truth[..truth.len().min(5)]
                );
                equivalent += 1;
            }
            // The floating-point comparisons draw their own inputs, so only
            // their verdicts can be compared with these draws.
            Verdict::NotEquivalent { .. }
                if matches!(report.method, Method::Float { .. } | Method::Sampled { .. }) =>
            {
                assert!(
                    !truth.is_empty(),
                    "{}: reported not equivalent in floats, but the interpreter agrees",
                    f.display()
                );
                partial += 1;
            }
            Verdict::NotEquivalent { boxes } => {
                let covered: usize = boxes.iter().map(|r| r.len()).sum();
                for (k, index) in &truth {
                    assert!(
                        boxes.iter().any(|r| r.output == *k && r.contains(index)),
                        "{}: output {k} differs at {index:?}, outside every reported region {boxes:?}",
                        f.display()
                    );
                }
                // Merged regions do not overlap, so equal counts mean equal sets.
                assert_eq!(
                    covered,
                    truth.len(),
                    "{}: regions {boxes:?} cover {covered} elements, the interpreter differs at {}",
                    f.display(),
                    truth.len()
                );
                partial += 1;
            }
        }
    }
    assert!(
        equivalent >= 6 && partial >= 6,
        "{equivalent} equivalent and {partial} partial pairs"
    );
}
