//! The checker: a parsed file to a verified [`ir::Program`].
//!
//! Per def (callees before callers; recursion is an error): resolve the
//! signature, type every statement in source order (phase 1), then infer
//! ranges and shapes to a fixed point (phase 2): a statement whose left-hand
//! side shape is unknown and cannot be inferred from its own reads waits
//! until a later statement fixes that shape (`C(i) = 0` before `C(i) +=
//! A(i,k) * x(k)`). Finally, statically decidable out-of-bounds reads of `=`
//! statements and writes outside a tensor are rejected, and the result goes
//! through `ir::verify_program`; a failure there is reported as an internal
//! error rather than returned.
//!
//! Loop and branch regions ([`region`]) are checked in the same two phases:
//! their bodies are blocks of statements typed in order when the region is
//! reached, and take part in the fixed point with everything else.

mod region;

use std::collections::{HashMap, HashSet};

use crate::ast::*;
use crate::bounds;
use crate::diag::{Diagnostic, Span};
use crate::infer::{self, Access, InferError};
use crate::typing::{coerce, expr_to_size, settle, Scope, TensorInfo};
use ir::{
    CallArg, CallStmt, Comprehension, DType, Def, Expr, IterRange, Param, Program, Reduction,
    SizeExpr, Stmt, TensorDecl, TensorRole,
};

pub struct CheckOutput {
    pub program: Program,
    pub stmt_spans: HashMap<(String, usize), Span>,
    pub def_spans: HashMap<String, Span>,
    pub equivalences: Vec<Equivalence>,
}

/// A statement's `<=> f(A(..), B(..))` annotation, checked: the statement
/// claims to compute what def `callee` computes on the tensors `args`.
#[derive(Clone, Debug, PartialEq)]
pub struct Equivalence {
    pub def: String,
    /// The statement's 0-based index in its def.
    pub stmt: usize,
    pub callee: String,
    /// The tensors the annotation reads, in order.
    pub args: Vec<String>,
    /// The annotation, from `<=>` to its closing parenthesis.
    pub span: Span,
}

pub fn check_file(file: &File) -> Result<CheckOutput, Vec<Diagnostic>> {
    let file = &rank0_statements(file);
    let mut errs = Vec::new();
    let mut by_name: HashMap<&str, &DefAst> = HashMap::new();
    for d in &file.defs {
        if let Some(prev) = by_name.get(d.name.name.as_str()) {
            errs.push(
                Diagnostic::error(
                    format!("def `{}` is defined twice", d.name.name),
                    d.name.span,
                )
                .with_extra(prev.name.span, "first defined here"),
            );
        } else {
            if let Some(what) = reserved(&d.name.name) {
                // A def named like a builtin or a type would make `b =
                // exp(a)` mean two things (a call, or a rank-0 statement
                // applying the builtin), so those names stay with the
                // language. The def is still checked, so calls of it report
                // nothing more.
                errs.push(
                    Diagnostic::error(
                        format!("`{}` is {what}; a def cannot take its name", d.name.name),
                        d.name.span,
                    )
                    .with_help("rename the def"),
                );
            }
            by_name.insert(&d.name.name, d);
        }
    }
    let order = call_order(file, &by_name, &mut errs);
    let all: HashSet<String> = by_name.keys().map(|s| s.to_string()).collect();
    let mut checked: HashMap<String, Def> = HashMap::new();
    let mut stmt_spans = HashMap::new();
    let mut def_spans = HashMap::new();
    let mut equivalences = Vec::new();
    for d in order {
        def_spans.insert(d.name.name.clone(), d.name.span);
        let mut cx = DefCx::new(&checked, &all);
        match cx.def(d) {
            Some(def) if cx.errs.is_empty() => {
                for mut e in std::mem::take(&mut cx.equivalences) {
                    e.def = def.name.clone();
                    equivalences.push(e);
                }
                for (i, s) in d.stmts.iter().enumerate() {
                    stmt_spans.insert((def.name.clone(), i), s.span());
                }
                checked.insert(def.name.clone(), def);
            }
            _ => errs.extend(cx.errs),
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    let mut program = Program::default();
    let mut seen = HashSet::new();
    for d in &file.defs {
        if seen.insert(d.name.name.as_str()) {
            if let Some(def) = checked.remove(&d.name.name) {
                program.defs.push(def);
            }
        }
    }
    if let Err(problems) = ir::verify_program(&program) {
        let span = file.defs.first().map(|d| d.name.span).unwrap_or_default();
        return Err(vec![Diagnostic::error(
            format!(
                "internal error: the checker produced invalid IR: {}",
                problems.join("; ")
            ),
            span,
        )
        .with_help(
            "this is a bug in tessera; please report it with this file",
        )]);
    }
    equivalences.sort_by_key(|e| e.span.start);
    Ok(CheckOutput {
        program,
        stmt_spans,
        def_spans,
        equivalences,
    })
}

/// The file with every statement `t = f(args)` that calls no def turned
/// into the rank-0 statement `t() = f(args)`: the parser cannot tell them
/// apart, since defs may come later in the file. `f` must be a builtin, a
/// type or a tensor of the def (a parameter or written by an earlier
/// statement); any other name stays a call, reported as a call of an
/// unknown def.
fn rank0_statements(file: &File) -> File {
    let defs: HashSet<&str> = file.defs.iter().map(|d| d.name.name.as_str()).collect();
    let mut out = file.clone();
    for d in &mut out.defs {
        let mut tensors: HashSet<String> = d
            .params
            .iter()
            .filter(|p| p.ty.dims.is_some())
            .map(|p| p.name.name.clone())
            .collect();
        rank0_block(&mut d.stmts, &defs, &mut tensors);
    }
    out
}

/// [`rank0_statements`] on one block; `tensors` holds the tensors defined
/// before it, and gains what it defines. A region's body sees what its
/// carried tensors and it define, which are gone after it.
fn rank0_block(stmts: &mut [StmtAst], defs: &HashSet<&str>, tensors: &mut HashSet<String>) {
    for s in stmts {
        if let StmtAst::Call(c) = s {
            let f = &c.callee.name;
            let value = reserved(f).is_some() || tensors.contains(f);
            if c.results.len() == 1 && !defs.contains(f.as_str()) && value {
                let lhs = c.results[0].clone();
                let body = ExprAst {
                    kind: ExprKind::Apply(c.callee.clone(), c.args.clone()),
                    span: Span::new(c.callee.span.start, c.span.end),
                };
                *s = StmtAst::Comp(CompAst {
                    lhs,
                    indices: Vec::new(),
                    op: Reduction::Assign,
                    init: false,
                    op_span: c.callee.span,
                    body,
                    wheres: Vec::new(),
                    equiv: None,
                    span: c.span,
                });
            }
        }
        match s {
            StmtAst::Loop(l) => {
                let mut inner = tensors.clone();
                inner.extend(l.carried.iter().map(|c| c.param.name.clone()));
                rank0_block(&mut l.body.stmts, defs, &mut inner);
            }
            StmtAst::If(b) => {
                rank0_block(&mut b.then_body.stmts, defs, &mut tensors.clone());
                rank0_block(&mut b.else_body.stmts, defs, &mut tensors.clone());
            }
            StmtAst::Comp(_) | StmtAst::Call(_) => {}
        }
        tensors.extend(s.written().into_iter().map(|n| n.name.clone()));
    }
}

/// What a name the language reserves for itself is, if it is one.
fn reserved(name: &str) -> Option<&'static str> {
    if ir::Builtin::from_name(name).is_some() {
        Some("a builtin function")
    } else if DType::from_name(name).is_some() {
        Some("a type name")
    } else if name == "for" || name == "if" {
        // `x = for ...` and `x = if ...` start regions, so a def of either
        // name could never be called.
        Some("a keyword")
    } else {
        None
    }
}

/// Every call statement of a block and of the regions inside it.
fn calls_in<'a>(stmts: &'a [StmtAst], out: &mut Vec<&'a CallAst>) {
    for s in stmts {
        match s {
            StmtAst::Call(c) => out.push(c),
            StmtAst::Loop(l) => calls_in(&l.body.stmts, out),
            StmtAst::If(b) => {
                calls_in(&b.then_body.stmts, out);
                calls_in(&b.else_body.stmts, out);
            }
            StmtAst::Comp(_) => {}
        }
    }
}

/// Defs in an order where every callee comes before its callers.
fn call_order<'a>(
    file: &'a File,
    by_name: &HashMap<&str, &'a DefAst>,
    errs: &mut Vec<Diagnostic>,
) -> Vec<&'a DefAst> {
    /// What the walk knows of a def: being visited (its callees are), or
    /// done at its call level (`ir::MAX_CALL_DEPTH`).
    enum State {
        Visiting,
        Done(usize),
    }
    fn too_deep(d: &DefAst, c: &CallAst) -> Diagnostic {
        Diagnostic::error(
            format!(
                "calls nest more than {} deep, here where `{}` calls `{}`",
                ir::MAX_CALL_DEPTH,
                d.name.name,
                c.callee.name
            ),
            c.callee.span,
        )
        .with_help("inline some of the defs in the chain into their callers")
    }
    /// Visits `d` and its callees, `depth` calls below where the walk
    /// started; a walk deeper than the limit stops (so the walk itself
    /// cannot overflow the stack) and reports it once (`reported`).
    fn visit<'a>(
        d: &'a DefAst,
        depth: usize,
        by_name: &HashMap<&str, &'a DefAst>,
        state: &mut HashMap<String, State>,
        out: &mut Vec<&'a DefAst>,
        errs: &mut Vec<Diagnostic>,
        reported: &mut bool,
    ) {
        state.insert(d.name.name.clone(), State::Visiting);
        // The deepest callee, at its call.
        let mut deepest: Option<(usize, &CallAst)> = None;
        let mut calls = Vec::new();
        calls_in(&d.stmts, &mut calls);
        for c in calls {
            if let Some(callee) = by_name.get(c.callee.name.as_str()) {
                if !state.contains_key(&callee.name.name) {
                    if depth >= ir::MAX_CALL_DEPTH {
                        if !std::mem::replace(reported, true) {
                            errs.push(too_deep(d, c));
                        }
                        continue;
                    }
                    visit(callee, depth + 1, by_name, state, out, errs, reported);
                }
                match state.get(&callee.name.name) {
                    Some(State::Visiting) => errs.push(
                        Diagnostic::error(
                            format!(
                                "recursive call: `{}` calls `{}`, which is still being defined",
                                d.name.name, c.callee.name
                            ),
                            c.callee.span,
                        )
                        .with_help("defs cannot call themselves, directly or through other defs"),
                    ),
                    Some(State::Done(level)) if deepest.is_none_or(|(l, _)| *level > l) => {
                        deepest = Some((*level, c));
                    }
                    _ => {}
                }
            }
        }
        let level = deepest.map_or(0, |(l, _)| l + 1);
        // Only the first def past the limit reports it: its callers are
        // past it because of it.
        if let Some((_, c)) = deepest.filter(|_| level > ir::MAX_CALL_DEPTH) {
            if !std::mem::replace(reported, true) {
                errs.push(too_deep(d, c));
            }
        }
        state.insert(d.name.name.clone(), State::Done(level));
        out.push(d);
    }
    let mut state = HashMap::new();
    let mut out = Vec::new();
    let mut reported = false;
    for d in &file.defs {
        if by_name
            .get(d.name.name.as_str())
            .is_some_and(|x| std::ptr::eq(*x, d))
            && !state.contains_key(&d.name.name)
        {
            visit(d, 0, by_name, &mut state, &mut out, errs, &mut reported);
        }
    }
    out
}

/// The note of a tensor whose definition failed; errors that carry it are
/// consequences of an error already reported, and are dropped.
const POISONED: &str = "is defined by a statement that has errors";

/// The note of a tensor read outside the region body that defines it.
const HIDDEN: &str = "is defined inside the body of a region and is not visible outside it";

/// A statement after phase 1.
enum Pending<'s> {
    Comp(PendingComp<'s>),
    Call(PendingCall),
    Region(region::PendingRegion<'s>),
}

struct PendingComp<'s> {
    ast: &'s CompAst,
    tensor: String,
    indices: Vec<String>,
    op: Reduction,
    init: bool,
    body: Expr,
    lets: Vec<(String, Expr)>,
    exists: Vec<Expr>,
    iters: Vec<String>,
    fixed: HashMap<String, (SizeExpr, SizeExpr)>,
    ranges: Option<Vec<IterRange>>,
}

struct PendingCall {
    callee: String,
    args: Vec<CallArg>,
    results: Vec<String>,
    done: bool,
    span: Span,
}

/// A block being checked: the def's own statements, or a region's body.
struct Block {
    /// Blocks are numbered in order of appearance, the def's own 0.
    id: usize,
    /// The tensors the block has defined so far.
    defined: Vec<String>,
    /// How messages refer to a statement of the block: `statement 2` at
    /// the top, `statement 2 of this block` in a region.
    suffix: &'static str,
    /// The index of the statement of the block that first writes each
    /// tensor, and of the statement being checked: a region's body reads
    /// what its enclosing blocks define later with these.
    later: HashMap<String, usize>,
    at: usize,
}

struct DefCx<'a> {
    callees: &'a HashMap<String, Def>,
    all_defs: &'a HashSet<String>,
    scalars: HashMap<String, DType>,
    sizes: HashSet<String>,
    tensors: HashMap<String, TensorInfo>,
    /// Tensors in order of first appearance, with their role.
    order: Vec<(String, TensorRole)>,
    returns: Vec<String>,
    typed_returns: HashMap<String, TensorInfo>,
    /// Tensors whose defining statement failed to check.
    poisoned: HashSet<String>,
    /// The statements' `<=>` annotations.
    equivalences: Vec<Equivalence>,
    /// The open blocks, innermost last.
    blocks: Vec<Block>,
    /// How many blocks have been opened.
    opened: usize,
    /// The block that writes each tensor, and its first definition. The IR
    /// has every tensor written in one block only.
    owner: HashMap<String, (usize, Span)>,
    /// Tensors defined in region bodies that have closed: `tensors` keeps
    /// them (the fixed point may still need their shapes) but they cannot
    /// be read or written any more.
    hidden: HashSet<String>,
    /// The indices of the loops around the block being checked, innermost
    /// last; each is also in `scalars`, as an `int64`, while its body is.
    indices: Vec<String>,
    errs: Vec<Diagnostic>,
}

impl<'a> DefCx<'a> {
    fn new(callees: &'a HashMap<String, Def>, all_defs: &'a HashSet<String>) -> Self {
        DefCx {
            callees,
            all_defs,
            scalars: HashMap::new(),
            sizes: HashSet::new(),
            tensors: HashMap::new(),
            order: Vec::new(),
            returns: Vec::new(),
            typed_returns: HashMap::new(),
            poisoned: HashSet::new(),
            equivalences: Vec::new(),
            blocks: vec![Block {
                id: 0,
                defined: Vec::new(),
                suffix: "",
                later: HashMap::new(),
                at: 0,
            }],
            opened: 1,
            owner: HashMap::new(),
            hidden: HashSet::new(),
            indices: Vec::new(),
            errs: Vec::new(),
        }
    }

    /// A constant dimension; it must be positive.
    fn const_dim(&mut self, v: i64, span: Span) -> SizeExpr {
        if v < 1 {
            self.err(Diagnostic::error(
                format!("dimension {v} is not positive"),
                span,
            ));
        }
        SizeExpr::constant(v)
    }

    fn err(&mut self, d: Diagnostic) {
        if !d.message.ends_with(POISONED) {
            self.errs.push(d);
        }
    }

    fn def(&mut self, d: &DefAst) -> Option<Def> {
        self.signature(d);
        if !self.errs.is_empty() {
            return None;
        }
        let mut pending = self.type_block(d, &d.stmts);
        if !self.errs.is_empty() {
            return None;
        }
        self.infer_all(d, &mut pending);
        if !self.errs.is_empty() {
            return None;
        }
        for r in &d.returns {
            if !self
                .order
                .iter()
                .any(|(n, role)| n == &r.name.name && *role != TensorRole::Input)
            {
                let role_inout = self
                    .order
                    .iter()
                    .any(|(n, role)| n == &r.name.name && *role == TensorRole::InOut);
                if !role_inout {
                    self.err(
                        Diagnostic::error(
                            format!("result `{}` is never defined", r.name.name),
                            r.name.span,
                        )
                        .with_help(format!(
                            "add a statement such as `{}(i) = ...`",
                            r.name.name
                        )),
                    );
                }
            }
        }
        if !self.errs.is_empty() {
            return None;
        }
        let def = self.build(d, pending);
        self.errs
            .extend(bounds_diagnostics(d, &def, &HashMap::new()));
        Some(def)
    }

    /// Phase 1 on the statements of one block, in order.
    fn type_block<'s>(&mut self, d: &'s DefAst, stmts: &'s [StmtAst]) -> Vec<Pending<'s>> {
        let mut pending = Vec::new();
        let defined_later = first_definitions(stmts);
        if let Some(b) = self.blocks.last_mut() {
            b.later = defined_later.clone();
        }
        for (i, s) in stmts.iter().enumerate() {
            if let Some(b) = self.blocks.last_mut() {
                b.at = i;
            }
            let p = match s {
                StmtAst::Comp(c) => self
                    .type_comp(stmts, i, c, &defined_later)
                    .map(Pending::Comp),
                StmtAst::Call(c) => self.type_call(c).map(Pending::Call),
                StmtAst::Loop(l) => self.type_loop(d, l).map(Pending::Region),
                StmtAst::If(b) => self.type_if(d, b).map(Pending::Region),
            };
            match p {
                Some(p) => {
                    pending.push(p);
                    // Shapes known so far serve later statements (`T.d` of
                    // a temporary in a `where` bound).
                    if self.errs.is_empty() {
                        self.progress(d, &mut pending);
                    }
                }
                None => {
                    // Keep checking the other statements so one run reports
                    // every independent error; what this statement would have
                    // defined is poisoned, so reading it reports nothing more.
                    // (A name this block could not define because another
                    // block did is poisoned too: its uses here are
                    // consequences of that error.)
                    for n in s.written() {
                        if !self.visible(&n.name) {
                            self.poisoned.insert(n.name.clone());
                        }
                    }
                }
            }
        }
        pending
    }

    /// Whether tensor `name` can be read here: defined, and not inside a
    /// region body that has closed.
    fn visible(&self, name: &str) -> bool {
        self.tensors.contains_key(name) && !self.hidden.contains(name)
    }

    /// The number of the block being checked.
    fn block(&self) -> usize {
        self.blocks.last().map_or(0, |b| b.id)
    }

    /// Whether the block being checked may write tensor `name`, reporting
    /// why not: every tensor is written in the one block that defines it, so
    /// a region's body writes only its own tensors, the def's results are
    /// defined outside regions, and no name is defined in two blocks.
    fn may_write(&mut self, name: &Ident) -> bool {
        let here = self.block();
        let n = &name.name;
        if self.hidden.contains(n) {
            let mut diag = Diagnostic::error(
                format!("`{n}` is already defined in another block; tensor names are unique within a def"),
                name.span,
            )
            .with_help("rename one of them");
            if let Some((_, first)) = self.owner.get(n) {
                diag = diag.with_extra(*first, "first defined here, inside a region");
            }
            self.err(diag);
            return false;
        }
        match self.owner.get(n) {
            Some(&(b, first)) if b != here => {
                self.err(
                    Diagnostic::error(
                        format!("`{n}` is defined outside this region; a region's body writes only tensors it defines"),
                        name.span,
                    )
                    .with_extra(first, "defined here")
                    .with_help("write a new tensor and `yield` it; a loop updates a tensor by carrying it (`carry (...)`)"),
                );
                false
            }
            None if here != 0 && self.returns.contains(n) => {
                self.err(
                    Diagnostic::error(
                        format!("`{n}` is a result of the def, which a region's body cannot define"),
                        name.span,
                    )
                    .with_help(format!(
                        "define `{n}` outside the region, e.g. as the region's result: `{n} = for ...` or `{n} = if ...`"
                    )),
                );
                false
            }
            _ => true,
        }
    }

    fn signature(&mut self, d: &DefAst) {
        let mut seen: HashMap<&str, Span> = HashMap::new();
        for p in &d.params {
            if let Some(prev) = seen.insert(&p.name.name, p.name.span) {
                self.err(
                    Diagnostic::error(
                        format!("parameter `{}` is declared twice", p.name.name),
                        p.name.span,
                    )
                    .with_extra(prev, "first declared here"),
                );
            }
        }
        for p in &d.params {
            if p.ty.dims.is_none() {
                self.scalars.insert(p.name.name.clone(), p.ty.dtype);
            }
        }
        for p in &d.params {
            let Some(dims) = &p.ty.dims else { continue };
            let mut shape = Vec::new();
            for dim in dims {
                match dim {
                    DimAst::Const(v, span) => shape.push(self.const_dim(*v, *span)),
                    DimAst::Expr(e) => {
                        self.err(
                            Diagnostic::error(
                                "parameter dimensions must be size symbols or integers",
                                e.span,
                            )
                            .with_help("computed sizes are allowed in result types only"),
                        );
                    }
                    DimAst::Sym(id) => {
                        if let Some(t) = self.scalars.get(&id.name) {
                            if !t.is_int() {
                                self.err(Diagnostic::error(
                                    format!(
                                        "`{}` is a {t} scalar and cannot be a dimension",
                                        id.name
                                    ),
                                    id.span,
                                ));
                            }
                        } else {
                            // A name may be both a size symbol and a tensor
                            // (the paper's sconv2d has a size `W` and a
                            // weight `W`): bare it is the size, applied it is
                            // the tensor.
                            self.sizes.insert(id.name.clone());
                        }
                        shape.push(SizeExpr::sym(&id.name));
                    }
                }
            }
            self.tensors.insert(
                p.name.name.clone(),
                TensorInfo {
                    dtype: p.ty.dtype,
                    rank: shape.len(),
                    shape: Some(shape),
                },
            );
            self.owner.insert(p.name.name.clone(), (0, p.name.span));
        }
        let mut rseen: HashMap<&str, Span> = HashMap::new();
        for r in &d.returns {
            if let Some(prev) = rseen.insert(&r.name.name, r.name.span) {
                self.err(
                    Diagnostic::error(
                        format!("result `{}` is listed twice", r.name.name),
                        r.name.span,
                    )
                    .with_extra(prev, "first listed here"),
                );
                continue;
            }
            if self.scalars.contains_key(&r.name.name) {
                self.err(Diagnostic::error(
                    format!("`{}` is a scalar; only tensors can be results", r.name.name),
                    r.name.span,
                ));
                continue;
            }
            if self.sizes.contains(&r.name.name) {
                self.err(Diagnostic::error(
                    format!("`{}` is a size symbol, not a tensor", r.name.name),
                    r.name.span,
                ));
                continue;
            }
            self.returns.push(r.name.name.clone());
            if self.tensors.contains_key(&r.name.name) {
                if let Some(ty) = &r.ty {
                    self.err(
                        Diagnostic::error(format!("`{}` is a parameter; return it by name alone", r.name.name), ty.span)
                            .with_help("a parameter that is also a result is updated in place, with its declared type"),
                    );
                }
                continue;
            }
            if let Some(ty) = &r.ty {
                let Some(dims) = &ty.dims else {
                    self.err(Diagnostic::error(
                        "results are tensors: give dimensions, e.g. `float(N) C`",
                        ty.span,
                    ));
                    continue;
                };
                let mut shape = Vec::new();
                for dim in dims {
                    match dim {
                        DimAst::Const(v, span) => shape.push(self.const_dim(*v, *span)),
                        DimAst::Expr(e) => {
                            let empty = HashMap::new();
                            match self.scope(&empty, false).size(e) {
                                Ok(s) => shape.push(s),
                                Err(d) => self.err(d),
                            }
                        }
                        DimAst::Sym(id) => {
                            if !self.sizes.contains(&id.name)
                                && !self.scalars.get(&id.name).is_some_and(|t| t.is_int())
                            {
                                self.err(
                                    Diagnostic::error(
                                        format!("size symbol `{}` of result `{}` is not bound by any parameter", id.name, r.name.name),
                                        id.span,
                                    )
                                    .with_help("result sizes must be sizes of the inputs or integer scalars"),
                                );
                            }
                            shape.push(SizeExpr::sym(&id.name));
                        }
                    }
                }
                self.typed_returns.insert(
                    r.name.name.clone(),
                    TensorInfo {
                        dtype: ty.dtype,
                        rank: shape.len(),
                        shape: Some(shape),
                    },
                );
            }
        }
        for p in &d.params {
            if p.ty.dims.is_some() {
                let role = if self.returns.contains(&p.name.name) {
                    TensorRole::InOut
                } else {
                    TensorRole::Input
                };
                self.order.push((p.name.name.clone(), role));
            }
        }
    }

    fn scope<'s>(
        &'s self,
        unreadable: &'s HashMap<String, String>,
        allow_iters: bool,
    ) -> Scope<'s> {
        Scope {
            scalars: &self.scalars,
            sizes: &self.sizes,
            tensors: &self.tensors,
            unreadable,
            defs: self.all_defs,
            lets: HashMap::new(),
            allow_iters,
            iters: Vec::new(),
        }
    }

    /// Why each not-yet-defined tensor among `names` (the names a statement
    /// mentions) cannot be read at statement `i`. Restricting to `names` keeps
    /// checking linear in the number of statements.
    fn unreadable(
        &self,
        i: usize,
        defined_later: &HashMap<String, usize>,
        names: &HashSet<String>,
    ) -> HashMap<String, String> {
        let mut out: HashMap<String, String> = names
            .iter()
            .filter(|n| self.hidden.contains(*n))
            .map(|n| (n.clone(), HIDDEN.to_string()))
            .collect();
        for n in self.poisoned.iter().filter(|n| names.contains(*n)) {
            out.insert(n.clone(), POISONED.to_string());
        }
        let suffix = self.blocks.last().map_or("", |b| b.suffix);
        for name in names {
            let Some(at) = defined_later.get(name) else {
                continue;
            };
            if self.tensors.contains_key(name) || self.poisoned.contains(name) {
                continue;
            }
            let why = if *at == i {
                "is read in its own first definition, before it has any value".to_string()
            } else if self.returns.contains(name) {
                format!(
                    "is a result that is read before any statement defines it (statement {}{suffix} does)",
                    at + 1
                )
            } else {
                format!(
                    "is read before it is defined (statement {}{suffix} defines it)",
                    at + 1
                )
            };
            out.insert(name.clone(), why);
        }
        let enclosing = &self.blocks[..self.blocks.len().saturating_sub(1)];
        for name in names {
            if out.contains_key(name) || self.tensors.contains_key(name) {
                continue;
            }
            let later = enclosing
                .iter()
                .rev()
                .find_map(|b| b.later.get(name).map(|at| (b, *at)));
            let why = match later {
                Some((b, at)) if at == b.at => {
                    "is a result of the region that reads it, which defines it only when the region ends".to_string()
                }
                Some((b, at)) if at > b.at => format!(
                    "is read before it is defined (statement {}{} defines it)",
                    at + 1,
                    if b.id == 0 { "" } else { " of an enclosing block" }
                ),
                _ => continue,
            };
            out.insert(name.clone(), why);
        }
        for r in self.returns.iter().filter(|r| names.contains(*r)) {
            if !self.tensors.contains_key(r) && !out.contains_key(r) {
                out.insert(
                    r.clone(),
                    "is a result that no statement defines".to_string(),
                );
            }
        }
        out
    }

    fn check_lhs_names(&mut self, c: &CompAst) -> bool {
        let mut ok = true;
        let what = |n: &str| -> Option<&'static str> {
            if self.indices.iter().any(|x| x == n) {
                Some("a loop index")
            } else if self.scalars.contains_key(n) {
                Some("a scalar parameter")
            } else if self.sizes.contains(n) {
                Some("a size symbol")
            } else {
                None
            }
        };
        let lhs_what = what(&c.lhs.name).or(self.all_defs.contains(&c.lhs.name).then_some("a def"));
        if let (false, Some(w)) = (self.tensors.contains_key(&c.lhs.name), lhs_what) {
            self.errs.push(Diagnostic::error(
                format!("`{}` is {w}, not a tensor", c.lhs.name),
                c.lhs.span,
            ));
            ok = false;
        }
        let mut seen: HashMap<&str, Span> = HashMap::new();
        for ix in &c.indices {
            if let Some(w) = what(&ix.name) {
                self.errs.push(
                    Diagnostic::error(
                        format!("`{}` is {w}; the left side takes iterator names", ix.name),
                        ix.span,
                    )
                    .with_help(
                        "write the left side with fresh iterators and constrain them with `where`",
                    ),
                );
                ok = false;
            } else if self.tensors.contains_key(&ix.name) {
                self.errs.push(Diagnostic::error(
                    format!(
                        "`{}` is a tensor; the left side takes iterator names",
                        ix.name
                    ),
                    ix.span,
                ));
                ok = false;
            }
            if let Some(prev) = seen.insert(&ix.name, ix.span) {
                self.errs.push(
                    Diagnostic::error(
                        format!("iterator `{}` appears twice on the left side", ix.name),
                        ix.span,
                    )
                    .with_extra(prev, "first here")
                    .with_help(
                        "a diagonal is written with two iterators and a `?:` or a second tensor",
                    ),
                );
                ok = false;
            }
        }
        ok
    }

    /// Whether `name` may be written: every tensor but an input parameter
    /// that is not also a result. Inputs are immutable, as in TC, so a
    /// caller's tensor never changes and a def's inputs can be shared
    /// between the steps that read them.
    fn writable(&mut self, name: &Ident) -> bool {
        let input = self
            .order
            .iter()
            .any(|(n, role)| *n == name.name && *role == TensorRole::Input);
        if input {
            self.err(
                Diagnostic::error(
                    format!(
                        "`{}` is an input of the def; inputs are immutable",
                        name.name
                    ),
                    name.span,
                )
                .with_help(format!(
                    "write a new tensor, or list `{}` among the results to update a copy of it",
                    name.name
                )),
            );
        }
        !input
    }

    fn type_comp<'s>(
        &mut self,
        d_stmts: &[StmtAst],
        i: usize,
        c: &'s CompAst,
        defined_later: &HashMap<String, usize>,
    ) -> Option<PendingComp<'s>> {
        if !self.check_lhs_names(c) || !self.writable(&c.lhs) || !self.may_write(&c.lhs) {
            return None;
        }
        let existing = self.tensors.get(&c.lhs.name).cloned();
        let declared = existing
            .clone()
            .or_else(|| self.typed_returns.get(&c.lhs.name).cloned());
        if let Some(info) = &declared {
            if info.rank != c.indices.len() {
                self.err(Diagnostic::error(
                    format!(
                        "`{}` has {} but is written with {}",
                        c.lhs.name,
                        count(info.rank, "dimension"),
                        count(c.indices.len(), "index")
                    ),
                    c.lhs.span,
                ));
                return None;
            }
        }
        if existing.is_none() && c.op != Reduction::Assign && !c.init {
            self.err(
                Diagnostic::error(
                    format!(
                        "`{}` accumulates onto `{}`, which no earlier statement defines",
                        c.op.symbol(),
                        c.lhs.name
                    ),
                    c.op_span,
                )
                .with_help(format!(
                    "use `{}!` to start from the identity, or define `{}` first",
                    c.op.symbol(),
                    c.lhs.name
                )),
            );
            return None;
        }
        let unreadable = self.unreadable(i, defined_later, &mentioned(c));
        let mut scope = self.scope(&unreadable, true);
        for ix in &c.indices {
            scope.iters.push(ix.name.clone());
        }
        // Ranges, lets and exists clauses.
        let mut fixed = HashMap::new();
        let mut fixed_spans = Vec::new();
        let mut lets = Vec::new();
        let mut exists = Vec::new();
        let mut errs = Vec::new();
        for w in &c.wheres {
            match w {
                WhereAst::Range { iter, lo, hi } => {
                    if scope.lets.contains_key(&iter.name) {
                        errs.push(Diagnostic::error(
                            format!(
                                "`{}` is a let of this statement, not an iterator",
                                iter.name
                            ),
                            iter.span,
                        ));
                        continue;
                    }
                    if scope.scalars.contains_key(&iter.name) || scope.sizes.contains(&iter.name) {
                        errs.push(Diagnostic::error(
                            format!("`{}` is not an iterator", iter.name),
                            iter.span,
                        ));
                        continue;
                    }
                    match (scope.size(lo), scope.size(hi)) {
                        (Ok(l), Ok(h)) => {
                            if fixed.insert(iter.name.clone(), (l, h)).is_some() {
                                errs.push(Diagnostic::error(
                                    format!("iterator `{}` has two ranges", iter.name),
                                    iter.span,
                                ));
                            }
                            fixed_spans.push(iter.clone());
                        }
                        (Err(e), _) | (_, Err(e)) => errs.push(e),
                    }
                }
                WhereAst::Let { name, value } => {
                    let taken = scope.scalars.contains_key(&name.name)
                        || scope.sizes.contains(&name.name)
                        || scope.tensors.contains_key(&name.name)
                        || scope.lets.contains_key(&name.name)
                        || c.indices.iter().any(|x| x.name == name.name);
                    if taken {
                        errs.push(
                            Diagnostic::error(
                                format!("`{}` is already a name in this statement", name.name),
                                name.span,
                            )
                            .with_help("give the let a fresh name"),
                        );
                        continue;
                    }
                    match scope.expr(value) {
                        Ok(x) => {
                            let (e, t) = settle(x);
                            scope.lets.insert(name.name.clone(), t);
                            lets.push((name.name.clone(), e));
                        }
                        Err(e) => errs.push(e),
                    }
                }
                WhereAst::Exists(e) => match scope.expr(e) {
                    Ok(x) => exists.push(settle(x).0),
                    Err(e) => errs.push(e),
                },
            }
        }
        let body = match scope.expr(&c.body) {
            Ok(b) => b,
            Err(e) => {
                errs.push(e);
                self.errs
                    .extend(errs.into_iter().filter(|d| !d.message.ends_with(POISONED)));
                return None;
            }
        };
        drop(scope);
        if !errs.is_empty() {
            self.errs
                .extend(errs.into_iter().filter(|d| !d.message.ends_with(POISONED)));
            return None;
        }
        let (body, dtype) = match &declared {
            Some(info) => (coerce(body, info.dtype), info.dtype),
            None if body.weak => {
                match self.next_writer_type(d_stmts, i, &c.lhs.name, &unreadable) {
                    Some(t) => (coerce(body, t), t),
                    None => settle(body),
                }
            }
            None => settle(body),
        };
        if dtype == DType::Bool && c.op != Reduction::Assign {
            self.err(
                Diagnostic::error("reductions are not defined on bool tensors", c.op_span)
                    .with_help(format!(
                        "to count, declare a numeric result (e.g. `int32(N) {}`), which converts true to 1; for any/all use `max=!`/`min=!` on such a result",
                        c.lhs.name
                    )),
            );
            return None;
        }
        // Iterators in canonical order: left side, then body, lets, exists.
        let mut iters: Vec<String> = c.indices.iter().map(|x| x.name.clone()).collect();
        let note = |e: &Expr, iters: &mut Vec<String>| {
            e.walk(&mut |x| {
                if let Expr::Iter(n) = x {
                    if !iters.contains(n) {
                        iters.push(n.clone());
                    }
                }
            })
        };
        note(&body, &mut iters);
        lets.iter().for_each(|(_, e)| note(e, &mut iters));
        let before_exists = iters.len();
        exists.iter().for_each(|e| note(e, &mut iters));
        if iters.len() > before_exists {
            let n = iters[before_exists].clone();
            self.err(
                Diagnostic::error(format!("iterator `{n}` appears only in an `exists` clause"), c.span)
                    .with_help("`exists` clauses guide range inference for iterators of the statement; they cannot add iterators"),
            );
            return None;
        }
        for id in &fixed_spans {
            if !iters.contains(&id.name) {
                self.err(Diagnostic::error(
                    format!("iterator `{}` has a range but is not used", id.name),
                    id.span,
                ));
                return None;
            }
        }
        if c.op == Reduction::Assign {
            if let Some(r) = iters
                .iter()
                .find(|x| !c.indices.iter().any(|i| &i.name == *x))
            {
                self.err(
                    Diagnostic::error(
                        format!("iterator `{r}` appears only on the right side of `=`"),
                        name_span(c, r),
                    )
                    .with_label("a reduction iterator")
                    .with_help(
                        "use a reduction such as `+=!` to sum over it, or put it on the left side",
                    ),
                );
                return None;
            }
        }
        if let Some(eq) = &c.equiv {
            if self.block() != 0 {
                // An annotation names its statement by its index in the
                // def, which a statement inside a region does not have.
                self.err(
                    Diagnostic::error(
                        "`<=>` annotations are not supported inside regions",
                        eq.span,
                    )
                    .with_help("annotate a statement of the def itself"),
                );
                return None;
            }
            let args = self.equivalence_args(eq)?;
            self.equivalences.push(Equivalence {
                def: String::new(),
                stmt: i,
                callee: eq.callee.name.clone(),
                args,
                span: eq.span,
            });
        }
        let shape = declared.and_then(|d| d.shape);
        self.define(&c.lhs, dtype, c.indices.len(), shape);
        Some(PendingComp {
            ast: c,
            tensor: c.lhs.name.clone(),
            indices: c.indices.iter().map(|x| x.name.clone()).collect(),
            op: c.op,
            init: c.init,
            body,
            lets,
            exists,
            iters,
            fixed,
            ranges: None,
        })
    }

    /// The tensors a `<=>` annotation passes: each argument is a tensor
    /// defined before the statement, bare or read with one subscript per
    /// dimension (the subscripts say how the statement reads it; only the
    /// tensor is passed).
    fn equivalence_args(&mut self, eq: &EquivAst) -> Option<Vec<String>> {
        let mut out = Vec::new();
        for a in &eq.args {
            let (t, rank) = match &a.kind {
                ExprKind::Name(t) => (t, None),
                ExprKind::Apply(t, subs) => (&t.name, Some(subs.len())),
                _ => {
                    self.err(
                        Diagnostic::error("the arguments of `<=>` are tensors", a.span)
                            .with_help("pass a tensor, or a read of one such as `A(i,k)`"),
                    );
                    return None;
                }
            };
            let Some(info) = self.tensors.get(t).filter(|_| self.visible(t)) else {
                self.err(Diagnostic::error(
                    format!("`{t}` is not a tensor defined before this statement"),
                    a.span,
                ));
                return None;
            };
            if rank.is_some_and(|r| r != info.rank) {
                self.err(Diagnostic::error(
                    format!(
                        "`{t}` has {} but is read with {}",
                        count(info.rank, "dimension"),
                        count(rank.unwrap_or(0), "subscript")
                    ),
                    a.span,
                ));
                return None;
            }
            out.push(t.clone());
        }
        Some(out)
    }

    /// The type a tensor whose first definition has only literals on its
    /// right (`C(i) = 0`) takes from the next statement that writes it, when
    /// that statement's right side has a type of its own (`C(i) += A(i,k) *
    /// x(k)` makes `C` float). Problems in that statement are reported when
    /// it is checked itself, not here.
    fn next_writer_type(
        &self,
        stmts: &[StmtAst],
        i: usize,
        name: &str,
        unreadable: &HashMap<String, String>,
    ) -> Option<DType> {
        let next = stmts[i + 1..].iter().find_map(|s| match s {
            StmtAst::Comp(c) if c.lhs.name == name => Some(c),
            _ => None,
        })?;
        let mut scope = self.scope(unreadable, true);
        for w in &next.wheres {
            if let WhereAst::Let { name, value } = w {
                let t = settle(scope.expr(value).ok()?).1;
                scope.lets.insert(name.name.clone(), t);
            }
        }
        let body = scope.expr(&next.body).ok()?;
        (!body.weak).then_some(body.t)
    }

    /// Makes `name` readable from now on, in the block being checked
    /// (first definition only).
    fn define(&mut self, name: &Ident, dtype: DType, rank: usize, shape: Option<Vec<SizeExpr>>) {
        let n = &name.name;
        if self.tensors.contains_key(n) {
            return;
        }
        self.tensors
            .insert(n.clone(), TensorInfo { dtype, rank, shape });
        let role = if self.returns.contains(n) {
            TensorRole::Output
        } else {
            TensorRole::Temp
        };
        self.order.push((n.clone(), role));
        self.owner.insert(n.clone(), (self.block(), name.span));
        if let Some(b) = self.blocks.last_mut() {
            b.defined.push(n.clone());
        }
    }

    fn type_call(&mut self, c: &CallAst) -> Option<PendingCall> {
        let Some(callee) = self.callees.get(&c.callee.name) else {
            // A def that exists but failed to check has its own errors.
            if !self.all_defs.contains(&c.callee.name) {
                self.err(
                    Diagnostic::error(
                        format!("call of unknown def `{}`", c.callee.name),
                        c.callee.span,
                    )
                    .with_label("no def of this name in the file"),
                );
            }
            return None;
        };
        if callee.params.len() != c.args.len() {
            self.err(Diagnostic::error(
                format!(
                    "`{}` takes {}, but {} given",
                    callee.name,
                    count(callee.params.len(), "argument"),
                    count_is(c.args.len())
                ),
                c.span,
            ));
            return None;
        }
        if callee.outputs.len() != c.results.len() {
            self.err(Diagnostic::error(
                format!(
                    "`{}` returns {}, but {} to receive them",
                    callee.name,
                    count(callee.outputs.len(), "tensor"),
                    match c.results.len() {
                        1 => "there is 1 name".to_string(),
                        n => format!("there are {n} names"),
                    }
                ),
                c.span,
            ));
            return None;
        }
        let mut names = HashSet::new();
        c.args.iter().for_each(|a| names_in(a, &mut names));
        let unreadable = self.unreadable(usize::MAX, &HashMap::new(), &names);
        let mut args = Vec::new();
        let mut errs = Vec::new();
        for (p, a) in callee.params.iter().zip(&c.args) {
            match p {
                Param::Tensor(pname) => match &a.kind {
                    ExprKind::Name(n) if self.visible(n) => args.push(CallArg::Tensor(n.clone())),
                    ExprKind::Name(n) if unreadable.contains_key(n) => errs.push(
                        Diagnostic::error(format!("`{n}` {}", unreadable[n]), a.span),
                    ),
                    _ => errs.push(Diagnostic::error(
                        format!(
                            "parameter `{pname}` of `{}` is a tensor; pass a tensor name",
                            callee.name
                        ),
                        a.span,
                    )),
                },
                Param::Scalar { name, dtype } => {
                    let mut scope = self.scope(&unreadable, false);
                    match scope.expr(a) {
                        Ok(x) => args.push(CallArg::Scalar(coerce(x, *dtype))),
                        Err(e) => errs.push(e.with_help(format!(
                            "`{name}` is a {dtype} scalar parameter of `{}`",
                            callee.name
                        ))),
                    }
                }
            }
        }
        if !errs.is_empty() {
            self.errs
                .extend(errs.into_iter().filter(|d| !d.message.ends_with(POISONED)));
            return None;
        }
        let mut seen = HashSet::new();
        for (r, o) in c.results.iter().zip(&callee.outputs) {
            if !self.writable(r) || !self.may_write(r) {
                return None;
            }
            if !seen.insert(r.name.as_str()) {
                self.err(Diagnostic::error(
                    format!("`{}` receives two results", r.name),
                    r.span,
                ));
                return None;
            }
            if self.scalars.contains_key(&r.name) || self.sizes.contains(&r.name) {
                self.err(Diagnostic::error(
                    format!("`{}` is not a tensor name", r.name),
                    r.span,
                ));
                return None;
            }
            let out = callee.tensor(o)?;
            if let Some(existing) = self
                .tensors
                .get(&r.name)
                .or_else(|| self.typed_returns.get(&r.name))
            {
                if existing.dtype != out.dtype || existing.rank != out.shape.len() {
                    self.err(Diagnostic::error(
                        format!(
                            "`{}` is {} with {} dimensions, but `{}` returns {} with {} dimensions here",
                            r.name,
                            existing.dtype,
                            existing.rank,
                            callee.name,
                            out.dtype,
                            out.shape.len()
                        ),
                        r.span,
                    ));
                    return None;
                }
            }
            let shape = self
                .typed_returns
                .get(&r.name)
                .and_then(|t| t.shape.clone());
            self.define(r, out.dtype, out.shape.len(), shape);
        }
        Some(PendingCall {
            callee: callee.name.clone(),
            args,
            results: c.results.iter().map(|r| r.name.clone()).collect(),
            done: false,
            span: c.span,
        })
    }

    fn shape_of(&self, t: &str) -> Option<Vec<SizeExpr>> {
        self.tensors.get(t).and_then(|i| i.shape.clone())
    }

    fn infer_all(&mut self, d: &DefAst, pending: &mut [Pending]) {
        if !self.progress(d, pending) {
            return;
        }
        self.report_stuck(d, pending);
        if self.errs.is_empty() {
            self.report_unfilled(pending);
        }
    }

    /// Infers ranges, call shapes and region result shapes until nothing
    /// more can be inferred; false if that produced errors.
    fn progress(&mut self, d: &DefAst, pending: &mut [Pending]) -> bool {
        let before = self.errs.len();
        loop {
            let mut progress = false;
            if !self.progress_pass(d, pending, before, &mut progress) {
                return false;
            }
            if !progress {
                return true;
            }
        }
    }

    /// One round of [`Self::progress`] over `pending` and the bodies of its
    /// regions; false as soon as there are errors beyond the first `before`.
    fn progress_pass(
        &mut self,
        d: &DefAst,
        pending: &mut [Pending],
        before: usize,
        progress: &mut bool,
    ) -> bool {
        for p in pending.iter_mut() {
            match p {
                Pending::Comp(pc) if pc.ranges.is_none() => {
                    if let Some(r) = self.try_infer(d, pc, false) {
                        pc.ranges = Some(r);
                        *progress = true;
                    }
                }
                Pending::Call(pc) if !pc.done && self.try_call(pc) => {
                    pc.done = true;
                    *progress = true;
                }
                Pending::Region(r) => {
                    for body in r.bodies.iter_mut() {
                        if !self.progress_pass(d, body, before, progress) {
                            return false;
                        }
                    }
                    *progress |= self.settle_region(r);
                }
                _ => {}
            }
            if self.errs.len() > before {
                return false;
            }
        }
        true
    }

    /// Reports what inference could not resolve.
    fn report_stuck(&mut self, d: &DefAst, pending: &mut [Pending]) {
        for p in pending.iter_mut() {
            match p {
                Pending::Comp(pc) if pc.ranges.is_none() => {
                    self.try_infer(d, pc, true);
                }
                Pending::Call(pc) if !pc.done => {
                    self.err(Diagnostic::error(
                        format!(
                            "the shapes of the arguments of `{}` cannot be inferred",
                            pc.callee
                        ),
                        pc.span,
                    ));
                }
                Pending::Region(r) => {
                    for body in r.bodies.iter_mut() {
                        self.report_stuck(d, body);
                    }
                }
                _ => {}
            }
        }
    }

    /// Accesses that bound iterators: reads of tensors whose shapes are
    /// known, and the left side if its shape is known. Also
    /// returns whether some access was left out for an unknown shape.
    fn accesses(&self, pc: &PendingComp) -> (Vec<Access>, bool) {
        let mut out = Vec::new();
        let mut unknown = false;
        let mut add =
            |t: &str, subs: &[Expr], guarded: bool, out: &mut Vec<Access>| match self.shape_of(t) {
                Some(dims) => out.push(Access {
                    dims,
                    subs: subs.to_vec(),
                    text: format!("{t}(..)"),
                    guarded,
                }),
                None => unknown = true,
            };
        // Reads under `?:` branches count too, as in TC: an iterator two
        // branches read is bounded by both (the ranges intersect), and a
        // branch that does not mention it does not constrain it.
        let mut all = pc.body.reads();
        let mut unguarded = Vec::new();
        unguarded_reads(&pc.body, &mut unguarded);
        for (_, e) in pc.lets.iter() {
            all.extend(e.reads());
            unguarded_reads(e, &mut unguarded);
        }
        for e in &pc.exists {
            all.extend(e.reads());
            unguarded_reads(e, &mut unguarded);
        }
        for (t, subs) in all {
            let guarded = !unguarded
                .iter()
                .any(|(u, s)| std::ptr::eq(*s, subs) && *u == t);
            add(t, subs, guarded, &mut out);
        }
        let lhs: Vec<Expr> = pc.indices.iter().map(|i| Expr::Iter(i.clone())).collect();
        add(&pc.tensor, &lhs, false, &mut out);
        (out, unknown)
    }

    fn try_infer(&mut self, d: &DefAst, pc: &PendingComp, report: bool) -> Option<Vec<IterRange>> {
        let c = pc.ast;
        let (accesses, unknown) = self.accesses(pc);
        let ranges = match infer::infer(&pc.iters, &pc.fixed, &accesses) {
            Ok(r) => r,
            Err(e) => {
                if unknown && !report {
                    return None;
                }
                let diag = match e {
                    InferError::Unconstrained(its) => {
                        let x = &its[0];
                        let lhs_unknown =
                            pc.indices.contains(x) && self.shape_of(&pc.tensor).is_none();
                        let mut diag = Diagnostic::error(
                            format!("cannot infer the range of iterator `{x}`"),
                            name_span(c, x),
                        )
                        .with_label(if lhs_unknown {
                            format!(
                                "indexes no input tensor, and the shape of `{}` is not known",
                                pc.tensor
                            )
                        } else {
                            "indexes no tensor whose shape bounds it".to_string()
                        });
                        diag = diag.with_help(format!(
                            "add a range: `where {x} in 0:{}`",
                            example_size(d)
                        ));
                        diag
                    }
                    InferError::Ambiguous { iters, .. } => {
                        let list = iters
                            .iter()
                            .map(|x| format!("`{x}`"))
                            .collect::<Vec<_>>()
                            .join(" and ");
                        Diagnostic::error(
                            format!("ambiguous ranges: {list} only appear together in subscripts"),
                            // Point into the right side, where they meet.
                            name_span(
                                c,
                                iters
                                    .iter()
                                    .find(|x| !pc.indices.contains(x))
                                    .unwrap_or(&iters[0]),
                            ),
                        )
                        .with_label("no subscript bounds this iterator alone")
                        .with_help(format!(
                            "fix one of them with a `where` clause, e.g. `where {} in 0:{}`",
                            iters[0],
                            example_size(d)
                        ))
                    }
                };
                self.err(diag);
                return None;
            }
        };
        let mut out = Vec::new();
        for it in &pc.iters {
            let (lo, hi) = ranges.get(it).cloned()?;
            if let Some(n) = hi.sub(&lo).as_const() {
                if n <= 0 {
                    self.err(
                        Diagnostic::error(
                            format!("the range of iterator `{it}` is empty ({lo}:{hi})"),
                            name_span(c, it),
                        )
                        .with_help("check the sizes involved and the `where` clauses"),
                    );
                    return None;
                }
            }
            out.push(IterRange {
                name: it.clone(),
                lo,
                hi,
            });
        }
        // The left side: starts at 0 or above, stays inside a known shape,
        // or defines the shape.
        let lhs_ranges: Vec<IterRange> = out[..pc.indices.len()].to_vec();
        for r in &lhs_ranges {
            if r.lo.as_const().is_some_and(|v| v < 0) || !infer::nonneg(&r.lo) {
                self.err(
                    Diagnostic::error(
                        format!(
                            "iterator `{}` of the left side starts at {}; tensors start at index 0",
                            r.name, r.lo
                        ),
                        name_span(c, &r.name),
                    )
                    .with_help("shift the subscripts so the left side starts at 0"),
                );
                return None;
            }
        }
        match self.shape_of(&pc.tensor) {
            Some(_) => {}
            None => {
                let shape: Vec<SizeExpr> = lhs_ranges.iter().map(|r| r.hi.clone()).collect();
                if let Some(t) = self.tensors.get_mut(&pc.tensor) {
                    t.shape = Some(shape);
                }
            }
        }
        Some(out)
    }

    fn try_call(&mut self, pc: &PendingCall) -> bool {
        let Some(callee) = self.callees.get(&pc.callee) else {
            return false;
        };
        let span = pc.span;
        let mut map: HashMap<String, SizeExpr> = HashMap::new();
        for (p, a) in callee.params.iter().zip(&pc.args) {
            match (p, a) {
                (Param::Tensor(pn), CallArg::Tensor(an)) => {
                    let Some(decl) = callee.tensor(pn) else {
                        return false;
                    };
                    let Some(info) = self.tensors.get(an).cloned() else {
                        return false;
                    };
                    let Some(shape) = info.shape else {
                        return false;
                    };
                    if info.dtype != decl.dtype || shape.len() != decl.shape.len() {
                        self.err(Diagnostic::error(
                            format!(
                                "argument `{an}` is {}({}), but `{}` expects {}({}) for `{pn}`",
                                info.dtype,
                                join(&shape),
                                callee.name,
                                decl.dtype,
                                join(&decl.shape)
                            ),
                            span,
                        ));
                        return false;
                    }
                    for (k, (want, have)) in decl.shape.iter().zip(&shape).enumerate() {
                        if let Some(s) = want.as_sym() {
                            if let Some(prev) = map.get(s) {
                                if prev != have {
                                    self.err(Diagnostic::error(
                                        format!("size mismatch in call of `{}`: `{s}` is {prev} from an earlier argument but {have} from `{an}` (dimension {k})", callee.name),
                                        span,
                                    ));
                                    return false;
                                }
                            } else {
                                map.insert(s.to_string(), have.clone());
                            }
                        } else if want != have {
                            self.err(Diagnostic::error(
                                format!("size mismatch in call of `{}`: `{pn}` needs {want} in dimension {k}, `{an}` has {have}", callee.name),
                                span,
                            ));
                            return false;
                        }
                    }
                }
                (Param::Scalar { name, dtype }, CallArg::Scalar(e)) if dtype.is_int() => {
                    if let Some(s) = expr_to_size(e) {
                        map.insert(name.clone(), s);
                    }
                }
                _ => {}
            }
        }
        // The callee's own static checks, with the sizes this call fixes:
        // a range that becomes empty or a read that leaves its tensor.
        let fixed: HashMap<String, i64> = map
            .iter()
            .filter_map(|(k, v)| v.as_const().map(|c| (k.clone(), c)))
            .collect();
        if !fixed.is_empty() {
            let mut violation = None;
            ir::walk_stmts(&callee.stmts, &mut |st| {
                if let (Stmt::Comp(c), None) = (st, &violation) {
                    violation = bounds::check_comprehension(callee, c, &fixed);
                }
            });
            if let Some(v) = violation {
                let mut sizes: Vec<String> =
                    fixed.iter().map(|(k, v)| format!("{k} = {v}")).collect();
                sizes.sort();
                self.err(
                    Diagnostic::error(
                        format!("in this call of `{}`: {}", callee.name, v.message),
                        span,
                    )
                    .with_help(format!("the call fixes {}", sizes.join(", "))),
                );
                return false;
            }
        }
        for (r, o) in pc.results.iter().zip(&callee.outputs) {
            let Some(out) = callee.tensor(o) else {
                return false;
            };
            let mut shape = Vec::new();
            for dim in &out.shape {
                if let Some(s) = dim.symbols().into_iter().find(|s| !map.contains_key(s)) {
                    self.err(Diagnostic::error(
                        format!("the size of result `{o}` of `{}` depends on `{s}`, which this call does not determine", callee.name),
                        span,
                    ));
                    return false;
                }
                shape.push(dim.subst(&|s| map.get(s).cloned()));
            }
            let info = self.tensors.get_mut(r);
            match info {
                Some(info) => match &info.shape {
                    Some(existing) if *existing != shape => {
                        let msg = format!(
                            "`{r}` has shape ({}), but `{}` returns shape ({}) here",
                            join(existing),
                            callee.name,
                            join(&shape)
                        );
                        self.err(Diagnostic::error(msg, span));
                        return false;
                    }
                    Some(_) => {}
                    None => info.shape = Some(shape),
                },
                None => return false,
            }
        }
        true
    }

    fn build(&mut self, d: &DefAst, pending: Vec<Pending>) -> Def {
        let params = d
            .params
            .iter()
            .map(|p| match p.ty.dims {
                None => Param::Scalar {
                    name: p.name.name.clone(),
                    dtype: p.ty.dtype,
                },
                Some(_) => Param::Tensor(p.name.name.clone()),
            })
            .collect();
        let tensors = self
            .order
            .iter()
            .map(|(n, role)| {
                let info = &self.tensors[n];
                TensorDecl {
                    name: n.clone(),
                    dtype: info.dtype,
                    shape: info.shape.clone().unwrap_or_default(),
                    role: *role,
                }
            })
            .collect();
        Def {
            name: d.name.name.clone(),
            params,
            outputs: self.returns.clone(),
            tensors,
            stmts: build_stmts(pending),
        }
    }
}

/// The IR statements of a block after phase 2.
fn build_stmts(pending: Vec<Pending>) -> Vec<Stmt> {
    pending
        .into_iter()
        .map(|p| match p {
            Pending::Comp(pc) => Stmt::Comp(Comprehension {
                tensor: pc.tensor,
                indices: pc.indices,
                op: pc.op,
                init: pc.init,
                body: pc.body,
                ranges: pc.ranges.unwrap_or_default(),
                lets: pc.lets,
                exists: pc.exists,
            }),
            Pending::Call(pc) => Stmt::Call(CallStmt {
                callee: pc.callee,
                args: pc.args,
                results: pc.results,
            }),
            Pending::Region(r) => r.build(),
        })
        .collect()
}

/// Runs the static bounds checks on every comprehension of a checked def.
pub fn bounds_diagnostics(d: &DefAst, def: &Def, sizes: &HashMap<String, i64>) -> Vec<Diagnostic> {
    let mut out = Vec::new();
    bounds_in(def, &def.stmts, &d.stmts, sizes, &mut out);
    out
}

/// [`bounds_diagnostics`] on one block: its IR statements beside the
/// syntax they came from.
fn bounds_in(
    def: &Def,
    stmts: &[Stmt],
    asts: &[StmtAst],
    sizes: &HashMap<String, i64>,
    out: &mut Vec<Diagnostic>,
) {
    for (s, ast) in stmts.iter().zip(asts) {
        match (s, ast) {
            (Stmt::Comp(c), StmtAst::Comp(a)) => {
                if let Some(v) = bounds::check_comprehension(def, c, sizes) {
                    out.push(Diagnostic::error(v.message, name_span(a, &v.name)).with_help(v.help));
                }
            }
            (Stmt::Loop(l), StmtAst::Loop(a)) => bounds_in(def, &l.body, &a.body.stmts, sizes, out),
            (Stmt::If(b), StmtAst::If(a)) => {
                bounds_in(def, &b.then_body, &a.then_body.stmts, sizes, out);
                bounds_in(def, &b.else_body, &a.else_body.stmts, sizes, out);
            }
            _ => {}
        }
    }
}

/// A bound to suggest in a `where` range: the def's first size symbol (or
/// integer scalar), so the suggestion names something the def has; a
/// literal when it has neither.
fn example_size(d: &DefAst) -> String {
    let sym = d.params.iter().find_map(|p| match &p.ty.dims {
        Some(dims) => dims.iter().find_map(|dim| match dim {
            DimAst::Sym(id) => Some(id.name.clone()),
            _ => None,
        }),
        None => p.ty.dtype.is_int().then(|| p.name.name.clone()),
    });
    sym.unwrap_or_else(|| "8".to_string())
}

/// `1 argument`, `2 arguments`; `index` becomes `indices`.
pub fn count(n: usize, noun: &str) -> String {
    match (n, noun) {
        (1, _) => format!("1 {noun}"),
        (_, "index") => format!("{n} indices"),
        _ => format!("{n} {noun}s"),
    }
}

/// `1 is`, `2 are`.
fn count_is(n: usize) -> String {
    if n == 1 {
        "1 is".to_string()
    } else {
        format!("{n} are")
    }
}

fn join(s: &[SizeExpr]) -> String {
    s.iter()
        .map(|x| x.to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

/// Every name a comprehension mentions on its right side and in `where`.
fn mentioned(c: &CompAst) -> HashSet<String> {
    let mut out = HashSet::new();
    names_in(&c.body, &mut out);
    for w in &c.wheres {
        match w {
            WhereAst::Range { lo, hi, .. } => {
                names_in(lo, &mut out);
                names_in(hi, &mut out);
            }
            WhereAst::Let { value, .. } => names_in(value, &mut out),
            WhereAst::Exists(e) => names_in(e, &mut out),
        }
    }
    out
}

fn names_in(e: &ExprAst, out: &mut HashSet<String>) {
    match &e.kind {
        ExprKind::Name(n) => {
            out.insert(n.clone());
        }
        ExprKind::Dim(t, _) => {
            out.insert(t.name.clone());
        }
        ExprKind::Apply(f, args) => {
            out.insert(f.name.clone());
            args.iter().for_each(|a| names_in(a, out));
        }
        ExprKind::Unary(_, a) => names_in(a, out),
        ExprKind::Binary(_, a, b) => {
            names_in(a, out);
            names_in(b, out);
        }
        ExprKind::Select(a, b, c) => {
            names_in(a, out);
            names_in(b, out);
            names_in(c, out);
        }
        ExprKind::Int(_) | ExprKind::Float(_) | ExprKind::Bool(_) => {}
    }
}

/// The index of the statement of a block that first writes each tensor.
fn first_definitions(stmts: &[StmtAst]) -> HashMap<String, usize> {
    let mut out = HashMap::new();
    for (i, s) in stmts.iter().enumerate() {
        for n in s.written() {
            out.entry(n.name.clone()).or_insert(i);
        }
    }
    out
}

/// Reads not under a `?:` branch, with reads nested in their subscripts.
pub fn unguarded_reads<'e>(e: &'e Expr, out: &mut Vec<(&'e str, &'e [Expr])>) {
    match e {
        Expr::Read(t, subs) => {
            out.push((t, subs));
            for s in subs {
                unguarded_reads(s, out);
            }
        }
        Expr::Select(c, _, _) => unguarded_reads(c, out),
        _ => {
            for c in e.children() {
                unguarded_reads(c, out);
            }
        }
    }
}

/// The span of the first mention of `name` in a statement (falls back to
/// the left-hand side).
fn name_span(c: &CompAst, name: &str) -> Span {
    if let Some(ix) = c.indices.iter().find(|x| x.name == name) {
        return ix.span;
    }
    fn find(e: &ExprAst, name: &str) -> Option<Span> {
        match &e.kind {
            ExprKind::Name(n) if n == name => Some(e.span),
            ExprKind::Apply(f, args) => {
                if f.name == name {
                    return Some(f.span);
                }
                args.iter().find_map(|a| find(a, name))
            }
            ExprKind::Unary(_, a) => find(a, name),
            ExprKind::Binary(_, a, b) => find(a, name).or_else(|| find(b, name)),
            ExprKind::Select(a, b, x) => find(a, name)
                .or_else(|| find(b, name))
                .or_else(|| find(x, name)),
            _ => None,
        }
    }
    find(&c.body, name)
        .or_else(|| {
            c.wheres.iter().find_map(|w| match w {
                WhereAst::Range { iter, .. } if iter.name == name => Some(iter.span),
                WhereAst::Let { value, .. } => find(value, name),
                WhereAst::Exists(e) => find(e, name),
                _ => None,
            })
        })
        .unwrap_or(c.lhs.span)
}
