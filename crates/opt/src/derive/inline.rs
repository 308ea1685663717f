//! Calls inlined into comprehensions: a def that calls operators (the
//! prelude's `conv2d`, a model's statements) becomes the expressions the
//! derivation rewrites, since OLLIE derives the operators' own
//! expressions, not their names.
//!
//! Each call of a def is replaced by the callee's statements at the call's
//! sizes and scalar values (its size symbols from the arguments' shapes,
//! `signature::call_sizes`), its parameters renamed to the arguments, its
//! results to the call's results, and its temporaries to fresh names;
//! callees that call others are inlined in turn (the checker bounds the
//! depth). Requires a def at concrete sizes whose calls pass tensors and
//! integer or float literals. Guarantees: the def computes what it
//! computed (a call's meaning is its callee's statements on its
//! arguments); an argument that is no literal is an error naming the call.

use std::collections::{HashMap, HashSet};

use ir::{CallArg, Def, Expr, Param, Program, SizeExpr, Stmt, TensorDecl, TensorRole, Value};

use crate::mutant::{call_values, Arg};

/// `def` with every call inlined.
pub fn inline_calls(program: &Program, def: &Def) -> Result<Def, String> {
    let mut out = def.clone();
    for _ in 0..=ir::MAX_CALL_DEPTH {
        let Some(k) = out.stmts.iter().position(|s| matches!(s, Stmt::Call(_))) else {
            return Ok(out);
        };
        let Stmt::Call(call) = out.stmts[k].clone() else {
            continue;
        };
        let body = inline_one(program, &mut out, &call).map_err(|e| {
            format!(
                "statement {} of `{}` calls `{}`: {e}",
                k + 1,
                def.name,
                call.callee
            )
        })?;
        out.stmts.splice(k..=k, body);
    }
    Err(format!(
        "`{}` nests calls deeper than tessera inlines",
        def.name
    ))
}

/// The statements of `call`'s callee on its arguments; declares the
/// callee's temporaries in `caller` under fresh names.
fn inline_one(
    program: &Program,
    caller: &mut Def,
    call: &ir::CallStmt,
) -> Result<Vec<Stmt>, String> {
    let callee = program
        .def(&call.callee)
        .ok_or_else(|| "no such def".to_string())?;
    let mut args = Vec::new();
    for a in &call.args {
        args.push(match a {
            CallArg::Tensor(t) => {
                let decl = caller.tensor(t).ok_or_else(|| format!("no tensor `{t}`"))?;
                let shape = decl
                    .shape
                    .iter()
                    .map(SizeExpr::as_const)
                    .collect::<Option<Vec<i64>>>()
                    .ok_or_else(|| format!("`{t}` has a shape not bound to numbers"))?;
                Arg::Tensor(shape)
            }
            CallArg::Scalar(e) => match literal(e) {
                Some(Value::Int(v)) => Arg::Int(v),
                Some(Value::Float(v)) => Arg::Float(v),
                _ => return Err("a scalar argument is no literal".to_string()),
            },
        });
    }
    let mut values = call_values(callee, &args)?;
    for (p, a) in callee.params.iter().zip(&args) {
        if let (Param::Scalar { name, .. }, Arg::Int(v)) = (p, a) {
            values.insert(name.clone(), *v);
        }
    }
    let at = super::at_sizes(callee, &values);
    // What each of the callee's tensors is called in the caller.
    let mut names: HashMap<String, String> = HashMap::new();
    for (p, a) in at.params.iter().zip(&call.args) {
        if let (Param::Tensor(name), CallArg::Tensor(t)) = (p, a) {
            names.insert(name.clone(), t.clone());
        }
    }
    for (o, r) in at.outputs.iter().zip(&call.results) {
        names.insert(o.clone(), r.clone());
    }
    let mut taken: HashSet<String> = caller.tensors.iter().map(|t| t.name.clone()).collect();
    for t in &at.tensors {
        if t.role == TensorRole::Temp {
            let fresh = (1..)
                .map(|k| format!("{}_{k}", t.name))
                .find(|n| !taken.contains(n))
                .unwrap_or_default();
            taken.insert(fresh.clone());
            caller.tensors.push(TensorDecl {
                name: fresh.clone(),
                ..t.clone()
            });
            names.insert(t.name.clone(), fresh);
        }
    }
    // Float scalars become their literals; integer ones `at_sizes` bound.
    let floats: HashMap<String, Expr> = at
        .params
        .iter()
        .zip(&args)
        .filter_map(|(p, a)| match (p, a) {
            (Param::Scalar { name, dtype }, Arg::Float(v)) => {
                Some((name.clone(), Expr::Lit(Value::Float(*v), *dtype)))
            }
            _ => None,
        })
        .collect();
    let rename = |t: &str| names.get(t).cloned();
    let mut body = Vec::new();
    for s in at.stmts {
        body.push(match s {
            Stmt::Comp(mut c) => {
                c.tensor = rename(&c.tensor).unwrap_or(c.tensor);
                c.rename_reads(&rename);
                let bind = |e: Expr| {
                    e.map(&mut |e| match e {
                        Expr::Sym(s) => floats.get(&s).cloned().unwrap_or(Expr::Sym(s)),
                        e => e,
                    })
                };
                c.body = bind(std::mem::replace(&mut c.body, Expr::int(0)));
                for (_, e) in &mut c.lets {
                    *e = bind(std::mem::replace(e, Expr::int(0)));
                }
                Stmt::Comp(c)
            }
            Stmt::Call(mut inner) => {
                for a in &mut inner.args {
                    match a {
                        CallArg::Tensor(t) => *t = rename(t).unwrap_or_else(|| t.clone()),
                        // The callee's scalars, passed on, are the literals
                        // this call gave them.
                        CallArg::Scalar(e) => {
                            *e = std::mem::replace(e, Expr::int(0)).map(&mut |x| match x {
                                Expr::Sym(s) => match (floats.get(&s), values.get(&s)) {
                                    (Some(f), _) => f.clone(),
                                    (None, Some(v)) => Expr::Lit(Value::Int(*v), ir::DType::I64),
                                    (None, None) => Expr::Sym(s),
                                },
                                x => x,
                            })
                        }
                    }
                }
                for r in &mut inner.results {
                    *r = rename(r).unwrap_or_else(|| r.clone());
                }
                Stmt::Call(inner)
            }
            Stmt::Loop(_) | Stmt::If(_) => {
                return Err(format!(
                    "`{}` has loop or branch regions, which derivation does not inline",
                    callee.name
                ))
            }
        });
    }
    Ok(body)
}

/// The value of a literal scalar argument (a negated or cast literal too).
fn literal(e: &Expr) -> Option<Value> {
    match e {
        Expr::Lit(v, _) => Some(*v),
        Expr::Cast(_, a) => literal(a),
        Expr::Unary(ir::UnOp::Neg, a) => match literal(a)? {
            Value::Int(v) => Some(Value::Int(v.checked_neg()?)),
            Value::Float(v) => Some(Value::Float(-v)),
            Value::Bool(_) => None,
        },
        _ => None,
    }
}
