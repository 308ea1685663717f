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
        Diagnostic {
            message: message.into(),
            span,
            label: None,
            extra: Vec::new(),
            help: None,
        }
    }

    pub fn with_label(mut self, text: impl Into<String>) -> Diagnostic {
        self.label = Some(text.into());
        self
    }

    pub fn with_extra(mut self, span: Span, text: impl Into<String>) -> Diagnostic {
        self.extra.push(Label {
            span,
            text: text.into(),
        });
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

/// A diagnostic bound to its source, in the form miette renders.
#[derive(Debug)]
struct Report<'a> {
    diag: &'a Diagnostic,
    source: miette::NamedSource<String>,
}

impl fmt::Display for Report<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.diag.message)
    }
}

impl std::error::Error for Report<'_> {}

impl miette::Diagnostic for Report<'_> {
    fn source_code(&self) -> Option<&dyn miette::SourceCode> {
        Some(&self.source)
    }

    fn labels(&self) -> Option<Box<dyn Iterator<Item = miette::LabeledSpan> + '_>> {
        let d = self.diag;
        let primary = miette::LabeledSpan::new_primary_with_span(
            d.label.clone(),
            miette::SourceSpan::new(d.span.start.into(), d.span.end.saturating_sub(d.span.start)),
        );
        let extra = d.extra.iter().map(|l| {
            miette::LabeledSpan::new_with_span(
                Some(l.text.clone()),
                miette::SourceSpan::new(
                    l.span.start.into(),
                    l.span.end.saturating_sub(l.span.start),
                ),
            )
        });
        Some(Box::new(std::iter::once(primary).chain(extra)))
    }

    fn help<'b>(&'b self) -> Option<Box<dyn fmt::Display + 'b>> {
        self.diag
            .help
            .as_ref()
            .map(|h| Box::new(h.clone()) as Box<dyn fmt::Display>)
    }
}

/// At most this many diagnostics are rendered; the rest are counted.
pub const MAX_RENDERED: usize = 25;

/// Source lines longer than this are not echoed in a snippet.
const MAX_SNIPPET_LINE: usize = 300;

/// Renders diagnostics for file `name` with contents `text`. Each starts
/// with a line `error: message`, then `--> name:line:col` (columns count
/// characters) and the source snippet with the spans underlined (miette, no
/// colours), then the help. Only the first [`MAX_RENDERED`] are rendered, and
/// a snippet is left out when its line is very long.
pub fn render_diagnostics(diags: &[Diagnostic], name: &str, text: &str) -> String {
    let handler =
        miette::GraphicalReportHandler::new_themed(miette::GraphicalTheme::unicode_nocolor())
            .with_context_lines(1)
            .with_width(100)
            .with_wrap_lines(false);
    let clamp = |s: Span| Span::new(s.start.min(text.len()), s.end.min(text.len()));
    let mut out = String::new();
    for d in diags.iter().take(MAX_RENDERED) {
        let mut d = d.clone();
        d.span = clamp(d.span);
        for l in &mut d.extra {
            l.span = clamp(l.span);
        }
        let (line, col) = line_col(text, d.span.start);
        out.push_str(&format!(
            "error: {}\n  --> {name}:{line}:{col}\n",
            d.message
        ));
        let line_len = text.lines().nth(line.saturating_sub(1)).map_or(0, str::len);
        let mut body = String::new();
        if line_len <= MAX_SNIPPET_LINE {
            let report = Report {
                diag: &d,
                source: miette::NamedSource::new(name, text.to_string()),
            };
            if handler.render_report(&mut body, &report).is_ok() {
                // miette repeats the message on its first line; the line
                // above already carries it in the `error:` form.
                body = body
                    .split_once('\n')
                    .map(|(_, r)| r.to_string())
                    .unwrap_or_default();
            }
        } else if let Some(h) = &d.help {
            body = format!("  help: {h}\n");
        }
        out.push_str(&body);
        if !out.ends_with('\n') {
            out.push('\n');
        }
    }
    if diags.len() > MAX_RENDERED {
        out.push_str(&format!(
            "note: {} more errors not shown\n",
            diags.len() - MAX_RENDERED
        ));
    }
    out
}
