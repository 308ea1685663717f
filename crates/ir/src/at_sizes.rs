//! A def at concrete sizes: every size symbol its declarations, ranges and
//! expressions mention replaced by its value. The optimizer's results are
//! for the sizes they were searched at, and the defs a search generates
//! (mutants) declare concrete shapes; the TC checker matches a call's
//! shapes symbolically, so the result's text checks only at sizes.
//!
//! Requires sizes binding every size symbol of the def (those missing stay
//! symbols). Guarantees: at those sizes the def computes what the original
//! computes (only symbols become their values); its parameters are kept,
//! integer scalars included (a scalar's uses in expressions stay uses of
//! the scalar, its uses in shapes become its value).

use std::collections::HashMap;

use crate::{CallArg, DType, Def, Expr, Param, Stmt, Value};

/// `def` with its size symbols replaced by their values in `sizes`.
pub fn at_sizes(def: &Def, sizes: &HashMap<String, i64>) -> Def {
    let scalars: Vec<&str> = def
        .params
        .iter()
        .filter_map(|p| match p {
            Param::Scalar { name, .. } => Some(name.as_str()),
            Param::Tensor(_) => None,
        })
        .collect();
    let value = |s: &str| sizes.get(s).copied().filter(|_| !scalars.contains(&s));
    let mut out = def.clone();
    for decl in &mut out.tensors {
        decl.shape = decl.shape.iter().map(|s| s.partial_eval(sizes)).collect();
    }
    at_sizes_in(&mut out.stmts, sizes, &value);
    out
}

/// Replaces the size symbols of `stmts`, regions' bodies included.
fn at_sizes_in(
    stmts: &mut [Stmt],
    sizes: &HashMap<String, i64>,
    value: &dyn Fn(&str) -> Option<i64>,
) {
    for stmt in stmts {
        match stmt {
            Stmt::Comp(c) => {
                for r in &mut c.ranges {
                    r.lo = r.lo.partial_eval(sizes);
                    r.hi = r.hi.partial_eval(sizes);
                }
                replace(&mut c.body, value);
                for (_, e) in &mut c.lets {
                    replace(e, value);
                }
                for e in &mut c.exists {
                    replace(e, value);
                }
            }
            Stmt::Call(call) => {
                for a in &mut call.args {
                    if let CallArg::Scalar(e) = a {
                        replace(e, value);
                    }
                }
            }
            Stmt::Loop(l) => {
                for e in l.count.iter_mut().chain(l.cond.iter_mut()) {
                    replace(e, value);
                }
                at_sizes_in(&mut l.body, sizes, value);
            }
            Stmt::If(b) => {
                replace(&mut b.cond, value);
                at_sizes_in(&mut b.then_body, sizes, value);
                at_sizes_in(&mut b.else_body, sizes, value);
            }
        }
    }
}

/// Replaces in `e` every symbol `value` gives a value by that value (an
/// `int64` literal: the type of a size symbol).
fn replace(e: &mut Expr, value: &dyn Fn(&str) -> Option<i64>) {
    match e {
        Expr::Sym(s) => {
            if let Some(v) = value(s) {
                *e = Expr::Lit(Value::Int(v), DType::I64);
            }
        }
        Expr::Lit(..) | Expr::Iter(_) | Expr::Local(_) => {}
        Expr::Read(_, xs) | Expr::Call(_, xs) => {
            for x in xs {
                replace(x, value);
            }
        }
        Expr::Unary(_, a) | Expr::Cast(_, a) => replace(a, value),
        Expr::Binary(_, a, b) => {
            replace(a, value);
            replace(b, value);
        }
        Expr::Select(c, a, b) => {
            replace(c, value);
            replace(a, value);
            replace(b, value);
        }
    }
}
