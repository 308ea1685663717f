//! The error every fallible entry point of the interpreter returns.
//!
//! A [`RunError`] names the def it happened in and, when it happened while a
//! statement ran, that statement's 0-based index. Its `Display` is the message
//! alone: callers (the CLI, the verifier) add the location in their own style.

use std::fmt;

/// Why a run (or size binding) failed.
#[derive(Clone, Debug, PartialEq)]
pub struct RunError {
    /// The def that was running.
    pub def: String,
    /// The 0-based index into `def.stmts` of the statement that failed, if a
    /// statement failed (argument and size errors have none).
    pub stmt: Option<usize>,
    pub message: String,
    /// The call statements that led to `def`, the entry def's first: the
    /// def and statement index of each (empty when `def` is the entry).
    pub calls: Vec<(String, usize)>,
}

impl RunError {
    /// An error outside any statement of `def`.
    pub(crate) fn new(def: &str, message: impl Into<String>) -> RunError {
        RunError {
            def: def.to_string(),
            stmt: None,
            message: message.into(),
            calls: Vec::new(),
        }
    }

    /// An error raised by statement `stmt` of `def`.
    pub(crate) fn at(def: &str, stmt: usize, message: impl Into<String>) -> RunError {
        RunError {
            def: def.to_string(),
            stmt: Some(stmt),
            message: message.into(),
            calls: Vec::new(),
        }
    }
}

impl fmt::Display for RunError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for RunError {}
