//! The channel-wise rule: a statement `T(n, c, h, w) op body` that reads
//! at least one blocked tensor, where channel `c` appears only as the
//! second subscript of NCHW reads of `C`-channel tensors (`R(a, c, y, x)`,
//! any other subscripts: pooling windows, shifts) or as the one subscript
//! of per-channel vectors (`P(c)`: a bias, batch norm's scale and mean),
//! becomes, with `L` lanes,
//!
//! ```text
//! Tb(n, cb, h, w, l) op body[R(a, c, y, x) := Rb(a, cb, y, x, l), P(c) := P(L cb + l)]
//! ```
//!
//! so that a chain of such statements after a convolution stays blocked.
//! When `C` is not a whole number of blocks the body is taken only where
//! `L cb + l < C` (zero past it, so padded lanes stay zero), which only an
//! `=` statement allows: a reduction's reads under a condition would no
//! longer be skipped out of bounds. Requires what
//! [`super::Blocking::candidate`] checks; guarantees `Tb`'s first `C` lanes
//! are `T`, element for element, computed by the same operations.

use ir::{Comprehension, DType, Expr, Reduction, Stmt};

use super::{fresh_iters, iter, occurrences, reads_any, Blocking};

pub(super) fn rewrite(b: &mut Blocking, c: &Comprehension) -> Option<Vec<Stmt>> {
    let ch = c.indices[1].clone();
    let extent = b.decl(&c.tensor)?.shape[1].clone();
    let channels = b.value(&extent)?;
    if b.value(&c.range(&ch)?.hi)? != channels {
        return None;
    }
    let whole = b.whole_blocks(&extent);
    if c.op != Reduction::Assign && !(c.init && whole) {
        return None;
    }
    let mut uses = 0;
    let mut reads_blocked = false;
    for (t, subs) in c.body.reads() {
        if subs.iter().any(reads_any) {
            return None;
        }
        let here: usize = subs.iter().map(|s| occurrences(s, &ch)).sum();
        if here == 0 {
            continue;
        }
        let d = b.decl(t)?;
        let per_channel = subs.len() == 1 && subs[0] == iter(&ch);
        let nchw = subs.len() == 4 && subs[1] == iter(&ch) && here == 1;
        if d.dtype != DType::F32 || !(per_channel || nchw) {
            return None;
        }
        if nchw {
            if b.value(&d.shape[1])? != channels {
                return None;
            }
            reads_blocked |= b.blocked.contains_key(t);
        }
        uses += here;
    }
    // The channel must not be used as a value or in a condition.
    if !reads_blocked || occurrences(&c.body, &ch) != uses {
        return None;
    }

    let mut stmts = Vec::new();
    let used: Vec<&str> = c.ranges.iter().map(|r| r.name.as_str()).collect();
    let names = fresh_iters(&used, &b.taken, &["cb", "l"]);
    let (cb, l) = (iter(&names[0]), iter(&names[1]));
    let lane = b.lane_of(&cb, &l);
    let body = c.body.clone().map(&mut |e| match e {
        Expr::Read(t, subs) if subs.len() == 1 && subs[0] == iter(&ch) => {
            Expr::Read(t, vec![lane.clone()])
        }
        Expr::Read(t, subs) if subs.len() == 4 && subs[1] == iter(&ch) => {
            let tb = b.blocked_of(&t, &mut stmts);
            Expr::Read(
                tb,
                vec![
                    subs[0].clone(),
                    cb.clone(),
                    subs[2].clone(),
                    subs[3].clone(),
                    l.clone(),
                ],
            )
        }
        other => other,
    });
    let body = b.guarded(&[(lane, &extent)], body);

    let blocks = b.blocks(&extent);
    let reductions = |_: &[String], _: &Expr| Some(c.reduction_iters().cloned().collect());
    let stmt = b.blocked_statement(
        c,
        (&names[0], blocks),
        &names[1],
        (c.op, c.init, body),
        reductions,
    )?;
    stmts.push(stmt);
    Some(stmts)
}
