//! The IR verifier: checks the invariants every producer of IR (the TC
//! checker, importers, and later every pass) must keep. Tests run it after
//! every transformation.
//!
//! Invariants checked:
//! - def names are unique; calls name an existing def other than the caller,
//!   the call graph has no cycle, argument kinds and counts match the
//!   callee's parameters and result counts its outputs;
//! - within a def, parameter and tensor names are unique, every tensor
//!   parameter and output has a declaration with the matching role, and every
//!   shape mentions only size symbols and integer scalar parameters;
//! - every statement reads only parameters and tensors defined by earlier
//!   statements, and writes a declared tensor; every output that is not an
//!   in/out parameter is written by some statement;
//! - a comprehension has one distinct iterator per dimension of its
//!   left-hand side; its ranges list exactly its iterators, the left-hand
//!   side ones first; `=` has no reduction iterators and no `!`; ranges
//!   mention only the def's size symbols and integer scalars;
//! - expressions are well typed: literals match their types, both operands
//!   of a binary operation share a type, conditions are `bool`, subscripts
//!   are integers, reads have one subscript per dimension, builtins get their
//!   arity and (except `fabs`, `fmax`, `fmin`) float arguments, the body's
//!   type is the left-hand side's element type; lets are bound before use;
//! - regions: a loop has a count (`int64`) or a condition (`bool`), a
//!   branch a `bool` condition, each over size symbols, integer scalars,
//!   enclosing loops' indices and reads of defined 0-d tensors; a loop index
//!   shadows no size symbol, scalar, tensor or enclosing index, and no
//!   iterator or let inside its body is named like it; a count reads no
//!   tensors; carried parameters,
//!   their initial values, yields and results agree in count, element type
//!   and shape; a body reads what is defined before it (outside) or in it,
//!   and every tensor is written in one block only (a body writes only
//!   tensors it declares itself); what a body defines is not visible after
//!   its region.

use std::collections::{HashMap, HashSet};

use crate::{
    BinOp, CallArg, Comprehension, DType, Def, Expr, Param, Program, Reduction, Stmt, TensorDecl,
    TensorRole, UnOp, Value,
};

/// Verifies a whole program; returns every violation found.
pub fn verify_program(p: &Program) -> Result<(), Vec<String>> {
    let mut errs = Vec::new();
    let mut seen = HashSet::new();
    for d in &p.defs {
        if !seen.insert(d.name.as_str()) {
            errs.push(format!("def `{}` is defined twice", d.name));
        }
        verify_def_in(p, d, &mut errs);
    }
    check_call_cycles(p, &mut errs);
    if errs.is_empty() {
        Ok(())
    } else {
        Err(errs)
    }
}

fn check_call_cycles(p: &Program, errs: &mut Vec<String>) {
    let callees = |d: &Def| -> Vec<String> {
        let mut out = Vec::new();
        crate::walk_stmts(&d.stmts, &mut |s| {
            if let Stmt::Call(c) = s {
                out.push(c.callee.clone());
            }
        });
        out
    };
    // Depth-first search with colors: 1 = on the stack, 2 = finished.
    fn visit<'a>(
        p: &'a Program,
        name: &'a str,
        color: &mut HashMap<&'a str, u8>,
        callees: &dyn Fn(&Def) -> Vec<String>,
        errs: &mut Vec<String>,
    ) {
        color.insert(name, 1);
        if let Some(d) = p.def(name) {
            for c in callees(d) {
                let Some(cd) = p.def(&c) else { continue };
                match color.get(cd.name.as_str()) {
                    Some(1) => errs.push(format!(
                        "def `{name}` calls `{c}`, which calls back: recursion is not allowed"
                    )),
                    Some(_) => {}
                    None => visit(p, &cd.name, color, callees, errs),
                }
            }
        }
        color.insert(name, 2);
    }
    let mut color = HashMap::new();
    for d in &p.defs {
        if !color.contains_key(d.name.as_str()) {
            visit(p, &d.name, &mut color, &callees, errs);
        }
    }
}

fn verify_def_in(p: &Program, d: &Def, errs: &mut Vec<String>) {
    let mut err = |m: String| errs.push(format!("def `{}`: {m}", d.name));
    let decls = Decls::of(d);
    let mut names = HashSet::new();
    for prm in &d.params {
        if !names.insert(prm.name()) {
            err(format!("parameter `{}` is declared twice", prm.name()));
        }
        if let Param::Tensor(t) = prm {
            match decls.tensor(t) {
                Some(decl) if matches!(decl.role, TensorRole::Input | TensorRole::InOut) => {}
                _ => err(format!("tensor parameter `{t}` has no input declaration")),
            }
        }
    }
    let mut loop_indices = Vec::new();
    crate::walk_stmts(&d.stmts, &mut |s| {
        if let Stmt::Loop(l) = s {
            loop_indices.push(l.index.as_str());
        }
    });
    let mut tnames = HashSet::new();
    for t in &d.tensors {
        if !tnames.insert(t.name.as_str()) {
            err(format!("tensor `{}` is declared twice", t.name));
        }
        if d.scalar(&t.name).is_some() {
            err(format!("`{}` is both a scalar and a tensor", t.name));
        }
        for s in &t.shape {
            for sym in s.symbols() {
                if !decls.size_symbol_ok(d, &sym) && !loop_indices.contains(&sym.as_str()) {
                    err(format!(
                        "shape of `{}` mentions `{sym}`, which is no size symbol or integer scalar",
                        t.name
                    ));
                }
            }
        }
    }
    for o in &d.outputs {
        match decls.tensor(o) {
            Some(decl) if matches!(decl.role, TensorRole::Output | TensorRole::InOut) => {}
            _ => err(format!("output `{o}` has no output declaration")),
        }
    }
    let defined: HashSet<&str> = d
        .tensors
        .iter()
        .filter(|t| matches!(t.role, TensorRole::Input | TensorRole::InOut))
        .map(|t| t.name.as_str())
        .collect();
    let mut scope = Scope {
        decls,
        defined,
        indices: Vec::new(),
        owner: HashMap::new(),
        blocks: 0,
    };
    verify_block(p, d, &d.stmts, "", 0, &mut scope, &mut err);
    let defined = scope.defined;
    for o in &d.outputs {
        if !defined.contains(o.as_str()) {
            err(format!("output `{o}` is never defined"));
        }
    }
}

/// A def's declarations by name, and its size symbols, computed once: the
/// verifier looks them up for every statement and expression, and a
/// search of the declaration list each time made a def of a thousand
/// statements (an unrolled loop) quadratic.
struct Decls<'a> {
    tensors: HashMap<&'a str, &'a TensorDecl>,
    size_symbols: HashSet<String>,
}

impl<'a> Decls<'a> {
    fn of(d: &'a Def) -> Decls<'a> {
        let mut tensors = HashMap::new();
        for t in &d.tensors {
            // The first declaration, as `Def::tensor` finds it.
            tensors.entry(t.name.as_str()).or_insert(t);
        }
        Decls {
            tensors,
            size_symbols: d.size_symbols().into_iter().collect(),
        }
    }

    fn tensor(&self, name: &str) -> Option<&'a TensorDecl> {
        self.tensors.get(name).copied()
    }

    /// Whether `sym` may appear in a shape or range: a size symbol or an
    /// integer scalar parameter.
    fn size_symbol_ok(&self, d: &Def, sym: &str) -> bool {
        match d.scalar(sym) {
            Some(t) => t.is_int(),
            None => self.size_symbols.contains(sym),
        }
    }
}

/// What a block sees: the tensors defined so far, the loop indices in scope,
/// and which block (numbered in order of appearance) writes each tensor.
struct Scope<'a> {
    decls: Decls<'a>,
    defined: HashSet<&'a str>,
    indices: Vec<&'a str>,
    owner: HashMap<&'a str, usize>,
    blocks: usize,
}

/// Verifies the statements of one block (the def's, or a region body's,
/// numbered `block`); `path` prefixes statement numbers inside regions.
fn verify_block<'a>(
    p: &Program,
    d: &'a Def,
    stmts: &'a [Stmt],
    path: &str,
    block: usize,
    scope: &mut Scope<'a>,
    err: &mut dyn FnMut(String),
) {
    for (i, s) in stmts.iter().enumerate() {
        let here = format!("{path}{}", i + 1);
        let mut serr = |m: String| err(format!("statement {here}: {m}"));
        for t in s.written() {
            match scope.owner.get(t) {
                Some(&b) if b != block => serr(format!(
                    "writes `{t}`, which another block writes: a region writes only its own tensors"
                )),
                _ => {
                    scope.owner.insert(t, block);
                }
            }
        }
        match s {
            Stmt::Comp(c) => {
                verify_comprehension(d, c, scope, &mut serr);
                scope.defined.insert(&c.tensor);
            }
            Stmt::Call(call) => {
                let Some(callee) = p.def(&call.callee) else {
                    serr(format!("call of unknown def `{}`", call.callee));
                    continue;
                };
                if callee.name == d.name {
                    serr(format!("`{}` calls itself", d.name));
                }
                if callee.params.len() != call.args.len() {
                    serr(format!(
                        "`{}` takes {} arguments, the call passes {}",
                        callee.name,
                        callee.params.len(),
                        call.args.len()
                    ));
                }
                for (prm, a) in callee.params.iter().zip(&call.args) {
                    match (prm, a) {
                        (Param::Tensor(_), CallArg::Tensor(t)) => {
                            if !scope.defined.contains(t.as_str()) {
                                serr(format!("argument `{t}` is read before it is defined"));
                            }
                        }
                        (Param::Scalar { dtype, .. }, CallArg::Scalar(e)) => {
                            let mut ctx = TypeCheck {
                                d,
                                decls: &scope.decls,
                                c: None,
                                indices: &scope.indices,
                                errs: Vec::new(),
                            };
                            let t = ctx.check(e, &HashSet::new());
                            if t != *dtype {
                                ctx.errs.push(format!(
                                    "scalar argument for `{}` has type {t}, expected {dtype}",
                                    prm.name()
                                ));
                            }
                            for e in ctx.errs {
                                serr(e);
                            }
                        }
                        _ => serr(format!(
                            "argument for `{}` is of the wrong kind",
                            prm.name()
                        )),
                    }
                }
                if callee.outputs.len() != call.results.len() {
                    serr(format!(
                        "`{}` returns {} tensors, the call binds {}",
                        callee.name,
                        callee.outputs.len(),
                        call.results.len()
                    ));
                }
                for r in &call.results {
                    if scope.decls.tensor(r).is_none() {
                        serr(format!("call result `{r}` has no declaration"));
                    }
                    scope.defined.insert(r);
                }
            }
            Stmt::Loop(l) => {
                if l.count.is_none() && l.cond.is_none() {
                    serr("a loop needs a count or a condition".into());
                }
                if d.scalar(&l.index).is_some()
                    || scope.decls.size_symbols.contains(&l.index)
                    || scope.indices.contains(&l.index.as_str())
                {
                    serr(format!(
                        "loop index `{}` shadows a size symbol, scalar or enclosing index",
                        l.index
                    ));
                }
                if scope.decls.tensor(&l.index).is_some() {
                    serr(format!("loop index `{}` is also a tensor's name", l.index));
                }
                if l.count.as_ref().is_some_and(|c| !c.reads().is_empty()) {
                    serr("a loop count reads no tensors".into());
                }
                check_scalar_expr(
                    d,
                    scope,
                    l.count.as_ref(),
                    DType::I64,
                    "loop count",
                    &mut serr,
                );
                for c in &l.carried {
                    if !scope.defined.contains(c.init.as_str()) {
                        serr(format!(
                            "carried `{}` starts from `{}`, which is not defined",
                            c.param, c.init
                        ));
                    }
                    same_type(&scope.decls, &c.param, &c.init, &mut serr);
                }
                check_counts(
                    l.carried.len(),
                    &l.yields,
                    &l.results,
                    "carried tensors",
                    &mut serr,
                );
                let outer = scope.defined.clone();
                scope.indices.push(&l.index);
                scope.blocks += 1;
                let body = scope.blocks;
                for c in &l.carried {
                    scope.defined.insert(&c.param);
                    if scope.owner.insert(&c.param, body).is_some() {
                        serr(format!("carried `{}` is written elsewhere too", c.param));
                    }
                }
                check_scalar_expr(
                    d,
                    scope,
                    l.cond.as_ref(),
                    DType::Bool,
                    "loop condition",
                    &mut serr,
                );
                verify_block(p, d, &l.body, &format!("{here}."), body, scope, &mut serr);
                for (c, y) in l.carried.iter().zip(&l.yields) {
                    yielded(scope, y, &c.param, &mut serr);
                }
                scope.indices.pop();
                scope.defined = outer;
                for (c, r) in l.carried.iter().zip(&l.results) {
                    same_type(&scope.decls, r, &c.param, &mut serr);
                    scope.defined.insert(r);
                }
            }
            Stmt::If(b) => {
                check_scalar_expr(
                    d,
                    scope,
                    Some(&b.cond),
                    DType::Bool,
                    "branch condition",
                    &mut serr,
                );
                let outer = scope.defined.clone();
                for (k, (body, yields)) in [
                    (&b.then_body, &b.then_yields),
                    (&b.else_body, &b.else_yields),
                ]
                .into_iter()
                .enumerate()
                {
                    check_counts(b.results.len(), yields, &b.results, "results", &mut serr);
                    let inner = format!("{here}.{}.", ["then", "else"][k]);
                    scope.blocks += 1;
                    let id = scope.blocks;
                    verify_block(p, d, body, &inner, id, scope, &mut serr);
                    for (y, r) in yields.iter().zip(&b.results) {
                        yielded(scope, y, r, &mut serr);
                    }
                    scope.defined = outer.clone();
                }
                for r in &b.results {
                    scope.defined.insert(r);
                }
            }
        }
    }
}

/// Checks that a region yields one name per result.
fn check_counts(
    n: usize,
    yields: &[String],
    results: &[String],
    what: &str,
    err: &mut dyn FnMut(String),
) {
    if yields.len() != n || results.len() != n {
        err(format!(
            "{n} {what}, but {} yielded and {} results",
            yields.len(),
            results.len()
        ));
    }
}

/// Checks that `y`, yielded for `slot`, is visible and of `slot`'s type.
fn yielded(scope: &Scope, y: &str, slot: &str, err: &mut dyn FnMut(String)) {
    if !scope.defined.contains(y) {
        err(format!("yields `{y}`, which is not defined"));
    }
    same_type(&scope.decls, slot, y, err);
}

/// Checks that tensors `a` and `b` are declared with one element type and shape.
fn same_type(decls: &Decls, a: &str, b: &str, err: &mut dyn FnMut(String)) {
    match (decls.tensor(a), decls.tensor(b)) {
        (Some(x), Some(y)) if x.dtype != y.dtype || x.shape != y.shape => err(format!(
            "`{a}` is {}{:?} but `{b}` is {}{:?}",
            x.dtype, x.shape, y.dtype, y.shape
        )),
        (Some(_), Some(_)) => {}
        (None, _) => err(format!("`{a}` has no declaration")),
        (_, None) => err(format!("`{b}` has no declaration")),
    }
}

/// Checks a region's scalar expression: of type `want`, reading only
/// defined 0-d tensors.
fn check_scalar_expr(
    d: &Def,
    scope: &Scope,
    e: Option<&Expr>,
    want: DType,
    what: &str,
    err: &mut dyn FnMut(String),
) {
    let Some(e) = e else { return };
    let mut tc = TypeCheck {
        d,
        decls: &scope.decls,
        c: None,
        indices: &scope.indices,
        errs: Vec::new(),
    };
    let t = tc.check(e, &HashSet::new());
    if t != want {
        tc.errs
            .push(format!("{what} has type {t}, expected {want}"));
    }
    for (r, ix) in e.reads() {
        if !scope.defined.contains(r) {
            tc.errs
                .push(format!("{what} reads `{r}` before it is defined"));
        }
        if !ix.is_empty() {
            tc.errs.push(format!(
                "{what} reads `{r}` with subscripts: only 0-d tensors are read here"
            ));
        }
    }
    for m in tc.errs {
        err(m);
    }
}

fn verify_comprehension(d: &Def, c: &Comprehension, scope: &Scope, err: &mut dyn FnMut(String)) {
    let defined = &scope.defined;
    let Some(lhs) = scope.decls.tensor(&c.tensor) else {
        err(format!("writes undeclared tensor `{}`", c.tensor));
        return;
    };
    if lhs.role == TensorRole::Input && d.outputs.contains(&c.tensor) {
        err(format!("`{}` is written but declared input-only", c.tensor));
    }
    if lhs.shape.len() != c.indices.len() {
        err(format!(
            "`{}` has {} dimensions but is written with {} indices",
            c.tensor,
            lhs.shape.len(),
            c.indices.len()
        ));
    }
    let mut seen = HashSet::new();
    for ix in &c.indices {
        if !seen.insert(ix.as_str()) {
            err(format!("iterator `{ix}` appears twice on the left"));
        }
    }
    let lhs_ranges: Vec<&str> = c
        .ranges
        .iter()
        .take(c.indices.len())
        .map(|r| r.name.as_str())
        .collect();
    if lhs_ranges != c.indices.iter().map(String::as_str).collect::<Vec<_>>() {
        err("ranges must list the left-hand-side iterators first, in order".into());
    }
    let mut rnames = HashSet::new();
    for r in &c.ranges {
        if !rnames.insert(r.name.as_str()) {
            err(format!("iterator `{}` has two ranges", r.name));
        }
        if scope.indices.contains(&r.name.as_str()) {
            err(format!(
                "iterator `{}` is named like an enclosing loop's index",
                r.name
            ));
        }
        for s in r.lo.symbols().into_iter().chain(r.hi.symbols()) {
            if !scope.decls.size_symbol_ok(d, &s) && !scope.indices.contains(&s.as_str()) {
                err(format!(
                    "range of `{}` mentions `{s}`, which is no size symbol or integer scalar",
                    r.name
                ));
            }
        }
    }
    let mut used = HashSet::new();
    let mut collect = |e: &Expr| {
        e.walk(&mut |x| {
            if let Expr::Iter(n) = x {
                used.insert(n.clone());
            }
        })
    };
    collect(&c.body);
    c.lets.iter().for_each(|(_, e)| collect(e));
    c.exists.iter().for_each(&mut collect);
    for u in &used {
        if !rnames.contains(u.as_str()) {
            err(format!("iterator `{u}` has no range"));
        }
    }
    for r in &c.ranges {
        if !used.contains(&r.name) && !c.indices.contains(&r.name) {
            err(format!("reduction iterator `{}` is not used", r.name));
        }
    }
    if c.op == Reduction::Assign {
        if c.init {
            err("`=!` is not an operator".into());
        }
        if let Some(r) = c.reduction_iters().next() {
            err(format!("`=` statement has reduction iterator `{}`", r.name));
        }
    }
    let mut reads_ok = |e: &Expr| {
        for (t, _) in e.reads() {
            if !defined.contains(t) {
                err(format!("reads `{t}` before it is defined"));
            }
        }
    };
    reads_ok(&c.body);
    c.lets.iter().for_each(|(_, e)| reads_ok(e));

    let mut tc = TypeCheck {
        d,
        decls: &scope.decls,
        c: Some(c),
        indices: &scope.indices,
        errs: Vec::new(),
    };
    for (n, _) in &c.lets {
        if scope.indices.contains(&n.as_str()) {
            tc.errs
                .push(format!("let `{n}` is named like an enclosing loop's index"));
        }
    }
    let mut bound = HashSet::new();
    for (n, v) in &c.lets {
        tc.check(v, &bound);
        bound.insert(n.clone());
    }
    for e in &c.exists {
        tc.check(e, &bound);
    }
    let t = tc.check(&c.body, &bound);
    if t != lhs.dtype {
        tc.errs.push(format!(
            "body has type {t} but `{}` is {}",
            c.tensor, lhs.dtype
        ));
    }
    if lhs.dtype == DType::Bool && c.op != Reduction::Assign {
        tc.errs
            .push("reductions on bool tensors are not defined".into());
    }
    for e in tc.errs {
        err(e);
    }
}

struct TypeCheck<'a> {
    d: &'a Def,
    decls: &'a Decls<'a>,
    c: Option<&'a Comprehension>,
    /// The indices of the loops around the expression (`int64` scalars).
    indices: &'a [&'a str],
    errs: Vec<String>,
}

impl TypeCheck<'_> {
    /// Checks `e` and gives its type: `Def::type_of`'s, computed from the
    /// operands' types on the way up instead of again at every level.
    fn check(&mut self, e: &Expr, lets: &HashSet<String>) -> DType {
        match e {
            Expr::Lit(v, ty) => {
                let ok = match v {
                    Value::Int(_) => ty.is_int(),
                    Value::Float(_) => ty.is_float(),
                    Value::Bool(_) => *ty == DType::Bool,
                };
                if !ok {
                    self.errs.push(format!("literal {v:?} has type {ty}"));
                }
                *ty
            }
            Expr::Iter(_) => DType::I64,
            Expr::Sym(s) => {
                let t = self.d.scalar(s);
                if t.is_none()
                    && !self.decls.size_symbols.contains(s)
                    && !self.indices.contains(&s.as_str())
                {
                    self.errs.push(format!("unknown symbol `{s}`"));
                }
                t.unwrap_or(DType::I64)
            }
            Expr::Local(n) => {
                if !lets.contains(n) {
                    self.errs
                        .push(format!("let `{n}` is used before it is bound"));
                }
                self.d.type_of(self.c, e)
            }
            Expr::Read(tname, ix) => {
                let decl = self.decls.tensor(tname);
                match decl {
                    Some(decl) if decl.shape.len() != ix.len() => self.errs.push(format!(
                        "`{tname}` has {} dimensions but is read with {} subscripts",
                        decl.shape.len(),
                        ix.len()
                    )),
                    Some(_) => {}
                    None => self
                        .errs
                        .push(format!("read of undeclared tensor `{tname}`")),
                }
                for x in ix {
                    let xt = self.check(x, lets);
                    if !xt.is_int() {
                        self.errs
                            .push(format!("subscript of `{tname}` has type {xt}"));
                    }
                }
                decl.map(|d| d.dtype).unwrap_or(DType::I64)
            }
            Expr::Unary(op, a) => {
                let at = self.check(a, lets);
                match op {
                    UnOp::Not if at != DType::Bool => {
                        self.errs.push(format!("`!` applied to {at}"))
                    }
                    UnOp::Neg if at == DType::Bool => self.errs.push("`-` applied to bool".into()),
                    _ => {}
                }
                if *op == UnOp::Not {
                    DType::Bool
                } else {
                    at
                }
            }
            Expr::Binary(op, a, b) => {
                let at = self.check(a, lets);
                let bt = self.check(b, lets);
                if at != bt {
                    self.errs.push(format!(
                        "operands of `{}` have types {at} and {bt}",
                        op.symbol()
                    ));
                }
                if op.is_logical() && at != DType::Bool {
                    self.errs.push(format!(
                        "operands of `{}` must be bool, not {at}",
                        op.symbol()
                    ));
                }
                if !op.is_logical() && !matches!(op, BinOp::Eq | BinOp::Ne) && at == DType::Bool {
                    self.errs.push(format!("`{}` applied to bool", op.symbol()));
                }
                if op.is_comparison() || op.is_logical() {
                    DType::Bool
                } else {
                    at
                }
            }
            Expr::Select(c, a, b) => {
                if self.check(c, lets) != DType::Bool {
                    self.errs.push("condition of `?:` is not bool".into());
                }
                let at = self.check(a, lets);
                let bt = self.check(b, lets);
                if at != bt {
                    self.errs
                        .push(format!("branches of `?:` have types {at} and {bt}"));
                }
                at
            }
            Expr::Call(f, args) => {
                if args.len() != f.arity() {
                    self.errs.push(format!(
                        "`{}` takes {} arguments, got {}",
                        f.name(),
                        f.arity(),
                        args.len()
                    ));
                }
                let mut first = None;
                for a in args {
                    let at = self.check(a, lets);
                    if at != *first.get_or_insert(at) {
                        self.errs
                            .push(format!("arguments of `{}` have different types", f.name()));
                    }
                    if !at.is_float() && !f.accepts_int() {
                        self.errs
                            .push(format!("`{}` needs float arguments, got {at}", f.name()));
                    }
                }
                first.unwrap_or(DType::F32)
            }
            Expr::Cast(t, a) => {
                self.check(a, lets);
                *t
            }
        }
    }
}
