//! Notes: what the engine did that a caller may want to tell its user
//! (random inputs it made, a def it ran on the interpreter instead of
//! compiling, files it wrote). The engine never prints them; `Display` is
//! the line a command-line caller prints on standard error.

use std::fmt;
use std::path::PathBuf;

use ir::DType;

/// One thing worth telling the user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Note {
    /// Input `name` was not given and is seeded random values.
    RandomInput {
        name: String,
        dtype: DType,
        shape: Vec<usize>,
        seed: u64,
    },
    /// Lowering does not handle `def` yet, so the interpreter ran it.
    NotCompiled { def: String, reason: String },
    /// A file of generated code was written.
    Wrote(PathBuf),
}

impl fmt::Display for Note {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Note::RandomInput {
                name,
                dtype,
                shape,
                seed,
            } => write!(
                f,
                "note: input `{name}` is random {dtype}({}), seed {seed}",
                join(shape)
            ),
            Note::NotCompiled { def, reason } => write!(
                f,
                "note: `{def}` is not compiled yet ({reason}); running the interpreter"
            ),
            Note::Wrote(path) => write!(f, "note: wrote {}", path.display()),
        }
    }
}

/// A shape as `2, 3, 4`.
pub fn join(shape: &[usize]) -> String {
    shape
        .iter()
        .map(|d| d.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}
