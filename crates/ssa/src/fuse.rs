//! Vertical fusion (TensorSSA §4.2.1) on the emitted def: a temporary
//! that a plain `=` statement defines is substituted into the statements
//! of its block that read it, and its statement removed, so an Access or
//! Assign chain and the elementwise operations around it become one
//! statement, and so one kernel.
//!
//! Requires an emitted def (every read in bounds of its tensor, every
//! temporary written by one statement over its whole shape), so
//! substituting a definition never changes which points a reduction
//! skips. A temporary is substituted when every read of it is in a
//! comprehension body of its own block (none in a region, a yield or an
//! output) and either its definition is a view (one read, perhaps
//! converted: substituting it copies nothing, and a matmul reading a
//! transposed operand stays a library matmul) or it is read once, by an
//! elementwise statement (so nothing is computed twice). Guarantees the
//! same results, and a def that passes the IR verifier.

use std::collections::HashMap;

use ir::{walk_stmts, BinOp, Comprehension, Def, Expr, Reduction, Stmt, TensorRole, UnOp};

/// Fuses `def` in place; returns how many statements it removed.
pub fn fuse(def: &mut Def) -> usize {
    let mut written: HashMap<String, usize> = HashMap::new();
    walk_stmts(&def.stmts, &mut |s| {
        for w in s.written() {
            *written.entry(w.to_string()).or_default() += 1;
        }
    });
    let temps: Vec<String> = def
        .tensors
        .iter()
        .filter(|t| t.role == TensorRole::Temp && written.get(&t.name) == Some(&1))
        .map(|t| t.name.clone())
        .collect();
    let mut removed = Vec::new();
    let mut stmts = std::mem::take(&mut def.stmts);
    fuse_block(&mut stmts, &[], &temps, &mut removed);
    def.stmts = stmts;
    def.tensors.retain(|t| !removed.contains(&t.name));
    removed.len()
}

/// Fuses one block (and the blocks of its regions); `kept` are the names
/// the block's end needs (its yields).
fn fuse_block(stmts: &mut Vec<Stmt>, kept: &[String], temps: &[String], removed: &mut Vec<String>) {
    for s in stmts.iter_mut() {
        match s {
            Stmt::Loop(l) => fuse_block(&mut l.body, &l.yields.clone(), temps, removed),
            Stmt::If(b) => {
                fuse_block(&mut b.then_body, &b.then_yields.clone(), temps, removed);
                fuse_block(&mut b.else_body, &b.else_yields.clone(), temps, removed);
            }
            Stmt::Comp(_) | Stmt::Call(_) => {}
        }
    }
    let mut k = 0;
    while k < stmts.len() {
        match substitutable(&stmts[k], &stmts[k + 1..], kept, temps) {
            Some(def) => {
                for s in &mut stmts[k + 1..] {
                    if let Stmt::Comp(c) = s {
                        let body = std::mem::replace(&mut c.body, Expr::int(0));
                        c.body = substitute(body, &def);
                    }
                }
                removed.push(def.tensor.clone());
                stmts.remove(k);
            }
            None => k += 1,
        }
    }
}

/// The definition of `s`'s tensor when the rules of the module doc let it
/// be substituted into `rest`.
fn substitutable(
    s: &Stmt,
    rest: &[Stmt],
    kept: &[String],
    temps: &[String],
) -> Option<Comprehension> {
    let Stmt::Comp(c) = s else { return None };
    let t = &c.tensor;
    let plain = c.op == Reduction::Assign && !c.init && c.lets.is_empty() && c.exists.is_empty();
    if !plain || !temps.contains(t) || kept.contains(t) || c.ranges.len() != c.indices.len() {
        return None;
    }
    let view = is_view(&c.body);
    let affine_view = view && affine_read(&c.body);
    let mut uses = 0;
    for r in rest {
        let Stmt::Comp(u) = r else {
            if r.reads().contains(&t.as_str()) {
                return None;
            }
            continue;
        };
        let in_extras = u
            .lets
            .iter()
            .map(|(_, e)| e)
            .chain(&u.exists)
            .any(|e| !reads_of(e, t).is_empty());
        let here = reads_of(&u.body, t);
        let pointwise = u.op == Reduction::Assign && u.ranges.len() == u.indices.len();
        // Lowering needs a reduction's subscripts affine, and proves a
        // select's reads in bounds over the box: a view substitutes into a
        // reduction only when affine; anything else only where it is read
        // at whole iterators over its own shape (its reads keep their
        // ranges).
        let fits = here.iter().all(|subs| {
            if pointwise {
                (view && affine_view) || whole(subs, u, &c.ranges)
            } else {
                affine_view
            }
        });
        // A read with a run-time subscript (a loop index) is lowered where
        // it is computed unconditionally, not under a `?:` branch, where
        // its bounds would need proving.
        let guarded = !affine_body(&c.body) && read_under_branch(&u.body, t);
        if in_extras || !fits || guarded {
            return None;
        }
        uses += here.len();
    }
    (view || uses == 1).then(|| c.clone())
}

/// Whether `e` only moves or converts one read (a view's gather).
fn is_view(e: &Expr) -> bool {
    match e {
        Expr::Read(_, subs) => subs
            .iter()
            .all(|s| !s.any(&|x| matches!(x, Expr::Read(..)))),
        Expr::Cast(_, a) => is_view(a),
        _ => false,
    }
}

/// Whether the read `e` (perhaps converted) has subscripts affine in
/// iterators (no scalars, divisions or reads).
fn affine_read(e: &Expr) -> bool {
    fn affine(x: &Expr) -> bool {
        match x {
            Expr::Iter(_) | Expr::Lit(..) => true,
            Expr::Binary(BinOp::Add | BinOp::Sub | BinOp::Mul, a, b) => affine(a) && affine(b),
            Expr::Unary(UnOp::Neg, a) => affine(a),
            _ => false,
        }
    }
    match e {
        Expr::Read(_, subs) => subs.iter().all(affine),
        Expr::Cast(_, a) => affine_read(a),
        _ => false,
    }
}

/// Whether every read in `e` has subscripts affine in iterators.
fn affine_body(e: &Expr) -> bool {
    let mut ok = true;
    e.walk(&mut |x| {
        if let Expr::Read(..) = x {
            ok &= affine_read(x);
        }
    });
    ok
}

/// Whether `e` reads `t` inside a branch of a `?:`.
fn read_under_branch(e: &Expr, t: &str) -> bool {
    let mut found = false;
    e.walk(&mut |x| {
        if let Expr::Select(_, a, b) = x {
            found |= !reads_of(a, t).is_empty() || !reads_of(b, t).is_empty();
        }
    });
    found
}

/// Whether `subs` are iterators of `u` ranging as `ranges` (the
/// producer's), in order.
fn whole(subs: &[Expr], u: &Comprehension, ranges: &[ir::IterRange]) -> bool {
    subs.len() == ranges.len()
        && subs.iter().zip(ranges).all(|(s, r)| match s {
            Expr::Iter(i) => u.range(i).is_some_and(|ur| ur.lo == r.lo && ur.hi == r.hi),
            _ => false,
        })
}

/// The subscripts of every read of `t` in `e`.
fn reads_of(e: &Expr, t: &str) -> Vec<Vec<Expr>> {
    e.reads()
        .into_iter()
        .filter(|(name, _)| *name == t)
        .map(|(_, subs)| subs.to_vec())
        .collect()
}

/// `e` with every read of `def`'s tensor replaced by its body at the read's
/// subscripts.
fn substitute(e: Expr, def: &Comprehension) -> Expr {
    e.map(&mut |x| match x {
        Expr::Read(t, subs) if t == def.tensor => {
            let at: HashMap<&str, &Expr> =
                def.indices.iter().map(String::as_str).zip(&subs).collect();
            def.body.clone().map(&mut |y| match y {
                Expr::Iter(i) => at.get(i.as_str()).map_or(Expr::Iter(i), |s| (*s).clone()),
                y => fold(y),
            })
        }
        x => x,
    })
}

/// Integer arithmetic on two literals as one literal, as the TC checker
/// folds it (a substituted constant subscript, `0 + 4`), so the printed
/// program checks back to the same one.
fn fold(e: Expr) -> Expr {
    let Expr::Binary(op, a, b) = &e else { return e };
    let (Expr::Lit(ir::Value::Int(x), t), Expr::Lit(ir::Value::Int(y), _)) = (&**a, &**b) else {
        return e;
    };
    let v = match op {
        BinOp::Add => x.checked_add(*y),
        BinOp::Sub => x.checked_sub(*y),
        BinOp::Mul => x.checked_mul(*y),
        _ => None,
    };
    match v {
        Some(v) => Expr::Lit(ir::Value::Int(v), *t),
        None => e,
    }
}
