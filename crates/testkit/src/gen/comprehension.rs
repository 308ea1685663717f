//! The single-comprehension family: one statement `O(..) op body` over
//! fresh inputs, drawn to reach the corners of what one statement means
//! (the cases the interpreter's property test has always covered):
//!
//! - every operator: `=`, `+=!`, `*=!`, `max=!`, `min=!`;
//! - `where` ranges of left-hand iterators that start above 0 (the first
//!   elements of the tensor stay zero) and of reduction iterators that
//!   start at -1;
//! - iterators left to range inference, bounded by `exists` reads `a*x + c`
//!   (and by every other read outside `?:` of `x` alone);
//! - reads whose subscripts have coefficients 0, 1, 2 and -1 and offsets
//!   that often fall outside the tensor (a skipped point in a reduction,
//!   an error in `=`);
//! - reads under `?:`, guarded by their exact bounds check or by `i < c`
//!   (which may let an out-of-bounds read through);
//! - literals, iterators cast to the element type, and a `where` let
//!   holding the first read.

use super::generate::{Gen, It};
use super::program::{add, mul, sel, Aff, Agg, Bound, Cond, Expr, Iv, Op, St};

const OPS: [Op; 5] = [
    Op::Assign,
    Op::Init(Agg::Add),
    Op::Init(Agg::Mul),
    Op::Init(Agg::Max),
    Op::Init(Agg::Min),
];

/// Writes `O(..) op body`, its inputs and the output `O`; gives up when
/// inference makes the box larger than the profile allows.
pub fn comprehension(g: &mut Gen) -> Option<()> {
    let op = g.rng.pick(&OPS);
    let reduce = op != Op::Assign;
    // One to three inputs of rank 1 to 4, each dimension 1 to 5: shapes
    // unrelated to the ranges, so that reads often fall outside.
    let mut tensors = Vec::new();
    for _ in 0..g.rng.range(1, 3) {
        let shape: Vec<i64> = (0..g.rng.range(1, 4)).map(|_| g.rng.range(1, 5)).collect();
        tensors.push(g.input(&shape));
    }
    let mut its = Vec::new();
    for _ in 0..g.rng.range(1, 4) {
        g.new_iter(&mut its, true, false);
    }
    if reduce {
        for _ in 0..g.rng.range(0, 2) {
            g.new_iter(&mut its, false, false);
        }
    }
    for it in &mut its {
        let width = it.hi - it.lo;
        it.lo = if it.lhs {
            g.rng.range(0, 2)
        } else {
            g.rng.range(-1, 1)
        };
        it.hi = it.lo + width;
    }

    let mut terms = Vec::new();
    for k in 0..g.rng.range(1, 4) {
        let kind = g.rng.below(10);
        terms.push(match kind {
            // The first term is a read, so that the body has the element
            // type (a literal or a cast alone would make it `int32` or the
            // cast's type).
            8.. if k == 0 => read(g, &tensors, &its),
            // In `=` an out-of-bounds read is an error; most reads there
            // are guarded by their bounds, so that most cases have values.
            2..=4 if !reduce => guarded(g, &tensors, &its, true),
            0..=4 => read(g, &tensors, &its),
            5..=7 => {
                let exact = g.rng.chance(80);
                guarded(g, &tensors, &its, exact)
            }
            8 => literal(g),
            _ => Expr::Iter(g.rng.pick(&its).name),
        });
    }
    let mut lets = Vec::new();
    if matches!(terms[0], Expr::Read(..)) && g.rng.chance(30) {
        let first = std::mem::replace(&mut terms[0], Expr::Let("t0".to_string()));
        lets.push(("t0".to_string(), first));
    }
    let mut body = terms.remove(0);
    for t in terms {
        body = if g.rng.coin() {
            add(body, t)
        } else {
            mul(body, t)
        };
    }

    // An iterator with a range that the statement does not use is an
    // error; drop the reduction iterators the body does not mention.
    let mut used = body.vars();
    for (_, e) in &lets {
        used.extend(e.vars());
    }
    its.retain(|it| it.lhs || used.contains(&it.name));

    let idx: Vec<String> = its
        .iter()
        .filter(|it| it.lhs)
        .map(|it| it.name.clone())
        .collect();
    let ranges: Vec<Iv> = its
        .iter()
        .map(|it| Iv {
            name: it.name.clone(),
            lo: it.lo,
            hi: it.hi,
        })
        .collect();
    let mut st = St::new("O", idx, op, body, ranges);
    st.lets = lets;
    infer(g, &mut st);
    let volume: i64 = st.ranges.iter().map(|r| r.hi - r.lo).product();
    if volume > g.profile.max_volume {
        return None;
    }
    let shape = st.idx.iter().map(|v| st.range(v).1).collect();
    g.shapes.insert("O".to_string(), shape);
    g.stmts.push(st);
    g.outputs.push("O".to_string());
    Some(())
}

/// Leaves about half of the iterators to inference, each bounded by an
/// `exists` read `a*x + c` of one of the inputs: its range becomes what
/// inference gives, the intersection over the subscripts outside `?:`
/// that mention it alone (which take precedence over those that mention
/// others too). An iterator whose intersection is empty keeps its `where`
/// range (an empty inferred range is an error), without the `exists`.
fn infer(g: &mut Gen, st: &mut St) {
    let unguarded: Vec<_> = st.all_reads().into_iter().filter(|r| !r.2).collect();
    let inputs: Vec<String> = g.inputs.iter().map(|x| x.name.clone()).collect();
    for r in &mut st.ranges {
        if g.rng.coin() {
            st.bounds.insert(r.name.clone(), Bound::Where);
            continue;
        }
        let t = g.rng.pick(&inputs);
        let rank = g.shapes[&t].len();
        let d = g.rng.below(rank);
        let mut sub = Aff::konst(g.rng.range(0, 2));
        sub.terms.push((g.rng.pick(&[1, 2, -1]), r.name.clone()));
        let subs: Vec<Aff> = (0..rank)
            .map(|e| if e == d { sub.clone() } else { Aff::konst(0) })
            .collect();
        let (mut lo, mut hi) = (0, i64::MAX);
        let reads = unguarded.iter().map(|x| (&x.0, &x.1)).chain([(&t, &subs)]);
        for (t, subs) in reads {
            for (s, &extent) in subs.iter().zip(&g.shapes[t]) {
                if let [(a, v)] = &s.terms[..] {
                    if *v == r.name {
                        let (l, h) = alone_range(*a, s.c, extent);
                        lo = lo.max(l);
                        hi = hi.min(h);
                    }
                }
            }
        }
        if lo < hi {
            (r.lo, r.hi) = (lo, hi);
            st.bounds.insert(r.name.clone(), Bound::Infer);
            st.exists.push((t, subs));
        } else {
            st.bounds.insert(r.name.clone(), Bound::Where);
        }
    }
}

/// The range that a subscript `a*x + c` allows `x` in a dimension of
/// extent `d`: the largest range starting at 0 or above over which it stays
/// inside (empty when there is none).
fn alone_range(a: i64, c: i64, d: i64) -> (i64, i64) {
    // a*x + c in [0, d-1]: x in [ceil(-c/a), floor((d-1-c)/a)] for a > 0,
    // and in [ceil((d-1-c)/a), floor(-c/a)] for a < 0.
    let ceil = |n: i64, m: i64| -(-n).div_euclid(m);
    let (lo, hi) = if a > 0 {
        (ceil(-c, a), (d - 1 - c).div_euclid(a) + 1)
    } else {
        (ceil(c - (d - 1), -a), c.div_euclid(-a) + 1)
    };
    (lo.max(0), hi)
}

/// A read of one of `tensors` over `its`: per dimension, coefficients
/// mostly 0 and 1 (so that reads are often in bounds) and an offset.
fn read_at(g: &mut Gen, tensors: &[String], its: &[It]) -> (String, Vec<Aff>) {
    let t = g.rng.pick(tensors);
    let rank = g.shapes[&t].len();
    let subs = (0..rank)
        .map(|_| {
            let mut a = Aff::konst(if g.rng.chance(60) {
                0
            } else {
                g.rng.range(-2, 2)
            });
            for it in its {
                let coef = g.rng.pick(&[0, 0, 0, 0, 1, 1, 1, 2, -1]);
                if coef != 0 {
                    a.terms.push((coef, it.name.clone()));
                }
            }
            a
        })
        .collect();
    (t, subs)
}

fn read(g: &mut Gen, tensors: &[String], its: &[It]) -> Expr {
    let (t, subs) = read_at(g, tensors, its);
    Expr::Read(t, subs)
}

/// `(cond ? read : literal)`, the condition the read's exact bounds check
/// or `i < c` for an iterator `i`.
fn guarded(g: &mut Gen, tensors: &[String], its: &[It], exact: bool) -> Expr {
    let (t, subs) = read_at(g, tensors, its);
    let cond = if exact {
        Cond::InBounds(t.clone(), subs.clone())
    } else {
        let it = g.rng.pick(its);
        Cond::Lt(Aff::var(&it.name), g.rng.range(0, 5))
    };
    let other = literal(g);
    sel(cond, Expr::Read(t, subs), other)
}

/// A literal of the element type, zero and a negative one included.
fn literal(g: &mut Gen) -> Expr {
    if g.dtype.is_float() {
        Expr::Flt(g.rng.pick(&[0.0, 1.0, 2.0, 0.5, -1.5]))
    } else {
        Expr::Int(g.rng.pick(&[0, 1, 2, 0, -1]))
    }
}
