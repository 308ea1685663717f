//! Correction kernels (PET §5.3): the original operator recomputed on
//! exactly the regions where a mutant differs, written into the mutant's
//! output after it.
//!
//! Each region becomes one comprehension: the operator's own (its def's
//! single statement) with its arguments and sizes bound to the call's
//! values and its left-hand-side iterators ranging over the region only.
//! Its initialization (`+=!`) starts each element of the region afresh, so
//! the mutant's wrong values there are replaced, not added to. The
//! correction reads the mutant def's own inputs, the same tensors the
//! mutant's producing kernel reads, and is lowered beside it.
//!
//! Requires an operator whose def is one comprehension writing its single
//! result with an initializing reduction or `=`. Guarantees: the returned
//! def computes the mutant everywhere outside the regions and the
//! original operator inside them; `None` when the operator has another
//! form.

use std::collections::HashMap;

use ir::{Comprehension, DType, Def, Expr, IterRange, Param, Program, Reduction, SizeExpr, Stmt};
use ir::{TensorRole, Value};

use super::{call_values, Arg};
use crate::verify::Region;

/// `mutant` with correction kernels recomputing `op(args)` on `regions`
/// appended.
pub fn corrected(
    program: &Program,
    mutant: &Def,
    op: &str,
    args: &[Arg],
    regions: &[Region],
) -> Result<Option<Def>, String> {
    let callee = program
        .def(op)
        .ok_or_else(|| format!("no operator `{op}`"))?;
    let ([Stmt::Comp(c)], [out]) = (callee.stmts.as_slice(), callee.outputs.as_slice()) else {
        return Ok(None);
    };
    if c.tensor != *out || !(c.init || c.op == Reduction::Assign) {
        return Ok(None);
    }
    let values = call_values(callee, args)?;
    // Each parameter of the operator: the mutant's input it reads, or
    // the literal it is.
    let mut tensors: HashMap<&str, String> = HashMap::new();
    let mut literals: HashMap<&str, Expr> = HashMap::new();
    for (k, (p, a)) in callee.params.iter().zip(args).enumerate() {
        match (p, a) {
            (Param::Tensor(name), Arg::Tensor(_)) => {
                tensors.insert(name, format!("x{k}"));
            }
            (Param::Scalar { name, dtype }, Arg::Int(v)) => {
                literals.insert(name, Expr::Lit(Value::Int(*v), *dtype));
            }
            (Param::Scalar { name, dtype }, Arg::Float(v)) => {
                literals.insert(name, Expr::Lit(Value::Float(*v), *dtype));
            }
            _ => return Ok(None),
        }
    }
    tensors.insert(out, "y".to_string());
    let bind = |e: Expr| -> Expr {
        e.map(&mut |e| match e {
            Expr::Sym(s) => match literals.get(s.as_str()) {
                Some(lit) => lit.clone(),
                None => match values.get(&s) {
                    Some(v) => Expr::Lit(Value::Int(*v), DType::I64),
                    None => Expr::Sym(s),
                },
            },
            Expr::Read(t, ix) => Expr::Read(tensors.get(t.as_str()).cloned().unwrap_or(t), ix),
            e => e,
        })
    };
    let constant = |s: &SizeExpr| -> Result<SizeExpr, String> {
        s.eval_map(&values)
            .map(SizeExpr::constant)
            .map_err(|e| format!("a range of `{op}`: {e}"))
    };
    let mut def = mutant.clone();
    if def.tensor("y").map(|t| t.role) != Some(TensorRole::Output) {
        return Err(format!("mutant `{}` has no output `y`", mutant.name));
    }
    for region in regions {
        let mut ranges = Vec::new();
        for (k, r) in c.ranges.iter().enumerate() {
            let (lo, hi) = match region.ranges.get(k) {
                Some(&(lo, hi)) if k < c.indices.len() => {
                    (SizeExpr::constant(lo as i64), SizeExpr::constant(hi as i64))
                }
                _ => (constant(&r.lo)?, constant(&r.hi)?),
            };
            ranges.push(IterRange {
                name: r.name.clone(),
                lo,
                hi,
            });
        }
        def.stmts.push(Stmt::Comp(Comprehension {
            tensor: "y".to_string(),
            indices: c.indices.clone(),
            op: c.op,
            init: c.init,
            body: bind(c.body.clone()),
            ranges,
            lets: c
                .lets
                .iter()
                .map(|(n, e)| (n.clone(), bind(e.clone())))
                .collect(),
            exists: Vec::new(),
        }));
    }
    Ok(Some(def))
}
