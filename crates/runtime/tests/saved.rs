//! The compiled-program cache (`runtime::saved`): what `build` saves is the
//! kernel the pipeline made, a warm build reads it instead of lowering
//! again, and a damaged entry is a miss that the next build replaces.

mod common;

use std::collections::HashMap;

use common::{cache, close, options};
use interp::{Arg, Mode, Tensor};
use ir::{DType, Program};
use runtime::saved;

fn tmm() -> Program {
    testkit::load("examples/paper/tmm.tc")
}

fn sizes(m: i64) -> HashMap<String, i64> {
    [("M", m), ("K", 29), ("N", 41)]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect()
}

/// Runs `exe` (tmm at `sizes`) on seeded inputs and compares its output
/// with the interpreter's.
fn matches_interpreter(exe: &runtime::Executable, p: &Program, sizes: &HashMap<String, i64>) {
    let shape = |a: &str, b: &str| vec![sizes[a] as usize, sizes[b] as usize];
    let args: HashMap<String, Arg> = [("A", shape("M", "K"), 1), ("B", shape("N", "K"), 2)]
        .into_iter()
        .map(|(n, s, seed)| {
            (
                n.to_string(),
                Arg::Tensor(Tensor::random(DType::F32, &s, seed)),
            )
        })
        .collect();
    let want = interp::run(p, "tmm", &args, sizes, Mode::Real).unwrap();
    let mut state = exe.state();
    for (name, a) in &args {
        if let Arg::Tensor(t) = a {
            exe.set_values(&mut state, name, &t.values()).unwrap();
        }
    }
    exe.run(&mut state, None).unwrap();
    let got = exe.values(&state, "C").unwrap();
    let w = want.iter().find(|(n, _)| n == "C").unwrap().1.values();
    assert_eq!(got.len(), w.len());
    assert!(got.iter().zip(&w).all(|(g, x)| close(g, x)));
}

fn entry(cache: &codegen::cache::KernelCache, key: &str) -> std::path::PathBuf {
    cache.dir().join(format!("{key}.program"))
}

#[test]
fn a_build_saves_the_kernel_the_pipeline_made() {
    let cache = cache("saved-round-trip");
    let p = tmm();
    let exe = runtime::build(&p, "tmm", &sizes(37), &options(true), &cache).unwrap();
    let key = saved::key(&p, "tmm", &sizes(37), &options(true));
    assert_eq!(saved::load(&cache, &key), Some(exe.block));
}

#[test]
fn a_warm_build_runs_the_saved_kernel() {
    let cache = cache("saved-warm");
    let p = tmm();
    // Plant, under the key of the library build, the kernel of the build
    // that generates its matmul: a build that reads the entry returns it,
    // one that lowers again would not.
    let generated = runtime::build(&p, "tmm", &sizes(37), &options(false), &cache).unwrap();
    let key = saved::key(&p, "tmm", &sizes(37), &options(true));
    saved::save(&cache, &key, &generated.block);
    let warm = runtime::build(&p, "tmm", &sizes(37), &options(true), &cache).unwrap();
    assert_eq!(warm.block, generated.block);
}

#[test]
fn a_damaged_entry_is_a_miss_and_the_next_build_replaces_it() {
    let cache = cache("saved-damaged");
    let p = tmm();
    let exe = runtime::build(&p, "tmm", &sizes(37), &options(true), &cache).unwrap();
    let key = saved::key(&p, "tmm", &sizes(37), &options(true));
    let path = entry(&cache, &key);
    let text = std::fs::read_to_string(&path).unwrap();
    // Change one range of the kernel but not the hash line.
    let damaged = text.replacen("m:37", "m:38", 1);
    assert_ne!(damaged, text, "the entry has no range m:37");
    std::fs::write(&path, &damaged).unwrap();
    assert_eq!(saved::load(&cache, &key), None);
    std::fs::write(&path, &text[..text.len() / 2]).unwrap();
    assert_eq!(saved::load(&cache, &key), None);
    let again = runtime::build(&p, "tmm", &sizes(37), &options(true), &cache).unwrap();
    assert_eq!(again.block, exe.block);
    matches_interpreter(&again, &p, &sizes(37));
    assert_eq!(saved::load(&cache, &key), Some(exe.block));
}

#[test]
fn the_key_covers_sizes_and_options() {
    let p = tmm();
    let base = saved::key(&p, "tmm", &sizes(37), &options(true));
    assert_eq!(base, saved::key(&p, "tmm", &sizes(37), &options(true)));
    assert_ne!(base, saved::key(&p, "tmm", &sizes(38), &options(true)));
    assert_ne!(base, saved::key(&p, "tmm", &sizes(37), &options(false)));
    let mut serial = options(true);
    serial.passes.retain(|p| p != "parallelize");
    assert_ne!(base, saved::key(&p, "tmm", &sizes(37), &serial));
    let mut wide = options(true);
    wide.target.vector_bits = 256;
    assert_ne!(base, saved::key(&p, "tmm", &sizes(37), &wide));
}
