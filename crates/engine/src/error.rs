//! The engine's one error type. Each variant says what kind of problem it
//! is, so callers decide on the variant (fall back, re-run, report) and
//! never on the message text; its `Display` is the whole message a
//! command-line caller prints, starting with `error:`.

use std::fmt;

/// Why the engine could not give results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Error {
    /// The TC source (or the program an ONNX model imports to) has errors:
    /// the diagnostics, rendered with file, line and column.
    Source(String),
    /// A file could not be read or is not text.
    Read { path: String, message: String },
    /// An `.npy` file could not be read or written; the message is the
    /// `npy` crate's, complete.
    Npy { path: String, message: String },
    /// An option's value is malformed or names nothing (`--size`, `--def`,
    /// a pipeline, an input item that is not `NAME=VALUE`).
    Usage(String),
    /// An ONNX model could not be loaded or imported: it is not a model,
    /// or it is a wrong one.
    Model(String),
    /// A valid ONNX model uses what tessera does not implement (an
    /// operator, an operator domain, an operator set version).
    Unsupported(String),
    /// The argument `name` is missing, unknown, of the wrong element type
    /// or not a tensor the engine takes.
    Input { name: String, message: String },
    /// The argument `name` does not have the shape its parameter declares
    /// (its rank, or a fixed dimension).
    Shape { name: String, message: String },
    /// The sizes cannot be bound from the given sizes and the arguments.
    Sizes(String),
    /// An ONNX model's operator takes a graph input as a constant, and
    /// the caller gave no value for it (`onnx::ErrorKind::NeedsValue`).
    NeedsValue(String),
    /// An ONNX model's operator needs the value of a tensor the model
    /// computes (`onnx::ErrorKind::NeedsComputed`): `names` are those
    /// tensors. [`crate::Model`] and [`crate::stages`] run the part of the
    /// model that computes them first; a caller that does not run the
    /// model (a search, a tuning) reports it.
    NeedsComputed { names: Vec<String>, message: String },
    /// Lowering does not handle a form of the def yet; the interpreter can
    /// run it.
    NotLowered { def: String, reason: String },
    /// Compiling failed: a program error lowering found, a bug on a kernel
    /// that lowered, or the cache or C compiler could not be used.
    Build(runtime::BuildError),
    /// A compiled step failed (an out-of-bounds gather, an integer division
    /// by zero, or a bug); the interpreter locates a program error.
    Compiled(String),
    /// The program failed while running: `rendered` is the message located
    /// at the failing statement when the source locates it.
    Run {
        def: String,
        message: String,
        rendered: Option<String>,
    },
    /// The machine or the file system: a target file, the caches, an
    /// output directory.
    Environment(String),
    /// The user stopped the work (Ctrl-C) before it had a result.
    Interrupted(String),
    /// A bug in tessera; the message says what went wrong.
    Internal(String),
}

impl Error {
    /// The per-user cache (kernels, the machine's target, measured times)
    /// cannot be used: `message`, and what the user can do about it.
    pub fn cache(message: impl fmt::Display) -> Error {
        Error::Environment(format!(
            "{message}\n  = help: tessera keeps compiled kernels in a cache folder; set TESSERA_CACHE_DIR to a writable folder, or run with `--interp` (no compiling)"
        ))
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Error::Source(rendered) => f.write_str(rendered),
            Error::Npy { message, .. } => f.write_str(message),
            Error::Read { message, .. }
            | Error::Input { message, .. }
            | Error::Shape { message, .. }
            | Error::Usage(message)
            | Error::Model(message)
            | Error::Unsupported(message)
            | Error::Sizes(message)
            | Error::NeedsValue(message)
            | Error::NeedsComputed { message, .. }
            | Error::Compiled(message)
            | Error::Environment(message)
            | Error::Interrupted(message)
            | Error::Internal(message) => write!(f, "error: {message}"),
            Error::NotLowered { reason, .. } => write!(f, "error: cannot lower: {reason}"),
            Error::Build(e) => write!(f, "error: {e}"),
            Error::Run {
                def,
                message,
                rendered,
            } => match rendered {
                Some(r) => f.write_str(r),
                None => write!(f, "error: {message} (in def `{def}`)"),
            },
        }
    }
}

impl std::error::Error for Error {}

impl From<onnx::Error> for Error {
    fn from(e: onnx::Error) -> Error {
        match e.kind {
            onnx::ErrorKind::Invalid => Error::Model(e.message),
            onnx::ErrorKind::Unsupported => Error::Unsupported(e.message),
            onnx::ErrorKind::Shape => Error::Sizes(e.message),
            onnx::ErrorKind::NeedsValue => Error::NeedsValue(e.message),
            onnx::ErrorKind::NeedsComputed => Error::NeedsComputed {
                names: e.computed,
                message: e.message,
            },
        }
    }
}
