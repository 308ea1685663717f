//! The result shapes of a call, from its arguments' shapes and integer
//! values alone: what the searches need to know of an operator
//! application without running it.
//!
//! Requires a checked def (its parameter dimensions are size symbols or
//! integers, its results' shapes size expressions over them). Guarantees:
//! the shapes are those the interpreter's run of the call would give, or
//! an error names the argument that does not fit the signature.

use std::collections::HashMap;

use ir::{Def, Param, SizeExpr};

/// An argument of a call, as far as shapes go.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// A tensor of this shape.
    Tensor(Vec<i64>),
    /// An integer scalar (a size symbol of the callee).
    Int(i64),
    /// A floating-point scalar.
    Float,
}

/// The shapes of `def`'s results when called on `args`, in parameter
/// order.
pub fn call_shapes(def: &Def, args: &[ArgKind]) -> Result<Vec<Vec<i64>>, String> {
    let sizes = call_sizes(def, args)?;
    def.outputs
        .iter()
        .map(|o| {
            let decl = def
                .tensor(o)
                .ok_or_else(|| format!("`{}`: result `{o}` has no declaration", def.name))?;
            decl.shape
                .iter()
                .map(|d| match d.eval_map(&sizes) {
                    Ok(n) if n > 0 => Ok(n),
                    Ok(n) => Err(format!(
                        "result `{o}` of `{}` would have a dimension {n}",
                        def.name
                    )),
                    Err(e) => Err(format!("result `{o}` of `{}`: {e}", def.name)),
                })
                .collect()
        })
        .collect()
}

/// The values `def`'s size symbols and integer scalars take when it is
/// called on `args`: what its cost is estimated at.
pub fn call_sizes(def: &Def, args: &[ArgKind]) -> Result<HashMap<String, i64>, String> {
    if args.len() != def.params.len() {
        return Err(format!(
            "`{}` takes {} arguments, not {}",
            def.name,
            def.params.len(),
            args.len()
        ));
    }
    let mut sizes: HashMap<String, i64> = HashMap::new();
    for (k, (p, a)) in def.params.iter().zip(args).enumerate() {
        let at = format!("argument {} of `{}` (`{}`)", k + 1, def.name, p.name());
        match (p, a) {
            (Param::Scalar { name, dtype }, ArgKind::Int(v)) if dtype.is_int() => {
                bind(&mut sizes, name, *v, &at)?;
            }
            (Param::Scalar { dtype, .. }, ArgKind::Float) if dtype.is_float() => {}
            (Param::Tensor(name), ArgKind::Tensor(shape)) => {
                let decl = def
                    .tensor(name)
                    .ok_or_else(|| format!("{at}: no declaration"))?;
                if decl.shape.len() != shape.len() {
                    return Err(format!(
                        "{at} has rank {}, but the parameter has rank {}",
                        shape.len(),
                        decl.shape.len()
                    ));
                }
                for (d, &n) in decl.shape.iter().zip(shape) {
                    let symbol = d
                        .symbols()
                        .into_iter()
                        .next()
                        .filter(|s| *d == SizeExpr::sym(s));
                    match (d.as_const(), symbol) {
                        (Some(c), _) if c != n => {
                            return Err(format!("{at} has a dimension {n} where {c} is required"))
                        }
                        (Some(_), _) => {}
                        (None, Some(s)) => bind(&mut sizes, &s, n, &at)?,
                        (None, None) => {
                            return Err(format!("{at}: a computed parameter dimension"))
                        }
                    }
                }
            }
            _ => return Err(format!("{at} is of the wrong kind ({a:?})")),
        }
    }
    Ok(sizes)
}

/// Binds size symbol `s` to `n`, or checks it against its earlier value.
fn bind(sizes: &mut HashMap<String, i64>, s: &str, n: i64, at: &str) -> Result<(), String> {
    match sizes.insert(s.to_string(), n) {
        Some(m) if m != n => Err(format!(
            "{at} makes `{s}` {n}, but an earlier one made it {m}"
        )),
        _ => Ok(()),
    }
}
