//! The optimizer's disk cache: a second identical request is answered
//! from disk with the same program, a damaged entry or another request
//! is searched, and an entry's def is used only when it checks against
//! the program and has the original's signature (`rebuild`).

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use codegen::cache::KernelCache;
use codegen::compile::Compiler;
use engine::cost::store::Store;
use engine::cost::CostService;
use engine::optimize::{optimize_in, Optimized, Options};
use engine::optimize_cache::{rebuild, Cache};
use engine::Source;

/// A matrix chain whose last factor is narrow: at M = K = N = 32 and
/// P = 1 the estimate on [`TARGET`] prefers another form (as in
/// tests/files/optimize/matmul_chain.tc).
const CHAIN: &str = "def chain(float(M,K) A, float(K,N) B, float(N,P) C) -> (D) {\n  T = matmul(A, B)\n  D = matmul(T, C)\n}\n";

/// tests/files/optimize/machine.target: estimates on it do not depend on
/// the machine that runs the test.
const TARGET: &str = "name = generic\ncores = 2\nvector_bits = 256\nisa = avx2 fma\ncache = L1 size=32768 line=64 shared=1\ncache = L2 size=1048576 line=64 shared=1\npeak_mflops = 100000\nbandwidth_mbps = 10000\n";

/// An empty directory of its own for each test.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("engine-optimize-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// A cost service with its stores in `dir`, on [`TARGET`].
fn service(dir: &Path) -> CostService {
    let options = runtime::Options {
        passes: engine::compile::pipeline_passes("cpu").expect("the cpu pipeline"),
        target: kernel::Target::from_text(TARGET).expect("the target parses"),
        verify: kernel::Verify::AtEnd,
        library: true,
        kernel_options: kernel::Options::default(),
    };
    let kernels = KernelCache::open(
        dir.join("kernels"),
        Compiler::detect().expect("a C compiler"),
    )
    .expect("a kernel cache");
    let store = Store::open(dir.join("costs")).expect("a cost store");
    CostService::new(store, options, kernels)
}

fn sizes(m: i64) -> HashMap<String, i64> {
    [("M", m), ("K", 32), ("N", 32), ("P", 1)]
        .into_iter()
        .map(|(s, v)| (s.to_string(), v))
        .collect()
}

/// Searches by estimate alone: nothing is compiled or timed.
fn options() -> Options {
    let mut o = Options::default();
    o.search.measure = false;
    o
}

fn chain() -> Source {
    Source::tc("chain.tc".to_string(), CHAIN.to_string()).expect("the chain checks")
}

fn optimize(cache: &Cache, service: &CostService, source: &Source, m: i64) -> Optimized {
    optimize_in(
        cache,
        service,
        source,
        None,
        &sizes(m),
        &options(),
        &mut |_| {},
    )
    .expect("the search succeeds")
}

/// The entries in the cache directory `dir`.
fn entries(dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|f| f.extension().is_some_and(|e| e == "json"));
    files
}

#[test]
fn a_second_identical_request_is_answered_from_disk() {
    let dir = fresh_dir("hit");
    let cache = Cache::open(dir.join("optimize")).expect("a cache");
    let service = service(&dir);
    let source = chain();
    let first = optimize(&cache, &service, &source, 32);
    assert!(!first.cached);
    assert!(first.changed, "the search changes the chain at these sizes");
    assert!(!first.steps.is_empty());
    let second = optimize(&cache, &service, &source, 32);
    assert!(second.cached);
    assert_eq!(second.program, first.program);
    assert_eq!(second.def, first.def);
    assert_eq!(second.text, first.text);
    assert_eq!(second.steps, first.steps);
    assert_eq!(second.proof, first.proof);
    assert_eq!(
        (second.original_time, second.time),
        (first.original_time, first.time)
    );
    // A fresh cache on the same directory (another process) reads it too.
    let reopened = Cache::open(dir.join("optimize")).expect("a cache");
    assert!(optimize(&reopened, &service, &source, 32).cached);
    assert_eq!(entries(&dir.join("optimize")).len(), 1);
}

#[test]
fn other_requests_and_damaged_entries_are_searched() {
    let dir = fresh_dir("miss");
    let cache = Cache::open(dir.join("optimize")).expect("a cache");
    let service = service(&dir);
    let source = chain();
    let first = optimize(&cache, &service, &source, 32);
    assert!(!first.cached);
    // Other sizes, another entry.
    assert!(!optimize(&cache, &service, &source, 64).cached);
    assert_eq!(entries(&dir.join("optimize")).len(), 2);
    // Other search options, another entry.
    let mut fewer = options();
    fewer.search.top_k = 2;
    let other = optimize_in(
        &cache,
        &service,
        &source,
        None,
        &sizes(32),
        &fewer,
        &mut |_| {},
    )
    .expect("the search succeeds");
    assert!(!other.cached);
    // Every entry damaged: each request is searched again, then cached.
    for entry in entries(&dir.join("optimize")) {
        std::fs::write(&entry, "{\"key\": \"").expect("the entry can be written");
    }
    let again = optimize(&cache, &service, &source, 32);
    assert!(!again.cached);
    assert_eq!(again.program, first.program);
    assert!(optimize(&cache, &service, &source, 32).cached);
}

#[test]
fn an_unchanged_def_is_cached_as_the_original() {
    let dir = fresh_dir("unchanged");
    let cache = Cache::open(dir.join("optimize")).expect("a cache");
    let service = service(&dir);
    // One statement, which no rule rewrites; the file calls no operator,
    // so it is searched after the prelude.
    let source = Source::tc(
        "one.tc".to_string(),
        "def one(float(M,K) A, float(K,N) B, float(N,P) C) -> (D) {\n  D(m, p) +=! A(m, k) * C(k, p)\n}\n"
            .to_string(),
    )
    .expect("the def checks");
    let first = optimize(&cache, &service, &source, 32);
    assert!(!first.changed && first.steps.is_empty());
    let second = optimize(&cache, &service, &source, 32);
    assert!(second.cached && !second.changed);
    assert_eq!(second.program, first.program);
    assert_eq!(&second.def, source.pick_def(None).expect("one def"));
}

/// The chain's program and def, at M = 32.
fn rebuild_chain(text: &str) -> Result<ir::Program, String> {
    let source = chain();
    let def = source.pick_def(None).expect("one def");
    rebuild(source.program(), def, text, &sizes(32))
}

#[test]
fn a_def_of_the_same_signature_is_rebuilt_into_the_program() {
    let text = "def helper(float32(32, 32) x, float32(32, 1) y) -> (z) {\n  z = matmul(x, y)\n}\n\ndef chain(float32(32, 32) A, float32(32, 32) B, float32(32, 1) C) -> (D) {\n  E = helper(B, C)\n  D = helper(A, E)\n}\n";
    let source = chain();
    let program = rebuild_chain(text).expect("the def is rebuilt");
    let names: Vec<&str> = program.defs.iter().map(|d| d.name.as_str()).collect();
    let at = names.iter().position(|n| *n == "chain").expect("the chain");
    assert_eq!(names[at - 1], "helper", "the added def comes before it");
    assert_eq!(program.defs.len(), source.program().defs.len() + 1);
    let new = program.def("chain").expect("the chain");
    let old = source.pick_def(None).expect("one def");
    assert_eq!(new.stmts.len(), 2);
    // The parameters keep their symbolic declarations, as callers bind
    // them.
    for p in ["A", "B", "C"] {
        assert_eq!(new.tensor(p), old.tensor(p), "parameter `{p}`");
    }
    ir::verify_program(&program).expect("the program verifies");
}

#[test]
fn a_def_that_does_not_fit_is_refused() {
    let cases = [
        // A parameter of another shape (and so an output of another).
        "def chain(float32(32, 32) A, float32(32, 32) B, float32(32, 2) C) -> (D) {\n  E = matmul(B, C)\n  D = matmul(A, E)\n}\n",
        // An output of another element type.
        "def chain(float32(32, 32) A, float32(32, 32) B, float32(32, 1) C) -> (D) {\n  D(i, j) = int32(C(i, j)) where i in 0:32, j in 0:1\n}\n",
        // Parameters in another order.
        "def chain(float32(32, 32) B, float32(32, 32) A, float32(32, 1) C) -> (D) {\n  E = matmul(B, C)\n  D = matmul(A, E)\n}\n",
        // Not TC.
        "def chain(",
        // Another def of the program defined again.
        "def matmul(float32(2, 2) A) -> (B) {\n  B(i, j) = A(i, j)\n}\n\ndef chain(float32(32, 32) A, float32(32, 32) B, float32(32, 1) C) -> (D) {\n  E = matmul(B, C)\n  D = matmul(A, E)\n}\n",
        // No def of the name.
        "def other(float32(2) A) -> (B) {\n  B(i) = A(i)\n}\n",
    ];
    for text in cases {
        assert!(rebuild_chain(text).is_err(), "accepted:\n{text}");
    }
}
