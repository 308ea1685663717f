//! The tuning cache (`engine::tune::cache`): an entry reads back as it was
//! stored, a slower result never replaces a faster one, a damaged entry is
//! reported with why and never used (then replaced by the next result),
//! keys separate every part they are made of, and concurrent writers of
//! one key leave one whole entry, the fastest.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use engine::tune::cache::{key, Entry, Lookup, TuneCache, FORMAT};

fn cache(name: &str) -> (TuneCache, PathBuf) {
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("tune-cache-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    (TuneCache::open(dir.clone()).expect("a cache"), dir)
}

fn entry(time_ns: u64) -> Entry {
    Entry {
        format: FORMAT.to_string(),
        def: "tmm".to_string(),
        sizes: [("M".to_string(), 128), ("N".to_string(), 64)].into(),
        constants: vec!["B".to_string()],
        options: "step s1_C\n  tile m=32\n  vectorize on\n".to_string(),
        time_ns,
        default_ns: 2 * time_ns,
        candidates: 40,
    }
}

fn none() -> BTreeSet<String> {
    BTreeSet::new()
}

fn sizes() -> BTreeMap<String, i64> {
    [("M".to_string(), 128)].into()
}

#[test]
fn an_entry_reads_back_and_only_a_faster_one_replaces_it() {
    let (c, _) = cache("roundtrip");
    let k = key("def tmm ...", "tmm", &sizes(), &none(), "target", "gcc 12");
    assert_eq!(c.get(&k).unwrap(), Lookup::Miss);
    assert!(c.put(&k, &entry(1000)).unwrap());
    let Lookup::Hit(e, o) = c.get(&k).unwrap() else {
        panic!("a hit")
    };
    assert_eq!(e, entry(1000));
    assert_eq!(o.step("s1_C").vectorize, Some(true));
    assert!(
        !c.put(&k, &entry(1500)).unwrap(),
        "a slower result is not stored"
    );
    assert!(c.put(&k, &entry(800)).unwrap(), "a faster one is");
    assert!(matches!(c.get(&k).unwrap(), Lookup::Hit(e, _) if e.time_ns == 800));
    assert_eq!(c.list().unwrap(), vec![(k, Ok(entry(800)))]);
}

#[test]
fn keys_separate_programs_defs_sizes_constants_targets_and_compilers() {
    let base = key("p", "d", &sizes(), &none(), "t", "c");
    let other_sizes: BTreeMap<String, i64> = [("M".to_string(), 256)].into();
    let others = [
        key("p2", "d", &sizes(), &none(), "t", "c"),
        key("p", "d2", &sizes(), &none(), "t", "c"),
        key("p", "d", &other_sizes, &none(), "t", "c"),
        key("p", "d", &sizes(), &none(), "t2", "c"),
        key("p", "d", &sizes(), &none(), "t", "c2"),
        key("p", "d", &sizes(), &["W".to_string()].into(), "t", "c"),
    ];
    for o in others {
        assert_ne!(o, base);
    }
    assert_eq!(key("p", "d", &sizes(), &none(), "t", "c"), base);
}

#[test]
fn a_damaged_entry_is_reported_and_never_used() {
    let (c, dir) = cache("damaged");
    let k = key("p", "d", &sizes(), &none(), "t", "c");
    let path = dir.join(format!("{k}.json"));
    let mut wrong_format = entry(10);
    wrong_format.format = "tessera-tuning 0".to_string();
    let mut wrong_options = entry(10);
    wrong_options.options = "step s\n  tile m=0\n".to_string();
    let cases = [
        ("{ not json".to_string(), "not a tuning entry"),
        (
            serde_json::to_string(&wrong_format).unwrap(),
            "format `tessera-tuning 0`",
        ),
        (
            serde_json::to_string(&wrong_options).unwrap(),
            "its options: line 2",
        ),
    ];
    for (text, why) in cases {
        std::fs::write(&path, text).unwrap();
        match c.get(&k).unwrap() {
            Lookup::Damaged(w) => assert!(w.contains(why), "{w}"),
            other => panic!("{other:?}, want damaged: {why}"),
        }
        let listed = c.list().unwrap();
        assert!(matches!(&listed[..], [(_, Err(w))] if w.contains(why)));
    }
    // The next result replaces it, however slow.
    assert!(c.put(&k, &entry(1 << 40)).unwrap());
    assert!(matches!(c.get(&k).unwrap(), Lookup::Hit(..)));
}

#[test]
fn concurrent_writers_leave_the_fastest_whole_entry() {
    let (c, _) = cache("concurrent");
    let k = key("p", "d", &sizes(), &none(), "t", "c");
    std::thread::scope(|s| {
        for t in 0..8u64 {
            let c = c.clone();
            let k = k.clone();
            s.spawn(move || {
                for i in 0..20u64 {
                    // Thread 5's last write is the fastest of all.
                    let time = 10_000 - t * 100 - i - if t == 5 && i == 19 { 5000 } else { 0 };
                    c.put(&k, &entry(time)).unwrap();
                    assert!(!matches!(c.get(&k).unwrap(), Lookup::Damaged(_)));
                }
            });
        }
    });
    assert!(
        matches!(c.get(&k).unwrap(), Lookup::Hit(e, _) if e.time_ns == 10_000 - 500 - 19 - 5000)
    );
}
