//! The disk cache of measured times: one entry per key, `KEY.time` holding
//! the median in nanoseconds, in `costs` beside the kernel cache's
//! `kernels` in `kernel::cache_dir()`.
//!
//! The rules are the kernel cache's (`codegen::cache`), through its
//! helpers: keys are hex SHA-256 over length-prefixed parts; an entry is
//! written to a scratch file and renamed into place, so readers see no
//! entry or a whole one; a key's work (check, measure, write) happens under
//! an exclusive lock on `KEY.lock`, so two processes never measure the same
//! program at once (which would also disturb both measurements). An entry
//! that does not parse reads as no entry and is measured again.

use std::path::PathBuf;
use std::time::Duration;

use codegen::cache::{lock_key, read_if_present, write_atomically};

use crate::Error;

/// A directory of measured times.
#[derive(Clone, Debug)]
pub struct Store {
    dir: PathBuf,
}

impl Store {
    /// The store in `dir`, created if missing.
    pub fn open(dir: PathBuf) -> Result<Store, Error> {
        std::fs::create_dir_all(&dir).map_err(|e| {
            Error::Environment(format!(
                "cannot create the cost cache `{}`: {e}",
                dir.display()
            ))
        })?;
        Ok(Store { dir })
    }

    /// tessera's per-user store: `costs` in `kernel::cache_dir()`.
    pub fn default_dir() -> Result<PathBuf, Error> {
        kernel::cache_dir()
            .map(|d| d.join("costs"))
            .map_err(Error::Environment)
    }

    /// The time stored for `key`, else the one `measure` gives, stored
    /// before it is returned. Runs under the key's lock.
    pub fn get_or_measure(
        &self,
        key: &str,
        measure: impl FnOnce() -> Result<Duration, Error>,
    ) -> Result<Duration, Error> {
        let env = Error::cache;
        let _lock = lock_key(&self.dir, key).map_err(env)?;
        let path = self.dir.join(format!("{key}.time"));
        if let Some(bytes) = read_if_present(&path).map_err(env)? {
            if let Some(t) = parse_entry(&bytes) {
                return Ok(t);
            }
        }
        let t = measure()?;
        write_atomically(&path, &format!("{}\n", t.as_nanos())).map_err(env)?;
        Ok(t)
    }
}

/// An entry's time: a whole number of nanoseconds and a newline.
fn parse_entry(bytes: &[u8]) -> Option<Duration> {
    let text = std::str::from_utf8(bytes).ok()?.strip_suffix('\n')?;
    text.parse::<u64>().ok().map(Duration::from_nanos)
}
