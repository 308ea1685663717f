//! Statements: assignments (to names, tuples and subscripts), augmented
//! assignments (in place on tensors), expression statements, `return`,
//! and the control flow that becomes loop and branch regions.

use std::collections::HashMap;

use ruff_python_ast::{self as ast, Expr as PyExpr, Stmt as PyStmt};

use crate::error::{Error, Result};
use crate::graph::{Elem, Mutation, NodeId, Op, Origin, Span, Ty, ValueId};
use ir::BinOp;

use super::{span, Tracer, Val};

impl Tracer<'_> {
    /// Runs the statements of a def's body (`def_body`: a final `return`
    /// is allowed) or of a region's.
    pub(super) fn body(&mut self, stmts: &[PyStmt], def_body: bool) -> Result<()> {
        for (k, s) in stmts.iter().enumerate() {
            if let PyStmt::Return(r) = s {
                if !def_body || k + 1 != stmts.len() {
                    return Err(Error::new(
                        span(s),
                        "`return` is only allowed as the last statement of a def (not inside a loop or branch)",
                    ));
                }
                let Some(v) = &r.value else {
                    return Err(Error::new(
                        span(s),
                        "`return` needs a value: a tensor or a tuple of tensors",
                    ));
                };
                let val = self.expr(v)?;
                self.returned = Some(val);
                continue;
            }
            self.stmt(s)?;
        }
        Ok(())
    }

    fn stmt(&mut self, s: &PyStmt) -> Result<()> {
        let at = span(s);
        match s {
            PyStmt::Assign(a) => {
                let val = self.expr(&a.value)?;
                for t in &a.targets {
                    self.assign(t, val.clone(), at)?;
                }
                Ok(())
            }
            PyStmt::AnnAssign(a) => match &a.value {
                Some(v) => {
                    let val = self.expr(v)?;
                    self.assign(&a.target, val, at)
                }
                None => Err(Error::new(at, "an annotation without a value assigns nothing")),
            },
            PyStmt::AugAssign(a) => self.aug_assign(a),
            PyStmt::Expr(e) => {
                if e.value.is_string_literal_expr() {
                    return Ok(());
                }
                self.expr(&e.value).map(|_| ())
            }
            PyStmt::Pass(_) => Ok(()),
            PyStmt::For(f) => self.for_loop(f),
            PyStmt::While(w) => self.while_loop(w),
            PyStmt::If(i) => self.branch(&i.test, &i.body, &i.elif_else_clauses, at),
            PyStmt::Import(_) | PyStmt::ImportFrom(_) => {
                Err(Error::new(at, "`import` is only allowed at the top level of the file"))
            }
            PyStmt::Break(_) | PyStmt::Continue(_) => Err(Error::new(
                at,
                "`break` and `continue` are not in the subset: write the exit as the `while` condition",
            )),
            PyStmt::FunctionDef(_) => Err(Error::new(at, "nested defs (closures) are not in the subset")),
            other => Err(Error::new(at, format!("`{}` statements are not in the subset", stmt_kind(other)))),
        }
    }

    /// Binds target `t` to `val`: a name, a tuple of targets, or a
    /// subscript (slice assignment, a copy into a view; `stmt` is the
    /// statement, which the mutation is reported at).
    fn assign(&mut self, t: &PyExpr, val: Val, stmt: Span) -> Result<()> {
        let at = span(t);
        match t {
            PyExpr::Name(n) => {
                // A value first bound to a name takes the name (printed
                // programs then read like the source).
                if let Val::Value(v) = &val {
                    if self.g.values[*v].name.starts_with('_') {
                        self.g.values[*v].name = n.id.to_string();
                    }
                }
                self.env.insert(n.id.to_string(), val);
                Ok(())
            }
            PyExpr::Tuple(ast::ExprTuple { elts, .. })
            | PyExpr::List(ast::ExprList { elts, .. }) => {
                let Val::Tuple(items) = val else {
                    return Err(Error::new(
                        at,
                        format!("cannot unpack {} into {} names", val.describe(), elts.len()),
                    ));
                };
                if items.len() != elts.len() {
                    return Err(Error::new(
                        at,
                        format!(
                            "cannot unpack a tuple of {} into {} names",
                            items.len(),
                            elts.len()
                        ),
                    ));
                }
                for (e, v) in elts.iter().zip(items) {
                    self.assign(e, v, stmt)?;
                }
                Ok(())
            }
            PyExpr::Subscript(sub) => {
                let src = self.value(&val, "the assigned value", at)?;
                let view = self.subscript_view(sub)?;
                self.mutate(view, Mutation::Copy, vec![src], stmt)
            }
            PyExpr::Attribute(_) => Err(Error::new(
                at,
                "assigning to an attribute is not in the subset",
            )),
            _ => Err(Error::new(
                at,
                "this assignment target is not in the subset",
            )),
        }
    }

    fn aug_assign(&mut self, a: &ast::StmtAugAssign) -> Result<()> {
        let at = span(a);
        let rhs = self.expr(&a.value)?;
        let rhs = self.value(&rhs, "the right side", at)?;
        match &*a.target {
            PyExpr::Subscript(sub) => {
                let view = self.subscript_view(sub)?;
                self.mutate_arith(view, a.op, rhs, at)
            }
            PyExpr::Name(n) => {
                let cur = self.lookup(n.id.as_str(), span(n))?;
                let cur = self.value(&cur, &format!("`{}`", n.id), at)?;
                if matches!(self.g.ty(cur), Ty::Tensor { .. }) {
                    // `x += y` on a tensor is in place (`__iadd__`).
                    self.mutate_arith(cur, a.op, rhs, at)
                } else {
                    let v = self.arith(a.op, cur, rhs, at)?;
                    self.env.insert(n.id.to_string(), v);
                    Ok(())
                }
            }
            _ => Err(Error::new(
                at,
                "this augmented-assignment target is not in the subset",
            )),
        }
    }

    /// `target op= rhs` in place: true division stays in the target's
    /// (float) type, as PyTorch requires.
    fn mutate_arith(
        &mut self,
        target: ValueId,
        op: ast::Operator,
        rhs: ValueId,
        at: Span,
    ) -> Result<()> {
        let elem = match op {
            ast::Operator::Div if !self.dtype(target).is_float() => {
                return Err(Error::new(
                    at,
                    "in-place true division of an integer tensor (PyTorch refuses it too)",
                ))
            }
            ast::Operator::Div => Elem::Binary(BinOp::Div),
            other => Elem::Binary(super::expr::bin_op(other, at)?),
        };
        self.mutate(target, Mutation::Elem(elem), vec![rhs], at)
    }

    /// An in-place update of `target`: checks PyTorch's rules (the result
    /// keeps the target's shape; no write through an expanded view) and
    /// appends the mutation node.
    pub(super) fn mutate(
        &mut self,
        target: ValueId,
        m: Mutation,
        args: Vec<ValueId>,
        at: Span,
    ) -> Result<()> {
        let shape = self.shape(target);
        if !matches!(self.g.ty(target), Ty::Tensor { .. }) {
            return Err(Error::new(at, "an in-place update needs a tensor"));
        }
        if self.is_expanded(target) {
            return Err(Error::new(
                at,
                "writing through an expanded view: more than one element of the written-to tensor refers to a single memory location (PyTorch refuses it too)",
            ));
        }
        for &a in &args {
            let s = self.shape(a);
            let b = super::expr::broadcast(&shape, &s)
                .filter(|b| *b == shape)
                .ok_or_else(|| {
                    Error::new(at, format!("a value of shape {s:?} cannot be written into a view of shape {shape:?}"))
                })?;
            debug_assert_eq!(b, shape);
        }
        self.check_must_alias(target, at)?;
        let mut inputs = vec![target];
        inputs.extend(args);
        self.g.push(self.block, Op::Mutate(m), inputs, &[], at);
        Ok(())
    }

    /// Refuses an update whose storage may be shared through control
    /// flow (TensorSSA converts must-alias views only, §2.3): the storage
    /// owner is a branch's output, or a loop-carried value, whose incoming
    /// values are views or shared. Inside its own loop a carried value is
    /// checked when the loop ends ([`Self::check_carried_updates`]).
    fn check_must_alias(&mut self, target: ValueId, at: Span) -> Result<()> {
        let (root, _) = self.view_chain(target);
        match self.g.values[root].origin {
            Origin::Node(n, _) if self.g.nodes[n].op == Op::If => {
                let k = self.g.nodes[n]
                    .outputs
                    .iter()
                    .position(|&o| o == root)
                    .unwrap_or(0);
                for &side in &self.g.nodes[n].blocks.clone() {
                    let r = self.g.blocks[side].returns[k];
                    if self.g.block_of(r) != side || !self.view_chain(r).1.is_empty() {
                        return Err(may_alias(&self.g.values[root].name, at));
                    }
                }
                Ok(())
            }
            Origin::Node(n, _) if matches!(self.g.nodes[n].op, Op::Loop { .. }) => {
                let k = self.g.nodes[n]
                    .outputs
                    .iter()
                    .position(|&o| o == root)
                    .unwrap_or(0);
                let b = self.g.nodes[n].blocks[0];
                let param = self.g.blocks[b].params[1 + k];
                if self.mutated_params.contains(&param) {
                    Ok(())
                } else {
                    self.check_carried(n, k)
                        .map_err(|name| may_alias(&name, at))
                }
            }
            Origin::Param(b, _) if b != crate::graph::ROOT => {
                self.mutated_params.insert(root);
                Ok(())
            }
            _ => Ok(()),
        }
    }

    /// Checks, when loop `n` ends, the carried values its body updated in
    /// place.
    fn check_carried_updates(&self, n: NodeId, at: Span) -> Result<()> {
        let b = self.g.nodes[n].blocks[0];
        for k in 0..self.g.nodes[n].outputs.len() {
            if self
                .mutated_params
                .contains(&self.g.blocks[b].params[1 + k])
            {
                self.check_carried(n, k)
                    .map_err(|name| may_alias(&name, at))?;
            }
        }
        Ok(())
    }

    /// Whether carried slot `k` of loop `n` owns its storage: its initial
    /// and next values are no views, and neither is shared with another
    /// slot or read by anything but the loop.
    fn check_carried(&self, n: NodeId, k: usize) -> std::result::Result<(), String> {
        let node = &self.g.nodes[n];
        let b = node.blocks[0];
        let Op::Loop {
            counted,
            conditional,
        } = node.op
        else {
            return Ok(());
        };
        let first = counted as usize + conditional as usize;
        let init = node.inputs[first + k];
        let next = self.g.blocks[b].returns[conditional as usize + k];
        let name = self.g.values[self.g.blocks[b].params[1 + k]].name.clone();
        let shared = |v: ValueId| {
            let inits = node.inputs[first..].iter().filter(|&&x| x == v).count();
            let nexts = self.g.blocks[b].returns.iter().filter(|&&x| x == v).count();
            inits + nexts > 1
                || self
                    .g
                    .nodes
                    .iter()
                    .enumerate()
                    .any(|(m, other)| m != n && other.inputs.contains(&v))
        };
        if !self.view_chain(init).1.is_empty()
            || !self.view_chain(next).1.is_empty()
            || shared(init)
        {
            return Err(name);
        }
        Ok(())
    }

    pub(super) fn lookup(&self, name: &str, at: Span) -> Result<Val> {
        self.env.get(name).cloned().ok_or_else(|| {
            Error::new(at, format!("`{name}` is not defined here (a name first bound inside a loop or one branch is not visible after it)"))
        })
    }

    fn for_loop(&mut self, f: &ast::StmtFor) -> Result<()> {
        let at = span(f);
        if !f.orelse.is_empty() {
            return Err(Error::new(at, "`for ... else` is not in the subset"));
        }
        let PyExpr::Name(index) = &*f.target else {
            return Err(Error::new(
                span(&*f.target),
                "the loop variable must be a single name",
            ));
        };
        let PyExpr::Call(call) = &*f.iter else {
            return Err(Error::new(
                span(&*f.iter),
                "loops run over `range(...)` only",
            ));
        };
        if !matches!(&*call.func, PyExpr::Name(n) if n.id.as_str() == "range")
            || !call.arguments.keywords.is_empty()
        {
            return Err(Error::new(
                span(&*f.iter),
                "loops run over `range(...)` only",
            ));
        }
        let mut bounds = Vec::new();
        for a in call.arguments.args.iter() {
            let v = self.expr(a)?;
            bounds.push(self.known_int(&v, "a `range` bound", span(a))?);
        }
        let (start, stop, step) = match bounds.as_slice() {
            [n] => (0, *n, 1),
            [a, b] => (*a, *b, 1),
            [a, b, s] if *s != 0 => (*a, *b, *s),
            [_, _, _] => return Err(Error::new(span(&*f.iter), "`range` step must not be zero")),
            _ => return Err(Error::new(span(&*f.iter), "`range` takes 1 to 3 arguments")),
        };
        let count = if step > 0 {
            super::ceil_div((stop - start).max(0), step)
        } else {
            super::ceil_div((start - stop).max(0), -step)
        };
        let header = LoopHeader {
            count: Some(count),
            test: None,
            index: Some((index.id.as_str(), start, step)),
        };
        // A body that needs its index while tracing (a slice up to it: a
        // shape that changes every iteration) is unrolled instead.
        let (graph, env, block) = (self.g.clone(), self.env.clone(), self.block);
        match self.build_loop(header, &f.body, at) {
            Err(e) if e.needs_known => {
                self.g = graph;
                self.env = env;
                self.block = block;
                for k in 0..count {
                    let i = self.constant(ir::Value::Int(start + step * k), at);
                    self.env.insert(index.id.to_string(), i);
                    self.body(&f.body, false)?;
                }
                Ok(())
            }
            other => other,
        }
    }

    fn while_loop(&mut self, w: &ast::StmtWhile) -> Result<()> {
        let at = span(w);
        if !w.orelse.is_empty() {
            return Err(Error::new(at, "`while ... else` is not in the subset"));
        }
        let header = LoopHeader {
            count: None,
            test: Some(&w.test),
            index: None,
        };
        self.build_loop(header, &w.body, at)
    }

    /// A loop region: the names the body rebinds that exist before it are
    /// carried; names first bound in the body stay inside it.
    fn build_loop(&mut self, h: LoopHeader, body: &[PyStmt], at: Span) -> Result<()> {
        let mut inputs = Vec::new();
        if let Some(n) = h.count {
            if n == 0 {
                return Ok(());
            }
            let c = self.const_id(ir::Value::Int(n), at);
            inputs.push(c);
        }
        if let Some(test) = h.test {
            let c = self.condition(test)?;
            if self.const_of(c) == Some(ir::Value::Bool(false)) {
                return Ok(());
            }
            inputs.push(c);
        }
        let carried = self.carried_names(body);
        inputs.extend(carried.iter().map(|(_, v)| *v));
        let outs: Vec<(String, Ty)> = carried
            .iter()
            .map(|(n, v)| (n.clone(), self.g.ty(*v).clone()))
            .collect();
        let outs_ref: Vec<(&str, Ty)> = outs.iter().map(|(n, t)| (n.as_str(), t.clone())).collect();
        let op = Op::Loop {
            counted: h.count.is_some(),
            conditional: h.test.is_some(),
        };
        let parent = self.block;
        let node = self.g.make_node(parent, op, inputs, &outs_ref, at);
        let b = self.g.add_block(node);
        self.g.nodes[node].blocks.push(b);
        let k = self.g.add_param(b, "k", Ty::Int);
        let saved = self.env.clone();
        for (name, v) in &carried {
            let p = self.g.add_param(b, name, self.g.ty(*v).clone());
            self.env.insert(name.clone(), Val::Value(p));
        }
        self.block = b;
        if let Some((name, 0, 1)) = h.index {
            self.g.values[k].name = name.to_string();
            self.env.insert(name.to_string(), Val::Value(k));
        } else if let Some((name, start, step)) = h.index {
            // Python's index is `start + step * k`.
            let s = self.const_id(ir::Value::Int(step), at);
            let scaled = self.scalar_op(Elem::Binary(BinOp::Mul), vec![k, s], Ty::Int, at)?;
            let scaled = self.value(&scaled, "the loop index", at)?;
            let o = self.const_id(ir::Value::Int(start), at);
            let i = self.scalar_op(Elem::Binary(BinOp::Add), vec![scaled, o], Ty::Int, at)?;
            self.env.insert(name.to_string(), i);
        }
        self.body(body, false)?;
        let mut returns = Vec::new();
        if let Some(test) = h.test {
            let c = self.condition(test)?;
            returns.push(c);
        }
        for (name, v) in &carried {
            let now = self.lookup(name, at)?;
            let now = self.value(&now, &format!("`{name}`"), at)?;
            if self.g.ty(now) != self.g.ty(*v) {
                return Err(Error::new(
                    at,
                    format!(
                        "`{name}` changes type in the loop: {} before it, {} after an iteration (loop-carried values keep their shape)",
                        show_ty(self.g.ty(*v)),
                        show_ty(self.g.ty(now))
                    ),
                ));
            }
            returns.push(now);
        }
        self.g.blocks[b].returns = returns;
        self.check_carried_updates(node, at)?;
        self.block = parent;
        self.g.blocks[parent].nodes.push(node);
        self.env = saved;
        for ((name, _), &out) in carried.iter().zip(&self.g.nodes[node].outputs.clone()) {
            self.env.insert(name.clone(), Val::Value(out));
        }
        Ok(())
    }

    /// The names `body` rebinds that are bound to graph values now, in
    /// order of first assignment.
    fn carried_names(&self, body: &[PyStmt]) -> Vec<(String, ValueId)> {
        let mut names = Vec::new();
        assigned_names(body, &mut names);
        names
            .into_iter()
            .filter_map(|(n, plain)| match self.env.get(&n) {
                Some(Val::Value(v)) if plain || !matches!(self.g.ty(*v), Ty::Tensor { .. }) => {
                    Some((n, *v))
                }
                _ => None,
            })
            .collect()
    }

    /// A condition's value as a Python `bool` (a 0-d tensor's item).
    fn condition(&mut self, e: &PyExpr) -> Result<ValueId> {
        let v = self.expr(e)?;
        let v = self.value(&v, "the condition", span(e))?;
        let v = self.item(v, span(e))?;
        match self.g.ty(v) {
            Ty::Bool => Ok(v),
            _ => {
                let zero = self.const_id(ir::Value::Int(0), span(e));
                let z =
                    self.scalar_op(Elem::Binary(BinOp::Ne), vec![v, zero], Ty::Bool, span(e))?;
                self.value(&z, "the condition", span(e))
            }
        }
    }

    /// An `if` (with its `elif`/`else` clauses): traced on one side when
    /// the condition is known, else a branch region whose outputs are the
    /// names either side rebinds.
    fn branch(
        &mut self,
        test: &PyExpr,
        then: &[PyStmt],
        rest: &[ast::ElifElseClause],
        at: Span,
    ) -> Result<()> {
        let c = self.condition(test)?;
        if let Some(v) = self.const_of(c) {
            return if v == ir::Value::Bool(true) {
                self.body(then, false)
            } else {
                self.else_part(rest)
            };
        }
        let parent = self.block;
        let node = self.g.make_node(parent, Op::If, vec![c], &[], at);
        let saved = self.env.clone();
        let mut sides: Vec<HashMap<String, Val>> = Vec::new();
        for side in 0..2 {
            let b = self.g.add_block(node);
            self.g.nodes[node].blocks.push(b);
            self.block = b;
            self.env = saved.clone();
            if side == 0 {
                self.body(then, false)?;
            } else {
                self.else_part(rest)?;
            }
            sides.push(std::mem::take(&mut self.env));
        }
        self.block = parent;
        // Outputs: names rebound on either side that exist before the
        // branch, or that both sides bind.
        let mut names = Vec::new();
        assigned_names(then, &mut names);
        for r in rest {
            assigned_names(&r.body, &mut names);
        }
        let mut outs = Vec::new();
        for (n, _) in names {
            let (a, b) = (sides[0].get(&n), sides[1].get(&n));
            let (Some(Val::Value(a)), Some(Val::Value(b))) = (a, b) else {
                continue;
            };
            // A name neither side rebinds (a tensor updated in place keeps
            // its value) is no output.
            if a == b && saved.get(&n) == Some(&Val::Value(*a)) {
                continue;
            }
            if self.g.ty(*a) != self.g.ty(*b) {
                return Err(Error::new(
                    at,
                    format!(
                        "`{n}` is {} on one side of the branch and {} on the other",
                        show_ty(self.g.ty(*a)),
                        show_ty(self.g.ty(*b))
                    ),
                ));
            }
            outs.push((n, *a, *b));
        }
        for (k, side) in [0, 1].into_iter().enumerate() {
            let b = self.g.nodes[node].blocks[side];
            self.g.blocks[b].returns = outs
                .iter()
                .map(|o| if k == 0 { o.1 } else { o.2 })
                .collect();
        }
        let mut bound = Vec::new();
        for (n, a, _) in &outs {
            let ty = self.g.ty(*a).clone();
            let v = self.g.add_output(node, n, ty);
            bound.push((n.clone(), v));
        }
        self.g.blocks[parent].nodes.push(node);
        self.env = saved;
        for (n, v) in bound {
            self.env.insert(n, Val::Value(v));
        }
        Ok(())
    }

    fn else_part(&mut self, rest: &[ast::ElifElseClause]) -> Result<()> {
        match rest.split_first() {
            None => Ok(()),
            Some((first, more)) => match &first.test {
                Some(t) => self.branch(t, &first.body, more, span(first)),
                None => self.body(&first.body, false),
            },
        }
    }
}

fn may_alias(name: &str, at: Span) -> Error {
    Error::new(
        at,
        format!(
            "in-place update of `{name}`, whose storage may be shared through a loop or branch (a view, or a value used elsewhere, flows into it); TensorSSA converts updates of must-alias views only: `.clone()` it where it is bound"
        ),
    )
}

struct LoopHeader<'a> {
    count: Option<i64>,
    test: Option<&'a PyExpr>,
    /// The Python loop variable, its start and step.
    index: Option<(&'a str, i64, i64)>,
}

/// The names statements bind (assignment and loop targets), in order,
/// each once, with whether some binding is a plain one: an augmented
/// assignment rebinds a Python number but updates a tensor in place.
fn assigned_names(stmts: &[PyStmt], out: &mut Vec<(String, bool)>) {
    fn target(e: &PyExpr, plain: bool, out: &mut Vec<(String, bool)>) {
        match e {
            PyExpr::Name(n) => match out.iter_mut().find(|(o, _)| o == n.id.as_str()) {
                Some(entry) => entry.1 |= plain,
                None => out.push((n.id.to_string(), plain)),
            },
            PyExpr::Tuple(t) => t.elts.iter().for_each(|e| target(e, plain, out)),
            PyExpr::List(t) => t.elts.iter().for_each(|e| target(e, plain, out)),
            _ => {}
        }
    }
    for s in stmts {
        match s {
            PyStmt::Assign(a) => a.targets.iter().for_each(|t| target(t, true, out)),
            PyStmt::AnnAssign(a) => target(&a.target, true, out),
            PyStmt::AugAssign(a) => target(&a.target, false, out),
            PyStmt::For(f) => {
                target(&f.target, true, out);
                assigned_names(&f.body, out);
            }
            PyStmt::While(w) => assigned_names(&w.body, out),
            PyStmt::If(i) => {
                assigned_names(&i.body, out);
                for c in &i.elif_else_clauses {
                    assigned_names(&c.body, out);
                }
            }
            _ => {}
        }
    }
}

fn show_ty(t: &Ty) -> String {
    match t {
        Ty::Tensor { dtype, shape } => format!("a {dtype} tensor of shape {shape:?}"),
        Ty::Int => "an int".into(),
        Ty::Float => "a float".into(),
        Ty::Bool => "a bool".into(),
    }
}

fn stmt_kind(s: &PyStmt) -> &'static str {
    match s {
        PyStmt::ClassDef(_) => "class",
        PyStmt::Delete(_) => "del",
        PyStmt::TypeAlias(_) => "type",
        PyStmt::With(_) => "with",
        PyStmt::Match(_) => "match",
        PyStmt::Raise(_) => "raise",
        PyStmt::Try(_) => "try",
        PyStmt::Assert(_) => "assert",
        PyStmt::Global(_) => "global",
        PyStmt::Nonlocal(_) => "nonlocal",
        _ => "this kind of",
    }
}
