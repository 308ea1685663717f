//! The convolution rule: a 2-D convolution
//! `O(n, f, h, w) +=! X(a, c, y, x) * Wt(f, c, i, j)` — output channel `f`
//! read only as the weights' first subscript, input channel `c` (a
//! reduction iterator over all of `X`'s and `Wt`'s channels) only as `X`'s
//! second and the weights' second, any other subscripts (strides,
//! dilations, padding, batch) — becomes, with `L` lanes,
//!
//! ```text
//! V(fb, cb, i, j, l, m) = Wt(L fb + m, L cb + l, i, j)          (zero past F, C)
//! Ob(n, fb, h, w, m) +=! Xb(a, cb, y, x, l) * V(fb, cb, i, j, l, m)
//! ```
//!
//! `Xb` the blocked `X`, when `X` is blocked already or its channels are
//! whole blocks; otherwise (a network's first layer, three channels) `X`
//! is read plain and the weights are packed as `V(fb, c, i, j, m)`. The
//! packing reads only the weights, so with constant weights it runs once,
//! at load. Applies when the output has at least one whole block of
//! channels. Requires what [`super::Blocking::candidate`] checks;
//! guarantees the rewritten sum is the original one over the same terms
//! (plus zero terms for padded lanes), in the blocked order `cb, i, j, l`.

use ir::{BinOp, Comprehension, DType, Expr, Reduction, SizeExpr, Stmt};

use super::{fresh_iters, iter, occurrences, range, reads_any, Blocking};

pub(super) fn rewrite(b: &mut Blocking, c: &Comprehension) -> Option<Vec<Stmt>> {
    if c.op != Reduction::Add || !c.init {
        return None;
    }
    let Expr::Binary(BinOp::Mul, p, q) = &c.body else {
        return None;
    };
    let (conv, x_first) = match_operands(b, c, p, q)
        .map(|m| (m, true))
        .or_else(|| match_operands(b, c, q, p).map(|m| (m, false)))?;
    let f_extent = c.range(&c.indices[1])?.hi.clone();
    if b.value(&f_extent)? < b.lanes {
        return None;
    }
    let x_decl = b.decl(&conv.x)?.clone();
    let wt_shape = b.decl(&conv.wt)?.shape.clone();
    let blocked_input = b.blocked.contains_key(&conv.x) || b.whole_blocks(&x_decl.shape[1]);

    let mut stmts = Vec::new();
    let used: Vec<&str> = c.ranges.iter().map(|r| r.name.as_str()).collect();
    let names = fresh_iters(&used, &b.taken, &["fb", "cb", "l", "m"]);
    let [fb, cb, l, m] = [0, 1, 2, 3].map(|k| iter(&names[k]));
    let (xs, ws) = (&conv.xs, &conv.ws);
    let packed = pack(
        b,
        &conv.wt,
        &wt_shape,
        &x_decl.shape[1],
        blocked_input,
        &mut stmts,
    );
    let (x_read, w_read) = if blocked_input {
        let xb = b.blocked_of(&conv.x, &mut stmts);
        (
            Expr::Read(
                xb,
                vec![
                    xs[0].clone(),
                    cb.clone(),
                    xs[2].clone(),
                    xs[3].clone(),
                    l.clone(),
                ],
            ),
            Expr::Read(
                packed,
                vec![fb.clone(), cb, ws[2].clone(), ws[3].clone(), l, m],
            ),
        )
    } else {
        let ci = iter(&conv.ci);
        (
            Expr::Read(
                conv.x.clone(),
                vec![xs[0].clone(), ci.clone(), xs[2].clone(), xs[3].clone()],
            ),
            Expr::Read(
                packed,
                vec![fb.clone(), ci, ws[2].clone(), ws[3].clone(), m],
            ),
        )
    };
    let body = if x_first {
        Expr::binary(BinOp::Mul, x_read, w_read)
    } else {
        Expr::binary(BinOp::Mul, w_read, x_read)
    };

    let lanes = SizeExpr::constant(b.lanes);
    let fbs = b.blocks(&f_extent);
    let cbs = b.blocks(&x_decl.shape[1]);
    // Reduction iterators in order of first appearance, as the IR keeps them.
    let reductions = |indices: &[String], body: &Expr| {
        let mut order: Vec<String> = Vec::new();
        body.walk(&mut |e| {
            if let Expr::Iter(i) = e {
                if !indices.contains(i) && !order.contains(i) {
                    order.push(i.clone());
                }
            }
        });
        order
            .into_iter()
            .map(|i| {
                if i == names[1] {
                    Some(range(&i, &cbs))
                } else if i == names[2] {
                    Some(range(&i, &lanes))
                } else {
                    c.range(&i).cloned()
                }
            })
            .collect()
    };
    let stmt = b.blocked_statement(
        c,
        (&names[0], fbs),
        &names[3],
        (Reduction::Add, true, body),
        reductions,
    )?;
    stmts.push(stmt);
    Some(stmts)
}

/// A convolution's operands: the input `X(xs)`, the weights `Wt(ws)`, and
/// the input-channel iterator.
struct Conv {
    x: String,
    xs: Vec<Expr>,
    wt: String,
    ws: Vec<Expr>,
    ci: String,
}

/// `x * wt` as a convolution of `c`, if it is one.
fn match_operands(b: &Blocking, c: &Comprehension, x: &Expr, wt: &Expr) -> Option<Conv> {
    let (Expr::Read(xn, xs), Expr::Read(wn, ws)) = (x, wt) else {
        return None;
    };
    if xs.len() != 4 || ws.len() != 4 || xs.iter().chain(ws).any(reads_any) {
        return None;
    }
    if *xn == c.tensor || *wn == c.tensor || xn == wn {
        return None;
    }
    let f = &c.indices[1];
    let Expr::Iter(ci) = &xs[1] else {
        return None;
    };
    if ws[0] != iter(f) || ws[1] != iter(ci) || c.indices.contains(ci) {
        return None;
    }
    if occurrences(&c.body, f) != 1 || occurrences(&c.body, ci) != 2 {
        return None;
    }
    let (xd, wd) = (b.decl(xn)?, b.decl(wn)?);
    if xd.dtype != DType::F32
        || wd.dtype != DType::F32
        || xd.shape.len() != 4
        || wd.shape.len() != 4
    {
        return None;
    }
    // The sum runs over every channel of both, and every output channel is
    // a row of the weights: then padded lanes add only zero terms.
    let cr = c.range(ci)?;
    let channels = b.value(&xd.shape[1])?;
    if cr.lo != SizeExpr::zero()
        || b.value(&cr.hi)? != channels
        || b.value(&wd.shape[1])? != channels
        || b.value(&c.range(f)?.hi)? != b.value(&wd.shape[0])?
    {
        return None;
    }
    Some(Conv {
        x: xn.clone(),
        xs: xs.clone(),
        wt: wn.clone(),
        ws: ws.clone(),
        ci: ci.clone(),
    })
}

/// The weights `wt` packed for a blocked (`V(fb, cb, i, j, l, m)`) or a
/// plain (`V(fb, c, i, j, m)`) input of `channels` channels, zero past the
/// channels; made once per weights and form.
fn pack(
    b: &mut Blocking,
    wt: &str,
    shape: &[SizeExpr],
    channels: &SizeExpr,
    blocked_input: bool,
    stmts: &mut Vec<Stmt>,
) -> String {
    if let Some(p) = b.packed.get(&(wt.to_string(), blocked_input)) {
        return p.clone();
    }
    let lanes = SizeExpr::constant(b.lanes);
    let fbs = b.blocks(&shape[0]);
    let names = fresh_iters(&[], &b.taken, &["fb", "cb", "i", "j", "l", "m"]);
    let [fb, cb, i, j, l, m] = [0, 1, 2, 3, 4, 5].map(|k| iter(&names[k]));
    let f = b.lane_of(&fb, &m);
    let (packed_shape, indices, extents, body) = if blocked_input {
        let ch = b.lane_of(&cb, &l);
        let read = Expr::Read(wt.to_string(), vec![f.clone(), ch.clone(), i, j]);
        let cbs = b.blocks(channels);
        let body = b.guarded(&[(f, &shape[0]), (ch, channels)], read);
        let extents = vec![
            fbs,
            cbs,
            shape[2].clone(),
            shape[3].clone(),
            lanes.clone(),
            lanes,
        ];
        (extents.clone(), names.clone(), extents, body)
    } else {
        let read = Expr::Read(wt.to_string(), vec![f.clone(), cb, i, j]);
        let body = b.guarded(&[(f, &shape[0])], read);
        let extents = vec![
            fbs,
            channels.clone(),
            shape[2].clone(),
            shape[3].clone(),
            lanes,
        ];
        let indices = [0, 1, 2, 3, 5].map(|k| names[k].clone()).to_vec();
        (extents.clone(), indices, extents, body)
    };
    let name = b.temp(&format!("{wt}_packed"), packed_shape);
    let ranges = indices
        .iter()
        .zip(&extents)
        .map(|(i, s)| range(i, s))
        .collect();
    stmts.push(super::assign(&name, &indices, body, ranges));
    b.packed
        .insert((wt.to_string(), blocked_input), name.clone());
    name
}
