//! The cost service: measured times come from the disk cache on a second
//! identical request (a fresh service measures nothing), a different
//! request is measured, a damaged entry is measured again, and the
//! analytic estimate counts a matmul's operations and at least its
//! tensors' bytes, and takes the library's timed call for a matmul step
//! when asked.

use std::collections::HashMap;
use std::path::PathBuf;

use codegen::cache::KernelCache;
use codegen::compile::Compiler;
use engine::cost::store::Store;
use engine::cost::CostService;
use opt::cost::CostModel;

const MATMUL: &str = "def mm(float(M,K) A, float(K,N) B) -> (C) {\n  C(m,n) +=! A(m,k) * B(k,n)\n}\n\ndef twice(float(M,K) A, float(K,N) B) -> (D) {\n  C = mm(A, B)\n  D(m,n) = C(m,n) + C(m,n)\n}\n";

/// An empty directory of its own for each test, under cargo's temporary
/// directory for integration tests.
fn fresh_dir(name: &str) -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("engine-cost-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).expect("a temporary directory");
    dir
}

/// A service on `dir`'s stores, with the generic target at a stated peak
/// of 10 GFLOP/s and bandwidth of 5 GB/s.
fn service(dir: &std::path::Path) -> CostService {
    let mut target = kernel::Target::generic();
    target.peak_mflops = Some(10_000);
    target.bandwidth_mbps = Some(5_000);
    service_on(dir, target)
}

/// A service on `dir`'s stores for `target`.
fn service_on(dir: &std::path::Path, target: kernel::Target) -> CostService {
    let options = runtime::Options {
        passes: engine::compile::pipeline_passes("cpu").expect("the cpu pipeline"),
        target,
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

fn sizes(m: i64, k: i64, n: i64) -> HashMap<String, i64> {
    [("M", m), ("K", k), ("N", n)]
        .into_iter()
        .map(|(s, v)| (s.to_string(), v))
        .collect()
}

fn program() -> ir::Program {
    tc::check_source(MATMUL).expect("the matmul checks").program
}

#[test]
fn a_second_identical_request_is_answered_from_disk() {
    let dir = fresh_dir("repeat");
    let p = program();
    let first = service(&dir);
    let t = first.measure(&p, "mm", &sizes(32, 16, 24)).unwrap();
    assert_eq!(first.measurements(), 1);
    assert!(t.as_nanos() > 0);
    let key = first.key(&p, "mm", &sizes(32, 16, 24)).unwrap();
    assert!(dir.join("costs").join(format!("{key}.time")).is_file());
    // The same request again, from this service and from a new one (as a
    // new process would make it): no measurement, the stored time.
    assert_eq!(first.measure(&p, "mm", &sizes(32, 16, 24)).unwrap(), t);
    assert_eq!(first.measurements(), 1);
    let second = service(&dir);
    assert_eq!(second.measure(&p, "mm", &sizes(32, 16, 24)).unwrap(), t);
    assert_eq!(second.measurements(), 0);
    // The same request through the trait `opt` uses.
    let best = opt::cost::fastest(&second, &p, &["mm"], &sizes(32, 16, 24)).unwrap();
    assert_eq!(best, Some(("mm", t)));
    assert_eq!(second.measurements(), 0);
}

#[test]
fn different_sizes_defs_and_damaged_entries_are_measured() {
    let dir = fresh_dir("distinct");
    let p = program();
    let s = service(&dir);
    s.measure(&p, "mm", &sizes(8, 8, 8)).unwrap();
    s.measure(&p, "mm", &sizes(8, 8, 9)).unwrap();
    s.measure(&p, "twice", &sizes(8, 8, 8)).unwrap();
    assert_eq!(s.measurements(), 3);
    let keys = [
        s.key(&p, "mm", &sizes(8, 8, 8)).unwrap(),
        s.key(&p, "mm", &sizes(8, 8, 9)).unwrap(),
        s.key(&p, "twice", &sizes(8, 8, 8)).unwrap(),
    ];
    assert!(keys[0] != keys[1] && keys[0] != keys[2] && keys[1] != keys[2]);
    // A truncated entry reads as none: measured again, and rewritten whole.
    let entry = dir.join("costs").join(format!("{}.time", keys[0]));
    std::fs::write(&entry, "12").unwrap();
    let t = s.measure(&p, "mm", &sizes(8, 8, 8)).unwrap();
    assert_eq!(s.measurements(), 4);
    assert_eq!(
        std::fs::read_to_string(&entry).unwrap(),
        format!("{}\n", t.as_nanos())
    );
}

#[test]
fn the_key_follows_the_canonical_text_not_its_spacing() {
    let dir = fresh_dir("key");
    let s = service(&dir);
    let p = program();
    let spaced = tc::check_source(&MATMUL.replace("+=! A(m,k) * B(k,n)", "+=!   A(m, k)*B(k, n)"))
        .unwrap()
        .program;
    let key = |p: &ir::Program, def: &str| s.key(p, def, &sizes(4, 4, 4)).unwrap();
    assert_eq!(key(&p, "mm"), key(&spaced, "mm"));
    // `twice` calls `mm`: changing the callee changes the caller's key.
    let changed = tc::check_source(&MATMUL.replace("+=! A(m,k) * B(k,n)", "+=! A(m,k) + B(k,n)"))
        .unwrap()
        .program;
    assert_ne!(key(&p, "twice"), key(&changed, "twice"));
}

#[test]
fn the_estimate_counts_a_matmuls_operations_and_bytes() {
    let dir = fresh_dir("estimate");
    let s = service(&dir);
    let p = program();
    let (m, k, n) = (64u64, 32u64, 48u64);
    let e = s
        .estimate(&p, "mm", &sizes(m as i64, k as i64, n as i64))
        .unwrap();
    // Two operations per multiply-accumulate.
    assert_eq!(e.flops, 2 * m * k * n);
    // At least every element of A, B and C once (float32).
    assert!(e.bytes >= 4 * (m * k + k * n + m * n), "{e:?}");
    // The roofline: no faster than the peak, nor than the bandwidth.
    let at_peak = e.flops as f64 / 10e9;
    let at_bandwidth = e.bytes as f64 / 5e9;
    assert!(e.seconds >= at_peak.max(at_bandwidth) * 0.999, "{e:?}");
    // The kernel's estimate is the def's, lowered.
    let sizes = sizes(m as i64, k as i64, n as i64);
    let root = kernel::lower_def(&p, "mm", &sizes).unwrap();
    let mut target = kernel::Target::generic();
    target.peak_mflops = Some(10_000);
    target.bandwidth_mbps = Some(5_000);
    let of_kernel = engine::cost::estimate::estimate_kernel(&root, &target).unwrap();
    assert_eq!(of_kernel, e);
    // A target without a measured bandwidth has no estimate.
    target.bandwidth_mbps = None;
    let e = engine::cost::estimate::estimate_kernel(&root, &target).unwrap_err();
    assert!(e.to_string().contains("no measured bandwidth"), "{e}");
    // Nothing was compiled or run for it.
    assert_eq!(s.measurements(), 0);
}

#[test]
fn two_services_asking_at_once_measure_once() {
    let dir = fresh_dir("concurrent");
    let p = program();
    let (a, b) = (service(&dir), service(&dir));
    let (ta, tb) = std::thread::scope(|scope| {
        let ha = scope.spawn(|| a.measure(&p, "twice", &sizes(16, 8, 12)).unwrap());
        let hb = scope.spawn(|| b.measure(&p, "twice", &sizes(16, 8, 12)).unwrap());
        (ha.join().unwrap(), hb.join().unwrap())
    });
    // The key's lock makes the second wait for the first's entry.
    assert_eq!(ta, tb);
    assert_eq!(a.measurements() + b.measurements(), 1);
}

/// The bandwidth measurement reads the whole buffer: at least 100 MB/s on
/// any machine that runs the tests, and no more than 10 TB/s, which no
/// memory system reaches (a figure above it would mean the reads were
/// skipped).
#[test]
fn the_measured_bandwidth_is_a_plausible_figure() {
    let b = engine::target::measure_bandwidth();
    assert!((1e8..1e13).contains(&b), "{b} bytes/s");
}

#[test]
fn library_matmuls_are_timed_in_estimates_when_asked() {
    let dir = fresh_dir("library");
    let p = program();
    let sizes = sizes(128, 256, 64);
    // A target of a petaflop and a petabyte per second: its roofline is
    // far below anything the library can do, so a timed step shows.
    let mut target = kernel::Target::generic();
    target.peak_mflops = Some(1_000_000_000);
    target.bandwidth_mbps = Some(1_000_000_000);
    let service = |library: bool| service_on(&dir, target.clone()).timing_library(library);
    for def in ["mm", "twice"] {
        let root = kernel::lower_def(&p, def, &sizes).unwrap();
        let roofline = engine::cost::estimate::estimate_kernel(&root, &target).unwrap();
        let plain = service(false).estimate(&p, def, &sizes).unwrap();
        assert_eq!(plain, roofline, "{def}");
        let timing = service(true);
        let timed = timing.estimate(&p, def, &sizes).unwrap();
        // 4.2 MFLOP at a petaflop is 4 ns; the library takes microseconds
        // (`twice` too: its matmul is inside a call).
        assert!(timed.seconds > 100.0 * roofline.seconds, "{def}: {timed:?}");
        assert_eq!(timed.flops, roofline.flops, "{def}");
        // Timed once per process: asking again gives the same estimate.
        assert_eq!(timing.estimate(&p, def, &sizes).unwrap(), timed, "{def}");
        // Timing a library call is not a measurement of the def.
        assert_eq!(timing.measurements(), 0);
    }
}

#[test]
fn what_reads_only_constants_is_neither_estimated_nor_timed() {
    // `squared` squares B, then multiplies: with B a constant, the square
    // runs at load, and what is left to estimate is `mm`'s product.
    let text = format!(
        "{MATMUL}\ndef squared(float(M,K) A, float(K,N) B) -> (C) {{\n  S(k,n) = B(k,n) * B(k,n)\n  C(m,n) +=! A(m,k) * S(k,n)\n}}\n"
    );
    let p = tc::check_source(&text).expect("the program checks").program;
    let dir = fresh_dir("constants");
    let at = sizes(16, 64, 48);
    let plain = service(&dir);
    let mm = plain.estimate(&p, "mm", &at).unwrap();
    let whole = plain.estimate(&p, "squared", &at).unwrap();
    assert!(whole.flops > mm.flops && whole.bytes > mm.bytes);
    let loaded = service(&dir).with_constants(["B".to_string()]);
    let per_run = loaded.estimate(&p, "squared", &at).unwrap();
    assert_eq!((per_run.flops, per_run.bytes), (mm.flops, mm.bytes));
    // A time measured with B loaded is another request than without: a
    // new service with B loaded answers from disk, one without measures.
    assert_ne!(
        plain.key(&p, "squared", &at).unwrap(),
        loaded.key(&p, "squared", &at).unwrap()
    );
    let t = loaded.measure(&p, "squared", &at).unwrap();
    assert_eq!(loaded.measurements(), 1);
    let again = service(&dir).with_constants(["B".to_string()]);
    assert_eq!(again.measure(&p, "squared", &at).unwrap(), t);
    assert_eq!(again.measurements(), 0);
    let unloaded = service(&dir);
    unloaded.measure(&p, "squared", &at).unwrap();
    assert_eq!(unloaded.measurements(), 1);
}

#[test]
fn a_blocked_convolution_packs_its_constant_weights_at_load() {
    // With layouts, the convolution runs channel-blocked, and packing its
    // weights into the blocked layout is a step of its own: with W known
    // at load, that step runs once and is not part of a run's estimate.
    // Without layouts nothing packs W, so declaring it constant changes
    // nothing.
    let text = "def conv(float(N,C,H,W) I, float(F,C,3,3) K) -> (O) {\n  O(n,f,h,w) +=! I(n,c,h + kh - 1,w + kw - 1) * K(f,c,kh,kw) where h in 0:H, w in 0:W\n}\n";
    let p = tc::check_source(text).expect("the program checks").program;
    let dir = fresh_dir("layout");
    let at: HashMap<String, i64> = [("N", 1), ("C", 32), ("H", 8), ("W", 8), ("F", 32)]
        .into_iter()
        .map(|(s, v)| (s.to_string(), v))
        .collect();
    let k = ["K".to_string()];
    let weight_bytes = 32 * 32 * 9 * 4;
    let blocked = service(&dir)
        .with_layout(true)
        .estimate(&p, "conv", &at)
        .unwrap();
    let loaded = service(&dir)
        .with_layout(true)
        .with_constants(k.clone())
        .estimate(&p, "conv", &at)
        .unwrap();
    assert!(
        blocked.bytes >= loaded.bytes + 2 * weight_bytes,
        "the packing of K (read and written, {weight_bytes} bytes each way) is left out: {} against {}",
        blocked.bytes,
        loaded.bytes
    );
    let plain = service(&dir).estimate(&p, "conv", &at).unwrap();
    let plain_loaded = service(&dir)
        .with_constants(k)
        .estimate(&p, "conv", &at)
        .unwrap();
    assert_eq!(
        (plain.flops, plain.bytes),
        (plain_loaded.flops, plain_loaded.bytes)
    );
    assert_ne!(
        service(&dir).key(&p, "conv", &at).unwrap(),
        service(&dir)
            .with_layout(true)
            .key(&p, "conv", &at)
            .unwrap()
    );
}
