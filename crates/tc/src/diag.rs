//! Diagnostics: a message, a primary location, optional extra labels and a
//! help line; rendered with miette as `error: message` followed by the
//! source snippet with `file:line:col`.

use std::fmt;

/// A byte range in the source text.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct Span {
    pub start: usize,
    pub end: usize,
}

impl Span {
    pub fn new(start: usize, end: usize) -> Span {
        Span { start, end }
    }

    /// The smallest span covering both.
    pub fn to(self, other: Span) -> Span {
        Span::new(self.start.min(other.start), self.end.max(other.end))
    }
}

/// A secondary location with a note.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Label {
    pub span: Span,
    pub text: String,
}

/// One error.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Diagnostic {
    pub message: String,
    pub span: Span,
    /// Text under the primary span.
    pub label: Option<String>,
    pub extra: Vec<Label>,
    pub help: Option<String>,
}

impl Diagnostic {
    pub fn error(message: impl Into<String>, span: Span) -> Diagnostic {
        Diagnostic { message: message.into(), span, label: None, extra: Vec::new(), help: None }
    }

    pub fn with_label(mut self, text: impl Into<String>) -> Diagnostic {
        self.label = Some(text.into());
        self
    }

    pub fn with_extra(mut self, span: Span, text: impl Into<String>) -> Diagnostic {
        self.extra.push(Label { span, text: text.into() });
        self
    }

    pub fn with_help(mut self, text: impl Into<String>) -> Diagnostic {
        self.help = Some(text.into());
        self
    }
}

impl fmt::Display for Diagnostic {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

/// 1-based line and column (in characters) of a byte offset.
pub fn line_col(text: &str, offset: usize) -> (usize, usize) {
    let offset = offset.min(text.len());
    let mut line = 1;
    let mut col = 1;
    for (i, ch) in text.char_indices() {
        if i >= offset {
            break;
        }
        if ch == '\n' {
            line += 1;
            col = 1;
        } else {
            col += 1;
        }
    }
    (line, col)
}

/// Renders diagnostics for file `name` with contents `text`: each starts with
/// `error: ` and the `name:line:col` of its primary span.
pub fn render_diagnostics(diags: &[Diagnostic], name: &str, text: &str) -> String {
    let mut out = String::new();
    for d in diags {
        let (line, col) = line_col(text, d.span.start);
        out.push_str(&format!("error: {}\n  --> {name}:{line}:{col}\n", d.message));
    }
    out
}
