//! Views: subscripts (integers, slices with steps, `None`, `...`, and an
//! integer tensor as a gather), the view methods' shapes, and the strides
//! that say whether a view is contiguous (so `view`/`reshape` alias it) or
//! expanded (so writing through it is refused, as PyTorch does).

use ruff_python_ast::{self as ast, Expr as PyExpr};

use crate::error::{Error, Result};
use crate::graph::{Op, Origin, Span, Ty, ValueId, View};

use super::{ceil_div, span, Tracer, Val};

/// One item of a subscript.
enum Item {
    Int(ValueId),
    Slice(Option<i64>, Option<i64>, i64),
    NewAxis,
    Ellipsis,
    Gather(ValueId),
}

impl Tracer<'_> {
    /// `x[...]` read: a view, or a gather for an integer-tensor index.
    pub(super) fn subscript(&mut self, s: &ast::ExprSubscript) -> Result<Val> {
        let base = self.expr(&s.value)?;
        if let Val::Tuple(items) = &base {
            let at = span(&*s.slice);
            let k = self.expr(&s.slice)?;
            let k = self.known_int(&k, "a tuple index", at)?;
            let n = items.len() as i64;
            let i = if k < 0 { k + n } else { k };
            return items
                .get(usize::try_from(i).unwrap_or(usize::MAX))
                .cloned()
                .ok_or_else(|| {
                    Error::new(at, format!("index {k} is out of range for a tuple of {n}"))
                });
        }
        let v = self.subscript_on(base, s)?;
        Ok(Val::Value(v))
    }

    /// The view `x[...]` that an assignment to it writes through.
    pub(super) fn subscript_view(&mut self, s: &ast::ExprSubscript) -> Result<ValueId> {
        let base = self.expr(&s.value)?;
        let items = self.items(&s.slice)?;
        if items.iter().any(|i| matches!(i, Item::Gather(_))) {
            return Err(Error::new(
                span(s),
                "assignment through an integer-tensor index (a scatter) is not in the subset; use `torch.where` or `masked_fill_`",
            ));
        }
        let base = self.tensor(&base, "the subscripted value", span(&*s.value))?;
        self.apply_items(base, items, span(s))
    }

    fn subscript_on(&mut self, base: Val, s: &ast::ExprSubscript) -> Result<ValueId> {
        let base = self.tensor(&base, "the subscripted value", span(&*s.value))?;
        let items = self.items(&s.slice)?;
        self.apply_items(base, items, span(s))
    }

    fn items(&mut self, e: &PyExpr) -> Result<Vec<Item>> {
        let parts: Vec<&PyExpr> = match e {
            PyExpr::Tuple(t) => t.elts.iter().collect(),
            one => vec![one],
        };
        let mut out = Vec::new();
        for p in parts {
            let at = span(p);
            out.push(match p {
                PyExpr::EllipsisLiteral(_) => Item::Ellipsis,
                PyExpr::NoneLiteral(_) => Item::NewAxis,
                PyExpr::Slice(sl) => {
                    let mut bound = |b: &Option<Box<PyExpr>>, what: &str| -> Result<Option<i64>> {
                        match b {
                            None => Ok(None),
                            Some(x) => {
                                let v = self.expr(x)?;
                                self.known_int(&v, what, span(&**x)).map(Some)
                            }
                        }
                    };
                    let lo = bound(&sl.lower, "a slice bound")?;
                    let hi = bound(&sl.upper, "a slice bound")?;
                    let step = bound(&sl.step, "a slice step")?.unwrap_or(1);
                    if step <= 0 {
                        return Err(Error::new(at, "slice steps must be positive (PyTorch has no negative steps)"));
                    }
                    Item::Slice(lo, hi, step)
                }
                other => {
                    let v = self.expr(other)?;
                    let v = self.value(&v, "an index", at)?;
                    match self.g.ty(v).clone() {
                        Ty::Int => Item::Int(v),
                        Ty::Tensor { dtype, shape } if dtype.is_int() && dtype != ir::DType::Bool && shape.len() == 1 => {
                            Item::Gather(v)
                        }
                        Ty::Tensor { dtype: ir::DType::Bool, .. } => {
                            return Err(Error::new(
                                at,
                                "boolean-mask indexing has a data-dependent shape and is not in the subset; use `torch.where` or `masked_fill_`",
                            ))
                        }
                        other => {
                            return Err(Error::new(at, format!("an index must be an int, a slice, `None`, `...` or a 1-D integer tensor, not {other:?}")))
                        }
                    }
                }
            });
        }
        Ok(out)
    }

    fn apply_items(&mut self, base: ValueId, items: Vec<Item>, at: Span) -> Result<ValueId> {
        let rank = self.shape(base).len();
        let consuming = items
            .iter()
            .filter(|i| matches!(i, Item::Int(_) | Item::Slice(..) | Item::Gather(_)))
            .count();
        if items.iter().filter(|i| matches!(i, Item::Ellipsis)).count() > 1 {
            return Err(Error::new(at, "an index can have only one `...`"));
        }
        if consuming > rank {
            return Err(Error::new(
                at,
                format!("too many indices for a tensor of {rank} dimensions"),
            ));
        }
        if items
            .iter()
            .filter(|i| matches!(i, Item::Gather(_)))
            .count()
            > 1
        {
            return Err(Error::new(
                at,
                "only one integer-tensor index is in the subset",
            ));
        }
        let mut cur = base;
        let mut dim = 0;
        for item in items {
            match item {
                Item::Ellipsis => dim += rank - consuming,
                Item::NewAxis => {
                    cur = self.view(cur, View::Unsqueeze(dim), Vec::new(), at)?;
                    dim += 1;
                }
                Item::Int(i) => {
                    let n = self.shape(cur)[dim];
                    let i = match self.const_of(i) {
                        Some(ir::Value::Int(k)) => {
                            let k2 = if k < 0 { k + n } else { k };
                            if !(0..n).contains(&k2) {
                                return Err(Error::new(at, format!("index {k} is out of bounds for dimension {dim} of size {n}")));
                            }
                            self.const_id(ir::Value::Int(k2), at)
                        }
                        _ => i,
                    };
                    cur = self.view(cur, View::Select { dim }, vec![i], at)?;
                }
                Item::Slice(lo, hi, step) => {
                    let n = self.shape(cur)[dim];
                    let norm = |b: i64| if b < 0 { (b + n).max(0) } else { b.min(n) };
                    let start = lo.map_or(0, norm);
                    let stop = hi.map_or(n, norm);
                    let len = if stop > start {
                        ceil_div(stop - start, step)
                    } else {
                        0
                    };
                    if !(start == 0 && step == 1 && len == n) {
                        cur = self.view(
                            cur,
                            View::Slice {
                                dim,
                                start,
                                step,
                                len,
                            },
                            Vec::new(),
                            at,
                        )?;
                    }
                    dim += 1;
                }
                Item::Gather(idx) => {
                    cur = self.gather(cur, dim, idx, at)?;
                    dim += 1;
                }
            }
        }
        Ok(cur)
    }

    /// `x` indexed along `dim` by integer tensor `idx` (a copy).
    pub(super) fn gather(
        &mut self,
        x: ValueId,
        dim: usize,
        idx: ValueId,
        at: Span,
    ) -> Result<ValueId> {
        let mut shape = self.shape(x);
        let k = self.shape(idx);
        if k.len() != 1 {
            return Err(Error::new(at, "the index tensor must be 1-D"));
        }
        shape[dim] = k[0];
        let ty = Ty::tensor(self.dtype(x), shape);
        let n = self.g.push(
            self.block,
            Op::IndexSelect { dim },
            vec![x, idx],
            &[("_g", ty)],
            at,
        );
        Ok(self.g.nodes[n].outputs[0])
    }

    /// A view of `base` (`extra`: a select's index); checks the view
    /// against the base's shape.
    pub fn view(
        &mut self,
        base: ValueId,
        v: View,
        extra: Vec<ValueId>,
        at: Span,
    ) -> Result<ValueId> {
        let shape = self.shape(base);
        let rank = shape.len();
        let out = match &v {
            View::Slice {
                dim,
                start,
                step,
                len,
            } => {
                if *dim >= rank
                    || *start < 0
                    || *step <= 0
                    || *len < 0
                    || (*len > 0 && start + step * (len - 1) >= shape[*dim])
                {
                    return Err(Error::new(
                        at,
                        format!("slice out of range of dimension {dim} of {shape:?}"),
                    ));
                }
                let mut s = shape.clone();
                s[*dim] = *len;
                s
            }
            View::Select { dim } => {
                if *dim >= rank {
                    return Err(Error::new(
                        at,
                        format!("dimension {dim} out of range for shape {shape:?}"),
                    ));
                }
                let mut s = shape.clone();
                s.remove(*dim);
                s
            }
            View::Permute(p) => {
                let mut seen = vec![false; rank];
                if p.len() != rank
                    || p.iter()
                        .any(|&d| d >= rank || std::mem::replace(&mut seen[d], true))
                {
                    return Err(Error::new(
                        at,
                        format!("{p:?} is no permutation of the {rank} dimensions of {shape:?}"),
                    ));
                }
                p.iter().map(|&d| shape[d]).collect()
            }
            View::Unsqueeze(d) => {
                if *d > rank {
                    return Err(Error::new(
                        at,
                        format!("dimension {d} out of range for unsqueezing {shape:?}"),
                    ));
                }
                let mut s = shape.clone();
                s.insert(*d, 1);
                s
            }
            View::Squeeze(d) => {
                if *d >= rank || shape[*d] != 1 {
                    return Err(Error::new(
                        at,
                        format!("dimension {d} of {shape:?} is not of size 1"),
                    ));
                }
                let mut s = shape.clone();
                s.remove(*d);
                s
            }
            View::Expand(to) => {
                let fits = to.len() >= rank
                    && shape
                        .iter()
                        .zip(&to[to.len() - rank..])
                        .all(|(&a, &b)| a == b || a == 1);
                if !fits {
                    return Err(Error::new(
                        at,
                        format!("shape {shape:?} cannot be expanded to {to:?}"),
                    ));
                }
                to.clone()
            }
            View::Reshape(to) => {
                if to.iter().product::<i64>() != shape.iter().product::<i64>() {
                    return Err(Error::new(
                        at,
                        format!("shape {to:?} is invalid for a tensor of shape {shape:?}"),
                    ));
                }
                if !self.is_contiguous(base) {
                    return Err(Error::new(at, "a view of a non-contiguous tensor must be copied first (`reshape` or `contiguous()` does)"));
                }
                to.clone()
            }
        };
        let mut inputs = vec![base];
        inputs.extend(extra);
        let ty = Ty::tensor(self.dtype(base), out);
        let n = self
            .g
            .push(self.block, Op::View(v), inputs, &[("_v", ty)], at);
        Ok(self.g.nodes[n].outputs[0])
    }

    /// The views from `v`'s storage owner to `v`, the owner first.
    pub(super) fn view_chain(&self, v: ValueId) -> (ValueId, Vec<(View, Vec<i64>)>) {
        let mut chain = Vec::new();
        let mut at = v;
        while let Origin::Node(n, _) = self.g.values[at].origin {
            let node = &self.g.nodes[n];
            match &node.op {
                Op::View(view) => {
                    chain.push((view.clone(), self.shape(node.inputs[0])));
                    at = node.inputs[0];
                }
                _ => break,
            }
        }
        chain.reverse();
        (at, chain)
    }

    /// `v`'s strides in its storage (row-major for an owner).
    fn strides(&self, v: ValueId) -> Vec<i64> {
        let (owner, chain) = self.view_chain(v);
        let mut strides = row_major(&self.shape(owner));
        for (view, base_shape) in chain {
            match view {
                View::Slice { dim, step, .. } => strides[dim] *= step,
                View::Select { dim } | View::Squeeze(dim) => {
                    strides.remove(dim);
                }
                View::Permute(p) => strides = p.iter().map(|&d| strides[d]).collect(),
                View::Unsqueeze(d) => strides.insert(d, 0),
                View::Expand(to) => {
                    let lead = to.len() - base_shape.len();
                    let mut s = vec![0; lead];
                    for (k, &st) in strides.iter().enumerate() {
                        s.push(if base_shape[k] == 1 && to[lead + k] != 1 {
                            0
                        } else {
                            st
                        });
                    }
                    strides = s;
                }
                View::Reshape(to) => strides = row_major(&to),
            }
        }
        strides
    }

    /// Whether `v`'s elements are its storage's, in row-major order.
    pub fn is_contiguous(&self, v: ValueId) -> bool {
        let shape = self.shape(v);
        let want = row_major(&shape);
        self.strides(v)
            .iter()
            .zip(&want)
            .zip(&shape)
            .all(|((s, w), &n)| n == 1 || s == w)
    }

    /// Whether two elements of `v` share one storage location.
    pub fn is_expanded(&self, v: ValueId) -> bool {
        self.strides(v)
            .iter()
            .zip(self.shape(v))
            .any(|(&s, n)| s == 0 && n > 1)
    }
}

fn row_major(shape: &[i64]) -> Vec<i64> {
    let mut s = vec![1; shape.len()];
    for k in (0..shape.len().saturating_sub(1)).rev() {
        s[k] = s[k + 1] * shape[k + 1];
    }
    s
}
