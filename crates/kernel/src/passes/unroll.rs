//! `unroll`: replaces a small inner block by copies of its statements, one
//! copy per point of its iteration space, in its parent.
//!
//! A block is unrolled when its parent is not the root (the copies' views
//! are re-expressed against the grandparent's views, so the parent must
//! itself refine views), and it has no constraints, no local buffers, no
//! nested blocks and at most [`MAX_POINTS`] points, or the step's `unroll`
//! option's number (`#vector` blocks from
//! `vectorize` are the usual case, except those computing `exp`, `sigmoid`
//! or `erf`, which gcc vectorizes only as a loop). A parent that received copies is tagged
//! `#unrolled` and is not unrolled itself, so copies never multiply.
//!
//! For each point, in row-major order (the VM's), the block's own indices
//! are bound to the point's values and its passed indices to their forms
//! over the parent's indices. Each refinement `R` of the block refines a
//! parent view `V`, which refines a grandparent view at offset `V.access`;
//! since a view keeps the strides of the view it refines, `R`'s element
//! lives at offset `V.access + R.access` (with the bindings substituted) of
//! the grandparent view. The parent gets a refinement of that view with
//! that access and `R`'s shape, type, direction and aggregation, named
//! `{R}_u{k}` for the `k`-th point. Identical new `in` views (same view
//! refined, access, shape, type and aggregation) are shared: a read-only
//! view is only an address, so two copies loading one element may use one
//! view. The statements are copied with every scalar renamed `$t_u{k}` (so
//! scalars stay assigned once in the parent's list), every view renamed to
//! its new refinement, and every `index(...)` form substituted. The copies
//! replace the block statement.
//!
//! Requires: a verified kernel. Guarantees: at each point of the parent the
//! same statements run on the same elements in the same order (the block
//! ran all its points, in row-major order, since it has no constraints), so
//! results are identical; a verified kernel (the rewritten step is verified
//! against the root after each rewrite, and a rewrite that does not verify
//! is dropped);
//! blocks that are not eligible are left alone. The parent keeps the views
//! the unrolled block refined, now possibly unused.

use std::collections::HashMap;

use crate::pass::{replace_verified, rewrite_each_block};
use crate::{Affine, Block, Op, Pass, PassCx, RefDir, Refinement, Statement, StmtKind, Target};

/// The most points a block may have to be unrolled, unless the step's
/// `unroll` option gives another number.
pub const MAX_POINTS: u64 = 16;

#[derive(Debug)]
pub struct Unroll;

impl Pass for Unroll {
    fn name(&self) -> &'static str {
        "unroll"
    }

    fn run(&self, root: &mut Block, target: &Target) -> Result<(), String> {
        self.run_with(root, &PassCx::defaults(target))
    }

    fn run_with(&self, root: &mut Block, cx: &PassCx) -> Result<(), String> {
        rewrite_each_block(root, |b, check| {
            let name = b.name.clone();
            let most = cx.given.step(&name).unroll.unwrap_or(MAX_POINTS);
            if most == 0 {
                cx.record(&name, |s| s.unroll = Some(0));
                return;
            }
            let mut candidates = Vec::new();
            collect(b, &mut Vec::new(), &mut candidates);
            let mut unrolled_any = false;
            // In reverse pre-order, a block's descendants and later siblings
            // are rewritten before it, so the paths of the blocks still to
            // be visited stay valid.
            for (path, k) in candidates.into_iter().rev() {
                unrolled_any |= replace_verified(b, &path, check, |p| unrolled(p, k, most));
            }
            if unrolled_any {
                cx.record(&name, |s| s.unroll = Some(most));
            }
        });
        Ok(())
    }
}

/// Adds to `out`, in pre-order, every child of `b` (at `path` below a step
/// of the root) and of its descendants, as the path of its parent and its
/// statement number there.
fn collect(b: &Block, path: &mut Vec<usize>, out: &mut Vec<(Vec<usize>, usize)>) {
    for (k, s) in b.stmts.iter().enumerate() {
        if let StmtKind::Block(c) = &s.kind {
            out.push((path.clone(), k));
            path.push(k);
            collect(c, path, out);
            path.pop();
        }
    }
}

/// Whether `c` may be unrolled into its parent.
fn eligible(c: &Block, most: u64) -> bool {
    let lane_loop = c.tags.contains("vector") && calls_straight_line_helper(c);
    !c.tags.contains("unrolled")
        && !lane_loop
        && c.constraints.is_empty()
        && c.points() <= most
        && c.refs.iter().all(|r| r.from.is_some())
        && !c.stmts.iter().any(|s| matches!(s.kind, StmtKind::Block(_)))
}

/// Whether `c` computes `exp`, `sigmoid`, `erf` or `tanh`: the C prelude
/// computes them with straight-line helpers of compares and selects, which gcc
/// vectorizes in a lane loop but not across unrolled copies (its
/// straight-line vectorizer gives up on their masks, and the copies run
/// one lane at a time: FCOS's `sqrt(sigmoid(x) * sigmoid(c))` took 4x
/// longer unrolled).
fn calls_straight_line_helper(c: &Block) -> bool {
    c.stmts.iter().any(|s| {
        matches!(
            s.kind,
            StmtKind::Intrinsic {
                op: Op::Builtin(
                    ir::Builtin::Exp | ir::Builtin::Sigmoid | ir::Builtin::Erf | ir::Builtin::Tanh
                ),
                ..
            }
        )
    })
}

/// The bindings of `c`'s indices at every point of its box, in row-major
/// order: own indices to their values, passed indices to their forms.
fn points(c: &Block) -> Vec<HashMap<String, Affine>> {
    let mut out = vec![HashMap::new()];
    for ix in &c.idxs {
        out = out
            .into_iter()
            .flat_map(|env| {
                let values: Vec<Affine> = match &ix.affine {
                    Some(a) => vec![a.clone()],
                    None => (0..ix.range)
                        .filter_map(|v| i64::try_from(v).ok())
                        .map(Affine::constant)
                        .collect(),
                };
                values.into_iter().map(move |a| {
                    let mut env = env.clone();
                    env.insert(ix.name.clone(), a);
                    env
                })
            })
            .collect();
    }
    out
}

/// `parent` with its child block at statement `k` unrolled, or `None` when
/// the child is not eligible or a view cannot be re-expressed.
fn unrolled(parent: &Block, k: usize, most: u64) -> Option<Block> {
    let StmtKind::Block(c) = &parent.stmts.get(k)?.kind else {
        return None;
    };
    if !eligible(c, most) {
        return None;
    }
    let mut out = parent.clone();
    let first_new = out.refs.len();
    let mut copies = Vec::new();
    for (n, env) in points(c).iter().enumerate() {
        let bind = |name: &str| env.get(name).cloned();
        let mut views: HashMap<&str, String> = HashMap::new();
        for r in &c.refs {
            let v = parent.refinement(r.from.as_deref()?)?;
            if v.from.is_none() || v.access.len() != r.access.len() {
                return None;
            }
            let access: Vec<Affine> = v
                .access
                .iter()
                .zip(&r.access)
                .map(|(va, ra)| va.add(&ra.subst(&bind)))
                .collect();
            let new = Refinement {
                dir: r.dir,
                from: v.from.clone(),
                into: fresh(&out, &format!("{}_u{n}", r.into)),
                access,
                dtype: r.dtype,
                shape: r.shape.clone(),
                agg: r.agg,
                location: r.location.clone(),
                tags: r.tags.clone(),
            };
            let shared = out.refs[first_new..].iter().find(|o| {
                new.dir == RefDir::In
                    && o.dir == RefDir::In
                    && o.from == new.from
                    && o.access == new.access
                    && o.shape == new.shape
                    && o.dtype == new.dtype
                    && o.agg == new.agg
                    && o.location == new.location
            });
            let name = match shared {
                Some(o) => o.into.clone(),
                None => {
                    let name = new.into.clone();
                    out.refs.push(new);
                    name
                }
            };
            views.insert(&r.into, name);
        }
        let scalar = |s: &str| format!("{s}_u{n}");
        let view = |s: &str| views.get(s).cloned().unwrap_or_else(|| s.to_string());
        for s in &c.stmts {
            let kind = match &s.kind {
                StmtKind::Load { from, into } => StmtKind::Load {
                    from: view(from),
                    into: scalar(into),
                },
                StmtKind::Store { from, into } => StmtKind::Store {
                    from: scalar(from),
                    into: view(into),
                },
                StmtKind::LoadIndex { from, into } => StmtKind::LoadIndex {
                    from: from.subst(&bind),
                    into: scalar(into),
                },
                StmtKind::Constant { into, value, dtype } => StmtKind::Constant {
                    into: scalar(into),
                    value: *value,
                    dtype: *dtype,
                },
                StmtKind::Intrinsic {
                    op,
                    inputs,
                    into,
                    dtype,
                } => StmtKind::Intrinsic {
                    op: op.clone(),
                    inputs: inputs.iter().map(|i| scalar(i)).collect(),
                    into: scalar(into),
                    dtype: *dtype,
                },
                StmtKind::Gather {
                    from,
                    indices,
                    into,
                } => StmtKind::Gather {
                    from: view(from),
                    indices: indices.iter().map(|i| scalar(i)).collect(),
                    into: scalar(into),
                },
                StmtKind::Block(_) => return None,
            };
            copies.push(Statement {
                kind,
                tags: s.tags.clone(),
            });
        }
    }
    out.stmts.splice(k..=k, copies);
    out.tags.insert("unrolled".to_string());
    Some(out)
}

/// `base`, or `base` with a numeric suffix, whichever first names no
/// refinement of `b`.
fn fresh(b: &Block, base: &str) -> String {
    let mut name = base.to_string();
    let mut j = 1;
    while b.refinement(&name).is_some() {
        name = format!("{base}_{j}");
        j += 1;
    }
    name
}
