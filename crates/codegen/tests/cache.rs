//! Tests of the compiled-kernel cache (`codegen::cache`): hits and misses,
//! keys, damaged entries (truncated, corrupted, without sidecar), compiler
//! errors, parallel builds, stats and clear, and two processes building the
//! same kernel at once. Each test works in its own fresh directory and
//! calls the compiled kernels to prove they load and run.

// The tests call into the kernels they compiled, which needs `unsafe`.
#![allow(unsafe_code)]

use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use codegen::cache::{self, CacheCounters, CacheError, KernelCache};
use codegen::compile::Compiler;
use libloading::Library;

const TARGET: &str = "test-target";

/// An empty directory under the system's temporary directory, removed with
/// everything in it when dropped.
struct TempDir(PathBuf);

impl TempDir {
    fn new(name: &str) -> TempDir {
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("the clock is after 1970")
            .as_nanos();
        let dir = std::env::temp_dir().join(format!(
            "tessera-cache-test-{name}-{}-{nanos}",
            std::process::id()
        ));
        std::fs::create_dir_all(&dir).expect("create the test directory");
        TempDir(dir)
    }
}

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn compiler() -> Compiler {
    Compiler::detect().expect("a C compiler (set CC or install gcc)")
}

fn open(dir: &Path) -> KernelCache {
    KernelCache::open(dir.to_path_buf(), compiler()).expect("open the cache")
}

/// `int NAME(int x) { return x + ADD; }`.
fn adder(name: &str, add: i32) -> String {
    format!("int {name}(int x) {{ return x + {add}; }}\n")
}

/// Calls `int name(int)` in `lib`.
fn call(lib: &Library, name: &str, x: i32) -> i32 {
    // SAFETY: every kernel these tests compile defines `name` as a C
    // function `int name(int)`, which matches this signature, and `lib`
    // stays loaded for the duration of the call.
    unsafe {
        let f = lib
            .get::<unsafe extern "C" fn(i32) -> i32>(name.as_bytes())
            .expect("the kernel defines its function");
        f(x)
    }
}

fn counters(compiles: u64, disk_hits: u64, memory_hits: u64) -> CacheCounters {
    CacheCounters {
        compiles,
        disk_hits,
        memory_hits,
    }
}

/// The names of the files in `dir`, sorted.
fn names(dir: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(dir)
        .expect("read the cache directory")
        .map(|e| {
            e.expect("a directory entry")
                .file_name()
                .into_string()
                .expect("a UTF-8 name")
        })
        .collect();
    names.sort();
    names
}

#[test]
fn a_hit_after_a_miss_does_not_recompile() {
    let dir = TempDir::new("hit");
    let source = adder("f", 1);
    let cache = open(&dir.0);
    let first = cache.get(&source, TARGET).expect("compile");
    assert_eq!(cache.counters(), counters(1, 0, 0));
    assert_eq!(call(&first, "f", 41), 42);

    let again = cache.get(&source, TARGET).expect("memory hit");
    assert_eq!(cache.counters(), counters(1, 0, 1));
    assert!(Arc::ptr_eq(&first, &again), "the same library is shared");

    let key = cache.key(&source, TARGET);
    let entry: Vec<String> = ["c", "lock", "ok", "so"]
        .iter()
        .map(|e| format!("{key}.{e}"))
        .collect();
    assert_eq!(names(&dir.0), entry);
    assert_eq!(
        std::fs::read_to_string(dir.0.join(format!("{key}.c"))).unwrap(),
        source
    );

    let other = open(&dir.0);
    let from_disk = other.get(&source, TARGET).expect("disk hit");
    assert_eq!(other.counters(), counters(0, 1, 0));
    assert_eq!(call(&from_disk, "f", 1), 2);
}

#[test]
fn keys_depend_on_source_target_and_compiler() {
    let dir = TempDir::new("keys");
    let cache = open(&dir.0);
    let key = cache.key(&adder("f", 1), TARGET);
    assert_eq!(key.len(), 64);
    assert!(key
        .bytes()
        .all(|b| b.is_ascii_hexdigit() && !b.is_ascii_uppercase()));
    assert_eq!(key, cache.key(&adder("f", 1), TARGET), "keys are stable");
    assert_ne!(key, cache.key(&adder("f", 2), TARGET));
    assert_ne!(key, cache.key(&adder("f", 1), "another-target"));
    // The parts are framed, so moving text from one to the other changes
    // the key.
    assert_ne!(cache.key("ab", "c"), cache.key("a", "bc"));

    let mut flags = compiler();
    flags.flags.push("-DTESSERA_TEST".to_string());
    let other = KernelCache::open(dir.0.clone(), flags).expect("open the cache");
    assert_ne!(key, other.key(&adder("f", 1), TARGET));
}

#[test]
fn a_truncated_object_is_rebuilt() {
    let dir = TempDir::new("truncated");
    let source = adder("f", 1);
    let object = {
        let cache = open(&dir.0);
        assert_eq!(
            call(&cache.get(&source, TARGET).expect("compile"), "f", 1),
            2
        );
        dir.0.join(format!("{}.so", cache.key(&source, TARGET)))
    };
    // The first page keeps the headers and symbols; the code is cut off.
    std::fs::OpenOptions::new()
        .write(true)
        .open(&object)
        .and_then(|f| f.set_len(4096))
        .expect("truncate the object");

    let cache = open(&dir.0);
    let lib = cache.get(&source, TARGET).expect("rebuild");
    assert_eq!(cache.counters(), counters(1, 0, 0));
    assert_eq!(call(&lib, "f", 9), 10);
    assert!(std::fs::metadata(&object).unwrap().len() > 4096);

    let third = open(&dir.0);
    assert_eq!(
        call(&third.get(&source, TARGET).expect("disk hit"), "f", 0),
        1
    );
    assert_eq!(third.counters(), counters(0, 1, 0));
}

/// A truncated object whose sidecar was rewritten to match it (as whoever
/// can write the cache folder can do) is not loaded — the missing pages
/// once faulted with SIGBUS and killed the process — but rebuilt.
#[test]
fn a_truncated_object_with_a_matching_sidecar_is_rebuilt() {
    use sha2::{Digest, Sha256};
    let dir = TempDir::new("truncated-matching");
    let source = adder("f", 1);
    let key = open(&dir.0).key(&source, TARGET);
    open(&dir.0).get(&source, TARGET).expect("compile");
    let object = dir.0.join(format!("{key}.so"));
    let bytes = std::fs::read(&object).unwrap();
    let cut = &bytes[..bytes.len() / 2];
    std::fs::write(&object, cut).unwrap();
    let hash: String = Sha256::digest(cut)
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    std::fs::write(dir.0.join(format!("{key}.ok")), format!("{hash}\n")).unwrap();

    let cache = open(&dir.0);
    let lib = cache.get(&source, TARGET).expect("rebuild");
    assert_eq!(cache.counters(), counters(1, 0, 0));
    assert_eq!(call(&lib, "f", 9), 10);
    assert_eq!(std::fs::read(&object).unwrap().len(), bytes.len());
}

/// Changes a constant of the object in place while this process still has
/// it loaded, which changes the loaded copy too (its read-only pages are the
/// file's). The rebuilt entry must be loaded as a new object, not as the
/// dynamic loader's old one for the same path.
#[test]
fn an_entry_damaged_while_loaded_is_rebuilt_and_loaded_afresh() {
    const ORIGINAL: u32 = 0x7e57_ab1e;
    const DAMAGED: u32 = 0x0bad_f00d;
    let dir = TempDir::new("loaded");
    // A table indexed at run time stays in read-only data, which the
    // dynamic loader maps straight from the file.
    let source = format!(
        "static const unsigned t[2] = {{{ORIGINAL}u, 0u}};\nint v(int x) {{ return (int)t[x & 1]; }}\n"
    );
    let cache = open(&dir.0);
    let stale = cache.get(&source, TARGET).expect("compile");
    assert_eq!(call(&stale, "v", 0), ORIGINAL as i32);
    let object = dir.0.join(format!("{}.so", cache.key(&source, TARGET)));
    let mut bytes = std::fs::read(&object).unwrap();
    let at = bytes
        .windows(4)
        .position(|w| w == ORIGINAL.to_le_bytes())
        .expect("the constant is in the object");
    bytes[at..at + 4].copy_from_slice(&DAMAGED.to_le_bytes());
    std::fs::OpenOptions::new()
        .write(true)
        .open(&object)
        .and_then(|mut f| std::io::Write::write_all(&mut f, &bytes))
        .expect("damage the object in place");
    assert_eq!(
        call(&stale, "v", 0),
        DAMAGED as i32,
        "the loaded copy changed"
    );

    let fresh = open(&dir.0);
    let lib = fresh.get(&source, TARGET).expect("rebuild");
    assert_eq!(fresh.counters(), counters(1, 0, 0));
    assert_eq!(call(&lib, "v", 0), ORIGINAL as i32);
    assert_eq!(call(&stale, "v", 0), DAMAGED as i32);
}

#[test]
fn a_corrupted_object_is_rebuilt() {
    let dir = TempDir::new("corrupted");
    let source = adder("g", 2);
    let object = {
        let cache = open(&dir.0);
        assert_eq!(
            call(&cache.get(&source, TARGET).expect("compile"), "g", 1),
            3
        );
        dir.0.join(format!("{}.so", cache.key(&source, TARGET)))
    };
    let mut bytes = std::fs::read(&object).unwrap();
    for b in &mut bytes[..64] {
        *b = !*b;
    }
    std::fs::write(&object, &bytes).unwrap();

    let cache = open(&dir.0);
    let lib = cache.get(&source, TARGET).expect("rebuild");
    assert_eq!(cache.counters(), counters(1, 0, 0));
    assert_eq!(call(&lib, "g", 40), 42);
}

#[test]
fn a_missing_or_damaged_sidecar_rebuilds() {
    let dir = TempDir::new("sidecar");
    let source = adder("h", 3);
    let sidecar = {
        let cache = open(&dir.0);
        cache.get(&source, TARGET).expect("compile");
        dir.0.join(format!("{}.ok", cache.key(&source, TARGET)))
    };
    std::fs::remove_file(&sidecar).unwrap();
    let cache = open(&dir.0);
    assert_eq!(
        call(&cache.get(&source, TARGET).expect("rebuild"), "h", 0),
        3
    );
    assert_eq!(cache.counters(), counters(1, 0, 0));
    assert!(sidecar.exists());

    std::fs::write(&sidecar, "not a hash\n").unwrap();
    let cache = open(&dir.0);
    assert_eq!(
        call(&cache.get(&source, TARGET).expect("rebuild"), "h", 1),
        4
    );
    assert_eq!(cache.counters(), counters(1, 0, 0));
}

#[test]
fn a_rejected_source_is_a_clear_error_and_leaves_no_entry() {
    let dir = TempDir::new("rejected");
    let cache = open(&dir.0);
    let source = "int f(int x) { return x + ; }\n";
    let key = cache.key(source, TARGET);
    match cache.get(source, TARGET) {
        Err(CacheError::Compile(message)) => {
            assert!(message.contains(&key), "names the kernel: {message}");
            assert!(
                message.contains("rejected"),
                "says what happened: {message}"
            );
            assert!(
                message.contains("error"),
                "carries the compiler's message: {message}"
            );
        }
        other => panic!("expected a compile error, got {other:?}"),
    }
    assert_eq!(cache.counters(), counters(0, 0, 0));
    assert_eq!(names(&dir.0), vec![format!("{key}.lock")]);
    assert_eq!(cache.stats().unwrap().entries, 0);
}

#[test]
fn get_all_compiles_every_kernel_and_shares_repeats() {
    let dir = TempDir::new("all");
    let cache = open(&dir.0);
    let sources: Vec<String> = (0..6).map(|k| adder(&format!("f{k}"), k)).collect();
    let mut requests: Vec<&str> = sources.iter().map(String::as_str).collect();
    requests.push(&sources[2]);
    let libs = cache.get_all(&requests, TARGET);
    assert_eq!(libs.len(), 7);
    for (k, lib) in libs.iter().take(6).enumerate() {
        let lib = lib.as_ref().expect("every kernel compiles");
        assert_eq!(call(lib, &format!("f{k}"), 100), 100 + k as i32);
    }
    let (second, repeat) = (libs[2].as_ref().unwrap(), libs[6].as_ref().unwrap());
    assert!(Arc::ptr_eq(second, repeat));
    assert_eq!(cache.counters(), counters(6, 0, 1));
    assert_eq!(cache.stats().unwrap().entries, 6);

    let warm = cache.get_all(&requests, TARGET);
    assert!(warm.iter().all(Result::is_ok));
    assert_eq!(cache.counters(), counters(6, 0, 8));

    let other = open(&dir.0);
    let mixed = [sources[0].as_str(), "int bad(void) { return undeclared; }"];
    let results = other.get_all(&mixed, TARGET);
    assert_eq!(call(results[0].as_ref().expect("a disk hit"), "f0", 5), 5);
    assert!(matches!(results[1], Err(CacheError::Compile(_))));
    assert_eq!(other.counters(), counters(0, 1, 0));
}

#[test]
fn threads_of_two_caches_compile_a_kernel_once() {
    let dir = TempDir::new("threads");
    let source = adder("t", 7);
    let (a, b) = (open(&dir.0), open(&dir.0));
    std::thread::scope(|s| {
        let ta = s.spawn(|| call(&a.get(&source, TARGET).expect("a"), "t", 0));
        let tb = s.spawn(|| call(&b.get(&source, TARGET).expect("b"), "t", 1));
        assert_eq!((ta.join().unwrap(), tb.join().unwrap()), (7, 8));
    });
    let total = a.counters().compiles + b.counters().compiles;
    assert_eq!(total, 1);
    assert_eq!(a.counters().disk_hits + b.counters().disk_hits, 1);
}

#[test]
fn stats_and_clear() {
    let dir = TempDir::new("stats");
    assert_eq!(
        cache::stats(&dir.0.join("missing")).unwrap(),
        Default::default()
    );
    let cache = open(&dir.0);
    std::fs::write(dir.0.join("README"), "not the cache's").unwrap();
    cache.get(&adder("a", 1), TARGET).expect("compile");
    cache.get(&adder("b", 2), TARGET).expect("compile");
    let stats = cache.stats().unwrap();
    assert_eq!(stats.entries, 2);
    let own: u64 = names(&dir.0)
        .iter()
        .filter(|n| *n != "README")
        .map(|n| std::fs::metadata(dir.0.join(n)).unwrap().len())
        .sum();
    assert_eq!(stats.bytes, own);
    assert!(stats.bytes > 0);

    assert_eq!(cache.clear().unwrap(), 2);
    assert_eq!(cache.stats().unwrap(), Default::default());
    assert_eq!(names(&dir.0), vec!["README".to_string()]);
    assert_eq!(call(&cache.get(&adder("a", 1), TARGET).unwrap(), "a", 1), 2);
    assert_eq!(cache.counters(), counters(3, 0, 0));
}

/// Set in the children of `two_processes_compile_a_kernel_once`: the cache
/// directory they share.
const WORKER_DIR: &str = "TESSERA_CACHE_TEST_WORKER_DIR";
/// Set in those children: when to start, in milliseconds since 1970, so
/// that both ask for the kernel at the same moment.
const WORKER_START: &str = "TESSERA_CACHE_TEST_WORKER_START";

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .expect("the clock is after 1970")
        .as_millis()
}

#[test]
fn two_processes_compile_a_kernel_once() {
    let source = adder("p", 40);
    if let Some(dir) = std::env::var_os(WORKER_DIR) {
        let start: u128 = std::env::var(WORKER_START).unwrap().parse().unwrap();
        let wait = start.saturating_sub(now_ms());
        std::thread::sleep(Duration::from_millis(wait as u64));
        let cache = open(Path::new(&dir));
        let value = call(
            &cache.get(&source, TARGET).expect("the worker's kernel"),
            "p",
            2,
        );
        let c = cache.counters();
        println!(
            "cache-worker compiles={} disk_hits={} value={value}",
            c.compiles, c.disk_hits
        );
        return;
    }
    let dir = TempDir::new("processes");
    let exe = std::env::current_exe().unwrap();
    let start = (now_ms() + 300).to_string();
    // Both workers start before either is waited for.
    let outputs: Vec<String> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..2)
            .map(|_| {
                s.spawn(|| {
                    Command::new(&exe)
                        .args([
                            "--exact",
                            "two_processes_compile_a_kernel_once",
                            "--nocapture",
                        ])
                        .env(WORKER_DIR, &dir.0)
                        .env(WORKER_START, &start)
                        .output()
                        .expect("run a worker")
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                let out = h.join().unwrap();
                assert!(out.status.success(), "a worker failed: {out:?}");
                String::from_utf8(out.stdout).unwrap()
            })
            .collect()
    });
    let (mut compiles, mut disk_hits) = (0, 0);
    for out in &outputs {
        let line = out
            .lines()
            .find(|l| l.starts_with("cache-worker "))
            .unwrap_or_else(|| panic!("no report from a worker: {out}"));
        let field = |name: &str| -> u64 {
            let prefix = format!("{name}=");
            line.split(' ')
                .find_map(|w| w.strip_prefix(&prefix))
                .and_then(|v| v.parse().ok())
                .unwrap_or_else(|| panic!("no {name} in `{line}`"))
        };
        assert_eq!(field("value"), 42, "{line}");
        compiles += field("compiles");
        disk_hits += field("disk_hits");
    }
    assert_eq!((compiles, disk_hits), (1, 1), "{outputs:?}");
}
