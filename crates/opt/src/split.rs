//! Program splitting (PET §6.1, OLLIE §5.1): a def cut at its non-linear
//! statements into maximal multi-linear subprograms.
//!
//! Every statement is classified ([`crate::linearity`]; a call by its
//! callee's statements, composed). Statements are then taken in order, and
//! a multi-linear one joins the subprograms of the multi-linear statements
//! that produce what it reads, when the union stays a subprogram: it is
//! convex (no path between two of its statements leaves it, as one through
//! a non-linear statement would, so it can run as one unit), and it is
//! still multi-linear as a whole (composed through its temporaries, no
//! input is multiplied by itself: `T = A * B` then `O = T * A` is quadratic
//! in `A` although each statement is linear). Where the union would break
//! either, the statement joins as many of those subprograms as keep both,
//! the earliest first, or starts one of its own. A non-linear statement is
//! a part of its own, with the reason.
//!
//! Requires: a program that passes `ir::verify_program`. Guarantees: every
//! statement is in exactly one part; parts are listed by their first
//! statement; every multi-linear part is convex and multi-linear in its
//! inputs; never panics.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write;

use ir::{CallArg, Def, Program, Stmt};

use crate::linearity::{self, Poly};

/// One part of a split def.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Part {
    /// The def's statements in it, in order (0-based).
    pub stmts: Vec<usize>,
    pub kind: PartKind,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PartKind {
    /// A multi-linear subprogram: the tensors it reads from outside and
    /// the ones it defines that are used outside it (or returned).
    MultiLinear {
        inputs: Vec<String>,
        outputs: Vec<String>,
    },
    /// One non-linear statement, and why it is not multi-linear.
    NonLinear { reason: String },
}

/// A def split into parts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Split {
    pub def: String,
    pub parts: Vec<Part>,
}

/// How deep calls may nest while classifying (a guard: the IR verifier
/// already refuses recursion).
const MAX_CALL_DEPTH: usize = 64;

/// What one statement reads and writes, and its polynomials (per tensor
/// written, over the tensors it reads) or why it has none.
struct StmtInfo {
    reads: BTreeSet<String>,
    writes: Vec<String>,
    polys: Result<Vec<(String, Poly)>, String>,
}

fn stmt_info(p: &Program, d: &Def, s: &Stmt, depth: usize) -> StmtInfo {
    match s {
        Stmt::Comp(c) => {
            let polys = linearity::polynomial(d, c).and_then(|poly| match poly.repeated() {
                Some(t) => Err(format!("`{t}` is multiplied by itself")),
                None => Ok(vec![(c.tensor.clone(), poly)]),
            });
            let mut reads: BTreeSet<String> = std::iter::once(&c.body)
                .chain(c.lets.iter().map(|(_, v)| v))
                .flat_map(ir::Expr::reads)
                .map(|(t, _)| t.to_string())
                .collect();
            if c.op != ir::Reduction::Assign && !c.init {
                reads.insert(c.tensor.clone());
            }
            StmtInfo {
                reads,
                writes: vec![c.tensor.clone()],
                polys,
            }
        }
        Stmt::Call(call) => {
            let reads = call
                .args
                .iter()
                .filter_map(|a| match a {
                    CallArg::Tensor(t) => Some(t.clone()),
                    CallArg::Scalar(_) => None,
                })
                .collect();
            StmtInfo {
                reads,
                writes: call.results.clone(),
                polys: call_polys(p, call, depth),
            }
        }
        Stmt::Loop(_) | Stmt::If(_) => StmtInfo {
            reads: s.reads().into_iter().map(str::to_string).collect(),
            writes: s.written().into_iter().map(str::to_string).collect(),
            polys: Err("a loop or branch region is not a multi-linear statement".into()),
        },
    }
}

/// The polynomials of a call's results over the caller's tensors: the
/// callee's whole body composed, its parameters replaced by the arguments.
fn call_polys(
    p: &Program,
    call: &ir::CallStmt,
    depth: usize,
) -> Result<Vec<(String, Poly)>, String> {
    let callee = p
        .def(&call.callee)
        .ok_or_else(|| format!("a call of an unknown def `{}`", call.callee))?;
    if depth >= MAX_CALL_DEPTH {
        return Err("calls nest too deeply".to_string());
    }
    let mut env: HashMap<String, Poly> = HashMap::new();
    for s in &callee.stmts {
        let info = stmt_info(p, callee, s, depth + 1);
        let polys = info
            .polys
            .map_err(|why| format!("`{}` is not multi-linear: {why}", call.callee))?;
        for (t, poly) in polys {
            let composed = compose(&poly, &env)?;
            env.insert(t, composed);
        }
    }
    // Parameters become the arguments; a scalar argument is a coefficient.
    let to: HashMap<&str, Option<&str>> = callee
        .params
        .iter()
        .zip(&call.args)
        .map(|(param, arg)| {
            let by = match arg {
                CallArg::Tensor(t) => Some(t.as_str()),
                CallArg::Scalar(_) => None,
            };
            (param.name(), by)
        })
        .collect();
    let mut out = Vec::new();
    for (r, result) in call.results.iter().zip(&callee.outputs) {
        let poly = env
            .get(result)
            .cloned()
            .unwrap_or_else(|| Poly::tensor(result))
            .rename(&to);
        if let Some(t) = poly.repeated() {
            return Err(format!(
                "`{t}` is multiplied by itself through `{}`",
                call.callee
            ));
        }
        out.push((r.clone(), poly));
    }
    Ok(out)
}

/// `poly` with every tensor defined in `env` replaced by its definition.
fn compose(poly: &Poly, env: &HashMap<String, Poly>) -> Result<Poly, String> {
    let mut out = poly.clone();
    for t in poly.tensors() {
        if let Some(by) = env.get(t) {
            out = out.substitute(t, by)?;
        }
    }
    Ok(out)
}

/// Splits def `name` of `program`.
pub fn split(program: &Program, name: &str) -> Result<Split, String> {
    let d = program
        .def(name)
        .ok_or_else(|| format!("no def named `{name}`"))?;
    let infos: Vec<StmtInfo> = d
        .stmts
        .iter()
        .map(|s| stmt_info(program, d, s, 0))
        .collect();
    let n = infos.len();
    // Producers: the last earlier writer of each tensor a statement reads.
    let mut producers: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    let mut last_writer: HashMap<&str, usize> = HashMap::new();
    for (k, info) in infos.iter().enumerate() {
        for r in &info.reads {
            if let Some(&w) = last_writer.get(r.as_str()) {
                producers[k].insert(w);
            }
        }
        for w in &info.writes {
            last_writer.insert(w, k);
        }
    }
    // Ancestors, in statement order (producers come first).
    let mut ancestors: Vec<BTreeSet<usize>> = vec![BTreeSet::new(); n];
    for k in 0..n {
        let mut a = BTreeSet::new();
        for &p in &producers[k] {
            a.insert(p);
            a.extend(ancestors[p].iter().copied());
        }
        ancestors[k] = a;
    }
    let mut group_of: Vec<Option<usize>> = vec![None; n];
    let mut groups: Vec<BTreeSet<usize>> = Vec::new();
    for k in 0..n {
        if infos[k].polys.is_err() {
            continue;
        }
        let candidates: BTreeSet<usize> =
            producers[k].iter().filter_map(|&p| group_of[p]).collect();
        let mut joined = BTreeSet::from([k]);
        let mut taken = Vec::new();
        for g in candidates {
            let union: BTreeSet<usize> = joined.union(&groups[g]).copied().collect();
            if convex(&union, &ancestors) && multilinear(&union, &infos) {
                joined = union;
                taken.push(g);
            }
        }
        let id = groups.len();
        for g in taken {
            groups[g].clear();
        }
        for &s in &joined {
            group_of[s] = Some(id);
        }
        groups.push(joined);
    }
    let mut parts: Vec<Part> = Vec::new();
    for g in groups.iter().filter(|g| !g.is_empty()) {
        let (inputs, outputs) = boundary(d, g, &infos);
        parts.push(Part {
            stmts: g.iter().copied().collect(),
            kind: PartKind::MultiLinear { inputs, outputs },
        });
    }
    for (k, info) in infos.iter().enumerate() {
        if let Err(reason) = &info.polys {
            parts.push(Part {
                stmts: vec![k],
                kind: PartKind::NonLinear {
                    reason: reason.clone(),
                },
            });
        }
    }
    parts.sort_by_key(|p| p.stmts.first().copied());
    Ok(Split {
        def: d.name.clone(),
        parts,
    })
}

/// Whether no statement outside `set` lies on a path between two of its
/// statements.
fn convex(set: &BTreeSet<usize>, ancestors: &[BTreeSet<usize>]) -> bool {
    let (Some(&lo), Some(&hi)) = (set.first(), set.last()) else {
        return true;
    };
    (lo..hi).filter(|x| !set.contains(x)).all(|x| {
        let below = ancestors[x].iter().any(|a| set.contains(a));
        let above = set.iter().any(|&s| ancestors[s].contains(&x));
        !(below && above)
    })
}

/// Whether the statements of `set`, composed in order through the tensors
/// they define, are multi-linear in what they read from outside.
fn multilinear(set: &BTreeSet<usize>, infos: &[StmtInfo]) -> bool {
    let mut env: HashMap<String, Poly> = HashMap::new();
    for &k in set {
        let Ok(polys) = &infos[k].polys else {
            return false;
        };
        for (t, poly) in polys {
            match compose(poly, &env) {
                Ok(c) if c.repeated().is_none() => {
                    env.insert(t.clone(), c);
                }
                _ => return false,
            }
        }
    }
    true
}

/// The tensors a part reads from outside it, and the ones it defines that
/// a later statement outside it reads or the def returns.
fn boundary(d: &Def, set: &BTreeSet<usize>, infos: &[StmtInfo]) -> (Vec<String>, Vec<String>) {
    let mut defined: BTreeSet<&str> = BTreeSet::new();
    let mut inputs: BTreeSet<String> = BTreeSet::new();
    for &k in set {
        for r in &infos[k].reads {
            if !defined.contains(r.as_str()) {
                inputs.insert(r.clone());
            }
        }
        defined.extend(infos[k].writes.iter().map(String::as_str));
    }
    let first = set.first().copied().unwrap_or(0);
    let used_outside: BTreeSet<&str> = infos
        .iter()
        .enumerate()
        .filter(|(k, _)| *k > first && !set.contains(k))
        .flat_map(|(_, i)| i.reads.iter().map(String::as_str))
        .collect();
    let outputs = defined
        .iter()
        .filter(|t| used_outside.contains(*t) || d.outputs.iter().any(|o| o == *t))
        .map(|t| t.to_string())
        .collect();
    (inputs.into_iter().collect(), outputs)
}

/// The split as text: one heading per part, its statements (numbered from
/// 1, as `tessera check` numbers them) under it.
pub fn print_split(program: &Program, split: &Split) -> String {
    let Some(d) = program.def(&split.def) else {
        return String::new();
    };
    let linear = split
        .parts
        .iter()
        .filter(|p| matches!(p.kind, PartKind::MultiLinear { .. }))
        .count();
    let mut out = format!(
        "def {}: {linear} multi-linear subprogram{}, {} non-linear statement{}\n",
        d.name,
        if linear == 1 { "" } else { "s" },
        split.parts.len() - linear,
        if split.parts.len() - linear == 1 {
            ""
        } else {
            "s"
        },
    );
    let mut number = 0;
    for part in &split.parts {
        match &part.kind {
            PartKind::MultiLinear { inputs, outputs } => {
                number += 1;
                let _ = writeln!(
                    out,
                    "multi-linear {number}: reads {}; defines {}",
                    list(inputs),
                    list(outputs)
                );
            }
            PartKind::NonLinear { reason } => {
                let _ = writeln!(out, "non-linear: {reason}");
            }
        }
        for &k in &part.stmts {
            let _ = writeln!(out, "  {}: {}", k + 1, statement(d, &d.stmts[k]));
        }
    }
    out
}

fn list(names: &[String]) -> String {
    if names.is_empty() {
        "nothing".to_string()
    } else {
        names.join(", ")
    }
}

fn statement(d: &Def, s: &Stmt) -> String {
    match s {
        Stmt::Comp(c) => ir::print_comprehension(d, c, d.tensor(&c.tensor).map(|t| t.dtype)),
        Stmt::Call(call) => {
            let args: Vec<String> = call
                .args
                .iter()
                .map(|a| match a {
                    CallArg::Tensor(t) => t.clone(),
                    CallArg::Scalar(e) => ir::print_expr(d, None, e),
                })
                .collect();
            let results = match call.results.as_slice() {
                [one] => one.clone(),
                many => format!("({})", many.join(", ")),
            };
            format!("{results} = {}({})", call.callee, args.join(", "))
        }
        Stmt::Loop(l) => format!("({}) = for {} {{ … }}", l.results.join(", "), l.index),
        Stmt::If(b) => format!("({}) = if … {{ … }} else {{ … }}", b.results.join(", ")),
    }
}
