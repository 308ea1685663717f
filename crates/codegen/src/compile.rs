//! The compiler driver: finds the system C compiler and turns one C source
//! into a shared object.
//!
//! The compiler is `$CC` when set, else `cc`; its identity (the path it
//! resolves to and the first line of `--version`) is part of every cache
//! key, so a compiler upgrade never reuses objects built by the old one.
//! The flags are fixed: `-O3 -march=native` for speed, `-fPIC -shared` for a
//! loadable object, and `-fno-math-errno -fno-trapping-math` so that the
//! compiler may vectorize math without `-ffast-math`, which would reorder
//! float operations and make results differ from the interpreter's.
//!
//! Guarantees: [`Compiler::compile`] either writes the object at the path
//! it was given or returns an error carrying the compiler's messages; it
//! never leaves a partial object at that path (the compiler writes to a
//! temporary name that is renamed into place).

use std::path::{Path, PathBuf};
use std::process::Command;

/// The flags every kernel is compiled with.
pub const FLAGS: &[&str] = &[
    "-O3",
    "-march=native",
    "-fPIC",
    "-shared",
    "-fno-math-errno",
    "-fno-trapping-math",
    "-std=c11",
];

/// Why a compilation failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CompileError(pub String);

impl std::fmt::Display for CompileError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CompileError {}

/// The system C compiler and how it is called.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Compiler {
    /// The command (`$CC` or `cc`), as it is run.
    pub command: PathBuf,
    /// The first line of `command --version`.
    pub version: String,
    pub flags: Vec<String>,
}

impl Compiler {
    /// Finds the compiler (`$CC`, else `cc`) and asks its version.
    pub fn detect() -> Result<Compiler, CompileError> {
        let command = std::env::var_os("CC")
            .filter(|c| !c.is_empty())
            .map_or_else(|| PathBuf::from("cc"), PathBuf::from);
        let out = Command::new(&command)
            .arg("--version")
            .output()
            .map_err(|e| {
                CompileError(format!(
                    "cannot run the C compiler `{}` ({e}); install gcc or set CC",
                    command.display()
                ))
            })?;
        if !out.status.success() {
            return Err(CompileError(format!(
                "`{} --version` failed: {}",
                command.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        let version = String::from_utf8_lossy(&out.stdout)
            .lines()
            .next()
            .unwrap_or("")
            .trim()
            .to_string();
        Ok(Compiler {
            command,
            version,
            flags: FLAGS.iter().map(|f| f.to_string()).collect(),
        })
    }

    /// What identifies this compiler and its flags in a cache key.
    pub fn identity(&self) -> String {
        format!(
            "{}\n{}\n{}",
            self.command.display(),
            self.version,
            self.flags.join(" ")
        )
    }

    /// Compiles `source` into the shared object `object`. The C file is
    /// written beside it (kept, for reading), and the object appears at
    /// `object` only when the compiler succeeded.
    pub fn compile(&self, source: &str, object: &Path) -> Result<(), CompileError> {
        let c_file = object.with_extension("c");
        let partial = object.with_extension(format!("{}.partial", std::process::id()));
        std::fs::write(&c_file, source)
            .map_err(|e| CompileError(format!("cannot write `{}`: {e}", c_file.display())))?;
        let out = Command::new(&self.command)
            .args(&self.flags)
            .arg("-o")
            .arg(&partial)
            .arg(&c_file)
            .arg("-lm")
            .output()
            .map_err(|e| CompileError(format!("cannot run `{}`: {e}", self.command.display())))?;
        if !out.status.success() {
            let _ = std::fs::remove_file(&partial);
            return Err(CompileError(format!(
                "the C compiler rejected `{}`:\n{}",
                c_file.display(),
                String::from_utf8_lossy(&out.stderr).trim()
            )));
        }
        std::fs::rename(&partial, object).map_err(|e| {
            CompileError(format!(
                "cannot move the compiled object to `{}`: {e}",
                object.display()
            ))
        })
    }
}
