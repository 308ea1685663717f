//! The concatenation rule: channels joined,
//! `T(n, c, h, w) = c < K ? A(a, c, y, x) : B(a, c - K, y, x)` (the split
//! point `K` a whole number of blocks at the bound sizes, `A` of exactly
//! `K` channels, `B` of the rest), becomes, with `L` lanes,
//!
//! ```text
//! Tb(n, cb, h, w, l) = cb < K / L ? Ab(a, cb, y, x, l) : Bb(a, cb - K / L, y, x, l)
//! ```
//!
//! so that a chain stays blocked through a concatenation (an Inception
//! or DenseNet block). Applies when `A` or `B` is blocked already.
//! Requires what [`super::Blocking::candidate`] checks; guarantees `Tb`'s
//! lanes are `Ab`'s and then `Bb`'s, padded lanes (`B`'s) included.

use ir::{BinOp, Comprehension, Expr, SizeExpr, Stmt};

use super::{fresh_iters, iter, occurrences, reads_any, Blocking};

pub(super) fn rewrite(b: &mut Blocking, c: &Comprehension) -> Option<Vec<Stmt>> {
    let ch = c.indices[1].clone();
    let Expr::Select(cond, first, second) = &c.body else {
        return None;
    };
    let Expr::Binary(BinOp::Lt, lhs, split) = cond.as_ref() else {
        return None;
    };
    let (Expr::Read(a, sa), Expr::Read(bn, sb)) = (first.as_ref(), second.as_ref()) else {
        return None;
    };
    let k = b.value(&size_of(split)?)?;
    if **lhs != iter(&ch) || k <= 0 || k % b.lanes != 0 || c.op != ir::Reduction::Assign {
        return None;
    }
    let shifted = Expr::binary(BinOp::Sub, iter(&ch), split.as_ref().clone());
    if sa.len() != 4 || sb.len() != 4 || sa[1] != iter(&ch) || sb[1] != shifted {
        return None;
    }
    if sa.iter().chain(sb).any(reads_any) || occurrences(&c.body, &ch) != 3 {
        return None;
    }
    let other_subs_free = |s: &[Expr]| [0, 2, 3].iter().all(|&k| occurrences(&s[k], &ch) == 0);
    if !other_subs_free(sa) || !other_subs_free(sb) {
        return None;
    }
    let extent = b.decl(&c.tensor)?.shape[1].clone();
    let (da, db) = (b.decl(a)?.clone(), b.decl(bn)?.clone());
    let total = b.value(&extent)?;
    if b.value(&da.shape[1])? != k
        || b.value(&db.shape[1])? != total - k
        || b.value(&c.range(&ch)?.hi)? != total
        || da.dtype != ir::DType::F32
        || db.dtype != ir::DType::F32
    {
        return None;
    }
    if !b.blocked.contains_key(a) && !b.blocked.contains_key(bn) {
        return None;
    }

    let mut stmts = Vec::new();
    let used: Vec<&str> = c.ranges.iter().map(|r| r.name.as_str()).collect();
    let names = fresh_iters(&used, &b.taken, &["cb", "l"]);
    let (cb, l) = (iter(&names[0]), iter(&names[1]));
    let kb = Expr::int(k / b.lanes);
    let ab = b.blocked_of(a, &mut stmts);
    let bb = b.blocked_of(bn, &mut stmts);
    let read = |t: String, s: &[Expr], block: Expr| {
        Expr::Read(
            t,
            vec![s[0].clone(), block, s[2].clone(), s[3].clone(), l.clone()],
        )
    };
    let body = Expr::Select(
        Box::new(Expr::binary(BinOp::Lt, cb.clone(), kb.clone())),
        Box::new(read(ab, sa, cb.clone())),
        Box::new(read(bb, sb, Expr::binary(BinOp::Sub, cb, kb))),
    );
    let blocks = b.blocks(&extent);
    let stmt = b.blocked_statement(
        c,
        (&names[0], blocks),
        &names[1],
        (ir::Reduction::Assign, false, body),
        |_, _| Some(Vec::new()),
    )?;
    stmts.push(stmt);
    Some(stmts)
}

/// An integer expression over literals and size symbols as a size.
fn size_of(e: &Expr) -> Option<SizeExpr> {
    match e {
        Expr::Lit(ir::Value::Int(v), _) => Some(SizeExpr::constant(*v)),
        Expr::Sym(s) => Some(SizeExpr::sym(s)),
        Expr::Binary(op, x, y) => {
            let (x, y) = (size_of(x)?, size_of(y)?);
            match op {
                BinOp::Add => Some(x.add(&y)),
                BinOp::Sub => Some(x.sub(&y)),
                BinOp::Mul => Some(x.mul(&y)),
                _ => None,
            }
        }
        _ => None,
    }
}
