//! The disk cache of optimizer results: one entry per search request,
//! `KEY.json` in `optimize` beside the kernel cache's `kernels` and the
//! cost service's `costs` in `kernel::cache_dir()`, so that a later
//! identical request (`tessera run --optimize`, a Python session) reuses
//! the result instead of searching again.
//!
//! The key ([`key`]) is a SHA-256 over everything the answer depends on:
//! the whole program as `ir` prints it, the def, the bound sizes, the text
//! of every rules file, the search options and the cost service's
//! identity (target, compiler, compile options). An entry holds, as
//! JSON, the optimized def as TC text at the sizes (and the defs the
//! search generated for it), the times, the steps and the proof.
//!
//! The rules are the kernel cache's (`codegen::cache`), through its
//! helpers: an entry is written to a scratch file and renamed into place,
//! so readers see no entry or a whole one; a key's work (read, search,
//! write) happens under an exclusive lock on `KEY.lock`, so two processes
//! never run the same search at once.
//!
//! Guarantees: reading the cache is never an error. An entry is used only
//! if it parses, names its own key, its defs check against the rest of
//! the program ([`rebuild`]) and the def has the original's signature
//! (the same parameters and outputs, of the same element types and, at
//! the sizes, shapes); anything else reads as no entry and is searched
//! again and overwritten.

use std::collections::HashMap;
use std::path::PathBuf;
use std::time::Duration;

use codegen::cache::{hash_parts, lock_key, read_if_present, write_atomically};
use ir::{Def, Program};
use opt::optimize::Step;
use serde::{Deserialize, Serialize};

use crate::optimize::Optimized;
use crate::Error;

/// Versions the key and the entry format: changing either changes this,
/// so old entries are simply never found again.
const KEY_VERSION: &str = "tessera optimizer-result cache 1";

/// A directory of optimizer results.
#[derive(Clone, Debug)]
pub struct Cache {
    dir: PathBuf,
}

/// What a key is made of.
#[derive(Clone, Debug)]
pub struct KeyParts<'a> {
    /// The whole program, the def not yet replaced.
    pub program: &'a Program,
    pub def: &'a str,
    /// Every size symbol and integer scalar of the def, bound.
    pub sizes: &'a HashMap<String, i64>,
    /// The text of every rules file used, the shipped ones first.
    pub rules: &'a [String],
    /// The search's options (`Debug`-printed, so that every option the
    /// optimizer has, now or later, is part of the key).
    pub search: &'a opt::optimize::Options,
    /// What the cost service's estimates and measurements depend on
    /// (`CostService::identity`).
    pub service: &'a str,
}

/// The hex SHA-256 key of a request.
pub fn key(parts: &KeyParts<'_>) -> String {
    let mut sizes: Vec<String> = parts
        .sizes
        .iter()
        .map(|(k, v)| format!("{k}={v}"))
        .collect();
    sizes.sort();
    let mut all = vec![
        KEY_VERSION.to_string(),
        env!("CARGO_PKG_VERSION").to_string(),
        ir::print_program(parts.program),
        parts.def.to_string(),
        sizes.join("\n"),
        format!("{:?}", parts.search),
        parts.service.to_string(),
    ];
    all.extend(parts.rules.iter().cloned());
    let refs: Vec<&str> = all.iter().map(String::as_str).collect();
    hash_parts(&refs)
}

/// An entry as stored.
#[derive(Debug, Serialize, Deserialize)]
struct Entry {
    /// The key it was stored under: an entry copied to another name is
    /// not that name's entry.
    key: String,
    /// The optimized def as TC text (`None` when the original stays).
    def: Option<String>,
    original_ns: u64,
    time_ns: u64,
    measured: bool,
    steps: Vec<EntryStep>,
    proof: Option<String>,
    not_searched: Option<String>,
    search_ns: u64,
}

#[derive(Debug, Serialize, Deserialize)]
struct EntryStep {
    rule: String,
    at: String,
    ops: Vec<String>,
    verdict: String,
}

impl Cache {
    /// The cache in `dir`, created if missing.
    pub fn open(dir: PathBuf) -> Result<Cache, Error> {
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::cache(format!(
                "cannot create the optimizer cache `{}`: {e}",
                dir.display()
            ))
        })?;
        Ok(Cache { dir })
    }

    /// tessera's per-user cache: `optimize` in `kernel::cache_dir()`.
    pub fn open_default() -> Result<Cache, Error> {
        let dir = kernel::cache_dir().map_err(Error::Environment)?;
        Cache::open(dir.join("optimize"))
    }

    /// The file of `key`'s entry.
    pub fn entry_path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// The result stored for `key` (a request on def `def` of `program` at
    /// `sizes`), else the one `search` gives, stored before it is
    /// returned. Runs under the key's lock.
    pub fn get_or_search(
        &self,
        key: &str,
        program: &Program,
        def: &Def,
        sizes: &HashMap<String, i64>,
        search: impl FnOnce() -> Result<Optimized, Error>,
    ) -> Result<Optimized, Error> {
        let _lock = lock_key(&self.dir, key).map_err(Error::cache)?;
        let path = self.entry_path(key);
        if let Some(bytes) = read_if_present(&path).map_err(Error::cache)? {
            if let Some(hit) = read_entry(key, &bytes, program, def, sizes) {
                return Ok(hit);
            }
        }
        let fresh = search()?;
        self.write(key, &fresh)?;
        Ok(fresh)
    }

    /// Stores `result` as `key`'s entry (a search made elsewhere, such as
    /// `tessera optimize`'s), replacing any.
    pub fn put(&self, key: &str, result: &Optimized) -> Result<(), Error> {
        let _lock = lock_key(&self.dir, key).map_err(Error::cache)?;
        self.write(key, result)
    }

    /// Writes the entry; the caller holds the key's lock. A result whose
    /// def text does not check back into its program is not stored: it
    /// could never be read.
    fn write(&self, key: &str, result: &Optimized) -> Result<(), Error> {
        if !result.text_checks {
            return Ok(());
        }
        let nanos = |d: Duration| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        let entry = Entry {
            key: key.to_string(),
            def: result.changed.then(|| result.text.clone()),
            original_ns: nanos(result.original_time),
            time_ns: nanos(result.time),
            measured: result.measured,
            steps: result
                .steps
                .iter()
                .map(|s| EntryStep {
                    rule: s.rule.clone(),
                    at: s.at.clone(),
                    ops: s.ops.clone(),
                    verdict: s.verdict.clone(),
                })
                .collect(),
            proof: result.proof.clone(),
            not_searched: result.not_searched.clone(),
            search_ns: nanos(result.elapsed),
        };
        let text = serde_json::to_string_pretty(&entry)
            .map_err(|e| Error::Internal(format!("cannot write an optimizer cache entry: {e}")))?;
        write_atomically(&self.entry_path(key), &format!("{text}\n")).map_err(Error::cache)
    }
}

/// The result `bytes` hold for `key`, or `None` when they are not a
/// usable entry (see the module's guarantees).
fn read_entry(
    key: &str,
    bytes: &[u8],
    program: &Program,
    def: &Def,
    sizes: &HashMap<String, i64>,
) -> Option<Optimized> {
    let entry: Entry = serde_json::from_slice(bytes).ok()?;
    if entry.key != key {
        return None;
    }
    let (program, text) = match &entry.def {
        Some(text) => (rebuild(program, def, text, sizes).ok()?, text.clone()),
        None => (program.clone(), ir::print_def(program, def)),
    };
    Some(Optimized {
        def: program.def(&def.name)?.clone(),
        changed: entry.def.is_some(),
        program,
        text,
        original_time: Duration::from_nanos(entry.original_ns),
        time: Duration::from_nanos(entry.time_ns),
        measured: entry.measured,
        steps: entry
            .steps
            .into_iter()
            .map(|s| Step {
                rule: s.rule,
                at: s.at,
                ops: s.ops,
                verdict: s.verdict,
            })
            .collect(),
        proof: entry.proof,
        not_searched: entry.not_searched,
        elapsed: Duration::from_nanos(entry.search_ns),
        cached: true,
        text_checks: true,
    })
}

/// `program` with def `def` replaced by the defs TC `text` defines (the
/// optimized def at the sizes, and the defs it calls that `program`
/// lacks), checked against the program's other defs (printed, in their
/// order, with `text` in `def`'s place), when the def of `def`'s name in
/// `text` has `def`'s signature at `sizes`; otherwise why not. The def
/// keeps `def`'s parameter declarations (its sizes symbolic, as callers
/// bind them), as the search's own result does.
pub fn rebuild(
    program: &Program,
    def: &Def,
    text: &str,
    sizes: &HashMap<String, i64>,
) -> Result<Program, String> {
    let whole: Vec<String> = program
        .defs
        .iter()
        .map(|d| {
            if d.name == def.name {
                text.to_string()
            } else {
                ir::print_def(program, d)
            }
        })
        .collect();
    let checked = tc::check_source(&whole.join("\n")).map_err(|ds| {
        ds.first()
            .map_or_else(|| "does not check".to_string(), |d| d.message.clone())
    })?;
    let mut new = checked
        .program
        .def(&def.name)
        .ok_or_else(|| format!("the text defines no `{}`", def.name))?
        .clone();
    same_signature(def, &new, sizes)?;
    for decl in &mut new.tensors {
        let param = def
            .params
            .iter()
            .any(|p| matches!(p, ir::Param::Tensor(t) if *t == decl.name));
        if let Some(original) = def.tensor(&decl.name).filter(|_| param) {
            decl.clone_from(original);
        }
    }
    // The other defs are the program's own (printing and checking gives
    // them back unchanged); the text's go in the def's place, in order.
    let added: Vec<Def> = checked
        .program
        .defs
        .iter()
        .filter(|d| d.name != def.name && program.def(&d.name).is_none())
        .cloned()
        .chain(std::iter::once(new))
        .collect();
    let mut out = program.clone();
    let at = out
        .defs
        .iter()
        .position(|d| d.name == def.name)
        .ok_or_else(|| format!("the program has no `{}`", def.name))?;
    out.defs.splice(at..=at, added);
    ir::verify_program(&out).map_err(|e| e.join("; "))?;
    Ok(out)
}

/// Whether `new` can stand for `old` at `sizes`: the same parameters and
/// outputs, of the same element types and roles, and of the same shapes
/// at `sizes`.
fn same_signature(old: &Def, new: &Def, sizes: &HashMap<String, i64>) -> Result<(), String> {
    if new.params != old.params {
        return Err("its parameters differ".to_string());
    }
    if new.outputs != old.outputs {
        return Err("its outputs differ".to_string());
    }
    let shape = |d: &ir::TensorDecl| -> Option<Vec<i64>> {
        d.shape.iter().map(|s| s.eval_map(sizes).ok()).collect()
    };
    let tensors = old
        .params
        .iter()
        .filter_map(|p| match p {
            ir::Param::Tensor(t) => Some(t),
            ir::Param::Scalar { .. } => None,
        })
        .chain(&old.outputs);
    for t in tensors {
        let (Some(a), Some(b)) = (old.tensor(t), new.tensor(t)) else {
            return Err(format!("`{t}` has no declaration"));
        };
        if a.dtype != b.dtype || a.role != b.role || shape(a).is_none() || shape(a) != shape(b) {
            return Err(format!("`{t}` has another type or shape"));
        }
    }
    Ok(())
}
