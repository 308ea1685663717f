//! The compiled-kernel cache: C sources in, loaded shared objects out, each
//! compiled at most once per machine and loaded at most once per cache.
//!
//! **Keys.** A kernel's key is the hex SHA-256 of its C source, the
//! compiler's identity ([`Compiler::identity`]: the command, the first line
//! of its `--version` and the flags) together with the path the command
//! resolves to on `$PATH` (symbolic links followed), and the target text the
//! caller passes (`kernel::Target::to_text`). Each part is hashed with its
//! length in front, so no two different tuples share a key.
//!
//! **Layout.** The default directory is `kernel::cache_dir()/kernels`
//! ([`default_dir`]). An entry is three files named after its key:
//! `KEY.so` (the object), `KEY.c` (its source, kept for reading) and
//! `KEY.ok`, a sidecar holding the hex SHA-256 of the `.so` bytes that is
//! written last. Beside them, `KEY.lock` is the key's lock file; names with
//! `.tmp-` or `.load-` in them are scratch files of a build or a load in
//! progress (or left by a process that crashed; [`clear`] removes them).
//!
//! **Validity.** An entry counts only when `KEY.ok` exists and equals the
//! hash of the bytes of `KEY.so`, checked every time the object is loaded
//! from disk and before it is handed to the dynamic loader. A missing,
//! truncated or corrupted `.so`, a missing or damaged `.ok`, and an object
//! whose headers reach past its end (a truncated object given a matching
//! `.ok`; `elf.rs`) all read as "no entry", and the kernel is rebuilt; the loader never sees a file that
//! was not written whole by a successful compile.
//!
//! **Writing.** A build compiles into scratch names unique to the process
//! and the call (`KEY.tmp-PID-N.so` and `.c`), hashes the object, renames
//! the source and then the object into place and writes `KEY.ok` last
//! (through a scratch file and a rename too). Scratch files are removed on
//! every failure, so a source the compiler rejects leaves no entry behind.
//!
//! **Locking.** Every load from disk and every build of a key happens under
//! an exclusive lock on `KEY.lock` (`File::lock`, an `flock` on Linux). The
//! lock is taken per open file, so it excludes threads of one process as
//! well as other processes: under it a caller checks the entry and builds
//! it only when it is not valid, so concurrent processes never compile the
//! same kernel twice nor load a half-written one. Lock files are never
//! removed while kernels are in use; [`clear`] removes them under their
//! lock, and a process that was already waiting on a removed lock may then
//! build once more beside another — a wasted compile, never a torn load,
//! because each build writes its own scratch files and a `.ok` that does not
//! match its `.so` only causes a rebuild.
//!
//! **In-process map.** A [`KernelCache`] keeps the libraries it loaded: a
//! second request for a key returns the same `Arc<libloading::Library>`
//! without touching the disk. The dynamic loader also keys loaded objects
//! by path: opening a path that the process already opened returns the old
//! object even when the file was replaced since (a rebuilt entry, or a
//! second `KernelCache` on the same directory after corruption). So a
//! `KEY.so` path is opened directly only the first time in a process; later
//! loads go through a fresh hard link (`KEY.load-PID-N.so`, a copy where the
//! file system has no hard links) that is removed as soon as it is open.
//!
//! **Parallel builds.** [`KernelCache::get_all`] takes all the kernels of a
//! program and builds the missing ones concurrently on scoped std threads,
//! at most as many at a time as the machine has cores.
//!
//! **Counters.** [`KernelCache::counters`] says how many requests compiled,
//! hit the disk or hit the in-process map, so callers can tell a cold start
//! from a warm one.
//!
//! **Shared helpers.** [`hash_parts`], [`lock_key`], [`write_atomically`]
//! and [`read_if_present`] are public so that the engine's cache of
//! measured times keys, locks and writes its entries by the same rules.
//!
//! **CLI.** `tessera cache stats` is [`stats`] on [`default_dir`] (entries
//! and bytes), `tessera cache clear` is [`clear`] on it (the number of
//! entries removed); neither needs a C compiler.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fs::{self, File, OpenOptions};
use std::io::ErrorKind;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use libloading::Library;
use sha2::{Digest, Sha256};

use crate::compile::Compiler;

/// Versions the key and the entry layout: changing either changes this, so
/// old entries are simply never found again.
const KEY_VERSION: &str = "tessera compiled-kernel cache 1";

/// Why the cache could not deliver a kernel or read its directory.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum CacheError {
    /// A file or directory of the cache could not be read, written, locked
    /// or found; the message names it.
    Io(String),
    /// The C compiler could not be run or rejected the source; the message
    /// names the kernel's key and carries the compiler's own messages.
    Compile(String),
    /// The dynamic loader refused a compiled object; the message names it.
    Load(String),
}

impl std::fmt::Display for CacheError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheError::Io(m) | CacheError::Compile(m) | CacheError::Load(m) => f.write_str(m),
        }
    }
}

impl std::error::Error for CacheError {}

/// What the requests to one [`KernelCache`] did so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheCounters {
    /// Requests that compiled their kernel (a source the compiler rejects
    /// is an error, not counted here).
    pub compiles: u64,
    /// Requests served by a valid entry on disk.
    pub disk_hits: u64,
    /// Requests served by the in-process map.
    pub memory_hits: u64,
}

/// The size of a cache directory.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// Keys that have an object (`KEY.so`) in the directory.
    pub entries: usize,
    /// The bytes of all the cache's files in the directory (objects,
    /// sources, sidecars and scratch files).
    pub bytes: u64,
}

/// A cache directory, the compiler that fills it, and the libraries this
/// cache loaded.
#[derive(Debug)]
pub struct KernelCache {
    dir: PathBuf,
    compiler: Compiler,
    /// The compiler's part of every key, computed once.
    compiler_id: String,
    loaded: Mutex<HashMap<String, Arc<Library>>>,
    compiles: AtomicU64,
    disk_hits: AtomicU64,
    memory_hits: AtomicU64,
}

/// tessera's kernel cache directory: `kernels` in `kernel::cache_dir()`.
pub fn default_dir() -> Result<PathBuf, CacheError> {
    kernel::cache_dir()
        .map(|d| d.join("kernels"))
        .map_err(CacheError::Io)
}

impl KernelCache {
    /// A cache in `dir` (created if missing) that compiles with `compiler`.
    pub fn open(dir: PathBuf, compiler: Compiler) -> Result<KernelCache, CacheError> {
        fs::create_dir_all(&dir).map_err(|e| {
            CacheError::Io(format!(
                "cannot create the kernel cache `{}`: {e}",
                dir.display()
            ))
        })?;
        let compiler_id = format!(
            "{}\n{}",
            compiler.identity(),
            resolved_command(&compiler.command)
        );
        Ok(KernelCache {
            dir,
            compiler,
            compiler_id,
            loaded: Mutex::new(HashMap::new()),
            compiles: AtomicU64::new(0),
            disk_hits: AtomicU64::new(0),
            memory_hits: AtomicU64::new(0),
        })
    }

    /// The cache in [`default_dir`], compiling with [`Compiler::detect`].
    pub fn open_default() -> Result<KernelCache, CacheError> {
        let compiler = Compiler::detect().map_err(|e| CacheError::Compile(e.0))?;
        KernelCache::open(default_dir()?, compiler)
    }

    /// The directory this cache keeps its entries in.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// The compiler this cache builds with.
    pub fn compiler(&self) -> &Compiler {
        &self.compiler
    }

    /// The key of `source` compiled for `target_text`: 64 hex digits.
    pub fn key(&self, source: &str, target_text: &str) -> String {
        hash_parts(&[KEY_VERSION, source, &self.compiler_id, target_text])
    }

    /// The compiler's part of every key: its identity and the path its
    /// command resolves to.
    pub fn compiler_id(&self) -> &str {
        &self.compiler_id
    }

    /// The loaded kernel compiled from `source` for `target_text`: from the
    /// in-process map, else from a valid entry on disk, else compiled now.
    pub fn get(&self, source: &str, target_text: &str) -> Result<Arc<Library>, CacheError> {
        self.get_keyed(&self.key(source, target_text), source)
    }

    /// [`KernelCache::get`] for every source of a program, in order. The
    /// distinct kernels are fetched concurrently, at most as many at a time
    /// as the machine has cores; a source that appears twice is fetched
    /// once (the repeats count as memory hits).
    pub fn get_all(
        &self,
        sources: &[&str],
        target_text: &str,
    ) -> Vec<Result<Arc<Library>, CacheError>> {
        let keys: Vec<String> = sources.iter().map(|s| self.key(s, target_text)).collect();
        // `distinct` lists the first request of each key; `slot[i]` is the
        // position of request i's key in it.
        let mut distinct: Vec<usize> = Vec::new();
        let mut first_of: HashMap<&str, usize> = HashMap::new();
        let mut slot = Vec::with_capacity(sources.len());
        for (i, key) in keys.iter().enumerate() {
            let s = *first_of.entry(key).or_insert_with(|| {
                distinct.push(i);
                distinct.len() - 1
            });
            slot.push(s);
        }
        let fetch = |d: usize| self.get_keyed(&keys[distinct[d]], sources[distinct[d]]);
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let workers = cores.min(distinct.len());
        let fetched: Vec<Result<Arc<Library>, CacheError>> = if workers <= 1 {
            (0..distinct.len()).map(fetch).collect()
        } else {
            // Workers take the next kernel from a shared counter, so a slow
            // compile does not hold up the kernels queued behind it.
            let next = AtomicUsize::new(0);
            let mut done: Vec<(usize, Result<Arc<Library>, CacheError>)> =
                std::thread::scope(|scope| {
                    let handles: Vec<_> = (0..workers)
                        .map(|_| {
                            scope.spawn(|| {
                                let mut mine = Vec::new();
                                loop {
                                    let d = next.fetch_add(1, Ordering::Relaxed);
                                    if d >= distinct.len() {
                                        return mine;
                                    }
                                    mine.push((d, fetch(d)));
                                }
                            })
                        })
                        .collect();
                    handles
                        .into_iter()
                        .flat_map(|h| {
                            h.join()
                                .unwrap_or_else(|panic| std::panic::resume_unwind(panic))
                        })
                        .collect()
                });
            // Every index below `distinct.len()` was taken exactly once, so
            // sorting puts result d at position d.
            done.sort_by_key(|(d, _)| *d);
            done.into_iter().map(|(_, r)| r).collect()
        };
        let repeats = (sources.len() - distinct.len()) as u64;
        self.memory_hits.fetch_add(repeats, Ordering::Relaxed);
        slot.into_iter().map(|s| fetched[s].clone()).collect()
    }

    /// What the requests to this cache did so far.
    pub fn counters(&self) -> CacheCounters {
        CacheCounters {
            compiles: self.compiles.load(Ordering::Relaxed),
            disk_hits: self.disk_hits.load(Ordering::Relaxed),
            memory_hits: self.memory_hits.load(Ordering::Relaxed),
        }
    }

    /// The entries and bytes of this cache's directory ([`stats`]).
    pub fn stats(&self) -> Result<CacheStats, CacheError> {
        stats(&self.dir)
    }

    /// Removes every entry of this cache's directory ([`clear`]) and forgets
    /// the libraries this cache loaded (those still held elsewhere stay
    /// loaded), so the next request compiles. Returns the entries removed.
    pub fn clear(&self) -> Result<usize, CacheError> {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clear();
        clear(&self.dir)
    }

    fn get_keyed(&self, key: &str, source: &str) -> Result<Arc<Library>, CacheError> {
        if let Some(lib) = self.remembered(key) {
            self.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(lib);
        }
        let _lock = lock_key(&self.dir, key)?;
        // Another thread of this process may have loaded the kernel while
        // this one waited for the lock.
        if let Some(lib) = self.remembered(key) {
            self.memory_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(lib);
        }
        if let Some(lib) = self.load_valid(key)? {
            self.disk_hits.fetch_add(1, Ordering::Relaxed);
            return Ok(self.remember(key, lib));
        }
        self.build(key, source)?;
        self.compiles.fetch_add(1, Ordering::Relaxed);
        let lib = self.load_valid(key)?.ok_or_else(|| {
            CacheError::Io(format!(
                "kernel {key}: the entry just built in `{}` does not verify",
                self.dir.display()
            ))
        })?;
        Ok(self.remember(key, lib))
    }

    fn remembered(&self, key: &str) -> Option<Arc<Library>> {
        self.loaded
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(key)
            .cloned()
    }

    /// Keeps `lib` for `key`, unless another thread got there first: then
    /// its library is the one every caller shares, and `lib` is closed.
    fn remember(&self, key: &str, lib: Library) -> Arc<Library> {
        let mut loaded = self.loaded.lock().unwrap_or_else(PoisonError::into_inner);
        Arc::clone(
            loaded
                .entry(key.to_string())
                .or_insert_with(|| Arc::new(lib)),
        )
    }

    fn path(&self, key: &str, extension: &str) -> PathBuf {
        self.dir.join(format!("{key}.{extension}"))
    }

    /// Loads the entry of `key` if it is valid (its `.ok` matches its
    /// `.so`); `None` when it is missing or damaged. Called under the key's
    /// lock, so no build replaces the files between the check and the load.
    fn load_valid(&self, key: &str) -> Result<Option<Library>, CacheError> {
        let object = self.path(key, "so");
        let sidecar = self.path(key, "ok");
        let Some(expected) = read_if_present(&sidecar)? else {
            return Ok(None);
        };
        let Some(bytes) = read_if_present(&object)? else {
            return Ok(None);
        };
        if String::from_utf8_lossy(&expected).trim() != hex(&Sha256::digest(&bytes))
            || !crate::elf::complete(&bytes)
        {
            return Ok(None);
        }
        load_object(&object, key).map(Some)
    }

    /// Compiles `source` into the entry of `key`, replacing whatever damaged
    /// entry was there. Called under the key's lock.
    fn build(&self, key: &str, source: &str) -> Result<(), CacheError> {
        let object = self.path(key, "so");
        let c_file = self.path(key, "c");
        let sidecar = self.path(key, "ok");
        // The old files are not an entry (else there would be no build), and
        // removing them first means a failed build leaves none behind.
        for stale in [&sidecar, &object, &c_file] {
            remove_if_present(stale)?;
        }
        let stem = scratch_name(key, "tmp");
        let scratch = Scratch(vec![
            self.dir.join(format!("{stem}.so")),
            self.dir.join(format!("{stem}.c")),
        ]);
        let (tmp_object, tmp_c) = (&scratch.0[0], &scratch.0[1]);
        self.compiler
            .compile(source, tmp_object)
            .map_err(|e| CacheError::Compile(format!("kernel {key}: {e}")))?;
        let bytes = fs::read(tmp_object).map_err(|e| io_error("read", tmp_object, &e))?;
        let hash = hex(&Sha256::digest(&bytes));
        rename(tmp_c, &c_file)?;
        rename(tmp_object, &object)?;
        write_atomically(&sidecar, &format!("{hash}\n"))
    }
}

/// The entries and bytes of the cache directory `dir` (zero when it does
/// not exist). Only files named like the cache's own count.
pub fn stats(dir: &Path) -> Result<CacheStats, CacheError> {
    stats_of(dir, "so")
}

/// [`stats`] of a directory of keyed entries (the kernel cache's naming:
/// the engine's measured times and search results use it too) whose
/// entry file has extension `ext`.
pub fn stats_of(dir: &Path, ext: &str) -> Result<CacheStats, CacheError> {
    let mut stats = CacheStats::default();
    for (key, files) in files_by_key(dir)? {
        for file in &files {
            // A build in progress may rename a scratch file away meanwhile.
            match fs::metadata(file) {
                Ok(meta) => stats.bytes += meta.len(),
                Err(e) if e.kind() == ErrorKind::NotFound => {}
                Err(e) => return Err(io_error("read", file, &e)),
            }
        }
        if files.contains(&dir.join(format!("{key}.{ext}"))) {
            stats.entries += 1;
        }
    }
    Ok(stats)
}

/// Removes every file of the cache directory `dir` that is named like the
/// cache's own (entries, lock files, scratch files), each key's files under
/// its lock. Returns the number of entries (keys with an object) removed.
/// Files of kernels that are loaded stay mapped in their processes.
pub fn clear(dir: &Path) -> Result<usize, CacheError> {
    clear_of(dir, "so")
}

/// [`clear`] of a directory of keyed entries whose entry file has
/// extension `ext` (see [`stats_of`]).
pub fn clear_of(dir: &Path, ext: &str) -> Result<usize, CacheError> {
    let mut removed = 0;
    for (key, files) in files_by_key(dir)? {
        let lock_path = dir.join(format!("{key}.lock"));
        let lock = lock_key(dir, &key)?;
        if files.contains(&dir.join(format!("{key}.{ext}"))) {
            removed += 1;
        }
        for file in files.iter().filter(|f| **f != lock_path) {
            remove_if_present(file)?;
        }
        remove_if_present(&lock_path)?;
        drop(lock);
    }
    Ok(removed)
}

/// The cache's files in `dir`, grouped by the key their name starts with.
fn files_by_key(dir: &Path) -> Result<BTreeMap<String, Vec<PathBuf>>, CacheError> {
    let mut by_key: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    let entries = match fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(by_key),
        Err(e) => return Err(io_error("read", dir, &e)),
    };
    for entry in entries {
        let entry = entry.map_err(|e| io_error("read", dir, &e))?;
        let name = entry.file_name();
        let Some(key) = name.to_str().and_then(key_of) else {
            continue;
        };
        let is_file = entry
            .file_type()
            .map_err(|e| io_error("read", &entry.path(), &e))?
            .is_file();
        if is_file {
            by_key
                .entry(key.to_string())
                .or_default()
                .push(entry.path());
        }
    }
    Ok(by_key)
}

/// The key a cache file name starts with: 64 lowercase hex digits and a dot.
fn key_of(name: &str) -> Option<&str> {
    let key = name.get(..64)?;
    let is_key = key
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    (is_key && name[64..].starts_with('.')).then_some(key)
}

/// The hex SHA-256 of `parts`, each hashed with its length in front so that
/// no two different lists share a key: 64 lowercase hex digits.
pub fn hash_parts(parts: &[&str]) -> String {
    let mut hash = Sha256::new();
    for part in parts {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    hex(&hash.finalize())
}

/// Takes the exclusive lock of `key` in `dir` (the file `KEY.lock`); it is
/// released when the returned file is dropped.
pub fn lock_key(dir: &Path, key: &str) -> Result<File, CacheError> {
    let path = dir.join(format!("{key}.lock"));
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&path)
        .map_err(|e| io_error("open the lock file", &path, &e))?;
    file.lock().map_err(|e| io_error("lock", &path, &e))?;
    Ok(file)
}

/// Opens the object at `object` (the entry of `key`). The dynamic loader
/// would return a stale object for a path this process opened before, so
/// only the first open of a path uses it directly; later ones open a fresh
/// hard link to the same file, removed once it is open.
fn load_object(object: &Path, key: &str) -> Result<Library, CacheError> {
    // The dynamic loader's table of open paths is per process, and so is
    // this record of the paths opened directly.
    static OPENED: Mutex<BTreeSet<PathBuf>> = Mutex::new(BTreeSet::new());
    let first = OPENED
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .insert(object.to_path_buf());
    if first {
        return crate::load::open(object).map_err(CacheError::Load);
    }
    let link = object.with_file_name(format!("{}.so", scratch_name(key, "load")));
    let _scratch = Scratch(vec![link.clone()]);
    if fs::hard_link(object, &link).is_err() {
        fs::copy(object, &link).map_err(|e| io_error("copy the object to", &link, &e))?;
    }
    crate::load::open(&link).map_err(CacheError::Load)
}

/// The path the compiler command resolves to: itself when it names a path,
/// else the first match on `$PATH`, with symbolic links followed. When it
/// cannot be found the command is returned as it is (the compile will then
/// fail with its own message).
fn resolved_command(command: &Path) -> String {
    let found = if command.components().count() > 1 {
        Some(command.to_path_buf())
    } else {
        std::env::var_os("PATH").and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|d| d.join(command))
                .find(|c| c.is_file())
        })
    };
    found
        .and_then(|p| fs::canonicalize(p).ok())
        .unwrap_or_else(|| command.to_path_buf())
        .display()
        .to_string()
}

/// Files to remove when the scope ends, whatever happens in it; files that
/// were renamed away in the meantime are simply not found.
struct Scratch(Vec<PathBuf>);

impl Drop for Scratch {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = fs::remove_file(path);
        }
    }
}

/// A file name stem `KEY.WHAT-PID-N`, unique to this process and call.
fn scratch_name(key: &str, what: &str) -> String {
    format!("{key}.{}", unique_suffix(what))
}

/// `WHAT-PID-N`, where N counts the calls in this process, so no two calls
/// of any thread or process get the same.
fn unique_suffix(what: &str) -> String {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
    format!("{what}-{}-{serial}", std::process::id())
}

/// Writes `text` to `path` through a scratch file and a rename, so readers
/// see the old file or the whole new one.
pub fn write_atomically(path: &Path, text: &str) -> Result<(), CacheError> {
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}", unique_suffix("tmp")));
    let scratch = Scratch(vec![PathBuf::from(tmp)]);
    fs::write(&scratch.0[0], text).map_err(|e| io_error("write", &scratch.0[0], &e))?;
    rename(&scratch.0[0], path)
}

/// The bytes of `path`, or `None` when it does not exist.
pub fn read_if_present(path: &Path) -> Result<Option<Vec<u8>>, CacheError> {
    match fs::read(path) {
        Ok(bytes) => Ok(Some(bytes)),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io_error("read", path, &e)),
    }
}

fn remove_if_present(path: &Path) -> Result<(), CacheError> {
    match fs::remove_file(path) {
        Err(e) if e.kind() != ErrorKind::NotFound => Err(io_error("remove", path, &e)),
        _ => Ok(()),
    }
}

fn rename(from: &Path, to: &Path) -> Result<(), CacheError> {
    fs::rename(from, to).map_err(|e| {
        CacheError::Io(format!(
            "cannot move `{}` to `{}`: {e}",
            from.display(),
            to.display()
        ))
    })
}

fn io_error(what: &str, path: &Path, e: &std::io::Error) -> CacheError {
    CacheError::Io(format!("cannot {what} `{}`: {e}", path.display()))
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
