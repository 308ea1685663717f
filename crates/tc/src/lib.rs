//! The Tensor Comprehensions language.
//!
//! [`check_source`] turns TC text into a verified [`ir::Program`]: lex,
//! parse, resolve names, type-check and infer ranges (TC §3.1 and DESIGN.md
//! semantics 1-2; the language is documented in `docs/LANGUAGE.md`). Beside
//! comprehensions and calls, a def's statements may be loop and branch
//! regions (`ir::LoopStmt`, `ir::IfStmt`) in the syntax `ir::print` writes
//! for them (`parser.rs` has the grammar). Lexing and parsing never panic
//! and never overflow the stack: every problem becomes a [`Diagnostic`] with
//! a span, and the parser recovers at statement, block and def boundaries
//! so one file reports several errors.

mod ast;
mod bounds;
mod check;
mod diag;
mod infer;
mod lexer;
mod parser;
mod typing;

pub use check::Equivalence;
pub use diag::{line_col, render_diagnostics, Diagnostic, Label, Span};

use std::collections::HashMap;

/// A checked program and where each of its parts came from.
#[derive(Debug, Clone)]
pub struct Checked {
    pub program: ir::Program,
    /// Source span of each statement of a def (not of region bodies), by
    /// (def name, statement index); a region's spans its whole text.
    pub stmt_spans: HashMap<(String, usize), Span>,
    /// Source span of each def's name.
    pub def_spans: HashMap<String, Span>,
    /// The statements' `<=>` annotations (TC's equivalence claims), for
    /// `tessera check` to prove.
    pub equivalences: Vec<Equivalence>,
}

/// Parses and checks a TC source text.
pub fn check_source(text: &str) -> Result<Checked, Vec<Diagnostic>> {
    let file = parse_source(text)?;
    let out = check::check_file(&file)?;
    Ok(Checked {
        program: out.program,
        stmt_spans: out.stmt_spans,
        def_spans: out.def_spans,
        equivalences: out.equivalences,
    })
}

fn parse_source(text: &str) -> Result<ast::File, Vec<Diagnostic>> {
    let (tokens, mut errs) = lexer::lex(text);
    let (file, parse_errs) = parser::parse(tokens);
    // A token the lexer could not read usually derails the parser on the
    // same line; only parse errors on other lines are news.
    let starts: Vec<usize> = std::iter::once(0)
        .chain(text.match_indices('\n').map(|(i, _)| i + 1))
        .collect();
    let line = |at: usize| starts.partition_point(|&s| s <= at);
    let bad_lines: std::collections::HashSet<usize> =
        errs.iter().map(|d| line(d.span.start)).collect();
    errs.extend(
        parse_errs
            .into_iter()
            .filter(|d| !bad_lines.contains(&line(d.span.start))),
    );
    if !errs.is_empty() {
        errs.sort_by_key(|d| d.span.start);
        return Err(errs);
    }
    Ok(file)
}

/// Checks a TC source text with some size symbols bound (`--size`): on top
/// of [`check_source`], rejects ranges that become empty and `=` reads and
/// writes that fall out of bounds with those sizes.
pub fn check_source_with_sizes(
    text: &str,
    sizes: &HashMap<String, i64>,
) -> Result<Checked, Vec<Diagnostic>> {
    let checked = check_source(text)?;
    let file = parse_source(text)?;
    let mut errs = Vec::new();
    for def in &checked.program.defs {
        if let Some(d) = file.defs.iter().find(|d| d.name.name == def.name) {
            errs.extend(check::bounds_diagnostics(d, def, sizes));
        }
    }
    if errs.is_empty() {
        Ok(checked)
    } else {
        Err(errs)
    }
}
