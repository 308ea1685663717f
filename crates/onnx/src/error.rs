//! Why a model cannot be loaded or imported, with the kind of problem as
//! data: callers (the Python package's exception classes) decide on the
//! kind, never on the message.

use std::fmt;

/// A problem with a model; `message` is complete and names the file, node
/// or input it is about.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Error {
    pub kind: ErrorKind,
    pub message: String,
    /// For [`ErrorKind::NeedsComputed`], the tensors (by ONNX name) whose
    /// values the import needs.
    pub computed: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The file is unreadable, not a model, or a model that is wrong.
    Invalid,
    /// A valid model using what tessera does not implement: an operator,
    /// an operator domain, an operator set version.
    Unsupported,
    /// The tensors given for the inputs (or the sizes bound) do not fit
    /// the shapes the model declares.
    Shape,
    /// An operator takes a graph input as a constant (a reduction's axes,
    /// a reshape's shape), and the caller did not give its value.
    NeedsValue,
    /// An operator needs the value of a tensor the model computes (the
    /// data of `NonZero`, a bound of `Range` computed from an input): the
    /// caller runs the part of the model that computes it
    /// ([`crate::cut`]) and imports again with its value.
    NeedsComputed,
}

impl Error {
    pub fn invalid(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Invalid,
            message: message.into(),
            computed: Vec::new(),
        }
    }

    pub fn unsupported(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Unsupported,
            message: message.into(),
            computed: Vec::new(),
        }
    }

    pub fn shape(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::Shape,
            message: message.into(),
            computed: Vec::new(),
        }
    }
}

impl Error {
    pub fn needs_value(message: impl Into<String>) -> Error {
        Error {
            kind: ErrorKind::NeedsValue,
            message: message.into(),
            computed: Vec::new(),
        }
    }
}

impl Error {
    /// The import needs the values of the tensors `computed`.
    pub fn needs_computed(message: impl Into<String>, computed: Vec<String>) -> Error {
        Error {
            kind: ErrorKind::NeedsComputed,
            message: message.into(),
            computed,
        }
    }
}

impl fmt::Display for Error {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for Error {}

impl From<Error> for String {
    fn from(e: Error) -> String {
        e.message
    }
}
