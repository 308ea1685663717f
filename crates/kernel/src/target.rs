//! The target machine as data: what passes need to know about the CPU.
//!
//! A [`Target`] is probed from the running machine once ([`Target::probe`]),
//! written as text to a per-user cache file and read back from it on later
//! runs ([`Target::cached`]). A text file can also describe another machine
//! ([`Target::from_text`]), so passes can be tuned for a target that is not
//! the host.
//!
//! # Text form
//!
//! One `key = value` per line; blank lines and lines starting with `#` are
//! ignored:
//!
//! ```text
//! # tessera target machine description
//! name = AMD EPYC
//! cores = 2
//! vector_bits = 256
//! vector_registers = 16
//! fma_latency = 4
//! fma_pipes = 2
//! isa = avx avx2 fma
//! cache = L1 size=49152 line=64 shared=1
//! cache = L2 size=1048576 line=64 shared=1
//! ```
//!
//! `name`, `cores` and `vector_bits` are required and appear once; `isa`
//! (space-separated words, possibly none) appears at most once and defaults to
//! none; `vector_registers` (at most once) is the number of architectural
//! vector registers, the register model that sizes register-blocked tiles,
//! and defaults to what the isa implies ([`registers_of`]: 32 with
//! `avx512f` or `neon`, else 16); `fma_latency` (cycles) and `fma_pipes`
//! (vector multiply-adds issued per cycle), at most once each, default to
//! 4 and 2, what current x86 and Arm cores have; `cache` lines repeat, innermost first. A cache line is `L<level>`
//! followed by `size=`, `line=` and `shared=`, each exactly once; sizes may
//! carry a `K`, `M` or `G` suffix (powers of 1024). `peak_mflops` (at most
//! once) is the measured float32 matmul peak of all cores, for reports of
//! the fraction of peak a kernel reaches, and `bandwidth_mbps` (at most once)
//! the measured memory read bandwidth of all cores in MB/s, for the cost
//! estimate's memory side; neither is part of the target that compiled
//! kernels are keyed on ([`Target::codegen_text`]).
//!
//! Invariants: every target that [`Target::from_text`] accepts has at least
//! one core, a positive vector width, a non-empty single-line name, isa words
//! without whitespace, and caches whose levels are at least 1 and never decrease,
//! with positive sizes, power-of-two line sizes and at least one sharing
//! core. For such a target `from_text(&t.to_text()) == Ok(t)` exactly; probing
//! only produces such targets. Parsing never panics: every problem is an
//! error naming its line.

use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};

/// One cache level.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Cache {
    pub level: u32,
    pub size_bytes: u64,
    pub line_bytes: u64,
    /// How many cores share it.
    pub shared_by: u32,
}

/// A CPU: cores, vector width, instruction-set extensions and data caches.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Target {
    pub name: String,
    pub cores: u32,
    /// The widest vector registers, in bits (512 with AVX-512).
    pub vector_bits: u32,
    /// How many vector registers the instruction set names (32 `zmm` with
    /// AVX-512, 16 `ymm` with AVX2): the register model that bounds how
    /// many accumulators a register-blocked kernel keeps.
    pub vector_registers: u32,
    /// Cycles from a vector multiply-add's issue to its result.
    pub fma_latency: u32,
    /// Vector multiply-adds the core issues per cycle. A reduction keeps
    /// the units busy with `fma_latency * fma_pipes` independent
    /// accumulators in flight.
    pub fma_pipes: u32,
    /// Instruction-set extensions (`avx2`, `avx512f`, `fma`, ...).
    pub isa: Vec<String>,
    /// Data caches, innermost first.
    pub caches: Vec<Cache>,
    /// The measured float32 matmul peak of all cores, in MFLOP/s (measured
    /// once with the matmul library; `None` until then).
    pub peak_mflops: Option<u64>,
    /// Measured read bandwidth of all cores, MB/s.
    pub bandwidth_mbps: Option<u64>,
}

/// The multiply-add latency and issue width of current x86 (Zen 4,
/// Skylake-X and later) and Arm cores, where the text does not say.
const FMA_LATENCY: u32 = 4;
const FMA_PIPES: u32 = 2;

/// The file name of the cached target inside the cache directory.
const CACHE_FILE: &str = "target.txt";

/// Where Linux describes cpu0's caches, one `index<N>` directory per cache.
const SYS_CACHE_DIR: &str = "/sys/devices/system/cpu/cpu0/cache";

impl Target {
    /// A small generic target for tests: 2 cores, 256-bit vectors, 32 KiB
    /// L1 and 1 MiB L2 with 64-byte lines.
    pub fn generic() -> Target {
        Target {
            name: "generic".to_string(),
            cores: 2,
            vector_bits: 256,
            vector_registers: 16,
            fma_latency: FMA_LATENCY,
            fma_pipes: FMA_PIPES,
            isa: vec!["avx2".to_string(), "fma".to_string()],
            caches: generic_caches(),
            peak_mflops: None,
            bandwidth_mbps: None,
        }
    }

    /// Reads the running machine.
    ///
    /// Cores come from [`std::thread::available_parallelism`] (which honours
    /// affinity masks and cgroup quotas), else from
    /// `/sys/devices/system/cpu/online`. Data and unified caches come from
    /// cpu0's `/sys/devices/system/cpu/cpu0/cache/index*`; instruction
    /// caches are skipped. ISA extensions come from runtime feature
    /// detection on x86-64 (and `neon` on AArch64); the vector width is 512
    /// bits with `avx512f`, 256 with `avx`, 128 otherwise. The name is the
    /// `model name` of `/proc/cpuinfo`, else `cpu`.
    ///
    /// Fallback: where the sysfs cache directory is missing or lists no
    /// data cache, the caches are the [`Target::generic`] ones (32 KiB L1,
    /// 1 MiB L2, 64-byte lines, not shared). Nothing else is defaulted: a
    /// cache entry that is present but unreadable or malformed is an error
    /// naming its file, and so is a machine whose core count cannot be read.
    pub fn probe() -> Result<Target, String> {
        let cores = probe_cores()?;
        let caches = match probe_caches(Path::new(SYS_CACHE_DIR))? {
            caches if caches.is_empty() => generic_caches(),
            caches => caches,
        };
        let isa = probe_isa();
        let vector_bits = if isa.iter().any(|f| f == "avx512f") {
            512
        } else if isa.iter().any(|f| f == "avx" || f == "avx2") {
            256
        } else {
            128
        };
        Ok(Target {
            name: probe_name(),
            cores,
            vector_bits,
            vector_registers: registers_of(&isa),
            fma_latency: FMA_LATENCY,
            fma_pipes: FMA_PIPES,
            isa,
            caches,
            peak_mflops: None,
            bandwidth_mbps: None,
        })
    }

    /// The text form (see the module doc); [`Target::from_text`] reads it
    /// back exactly.
    pub fn to_text(&self) -> String {
        let mut out = String::from("# tessera target machine description\n");
        out.push_str(&format!("name = {}\n", self.name));
        out.push_str(&format!("cores = {}\n", self.cores));
        out.push_str(&format!("vector_bits = {}\n", self.vector_bits));
        out.push_str(&format!("vector_registers = {}\n", self.vector_registers));
        out.push_str(&format!("fma_latency = {}\n", self.fma_latency));
        out.push_str(&format!("fma_pipes = {}\n", self.fma_pipes));
        if self.isa.is_empty() {
            out.push_str("isa =\n");
        } else {
            out.push_str(&format!("isa = {}\n", self.isa.join(" ")));
        }
        for c in &self.caches {
            out.push_str(&format!(
                "cache = L{} size={} line={} shared={}\n",
                c.level, c.size_bytes, c.line_bytes, c.shared_by
            ));
        }
        if let Some(p) = self.peak_mflops {
            out.push_str(&format!("peak_mflops = {p}\n"));
        }
        if let Some(b) = self.bandwidth_mbps {
            out.push_str(&format!("bandwidth_mbps = {b}\n"));
        }
        out
    }

    /// The text form without the measured peak and bandwidth: what
    /// generated code depends on.
    pub fn codegen_text(&self) -> String {
        Target {
            peak_mflops: None,
            bandwidth_mbps: None,
            ..self.clone()
        }
        .to_text()
    }

    /// Parses the text form. Errors read `line N: problem`; a missing
    /// required key is reported without a line.
    pub fn from_text(text: &str) -> Result<Target, String> {
        let mut name: Option<(usize, String)> = None;
        let mut cores: Option<(usize, u32)> = None;
        let mut vector_bits: Option<(usize, u32)> = None;
        let mut vector_registers: Option<(usize, u32)> = None;
        let mut fma_latency: Option<(usize, u32)> = None;
        let mut fma_pipes: Option<(usize, u32)> = None;
        let mut isa: Option<(usize, Vec<String>)> = None;
        let mut caches: Vec<Cache> = Vec::new();
        let mut peak_mflops: Option<(usize, u64)> = None;
        let mut bandwidth_mbps: Option<(usize, u64)> = None;
        for (i, raw) in text.lines().enumerate() {
            let n = i + 1;
            let line = raw.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let err = |msg: String| format!("line {n}: {msg}");
            let Some((key, value)) = line.split_once('=') else {
                return Err(err(format!("expected `key = value`, found `{line}`")));
            };
            let (key, value) = (key.trim(), value.trim());
            let first = match key {
                "name" => name.as_ref().map(|p| p.0),
                "cores" => cores.as_ref().map(|p| p.0),
                "vector_bits" => vector_bits.as_ref().map(|p| p.0),
                "vector_registers" => vector_registers.as_ref().map(|p| p.0),
                "fma_latency" => fma_latency.as_ref().map(|p| p.0),
                "fma_pipes" => fma_pipes.as_ref().map(|p| p.0),
                "isa" => isa.as_ref().map(|p| p.0),
                "peak_mflops" => peak_mflops.as_ref().map(|p| p.0),
                "bandwidth_mbps" => bandwidth_mbps.as_ref().map(|p| p.0),
                "cache" => None,
                _ => {
                    return Err(err(format!(
                        "unknown key `{key}` (expected name, cores, vector_bits, vector_registers, fma_latency, fma_pipes, isa, cache, peak_mflops or bandwidth_mbps)"
                    )))
                }
            };
            if let Some(first) = first {
                return Err(err(format!(
                    "duplicate `{key}` (first given on line {first})"
                )));
            }
            match key {
                "name" if value.is_empty() => return Err(err("empty `name`".to_string())),
                "name" => name = Some((n, value.to_string())),
                "cores" => cores = Some((n, positive(value, "cores").map_err(err)?)),
                "vector_bits" => {
                    vector_bits = Some((n, positive(value, "vector_bits").map_err(err)?));
                }
                "vector_registers" => {
                    let r = positive(value, "vector_registers").map_err(err)?;
                    vector_registers = Some((n, r));
                }
                "fma_latency" => {
                    fma_latency = Some((n, positive(value, "fma_latency").map_err(err)?))
                }
                "fma_pipes" => fma_pipes = Some((n, positive(value, "fma_pipes").map_err(err)?)),
                "isa" => isa = Some((n, value.split_whitespace().map(String::from).collect())),
                "peak_mflops" => {
                    let p = positive(value, "peak_mflops").map_err(err)?;
                    peak_mflops = Some((n, u64::from(p)));
                }
                "bandwidth_mbps" => {
                    let b = positive(value, "bandwidth_mbps").map_err(err)?;
                    bandwidth_mbps = Some((n, u64::from(b)));
                }
                _ => {
                    let cache = parse_cache(value).map_err(err)?;
                    let prev = caches.last().map_or(1, |c| c.level);
                    if cache.level < prev {
                        return Err(err(format!(
                            "cache level L{} after L{prev}: caches go innermost first",
                            cache.level
                        )));
                    }
                    caches.push(cache);
                }
            }
        }
        let missing = |key: &str| format!("missing `{key}`");
        let isa = isa.map(|p| p.1).unwrap_or_default();
        Ok(Target {
            name: name.ok_or_else(|| missing("name"))?.1,
            cores: cores.ok_or_else(|| missing("cores"))?.1,
            vector_bits: vector_bits.ok_or_else(|| missing("vector_bits"))?.1,
            vector_registers: vector_registers.map_or_else(|| registers_of(&isa), |p| p.1),
            fma_latency: fma_latency.map_or(FMA_LATENCY, |p| p.1),
            fma_pipes: fma_pipes.map_or(FMA_PIPES, |p| p.1),
            isa,
            caches,
            peak_mflops: peak_mflops.map(|p| p.1),
            bandwidth_mbps: bandwidth_mbps.map(|p| p.1),
        })
    }

    /// The cache file: `target.txt` in [`cache_dir`].
    pub fn cache_path() -> Result<PathBuf, String> {
        Ok(cache_dir()?.join(CACHE_FILE))
    }

    /// This machine's target, from the cache file ([`Target::cache_path`])
    /// when it holds a valid target, else probed and written there.
    pub fn cached() -> Result<Target, String> {
        Target::cached_at(&Target::cache_path()?)
    }

    /// [`Target::cached`] with the cache file `path`: a valid file is read
    /// back; a missing, unreadable or corrupt one is replaced by a fresh
    /// probe. The cache is trusted as is: a file copied from another machine
    /// is not noticed (`tessera target --probe` refreshes it).
    pub fn cached_at(path: &Path) -> Result<Target, String> {
        if let Ok(text) = fs::read_to_string(path) {
            if let Ok(t) = Target::from_text(&text) {
                return Ok(t);
            }
        }
        Target::refresh_at(path)
    }

    /// Probes this machine and writes the result to the cache file `path`
    /// (its directories are created; the text goes to a temporary file in
    /// the same directory that is then renamed, so readers never see half a
    /// file).
    pub fn refresh_at(path: &Path) -> Result<Target, String> {
        let t = Target::probe()?;
        write_atomically(path, &t.to_text())?;
        Ok(t)
    }
}

/// The vector registers an instruction set names: 32 with AVX-512
/// (`zmm0`–`zmm31`) or NEON (`v0`–`v31`), else 16 (SSE's and AVX's
/// `xmm`/`ymm0`–`15`).
fn registers_of(isa: &[String]) -> u32 {
    if isa.iter().any(|f| f == "avx512f" || f == "neon") {
        32
    } else {
        16
    }
}

/// The caches of [`Target::generic`], also the probe's fallback.
fn generic_caches() -> Vec<Cache> {
    vec![
        Cache {
            level: 1,
            size_bytes: 32 << 10,
            line_bytes: 64,
            shared_by: 1,
        },
        Cache {
            level: 2,
            size_bytes: 1 << 20,
            line_bytes: 64,
            shared_by: 1,
        },
    ]
}

/// A decimal integer of at least 1, for the field `what`.
fn positive(value: &str, what: &str) -> Result<u32, String> {
    match value.parse::<u32>() {
        Ok(v) if v >= 1 => Ok(v),
        _ => Err(format!(
            "`{what}` must be a whole number of at least 1, found `{value}`"
        )),
    }
}

/// A size in bytes: a decimal number with an optional `K`, `M` or `G`
/// suffix (powers of 1024), as sysfs writes `size`. Zero and overflow are
/// errors.
fn parse_size(s: &str) -> Result<u64, String> {
    let bad = || format!("bad size `{s}` (expected bytes, optionally with K, M or G)");
    let (digits, shift) = match s.as_bytes().last() {
        Some(b'K') => (&s[..s.len() - 1], 10),
        Some(b'M') => (&s[..s.len() - 1], 20),
        Some(b'G') => (&s[..s.len() - 1], 30),
        _ => (s, 0),
    };
    if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
        return Err(bad());
    }
    let n: u64 = digits.parse().map_err(|_| bad())?;
    let bytes = n.checked_mul(1 << shift).ok_or_else(bad)?;
    if bytes == 0 {
        return Err(format!("cache size must be positive, found `{s}`"));
    }
    Ok(bytes)
}

/// The value of a `cache` line: `L<level> size=S line=B shared=C`.
fn parse_cache(value: &str) -> Result<Cache, String> {
    let mut words = value.split_whitespace();
    let level = words
        .next()
        .and_then(|w| w.strip_prefix('L'))
        .and_then(|l| l.parse::<u32>().ok())
        .filter(|&l| l >= 1)
        .ok_or_else(|| {
            format!("a cache starts with its level (`L1`, `L2`, ...), found `{value}`")
        })?;
    let (mut size, mut line, mut shared) = (None, None, None);
    for w in words {
        let Some((k, v)) = w.split_once('=') else {
            return Err(format!("expected `field=value` in a cache, found `{w}`"));
        };
        let slot_taken = match k {
            "size" => size.replace(parse_size(v)?).is_some(),
            "line" => {
                let b = parse_size(v)?;
                if !b.is_power_of_two() {
                    return Err(format!("cache line size {b} is not a power of two"));
                }
                line.replace(b).is_some()
            }
            "shared" => shared.replace(positive(v, "shared")?).is_some(),
            _ => {
                return Err(format!(
                    "unknown cache field `{k}` (expected size, line or shared)"
                ))
            }
        };
        if slot_taken {
            return Err(format!("duplicate cache field `{k}`"));
        }
    }
    let missing = |k: &str| format!("cache L{level} has no `{k}=`");
    Ok(Cache {
        level,
        size_bytes: size.ok_or_else(|| missing("size"))?,
        line_bytes: line.ok_or_else(|| missing("line"))?,
        shared_by: shared.ok_or_else(|| missing("shared"))?,
    })
}

/// How many CPUs a sysfs CPU list such as `0-1,4` names.
fn count_cpu_list(list: &str) -> Option<u32> {
    let mut count: u32 = 0;
    for part in list.trim().split(',').filter(|p| !p.is_empty()) {
        let n = match part.split_once('-') {
            Some((a, b)) => {
                let (a, b) = (a.parse::<u32>().ok()?, b.parse::<u32>().ok()?);
                b.checked_sub(a)?.checked_add(1)?
            }
            None => {
                part.parse::<u32>().ok()?;
                1
            }
        };
        count = count.checked_add(n)?;
    }
    (count >= 1).then_some(count)
}

/// The usable core count (see [`Target::probe`]).
fn probe_cores() -> Result<u32, String> {
    if let Ok(n) = std::thread::available_parallelism() {
        return Ok(u32::try_from(n.get()).unwrap_or(u32::MAX));
    }
    let online = "/sys/devices/system/cpu/online";
    fs::read_to_string(online)
        .ok()
        .and_then(|s| count_cpu_list(&s))
        .ok_or_else(|| format!("cannot count cores: no available_parallelism and no `{online}`"))
}

/// The data and unified caches listed under `dir` (sysfs layout), sorted
/// innermost first; empty when `dir` does not exist.
fn probe_caches(dir: &Path) -> Result<Vec<Cache>, String> {
    let Ok(entries) = fs::read_dir(dir) else {
        return Ok(Vec::new());
    };
    let mut indexed: Vec<(u32, PathBuf)> = entries
        .filter_map(Result::ok)
        .filter_map(|e| {
            let name = e.file_name().into_string().ok()?;
            let n = name.strip_prefix("index")?.parse::<u32>().ok()?;
            Some((n, e.path()))
        })
        .collect();
    indexed.sort();
    let mut caches = Vec::new();
    for (_, entry) in indexed {
        let read = |f: &str| {
            let p = entry.join(f);
            fs::read_to_string(&p)
                .map(|s| s.trim().to_string())
                .map_err(|e| format!("cannot read `{}`: {e}", p.display()))
        };
        let bad = |f: &str, v: &str| format!("unexpected `{v}` in `{}`", entry.join(f).display());
        if read("type")? == "Instruction" {
            continue;
        }
        let level = read("level")?;
        let level = level
            .parse::<u32>()
            .ok()
            .filter(|&l| l >= 1)
            .ok_or_else(|| bad("level", &level))?;
        let size = read("size")?;
        let size_bytes = parse_size(&size).map_err(|_| bad("size", &size))?;
        let line = read("coherency_line_size")?;
        let line_bytes = line
            .parse::<u64>()
            .ok()
            .filter(|b| b.is_power_of_two())
            .ok_or_else(|| bad("coherency_line_size", &line))?;
        let list = read("shared_cpu_list")?;
        let shared_by = count_cpu_list(&list).ok_or_else(|| bad("shared_cpu_list", &list))?;
        caches.push(Cache {
            level,
            size_bytes,
            line_bytes,
            shared_by,
        });
    }
    caches.sort_by_key(|c| c.level);
    Ok(caches)
}

/// The ISA extensions this CPU has, in a fixed order.
fn probe_isa() -> Vec<String> {
    // On architectures without detection below, nothing is ever pushed.
    #[allow(unused_mut)]
    let mut isa: Vec<&str> = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        macro_rules! detect {
            ($($f:tt),*) => {
                $(if std::arch::is_x86_feature_detected!($f) {
                    isa.push($f);
                })*
            };
        }
        detect!(
            "sse4.1",
            "sse4.2",
            "popcnt",
            "bmi1",
            "bmi2",
            "f16c",
            "fma",
            "avx",
            "avx2",
            "avx512f",
            "avx512cd",
            "avx512bw",
            "avx512dq",
            "avx512vl",
            "avx512ifma",
            "avx512vbmi",
            "avx512vnni",
            "avx512bf16"
        );
    }
    #[cfg(target_arch = "aarch64")]
    {
        if std::arch::is_aarch64_feature_detected!("neon") {
            isa.push("neon");
        }
    }
    isa.into_iter().map(String::from).collect()
}

/// The CPU model from `/proc/cpuinfo`, whitespace collapsed to single
/// spaces; `cpu` when there is none.
fn probe_name() -> String {
    let model = fs::read_to_string("/proc/cpuinfo").ok().and_then(|info| {
        info.lines().find_map(|l| {
            let (k, v) = l.split_once(':')?;
            (k.trim() == "model name").then(|| v.split_whitespace().collect::<Vec<_>>().join(" "))
        })
    });
    model
        .filter(|m| !m.is_empty())
        .unwrap_or_else(|| "cpu".to_string())
}

/// Writes `text` to `path` through a uniquely named temporary file in the
/// same directory, then renames it over `path`.
fn write_atomically(path: &Path, text: &str) -> Result<(), String> {
    static SERIAL: AtomicU64 = AtomicU64::new(0);
    let shown = path.display();
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        fs::create_dir_all(dir).map_err(|e| format!("cannot create `{}`: {e}", dir.display()))?;
    }
    let serial = SERIAL.fetch_add(1, Ordering::Relaxed);
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(format!(".{}.{serial}.tmp", std::process::id()));
    let tmp = PathBuf::from(tmp);
    fs::write(&tmp, text).map_err(|e| format!("cannot write `{}`: {e}", tmp.display()))?;
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        format!("cannot replace `{shown}`: {e}")
    })
}

/// tessera's cache directory: `$TESSERA_CACHE_DIR`, else
/// `$XDG_CACHE_HOME/tessera`, else `$HOME/.cache/tessera` (empty variables
/// count as unset). It may not exist yet.
pub fn cache_dir() -> Result<PathBuf, String> {
    let var = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty());
    let dir = if let Some(d) = var("TESSERA_CACHE_DIR") {
        PathBuf::from(d)
    } else if let Some(d) = var("XDG_CACHE_HOME") {
        PathBuf::from(d).join("tessera")
    } else if let Some(d) = var("HOME") {
        PathBuf::from(d).join(".cache").join("tessera")
    } else {
        return Err(
            "no cache directory: set TESSERA_CACHE_DIR, XDG_CACHE_HOME or HOME".to_string(),
        );
    };
    Ok(dir)
}
