//! `tessera check`: parse, check and infer; print tensors and ranges, then
//! prove the statements' `<=>` annotations (`equiv.rs`).

use std::collections::HashMap;
use std::fmt::Write;
use std::path::PathBuf;

use ir::{Def, Program, SizeExpr, Stmt, TensorRole};

#[derive(clap::Args, Debug)]
pub struct CheckArgs {
    /// The TC file.
    pub file: PathBuf,
    /// Bind a size symbol: `--size N=128` (repeatable).
    #[arg(long = "size", value_name = "SYM=N")]
    pub sizes: Vec<String>,
}

pub fn run(a: &CheckArgs) -> Result<String, String> {
    let (name, text) = crate::load::read_source(&a.file)?;
    let sizes = crate::load::parse_sizes(&a.sizes)?;
    let checked = tc::check_source_with_sizes(&text, &sizes)
        .map_err(|d| tc::render_diagnostics(&d, &name, &text))?;
    let known: Vec<String> = checked
        .program
        .defs
        .iter()
        .flat_map(|d| {
            let ints = d.params.iter().filter_map(|p| match p {
                ir::Param::Scalar { name, dtype } if dtype.is_int() => Some(name.clone()),
                _ => None,
            });
            d.size_symbols().into_iter().chain(ints.collect::<Vec<_>>())
        })
        .collect();
    let mut given: Vec<&String> = sizes.keys().collect();
    given.sort();
    if let Some(unknown) = given.into_iter().find(|s| !known.contains(s)) {
        return Err(format!(
            "error: `--size {unknown}=...`: no def in `{name}` has a size symbol or integer scalar `{unknown}`"
        ));
    }
    let mut out = print_checked(&checked.program, &sizes);
    if !checked.equivalences.is_empty() {
        out.push('\n');
        out.push_str(&crate::equiv::prove_all(&checked, &sizes, &name, &text)?);
    }
    Ok(out)
}

fn show(s: &SizeExpr, sizes: &HashMap<String, i64>) -> String {
    s.partial_eval(sizes).to_string()
}

fn dims(shape: &[SizeExpr], sizes: &HashMap<String, i64>) -> String {
    shape
        .iter()
        .map(|s| show(s, sizes))
        .collect::<Vec<_>>()
        .join(", ")
}

pub fn print_checked(p: &Program, sizes: &HashMap<String, i64>) -> String {
    let mut out = String::new();
    for (i, d) in p.defs.iter().enumerate() {
        if i > 0 {
            out.push('\n');
        }
        print_def(&mut out, p, d, sizes);
    }
    out
}

fn print_def(out: &mut String, p: &Program, d: &Def, sizes: &HashMap<String, i64>) {
    let _ = writeln!(out, "def {}", d.name);
    let width = d
        .tensors
        .iter()
        .map(|t| t.name.len())
        .chain(d.params.iter().map(|p| p.name().len()))
        .max()
        .unwrap_or(0);
    for prm in &d.params {
        if let ir::Param::Scalar { name, dtype } = prm {
            let _ = writeln!(out, "  scalar  {name:width$}  {dtype}");
        }
    }
    for t in &d.tensors {
        let role = match t.role {
            TensorRole::Input => "input ",
            TensorRole::Output => "output",
            TensorRole::InOut => "inout ",
            TensorRole::Temp => "temp  ",
        };
        let _ = writeln!(
            out,
            "  {role}  {:width$}  {}({})",
            t.name,
            t.dtype,
            dims(&t.shape, sizes)
        );
    }
    for (k, s) in d.stmts.iter().enumerate() {
        match s {
            Stmt::Comp(c) => {
                let lhs_type = None;
                let text = ir::print_comprehension(
                    d,
                    &ir::Comprehension {
                        ranges: Vec::new(),
                        ..c.clone()
                    },
                    lhs_type,
                );
                let _ = writeln!(out, "  {}: {text}", k + 1);
                let ranges: Vec<String> = c
                    .ranges
                    .iter()
                    .map(|r| {
                        format!(
                            "{} in {}:{}",
                            r.name,
                            show(&r.lo, sizes),
                            show(&r.hi, sizes)
                        )
                    })
                    .collect();
                let _ = writeln!(out, "     {}", ranges.join(", "));
            }
            Stmt::Call(_) | Stmt::Loop(_) | Stmt::If(_) => {
                let text = ir::print_def(
                    p,
                    &Def {
                        stmts: vec![s.clone()],
                        ..d.clone()
                    },
                );
                // A region prints over several lines: its header numbered,
                // its body as the def printer indents it.
                let lines: Vec<&str> = text.lines().collect();
                let body = lines.get(1..lines.len().saturating_sub(1)).unwrap_or(&[]);
                for (i, line) in body.iter().enumerate() {
                    match i {
                        0 => writeln!(out, "  {}: {}", k + 1, line.trim()),
                        _ => writeln!(out, "   {line}"),
                    }
                    .ok();
                }
            }
        }
    }
}
