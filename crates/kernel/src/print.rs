//! Writes a [`Block`] in the kernel IR's text form (the grammar is in
//! `parse.rs`, whose [`crate::parse_block`] reads it back to an equal block).
//!
//! The form follows PlaidML's Stripe printer: a header line with the
//! indices, one line per constraint and per refinement, then the statements
//! between braces, nested blocks indented by two spaces per level. Output
//! is deterministic: everything prints in stored order, tags (a set) in
//! their sorted order, affine terms in index name order.

use std::fmt::Write;

use ir::{BinOp, UnOp, Value};

use crate::{Affine, Agg, Block, Op, RefDir, Refinement, StmtKind, Tags};

/// Words that start a line of their own kind; a name spelled like one of
/// them is printed quoted so that it reads back as a name.
pub(crate) const RESERVED: [&str; 6] = ["block", "in", "out", "inout", "none", "new"];

/// The text name of a binary operation.
pub(crate) fn bin_name(op: BinOp) -> &'static str {
    match op {
        BinOp::Add => "add",
        BinOp::Sub => "sub",
        BinOp::Mul => "mul",
        BinOp::Div => "div",
        BinOp::Mod => "mod",
        BinOp::Lt => "lt",
        BinOp::Le => "le",
        BinOp::Gt => "gt",
        BinOp::Ge => "ge",
        BinOp::Eq => "eq",
        BinOp::Ne => "ne",
        BinOp::And => "and",
        BinOp::Or => "or",
    }
}

/// Every unary operation, for reading names back.
pub(crate) const UN_OPS: [UnOp; 2] = [UnOp::Neg, UnOp::Not];

/// The text name of a unary operation.
pub(crate) fn un_name(op: UnOp) -> &'static str {
    match op {
        UnOp::Neg => "neg",
        UnOp::Not => "not",
    }
}

/// Every aggregation, for reading names back.
pub(crate) const AGGS: [Agg; 5] = [Agg::Assign, Agg::Add, Agg::Mul, Agg::Min, Agg::Max];

/// The text name of an aggregation (`assign`, the default, is not printed).
pub(crate) fn agg_name(agg: Agg) -> &'static str {
    match agg {
        Agg::Assign => "assign",
        Agg::Add => "add",
        Agg::Mul => "mul",
        Agg::Min => "min",
        Agg::Max => "max",
    }
}

/// Every refinement direction, for reading names back.
pub(crate) const DIRS: [RefDir; 4] = [RefDir::None, RefDir::In, RefDir::Out, RefDir::InOut];

/// The text name of a refinement direction.
pub(crate) fn dir_name(dir: RefDir) -> &'static str {
    match dir {
        RefDir::None => "none",
        RefDir::In => "in",
        RefDir::Out => "out",
        RefDir::InOut => "inout",
    }
}

/// Writes `b` as text, one construct per line, ending with a newline.
pub fn print_block(b: &Block) -> String {
    let mut out = String::new();
    write_block(&mut out, b, 0, None);
    out
}

/// Writes `b` indented by `depth` levels; `stmt_tags` are the tags of the
/// statement that holds a nested block, written after its closing brace.
fn write_block(out: &mut String, b: &Block, depth: usize, stmt_tags: Option<&Tags>) {
    let pad = "  ".repeat(depth);
    let _ = write!(out, "{pad}block {} [", name(&b.name));
    for (k, i) in b.idxs.iter().enumerate() {
        if k > 0 {
            out.push_str(", ");
        }
        let _ = write!(out, "{}:{}", name(&i.name), i.range);
        if let Some(a) = &i.affine {
            let _ = write!(out, " = {}", affine(a));
        }
        write_tags(out, &i.tags);
    }
    out.push(']');
    write_tags(out, &b.tags);
    if !b.comment.is_empty() {
        out.push_str(" // ");
        out.push_str(&escape(&b.comment, false));
    }
    out.push('\n');
    for c in &b.constraints {
        let _ = writeln!(out, "{pad}  {} >= 0", affine(c));
    }
    for r in &b.refs {
        let _ = write!(out, "{pad}  ");
        write_refinement(out, r);
        out.push('\n');
    }
    let _ = writeln!(out, "{pad}{{");
    for s in &b.stmts {
        if let StmtKind::Block(inner) = &s.kind {
            write_block(out, inner, depth + 1, Some(&s.tags));
            continue;
        }
        let _ = write!(out, "{pad}  ");
        write_statement(out, &s.kind);
        write_tags(out, &s.tags);
        out.push('\n');
    }
    let _ = write!(out, "{pad}}}");
    if let Some(tags) = stmt_tags {
        write_tags(out, tags);
    }
    out.push('\n');
}

fn write_refinement(out: &mut String, r: &Refinement) {
    let _ = write!(out, "{} ", dir_name(r.dir));
    let access = || {
        let forms: Vec<String> = r.access.iter().map(affine).collect();
        format!("[{}]", forms.join(", "))
    };
    match &r.from {
        None => {
            let _ = write!(out, "new {}", name(&r.into));
            if !r.access.is_empty() {
                out.push_str(&access());
            }
        }
        Some(from) if *from == r.into => {
            let _ = write!(out, "{}{}", name(from), access());
        }
        Some(from) => {
            let _ = write!(out, "{} = {}{}", name(&r.into), name(from), access());
        }
    }
    if r.agg != Agg::Assign {
        let _ = write!(out, ":{}", agg_name(r.agg));
    }
    let sizes: Vec<String> = r.shape.iter().map(|d| d.size.to_string()).collect();
    let strides: Vec<String> = r.shape.iter().map(|d| d.stride.to_string()).collect();
    let _ = write!(
        out,
        " {}({}):({})",
        r.dtype.name(),
        sizes.join(", "),
        strides.join(", ")
    );
    if let Some(loc) = &r.location {
        let _ = write!(out, " @{}", name(loc));
    }
    write_tags(out, &r.tags);
}

fn write_statement(out: &mut String, kind: &StmtKind) {
    let _ = match kind {
        StmtKind::Load { from, into } => write!(out, "${} = load({})", name(into), name(from)),
        StmtKind::Store { from, into } => write!(out, "{} = store(${})", name(into), name(from)),
        StmtKind::LoadIndex { from, into } => {
            write!(out, "${} = index({})", name(into), affine(from))
        }
        StmtKind::Constant { into, value, dtype } => write!(
            out,
            "${} = const.{}({})",
            name(into),
            dtype.name(),
            literal(value)
        ),
        StmtKind::Intrinsic {
            op,
            inputs,
            into,
            dtype,
        } => write!(
            out,
            "${} = {}.{}({})",
            name(into),
            op_name(op),
            dtype.name(),
            scalars(inputs)
        ),
        StmtKind::Gather {
            from,
            indices,
            into,
        } => {
            let _ = write!(out, "${} = gather({}", name(into), name(from));
            if !indices.is_empty() {
                out.push_str(", ");
                out.push_str(&scalars(indices));
            }
            write!(out, ")")
        }
        // Nested blocks are written by `write_block`, which spans lines.
        StmtKind::Block(_) => Ok(()),
    };
}

/// `$a, $b, ...`.
fn scalars(names: &[String]) -> String {
    let names: Vec<String> = names.iter().map(|n| format!("${}", name(n))).collect();
    names.join(", ")
}

fn write_tags(out: &mut String, tags: &Tags) {
    for t in tags {
        let _ = write!(out, " #{}", name(t));
    }
}

/// The text name of an intrinsic operation, as the kernel text writes it
/// (and as other crates name it in messages).
pub fn op_name(op: &Op) -> &'static str {
    match op {
        Op::Unary(u) => un_name(*u),
        Op::Binary(b) => bin_name(*b),
        Op::Builtin(b) => b.name(),
        Op::Select => "select",
        Op::Cast => "cast",
    }
}

/// A literal that reads back to the same value: integers in decimal,
/// floats by `{:?}` (always with a `.`, an exponent, `inf` or `NaN`, so
/// never mistaken for an integer), booleans as `true` and `false`.
fn literal(v: &Value) -> String {
    match v {
        Value::Int(i) => i.to_string(),
        Value::Float(f) => format!("{f:?}"),
        Value::Bool(b) => b.to_string(),
    }
}

/// An affine form as `Affine`'s `Display` writes it (`2*i + j - 1`), with
/// index names spelled by [`name`].
pub(crate) fn affine(a: &Affine) -> String {
    let mut s = String::new();
    for (n, c) in &a.terms {
        let sign = match (*c < 0, s.is_empty()) {
            (true, true) => "-",
            (true, false) => " - ",
            (false, true) => "",
            (false, false) => " + ",
        };
        let m = c.unsigned_abs();
        if m == 1 {
            let _ = write!(s, "{sign}{}", name(n));
        } else {
            let _ = write!(s, "{sign}{m}*{}", name(n));
        }
    }
    if s.is_empty() {
        let _ = write!(s, "{}", a.constant);
    } else if a.constant > 0 {
        let _ = write!(s, " + {}", a.constant);
    } else if a.constant < 0 {
        let _ = write!(s, " - {}", a.constant.unsigned_abs());
    }
    s
}

/// Whether `s` is an identifier: an ASCII letter or `_`, then ASCII letters,
/// digits and `_`.
pub(crate) fn is_ident(s: &str) -> bool {
    let mut chars = s.chars();
    chars
        .next()
        .is_some_and(|c| c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// A name as written: bare when it is an identifier and no reserved word,
/// otherwise quoted.
pub(crate) fn name(s: &str) -> String {
    if is_ident(s) && !RESERVED.contains(&s) {
        s.to_string()
    } else {
        format!("\"{}\"", escape(s, true))
    }
}

/// Escapes `\` as `\\`, control characters (line ends among them) as
/// `\u{hex}`, and, inside quotes, `"` as `\"`.
fn escape(s: &str, quoted: bool) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '\\' => out.push_str("\\\\"),
            '"' if quoted => out.push_str("\\\""),
            c if c.is_control() => {
                let _ = write!(out, "\\u{{{:x}}}", u32::from(c));
            }
            c => out.push(c),
        }
    }
    out
}
