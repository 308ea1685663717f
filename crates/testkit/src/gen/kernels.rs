//! The families of the kernels the compiled path specializes on: a generic
//! statement of rank 1 to 4 (alone, feeding a second statement through a
//! temporary, or with a second statement accumulating onto it), matmuls and
//! convolutions.
//!
//! The generic statement is drawn by the core ([`Gen::stmt`]) over
//! iterators this family chooses: the profile's widths, the last one often
//! a row of 16 or more (a full 512-bit vector of float32, with a tail when
//! the width is odd), `=` or a reduction by `+ max min *` whose reads may
//! reach past their inputs' edges (padding). Each of its iterators is
//! either fixed by `where` ([`Bound::Where`]) or left to range inference
//! ([`Bound::Infer`]), which then gives exactly its range: the statement
//! reads it alone over a dimension of its extent, and no subscript of it
//! without other iterators reaches past its dimension. Matmuls (batched,
//! transposed, by `max`, with a bias, a ReLU or a second matmul after them)
//! and convolutions (2-d, depthwise, 1-d, pooling; padded, strided, with a
//! bias and a ReLU) are written whole, over named size symbols (`M`, `K`,
//! `KH`, ...).
//!
//! Like every family, they give programs that check at their sizes.

use std::collections::BTreeSet;

use super::generate::{Gen, It};
use super::program::{add, mul, Aff, Agg, Bound, Dim, Expr, Iv, Op, St};

/// One statement of rank 1 to 4 with up to two reductions; or that
/// statement writing a temporary that a second statement reads, or followed
/// by a second statement accumulating onto it (`+=`, `max=`).
pub fn generic(g: &mut Gen) -> Option<()> {
    let rank = 1 + g.rng.below(4);
    let reductions = g.rng.pick(&[0, 0, 1, 1, 1, 2]);
    let op = if reductions == 0 && g.rng.chance(60) {
        Op::Assign
    } else {
        Op::Init(g.rng.pick(&[
            Agg::Add,
            Agg::Add,
            Agg::Add,
            Agg::Add,
            Agg::Max,
            Agg::Max,
            Agg::Min,
            Agg::Mul,
        ]))
    };
    let mut its = Vec::new();
    for _ in 0..rank {
        g.new_iter(&mut its, true, false);
    }
    if g.rng.chance(40) {
        widen(g, &mut its);
    }
    for _ in 0..reductions {
        g.new_iter(&mut its, false, false);
    }
    // Left-hand iterators are left to inference half the time and
    // reductions more often, as a window's range usually comes from the
    // filter it indexes.
    let infer: BTreeSet<String> = its
        .iter()
        .filter(|it| g.rng.chance(if it.lhs { 50 } else { 70 }))
        .map(|it| it.name.clone())
        .collect();
    g.outputs.push("O".to_string());
    match g.rng.below(10) {
        0..=6 => {
            let st = bounded(g, "O", op, its, &infer);
            g.stmts.push(st);
        }
        7 | 8 => {
            let st = bounded(g, "T", op, its, &infer);
            g.stmts.push(st);
            let op = g
                .rng
                .pick(&[Op::Assign, Op::Init(Agg::Add), Op::Init(Agg::Max)]);
            let st = g.stmt("O", op, None, &["T"], false);
            g.stmts.push(st);
        }
        _ => {
            let first = bounded(g, "O", op, its, &infer);
            let fixed = super::generate::lhs_iters(&first);
            g.stmts.push(first);
            let agg = if g.rng.chance(80) { Agg::Add } else { Agg::Max };
            let st = g.stmt("O", Op::Acc(agg), Some(fixed), &[], false);
            g.stmts.push(st);
        }
    }
    Some(())
}

/// Makes the last iterator of `its` a row of 16 or more, a width of the
/// profile that fits its volume, where there is one.
fn widen(g: &mut Gen, its: &mut [It]) {
    let Some((last, others)) = its.split_last_mut() else {
        return;
    };
    let volume: i64 = others.iter().map(|i| i.hi - i.lo).product();
    let wide: Vec<i64> = g
        .profile
        .lhs_widths
        .iter()
        .copied()
        .filter(|&w| w >= 16 && w * volume <= g.profile.max_volume)
        .collect();
    if !wide.is_empty() {
        last.hi = last.lo + g.rng.pick(&wide);
    }
}

/// A statement of the core over `its` whose iterators in `infer` are left
/// to range inference wherever it gives exactly their ranges, and every
/// other iterator is fixed by `where`.
///
/// Inference resolves an iterator from a subscript of it alone, or of it
/// with iterators already resolved (where a subscript of it alone
/// overrides those), intersecting what one round finds: so an iterator is
/// inferred exactly when it starts at 0, some read has it alone over a
/// dimension of its extent (a fresh input read at the inferred iterators
/// alone is multiplied in where none does), and every subscript of it
/// without other iterators stays inside its dimension (a padded `i - 1`
/// would narrow it).
fn bounded(g: &mut Gen, lhs: &str, op: Op, its: Vec<It>, infer: &BTreeSet<String>) -> St {
    let mut st = g.stmt(lhs, op, Some(its), &[], false);
    let ranges = st.range_map();
    let reads: Vec<(String, Vec<Aff>)> = st
        .all_reads()
        .into_iter()
        .filter(|r| !r.2)
        .map(|r| (r.0, r.1))
        .collect();
    let mut anchors = Vec::new();
    for r in &st.ranges {
        let mut exact = false;
        let mut narrowed = false;
        for (t, subs) in &reads {
            for (a, &extent) in subs.iter().zip(&g.shapes[t]) {
                if a.alone() == Some(r.name.as_str()) && extent == r.hi {
                    exact = true;
                }
                let only = a.mentions(&r.name) && a.terms.iter().all(|t| t.1 == r.name);
                let (lo, hi) = a.interval(&ranges);
                narrowed |= only && (lo < 0 || hi >= extent);
            }
        }
        let inferred = infer.contains(&r.name) && r.lo == 0 && !narrowed;
        if inferred && !exact {
            anchors.push(r.clone());
        }
        let bound = if inferred { Bound::Infer } else { Bound::Where };
        st.bounds.insert(r.name.clone(), bound);
    }
    for chunk in anchors.chunks(4) {
        let extents: Vec<i64> = chunk.iter().map(|r| r.hi).collect();
        let name = g.input(&extents);
        let subs = chunk.iter().map(|r| Aff::var(&r.name)).collect();
        st.body = mul(Expr::Read(name, subs), st.body);
    }
    st
}

/// A (batched, transposed) matmul, by `+` or (no matmul for a library) by
/// `max`, alone or with a bias, a ReLU or a second matmul after it.
pub fn matmul(g: &mut Gen) -> Option<()> {
    let widths = g.profile.lhs_widths;
    let (m, n, k) = (g.rng.pick(widths), g.rng.pick(widths), g.rng.pick(widths));
    let batch = g.rng.chance(25).then(|| g.rng.range(1, 3));
    // The batch dimension, if any, comes first in every tensor.
    let batched = |names: &[&str]| -> Vec<String> {
        let b = batch.map(|_| "b");
        b.iter().chain(names).map(|s| s.to_string()).collect()
    };
    let dims = |g: &mut Gen, syms: &[(&str, i64)]| -> Vec<Dim> {
        let q = batch.map(|q| ("Q", q));
        q.iter().chain(syms).map(|&(s, v)| sym(g, s, v)).collect()
    };
    let (a_dims, a_idx) = if g.rng.chance(20) {
        (dims(g, &[("K", k), ("M", m)]), batched(&["k", "i"]))
    } else {
        (dims(g, &[("M", m), ("K", k)]), batched(&["i", "k"]))
    };
    g.param("A", a_dims);
    let (b_dims, b_idx) = if g.rng.chance(20) {
        (dims(g, &[("N", n), ("K", k)]), batched(&["j", "k"]))
    } else {
        (dims(g, &[("K", k), ("N", n)]), batched(&["k", "j"]))
    };
    g.param("B", b_dims);
    let agg = if g.rng.chance(15) { Agg::Max } else { Agg::Add };
    let mut sizes = vec![("i", m), ("j", n)];
    if let Some(q) = batch {
        sizes.insert(0, ("b", q));
    }
    let out = batched(&["i", "j"]);
    let mut box_ = ranges(&sizes);
    box_.push(Iv {
        name: "k".to_string(),
        lo: 0,
        hi: k,
    });
    let product = mul(read("A", &a_idx), read("B", &b_idx));
    let mm = |lhs: &str| {
        St::new(
            lhs,
            out.clone(),
            Op::Init(agg),
            product.clone(),
            box_.clone(),
        )
    };
    match g.rng.below(5) {
        0 => {
            let bias = vec![sym(g, "N", n)];
            g.param("Bias", bias);
            let plus = St::new(
                "O",
                out.clone(),
                Op::Acc(Agg::Add),
                read("Bias", &["j".to_string()]),
                ranges(&sizes),
            );
            g.stmts.extend([mm("O"), plus]);
            g.outputs.push("O".to_string());
        }
        1 => {
            let relu = Expr::Max(Box::new(read("O", &out)), Box::new(Expr::Int(0)));
            let st = St::new("R", out.clone(), Op::Assign, relu, ranges(&sizes));
            g.stmts.extend([mm("O"), st]);
            g.outputs.extend(["O".to_string(), "R".to_string()]);
        }
        2 => {
            let l = g.rng.pick(widths);
            let c_dims = dims(g, &[("N", n), ("L", l)]);
            g.param("C", c_dims);
            let mut second = sizes.clone();
            second.pop();
            second.extend([("l", l), ("j", n)]);
            let body = mul(read("T", &out), read("C", &batched(&["j", "l"])));
            let st = St::new(
                "O",
                batched(&["i", "l"]),
                Op::Init(Agg::Add),
                body,
                ranges(&second),
            );
            g.stmts.extend([mm("T"), st]);
            g.outputs.push("O".to_string());
        }
        _ => {
            g.stmts.push(mm("O"));
            g.outputs.push("O".to_string());
        }
    }
    small(g)
}

/// A 2-d, depthwise or 1-d convolution or a pooling (by `max` or `+`),
/// padded or not, strided or not, sometimes with a bias and a ReLU after
/// it.
pub fn convolution(g: &mut Gen) -> Option<()> {
    // 0 to 5: 2-d, 6: depthwise, 7: 1-d, 8 and 9: pooling.
    let kind = g.rng.below(10);
    let (pooling, rows) = (kind >= 8, kind != 7);
    let n = g.rng.range(1, 2);
    let c = g.rng.pick(&[1, 2, 3, 4]);
    let f = g.rng.pick(&[1, 2, 3, 4, 8, 16]);
    let (kh, kw) = (g.rng.pick(&[1, 2, 3, 5]), g.rng.pick(&[1, 2, 3, 5]));
    let widths = g.profile.lhs_widths;
    let (mut h, mut w) = (g.rng.pick(widths), g.rng.pick(widths));
    let stride = if g.rng.chance(20) { 2 } else { 1 };
    // Output ranges fixed by `where` let padded reads fall outside the
    // input; inferred ones stop where the window leaves it, and are empty
    // below the window's size. A pooling has no filter to infer its window
    // from, so it fixes every range.
    let explicit = pooling || g.rng.chance(75);
    if !explicit {
        h = h.max(kh);
        w = w.max(kw);
    }
    let mut pad = |k: i64| {
        if explicit {
            g.rng.range(0, (k - 1).min(2))
        } else {
            0
        }
    };
    let (ph, pw) = (pad(kh), pad(kw));
    let out = |size: i64, k: i64| {
        if explicit {
            (size + stride - 1) / stride
        } else {
            (size - k) / stride + 1
        }
    };
    let extent = |v: &str| match v {
        "n" => n,
        "c" => c,
        "f" => f,
        "h" => out(h, kh),
        "w" => out(w, kw),
        "r" => kh,
        _ => kw,
    };
    // The input's row (column) at output `x` and window offset `r`.
    let at = |x: &str, r: &str, p: i64| Aff {
        terms: vec![(stride, x.to_string()), (1, r.to_string())],
        c: -p,
    };
    let mut dims = vec![sym(g, "N", n), sym(g, "C", c)];
    let mut subs = vec![Aff::var("n"), Aff::var("c")];
    if rows {
        dims.push(sym(g, "H", h));
        subs.push(at("h", "r", ph));
    }
    dims.push(sym(g, "W", w));
    subs.push(at("w", "s", pw));
    g.param("In", dims);
    let pixels = Expr::Read("In".to_string(), subs);
    let (op, body, lhs, reductions): (Op, Expr, &[&str], &[&str]) = match kind {
        0..=5 => {
            let filter = vec![
                sym(g, "F", f),
                sym(g, "C", c),
                sym(g, "KH", kh),
                sym(g, "KW", kw),
            ];
            g.param("Wt", filter);
            let weights = read("Wt", &names(&["f", "c", "r", "s"]));
            let body = mul(pixels, weights);
            (
                Op::Init(Agg::Add),
                body,
                &["n", "f", "h", "w"],
                &["c", "r", "s"],
            )
        }
        6 => {
            let filter = vec![sym(g, "C", c), sym(g, "KH", kh), sym(g, "KW", kw)];
            g.param("Wt", filter);
            let body = mul(pixels, read("Wt", &names(&["c", "r", "s"])));
            (Op::Init(Agg::Add), body, &["n", "c", "h", "w"], &["r", "s"])
        }
        7 => {
            let filter = vec![sym(g, "F", f), sym(g, "C", c), sym(g, "KW", kw)];
            g.param("Wt", filter);
            let body = mul(pixels, read("Wt", &names(&["f", "c", "s"])));
            (Op::Init(Agg::Add), body, &["n", "f", "w"], &["c", "s"])
        }
        _ => {
            let agg = if g.rng.chance(70) { Agg::Max } else { Agg::Add };
            (Op::Init(agg), pixels, &["n", "c", "h", "w"], &["r", "s"])
        }
    };
    let box_: Vec<Iv> = lhs
        .iter()
        .chain(reductions)
        .map(|&v| Iv {
            name: v.to_string(),
            lo: 0,
            hi: extent(v),
        })
        .collect();
    let mut st = St::new("O", names(lhs), op, body, box_);
    let bound = if explicit { Bound::Where } else { Bound::Infer };
    for v in ["h", "w", "r", "s"] {
        let window = v == "r" || v == "s";
        if st.ranges.iter().any(|r| r.name == v) && (!window || pooling) {
            st.bounds.insert(v.to_string(), bound);
        }
    }
    if g.rng.chance(25) {
        // The bias is per output channel, the statement's second index.
        let channel = st.idx[1].clone();
        let size = if channel == "f" { ("F", f) } else { ("C", c) };
        let bias = vec![sym(g, size.0, size.1)];
        g.param("Bias", bias);
        let idx = st.idx.clone();
        let sum = add(read("T", &idx), read("Bias", &[channel]));
        let relu = Expr::Max(Box::new(sum), Box::new(Expr::Int(0)));
        let box_ = st.intervals(&idx);
        st.lhs = "T".to_string();
        g.stmts.push(st);
        g.stmts.push(St::new("O", idx, Op::Assign, relu, box_));
    } else {
        g.stmts.push(st);
    }
    g.outputs.push("O".to_string());
    small(g)
}

/// Size symbol `name` of value `v` (added to the program's sizes).
fn sym(g: &mut Gen, name: &str, v: i64) -> Dim {
    g.sizes.insert(name.to_string(), v);
    Dim::Sym(name.to_string())
}

/// A read of `t` at these iterators alone.
fn read(t: &str, idx: &[String]) -> Expr {
    Expr::Read(t.to_string(), idx.iter().map(|v| Aff::var(v)).collect())
}

fn names(vs: &[&str]) -> Vec<String> {
    vs.iter().map(|v| v.to_string()).collect()
}

/// Ranges `0:n` of the iterators.
fn ranges(sizes: &[(&str, i64)]) -> Vec<Iv> {
    sizes
        .iter()
        .map(|&(v, n)| Iv {
            name: v.to_string(),
            lo: 0,
            hi: n,
        })
        .collect()
}

/// Gives up on a kernel whose box exceeds four times the profile's volume:
/// a convolution's box multiplies up to seven sizes, so the profile's own
/// bound would leave few of them.
fn small(g: &Gen) -> Option<()> {
    let fits = g
        .stmts
        .iter()
        .all(|s| s.ranges.iter().map(|r| r.hi - r.lo).product::<i64>() <= 4 * g.profile.max_volume);
    fits.then_some(())
}
