//! Horizontal parallelization (TensorSSA §4.2.2): a counted loop whose
//! iterations are independent after conversion becomes statements over
//! one more iterator, the loop index, so the iterations run as one
//! parallel comprehension instead of one after another.
//!
//! After conversion, a loop that updates a slice per iteration
//! (`x[:, c] = f(x[:, c])`) carries the whole tensor, and its yield is a
//! chain of Assign selects `x'(i..) = i_d == c ? e : x(i..)`. Iteration `c`
//! then writes only the points whose index `d` is `c`, and if it reads the
//! carried tensor (or a select of the chain) only at index `c` in
//! dimension `d`, it reads only points no other iteration writes: the
//! initial value's. Such a loop is replaced by its body lifted over the
//! loop index (every temporary gains a leading dimension, the index
//! becomes an iterator, the carried tensor reads its initial value), and
//! each result takes, at every point, the yield of the iteration that
//! wrote it, or the initial value where none did.
//!
//! Requires an emitted def (every temporary written by one statement).
//! Applies to a loop with a literal count and no condition, whose body is
//! comprehensions over constant ranges that start afresh (`=` or `op=!`),
//! and whose every carried tensor is either yielded unchanged or through
//! such a chain in one dimension `d`, read elsewhere in the body only with
//! the loop index itself as subscript `d`, and with at least as many
//! points in `d` as the loop has iterations. Guarantees the loop's results
//! (the body computes, per iteration, what it computed in the loop);
//! fusion then removes the lifted temporaries where it can (the result
//! reads the lifted yield at the diagonal, where every select folds).

use std::collections::{HashMap, HashSet};

use ir::{BinOp, Comprehension, Def, Expr, IterRange, LoopStmt, Reduction, SizeExpr, Stmt, Value};

/// Parallelizes every independent loop of `def` (innermost first);
/// returns how many it replaced.
pub fn parallelize(def: &mut Def) -> usize {
    let mut stmts = std::mem::take(&mut def.stmts);
    let n = parallelize_block(&mut stmts, def);
    def.stmts = stmts;
    n
}

fn parallelize_block(stmts: &mut Vec<Stmt>, def: &mut Def) -> usize {
    let mut n = 0;
    let mut k = 0;
    while k < stmts.len() {
        match &mut stmts[k] {
            Stmt::Loop(l) => n += parallelize_block(&mut l.body, def),
            Stmt::If(b) => {
                n += parallelize_block(&mut b.then_body, def);
                n += parallelize_block(&mut b.else_body, def);
            }
            Stmt::Comp(_) | Stmt::Call(_) => {}
        }
        let lifted = match &stmts[k] {
            Stmt::Loop(l) => independent(l, def).map(|plan| lift(l, &plan, def)),
            _ => None,
        };
        match lifted {
            Some(new) => {
                let len = new.len();
                stmts.splice(k..=k, new);
                k += len;
                n += 1;
            }
            None => k += 1,
        }
    }
    n
}

/// What lifting a loop needs: its iteration count, for each carried
/// tensor the dimension its iterations write by (`None`: yielded
/// unchanged), and each result's shape.
struct Plan {
    count: i64,
    dims: Vec<Option<usize>>,
    shapes: Vec<Vec<SizeExpr>>,
}

/// The plan for `l` when its iterations are independent.
fn independent(l: &LoopStmt, def: &Def) -> Option<Plan> {
    if l.cond.is_some() {
        return None;
    }
    let count = match &l.count {
        Some(Expr::Lit(Value::Int(n), _)) if *n > 0 => *n,
        _ => None?,
    };
    let mut comps: HashMap<&str, &Comprehension> = HashMap::new();
    for s in &l.body {
        let Stmt::Comp(c) = s else { return None };
        let fresh = c.op == Reduction::Assign || c.init;
        let constant = c
            .ranges
            .iter()
            .all(|r| r.lo.as_const().is_some() && r.hi.as_const().is_some());
        if !fresh || !constant || comps.insert(&c.tensor, c).is_some() {
            return None;
        }
    }
    let mut dims = Vec::new();
    // The selects of every chain but their pass-through reads: the reads
    // that must stay within the iteration's slice.
    let mut sliced: HashMap<String, usize> = HashMap::new();
    let mut chain_links: HashSet<&str> = HashSet::new();
    for (carried, y) in l.carried.iter().zip(&l.yields) {
        let mut at = y.as_str();
        let mut dim = None;
        let mut links = vec![carried.param.as_str()];
        while at != carried.param {
            let c = comps.get(at)?;
            let (d, prev) = chain_link(c, &l.index)?;
            if dim.is_some_and(|x| x != d) {
                return None;
            }
            dim = Some(d);
            chain_links.insert(at);
            links.push(at);
            at = prev;
        }
        if let Some(d) = dim {
            let size = def.tensor(&carried.param)?.shape.get(d)?.as_const()?;
            if size < count {
                return None;
            }
            sliced.extend(links.into_iter().map(|t| (t.to_string(), d)));
        }
        dims.push(dim);
    }
    // Every other read of a carried tensor or a chain select is at the
    // loop index in the written dimension.
    let at_index = |e: &Expr| {
        let mut ok = true;
        e.walk(&mut |x| {
            if let Expr::Read(t, subs) = x {
                // A carried tensor yielded unchanged is never written, so
                // it may be read anywhere.
                if let Some(&d) = sliced.get(t.as_str()) {
                    ok &= matches!(subs.get(d), Some(Expr::Sym(s)) if *s == l.index);
                }
            }
        });
        ok
    };
    for s in &l.body {
        let Stmt::Comp(c) = s else { return None };
        let checked: Vec<&Expr> = if chain_links.contains(c.tensor.as_str()) {
            // The pass-through read is the one place a chain reads its
            // predecessor whole.
            let Expr::Select(cond, then, _) = &c.body else {
                return None;
            };
            vec![cond, then]
        } else {
            vec![&c.body]
        };
        let lets_ok = c.lets.iter().all(|(_, e)| at_index(e));
        let exists_ok = c.exists.iter().all(at_index);
        if !lets_ok || !exists_ok || !checked.into_iter().all(at_index) {
            return None;
        }
    }
    let shapes = l
        .results
        .iter()
        .map(|r| Some(def.tensor(r)?.shape.clone()))
        .collect::<Option<Vec<_>>>()?;
    Some(Plan {
        count,
        dims,
        shapes,
    })
}

/// For a select `t(i..) = i_d == index ? e : prev(i..)` (or with the
/// comparison's sides swapped): `d` and `prev`.
fn chain_link<'a>(c: &'a Comprehension, index: &str) -> Option<(usize, &'a str)> {
    if c.op != Reduction::Assign || !c.lets.is_empty() || c.ranges.len() != c.indices.len() {
        return None;
    }
    let Expr::Select(cond, _, prev) = &c.body else {
        return None;
    };
    let Expr::Binary(BinOp::Eq, a, b) = cond.as_ref() else {
        return None;
    };
    let iter = match (a.as_ref(), b.as_ref()) {
        (Expr::Iter(i), Expr::Sym(s)) | (Expr::Sym(s), Expr::Iter(i)) if s == index => i,
        _ => return None,
    };
    let d = c.indices.iter().position(|i| i == iter)?;
    let Expr::Read(prev, subs) = prev.as_ref() else {
        return None;
    };
    let whole = subs.len() == c.indices.len()
        && subs
            .iter()
            .zip(&c.indices)
            .all(|(s, i)| matches!(s, Expr::Iter(x) if x == i));
    whole.then_some((d, prev.as_str()))
}

/// The statements that replace `l`: its body over one more iterator,
/// then one statement per result.
fn lift(l: &LoopStmt, plan: &Plan, def: &mut Def) -> Vec<Stmt> {
    let temps: HashSet<String> = l
        .body
        .iter()
        .filter_map(|s| match s {
            Stmt::Comp(c) => Some(c.tensor.clone()),
            _ => None,
        })
        .collect();
    let inits: HashMap<&str, &str> = l
        .carried
        .iter()
        .map(|c| (c.param.as_str(), c.init.as_str()))
        .collect();
    let mut out = Vec::new();
    for s in &l.body {
        let Stmt::Comp(c) = s else { continue };
        out.push(Stmt::Comp(lift_comp(
            c, &l.index, plan.count, &temps, &inits,
        )));
        widen(def, &c.tensor, plan.count);
    }
    for ((((carried, y), r), dim), decl) in l
        .carried
        .iter()
        .zip(&l.yields)
        .zip(&l.results)
        .zip(&plan.dims)
        .zip(&plan.shapes)
    {
        let indices: Vec<String> = (0..decl.len()).map(|k| format!("i{k}")).collect();
        let whole: Vec<Expr> = indices.iter().map(|i| Expr::Iter(i.clone())).collect();
        let initial = Expr::Read(carried.init.clone(), whole.clone());
        let body = match dim {
            Some(d) => {
                let mut at = vec![whole[*d].clone()];
                at.extend(whole.iter().cloned());
                Expr::Select(
                    Box::new(Expr::binary(
                        BinOp::Lt,
                        whole[*d].clone(),
                        Expr::int(plan.count),
                    )),
                    Box::new(Expr::Read(y.clone(), at)),
                    Box::new(initial),
                )
            }
            None => initial,
        };
        let ranges = indices
            .iter()
            .zip(decl)
            .map(|(i, hi)| IterRange {
                name: i.clone(),
                lo: SizeExpr::zero(),
                hi: hi.clone(),
            })
            .collect();
        out.push(Stmt::Comp(Comprehension::assign(r, indices, body, ranges)));
    }
    let params: HashSet<&str> = l.carried.iter().map(|c| c.param.as_str()).collect();
    def.tensors.retain(|t| !params.contains(t.name.as_str()));
    out
}

/// `c` over one more iterator, first, in place of loop index `index`
/// (`0:count`): reads of `temps` (tensors lifted alike) gain it as their
/// first subscript, and reads of a carried parameter read its initial
/// value instead (`inits`).
pub(crate) fn lift_comp(
    c: &Comprehension,
    index: &str,
    count: i64,
    temps: &HashSet<String>,
    inits: &HashMap<&str, &str>,
) -> Comprehension {
    let taken: Vec<&str> = c.ranges.iter().map(|r| r.name.as_str()).collect();
    let it = fresh(index, &taken);
    let mut map = |e: Expr| match e {
        Expr::Sym(s) if s == index => Expr::Iter(it.clone()),
        Expr::Read(t, subs) if temps.contains(&t) => {
            let mut at = vec![Expr::Iter(it.clone())];
            at.extend(subs);
            Expr::Read(t, at)
        }
        Expr::Read(t, subs) => match inits.get(t.as_str()) {
            Some(init) => Expr::Read(init.to_string(), subs),
            None => Expr::Read(t, subs),
        },
        e => e,
    };
    let mut lifted = c.clone();
    map_exprs(&mut lifted, &mut map);
    lifted.indices.insert(0, it.clone());
    lifted.ranges.insert(
        0,
        IterRange {
            name: it,
            lo: SizeExpr::zero(),
            hi: SizeExpr::constant(count),
        },
    );
    lifted
}

/// Rewrites every expression of `c` (its body, lets and `exists` clauses)
/// with `f`, node by node.
pub(crate) fn map_exprs(c: &mut Comprehension, f: &mut dyn FnMut(Expr) -> Expr) {
    let body = std::mem::replace(&mut c.body, Expr::int(0));
    c.body = body.map(f);
    for (_, e) in &mut c.lets {
        *e = e.clone().map(f);
    }
    for e in &mut c.exists {
        *e = e.clone().map(f);
    }
}

/// Gives tensor `t`'s declaration in `def` a leading dimension of `count`.
pub(crate) fn widen(def: &mut Def, t: &str, count: i64) {
    if let Some(t) = def.tensors.iter_mut().find(|d| d.name == t) {
        t.shape.insert(0, SizeExpr::constant(count));
    }
}

/// `name`, or `name_` repeated until it is not in `taken`.
fn fresh(name: &str, taken: &[&str]) -> String {
    let mut n = name.to_string();
    while taken.contains(&n.as_str()) {
        n.push('_');
    }
    n
}
