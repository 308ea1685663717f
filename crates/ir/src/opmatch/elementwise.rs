//! Elementwise operators by OLLIE's iterator mapping table (Table 2's Add):
//! `O[i...] = op(A[...], B[...])` or `O[i...] = A[...]`, with no reduction
//! iterator, the output's dimensions each one iterator alone, and every
//! input dimension one output iterator with coefficient 1 (a permutation)
//! plus a constant, or a constant alone (a broadcast or a fixed index).
//!
//! Requires a table with strides in elements. Guarantees: an accepted shape
//! maps each input dimension to the output dimension it follows (or to
//! none) and gives each input's constant offset; never panics.

use super::mismatch::Mismatch;
use super::table::{Combine, Group, Table};

/// A matched elementwise operator.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ElementwiseShape {
    pub combine: Combine,
    /// The output's extents, dimension by dimension.
    pub extents: Vec<u64>,
    /// For each input, for each of its dimensions, the output dimension
    /// whose iterator it follows (`None`: a constant subscript).
    pub inputs: Vec<Vec<Option<usize>>>,
    /// Each input's flattened constant offset, in elements.
    pub offsets: Vec<i64>,
}

/// Matches `t` as an elementwise operator; see the module doc.
pub fn elementwise(t: &Table) -> Result<ElementwiseShape, Vec<Mismatch>> {
    let mut errs = Vec::new();
    if t.reduction {
        errs.push(Mismatch::Unsupported(
            "a sum is no elementwise operator".into(),
        ));
    }
    if !t.guard.is_empty() {
        errs.push(Mismatch::Unsupported(
            "a guarded statement is no elementwise operator".into(),
        ));
    }
    let mut outside: Vec<(Group, Vec<String>)> = Vec::new();
    for it in t.iters.iter().filter(|i| !t.output.uses(&i.name)) {
        let g = t.group(&it.name);
        match outside.iter_mut().find(|(h, _)| *h == g) {
            Some((_, v)) => v.push(it.name.clone()),
            None => outside.push((g, vec![it.name.clone()])),
        }
    }
    for (group, found) in outside {
        errs.push(Mismatch::Group {
            group,
            want: 0,
            found,
        });
    }
    // The output: one iterator alone per dimension.
    let mut out_iters = Vec::new();
    let mut extents = Vec::new();
    for (d, sub) in t.output.dims.iter().enumerate() {
        match (sub.affine(), sub.inner().single()) {
            (Some(a), Some((v, 1))) if a.constant == 0 && !out_iters.contains(&v) => {
                out_iters.push(v);
                extents.push(t.extent(v).unwrap_or(0));
            }
            _ => errs.push(Mismatch::Unsupported(format!(
                "dimension {d} of {} is {sub}, not a new iterator alone",
                t.output.tensor
            ))),
        }
    }
    let mut inputs = Vec::new();
    let mut offsets = Vec::new();
    for acc in &t.inputs {
        let mut map = Vec::new();
        for (d, sub) in acc.dims.iter().enumerate() {
            let Some(a) = sub.affine() else {
                errs.push(Mismatch::Unsupported(format!(
                    "dimension {d} of {} is not affine",
                    acc.tensor
                )));
                continue;
            };
            match a.terms.as_slice() {
                [] => map.push(None),
                [(v, 1)] => map.push(out_iters.iter().position(|o| o == v)),
                terms => {
                    for (v, c) in terms {
                        errs.push(Mismatch::Stride {
                            tensor: acc.tensor.clone(),
                            iter: v.clone(),
                            found: *c,
                            want: format!(
                                "{v} alone with coefficient 1 in dimension {d} of {}",
                                acc.tensor
                            ),
                        });
                    }
                }
            }
        }
        for (k, o) in map.iter().enumerate() {
            if o.is_some() && map[..k].contains(o) {
                let iter = o.and_then(|o| out_iters.get(o)).map_or("", |v| v);
                errs.push(Mismatch::Stride {
                    tensor: acc.tensor.clone(),
                    iter: iter.to_string(),
                    found: acc.flat_stride(iter).unwrap_or(0),
                    want: format!("{iter} in one dimension of {}", acc.tensor),
                });
            }
        }
        match acc.flat_offset() {
            Some(o) => offsets.push(o),
            None => errs.push(Mismatch::Unsupported(format!(
                "the offset of {} overflows or is not affine",
                acc.tensor
            ))),
        }
        inputs.push(map);
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(ElementwiseShape {
        combine: t.combine,
        extents,
        inputs,
        offsets,
    })
}
