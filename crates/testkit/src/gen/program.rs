//! The description of a generated program: one def over tensors of one
//! element type, as statements of affine reads, literals and operators,
//! with the sizes of its symbols.
//!
//! It is what the shared generator ([`super::generate`]) builds, what a
//! property test transforms (the verifier's rewrites and perturbations)
//! and what [`super::eval`] evaluates directly; [`Program::source`]
//! renders it as Tensor Comprehensions text, which is what the code under
//! test sees. Every name is a plain string, so a test can rename, hoist
//! and split freely.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Write as _;

use ir::DType;

/// Size symbols and their values.
pub type Sizes = BTreeMap<String, i64>;

/// Iterator ranges `[lo, hi)` by name.
pub type Ranges = BTreeMap<String, (i64, i64)>;

/// An affine subscript `sum(coef * iterator) + c`.
#[derive(Clone, Debug, PartialEq)]
pub struct Aff {
    pub terms: Vec<(i64, String)>,
    pub c: i64,
}

impl Aff {
    /// The iterator `v` alone.
    pub fn var(v: &str) -> Aff {
        Aff {
            terms: vec![(1, v.to_string())],
            c: 0,
        }
    }

    /// The constant `c`.
    pub fn konst(c: i64) -> Aff {
        Aff {
            terms: Vec::new(),
            c,
        }
    }

    /// The iterator, when the subscript is one iterator alone (`i`).
    pub fn alone(&self) -> Option<&str> {
        match &self.terms[..] {
            [(1, v)] if self.c == 0 => Some(v),
            _ => None,
        }
    }

    /// Whether it mentions iterator `v`.
    pub fn mentions(&self, v: &str) -> bool {
        self.terms.iter().any(|(a, w)| *a != 0 && w == v)
    }

    /// Its value at a point (every iterator it mentions has a value).
    pub fn at(&self, point: &BTreeMap<String, i64>) -> i64 {
        self.terms.iter().map(|(a, v)| a * point[v]).sum::<i64>() + self.c
    }

    /// The least and greatest values over the box `r`.
    pub fn interval(&self, r: &Ranges) -> (i64, i64) {
        let (mut lo, mut hi) = (self.c, self.c);
        for (a, v) in &self.terms {
            let (l, h) = r[v];
            let (x, y) = (a * l, a * (h - 1));
            lo += x.min(y);
            hi += x.max(y);
        }
        (lo, hi)
    }

    pub fn render(&self) -> String {
        let mut s = String::new();
        for (a, v) in &self.terms {
            let term = match a.abs() {
                0 => continue,
                1 => v.clone(),
                k => format!("{k}*{v}"),
            };
            s = match (s.is_empty(), *a < 0) {
                (true, false) => term,
                (true, true) => format!("-{term}"),
                (false, false) => format!("{s} + {term}"),
                (false, true) => format!("{s} - {term}"),
            };
        }
        match (s.is_empty(), self.c) {
            (true, c) => c.to_string(),
            (false, 0) => s,
            (false, c) if c < 0 => format!("{s} - {}", -c),
            (false, c) => format!("{s} + {c}"),
        }
    }

    fn rename(&mut self, map: &BTreeMap<String, String>) {
        for t in &mut self.terms {
            if let Some(n) = map.get(&t.1) {
                t.1 = n.clone();
            }
        }
    }
}

/// A condition of `?:`.
#[derive(Clone, Debug, PartialEq)]
pub enum Cond {
    Lt(Aff, i64),
    Ge(Aff, i64),
    And(Box<Cond>, Box<Cond>),
    /// The exact bounds check of a read of the tensor at these subscripts
    /// (`s >= 0 && s < T.d && ...`, with the tensor's dimension sizes).
    InBounds(String, Vec<Aff>),
}

impl Cond {
    pub fn render(&self) -> String {
        match self {
            Cond::Lt(a, k) => format!("{} < {k}", a.render()),
            Cond::Ge(a, k) => format!("{} >= {k}", a.render()),
            Cond::And(a, b) => format!("{} && {}", a.render(), b.render()),
            Cond::InBounds(t, subs) => subs
                .iter()
                .enumerate()
                .map(|(d, s)| {
                    let s = s.render();
                    format!("{s} >= 0 && {s} < {t}.{d}")
                })
                .collect::<Vec<_>>()
                .join(" && "),
        }
    }

    /// Calls `f` on every comparison's subscript and constant (not on the
    /// subscripts of an `InBounds` check, whose bounds are the tensor's).
    pub fn affs_mut(&mut self, f: &mut dyn FnMut(&mut Aff, &mut i64)) {
        match self {
            Cond::Lt(a, k) | Cond::Ge(a, k) => f(a, k),
            Cond::And(a, b) => {
                a.affs_mut(f);
                b.affs_mut(f);
            }
            Cond::InBounds(..) => {}
        }
    }

    /// The iterators it mentions, added to `out`.
    pub fn vars(&self, out: &mut BTreeSet<String>) {
        match self {
            Cond::Lt(a, _) | Cond::Ge(a, _) => out.extend(a.terms.iter().map(|t| t.1.clone())),
            Cond::And(a, b) => {
                a.vars(out);
                b.vars(out);
            }
            Cond::InBounds(_, subs) => {
                for s in subs {
                    out.extend(s.terms.iter().map(|t| t.1.clone()));
                }
            }
        }
    }

    fn rename(&mut self, map: &BTreeMap<String, String>) {
        match self {
            Cond::Lt(a, _) | Cond::Ge(a, _) => a.rename(map),
            Cond::And(a, b) => {
                a.rename(map);
                b.rename(map);
            }
            Cond::InBounds(_, subs) => subs.iter_mut().for_each(|s| s.rename(map)),
        }
    }
}

/// A statement's body, or part of it.
#[derive(Clone, Debug, PartialEq)]
pub enum Expr {
    Read(String, Vec<Aff>),
    Int(i64),
    Flt(f64),
    /// An iterator's value, converted to the program's element type
    /// (`float32(i)`).
    Iter(String),
    /// A `where` let of the statement, by name.
    Let(String),
    Add(Box<Expr>, Box<Expr>),
    Sub(Box<Expr>, Box<Expr>),
    Mul(Box<Expr>, Box<Expr>),
    /// `/`: floor division for integers (by zero an error), IEEE for floats.
    Div(Box<Expr>, Box<Expr>),
    Neg(Box<Expr>),
    /// The element type's maximum builtin (`fmaxf`, `fmax` or `max`).
    Max(Box<Expr>, Box<Expr>),
    Min(Box<Expr>, Box<Expr>),
    Sel(Cond, Box<Expr>, Box<Expr>),
}

pub fn add(a: Expr, b: Expr) -> Expr {
    Expr::Add(Box::new(a), Box::new(b))
}

pub fn sub(a: Expr, b: Expr) -> Expr {
    Expr::Sub(Box::new(a), Box::new(b))
}

pub fn mul(a: Expr, b: Expr) -> Expr {
    Expr::Mul(Box::new(a), Box::new(b))
}

pub fn sel(c: Cond, a: Expr, b: Expr) -> Expr {
    Expr::Sel(c, Box::new(a), Box::new(b))
}

/// The names of the maximum and minimum builtins of an element type.
fn extrema(dtype: DType) -> (&'static str, &'static str) {
    match dtype {
        DType::F32 => ("fmaxf", "fminf"),
        DType::F64 => ("fmax", "fmin"),
        _ => ("max", "min"),
    }
}

impl Expr {
    /// The text at precedence `outer` (0: `?:`, 1: `+ -`, 2: `* /`, 3:
    /// unary minus, 4: atoms), parenthesized when it binds more loosely.
    pub fn render(&self, dtype: DType, outer: u8) -> String {
        let (prec, s) = match self {
            Expr::Read(t, subs) => {
                let subs: Vec<String> = subs.iter().map(Aff::render).collect();
                (4, format!("{t}({})", subs.join(", ")))
            }
            Expr::Int(c) if *c < 0 => (3, c.to_string()),
            Expr::Int(c) => (4, c.to_string()),
            Expr::Flt(x) if *x < 0.0 => (3, format!("{x:?}")),
            Expr::Flt(x) => (4, format!("{x:?}")),
            Expr::Iter(v) => (4, format!("{dtype}({v})")),
            Expr::Let(v) => (4, v.clone()),
            Expr::Add(a, b) => (
                1,
                format!("{} + {}", a.render(dtype, 1), b.render(dtype, 2)),
            ),
            Expr::Sub(a, b) => (
                1,
                format!("{} - {}", a.render(dtype, 1), b.render(dtype, 2)),
            ),
            Expr::Mul(a, b) => (
                2,
                format!("{} * {}", a.render(dtype, 2), b.render(dtype, 3)),
            ),
            Expr::Div(a, b) => (
                2,
                format!("{} / {}", a.render(dtype, 2), b.render(dtype, 3)),
            ),
            Expr::Neg(a) => (3, format!("-{}", a.render(dtype, 4))),
            Expr::Max(a, b) => (
                4,
                format!(
                    "{}({}, {})",
                    extrema(dtype).0,
                    a.render(dtype, 0),
                    b.render(dtype, 0)
                ),
            ),
            Expr::Min(a, b) => (
                4,
                format!(
                    "{}({}, {})",
                    extrema(dtype).1,
                    a.render(dtype, 0),
                    b.render(dtype, 0)
                ),
            ),
            Expr::Sel(c, a, b) => (
                0,
                format!(
                    "{} ? {} : {}",
                    c.render(),
                    a.render(dtype, 1),
                    b.render(dtype, 0)
                ),
            ),
        };
        if prec < outer {
            format!("({s})")
        } else {
            s
        }
    }

    pub fn children_mut(&mut self) -> Vec<&mut Expr> {
        match self {
            Expr::Add(a, b)
            | Expr::Sub(a, b)
            | Expr::Mul(a, b)
            | Expr::Div(a, b)
            | Expr::Max(a, b)
            | Expr::Min(a, b)
            | Expr::Sel(_, a, b) => vec![a, b],
            Expr::Neg(a) => vec![a],
            _ => Vec::new(),
        }
    }

    pub fn children(&self) -> Vec<&Expr> {
        match self {
            Expr::Add(a, b)
            | Expr::Sub(a, b)
            | Expr::Mul(a, b)
            | Expr::Div(a, b)
            | Expr::Max(a, b)
            | Expr::Min(a, b)
            | Expr::Sel(_, a, b) => vec![a, b],
            Expr::Neg(a) => vec![a],
            _ => Vec::new(),
        }
    }

    /// Every node, pre-order.
    pub fn nodes(&self) -> Vec<&Expr> {
        let mut out = vec![self];
        for c in self.children() {
            out.extend(c.nodes());
        }
        out
    }

    /// Calls `f` on every node, pre-order (after `f` changes a node, its
    /// new children are visited).
    pub fn walk_mut(&mut self, f: &mut dyn FnMut(&mut Expr)) {
        f(self);
        for c in self.children_mut() {
            c.walk_mut(f);
        }
    }

    /// The `n`-th node in pre-order.
    pub fn nth_mut(&mut self, n: &mut usize) -> Option<&mut Expr> {
        if *n == 0 {
            return Some(self);
        }
        *n -= 1;
        for c in self.children_mut() {
            if let Some(x) = c.nth_mut(n) {
                return Some(x);
            }
        }
        None
    }

    /// The reads, each with whether it lies in a `?:` branch.
    pub fn reads(&self, in_branch: bool, out: &mut Vec<(String, Vec<Aff>, bool)>) {
        match self {
            Expr::Read(t, subs) => out.push((t.clone(), subs.clone(), in_branch)),
            Expr::Sel(_, a, b) => {
                a.reads(true, out);
                b.reads(true, out);
            }
            _ => self.children().iter().for_each(|c| c.reads(in_branch, out)),
        }
    }

    /// For every node, pre-order: whether it lies in a `?:` branch.
    pub fn branch_flags(&self, in_branch: bool, out: &mut Vec<bool>) {
        out.push(in_branch);
        let inner = in_branch || matches!(self, Expr::Sel(..));
        for c in self.children() {
            c.branch_flags(inner, out);
        }
    }

    /// The iterators it mentions (not through lets).
    pub fn vars(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for n in self.nodes() {
            match n {
                Expr::Read(_, subs) => {
                    for s in subs {
                        out.extend(s.terms.iter().map(|t| t.1.clone()));
                    }
                }
                Expr::Iter(v) => {
                    out.insert(v.clone());
                }
                Expr::Sel(c, ..) => c.vars(&mut out),
                _ => {}
            }
        }
        out
    }

    pub fn has_float(&self) -> bool {
        self.nodes().iter().any(|n| matches!(n, Expr::Flt(_)))
    }

    pub fn rename(&mut self, map: &BTreeMap<String, String>) {
        self.walk_mut(&mut |e| match e {
            Expr::Read(_, subs) => subs.iter_mut().for_each(|a| a.rename(map)),
            Expr::Iter(v) => {
                if let Some(n) = map.get(v) {
                    *v = n.clone();
                }
            }
            Expr::Sel(c, ..) => c.rename(map),
            _ => {}
        });
    }
}

/// How a reduction combines values.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agg {
    Add,
    Mul,
    Max,
    Min,
}

impl Agg {
    fn symbol(self) -> &'static str {
        match self {
            Agg::Add => "+",
            Agg::Mul => "*",
            Agg::Max => "max",
            Agg::Min => "min",
        }
    }
}

/// A statement's operator.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Op {
    Assign,
    /// A reduction that starts from the aggregation's identity (`+=!`).
    Init(Agg),
    /// A reduction onto the tensor's values so far (`+=`).
    Acc(Agg),
}

impl Op {
    pub fn text(self) -> String {
        match self {
            Op::Assign => "=".to_string(),
            Op::Init(a) => format!("{}=!", a.symbol()),
            Op::Acc(a) => format!("{}=", a.symbol()),
        }
    }

    /// Whether out-of-bounds reads skip points (every operator but `=`).
    pub fn reduces(self) -> bool {
        self != Op::Assign
    }
}

/// An iterator's range `[lo, hi)`.
#[derive(Clone, Debug, PartialEq)]
pub struct Iv {
    pub name: String,
    pub lo: i64,
    pub hi: i64,
}

/// `lhs(idx) op body where ranges, lets, exists` (the ranges list every
/// iterator, the left-hand ones first).
#[derive(Clone, Debug, PartialEq)]
pub struct St {
    pub lhs: String,
    pub idx: Vec<String>,
    pub op: Op,
    pub body: Expr,
    pub ranges: Vec<Iv>,
    /// `where name = expr` clauses, in order; the body reads them as
    /// [`Expr::Let`].
    pub lets: Vec<(String, Expr)>,
    /// `exists T(subs)` clauses: reads that only bound range inference.
    pub exists: Vec<(String, Vec<Aff>)>,
    /// How the `where` range of an iterator is written, where the
    /// generator decided it (otherwise: left out when [`Prog::infer`] is
    /// set and inference plainly gives it).
    pub bounds: BTreeMap<String, Bound>,
}

/// How an iterator's range is written.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Bound {
    /// Always as `where v in lo:hi`.
    Where,
    /// Never: the generator made range inference give exactly this range
    /// (from the reads and `exists` clauses).
    Infer,
}

impl St {
    pub fn new(lhs: &str, idx: Vec<String>, op: Op, body: Expr, ranges: Vec<Iv>) -> St {
        St {
            lhs: lhs.to_string(),
            idx,
            op,
            body,
            ranges,
            lets: Vec::new(),
            exists: Vec::new(),
            bounds: BTreeMap::new(),
        }
    }

    pub fn range_map(&self) -> Ranges {
        self.ranges
            .iter()
            .map(|r| (r.name.clone(), (r.lo, r.hi)))
            .collect()
    }

    pub fn range(&self, v: &str) -> (i64, i64) {
        let r = self.ranges.iter().find(|r| r.name == v).expect("a range");
        (r.lo, r.hi)
    }

    /// The ranges of `vars`, in that order.
    pub fn intervals(&self, vars: &[String]) -> Vec<Iv> {
        vars.iter()
            .map(|v| {
                let (lo, hi) = self.range(v);
                Iv {
                    name: v.clone(),
                    lo,
                    hi,
                }
            })
            .collect()
    }

    pub fn reductions(&self) -> Vec<String> {
        self.ranges
            .iter()
            .filter(|r| !self.idx.contains(&r.name))
            .map(|r| r.name.clone())
            .collect()
    }

    /// Every read of the statement (body and lets), each with whether it
    /// lies in a `?:` branch.
    pub fn all_reads(&self) -> Vec<(String, Vec<Aff>, bool)> {
        let mut reads = Vec::new();
        for (_, e) in &self.lets {
            e.reads(false, &mut reads);
        }
        self.body.reads(false, &mut reads);
        reads
    }

    pub fn reads_tensor(&self, t: &str) -> bool {
        self.all_reads().iter().any(|r| r.0 == t) || self.exists.iter().any(|r| r.0 == t)
    }

    pub fn rename(&mut self, map: &BTreeMap<String, String>) {
        self.body.rename(map);
        for (_, e) in &mut self.lets {
            e.rename(map);
        }
        for (_, subs) in &mut self.exists {
            subs.iter_mut().for_each(|a| a.rename(map));
        }
        for v in &mut self.idx {
            *v = map[v].clone();
        }
        for r in &mut self.ranges {
            r.name = map[&r.name].clone();
        }
        self.bounds = std::mem::take(&mut self.bounds)
            .into_iter()
            .map(|(v, b)| (map[&v].clone(), b))
            .collect();
    }
}

/// A dimension of an input: a size symbol or a constant.
#[derive(Clone, Debug, PartialEq)]
pub enum Dim {
    Sym(String),
    Const(i64),
}

#[derive(Clone, Debug, PartialEq)]
pub struct Input {
    pub name: String,
    pub dims: Vec<Dim>,
}

/// A def over tensors of one element type.
#[derive(Clone, Debug, PartialEq)]
pub struct Prog {
    pub dtype: DType,
    pub inputs: Vec<Input>,
    pub stmts: Vec<St>,
    pub outputs: Vec<String>,
    pub sizes: Sizes,
    /// Leave out `where` ranges that inference gives anyway.
    pub infer: bool,
    /// Write `where` bounds as size symbols where one has that value.
    pub symbolic: bool,
}

impl Prog {
    /// The shape of every tensor (a temporary's from its first statement:
    /// the upper bounds of its left-hand ranges).
    pub fn shapes(&self) -> BTreeMap<String, Vec<i64>> {
        let mut out = BTreeMap::new();
        for x in &self.inputs {
            let dims = x
                .dims
                .iter()
                .map(|d| match d {
                    Dim::Sym(s) => self.sizes[s],
                    Dim::Const(n) => *n,
                })
                .collect();
            out.insert(x.name.clone(), dims);
        }
        for s in &self.stmts {
            if !out.contains_key(&s.lhs) {
                let shape = s.idx.iter().map(|v| s.range(v).1).collect();
                out.insert(s.lhs.clone(), shape);
            }
        }
        out
    }

    pub fn has_float(&self) -> bool {
        self.stmts
            .iter()
            .any(|s| s.body.has_float() || s.lets.iter().any(|(_, e)| e.has_float()))
    }

    /// Every name in use (tensors, iterators and lets), for fresh names.
    pub fn names(&self) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.inputs.iter().map(|x| x.name.clone()).collect();
        for s in &self.stmts {
            out.insert(s.lhs.clone());
            out.extend(s.ranges.iter().map(|r| r.name.clone()));
            out.extend(s.lets.iter().map(|l| l.0.clone()));
        }
        out
    }

    pub fn fresh(&self, prefix: &str) -> String {
        let names = self.names();
        (0..)
            .map(|k| format!("{prefix}{k}"))
            .find(|n| !names.contains(n))
            .expect("a fresh name")
    }

    /// The TC text of the program as one def `name`.
    pub fn source(&self, name: &str) -> String {
        let params: Vec<String> = self
            .inputs
            .iter()
            .map(|x| {
                let dims: Vec<String> = x
                    .dims
                    .iter()
                    .map(|d| match d {
                        Dim::Sym(s) => s.clone(),
                        Dim::Const(n) => n.to_string(),
                    })
                    .collect();
                format!("{}({}) {}", self.dtype, dims.join(", "), x.name)
            })
            .collect();
        let mut text = format!(
            "def {name}({}) -> ({}) {{\n",
            params.join(", "),
            self.outputs.join(", ")
        );
        let all = self.shapes();
        let mut known: BTreeMap<String, Vec<i64>> = self
            .inputs
            .iter()
            .map(|x| (x.name.clone(), all[&x.name].clone()))
            .collect();
        for s in &self.stmts {
            let _ = writeln!(text, "  {}", self.render_stmt(s, &known));
            known.insert(s.lhs.clone(), all[&s.lhs].clone());
        }
        text.push_str("}\n");
        text
    }

    fn render_stmt(&self, s: &St, known: &BTreeMap<String, Vec<i64>>) -> String {
        let mut reads = s.all_reads();
        reads.extend(
            s.exists
                .iter()
                .map(|(t, subs)| (t.clone(), subs.clone(), false)),
        );
        let bound = |v: i64| -> String {
            if self.symbolic {
                if let Some((name, _)) = self.sizes.iter().find(|(_, &n)| n == v) {
                    return name.clone();
                }
                if let Some((name, _)) = self.sizes.iter().find(|(_, &n)| n == v + 1) {
                    return format!("{name}-1");
                }
            }
            v.to_string()
        };
        let mut clauses = Vec::new();
        for r in &s.ranges {
            // Inference gives `0:hi` when every subscript outside `?:`
            // that mentions the iterator is the iterator alone, over a
            // dimension of extent `hi` (as is the left side's, when its
            // shape is known).
            let mut extents = Vec::new();
            let mut other = false;
            for (t, subs, _) in reads.iter().filter(|x| !x.2) {
                for (d, a) in subs.iter().enumerate() {
                    if a.alone() == Some(r.name.as_str()) {
                        extents.push(known[t][d]);
                    } else if a.mentions(&r.name) {
                        other = true;
                    }
                }
            }
            if let Some(shape) = known.get(&s.lhs) {
                let d = s.idx.iter().position(|v| *v == r.name);
                extents.extend(d.map(|d| shape[d]));
            }
            let inferred = !other && !extents.is_empty() && extents.iter().all(|&e| e == r.hi);
            let written = match s.bounds.get(&r.name) {
                Some(Bound::Where) => true,
                Some(Bound::Infer) => false,
                None => !(self.infer && r.lo == 0 && inferred),
            };
            if written {
                clauses.push(format!("{} in {}:{}", r.name, r.lo, bound(r.hi)));
            }
        }
        for (name, e) in &s.lets {
            clauses.push(format!("{name} = {}", e.render(self.dtype, 0)));
        }
        for (t, subs) in &s.exists {
            let subs: Vec<String> = subs.iter().map(Aff::render).collect();
            clauses.push(format!("exists {t}({})", subs.join(", ")));
        }
        let mut text = format!(
            "{}({}) {} {}",
            s.lhs,
            s.idx.join(", "),
            s.op.text(),
            s.body.render(self.dtype, 0)
        );
        if !clauses.is_empty() {
            let _ = write!(text, " where {}", clauses.join(", "));
        }
        text
    }
}
