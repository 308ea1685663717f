//! Static bounds checks on checked IR, symbolic or with sizes bound.
//!
//! Rejects what is decidable before running: empty ranges, writes outside
//! the left-hand tensor, and reads of `=` statements outside their tensor
//! (reads not under a `?:` branch, with affine subscripts). A condition that
//! depends on sizes not bound yet is left to the interpreter, which checks
//! every read as it runs.

use std::collections::HashMap;

use ir::{Comprehension, Def, Reduction, SizeExpr};

use crate::check::unguarded_reads;
use crate::infer;

/// One violation: the tensor or iterator it concerns and a message.
pub struct Violation {
    pub name: String,
    pub message: String,
    pub help: &'static str,
}

/// Checks one comprehension of `def` with the sizes in `sizes` bound.
pub fn check_comprehension(
    def: &Def,
    c: &Comprehension,
    sizes: &HashMap<String, i64>,
) -> Option<Violation> {
    let bind = |s: &SizeExpr| s.partial_eval(sizes);
    let ranges: HashMap<String, (SizeExpr, SizeExpr)> = c
        .ranges
        .iter()
        .map(|r| (r.name.clone(), (bind(&r.lo), bind(&r.hi))))
        .collect();
    for r in &c.ranges {
        let (lo, hi) = &ranges[&r.name];
        if hi.sub(lo).as_const().is_some_and(|n| n <= 0) {
            return Some(Violation {
                name: r.name.clone(),
                message: format!("the range of iterator `{}` is empty ({lo}:{hi})", r.name),
                help: "check the sizes involved and the `where` clauses",
            });
        }
    }
    let shape = |t: &str| {
        def.tensor(t)
            .map(|d| d.shape.iter().map(bind).collect::<Vec<_>>())
    };
    if let Some(dims) = shape(&c.tensor) {
        for (ix, dim) in c.indices.iter().zip(&dims) {
            let (_, hi) = &ranges[ix];
            if dim.sub(hi).as_const().is_some_and(|v| v < 0) {
                return Some(Violation {
                    name: ix.clone(),
                    message: format!(
                        "writes `{}` out of bounds: `{ix}` reaches {} but the dimension is {dim}",
                        c.tensor,
                        hi.add_const(-1)
                    ),
                    help: "narrow the `where` range of this iterator",
                });
            }
        }
    }
    if c.op != Reduction::Assign {
        return None;
    }
    let mut reads = Vec::new();
    unguarded_reads(&c.body, &mut reads);
    for (_, e) in &c.lets {
        unguarded_reads(e, &mut reads);
    }
    for (t, subs) in reads {
        let Some(dims) = shape(t) else { continue };
        for (k, (sub, dim)) in subs.iter().zip(&dims).enumerate() {
            let Some((lin, dim)) = infer::bounded_form(&sub.clone(), dim) else {
                continue;
            };
            let lin = infer::Linear {
                coefs: lin.coefs,
                rest: bind(&lin.rest),
            };
            let Some((lo, hi)) = infer::extent(&lin, &ranges, None) else {
                continue;
            };
            let below = lo.as_const().is_some_and(|v| v < 0);
            let above = dim.add_const(-1).sub(&hi).as_const().is_some_and(|v| v < 0);
            if below || above {
                let (reach, bound) = if below {
                    (lo, "below 0".to_string())
                } else {
                    (hi, format!("past the last index {}", dim.add_const(-1)))
                };
                return Some(Violation {
                    name: t.to_string(),
                    message: format!("`=` reads `{t}` out of bounds: subscript {} reaches {reach}, {bound}", k + 1),
                    help: "only reductions skip out-of-bounds points; guard the read with `?:` or narrow the `where` range",
                });
            }
        }
    }
    None
}
