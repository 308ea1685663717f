//! Calls: torch functions, `torch.nn.functional` (as `F`), tensor methods
//! (in-place ones among them), Python builtins (`range` is the loops'),
//! and the file's own defs, inlined.

use std::collections::HashMap;

use ruff_python_ast::{self as ast, Expr as PyExpr};

use crate::error::{Error, Result};
use crate::graph::{Elem, Mutation, Op, Reduce, Span, Ty, ValueId, View};
use ir::{BinOp, Builtin, DType};

use super::{span, Tracer, Val};

/// A call's arguments: positional, then keywords by name.
struct Args<'a> {
    pos: Vec<&'a PyExpr>,
    kw: Vec<(&'a str, &'a PyExpr)>,
    at: Span,
    what: String,
}

impl<'a> Args<'a> {
    fn new(a: &'a ast::Arguments, what: String, at: Span) -> Result<Args<'a>> {
        let mut pos = Vec::new();
        for x in a.args.iter() {
            if let PyExpr::Starred(_) = x {
                return Err(Error::new(
                    span(x),
                    "`*args` in a call is not in the subset",
                ));
            }
            pos.push(x);
        }
        let mut kw = Vec::new();
        for k in a.keywords.iter() {
            let Some(name) = &k.arg else {
                return Err(Error::new(
                    span(k),
                    "`**kwargs` in a call is not in the subset",
                ));
            };
            kw.push((name.as_str(), &k.value));
        }
        Ok(Args { pos, kw, at, what })
    }

    /// The argument at position `k` or named `name`.
    fn get(&self, k: usize, name: &str) -> Option<&'a PyExpr> {
        self.pos
            .get(k)
            .copied()
            .or_else(|| self.kw.iter().find(|(n, _)| *n == name).map(|(_, e)| *e))
    }

    /// Refuses keywords outside `names` and more than `max` positional ones.
    fn only(&self, max: usize, names: &[&str]) -> Result<()> {
        if self.pos.len() > max {
            return Err(Error::new(
                self.at,
                format!(
                    "{} takes at most {max} positional arguments here",
                    self.what
                ),
            ));
        }
        for (n, e) in &self.kw {
            if !names.contains(n) {
                return Err(Error::new(
                    span(*e),
                    format!("{} has no argument `{n}` in the subset", self.what),
                ));
            }
        }
        Ok(())
    }
}

impl Tracer<'_> {
    pub(super) fn call(&mut self, c: &ast::ExprCall) -> Result<Val> {
        let at = span(c);
        match &*c.func {
            PyExpr::Attribute(a) => {
                let base = self.expr(&a.value)?;
                let name = a.attr.as_str();
                match base {
                    Val::Module(m) => {
                        let args = Args::new(&c.arguments, format!("`{m}.{name}`"), at)?;
                        self.function(m, name, &args)
                    }
                    Val::Value(v) if matches!(self.g.ty(v), Ty::Tensor { .. }) => {
                        let args = Args::new(&c.arguments, format!("`.{name}()`"), at)?;
                        self.method(v, name, &args)
                    }
                    other => Err(Error::new(
                        at,
                        format!("`.{name}()` on {} is not in the subset", other.describe()),
                    )),
                }
            }
            PyExpr::Name(n) => {
                let name = n.id.as_str();
                let args = Args::new(&c.arguments, format!("`{name}`"), at)?;
                match self.env.get(name).cloned() {
                    Some(v) => Err(Error::new(
                        at,
                        format!("`{name}` is {}, which cannot be called", v.describe()),
                    )),
                    None if self.module.def(name).is_some() => self.call_def(name, &args),
                    None => self.builtin(name, &args),
                }
            }
            _ => Err(Error::new(
                at,
                "only torch functions, tensor methods and the file's defs can be called",
            )),
        }
    }

    /// Inlines a call of def `name` of the file.
    fn call_def(&mut self, name: &str, args: &Args) -> Result<Val> {
        let f = self.module.def(name).expect("checked by the caller");
        super::check_parameters(f)?;
        if !args.kw.is_empty() {
            return Err(Error::new(
                args.at,
                "calls of the file's defs take positional arguments only",
            ));
        }
        let params = &f.parameters.args;
        if params.len() != args.pos.len() {
            return Err(Error::new(
                args.at,
                format!(
                    "`{name}` takes {} arguments, the call passes {}",
                    params.len(),
                    args.pos.len()
                ),
            ));
        }
        let mut env = HashMap::new();
        for (p, a) in params.iter().zip(&args.pos) {
            let v = self.expr(a)?;
            env.insert(p.parameter.name.to_string(), v);
        }
        self.enter(args.at)?;
        let saved_env = std::mem::replace(&mut self.env, env);
        let saved_ret = self.returned.take();
        let r = self.body(&f.body, true);
        self.env = saved_env;
        let result = std::mem::replace(&mut self.returned, saved_ret);
        self.leave();
        r?;
        result.ok_or_else(|| Error::new(args.at, format!("`{name}` returns nothing")))
    }

    fn builtin(&mut self, name: &str, args: &Args) -> Result<Val> {
        let at = args.at;
        match name {
            "len" => {
                args.only(1, &[])?;
                let x = self.arg_tensor(args, 0, "x")?;
                let s = self.shape(x);
                let n = *s
                    .first()
                    .ok_or_else(|| Error::new(at, "`len` of a 0-d tensor"))?;
                Ok(self.constant(ir::Value::Int(n), at))
            }
            "bool" | "int" | "float" => {
                args.only(1, &[])?;
                let v = self.arg_value(args, 0, "x")?;
                let v = self.item(v, at)?;
                let ty = match name {
                    "bool" => Ty::Bool,
                    "int" => Ty::Int,
                    _ => Ty::Float,
                };
                if *self.g.ty(v) == ty {
                    return Ok(Val::Value(v));
                }
                if name == "bool" {
                    let zero = self.const_id(ir::Value::Int(0), at);
                    return self.binary(BinOp::Ne, v, zero, at);
                }
                self.scalar_op(Elem::Cast, vec![v], ty, at)
            }
            "min" | "max" => {
                args.only(2, &[])?;
                let a = self.arg_value(args, 0, "a")?;
                let b = self.arg_value(args, 1, "b")?;
                let f = if name == "min" {
                    Builtin::Min
                } else {
                    Builtin::Max
                };
                self.elementwise(Elem::Builtin(f), vec![a, b], None, at)
            }
            "range" => Err(Error::new(
                at,
                "`range` is only allowed as a `for` loop's iterable",
            )),
            "print" => Err(Error::new(
                at,
                "`print` has effects outside the program; it is not in the subset",
            )),
            _ => Err(Error::new(
                at,
                format!("function `{name}` is not in the subset"),
            )),
        }
    }

    /// A function of module `m` (`torch`, `F`, `math`).
    fn function(&mut self, m: &str, name: &str, args: &Args) -> Result<Val> {
        let at = args.at;
        if m == "math" {
            return Err(Error::new(
                at,
                format!("`math.{name}` is not in the subset"),
            ));
        }
        if let Some(f) = unary(name) {
            args.only(1, &["input"])?;
            let x = self.arg_value(args, 0, "input")?;
            return self.apply_unary(f, x, at);
        }
        match name {
            "softmax" | "log_softmax" => {
                args.only(2, &["input", "dim"])?;
                let x = self.arg_tensor(args, 0, "input")?;
                self.softmax(x, args, 1, name == "log_softmax")
            }
            "matmul" | "mm" | "bmm" => {
                args.only(2, &["input", "other"])?;
                let a = self.arg_tensor(args, 0, "input")?;
                let b = self.arg_tensor(args, 1, "other")?;
                self.matmul(a, b, at)
            }
            "cat" | "concat" | "stack" => {
                args.only(2, &["tensors", "dim"])?;
                let list = args
                    .get(0, "tensors")
                    .ok_or_else(|| Error::new(at, "missing tensors"))?;
                let items = match self.expr(list)? {
                    Val::Tuple(items) => items,
                    other => {
                        return Err(Error::new(
                            span(list),
                            format!(
                                "`torch.{name}` takes a list of tensors, not {}",
                                other.describe()
                            ),
                        ))
                    }
                };
                let mut ts = Vec::new();
                for it in &items {
                    ts.push(self.tensor(it, "a concatenated value", span(list))?);
                }
                let dim = self.opt_int(args, 1, "dim")?.unwrap_or(0);
                if name == "stack" {
                    self.stack(ts, dim, at)
                } else {
                    self.cat(ts, dim, at)
                }
            }
            "zeros" | "ones" | "empty" | "full" => self.creation(name, args),
            "zeros_like" | "ones_like" | "empty_like" | "full_like" => {
                args.only(2, &["input", "fill_value", "dtype"])?;
                let x = self.arg_tensor(args, 0, "input")?;
                let dtype = self.opt_dtype(args, "dtype")?.unwrap_or(self.dtype(x));
                let fill = match name {
                    "full_like" => self.arg_value(args, 1, "fill_value")?,
                    "ones_like" => self.const_id(ir::Value::Int(1), at),
                    _ => self.const_id(ir::Value::Int(0), at),
                };
                self.full(self.shape(x), dtype, fill, at)
            }
            "arange" => {
                args.only(1, &["end", "dtype"])?;
                let n = self.arg_value(args, 0, "end")?;
                let n = self.known_int(&Val::Value(n), "`arange`'s end", at)?;
                let dtype = self.opt_dtype(args, "dtype")?.unwrap_or(DType::I64);
                let node = self.g.push(
                    self.block,
                    Op::Arange,
                    Vec::new(),
                    &[("_r", Ty::tensor(dtype, vec![n.max(0)]))],
                    at,
                );
                Ok(Val::Value(self.g.nodes[node].outputs[0]))
            }
            "clamp" | "clip" => {
                args.only(3, &["input", "min", "max"])?;
                let x = self.arg_tensor(args, 0, "input")?;
                self.clamp(x, args, 1)
            }
            "where" => {
                args.only(3, &["condition", "input", "other"])?;
                let c = self.arg_value(args, 0, "condition")?;
                let a = self.arg_value(args, 1, "input")?;
                let b = self.arg_value(args, 2, "other")?;
                self.select(c, a, b, at)
            }
            "maximum" | "minimum" => {
                args.only(2, &["input", "other"])?;
                let a = self.arg_value(args, 0, "input")?;
                let b = self.arg_value(args, 1, "other")?;
                let f = if name == "maximum" {
                    Builtin::Max
                } else {
                    Builtin::Min
                };
                self.elementwise(Elem::Builtin(f), vec![a, b], None, at)
            }
            "index_select" => {
                args.only(3, &["input", "dim", "index"])?;
                let x = self.arg_tensor(args, 0, "input")?;
                let d = self.arg_dim(args, 1, "dim", self.shape(x).len())?;
                let idx = self.arg_tensor(args, 2, "index")?;
                Ok(Val::Value(self.gather(x, d, idx, at)?))
            }
            "sum" | "mean" | "amax" | "amin" | "any" | "all" | "argmax" | "max" | "min" => {
                let x = self.arg_tensor(args, 0, "input")?;
                self.reduction(x, name, args, 1)
            }
            "transpose" | "permute" | "reshape" | "squeeze" | "unsqueeze" | "narrow" | "select"
            | "flatten" | "t" => {
                let x = self.arg_tensor(args, 0, "input")?;
                let rest = Args {
                    pos: args.pos[1..].to_vec(),
                    kw: args.kw.clone(),
                    at,
                    what: args.what.clone(),
                };
                self.method(x, name, &rest)
            }
            _ => Err(Error::new(at, format!("`{m}.{name}` is not in the subset"))),
        }
    }

    /// A tensor method.
    fn method(&mut self, x: ValueId, name: &str, args: &Args) -> Result<Val> {
        let at = args.at;
        if let Some(f) = unary(name) {
            args.only(0, &[])?;
            return self.apply_unary(f, x, at);
        }
        if let Some(base) = name.strip_suffix('_') {
            return self.in_place(x, base, args);
        }
        let rank = self.shape(x).len();
        match name {
            "clone" | "contiguous" => {
                args.only(0, &["memory_format"])?;
                if name == "contiguous" && self.is_contiguous(x) {
                    return Ok(Val::Value(x));
                }
                Ok(Val::Value(self.copy(x, at)))
            }
            "float" | "double" | "long" | "int" | "bool" => {
                args.only(0, &[])?;
                let t = super::expr::dtype_name(name).expect("a dtype method");
                self.cast(x, t, at)
            }
            "to" => {
                args.only(1, &["dtype"])?;
                let t = self
                    .opt_dtype(args, "dtype")?
                    .ok_or_else(|| Error::new(at, "`.to()` takes a dtype here"))?;
                self.cast(x, t, at)
            }
            "softmax" | "log_softmax" => {
                args.only(1, &["dim"])?;
                self.softmax(x, args, 0, name == "log_softmax")
            }
            "matmul" | "mm" | "bmm" => {
                args.only(1, &["other"])?;
                let b = self.arg_tensor(args, 0, "other")?;
                self.matmul(x, b, at)
            }
            "sum" | "mean" | "amax" | "amin" | "any" | "all" | "argmax" | "max" | "min" => {
                self.reduction(x, name, args, 0)
            }
            "clamp" | "clip" => {
                args.only(2, &["min", "max"])?;
                self.clamp(x, args, 0)
            }
            "masked_fill" => {
                args.only(2, &["mask", "value"])?;
                let mask = self.arg_value(args, 0, "mask")?;
                let v = self.arg_value(args, 1, "value")?;
                let dtype = self.dtype(x);
                let r = self.elementwise_typed(Elem::Where, vec![mask, v, x], dtype, at)?;
                Ok(r)
            }
            "size" => {
                args.only(1, &["dim"])?;
                let shape = self.shape(x);
                match args.get(0, "dim") {
                    None => Ok(Val::Tuple(
                        shape
                            .iter()
                            .map(|&d| self.constant(ir::Value::Int(d), at))
                            .collect(),
                    )),
                    Some(_) => {
                        let d = self.arg_dim(args, 0, "dim", rank)?;
                        Ok(self.constant(ir::Value::Int(shape[d]), at))
                    }
                }
            }
            "dim" => {
                args.only(0, &[])?;
                Ok(self.constant(ir::Value::Int(rank as i64), at))
            }
            "item" => {
                args.only(0, &[])?;
                Ok(Val::Value(self.item(x, at)?))
            }
            "view" | "reshape" => {
                let shape = self.shape_args(args, self.shape(x).iter().product())?;
                if name == "reshape" && !self.is_contiguous(x) {
                    // `reshape` of a non-contiguous tensor copies (not a view).
                    let c = self.copy(x, at);
                    return Ok(Val::Value(self.view(
                        c,
                        View::Reshape(shape),
                        Vec::new(),
                        at,
                    )?));
                }
                Ok(Val::Value(self.view(
                    x,
                    View::Reshape(shape),
                    Vec::new(),
                    at,
                )?))
            }
            "flatten" => {
                args.only(2, &["start_dim", "end_dim"])?;
                let s = self.opt_dim(args, 0, "start_dim", rank)?.unwrap_or(0);
                let e = self
                    .opt_dim(args, 1, "end_dim", rank)?
                    .unwrap_or(rank.saturating_sub(1));
                let shape = self.shape(x);
                let mut to: Vec<i64> = shape[..s].to_vec();
                to.push(shape[s..=e.max(s)].iter().product());
                to.extend_from_slice(&shape[e.max(s) + 1..]);
                let src = if self.is_contiguous(x) {
                    x
                } else {
                    self.copy(x, at)
                };
                Ok(Val::Value(self.view(
                    src,
                    View::Reshape(to),
                    Vec::new(),
                    at,
                )?))
            }
            "permute" => {
                let dims = self.int_list_args(args)?;
                let p = dims
                    .iter()
                    .map(|&d| norm_dim(d, rank, at))
                    .collect::<Result<Vec<_>>>()?;
                Ok(Val::Value(self.view(
                    x,
                    View::Permute(p),
                    Vec::new(),
                    at,
                )?))
            }
            "transpose" | "swapaxes" => {
                args.only(2, &["dim0", "dim1"])?;
                let a = self.arg_dim(args, 0, "dim0", rank)?;
                let b = self.arg_dim(args, 1, "dim1", rank)?;
                let mut p: Vec<usize> = (0..rank).collect();
                p.swap(a, b);
                Ok(Val::Value(self.view(
                    x,
                    View::Permute(p),
                    Vec::new(),
                    at,
                )?))
            }
            "t" => {
                args.only(0, &[])?;
                if rank < 2 {
                    return Ok(Val::Value(x));
                }
                if rank > 2 {
                    return Err(Error::new(
                        at,
                        "`.t()` expects a tensor of at most 2 dimensions",
                    ));
                }
                Ok(Val::Value(self.view(
                    x,
                    View::Permute(vec![1, 0]),
                    Vec::new(),
                    at,
                )?))
            }
            "unsqueeze" => {
                args.only(1, &["dim"])?;
                let d = self.arg_dim(args, 0, "dim", rank + 1)?;
                Ok(Val::Value(self.view(
                    x,
                    View::Unsqueeze(d),
                    Vec::new(),
                    at,
                )?))
            }
            "squeeze" => {
                args.only(1, &["dim"])?;
                match args.get(0, "dim") {
                    Some(_) => {
                        let d = self.arg_dim(args, 0, "dim", rank)?;
                        if self.shape(x)[d] != 1 {
                            return Ok(Val::Value(x));
                        }
                        Ok(Val::Value(self.view(
                            x,
                            View::Squeeze(d),
                            Vec::new(),
                            at,
                        )?))
                    }
                    None => {
                        let mut cur = x;
                        while let Some(d) = self.shape(cur).iter().position(|&n| n == 1) {
                            cur = self.view(cur, View::Squeeze(d), Vec::new(), at)?;
                        }
                        Ok(Val::Value(cur))
                    }
                }
            }
            "expand" => {
                let mut to = self.shape_list(args)?;
                let shape = self.shape(x);
                let lead = to.len().saturating_sub(shape.len());
                for (k, d) in to.iter_mut().enumerate() {
                    if *d == -1 && k >= lead {
                        *d = shape[k - lead];
                    }
                }
                Ok(Val::Value(self.view(
                    x,
                    View::Expand(to),
                    Vec::new(),
                    at,
                )?))
            }
            "expand_as" => {
                args.only(1, &["other"])?;
                let o = self.arg_tensor(args, 0, "other")?;
                let to = self.shape(o);
                Ok(Val::Value(self.view(
                    x,
                    View::Expand(to),
                    Vec::new(),
                    at,
                )?))
            }
            "narrow" => {
                args.only(3, &["dim", "start", "length"])?;
                let d = self.arg_dim(args, 0, "dim", rank)?;
                let s = self.arg_int(args, 1, "start")?;
                let n = self.arg_int(args, 2, "length")?;
                let size = self.shape(x)[d];
                let s = if s < 0 { s + size } else { s };
                Ok(Val::Value(self.view(
                    x,
                    View::Slice {
                        dim: d,
                        start: s,
                        step: 1,
                        len: n,
                    },
                    Vec::new(),
                    at,
                )?))
            }
            "select" => {
                args.only(2, &["dim", "index"])?;
                let d = self.arg_dim(args, 0, "dim", rank)?;
                let i = self.arg_value(args, 1, "index")?;
                let i = match self.const_of(i) {
                    Some(ir::Value::Int(k)) if k < 0 => {
                        self.const_id(ir::Value::Int(k + self.shape(x)[d]), at)
                    }
                    _ => i,
                };
                Ok(Val::Value(self.view(
                    x,
                    View::Select { dim: d },
                    vec![i],
                    at,
                )?))
            }
            _ => Err(Error::new(
                at,
                format!("tensor method `.{name}()` is not in the subset"),
            )),
        }
    }

    /// `x.op_(...)`: the in-place methods. They return `x`.
    fn in_place(&mut self, x: ValueId, base: &str, args: &Args) -> Result<Val> {
        let at = args.at;
        let (m, inputs) = match base {
            "copy" => {
                args.only(1, &["src"])?;
                (Mutation::Copy, vec![self.arg_value(args, 0, "src")?])
            }
            "fill" => {
                args.only(1, &["value"])?;
                (Mutation::Copy, vec![self.arg_value(args, 0, "value")?])
            }
            "zero" => {
                args.only(0, &[])?;
                (Mutation::Copy, vec![self.const_id(ir::Value::Int(0), at)])
            }
            "add" | "sub" | "mul" | "div" => {
                args.only(1, &["other"])?;
                let op = match base {
                    "add" => BinOp::Add,
                    "sub" => BinOp::Sub,
                    "mul" => BinOp::Mul,
                    _ => BinOp::Div,
                };
                if op == BinOp::Div && !self.dtype(x).is_float() {
                    return Err(Error::new(
                        at,
                        "in-place true division of an integer tensor (PyTorch refuses it too)",
                    ));
                }
                (
                    Mutation::Elem(Elem::Binary(op)),
                    vec![self.arg_value(args, 0, "other")?],
                )
            }
            "clamp" | "clip" => {
                args.only(2, &["min", "max"])?;
                let (lo, hi) = self.clamp_bounds(args, 0)?;
                let mut inputs = Vec::new();
                inputs.extend(lo);
                inputs.extend(hi);
                (
                    Mutation::Elem(Elem::Clamp {
                        min: lo.is_some(),
                        max: hi.is_some(),
                    }),
                    inputs,
                )
            }
            "masked_fill" => {
                args.only(2, &["mask", "value"])?;
                let mask = self.arg_value(args, 0, "mask")?;
                let v = self.arg_value(args, 1, "value")?;
                (Mutation::MaskedFill, vec![mask, v])
            }
            other => match unary(other) {
                Some(f) => {
                    args.only(0, &[])?;
                    (Mutation::Elem(f), Vec::new())
                }
                None => {
                    return Err(Error::new(
                        at,
                        format!("in-place method `.{base}_()` is not in the subset"),
                    ))
                }
            },
        };
        if let Mutation::Elem(Elem::Builtin(_)) = m {
            if !self.dtype(x).is_float() {
                return Err(Error::new(
                    at,
                    format!("`.{base}_()` on an integer tensor (PyTorch refuses it too)"),
                ));
            }
        }
        self.mutate(x, m, inputs, at)?;
        Ok(Val::Value(x))
    }

    fn apply_unary(&mut self, f: Elem, x: ValueId, at: Span) -> Result<Val> {
        let t = self.dtype(x);
        let out = match &f {
            Elem::Builtin(b) if *b != Builtin::Abs && !t.is_float() => DType::F32,
            _ => t,
        };
        let x = if out != t {
            self.cast(x, out, at)
                .and_then(|v| self.value(&v, "x", at))?
        } else {
            x
        };
        self.elementwise(f, vec![x], Some(out), at)
    }

    fn cast(&mut self, x: ValueId, t: DType, at: Span) -> Result<Val> {
        if self.dtype(x) == t {
            return Ok(Val::Value(x));
        }
        self.elementwise_typed(Elem::Cast, vec![x], t, at)
    }

    /// A copy of `x` in fresh storage.
    pub(super) fn copy(&mut self, x: ValueId, at: Span) -> ValueId {
        let ty = self.g.ty(x).clone();
        let n = self
            .g
            .push(self.block, Op::Clone, vec![x], &[("_c", ty)], at);
        self.g.nodes[n].outputs[0]
    }

    fn full(&mut self, shape: Vec<i64>, dtype: DType, fill: ValueId, at: Span) -> Result<Val> {
        if shape.iter().any(|&d| d < 0) {
            return Err(Error::new(
                at,
                format!("negative dimension in shape {shape:?}"),
            ));
        }
        let n = self.g.push(
            self.block,
            Op::Full,
            vec![fill],
            &[("_f", Ty::tensor(dtype, shape))],
            at,
        );
        Ok(Val::Value(self.g.nodes[n].outputs[0]))
    }

    fn creation(&mut self, name: &str, args: &Args) -> Result<Val> {
        let at = args.at;
        let (shape_args, fill) = if name == "full" {
            args.only(2, &["size", "fill_value", "dtype"])?;
            let size = args
                .get(0, "size")
                .ok_or_else(|| Error::new(at, "missing size"))?;
            let v = self.expr(size)?;
            let shape = self.int_tuple(&v, span(size))?;
            let fill = self.arg_value(args, 1, "fill_value")?;
            (shape, fill)
        } else {
            for (n, e) in &args.kw {
                if !["dtype", "size", "device", "requires_grad"].contains(n) {
                    return Err(Error::new(
                        span(*e),
                        format!("`torch.{name}` has no argument `{n}` in the subset"),
                    ));
                }
            }
            let shape = self.shape_list(&Args {
                pos: args.pos.clone(),
                kw: Vec::new(),
                at,
                what: args.what.clone(),
            })?;
            let v = if name == "ones" { 1 } else { 0 };
            (shape, self.const_id(ir::Value::Int(v), at))
        };
        let default = match self.g.ty(fill) {
            Ty::Bool if name == "full" => DType::Bool,
            Ty::Int if name == "full" => DType::I64,
            _ => DType::F32,
        };
        let dtype = self.opt_dtype(args, "dtype")?.unwrap_or(default);
        self.full(shape_args, dtype, fill, at)
    }

    fn softmax(&mut self, x: ValueId, args: &Args, k: usize, log: bool) -> Result<Val> {
        let rank = self.shape(x).len();
        let dim = self.arg_dim(args, k, "dim", rank)?;
        let x = if self.dtype(x).is_float() {
            x
        } else {
            self.cast(x, DType::F32, args.at)
                .and_then(|v| self.value(&v, "x", args.at))?
        };
        let ty = self.g.ty(x).clone();
        let n = self.g.push(
            self.block,
            Op::Softmax { dim, log },
            vec![x],
            &[("_p", ty)],
            args.at,
        );
        Ok(Val::Value(self.g.nodes[n].outputs[0]))
    }

    /// `a @ b` with PyTorch's shapes: vectors are promoted and the added
    /// dimension removed; batch dimensions broadcast.
    pub(super) fn matmul(&mut self, a: ValueId, b: ValueId, at: Span) -> Result<Val> {
        let (sa, sb) = (self.shape(a), self.shape(b));
        if sa.is_empty() || sb.is_empty() {
            return Err(Error::new(
                at,
                "`@` needs tensors of at least one dimension",
            ));
        }
        let a2 = if sa.len() == 1 {
            self.view(a, View::Unsqueeze(0), Vec::new(), at)?
        } else {
            a
        };
        let b2 = if sb.len() == 1 {
            self.view(b, View::Unsqueeze(1), Vec::new(), at)?
        } else {
            b
        };
        let (pa, pb) = (self.shape(a2), self.shape(b2));
        let (m, ka) = (pa[pa.len() - 2], pa[pa.len() - 1]);
        let (kb, n) = (pb[pb.len() - 2], pb[pb.len() - 1]);
        if ka != kb {
            return Err(Error::new(
                at,
                format!("matmul shapes {sa:?} and {sb:?} do not match ({ka} vs {kb})"),
            ));
        }
        let batch =
            super::expr::broadcast(&pa[..pa.len() - 2], &pb[..pb.len() - 2]).ok_or_else(|| {
                Error::new(
                    at,
                    format!("matmul batch dimensions of {sa:?} and {sb:?} do not broadcast"),
                )
            })?;
        let mut out = batch;
        out.extend([m, n]);
        let dtype = super::expr::result_dtype(self.g.ty(a), self.g.ty(b));
        let node = self.g.push(
            self.block,
            Op::Matmul,
            vec![a2, b2],
            &[("_mm", Ty::tensor(dtype, out.clone()))],
            at,
        );
        let mut r = self.g.nodes[node].outputs[0];
        if sb.len() == 1 {
            r = self.view(r, View::Squeeze(out.len() - 1), Vec::new(), at)?;
        }
        if sa.len() == 1 {
            let d = self.shape(r).len() - if sb.len() == 1 { 1 } else { 2 };
            r = self.view(r, View::Squeeze(d), Vec::new(), at)?;
        }
        Ok(Val::Value(r))
    }

    fn cat(&mut self, ts: Vec<ValueId>, dim: i64, at: Span) -> Result<Val> {
        let first = *ts
            .first()
            .ok_or_else(|| Error::new(at, "`cat` of no tensors"))?;
        let shape = self.shape(first);
        let d = norm_dim(dim, shape.len(), at)?;
        let mut out = shape.clone();
        out[d] = 0;
        let mut dtype = self.dtype(first);
        for &t in &ts {
            let s = self.shape(t);
            if s.len() != shape.len() || s.iter().enumerate().any(|(k, &n)| k != d && n != shape[k])
            {
                return Err(Error::new(
                    at,
                    format!("`cat` of shapes {shape:?} and {s:?} along dimension {d}"),
                ));
            }
            out[d] += s[d];
            dtype = DType::promote(dtype, self.dtype(t));
        }
        let n = self.g.push(
            self.block,
            Op::Cat { dim: d },
            ts,
            &[("_cat", Ty::tensor(dtype, out))],
            at,
        );
        Ok(Val::Value(self.g.nodes[n].outputs[0]))
    }

    fn stack(&mut self, ts: Vec<ValueId>, dim: i64, at: Span) -> Result<Val> {
        let rank = ts.first().map(|&t| self.shape(t).len()).unwrap_or(0);
        let d = norm_dim(dim, rank + 1, at)?;
        let mut parts = Vec::new();
        for t in ts {
            parts.push(self.view(t, View::Unsqueeze(d), Vec::new(), at)?);
        }
        self.cat(parts, d as i64, at)
    }

    fn clamp(&mut self, x: ValueId, args: &Args, k: usize) -> Result<Val> {
        let (lo, hi) = self.clamp_bounds(args, k)?;
        let mut inputs = vec![x];
        inputs.extend(lo);
        inputs.extend(hi);
        let dtype = self.dtype(x);
        self.elementwise_typed(
            Elem::Clamp {
                min: lo.is_some(),
                max: hi.is_some(),
            },
            inputs,
            dtype,
            args.at,
        )
    }

    fn clamp_bounds(
        &mut self,
        args: &Args,
        k: usize,
    ) -> Result<(Option<ValueId>, Option<ValueId>)> {
        let mut get = |pos: usize, name: &str| -> Result<Option<ValueId>> {
            match args.get(pos, name) {
                None | Some(PyExpr::NoneLiteral(_)) => Ok(None),
                Some(e) => {
                    let v = self.expr(e)?;
                    self.value(&v, name, span(e)).map(Some)
                }
            }
        };
        let lo = get(k, "min")?;
        let hi = get(k + 1, "max")?;
        if lo.is_none() && hi.is_none() {
            return Err(Error::new(args.at, "`clamp` needs `min` or `max`"));
        }
        Ok((lo, hi))
    }

    fn select(&mut self, c: ValueId, a: ValueId, b: ValueId, at: Span) -> Result<Val> {
        let t = super::expr::result_dtype(self.g.ty(a), self.g.ty(b));
        self.elementwise_typed(Elem::Where, vec![c, a, b], t, at)
    }

    /// Reductions, as methods (`k` = 0) or functions (`k` = 1, after the
    /// input): `sum(dim, keepdim)`, `max(dim)` giving (values, indices).
    fn reduction(&mut self, x: ValueId, name: &str, args: &Args, k: usize) -> Result<Val> {
        let at = args.at;
        args.only(k + 2, &["input", "dim", "keepdim", "dtype"])?;
        let rank = self.shape(x).len();
        let keepdim = match args.get(k + 1, "keepdim") {
            None => false,
            Some(e) => {
                let v = self.expr(e)?;
                self.known_int(&v, "`keepdim`", span(e))? != 0
            }
        };
        let dims: Vec<usize> = match args.get(k, "dim") {
            None => (0..rank).collect(),
            Some(e) => {
                let v = self.expr(e)?;
                match v {
                    Val::Tuple(items) => items
                        .iter()
                        .map(|i| {
                            self.known_int(i, "a dimension", span(e))
                                .and_then(|d| norm_dim(d, rank, span(e)))
                        })
                        .collect::<Result<_>>()?,
                    one => vec![norm_dim(
                        self.known_int(&one, "a dimension", span(e))?,
                        rank,
                        span(e),
                    )?],
                }
            }
        };
        let with_dim = args.get(k, "dim").is_some();
        if (name == "max" || name == "min") && with_dim {
            // `x.max(dim)`: the values and their indices.
            let values = self.reduce(
                x,
                if name == "max" {
                    Reduce::Max
                } else {
                    Reduce::Min
                },
                dims.clone(),
                keepdim,
                at,
            )?;
            if name == "min" {
                return Err(Error::new(
                    at,
                    "`min(dim)` with indices is not in the subset: use `amin(dim)`",
                ));
            }
            let idx = self.argmax(x, dims[0], keepdim, at)?;
            return Ok(Val::Tuple(vec![Val::Value(values), Val::Value(idx)]));
        }
        let op = match name {
            "sum" => Reduce::Sum,
            "mean" => Reduce::Mean,
            "amax" | "max" => Reduce::Max,
            "amin" | "min" => Reduce::Min,
            "any" => Reduce::Any,
            "all" => Reduce::All,
            "argmax" => {
                if dims.len() != 1 {
                    return Err(Error::new(
                        at,
                        "`argmax` over the whole tensor is not in the subset: give `dim`",
                    ));
                }
                return Ok(Val::Value(self.argmax(x, dims[0], keepdim, at)?));
            }
            _ => unreachable!("the caller's list"),
        };
        Ok(Val::Value(self.reduce(x, op, dims, keepdim, at)?))
    }

    fn reduce(
        &mut self,
        x: ValueId,
        op: Reduce,
        dims: Vec<usize>,
        keepdim: bool,
        at: Span,
    ) -> Result<ValueId> {
        let shape = self.shape(x);
        let out: Vec<i64> = shape
            .iter()
            .enumerate()
            .filter_map(|(k, &n)| match (dims.contains(&k), keepdim) {
                (false, _) => Some(n),
                (true, true) => Some(1),
                (true, false) => None,
            })
            .collect();
        let t = self.dtype(x);
        let dtype = match op {
            Reduce::Any | Reduce::All => DType::Bool,
            Reduce::Mean if !t.is_float() => {
                return Err(Error::new(
                    at,
                    "`mean` of an integer tensor (PyTorch refuses it too)",
                ))
            }
            Reduce::Sum if t == DType::Bool || (t.is_int() && t != DType::I64) => DType::I64,
            _ => t,
        };
        let n = self.g.push(
            self.block,
            Op::Reduce { op, dims, keepdim },
            vec![x],
            &[("_r", Ty::tensor(dtype, out))],
            at,
        );
        Ok(self.g.nodes[n].outputs[0])
    }

    fn argmax(&mut self, x: ValueId, dim: usize, keepdim: bool, at: Span) -> Result<ValueId> {
        let mut out = self.shape(x);
        if keepdim {
            out[dim] = 1;
        } else {
            out.remove(dim);
        }
        let n = self.g.push(
            self.block,
            Op::Argmax { dim, keepdim },
            vec![x],
            &[("_i", Ty::tensor(DType::I64, out))],
            at,
        );
        Ok(self.g.nodes[n].outputs[0])
    }

    // Argument readers.

    fn arg_value(&mut self, args: &Args, k: usize, name: &str) -> Result<ValueId> {
        let e = args
            .get(k, name)
            .ok_or_else(|| Error::new(args.at, format!("{} needs argument `{name}`", args.what)))?;
        let v = self.expr(e)?;
        self.value(&v, &format!("argument `{name}`"), span(e))
    }

    fn arg_tensor(&mut self, args: &Args, k: usize, name: &str) -> Result<ValueId> {
        let v = self.arg_value(args, k, name)?;
        match self.g.ty(v) {
            Ty::Tensor { .. } => Ok(v),
            _ => Err(Error::new(
                args.at,
                format!("argument `{name}` of {} must be a tensor", args.what),
            )),
        }
    }

    fn arg_int(&mut self, args: &Args, k: usize, name: &str) -> Result<i64> {
        let e = args
            .get(k, name)
            .ok_or_else(|| Error::new(args.at, format!("{} needs argument `{name}`", args.what)))?;
        let v = self.expr(e)?;
        self.known_int(&v, &format!("argument `{name}`"), span(e))
    }

    fn opt_int(&mut self, args: &Args, k: usize, name: &str) -> Result<Option<i64>> {
        match args.get(k, name) {
            None => Ok(None),
            Some(_) => self.arg_int(args, k, name).map(Some),
        }
    }

    fn arg_dim(&mut self, args: &Args, k: usize, name: &str, rank: usize) -> Result<usize> {
        let d = self.arg_int(args, k, name)?;
        norm_dim(d, rank, args.at)
    }

    fn opt_dim(&mut self, args: &Args, k: usize, name: &str, rank: usize) -> Result<Option<usize>> {
        match args.get(k, name) {
            None => Ok(None),
            Some(_) => self.arg_dim(args, k, name, rank).map(Some),
        }
    }

    fn opt_dtype(&mut self, args: &Args, name: &str) -> Result<Option<DType>> {
        let Some(e) = args
            .kw
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, e)| *e)
            .or_else(|| {
                // `.to(torch.float32)` passes the dtype positionally.
                (name == "dtype" && args.what == "`.to()`")
                    .then(|| args.pos.first().copied())
                    .flatten()
            })
        else {
            return Ok(None);
        };
        match self.expr(e)? {
            Val::DType(t) => Ok(Some(t)),
            other => Err(Error::new(
                span(e),
                format!("`dtype` must be a torch dtype, not {}", other.describe()),
            )),
        }
    }

    /// Known integers from a value that is a tuple of them (or one).
    fn int_tuple(&mut self, v: &Val, at: Span) -> Result<Vec<i64>> {
        match v {
            Val::Tuple(items) => items
                .iter()
                .map(|i| self.known_int(i, "a size", at))
                .collect(),
            one => Ok(vec![self.known_int(one, "a size", at)?]),
        }
    }

    /// Sizes given as separate arguments or as one tuple.
    fn shape_list(&mut self, args: &Args) -> Result<Vec<i64>> {
        if let Some(e) = args.kw.iter().find(|(n, _)| *n == "size").map(|(_, e)| *e) {
            let v = self.expr(e)?;
            return self.int_tuple(&v, span(e));
        }
        let mut out = Vec::new();
        for e in &args.pos {
            let v = self.expr(e)?;
            out.extend(self.int_tuple(&v, span(*e))?);
        }
        Ok(out)
    }

    fn int_list_args(&mut self, args: &Args) -> Result<Vec<i64>> {
        args.only(usize::MAX, &["dims"])?;
        self.shape_list(args)
    }

    /// A `view`/`reshape` shape, `-1` inferred from `total` elements.
    fn shape_args(&mut self, args: &Args, total: i64) -> Result<Vec<i64>> {
        args.only(usize::MAX, &["shape"])?;
        let mut shape = self.shape_list(args)?;
        let unknown: Vec<usize> = (0..shape.len()).filter(|&k| shape[k] == -1).collect();
        if unknown.len() > 1 {
            return Err(Error::new(args.at, "only one dimension can be -1"));
        }
        if let Some(&k) = unknown.first() {
            let known: i64 = shape.iter().filter(|&&d| d != -1).product();
            if known == 0 || total % known != 0 {
                return Err(Error::new(
                    args.at,
                    format!("shape {shape:?} is invalid for {total} elements"),
                ));
            }
            shape[k] = total / known;
        }
        Ok(shape)
    }
}

/// The unary functions by their torch names.
fn unary(name: &str) -> Option<Elem> {
    Some(match name {
        "sigmoid" => Elem::Builtin(Builtin::Sigmoid),
        "tanh" => Elem::Builtin(Builtin::Tanh),
        "exp" => Elem::Builtin(Builtin::Exp),
        "log" => Elem::Builtin(Builtin::Log),
        "sqrt" => Elem::Builtin(Builtin::Sqrt),
        "rsqrt" => Elem::Builtin(Builtin::Rsqrt),
        "abs" => Elem::Builtin(Builtin::Abs),
        "floor" => Elem::Builtin(Builtin::Floor),
        "ceil" => Elem::Builtin(Builtin::Ceil),
        "relu" => Elem::Relu,
        "neg" => Elem::Neg,
        _ => return None,
    })
}

/// A dimension, negative ones counted from the end.
fn norm_dim(d: i64, rank: usize, at: Span) -> Result<usize> {
    let r = rank as i64;
    let k = if d < 0 { d + r } else { d };
    if (0..r.max(1)).contains(&k) {
        Ok(k as usize)
    } else {
        Err(Error::new(
            at,
            format!("dimension {d} is out of range for {rank} dimensions"),
        ))
    }
}
