//! The target description: its text form round-trips exactly, malformed
//! files are errors naming their line, probing this machine gives a sane
//! target, and the cache file is written once, read back and replaced when
//! corrupt.
//!
//! Caching tests pass the cache file explicitly ([`Target::cached_at`]), each
//! in its own directory under the system temporary directory, so they never
//! touch environment variables shared by parallel test threads.

use std::fs;
use std::path::PathBuf;

use kernel::{Cache, Target};

fn cache(level: u32, size_bytes: u64, line_bytes: u64, shared_by: u32) -> Cache {
    Cache {
        level,
        size_bytes,
        line_bytes,
        shared_by,
    }
}

/// A fresh, empty directory for one test.
fn temp_dir(test: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("tessera-target-{test}-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    dir
}

/// A valid file with `line` inserted after the required keys (as line 5).
fn with_line(line: &str) -> String {
    format!("# test\nname = m\ncores = 4\nvector_bits = 256\n{line}\n")
}

fn error_of(text: &str) -> String {
    match Target::from_text(text) {
        Ok(t) => panic!("accepted malformed text {text:?} as {t:?}"),
        Err(e) => e,
    }
}

#[test]
fn round_trip_several_caches() {
    let t = Target {
        name: "Big Box 9000 (16-core)".to_string(),
        cores: 16,
        vector_bits: 512,
        vector_registers: 32,
        fma_latency: 5,
        fma_pipes: 1,
        isa: ["avx", "avx2", "fma", "avx512f", "avx512bw"]
            .map(String::from)
            .to_vec(),
        caches: vec![
            cache(1, 48 << 10, 64, 1),
            cache(2, 2 << 20, 64, 2),
            cache(3, 32 << 20, 128, 16),
            cache(4, 1 << 30, 128, 16),
        ],
        peak_mflops: Some(181_234),
        bandwidth_mbps: Some(20_500),
    };
    let text = t.to_text();
    assert_eq!(Target::from_text(&text), Ok(t.clone()), "{text}");
    assert_eq!(Target::from_text(&text).unwrap().to_text(), text);
    // Compiled kernels do not depend on the measured peak.
    assert!(text.contains("peak_mflops = 181234"), "{text}");
    assert!(text.contains("bandwidth_mbps = 20500"), "{text}");
    assert!(!t.codegen_text().contains("peak"));
    assert!(!t.codegen_text().contains("bandwidth"));
}

#[test]
fn round_trip_empty_isa_and_no_caches() {
    let t = Target {
        name: "tiny".to_string(),
        cores: 1,
        vector_bits: 128,
        vector_registers: 8,
        fma_latency: 4,
        fma_pipes: 2,
        isa: Vec::new(),
        caches: Vec::new(),
        peak_mflops: None,
        bandwidth_mbps: None,
    };
    let text = t.to_text();
    assert!(text.contains("\nisa =\n"), "{text}");
    assert_eq!(Target::from_text(&text), Ok(t));
}

#[test]
fn round_trip_generic() {
    let t = Target::generic();
    assert_eq!(Target::from_text(&t.to_text()), Ok(t));
}

#[test]
fn exact_format() {
    let text = "# tessera target machine description\n\
                name = generic\n\
                cores = 2\n\
                vector_bits = 256\n\
                vector_registers = 16\n\
                fma_latency = 4\n\
                fma_pipes = 2\n\
                isa = avx2 fma\n\
                cache = L1 size=32768 line=64 shared=1\n\
                cache = L2 size=1048576 line=64 shared=1\n";
    assert_eq!(Target::generic().to_text(), text);
}

#[test]
fn hand_written_file_with_comments_and_suffixes() {
    let text = "\n# another machine\n  name=  Some ARM  \n\ncores=8\nvector_bits = 128\n\
                # caches follow\ncache = L1 size=64K line=64 shared=1\ncache = L2 size=4M line=64 shared=4\n";
    let t = Target::from_text(text).unwrap();
    assert_eq!(t.name, "Some ARM");
    assert_eq!(t.cores, 8);
    assert!(t.isa.is_empty());
    // Without the key, the register count is what the isa implies.
    assert_eq!(t.vector_registers, 16);
    assert_eq!(
        t.caches,
        vec![cache(1, 64 << 10, 64, 1), cache(2, 4 << 20, 64, 4)]
    );
}

#[test]
fn vector_registers_given_or_implied_by_the_isa() {
    let base = "name = m\ncores = 1\nvector_bits = 512\n";
    let implied = |isa: &str| {
        Target::from_text(&format!("{base}isa = {isa}\n"))
            .unwrap()
            .vector_registers
    };
    assert_eq!(implied("avx2 fma avx512f"), 32);
    assert_eq!(implied("neon"), 32);
    assert_eq!(implied("avx2 fma"), 16);
    assert_eq!(implied(""), 16);
    let given = Target::from_text(&format!("{base}isa = avx512f\nvector_registers = 24\n"));
    assert_eq!(given.unwrap().vector_registers, 24);
    let e = error_of(&format!("{base}vector_registers = 0\n"));
    assert!(e.starts_with("line 4: `vector_registers` must be"), "{e}");
    let e = error_of(&format!(
        "{base}vector_registers = 8\nvector_registers = 8\n"
    ));
    assert!(e.starts_with("line 5: duplicate `vector_registers`"), "{e}");
}

#[test]
fn unknown_key() {
    let e = error_of(&with_line("threads = 4"));
    assert!(e.starts_with("line 5: unknown key `threads`"), "{e}");
}

#[test]
fn bad_numbers() {
    for (text, expect) in [
        ("name = m\ncores = four\n", "line 2: `cores` must be"),
        ("name = m\ncores = 0\n", "line 2: `cores` must be"),
        ("name = m\ncores = -2\n", "line 2: `cores` must be"),
        (
            "name = m\ncores = 1\nvector_bits = 99999999999\n",
            "line 3: `vector_bits` must be",
        ),
    ] {
        let e = error_of(text);
        assert!(e.starts_with(expect), "{text:?}: {e}");
    }
}

#[test]
fn bad_number_line() {
    let e = error_of("name = m\ncores = 4x\nvector_bits = 256\n");
    assert_eq!(
        e,
        "line 2: `cores` must be a whole number of at least 1, found `4x`"
    );
}

#[test]
fn cache_without_size() {
    let e = error_of(&with_line("cache = L1 line=64 shared=1"));
    assert_eq!(e, "line 5: cache L1 has no `size=`");
}

#[test]
fn malformed_caches() {
    for (line, expect) in [
        ("cache = size=1K line=64 shared=1", "starts with its level"),
        (
            "cache = L0 size=1K line=64 shared=1",
            "starts with its level",
        ),
        ("cache = L1 size=0 line=64 shared=1", "must be positive"),
        ("cache = L1 size=12Q line=64 shared=1", "bad size `12Q`"),
        ("cache = L1 size=1K line=48 shared=1", "not a power of two"),
        ("cache = L1 size=1K line=64 shared=0", "`shared` must be"),
        (
            "cache = L1 size=1K size=2K line=64 shared=1",
            "duplicate cache field `size`",
        ),
        (
            "cache = L1 size=1K line=64 shared=1 ways=8",
            "unknown cache field `ways`",
        ),
        (
            "cache = L1 size=1K line 64 shared=1",
            "expected `field=value`",
        ),
        (
            "cache = L1 size=99999999999999999999G line=64 shared=1",
            "bad size",
        ),
    ] {
        let e = error_of(&with_line(line));
        assert!(
            e.starts_with("line 5: ") && e.contains(expect),
            "{line}: {e}"
        );
    }
}

#[test]
fn caches_out_of_order() {
    let text =
        with_line("cache = L2 size=1M line=64 shared=1\ncache = L1 size=32K line=64 shared=1");
    let e = error_of(&text);
    assert!(e.starts_with("line 6: cache level L1 after L2"), "{e}");
}

#[test]
fn duplicate_key() {
    let e = error_of(&with_line("cores = 8"));
    assert_eq!(e, "line 5: duplicate `cores` (first given on line 3)");
    let e = error_of(&with_line("isa = avx\nisa = avx2"));
    assert_eq!(e, "line 6: duplicate `isa` (first given on line 5)");
}

#[test]
fn missing_keys() {
    assert_eq!(error_of("name = m\nvector_bits = 256\n"), "missing `cores`");
    assert_eq!(error_of("cores = 1\nvector_bits = 256\n"), "missing `name`");
    assert_eq!(error_of("name = m\ncores = 1\n"), "missing `vector_bits`");
    assert_eq!(error_of(""), "missing `name`");
}

#[test]
fn empty_name() {
    let e = error_of("name =\ncores = 1\nvector_bits = 128\n");
    assert_eq!(e, "line 1: empty `name`");
}

#[test]
fn garbage() {
    let e = error_of(&with_line("\u{0}\u{1}ÿ garbage without equals"));
    assert!(e.starts_with("line 5: expected `key = value`"), "{e}");
    let e = error_of("\u{feff}%%%\n");
    assert!(e.starts_with("line 1: "), "{e}");
    // Arbitrary bytes decoded lossily are never a panic.
    let bytes: Vec<u8> = (0..=255u8).cycle().take(2000).collect();
    assert!(Target::from_text(&String::from_utf8_lossy(&bytes)).is_err());
}

#[test]
fn probe_is_sane() {
    let t = Target::probe().expect("probe this machine");
    assert!(t.cores >= 1);
    assert!(!t.name.is_empty() && !t.name.contains('\n'));
    assert!([128, 256, 512].contains(&t.vector_bits), "{t:?}");
    assert!(!t.caches.is_empty(), "{t:?}");
    assert!(t
        .caches
        .iter()
        .all(|c| c.line_bytes.is_power_of_two() && c.size_bytes > 0 && c.shared_by >= 1));
    assert_eq!(t.caches[0].level, 1, "{t:?}");
    assert!(
        t.caches.windows(2).all(|w| w[0].level < w[1].level),
        "levels increase: {t:?}"
    );
    if t.isa.iter().any(|f| f == "avx512f") {
        assert_eq!(t.vector_bits, 512);
    }
    assert_eq!(Target::from_text(&t.to_text()), Ok(t));
}

#[test]
fn cache_written_read_and_repaired() {
    let dir = temp_dir("cache");
    let path = dir.join("nested").join("target.txt");
    // The first call probes and writes the file, creating directories.
    let first = Target::cached_at(&path).expect("first call");
    let written = fs::read_to_string(&path).expect("cache file written");
    assert_eq!(written, first.to_text());
    // The second call reads the file: a recognisable edit shows it was read.
    let mut other = Target::generic();
    other.name = "from the cache".to_string();
    fs::write(&path, other.to_text()).unwrap();
    assert_eq!(Target::cached_at(&path), Ok(other));
    // A corrupt file is re-probed and rewritten.
    fs::write(&path, "cores = lots\n\u{0}junk").unwrap();
    let repaired = Target::cached_at(&path).expect("corrupt cache repaired");
    assert_eq!(repaired, first);
    assert_eq!(fs::read_to_string(&path).unwrap(), first.to_text());
    // No temporary files are left behind.
    let leftovers: Vec<_> = fs::read_dir(path.parent().unwrap())
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .collect();
    assert_eq!(leftovers, vec![std::ffi::OsString::from("target.txt")]);
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn refresh_overwrites() {
    let dir = temp_dir("refresh");
    let path = dir.join("target.txt");
    fs::create_dir_all(&dir).unwrap();
    fs::write(&path, Target::generic().to_text()).unwrap();
    let probed = Target::refresh_at(&path).expect("refresh");
    assert_eq!(fs::read_to_string(&path).unwrap(), probed.to_text());
    let _ = fs::remove_dir_all(&dir);
}

#[test]
fn cache_path_is_target_txt() {
    // Only the file name is checked: the directory depends on variables that
    // other tests must not change.
    if let Ok(p) = Target::cache_path() {
        assert_eq!(p.file_name().unwrap(), "target.txt");
    }
}
