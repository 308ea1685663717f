//! Translation units: a program's distinct step functions grouped into C
//! files that are compiled on their own, in parallel, and cached one by one.
//!
//! A unit is the prelude, the AVX-512 prelude when one of its functions has
//! explicit AVX-512 code, `PREFIX_abi` (the interface text, [`super::abi`],
//! of its functions) and its functions, in key order. Nothing in it names
//! the program, so a unit that two programs share is one cache entry.
//!
//! The grouping ([`group`]):
//! - Functions with AVX-512 code and the others go to different units:
//!   `<immintrin.h>` costs gcc about 0.15 s per file, three times the rest
//!   of a unit's fixed cost, so only the units that need it pay for it.
//! - Within each of the two classes, `k` units (below), and function `f`
//!   goes to unit `floor(hash(f) * k / 2^64)`, `hash(f)` being the first
//!   16 hex digits of its key: a function lands in the same unit whatever
//!   else the program holds as long as `k` stays, so a program that
//!   changes a little recompiles only the units its changes fall in. A
//!   range of the hash space holding no function would leave a unit empty;
//!   its boundary then moves by the fewest functions that give every unit
//!   one, so that small programs still use `k` units.
//! - `k` is about one unit per [`FUNCTIONS_PER_UNIT`] functions, at least
//!   the class's share of the machine's cores (so that a program of a few
//!   functions keeps every core busy) and at most one unit per function.
//! - The AVX-512 units come first: they take longest, and the cache starts
//!   compiling units in order.
//!
//! Guarantees: deterministic: the same functions and core count give the
//! same units with the same text; every function is in exactly one unit,
//! and no unit is empty.

use super::dedup::Distinct;
use super::{abi, scalar};

/// The functions of a unit, as far as the cores allow. gcc spends about
/// 0.05 s on a unit however small (0.2 s with the AVX-512 prelude), and
/// 0.03 to 0.3 s per step function at `-O3`. Measured on ResNet-18's 52
/// distinct functions (20 with AVX-512 code): one file takes 2.1 s of CPU,
/// 4 units (16 a unit) 2.3 s and 7 units (8 a unit) 2.55 s, and on two
/// cores the 4 units finish in 1.2 s, the 7 in 1.3 s.
pub const FUNCTIONS_PER_UNIT: usize = 16;

/// The units of `functions` (each its key, 64 hex digits, and whether it
/// has AVX-512 code) on a machine of `cores` cores: per unit, its
/// functions' indices in `functions`, in key order.
pub(super) fn group(functions: &[(&str, bool)], cores: usize) -> Vec<Vec<usize>> {
    let mut units = Vec::new();
    for avx512 in [true, false] {
        let mut class: Vec<usize> = (0..functions.len())
            .filter(|&f| functions[f].1 == avx512)
            .collect();
        if class.is_empty() {
            continue;
        }
        class.sort_by_key(|&f| functions[f].0);
        let n = class.len();
        let share = (cores.max(1) * n).div_ceil(functions.len());
        let k = n.div_ceil(FUNCTIONS_PER_UNIT).max(share).min(n);
        let hash = |f: usize| u128::from(hash_of(functions[f].0));
        let mut start = 0;
        for u in 1..=k {
            let end = if u == k {
                n
            } else {
                // The functions of units before `u`: those whose hash lies
                // below u/k of the hash space.
                let bound = (u as u128) << 64;
                let at = class.partition_point(|&f| hash(f) * (k as u128) < bound);
                // Every unit so far keeps one function at least, and so
                // can every unit after.
                at.clamp(start + 1, n - (k - u))
            };
            units.push(class[start..end].to_vec());
            start = end;
        }
    }
    units
}

/// The first 16 hex digits of a key, as a number.
fn hash_of(key: &str) -> u64 {
    u64::from_str_radix(&key[..16], 16).unwrap_or(0)
}

/// The C source of a unit of `functions` (indices into `distinct`).
pub(super) fn source(prefix: &str, distinct: &[Distinct], functions: &[usize]) -> String {
    let mut s = String::from("/* tessera: step functions compiled as one unit. */\n");
    s.push_str(scalar::PRELUDE);
    if functions.iter().any(|&f| distinct[f].function.avx512) {
        s.push_str(scalar::PRELUDE_AVX512);
    }
    s.push_str(&abi_line(
        prefix,
        &abi(functions.iter().map(|&f| &distinct[f].function)),
    ));
    for &f in functions {
        s.push('\n');
        s.push_str(&distinct[f].function.text);
    }
    s
}

/// The definition of `PREFIX_abi`.
pub(super) fn abi_line(prefix: &str, abi: &str) -> String {
    format!("\nconst char {prefix}_abi[] = \"{abi}\";\n")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cache::hash_parts;

    /// `n` functions with keys as the emitter makes them (SHA-256 hex
    /// digests); every third has AVX-512 code when `mixed`.
    fn functions(n: usize, salt: &str, mixed: bool) -> Vec<(String, bool)> {
        (0..n)
            .map(|i| (hash_parts(&[salt, &i.to_string()]), mixed && i % 3 == 0))
            .collect()
    }

    /// The units of `fs`, as lists of keys.
    fn units_of(fs: &[(String, bool)], cores: usize) -> Vec<Vec<String>> {
        let refs: Vec<(&str, bool)> = fs.iter().map(|(k, a)| (k.as_str(), *a)).collect();
        group(&refs, cores)
            .into_iter()
            .map(|u| u.into_iter().map(|f| fs[f].0.clone()).collect())
            .collect()
    }

    #[test]
    fn every_function_is_in_one_unit_of_its_class_and_no_unit_is_empty() {
        for n in [1, 2, 3, 7, 8, 9, 20, 61, 200] {
            for cores in [1, 2, 4, 16] {
                for mixed in [false, true] {
                    let fs = functions(n, "units", mixed);
                    let refs: Vec<(&str, bool)> =
                        fs.iter().map(|(k, a)| (k.as_str(), *a)).collect();
                    let units = group(&refs, cores);
                    let mut all: Vec<usize> = units.concat();
                    all.sort_unstable();
                    assert_eq!(all, (0..n).collect::<Vec<_>>(), "n {n}, cores {cores}");
                    for u in &units {
                        assert!(!u.is_empty(), "n {n}, cores {cores}: an empty unit");
                        assert!(
                            u.iter().all(|&f| fs[f].1 == fs[u[0]].1),
                            "n {n}: a unit mixes AVX-512 and other functions"
                        );
                        assert!(u.windows(2).all(|w| fs[w[0]].0 < fs[w[1]].0));
                    }
                    // AVX-512 units first.
                    assert!(units.windows(2).all(|w| fs[w[0][0]].1 >= fs[w[1][0]].1));
                    // Enough units for the cores, and for the functions.
                    assert!(units.len() >= n.min(cores), "n {n}, cores {cores}");
                    assert!(units.len() >= n.div_ceil(FUNCTIONS_PER_UNIT));
                }
            }
        }
    }

    #[test]
    fn grouping_depends_on_the_functions_not_their_order() {
        let fs = functions(61, "order", true);
        let mut reversed = fs.clone();
        reversed.reverse();
        assert_eq!(units_of(&fs, 2), units_of(&reversed, 2));
    }

    #[test]
    fn adding_a_function_changes_only_the_unit_it_joins() {
        // 60 and 61 functions both make four units.
        let mut fs = functions(60, "stable", false);
        let before = units_of(&fs, 1);
        assert_eq!(before.len(), 4);
        let added = hash_parts(&["stable", "new"]);
        fs.push((added.clone(), false));
        let after = units_of(&fs, 1);
        assert_eq!(after.len(), 4);
        let mut changed = 0;
        for (b, a) in before.iter().zip(&after) {
            if a.contains(&added) {
                changed += 1;
                let rest: Vec<String> = a.iter().filter(|k| **k != added).cloned().collect();
                assert_eq!(&rest, b);
            } else {
                assert_eq!(a, b);
            }
        }
        assert_eq!(changed, 1);
    }
}
