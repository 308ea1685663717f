//! Load-time statements: a def's statements that read only inputs declared
//! constant (a model's weights, TC inputs the caller names) — weight
//! packing above all — split off into a def of their own, run once when the
//! constants are bound, whose results the rest of the def takes as
//! parameters.
//!
//! A statement is hoisted when every tensor it reads is a constant or a
//! hoisted result, every scalar it mentions is a constant, an integer
//! scalar or a size symbol, it writes a temporary that no other statement
//! writes, and every size its ranges and shape need is a size symbol of
//! the constants' shapes (or an integer scalar), so that the load def binds
//! them. Requires a def that passes `ir::verify_program`; guarantees that
//! running the load def on the constants and then the run def on the
//! original arguments and the load def's outputs computes what the def
//! computes, statement for statement (the same statements in the same
//! order, only apart).

use std::collections::{BTreeSet, HashMap, HashSet};

use ir::{CallArg, Def, Expr, Param, SizeExpr, Stmt, TensorDecl, TensorRole};

/// A def split into what runs once at load and what runs every time.
#[derive(Clone, Debug)]
pub struct Hoisted {
    /// The hoisted statements: the constants they read as parameters (in
    /// the def's order), the hoisted tensors the rest reads as outputs.
    pub load: Def,
    /// The rest: the def's parameters, then the load def's outputs, whose
    /// computed dimensions are new size symbols (a parameter's dimensions
    /// are symbols or integers).
    pub run: Def,
    /// Each new size symbol of the run def, and its value in the def's.
    pub sizes: Vec<(String, SizeExpr)>,
}

/// `def` split at the statements that read only `constants` (parameter
/// names); `None` when no statement is hoisted. The load def is named
/// `load_name`.
pub fn hoist_constants(def: &Def, constants: &HashSet<String>, load_name: &str) -> Option<Hoisted> {
    let mut writers: HashMap<&str, usize> = HashMap::new();
    for s in &def.stmts {
        for t in s.written() {
            *writers.entry(t).or_insert(0) += 1;
        }
    }
    let int_scalars: HashSet<&str> = def
        .params
        .iter()
        .filter_map(|p| match p {
            Param::Scalar { name, dtype } if dtype.is_int() => Some(name.as_str()),
            _ => None,
        })
        .collect();
    // The symbols the load def can bind: those of the constants' shapes.
    let mut bound: HashSet<String> = int_scalars.iter().map(|s| s.to_string()).collect();
    for t in def.tensor_params().filter(|t| constants.contains(&t.name)) {
        for d in &t.shape {
            bound.extend(d.symbols());
        }
    }
    let is_param = |n: &str| def.params.iter().any(|p| p.name() == n);
    let mut hoisted: HashSet<String> = HashSet::new();
    let (mut load, mut run) = (Vec::new(), Vec::new());
    for s in &def.stmts {
        let outs = s.written();
        let reads_ok = s
            .reads()
            .iter()
            .all(|t| constants.contains(*t) || hoisted.contains(*t));
        let syms_ok = symbols(s).iter().all(|n| {
            if is_param(n) {
                constants.contains(n) || int_scalars.contains(n.as_str())
            } else {
                bound.contains(n)
            }
        });
        let outs_ok = outs.iter().all(|t| {
            writers.get(t) == Some(&1)
                && def.tensor(t).is_some_and(|d| {
                    d.role == TensorRole::Temp
                        && d.shape
                            .iter()
                            .all(|x| x.symbols().iter().all(|y| bound.contains(y)))
                })
        });
        if reads_ok && syms_ok && outs_ok {
            hoisted.extend(outs.iter().map(|t| t.to_string()));
            load.push(s.clone());
        } else {
            run.push(s.clone());
        }
    }
    if load.is_empty() {
        return None;
    }
    // The hoisted tensors the rest reads, in the order they are computed.
    let later: HashSet<&str> = run.iter().flat_map(Stmt::reads).collect();
    let results: Vec<String> = load
        .iter()
        .flat_map(Stmt::written)
        .filter(|t| later.contains(t))
        .map(str::to_string)
        .collect();
    let load_reads: HashSet<&str> = load.iter().flat_map(Stmt::reads).collect();
    let load_syms: HashSet<String> = load.iter().flat_map(symbols).collect();
    let load_params: Vec<Param> = def
        .params
        .iter()
        .filter(|p| match p {
            Param::Tensor(t) => load_reads.contains(t.as_str()),
            Param::Scalar { name, .. } => {
                load_syms.contains(name) || int_scalars.contains(name.as_str())
            }
        })
        .cloned()
        .collect();
    let load_def = Def {
        name: load_name.to_string(),
        tensors: def
            .tensors
            .iter()
            .filter(|t| load_params.iter().any(|p| p.name() == t.name) || hoisted.contains(&t.name))
            .map(|t| {
                let mut t = t.clone();
                if results.contains(&t.name) {
                    t.role = TensorRole::Output;
                }
                t
            })
            .collect(),
        params: load_params,
        outputs: results.clone(),
        stmts: load,
    };
    let mut params = def.params.clone();
    params.extend(results.iter().map(|t| Param::Tensor(t.clone())));
    // Parameters first, as a def keeps its tensors: the def's, then the
    // load def's results, then the rest.
    let mut tensors: Vec<TensorDecl> = def
        .tensors
        .iter()
        .filter(|t| def.params.iter().any(|p| p.name() == t.name))
        .cloned()
        .collect();
    let mut taken: HashSet<String> = def.tensors.iter().map(|t| t.name.clone()).collect();
    taken.extend(def.params.iter().map(|p| p.name().to_string()));
    taken.extend(def.size_symbols());
    let mut sizes = Vec::new();
    for t in results.iter().filter_map(|r| def.tensor(r)) {
        let shape = t
            .shape
            .iter()
            .enumerate()
            .map(|(k, d)| {
                if d.is_const() || d.as_sym().is_some() {
                    return d.clone();
                }
                let mut sym = format!("{}_{k}", t.name);
                while taken.contains(&sym) {
                    sym.push('_');
                }
                taken.insert(sym.clone());
                sizes.push((sym.clone(), d.clone()));
                SizeExpr::sym(&sym)
            })
            .collect();
        tensors.push(TensorDecl {
            role: TensorRole::Input,
            shape,
            ..t.clone()
        });
    }
    tensors.extend(
        def.tensors
            .iter()
            .filter(|t| {
                !hoisted.contains(&t.name) && !def.params.iter().any(|p| p.name() == t.name)
            })
            .cloned(),
    );
    let run_def = Def {
        name: def.name.clone(),
        params,
        outputs: def.outputs.clone(),
        tensors,
        stmts: run,
    };
    Some(Hoisted {
        load: load_def,
        run: run_def,
        sizes,
    })
}

/// The size symbols and scalars statement `s` mentions: in its ranges,
/// body, lets and scalar arguments.
fn symbols(s: &Stmt) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let from_expr = |e: &Expr, out: &mut BTreeSet<String>| {
        e.walk(&mut |x| {
            if let Expr::Sym(n) = x {
                out.insert(n.clone());
            }
        });
    };
    match s {
        Stmt::Comp(c) => {
            for r in &c.ranges {
                out.extend(r.lo.symbols());
                out.extend(r.hi.symbols());
            }
            from_expr(&c.body, &mut out);
            for (_, e) in &c.lets {
                from_expr(e, &mut out);
            }
            for e in &c.exists {
                from_expr(e, &mut out);
            }
        }
        Stmt::Loop(_) | Stmt::If(_) => {
            // A region's own loop indices are bound inside it; the symbols
            // that matter are the ones it takes from outside.
            let mut inner = Vec::new();
            ir::walk_stmts(std::slice::from_ref(s), &mut |x| match x {
                Stmt::Loop(l) => {
                    inner.push(l.index.clone());
                    for e in l.count.iter().chain(&l.cond) {
                        from_expr(e, &mut out);
                    }
                }
                Stmt::If(b) => from_expr(&b.cond, &mut out),
                other => out.extend(symbols(other)),
            });
            for i in inner {
                out.remove(&i);
            }
        }
        Stmt::Call(call) => {
            for a in &call.args {
                if let CallArg::Scalar(e) = a {
                    from_expr(e, &mut out);
                }
            }
        }
    }
    out
}
