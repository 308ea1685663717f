//! The tuning cache: for each kernel, the best kernel options a tuner
//! found and how fast they ran, shared by every process of the user
//! (`tuning` in `kernel::cache_dir()`).
//!
//! An entry is `KEY.json`, human-readable JSON with a format line, the
//! def, its sizes, the inputs declared constant, the options in their
//! text form (`kernel::options`), the tuned time, the untuned default's
//! time and how many candidates were measured. The key ([`key`]) is a hash
//! of the format, tessera's version, the printed program, the def, the
//! sorted sizes, the constant inputs (with them, the kernel is the def
//! without its load step), the target's codegen text and the C compiler's
//! identity: a kernel tuned for another machine, compiler or tessera is
//! another key.
//!
//! The kernel cache's rules hold (`codegen::cache`): an entry is written
//! to a scratch file and renamed into place, so a reader sees no entry or
//! a whole one (lookups take no lock), and every read-check-write of a
//! key happens under the key's exclusive lock, so concurrent tuners of one
//! kernel keep the faster of their results. An entry that does not parse, has another
//! format or options that do not parse is reported as damaged, with why,
//! and never used.

use std::collections::{BTreeMap, BTreeSet};
use std::path::PathBuf;

use codegen::cache::{hash_parts, lock_key, read_if_present, write_atomically};
use serde::{Deserialize, Serialize};

use crate::Error;

/// The format line of every entry.
pub const FORMAT: &str = "tessera-tuning 2";

/// One kernel's tuned options.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Entry {
    pub format: String,
    pub def: String,
    pub sizes: BTreeMap<String, i64>,
    /// The inputs declared constant (their load step is not the kernel's).
    #[serde(default)]
    pub constants: Vec<String>,
    /// The kernel options, in their text form.
    pub options: String,
    /// The median time of the tuned kernel, in nanoseconds.
    pub time_ns: u64,
    /// The median time of the untuned default, in nanoseconds.
    pub default_ns: u64,
    /// The candidates measured.
    pub candidates: u64,
}

/// A listed entry: its key, and the entry or why it is damaged.
pub type Listed = (String, Result<Entry, String>);

/// What the cache holds for a key.
#[derive(Clone, Debug, PartialEq)]
pub enum Lookup {
    /// An entry, with its options read.
    Hit(Entry, kernel::Options),
    Miss,
    /// An entry that cannot be trusted, and why.
    Damaged(String),
}

/// The key of `def` of the printed program `program` at `sizes` with the
/// inputs `constants` declared constant, for the target whose codegen text is `target` and the C compiler `compiler`.
pub fn key(
    program: &str,
    def: &str,
    sizes: &BTreeMap<String, i64>,
    constants: &BTreeSet<String>,
    target: &str,
    compiler: &str,
) -> String {
    let sizes: String = sizes.iter().map(|(n, v)| format!("{n}={v};")).collect();
    let constants: String = constants.iter().map(|n| format!("{n};")).collect();
    hash_parts(&[
        FORMAT,
        env!("CARGO_PKG_VERSION"),
        program,
        def,
        &sizes,
        &constants,
        target,
        compiler,
    ])
}

/// A directory of tuned options.
#[derive(Clone, Debug)]
pub struct TuneCache {
    dir: PathBuf,
}

impl TuneCache {
    /// The cache in `dir`, created if missing.
    pub fn open(dir: PathBuf) -> Result<TuneCache, Error> {
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::Environment(format!(
                "cannot create the tuning cache `{}`: {e}",
                dir.display()
            ))
        })?;
        Ok(TuneCache { dir })
    }

    /// The directory of the entries.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }

    /// tessera's per-user cache: `tuning` in `kernel::cache_dir()`.
    pub fn default_dir() -> Result<PathBuf, Error> {
        kernel::cache_dir()
            .map(|d| d.join("tuning"))
            .map_err(Error::Environment)
    }

    fn path(&self, key: &str) -> PathBuf {
        self.dir.join(format!("{key}.json"))
    }

    /// What the cache holds for `key`. Entries are renamed into place
    /// whole, so reading takes no lock (and a lookup of a kernel never
    /// tuned leaves no lock file behind).
    pub fn get(&self, key: &str) -> Result<Lookup, Error> {
        self.read(key)
    }

    fn read(&self, key: &str) -> Result<Lookup, Error> {
        match read_if_present(&self.path(key)).map_err(Error::cache)? {
            None => Ok(Lookup::Miss),
            Some(bytes) => {
                Ok(parse_entry(&bytes).map_or_else(Lookup::Damaged, |(e, o)| Lookup::Hit(e, o)))
            }
        }
    }

    /// Stores `entry` for `key` unless the cache holds a faster one for it;
    /// gives whether it was stored. A damaged entry is replaced.
    pub fn put(&self, key: &str, entry: &Entry) -> Result<bool, Error> {
        kernel::parse_options(&entry.options)
            .map_err(|e| Error::Internal(format!("internal error: tuned options: {e}")))?;
        let _lock = lock_key(&self.dir, key).map_err(Error::cache)?;
        if let Lookup::Hit(held, _) = self.read(key)? {
            if held.time_ns <= entry.time_ns {
                return Ok(false);
            }
        }
        let text = serde_json::to_string_pretty(entry)
            .map_err(|e| Error::Internal(format!("internal error: a tuning entry: {e}")))?;
        write_atomically(&self.path(key), &format!("{text}\n")).map_err(Error::cache)?;
        Ok(true)
    }

    /// Every entry, by key, sorted: each read, or why it is damaged.
    pub fn list(&self) -> Result<Vec<Listed>, Error> {
        let read = std::fs::read_dir(&self.dir).map_err(|e| {
            Error::cache(format!(
                "cannot list the tuning cache `{}`: {e}",
                self.dir.display()
            ))
        })?;
        let mut keys: Vec<String> = read
            .filter_map(Result::ok)
            .filter_map(|e| {
                e.file_name()
                    .to_str()?
                    .strip_suffix(".json")
                    .map(str::to_string)
            })
            .collect();
        keys.sort();
        let mut out = Vec::new();
        for k in keys {
            let entry = match self.get(&k)? {
                Lookup::Hit(e, _) => Ok(e),
                Lookup::Damaged(why) => Err(why),
                // Removed since it was listed.
                Lookup::Miss => continue,
            };
            out.push((k, entry));
        }
        Ok(out)
    }
}

/// An entry's contents and options, or why they cannot be trusted.
fn parse_entry(bytes: &[u8]) -> Result<(Entry, kernel::Options), String> {
    let entry: Entry =
        serde_json::from_slice(bytes).map_err(|e| format!("not a tuning entry: {e}"))?;
    if entry.format != FORMAT {
        return Err(format!(
            "format `{}`, where this tessera reads `{FORMAT}`",
            entry.format
        ));
    }
    let options = kernel::parse_options(&entry.options).map_err(|e| format!("its options: {e}"))?;
    Ok((entry, options))
}
