//! Emission: a converted graph (pure operations, Access, Assign, regions)
//! becomes one `ir::Def` — each operation one or a few comprehensions,
//! each region a loop or branch statement.
//!
//! Requires a graph [`crate::convert::convert`] produced (no views, no
//! mutations, no Updates). Guarantees a def that passes
//! `ir::verify_program`, whose tensor parameters are the graph's tensor
//! parameters and whose scalar parameters its `float` ones, in order, and
//! whose outputs are its results; it computes what the graph computes.
//! Shapes are the traced (concrete) ones. An Access is a gather (the
//! base read at the view's map of the output index); an Assign a
//! piecewise select (inside the view, the source at the inverse map;
//! outside, the base).

use std::collections::{HashMap, HashSet};

use ir::{
    BinOp, Builtin, Carried, Comprehension, DType, Def, Expr, IfStmt, IterRange, LoopStmt, Param,
    Reduction, SizeExpr, Stmt, TensorDecl, TensorRole, UnOp, Value,
};

use crate::error::{Error, Result};
use crate::graph::{BlockId, Elem, Graph, NodeId, Op, Reduce, Ty, ValueId, View, ROOT};

/// Emits `g` as a def named like the graph.
pub fn emit(g: &Graph) -> Result<Def> {
    let mut e = Emitter {
        g,
        names: HashMap::new(),
        used: HashSet::new(),
        last_suffix: HashMap::new(),
        tensors: Vec::new(),
        scalars: HashMap::new(),
    };
    let mut params = Vec::new();
    for &p in &g.blocks[ROOT].params {
        let name = e.fresh(&g.values[p].name);
        match g.ty(p) {
            Ty::Tensor { dtype, shape } => {
                e.declare(&name, *dtype, shape, TensorRole::Input);
                params.push(Param::Tensor(name.clone()));
                e.names.insert(p, name);
            }
            _ => {
                params.push(Param::Scalar {
                    name: name.clone(),
                    dtype: DType::F32,
                });
                e.scalars.insert(p, Expr::Sym(name));
            }
        }
    }
    let mut stmts = Vec::new();
    e.block(ROOT, &mut stmts)?;
    // Results: each a tensor the def writes (a parameter or a value
    // returned twice is copied into a result of its own).
    let mut outputs = Vec::new();
    for &r in &g.blocks[ROOT].returns {
        let mut name = e.tensor_name(r, &mut stmts)?;
        let is_param = g.blocks[ROOT].params.contains(&r);
        if is_param || outputs.contains(&name) {
            let copy = e.fresh(&format!("{name}_out"));
            let (dtype, shape) = e.tensor_ty(r);
            e.declare(&copy, dtype, &shape, TensorRole::Temp);
            let idx = iters(shape.len());
            stmts.push(pointwise(&copy, &idx, &shape, read(&name, &idx)));
            name = copy;
        }
        if let Some(t) = e.tensors.iter_mut().find(|t| t.name == name) {
            t.role = TensorRole::Output;
        }
        outputs.push(name);
    }
    // View chains compose through flat offsets; the ranges make most of
    // their divisions exact.
    crate::simplify::simplify_stmts(&mut stmts);
    Ok(Def {
        name: g.name.clone(),
        params,
        outputs,
        tensors: e.tensors,
        stmts,
    })
}

struct Emitter<'g> {
    g: &'g Graph,
    /// The tensor each graph value is (tensors, and scalars kept in 0-d
    /// tensors across regions).
    names: HashMap<ValueId, String>,
    used: HashSet<String>,
    /// Per name base, the suffix of the last name taken with it (0: the
    /// base itself).
    last_suffix: HashMap<String, usize>,
    tensors: Vec<TensorDecl>,
    /// The expression each scalar value is.
    scalars: HashMap<ValueId, Expr>,
}

/// TC's keywords and type names, which a tensor may not be called.
const RESERVED: &[&str] = &[
    "def", "where", "in", "exists", "for", "while", "if", "else", "yield", "carry", "float", "int",
    "bool", "float32", "float64", "float16", "int8", "int16", "int32", "int64", "uint8", "uint16",
    "uint32", "uint64", "true", "false",
];

impl Emitter<'_> {
    fn fresh(&mut self, hint: &str) -> String {
        let hint = hint.trim_start_matches('_');
        let base: String = hint
            .chars()
            .map(|c| {
                if c.is_ascii_alphanumeric() || c == '_' {
                    c
                } else {
                    '_'
                }
            })
            .collect();
        let base = if base.is_empty() || base.starts_with(|c: char| c.is_ascii_digit()) {
            format!("t{base}")
        } else {
            base
        };
        // Names are only ever added to `used`, so every suffix below the
        // last one taken for `base` is still taken: the search resumes
        // there instead of at 1 (a 64-step unrolled loop names thousands
        // of `v_k`).
        let mut k = self.last_suffix.get(&base).copied().unwrap_or(0);
        let mut name = if k == 0 {
            base.clone()
        } else {
            format!("{base}_{k}")
        };
        while self.used.contains(&name)
            || RESERVED.contains(&name.as_str())
            || Builtin::from_name(&name).is_some()
        {
            k += 1;
            name = format!("{base}_{k}");
        }
        self.last_suffix.insert(base, k);
        self.used.insert(name.clone());
        name
    }

    fn declare(&mut self, name: &str, dtype: DType, shape: &[i64], role: TensorRole) {
        self.tensors.push(TensorDecl {
            name: name.to_string(),
            dtype,
            shape: shape.iter().map(|&d| SizeExpr::constant(d)).collect(),
            role,
        });
    }

    /// The element type and shape `v` has as a tensor (a scalar: 0-d).
    fn tensor_ty(&self, v: ValueId) -> (DType, Vec<i64>) {
        match self.g.ty(v) {
            Ty::Tensor { dtype, shape } => (*dtype, shape.clone()),
            Ty::Int => (DType::I64, Vec::new()),
            Ty::Float => (DType::F32, Vec::new()),
            Ty::Bool => (DType::Bool, Vec::new()),
        }
    }

    /// A new tensor for value `v`.
    fn define(&mut self, v: ValueId) -> String {
        let name = self.fresh(&self.g.values[v].name.clone());
        let (dtype, shape) = self.tensor_ty(v);
        self.declare(&name, dtype, &shape, TensorRole::Temp);
        self.names.insert(v, name.clone());
        name
    }

    /// The tensor holding `v` (a scalar is stored into a 0-d tensor by a
    /// statement appended to `out`).
    fn tensor_name(&mut self, v: ValueId, out: &mut Vec<Stmt>) -> Result<String> {
        if let Some(n) = self.names.get(&v) {
            return Ok(n.clone());
        }
        let e = self.scalar(v)?;
        let name = self.define(v);
        out.push(comp(&name, &[], &[], Reduction::Assign, false, e, vec![]));
        Ok(name)
    }

    /// The expression a scalar value is.
    fn scalar(&self, v: ValueId) -> Result<Expr> {
        if let Some(e) = self.scalars.get(&v) {
            return Ok(e.clone());
        }
        if let Some(n) = self.names.get(&v) {
            return Ok(Expr::Read(n.clone(), Vec::new()));
        }
        Err(Error::new(
            Default::default(),
            format!(
                "internal error: scalar `{}` used before it is computed",
                self.g.values[v].name
            ),
        ))
    }

    fn block(&mut self, b: BlockId, out: &mut Vec<Stmt>) -> Result<()> {
        for &n in &self.g.blocks[b].nodes {
            self.node(n, out)?;
        }
        Ok(())
    }

    fn node(&mut self, n: NodeId, out: &mut Vec<Stmt>) -> Result<()> {
        let g = self.g;
        let node = &g.nodes[n];
        let at = node.span;
        match &node.op {
            Op::Const(c) => {
                let v = node.outputs[0];
                let e = match c {
                    Value::Int(i) => Expr::Lit(Value::Int(*i), DType::I64),
                    Value::Float(f) => Expr::Lit(Value::Float(*f), DType::F32),
                    Value::Bool(b) => Expr::Lit(Value::Bool(*b), DType::Bool),
                };
                self.scalars.insert(v, e);
            }
            Op::Scalar(elem) => {
                let ins = node
                    .inputs
                    .iter()
                    .map(|&i| Ok((self.scalar(i)?, self.tensor_ty(i).0)))
                    .collect::<Result<Vec<_>>>()?;
                let t = self.tensor_ty(node.outputs[0]).0;
                let in_t = ins.iter().map(|a| a.1).fold(DType::Bool, DType::promote);
                let e = elementwise(elem, ins, in_t, t);
                self.scalars.insert(node.outputs[0], e);
            }
            Op::Item => {
                let name =
                    self.names.get(&node.inputs[0]).cloned().ok_or_else(|| {
                        Error::new(at, "internal error: item of an unknown tensor")
                    })?;
                let (t, _) = self.tensor_ty(node.inputs[0]);
                let want = self.tensor_ty(node.outputs[0]).0;
                self.scalars
                    .insert(node.outputs[0], cast(Expr::Read(name, Vec::new()), t, want));
            }
            Op::ToTensor => {
                let e = self.scalar(node.inputs[0])?;
                let name = self.define(node.outputs[0]);
                out.push(comp(&name, &[], &[], Reduction::Assign, false, e, vec![]));
            }
            Op::Loop {
                counted,
                conditional,
            } => self.loop_stmt(n, *counted, *conditional, out)?,
            Op::If => self.if_stmt(n, out)?,
            Op::View(_) | Op::Mutate(_) | Op::Update => {
                return Err(Error::new(
                    at,
                    "internal error: a view or mutation survived conversion",
                ))
            }
            _ => self.tensor_op(n, out)?,
        }
        Ok(())
    }

    /// A tensor operation's comprehensions.
    fn tensor_op(&mut self, n: NodeId, out: &mut Vec<Stmt>) -> Result<()> {
        let g = self.g;
        let node = &g.nodes[n];
        let at = node.span;
        let v = node.outputs[0];
        let (dtype, shape) = self.tensor_ty(v);
        if shape.contains(&0) {
            return Err(Error::new(
                at,
                format!(
                    "a tensor of shape {shape:?} has no elements; empty tensors are not supported"
                ),
            ));
        }
        let idx = iters(shape.len());
        // Each input as a function of output indices (broadcast, right-aligned).
        let inputs: Vec<ValueId> = node.inputs.clone();
        for &i in &inputs {
            if matches!(g.ty(i), Ty::Tensor { .. }) && !self.names.contains_key(&i) {
                return Err(Error::new(
                    at,
                    format!(
                        "internal error: `{}` used before it is computed",
                        g.values[i].name
                    ),
                ));
            }
        }
        // The output is declared after the temporaries its statements
        // define first (softmax's maximum, say): in definition order.
        let name = self.fresh(&g.values[v].name.clone());
        self.names.insert(v, name.clone());
        match &node.op {
            Op::Elem(elem) => {
                let in_t = match elem {
                    Elem::Where => {
                        DType::promote(self.tensor_ty(inputs[1]).0, self.tensor_ty(inputs[2]).0)
                    }
                    Elem::Cast => self.tensor_ty(inputs[0]).0,
                    _ => inputs
                        .iter()
                        .map(|&i| self.tensor_ty(i).0)
                        .fold(DType::Bool, DType::promote),
                };
                let args = inputs
                    .iter()
                    .map(|&i| Ok((self.broadcast_read(i, &idx)?, self.tensor_ty(i).0)))
                    .collect::<Result<Vec<_>>>()?;
                let body = elementwise(elem, args, in_t, dtype);
                out.push(pointwise(&name, &idx, &shape, body));
            }
            Op::Full => {
                let fill = cast(self.scalar(inputs[0])?, self.tensor_ty(inputs[0]).0, dtype);
                out.push(pointwise(&name, &idx, &shape, fill));
            }
            Op::Clone => {
                let body = self.broadcast_read(inputs[0], &idx)?;
                out.push(pointwise(&name, &idx, &shape, body));
            }
            Op::Arange => {
                out.push(pointwise(
                    &name,
                    &idx,
                    &shape,
                    cast(Expr::Iter(idx[0].clone()), DType::I64, dtype),
                ));
            }
            Op::Access(view) => {
                let base = &self.names[&inputs[0]];
                let base_shape = self.tensor_ty(inputs[0]).1;
                let index = match inputs.get(1) {
                    Some(&i) => Some(self.scalar(i)?),
                    None => None,
                };
                let sub = access_map(view, &idx, &base_shape, &shape, index);
                out.push(pointwise(
                    &name,
                    &idx,
                    &shape,
                    Expr::Read(base.clone(), sub),
                ));
            }
            Op::Assign(view) => {
                let base = self.names[&inputs[0]].clone();
                let src = self.names.get(&inputs[1]).cloned();
                let src_shape = self.tensor_ty(inputs[1]).1;
                let index = match inputs.get(2) {
                    Some(&i) => Some(self.scalar(i)?),
                    None => None,
                };
                let (cond, sub) = assign_map(view, &idx, &shape, &src_shape, index)
                    .ok_or_else(|| Error::new(at, "writing through this view is not supported"))?;
                let src_read = match src {
                    Some(s) => Expr::Read(s, sub),
                    None => self.scalar(inputs[1])?,
                };
                let src_read = cast(src_read, self.tensor_ty(inputs[1]).0, dtype);
                let keep = Expr::Read(base, idx_exprs(&idx));
                let body = match cond {
                    Some(c) => Expr::Select(Box::new(c), Box::new(src_read), Box::new(keep)),
                    None => src_read,
                };
                out.push(pointwise(&name, &idx, &shape, body));
            }
            Op::IndexSelect { dim } => {
                let x = self.names[&inputs[0]].clone();
                let ix = self.names[&inputs[1]].clone();
                let mut sub = idx_exprs(&idx);
                sub[*dim] = Expr::Read(ix, vec![Expr::Iter(idx[*dim].clone())]);
                out.push(pointwise(&name, &idx, &shape, Expr::Read(x, sub)));
            }
            Op::Matmul => self.matmul(&name, inputs[0], inputs[1], &shape, dtype, out),
            Op::Reduce { op, dims, keepdim } => {
                self.reduce(&name, inputs[0], *op, dims, *keepdim, &shape, dtype, out)
            }
            Op::Argmax { dim, keepdim } => {
                self.argmax(&name, inputs[0], *dim, *keepdim, &shape, out)
            }
            Op::Softmax { dim, log } => {
                self.softmax(&name, inputs[0], *dim, *log, &shape, dtype, out)
            }
            Op::Cat { dim } => {
                let mut parts = Vec::new();
                let mut offset = 0;
                for &i in &inputs {
                    let n = self.tensor_ty(i).1[*dim];
                    parts.push((offset, n, self.names[&i].clone()));
                    offset += n;
                }
                let mut body: Option<Expr> = None;
                for (off, n, t) in parts.into_iter().rev() {
                    let mut sub = idx_exprs(&idx);
                    sub[*dim] =
                        Expr::binary(BinOp::Sub, Expr::Iter(idx[*dim].clone()), Expr::int(off));
                    let part_t = self
                        .tensor_ty(
                            *inputs
                                .iter()
                                .find(|&&i| self.names[&i] == t)
                                .expect("a part"),
                        )
                        .0;
                    let r = cast(Expr::Read(t, sub), part_t, dtype);
                    body = Some(match body {
                        None => r,
                        Some(rest) => Expr::Select(
                            Box::new(Expr::binary(
                                BinOp::Lt,
                                Expr::Iter(idx[*dim].clone()),
                                Expr::int(off + n),
                            )),
                            Box::new(r),
                            Box::new(rest),
                        ),
                    });
                }
                let body = body.ok_or_else(|| Error::new(at, "`cat` of no tensors"))?;
                out.push(pointwise(&name, &idx, &shape, body));
            }
            other => {
                return Err(Error::new(
                    at,
                    format!("internal error: {other:?} is no tensor operation"),
                ))
            }
        }
        self.declare(&name, dtype, &shape, TensorRole::Temp);
        Ok(())
    }

    /// `v` read at output indices `idx`: a tensor broadcast (right-aligned,
    /// size-1 dimensions at 0), or a scalar's expression.
    fn broadcast_read(&self, v: ValueId, idx: &[String]) -> Result<Expr> {
        match self.g.ty(v) {
            Ty::Tensor { shape, .. } => {
                let lead = idx.len() - shape.len();
                let sub = shape
                    .iter()
                    .enumerate()
                    .map(|(k, &d)| {
                        if d == 1 {
                            Expr::int(0)
                        } else {
                            Expr::Iter(idx[lead + k].clone())
                        }
                    })
                    .collect();
                Ok(Expr::Read(self.names[&v].clone(), sub))
            }
            _ => self.scalar(v),
        }
    }

    #[allow(clippy::too_many_arguments)]
    fn matmul(
        &mut self,
        name: &str,
        a: ValueId,
        b: ValueId,
        shape: &[i64],
        dtype: DType,
        out: &mut Vec<Stmt>,
    ) {
        let (ta, sa) = self.tensor_ty(a);
        let (tb, sb) = self.tensor_ty(b);
        let r = shape.len();
        let idx = iters(r);
        let k = "r0".to_string();
        let kdim = sa[sa.len() - 1];
        let batch_read = |s: &[i64], last: [Expr; 2]| -> Vec<Expr> {
            let lead = (r - 2) - (s.len() - 2);
            let mut sub: Vec<Expr> = (0..s.len() - 2)
                .map(|d| {
                    if s[d] == 1 {
                        Expr::int(0)
                    } else {
                        Expr::Iter(idx[lead + d].clone())
                    }
                })
                .collect();
            sub.extend(last);
            sub
        };
        let ra = batch_read(&sa, [Expr::Iter(idx[r - 2].clone()), Expr::Iter(k.clone())]);
        let rb = batch_read(&sb, [Expr::Iter(k.clone()), Expr::Iter(idx[r - 1].clone())]);
        let body = Expr::binary(
            BinOp::Mul,
            cast(Expr::Read(self.names[&a].clone(), ra), ta, dtype),
            cast(Expr::Read(self.names[&b].clone(), rb), tb, dtype),
        );
        out.push(comp(
            name,
            &idx,
            shape,
            Reduction::Add,
            true,
            body,
            vec![(k, kdim)],
        ));
    }

    /// The reduced iterators: kept dimensions take the output's iterators,
    /// reduced ones new `r` iterators.
    fn reduce_reads(
        &self,
        x: ValueId,
        dims: &[usize],
        keepdim: bool,
    ) -> (Vec<String>, Vec<Expr>, Vec<(String, i64)>) {
        let xs = self.tensor_ty(x).1;
        let out_rank = if keepdim {
            xs.len()
        } else {
            xs.len() - dims.len()
        };
        let idx = iters(out_rank);
        let mut sub = Vec::new();
        let mut red = Vec::new();
        let mut o = 0;
        for (d, &n) in xs.iter().enumerate() {
            if dims.contains(&d) {
                let r = format!("r{}", red.len());
                sub.push(Expr::Iter(r.clone()));
                red.push((r, n));
                if keepdim {
                    o += 1;
                }
            } else {
                sub.push(Expr::Iter(idx[o].clone()));
                o += 1;
            }
        }
        (idx, sub, red)
    }

    #[allow(clippy::too_many_arguments)]
    fn reduce(
        &mut self,
        name: &str,
        x: ValueId,
        op: Reduce,
        dims: &[usize],
        keepdim: bool,
        shape: &[i64],
        dtype: DType,
        out: &mut Vec<Stmt>,
    ) {
        let (tx, xs) = self.tensor_ty(x);
        let (idx, sub, red) = self.reduce_reads(x, dims, keepdim);
        let read = Expr::Read(self.names[&x].clone(), sub);
        let count: i64 = dims.iter().map(|&d| xs[d]).product();
        match op {
            Reduce::Sum | Reduce::Max | Reduce::Min => {
                let r = match op {
                    Reduce::Sum => Reduction::Add,
                    Reduce::Max => Reduction::Max,
                    _ => Reduction::Min,
                };
                out.push(comp(name, &idx, shape, r, true, cast(read, tx, dtype), red));
            }
            Reduce::Mean => {
                let s = self.fresh(&format!("{name}_sum"));
                self.declare(&s, dtype, shape, TensorRole::Temp);
                out.push(comp(
                    &s,
                    &idx,
                    shape,
                    Reduction::Add,
                    true,
                    cast(read, tx, dtype),
                    red,
                ));
                let body = Expr::binary(
                    BinOp::Div,
                    Expr::Read(s, idx_exprs(&idx)),
                    Expr::Lit(Value::Float(count as f64), dtype),
                );
                out.push(pointwise(name, &idx, shape, body));
            }
            Reduce::Any | Reduce::All => {
                let s = self.fresh(&format!("{name}_count"));
                self.declare(&s, DType::I64, shape, TensorRole::Temp);
                let truth = nonzero(read, tx);
                let one = Expr::Select(
                    Box::new(truth),
                    Box::new(Expr::int(1)),
                    Box::new(Expr::int(0)),
                );
                out.push(comp(&s, &idx, shape, Reduction::Add, true, one, red));
                let c = Expr::Read(s, idx_exprs(&idx));
                let body = if op == Reduce::Any {
                    Expr::binary(BinOp::Gt, c, Expr::int(0))
                } else {
                    Expr::binary(BinOp::Eq, c, Expr::int(count))
                };
                out.push(pointwise(name, &idx, shape, body));
            }
        }
    }

    fn argmax(
        &mut self,
        name: &str,
        x: ValueId,
        dim: usize,
        keepdim: bool,
        shape: &[i64],
        out: &mut Vec<Stmt>,
    ) {
        let (tx, xs) = self.tensor_ty(x);
        let (idx, sub, red) = self.reduce_reads(x, &[dim], keepdim);
        let m = self.fresh(&format!("{name}_max"));
        self.declare(&m, tx, shape, TensorRole::Temp);
        let x_name = self.names[&x].clone();
        out.push(comp(
            &m,
            &idx,
            shape,
            Reduction::Max,
            true,
            Expr::Read(x_name.clone(), sub.clone()),
            red.clone(),
        ));
        // The first index where the maximum is reached.
        let r = Expr::Iter(red[0].0.clone());
        let hit = Expr::binary(
            BinOp::Eq,
            Expr::Read(x_name, sub),
            Expr::Read(m, idx_exprs(&idx)),
        );
        let body = Expr::Select(Box::new(hit), Box::new(r), Box::new(Expr::int(xs[dim])));
        out.push(comp(name, &idx, shape, Reduction::Min, true, body, red));
    }

    #[allow(clippy::too_many_arguments)]
    fn softmax(
        &mut self,
        name: &str,
        x: ValueId,
        dim: usize,
        log: bool,
        shape: &[i64],
        dtype: DType,
        out: &mut Vec<Stmt>,
    ) {
        let x_name = self.names[&x].clone();
        let (ridx, rsub, red) = self.reduce_reads(x, &[dim], true);
        let mut rshape = shape.to_vec();
        rshape[dim] = 1;
        let mx = self.fresh(&format!("{name}_max"));
        self.declare(&mx, dtype, &rshape, TensorRole::Temp);
        out.push(comp(
            &mx,
            &ridx,
            &rshape,
            Reduction::Max,
            true,
            Expr::Read(x_name.clone(), rsub.clone()),
            red.clone(),
        ));
        let idx = iters(shape.len());
        let mut at_max = idx_exprs(&idx);
        at_max[dim] = Expr::int(0);
        let shifted = |x: Expr| Expr::binary(BinOp::Sub, x, Expr::Read(mx.clone(), at_max.clone()));
        let e = self.fresh(&format!("{name}_exp"));
        self.declare(&e, dtype, shape, TensorRole::Temp);
        out.push(pointwise(
            &e,
            &idx,
            shape,
            Expr::Call(
                Builtin::Exp,
                vec![shifted(Expr::Read(x_name.clone(), idx_exprs(&idx)))],
            ),
        ));
        let s = self.fresh(&format!("{name}_sum"));
        self.declare(&s, dtype, &rshape, TensorRole::Temp);
        out.push(comp(
            &s,
            &ridx,
            &rshape,
            Reduction::Add,
            true,
            Expr::Read(e.clone(), rsub),
            red,
        ));
        let body = if log {
            Expr::binary(
                BinOp::Sub,
                shifted(Expr::Read(x_name, idx_exprs(&idx))),
                Expr::Call(Builtin::Log, vec![Expr::Read(s, at_max)]),
            )
        } else {
            Expr::binary(
                BinOp::Div,
                Expr::Read(e, idx_exprs(&idx)),
                Expr::Read(s, at_max),
            )
        };
        out.push(pointwise(name, &idx, shape, body));
    }

    fn loop_stmt(
        &mut self,
        n: NodeId,
        counted: bool,
        conditional: bool,
        out: &mut Vec<Stmt>,
    ) -> Result<()> {
        let g = self.g;
        let node = &g.nodes[n];
        let b = node.blocks[0];
        let mut k = 0;
        let count = if counted {
            k += 1;
            Some(self.scalar(node.inputs[0])?)
        } else {
            None
        };
        let hint = g.values[g.blocks[b].params[0]].name.clone();
        // Comprehensions name their iterators `i0, i1, ...` and `r0, ...`;
        // a loop index must not look like one.
        let iterator_like = |h: &str| {
            h.len() > 1
                && (h.starts_with('i') || h.starts_with('r'))
                && h[1..].chars().all(|c| c.is_ascii_digit())
        };
        let index = self.fresh(&if iterator_like(&hint) {
            format!("{hint}_")
        } else {
            hint
        });
        self.scalars
            .insert(g.blocks[b].params[0], Expr::Sym(index.clone()));
        let mut carried = Vec::new();
        let mut body = Vec::new();
        let mut yields = Vec::new();
        let mut results = Vec::new();
        let mut cond = None;
        let mut cond_result = None;
        // The initial values first (a scalar's is stored into a tensor by a
        // statement before the loop), then the parameters, so tensors are
        // declared in the order statements define them.
        let inits = node.inputs[k..]
            .iter()
            .map(|&v| self.tensor_name(v, out))
            .collect::<Result<Vec<_>>>()?;
        let mut inits = inits.into_iter();
        if conditional {
            // The condition is carried as a 0-d bool tensor.
            let init = inits.next().expect("a conditional loop's first input");
            let p = self.fresh("c");
            self.declare(&p, DType::Bool, &[], TensorRole::Temp);
            cond = Some(Expr::Read(p.clone(), Vec::new()));
            carried.push(Carried { param: p, init });
            cond_result = Some(self.fresh("c_out"));
        }
        for (j, init) in inits.enumerate() {
            let p = g.blocks[b].params[1 + j];
            let pname = self.define(p);
            carried.push(Carried { param: pname, init });
        }
        self.block(b, &mut body)?;
        for &r in &g.blocks[b].returns {
            yields.push(self.tensor_name(r, &mut body)?);
        }
        // Tensors are declared in the order statements define them (as the
        // TC checker declares them): a loop's results after its body.
        if let Some(r) = cond_result {
            self.declare(&r, DType::Bool, &[], TensorRole::Temp);
            results.push(r);
        }
        for &o in &node.outputs {
            results.push(self.define(o));
        }
        out.push(Stmt::Loop(LoopStmt {
            index,
            count,
            cond,
            carried,
            body,
            yields,
            results,
        }));
        Ok(())
    }

    fn if_stmt(&mut self, n: NodeId, out: &mut Vec<Stmt>) -> Result<()> {
        let g = self.g;
        let node = &g.nodes[n];
        let cond = self.scalar(node.inputs[0])?;
        let mut sides = Vec::new();
        for &b in &node.blocks {
            let mut body = Vec::new();
            self.block(b, &mut body)?;
            let mut yields = Vec::new();
            for &r in &g.blocks[b].returns {
                yields.push(self.tensor_name(r, &mut body)?);
            }
            sides.push((body, yields));
        }
        let results = node.outputs.iter().map(|&o| self.define(o)).collect();
        let (else_body, else_yields) = sides.pop().unwrap_or_default();
        let (then_body, then_yields) = sides.pop().unwrap_or_default();
        out.push(Stmt::If(IfStmt {
            cond,
            then_body,
            then_yields,
            else_body,
            else_yields,
            results,
        }));
        Ok(())
    }
}

fn iters(rank: usize) -> Vec<String> {
    (0..rank).map(|k| format!("i{k}")).collect()
}

fn idx_exprs(idx: &[String]) -> Vec<Expr> {
    idx.iter().map(|i| Expr::Iter(i.clone())).collect()
}

fn read(t: &str, idx: &[String]) -> Expr {
    Expr::Read(t.to_string(), idx_exprs(idx))
}

/// `tensor(idx) = body` over `shape`: a statement without reduction.
fn pointwise(tensor: &str, idx: &[String], shape: &[i64], body: Expr) -> Stmt {
    comp(
        tensor,
        idx,
        shape,
        Reduction::Assign,
        false,
        body,
        Vec::new(),
    )
}

fn comp(
    tensor: &str,
    idx: &[String],
    shape: &[i64],
    op: Reduction,
    init: bool,
    body: Expr,
    reduction: Vec<(String, i64)>,
) -> Stmt {
    let mut ranges: Vec<IterRange> = idx
        .iter()
        .zip(shape)
        .map(|(i, &n)| IterRange {
            name: i.clone(),
            lo: SizeExpr::zero(),
            hi: SizeExpr::constant(n),
        })
        .collect();
    ranges.extend(reduction.into_iter().map(|(r, n)| IterRange {
        name: r,
        lo: SizeExpr::zero(),
        hi: SizeExpr::constant(n),
    }));
    Stmt::Comp(Comprehension {
        tensor: tensor.to_string(),
        indices: idx.to_vec(),
        op,
        init,
        body,
        ranges,
        lets: Vec::new(),
        exists: Vec::new(),
    })
}

/// `e`, of type `from`, converted to `to` (literals directly).
fn cast(e: Expr, from: DType, to: DType) -> Expr {
    if from == to {
        return e;
    }
    match e {
        Expr::Lit(v, _) => literal(v, to),
        e => Expr::Cast(to, Box::new(e)),
    }
}

fn literal(v: Value, t: DType) -> Expr {
    let v = match (v, t.is_float(), t == DType::Bool) {
        (Value::Int(i), true, _) => Value::Float(i as f64),
        (Value::Bool(b), true, _) => Value::Float(b as i64 as f64),
        (Value::Float(f), false, false) => Value::Int(f as i64),
        (Value::Bool(b), false, false) => Value::Int(b as i64),
        (Value::Int(i), _, true) => Value::Bool(i != 0),
        (Value::Float(f), _, true) => Value::Bool(f != 0.0),
        (v, _, _) => v,
    };
    Expr::Lit(v, t)
}

/// Whether `e` (of type `t`) is nonzero, as a bool.
fn nonzero(e: Expr, t: DType) -> Expr {
    if t == DType::Bool {
        e
    } else {
        let zero = literal(Value::Int(0), t);
        Expr::binary(BinOp::Ne, e, zero)
    }
}

/// An elementwise operation on operands (read, with their types),
/// compared in `in_t` (the operands' common type) and giving `out`.
fn elementwise(elem: &Elem, args: Vec<(Expr, DType)>, in_t: DType, out: DType) -> Expr {
    let to = |k: usize, t: DType| -> Expr { cast(args[k].0.clone(), args[k].1, t) };
    match elem {
        Elem::Binary(op) if op.is_logical() => {
            Expr::binary(*op, to(0, DType::Bool), to(1, DType::Bool))
        }
        Elem::Binary(op) if op.is_comparison() => Expr::binary(*op, to(0, in_t), to(1, in_t)),
        Elem::Binary(op) => Expr::binary(*op, to(0, out), to(1, out)),
        Elem::Neg => Expr::Unary(UnOp::Neg, Box::new(to(0, out))),
        Elem::Not => Expr::Unary(UnOp::Not, Box::new(to(0, DType::Bool))),
        Elem::Builtin(f) => Expr::Call(*f, (0..args.len()).map(|k| to(k, out)).collect()),
        Elem::Relu => Expr::Call(Builtin::Max, vec![to(0, out), literal(Value::Int(0), out)]),
        Elem::Where => Expr::Select(
            Box::new(to(0, DType::Bool)),
            Box::new(to(1, out)),
            Box::new(to(2, out)),
        ),
        Elem::Clamp { min, max } => {
            let mut e = to(0, out);
            let mut k = 1;
            if *min {
                e = Expr::Call(Builtin::Max, vec![e, to(k, out)]);
                k += 1;
            }
            if *max {
                e = Expr::Call(Builtin::Min, vec![e, to(k, out)]);
            }
            e
        }
        Elem::Cast => to(0, out),
    }
}

/// The base index an Access reads for output index `idx`.
fn access_map(
    view: &View,
    idx: &[String],
    base_shape: &[i64],
    out_shape: &[i64],
    index: Option<Expr>,
) -> Vec<Expr> {
    let o = idx_exprs(idx);
    match view {
        View::Slice {
            dim, start, step, ..
        } => {
            let mut s = o;
            let scaled = if *step == 1 {
                s[*dim].clone()
            } else {
                Expr::binary(BinOp::Mul, Expr::int(*step), s[*dim].clone())
            };
            s[*dim] = if *start == 0 {
                scaled
            } else {
                Expr::binary(BinOp::Add, scaled, Expr::int(*start))
            };
            s
        }
        View::Select { dim } => {
            let mut s = o;
            s.insert(*dim, index.unwrap_or_else(|| Expr::int(0)));
            s
        }
        View::Permute(p) => {
            let mut s = vec![Expr::int(0); p.len()];
            for (k, &d) in p.iter().enumerate() {
                s[d] = o[k].clone();
            }
            s
        }
        View::Unsqueeze(d) => {
            let mut s = o;
            s.remove(*d);
            s
        }
        View::Squeeze(d) => {
            let mut s = o;
            s.insert(*d, Expr::int(0));
            s
        }
        View::Expand(to) => {
            let lead = to.len() - base_shape.len();
            base_shape
                .iter()
                .enumerate()
                .map(|(k, &n)| {
                    if n == 1 {
                        Expr::int(0)
                    } else {
                        o[lead + k].clone()
                    }
                })
                .collect()
        }
        View::Reshape(_) => reshape_map(&o, out_shape, base_shape),
    }
}

/// Indices of shape `to` for index `o` of shape `from`, in row-major order.
fn reshape_map(o: &[Expr], from: &[i64], to: &[i64]) -> Vec<Expr> {
    let mut flat: Option<Expr> = None;
    let mut stride = 1;
    for k in (0..from.len()).rev() {
        if from[k] != 1 {
            let term = if stride == 1 {
                o[k].clone()
            } else {
                Expr::binary(BinOp::Mul, o[k].clone(), Expr::int(stride))
            };
            flat = Some(match flat {
                None => term,
                Some(f) => Expr::binary(BinOp::Add, term, f),
            });
        }
        stride *= from[k];
    }
    let flat = flat.unwrap_or_else(|| Expr::int(0));
    let mut out = vec![Expr::int(0); to.len()];
    let mut stride = 1;
    for k in (0..to.len()).rev() {
        if to[k] != 1 {
            let q = if stride == 1 {
                flat.clone()
            } else {
                Expr::binary(BinOp::Div, flat.clone(), Expr::int(stride))
            };
            out[k] = if stride * to[k] == total(from) {
                q
            } else {
                Expr::binary(BinOp::Mod, q, Expr::int(to[k]))
            };
        }
        stride *= to[k];
    }
    out
}

fn total(shape: &[i64]) -> i64 {
    shape.iter().product()
}

/// For an Assign: whether base index `idx` lies in the view, and the view
/// index it is there (`None` condition: every base element is in it).
fn assign_map(
    view: &View,
    idx: &[String],
    base_shape: &[i64],
    view_shape: &[i64],
    index: Option<Expr>,
) -> Option<(Option<Expr>, Vec<Expr>)> {
    let b = idx_exprs(idx);
    Some(match view {
        View::Slice {
            dim,
            start,
            step,
            len,
        } => {
            let i = b[*dim].clone();
            let off = if *start == 0 {
                i.clone()
            } else {
                Expr::binary(BinOp::Sub, i.clone(), Expr::int(*start))
            };
            let mut conds = Vec::new();
            if *start > 0 {
                conds.push(Expr::binary(BinOp::Ge, i.clone(), Expr::int(*start)));
            }
            let end = start + step * (len - 1) + 1;
            if end < base_shape[*dim] {
                conds.push(Expr::binary(BinOp::Lt, i, Expr::int(end)));
            }
            if *step > 1 {
                conds.push(Expr::binary(
                    BinOp::Eq,
                    Expr::binary(BinOp::Mod, off.clone(), Expr::int(*step)),
                    Expr::int(0),
                ));
            }
            let mut s = b;
            // A strided view's condition is not affine, so the select is
            // computed unguarded: the source index is clamped into the
            // view, which keeps its read in bounds where it is not taken.
            s[*dim] = if *step == 1 {
                off
            } else {
                clamp(Expr::binary(BinOp::Div, off, Expr::int(*step)), 0, len - 1)
            };
            (conj(conds), s)
        }
        View::Select { dim } => {
            let mut s = b.clone();
            let i = s.remove(*dim);
            let e = index.unwrap_or_else(|| Expr::int(0));
            (Some(Expr::binary(BinOp::Eq, i, e)), s)
        }
        View::Permute(p) => (None, p.iter().map(|&d| b[d].clone()).collect()),
        View::Unsqueeze(d) => {
            let mut s = b;
            s.insert(*d, Expr::int(0));
            (None, s)
        }
        View::Squeeze(d) => {
            let mut s = b;
            s.remove(*d);
            (None, s)
        }
        View::Expand(_) => return None,
        View::Reshape(_) => (None, reshape_map(&b, base_shape, view_shape)),
    })
}

/// `e` clamped into `lo..=hi` (integers).
fn clamp(e: Expr, lo: i64, hi: i64) -> Expr {
    Expr::Call(
        Builtin::Max,
        vec![
            Expr::Call(Builtin::Min, vec![e, Expr::int(hi)]),
            Expr::int(lo),
        ],
    )
}

fn conj(conds: Vec<Expr>) -> Option<Expr> {
    conds
        .into_iter()
        .reduce(|a, c| Expr::binary(BinOp::And, a, c))
}
