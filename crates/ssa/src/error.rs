//! The frontend's error: a message and the source range it is about,
//! rendered as `file:line:col: message` with the line quoted.

use crate::graph::Span;

#[derive(Clone, Debug, PartialEq)]
pub struct Error {
    pub span: Span,
    pub message: String,
    /// The error is a value needed while tracing (a slice bound, a
    /// size) that is computed at run time: unrolling the loop around it
    /// makes it known.
    pub needs_known: bool,
}

impl Error {
    pub fn new(span: Span, message: impl Into<String>) -> Error {
        Error {
            span,
            message: message.into(),
            needs_known: false,
        }
    }

    /// The 1-based line and column (in characters) where the error starts.
    pub fn line_col(&self, source: &str) -> (usize, usize) {
        let at = (self.span.start as usize).min(source.len());
        let at = (0..=at)
            .rev()
            .find(|&i| source.is_char_boundary(i))
            .unwrap_or(0);
        let before = &source[..at];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        (line, before[line_start..].chars().count() + 1)
    }

    /// `error: message`, then `--> file:line:col`, the source line and a
    /// caret under the column (the form TC's diagnostics take).
    pub fn render(&self, file: &str, source: &str) -> String {
        let (line, col) = self.line_col(source);
        let text = source.lines().nth(line - 1).unwrap_or("");
        let gutter = " ".repeat(line.to_string().len());
        format!(
            "error: {}
{gutter}--> {file}:{line}:{col}
{gutter} |
{line} | {text}
{gutter} | {}^",
            self.message,
            " ".repeat(col - 1)
        )
    }
}

pub type Result<T> = std::result::Result<T, Error>;
