//! Loop and branch regions: headers, bodies, yields and results.
//!
//! A region's body is a block checked like the def's own statements, in a
//! scope that sees what is defined before the region and what the body
//! defines itself; when the body closes, what it defined is hidden (the IR
//! writes every tensor in one block, so names stay unique across blocks). A
//! loop's index is an `int64` scalar in its body (`Expr::Sym`), usable in
//! expressions, subscripts, ranges and inner loop counts. A loop's results
//! are declared with the types its carried tensors are written with, a
//! branch's with the types of what it yields. Whether two tensors have one
//! type may depend on shapes still to be inferred: such a check is an
//! [`Agreement`], settled as soon as the fixed point knows both shapes.

use std::collections::{HashMap, HashSet};

use super::{build_stmts, count, join, names_in, Block, DefCx, Pending, HIDDEN, POISONED};
use crate::ast::*;
use crate::diag::{Diagnostic, Span};
use crate::typing::{coerce, TensorInfo};
use ir::{Carried, DType, Expr, IfStmt, LoopStmt, SizeExpr, Stmt};

/// A region after phase 1.
pub(super) struct PendingRegion<'s> {
    head: Head,
    /// A loop's body, or a branch's `then` and `else` blocks.
    pub(super) bodies: Vec<Vec<Pending<'s>>>,
    /// Type checks waiting for shapes.
    agreements: Vec<Agreement>,
    /// Results whose shapes are still unknown.
    fills: Vec<Fill>,
}

/// What a region is, apart from its bodies.
enum Head {
    Loop {
        index: String,
        count: Option<Expr>,
        cond: Option<Expr>,
        carried: Vec<Carried>,
        yields: Vec<String>,
        results: Vec<String>,
    },
    If {
        cond: Expr,
        then_yields: Vec<String>,
        else_yields: Vec<String>,
        results: Vec<String>,
    },
}

/// A result whose shape is that of the first of `sources` whose shape
/// becomes known (a branch's result takes its yields' shape).
struct Fill {
    result: String,
    span: Span,
    sources: Vec<String>,
}

/// Tensor `have` must have the element type and shape of tensor `want`.
/// Element types and ranks are known when the agreement is made; shapes may
/// not be, so the check waits until both are.
struct Agreement {
    want: String,
    have: String,
    span: Span,
    kind: Kind,
    done: bool,
}

/// Why two tensors must agree, for the message.
enum Kind {
    /// A carried tensor (`want`) and its initial value.
    Init,
    /// A carried tensor and what the body yields for it.
    Yield,
    /// What the `then` and the `else` block yield for `result`.
    Branches { result: String },
    /// A result that already has a type (a typed result of the def, or a
    /// tensor the block defined before) and what the region gives it.
    Result { region: &'static str },
}

impl Agreement {
    fn new(want: &str, have: &str, span: Span, kind: Kind) -> Agreement {
        Agreement {
            want: want.to_string(),
            have: have.to_string(),
            span,
            kind,
            done: false,
        }
    }

    fn message(&self, want: &str, have: &str) -> String {
        let (w, h) = (&self.want, &self.have);
        match &self.kind {
            Kind::Init => format!("carried `{w}` is {want}, but its initial value `{h}` is {have}"),
            Kind::Yield => format!(
                "the body yields `{h}`, which is {have}, for carried `{w}`, which is {want}"
            ),
            Kind::Branches { result } => format!(
                "the blocks of this `if` disagree on result `{result}`: the `then` block yields `{w}`, which is {want}, the `else` block `{h}`, which is {have}"
            ),
            Kind::Result { region } => format!("`{w}` is {want}, but this {region} gives it {have}"),
        }
    }
}

impl PendingRegion<'_> {
    /// The region's IR statement, its bodies' statements built.
    pub(super) fn build(self) -> Stmt {
        let mut bodies = self.bodies.into_iter().map(build_stmts);
        let mut body = || bodies.next().unwrap_or_default();
        match self.head {
            Head::Loop {
                index,
                count,
                cond,
                carried,
                yields,
                results,
            } => Stmt::Loop(LoopStmt {
                index,
                count,
                cond,
                carried,
                body: body(),
                yields,
                results,
            }),
            Head::If {
                cond,
                then_yields,
                else_yields,
                results,
            } => Stmt::If(IfStmt {
                cond,
                then_body: body(),
                then_yields,
                else_body: body(),
                else_yields,
                results,
            }),
        }
    }
}

/// A tensor's type for messages: `float32(N, M)`, `int64()`, or its rank
/// while its shape is still unknown.
fn type_text(t: &TensorInfo) -> String {
    match &t.shape {
        Some(s) => format!("{}({})", t.dtype, join(s)),
        None => format!("{} with {}", t.dtype, count(t.rank, "dimension")),
    }
}

fn names(list: &[Ident]) -> Vec<String> {
    list.iter().map(|n| n.name.clone()).collect()
}

impl DefCx<'_> {
    /// Phase 1 on a loop: its results, count, index and carried tensors,
    /// then its body, then its yields.
    pub(super) fn type_loop<'s>(
        &mut self,
        d: &'s DefAst,
        l: &'s LoopAst,
    ) -> Option<PendingRegion<'s>> {
        let mut ok = self.region_results(&l.results);
        if l.results.len() != l.carried.len() {
            self.err(
                Diagnostic::error(
                    format!(
                        "this loop carries {}, but {} to receive its results",
                        count(l.carried.len(), "tensor"),
                        match l.results.len() {
                            1 => "there is 1 name".to_string(),
                            n => format!("there are {n} names"),
                        }
                    ),
                    l.keyword,
                )
                .with_help("a loop's results are its carried tensors' last values, one name each"),
            );
            ok = false;
        }
        // The count is computed once, before the loop: its index is not in
        // scope yet.
        let count_expr = match &l.count {
            Some(e) => {
                let x = self.scalar_expr(e, DType::I64, "the loop count");
                ok &= x.is_some();
                x
            }
            None => None,
        };
        let fresh = self.fresh_index(&l.index);
        ok &= fresh;
        let mut seen = HashSet::new();
        let mut agreements = Vec::new();
        let mut decls = Vec::new();
        for c in &l.carried {
            let fresh_name = self.fresh_carried(&c.param, &l.index, &mut seen);
            let decl = self.carried_decl(c).filter(|_| fresh_name);
            let init = self.initial_value(c);
            ok &= decl.is_some() && init;
            if decl.is_none() && !self.tensors.contains_key(&c.param.name) {
                self.poisoned.insert(c.param.name.clone());
            }
            decls.push((decl, init));
        }
        self.open_block();
        if fresh {
            self.indices.push(l.index.name.clone());
            self.scalars.insert(l.index.name.clone(), DType::I64);
        }
        for (c, (decl, init)) in l.carried.iter().zip(&decls) {
            if let Some(shape) = decl {
                self.define(&c.param, c.ty.dtype, shape.len(), Some(shape.clone()));
                if *init {
                    let a = Agreement::new(&c.param.name, &c.init.name, c.init.span, Kind::Init);
                    self.add_agreement(&mut agreements, a);
                }
            }
        }
        // The condition is checked before every iteration, on the carried
        // tensors' current values and the index.
        let cond = match &l.cond {
            Some(e) => {
                let x = self.scalar_expr(e, DType::Bool, "the loop's condition");
                ok &= x.is_some();
                x
            }
            None => None,
        };
        let body = self.type_block(d, &l.body.stmts);
        let carries = format!("the loop carries {}", count(l.carried.len(), "tensor"));
        let yields_ok = self.check_yields(&l.body, l.carried.len(), &carries);
        if yields_ok {
            for ((c, (decl, _)), y) in l.carried.iter().zip(&decls).zip(&l.body.yields) {
                if decl.is_some() {
                    let a = Agreement::new(&c.param.name, &y.name, y.span, Kind::Yield);
                    self.add_agreement(&mut agreements, a);
                }
            }
        }
        ok &= yields_ok;
        self.close_block();
        if fresh {
            self.indices.pop();
            self.scalars.remove(&l.index.name);
        }
        if !ok {
            return None;
        }
        let mut region = PendingRegion {
            head: Head::Loop {
                index: l.index.name.clone(),
                count: count_expr,
                cond,
                carried: l
                    .carried
                    .iter()
                    .map(|c| Carried {
                        param: c.param.name.clone(),
                        init: c.init.name.clone(),
                    })
                    .collect(),
                yields: names(&l.body.yields),
                results: names(&l.results),
            },
            bodies: vec![body],
            agreements,
            fills: Vec::new(),
        };
        for (r, c) in l.results.iter().zip(&l.carried) {
            self.define_result(r, &[&c.param.name], &mut region, "loop");
        }
        Some(region)
    }

    /// Phase 1 on a branch: its results and condition, then each block and
    /// its yields.
    pub(super) fn type_if<'s>(&mut self, d: &'s DefAst, b: &'s IfAst) -> Option<PendingRegion<'s>> {
        let mut ok = self.region_results(&b.results);
        let cond = self.scalar_expr(&b.cond, DType::Bool, "the condition of this `if`");
        let mut bodies = Vec::new();
        let has = format!("the `if` has {}", count(b.results.len(), "result"));
        for block in [&b.then_body, &b.else_body] {
            self.open_block();
            bodies.push(self.type_block(d, &block.stmts));
            ok &= self.check_yields(block, b.results.len(), &has);
            self.close_block();
        }
        let cond = cond.filter(|_| ok)?;
        let mut region = PendingRegion {
            head: Head::If {
                cond,
                then_yields: names(&b.then_body.yields),
                else_yields: names(&b.else_body.yields),
                results: names(&b.results),
            },
            bodies,
            agreements: Vec::new(),
            fills: Vec::new(),
        };
        let yields = b.then_body.yields.iter().zip(&b.else_body.yields);
        for (r, (then, other)) in b.results.iter().zip(yields) {
            let kind = Kind::Branches {
                result: r.name.clone(),
            };
            let a = Agreement::new(&then.name, &other.name, other.span, kind);
            self.add_agreement(&mut region.agreements, a);
            self.define_result(r, &[&then.name, &other.name], &mut region, "`if`");
        }
        Some(region)
    }

    fn shape_unknown(&self, t: &str) -> bool {
        self.tensors.get(t).is_some_and(|i| i.shape.is_none())
    }

    /// Declares region result `r` with the type of the first of `sources`
    /// (a carried tensor, or what the `then` and `else` blocks yield),
    /// unless it has a type already (a typed result of the def, or a tensor
    /// the block defined before): then the two must agree. A shape still
    /// unknown is filled in from the first source whose shape becomes known.
    fn define_result(
        &mut self,
        r: &Ident,
        sources: &[&str],
        region: &mut PendingRegion,
        what: &'static str,
    ) {
        let Some(&from) = sources.first() else {
            return;
        };
        let Some(info) = self.tensors.get(from).cloned() else {
            return;
        };
        let typed = self.typed_returns.get(&r.name).cloned();
        let declared = typed.is_some() || self.tensors.contains_key(&r.name);
        let info = typed.unwrap_or(info);
        self.define(r, info.dtype, info.rank, info.shape);
        if declared {
            let a = Agreement::new(&r.name, from, r.span, Kind::Result { region: what });
            self.add_agreement(&mut region.agreements, a);
        }
        if self.shape_unknown(&r.name) {
            region.fills.push(Fill {
                result: r.name.clone(),
                span: r.span,
                sources: sources.iter().map(|s| s.to_string()).collect(),
            });
        }
    }

    /// Checks `a` as far as the shapes known allow; keeps it if it must
    /// wait for shapes.
    fn add_agreement(&mut self, list: &mut Vec<Agreement>, mut a: Agreement) {
        self.agree(&mut a);
        if !a.done {
            list.push(a);
        }
    }

    /// Checks an agreement: element types and ranks at once, shapes when
    /// both are known. A tensor without a declaration is one whose
    /// definition failed, which has its own error.
    fn agree(&mut self, a: &mut Agreement) {
        if a.done {
            return;
        }
        let (Some(want), Some(have)) = (self.tensors.get(&a.want), self.tensors.get(&a.have))
        else {
            a.done = true;
            return;
        };
        let known = want.shape.is_some() && have.shape.is_some();
        if want.dtype != have.dtype || want.rank != have.rank || (known && want.shape != have.shape)
        {
            let msg = a.message(&type_text(want), &type_text(have));
            self.err(Diagnostic::error(msg, a.span));
            a.done = true;
        } else if known {
            a.done = true;
        }
    }

    /// Fills the result shapes that became known and settles agreements;
    /// whether a shape was filled (progress for the fixed point).
    pub(super) fn settle_region(&mut self, r: &mut PendingRegion) -> bool {
        let mut filled = false;
        let tensors = &mut self.tensors;
        r.fills.retain(|f| {
            let shape = f
                .sources
                .iter()
                .find_map(|s| tensors.get(s).and_then(|i| i.shape.clone()));
            let Some(shape) = shape else {
                return true;
            };
            if let Some(info) = tensors.get_mut(&f.result) {
                if info.shape.is_none() {
                    info.shape = Some(shape);
                    filled = true;
                }
            }
            false
        });
        let mut agreements = std::mem::take(&mut r.agreements);
        for a in &mut agreements {
            self.agree(a);
        }
        agreements.retain(|a| !a.done);
        r.agreements = agreements;
        filled
    }

    /// Reports region results whose shapes the fixed point never learned.
    /// Their yields' shapes are unknown too, which is reported first; this
    /// is a backstop, so that no result is declared without a shape.
    pub(super) fn report_unfilled(&mut self, pending: &[Pending]) {
        for p in pending {
            if let Pending::Region(r) = p {
                for b in &r.bodies {
                    self.report_unfilled(b);
                }
                for f in &r.fills {
                    self.err(
                        Diagnostic::error(
                            format!("the shape of `{}` cannot be inferred", f.result),
                            f.span,
                        )
                        .with_help("the tensors the region yields for it have no inferred shape"),
                    );
                }
            }
        }
    }

    /// [`DefCx::unreadable`] for a region's header, at the region's
    /// statement of the block being checked.
    fn unreadable_here(&self, names: &HashSet<String>) -> HashMap<String, String> {
        match self.blocks.last() {
            Some(b) => self.unreadable(b.at, &b.later, names),
            None => self.unreadable(usize::MAX, &HashMap::new(), names),
        }
    }

    /// Opens a region body.
    fn open_block(&mut self) {
        self.blocks.push(Block {
            id: self.opened,
            defined: Vec::new(),
            suffix: " of this block",
            later: HashMap::new(),
            at: 0,
        });
        self.opened += 1;
    }

    /// Closes the body [`Self::open_block`] opened: what it defined is
    /// hidden from here on.
    fn close_block(&mut self) {
        if let Some(b) = self.blocks.pop() {
            self.hidden.extend(b.defined);
        }
    }

    /// Checks a region's results: distinct tensor names the block may write.
    fn region_results(&mut self, results: &[Ident]) -> bool {
        let mut ok = true;
        let mut seen: HashMap<&str, Span> = HashMap::new();
        for r in results {
            if let Some(prev) = seen.insert(&r.name, r.span) {
                self.err(
                    Diagnostic::error(format!("`{}` receives two results", r.name), r.span)
                        .with_extra(prev, "first here"),
                );
                ok = false;
                continue;
            }
            let what = if self.indices.contains(&r.name) {
                Some("a loop index")
            } else if self.scalars.contains_key(&r.name) {
                Some("a scalar parameter")
            } else if self.sizes.contains(&r.name) {
                Some("a size symbol")
            } else {
                None
            };
            if let Some(w) = what {
                self.err(Diagnostic::error(
                    format!("`{}` is {w}, not a tensor name", r.name),
                    r.span,
                ));
                ok = false;
                continue;
            }
            ok &= self.writable(r) && self.may_write(r);
        }
        ok
    }

    /// Checks that a loop index is a name of its own: no size symbol,
    /// scalar, enclosing loop's index or tensor in scope.
    fn fresh_index(&mut self, index: &Ident) -> bool {
        let n = &index.name;
        let what = if self.indices.contains(n) {
            "the index of an enclosing loop"
        } else if self.scalars.contains_key(n) {
            "a scalar parameter"
        } else if self.sizes.contains(n) {
            "a size symbol"
        } else if self.visible(n) {
            "a tensor"
        } else {
            return true;
        };
        self.err(
            Diagnostic::error(format!("loop index `{n}` shadows {what}"), index.span)
                .with_help("give the loop index a name of its own"),
        );
        false
    }

    /// Checks that a carried tensor has a name of its own: it is its loop
    /// body's, so no other name of the def (or of this loop) may be it.
    fn fresh_carried(&mut self, p: &Ident, index: &Ident, seen: &mut HashSet<String>) -> bool {
        let n = &p.name;
        let what = if *n == index.name {
            "the loop's index"
        } else if self.indices.contains(n) {
            "a loop index"
        } else if self.scalars.contains_key(n) {
            "a scalar parameter"
        } else if self.sizes.contains(n) {
            "a size symbol"
        } else if self.returns.contains(n) {
            "a result of the def"
        } else if self.tensors.contains_key(n) || self.poisoned.contains(n) {
            "a tensor of this def"
        } else if seen.contains(n) {
            "carried by this loop"
        } else if self.all_defs.contains(n) {
            "a def"
        } else {
            seen.insert(n.clone());
            return true;
        };
        self.err(
            Diagnostic::error(
                format!("carried tensor `{n}` needs a name of its own; `{n}` is already {what}"),
                p.span,
            )
            .with_help("a loop's carried tensors belong to its body: give each a fresh name"),
        );
        false
    }

    /// A carried tensor's declared shape (its element type is the
    /// syntax's).
    fn carried_decl(&mut self, c: &CarriedAst) -> Option<Vec<SizeExpr>> {
        let Some(dims) = &c.ty.dims else {
            self.err(
                Diagnostic::error(
                    format!("carried `{}` needs a tensor type", c.param.name),
                    c.ty.span,
                )
                .with_help(format!(
                    "give its dimensions, e.g. `{}(N) {}`, or `{}() {}` for a 0-d tensor",
                    c.ty.dtype, c.param.name, c.ty.dtype, c.param.name
                )),
            );
            return None;
        };
        let mut shape = Vec::new();
        for dim in dims {
            shape.push(self.dim_size(dim));
        }
        shape.into_iter().collect()
    }

    /// One dimension of a carried tensor's type: a positive constant or a
    /// size expression over size symbols, integer scalars and enclosing
    /// loop indices.
    fn dim_size(&mut self, dim: &DimAst) -> Option<SizeExpr> {
        let named;
        let e = match dim {
            DimAst::Const(v, span) => {
                let before = self.errs.len();
                let s = self.const_dim(*v, *span);
                return (self.errs.len() == before).then_some(s);
            }
            DimAst::Sym(id) => {
                named = ExprAst {
                    kind: ExprKind::Name(id.name.clone()),
                    span: id.span,
                };
                &named
            }
            DimAst::Expr(e) => e,
        };
        let mut mentioned = HashSet::new();
        names_in(e, &mut mentioned);
        let unreadable = self.unreadable_here(&mentioned);
        match self.scope(&unreadable, false).size(e) {
            Ok(s) => Some(s),
            Err(d) => {
                self.err(d);
                None
            }
        }
    }

    /// Checks that a carried tensor's initial value is a tensor in scope.
    fn initial_value(&mut self, c: &CarriedAst) -> bool {
        let n = &c.init.name;
        if self.visible(n) {
            return true;
        }
        let why = if self.poisoned.contains(n) {
            POISONED
        } else if self.hidden.contains(n) {
            HIDDEN
        } else if self.scalars.contains_key(n) || self.sizes.contains(n) {
            "is not a tensor"
        } else {
            "is not defined before the loop"
        };
        self.err(
            Diagnostic::error(
                format!("carried `{}` starts from `{n}`, which {why}", c.param.name),
                c.init.span,
            )
            .with_help("a carried tensor starts from a tensor defined before the loop"),
        );
        false
    }

    /// Checks a block's yields, at its end: one per result, each a tensor
    /// in scope. `expected` says where the count comes from.
    fn check_yields(&mut self, block: &BlockAst, n: usize, expected: &str) -> bool {
        let mut ok = true;
        if block.yields.len() != n {
            self.err(Diagnostic::error(
                format!(
                    "this block yields {}, but {expected}",
                    count(block.yields.len(), "tensor")
                ),
                block.yield_span,
            ));
            ok = false;
        }
        for y in &block.yields {
            if self.visible(&y.name) {
                continue;
            }
            let why = if self.poisoned.contains(&y.name) {
                POISONED
            } else if self.hidden.contains(&y.name) {
                HIDDEN
            } else {
                "is not a tensor defined before the region or in this block"
            };
            self.err(
                Diagnostic::error(format!("yields `{}`, which {why}", y.name), y.span)
                    .with_label("yielded here"),
            );
            ok = false;
        }
        ok
    }

    /// A region's count (`want` `int64`) or condition (`bool`): an
    /// expression over size symbols, scalars, loop indices and literals; a
    /// condition also reads 0-d tensors.
    fn scalar_expr(&mut self, e: &ExprAst, want: DType, what: &str) -> Option<Expr> {
        if let Some(d) = self.tensor_read(e, want == DType::I64) {
            self.err(d);
            return None;
        }
        let mut mentioned = HashSet::new();
        names_in(e, &mut mentioned);
        let unreadable = self.unreadable_here(&mentioned);
        let typed = self.scope(&unreadable, false).expr(e);
        let x = match typed {
            Ok(x) => x,
            Err(d) => {
                self.err(d);
                return None;
            }
        };
        let problem = if want == DType::Bool && x.t != DType::Bool {
            Some(("bool", "compare explicitly, e.g. `t() > 0`"))
        } else if want == DType::I64 && !x.t.is_int() {
            Some(("an integer", "convert it explicitly, e.g. `int64(...)`"))
        } else {
            None
        };
        if let Some((kind, help)) = problem {
            self.err(
                Diagnostic::error(format!("{what} must be {kind}, found {}", x.t), e.span)
                    .with_help(help),
            );
            return None;
        }
        Some(coerce(x, want))
    }

    /// The first tensor read a count (`in_count`) or condition may not
    /// make: a count reads no tensor, a condition only 0-d ones.
    fn tensor_read(&self, e: &ExprAst, in_count: bool) -> Option<Diagnostic> {
        let bad = |name: &str, span: Span| -> Option<Diagnostic> {
            let rank = self.tensors.get(name).map_or(0, |t| t.rank);
            if in_count {
                Some(
                    Diagnostic::error(
                        format!("a loop count reads no tensors, but `{name}` is one"),
                        span,
                    )
                    .with_help(
                        "to stop on a tensor's value, use a condition: `for k while t() > 0 ...`",
                    ),
                )
            } else if rank > 0 {
                Some(
                    Diagnostic::error(
                        format!(
                            "a condition reads only 0-d tensors, but `{name}` has {}",
                            count(rank, "dimension")
                        ),
                        span,
                    )
                    .with_help("compute a 0-d tensor before the region (a reduction such as `m max=! A(i)`) and test it"),
                )
            } else {
                None
            }
        };
        match &e.kind {
            ExprKind::Apply(f, args) => {
                if self.visible(&f.name) {
                    if let Some(d) = bad(&f.name, e.span) {
                        return Some(d);
                    }
                }
                args.iter().find_map(|a| self.tensor_read(a, in_count))
            }
            // A bare name is a scalar or size before it is a tensor.
            ExprKind::Name(n)
                if self.visible(n) && !self.scalars.contains_key(n) && !self.sizes.contains(n) =>
            {
                bad(n, e.span)
            }
            ExprKind::Unary(_, a) => self.tensor_read(a, in_count),
            ExprKind::Binary(_, a, b) => self
                .tensor_read(a, in_count)
                .or_else(|| self.tensor_read(b, in_count)),
            ExprKind::Select(c, a, b) => self
                .tensor_read(c, in_count)
                .or_else(|| self.tensor_read(a, in_count))
                .or_else(|| self.tensor_read(b, in_count)),
            _ => None,
        }
    }
}
