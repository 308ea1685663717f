//! A derivation state: OLLIE's expression with its scopes, as a def.
//!
//! The def is at concrete sizes and every statement is a comprehension:
//! a scope is an intermediate tensor (a temporary) and the comprehension
//! defining it. Each statement has a [`Status`]: open to further
//! derivation, or instantiated (OLLIE §4.3) as a predefined operator or an
//! eOperator, after which rules leave it alone. A state whose statements
//! are all instantiated is a program the search can return.
//!
//! Requires a def whose sizes are bound (every range and shape a
//! constant); its lets are expanded into the bodies. Guarantees: the edits here keep the def verifiable (fresh
//! names never collide with the def's tensors or a statement's iterators;
//! a statement is never moved before one whose result it reads).

use std::collections::HashSet;

use ir::{Comprehension, DType, Def, Expr, IterRange, SizeExpr, Stmt, TensorDecl, TensorRole};

/// What the search has decided about a statement.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Status {
    Open,
    /// Matched to a predefined operator (OLLIE's operator matching).
    Operator(Operator),
    /// Generated code for what no operator matches.
    EOperator,
}

/// The predefined operators an instantiated statement runs as: those of
/// the iterator mapping table. A matmul runs as the matmul library, a
/// convolution as tessera's channel-blocked kernel, the others as
/// tessera's generated kernel for the statement.
pub use ir::opmatch::Operator;

/// An operator's name in explanations.
pub fn operator_name(op: Operator) -> &'static str {
    match op {
        Operator::Matmul => "matmul",
        Operator::Conv => "conv",
        Operator::ConvTranspose => "transposed conv",
        Operator::G2bmm => "G2BMM",
        Operator::Gbmm => "GBMM",
        Operator::Elementwise => "elementwise",
    }
}

/// A def of comprehensions with a status per statement.
#[derive(Clone, Debug, PartialEq)]
pub struct State {
    pub def: Def,
    pub status: Vec<Status>,
    /// Per statement, the expression it derives from (OLLIE derives each
    /// expression of a program on its own: Algorithm 1): the original
    /// statement's index, or a new one for a part cut off by expression
    /// splitting.
    pub root: Vec<usize>,
}

impl State {
    /// The state of a def at bound sizes, every statement open; an error
    /// names a statement that is no comprehension or a size left unbound.
    pub fn new(def: Def) -> Result<State, String> {
        for (k, s) in def.stmts.iter().enumerate() {
            let Stmt::Comp(c) = s else {
                return Err(format!(
                    "statement {} of `{}` is a call: derivation works on comprehensions",
                    k + 1,
                    def.name
                ));
            };
            for r in &c.ranges {
                if !r.lo.is_const() || !r.hi.is_const() {
                    return Err(format!(
                        "the range of `{}` in statement {} of `{}` is not bound to a number: give every size",
                        r.name,
                        k + 1,
                        def.name
                    ));
                }
            }
        }
        for t in &def.tensors {
            if t.shape.iter().any(|d| !d.is_const()) {
                return Err(format!(
                    "tensor `{}` of `{}` has a shape not bound to numbers: give every size",
                    t.name, def.name
                ));
            }
        }
        if def.stmts.is_empty() {
            return Err(format!("`{}` has no comprehension to derive", def.name));
        }
        // Lets are expanded once: the rules substitute iterators in plain
        // expressions, and a condition on a let's value is then visible to
        // the constant propagation.
        let mut def = def;
        for s in &mut def.stmts {
            if let Stmt::Comp(c) = s {
                let body = super::rules::expand_lets(&c.body, &c.lets);
                c.lets.clear();
                // Subscripts in canonical form from the start (an inlined
                // call's `f * 1 / 8 * 8 + c` is `c` over its box).
                let snapshot = c.clone();
                c.body =
                    super::subscript::substitute(body, &Default::default(), &bounds(&snapshot));
            }
        }
        let status = vec![Status::Open; def.stmts.len()];
        let root = (0..def.stmts.len()).collect();
        Ok(State { def, status, root })
    }

    pub fn statements(&self) -> usize {
        self.def.stmts.len()
    }

    /// Statement `k` (every statement is a comprehension).
    pub fn comp(&self, k: usize) -> &Comprehension {
        match &self.def.stmts[k] {
            Stmt::Comp(c) => c,
            _ => unreachable!("a derivation state holds comprehensions only"),
        }
    }

    pub fn comp_mut(&mut self, k: usize) -> &mut Comprehension {
        match &mut self.def.stmts[k] {
            Stmt::Comp(c) => c,
            _ => unreachable!("a derivation state holds comprehensions only"),
        }
    }

    /// The concrete shape of a tensor.
    pub fn shape(&self, tensor: &str) -> Option<Vec<i64>> {
        self.def
            .tensor(tensor)?
            .shape
            .iter()
            .map(SizeExpr::as_const)
            .collect()
    }

    pub fn dtype(&self, tensor: &str) -> Option<DType> {
        self.def.tensor(tensor).map(|t| t.dtype)
    }

    /// Whether `tensor` is a temporary (a scope), not a parameter or result.
    pub fn is_temp(&self, tensor: &str) -> bool {
        self.def
            .tensor(tensor)
            .is_some_and(|t| t.role == TensorRole::Temp)
    }

    /// The statements writing `tensor`, in order.
    pub fn writers(&self, tensor: &str) -> Vec<usize> {
        (0..self.statements())
            .filter(|&k| self.comp(k).tensor == tensor)
            .collect()
    }

    /// The statements reading `tensor`, in order.
    pub fn readers(&self, tensor: &str) -> Vec<usize> {
        (0..self.statements())
            .filter(|&k| self.def.stmts[k].reads().contains(&tensor))
            .collect()
    }

    /// A new temporary of `shape`, with a name no tensor has.
    pub fn fresh_tensor(&mut self, dtype: DType, shape: &[i64]) -> String {
        let taken: HashSet<&str> = self.def.tensors.iter().map(|t| t.name.as_str()).collect();
        let name = (1..)
            .map(|k| format!("S{k}"))
            .find(|n| !taken.contains(n.as_str()))
            .unwrap_or_default();
        self.def.tensors.push(TensorDecl {
            name: name.clone(),
            dtype,
            shape: shape.iter().map(|&d| SizeExpr::constant(d)).collect(),
            role: TensorRole::Temp,
        });
        name
    }

    /// Replaces statement `k` by `with`, in order, each with its status.
    pub fn splice(&mut self, k: usize, with: Vec<(Comprehension, Status)>) {
        let (stmts, status): (Vec<Stmt>, Vec<Status>) =
            with.into_iter().map(|(c, s)| (Stmt::Comp(c), s)).unzip();
        let roots = vec![self.root[k]; stmts.len()];
        self.def.stmts.splice(k..=k, stmts);
        self.status.splice(k..=k, status);
        self.root.splice(k..=k, roots);
    }

    /// Inserts `c` before statement `k`, with `status`, deriving from the
    /// same expression as `k`.
    pub fn insert(&mut self, k: usize, c: Comprehension, status: Status) {
        let root = self.root[k];
        self.def.stmts.insert(k, Stmt::Comp(c));
        self.status.insert(k, status);
        self.root.insert(k, root);
    }

    /// Removes statement `k`.
    pub fn remove(&mut self, k: usize) {
        self.def.stmts.remove(k);
        self.status.remove(k);
        self.root.remove(k);
    }

    /// An expression number no statement derives from yet.
    pub fn fresh_root(&self) -> usize {
        self.root.iter().max().map_or(0, |m| m + 1)
    }

    /// Removes statements writing temporaries that nothing reads, and the
    /// declarations of temporaries no statement mentions.
    pub fn prune(&mut self) {
        loop {
            let dead = (0..self.statements()).rev().find(|&k| {
                let t = &self.comp(k).tensor;
                self.is_temp(t) && self.readers(t).is_empty()
            });
            let Some(k) = dead else { break };
            self.remove(k);
        }
        let used: HashSet<String> = self
            .def
            .stmts
            .iter()
            .flat_map(|s| {
                let mut v: Vec<String> = s.reads().into_iter().map(str::to_string).collect();
                v.extend(s.written().into_iter().map(str::to_string));
                v
            })
            .collect();
        self.def
            .tensors
            .retain(|t| t.role != TensorRole::Temp || used.contains(&t.name));
    }
}

/// The half-open range of iterator `name` of `c`.
pub fn range(c: &Comprehension, name: &str) -> Option<(i64, i64)> {
    let r = c.range(name)?;
    Some((r.lo.as_const()?, r.hi.as_const()?))
}

/// The inclusive bounds of every iterator of `c`, as the subscript algebra
/// asks them.
pub fn bounds(c: &Comprehension) -> impl Fn(&str) -> Option<(i64, i64)> + '_ {
    move |n| range(c, n).and_then(|(lo, hi)| (hi > lo).then_some((lo, hi - 1)))
}

/// A range `name in lo:hi`.
pub fn iter_range(name: &str, lo: i64, hi: i64) -> IterRange {
    IterRange {
        name: name.to_string(),
        lo: SizeExpr::constant(lo),
        hi: SizeExpr::constant(hi),
    }
}

/// A name for a new iterator of `c`, starting from `base`.
pub fn fresh_iter(c: &Comprehension, base: &str) -> String {
    (0..)
        .map(|k| {
            if k == 0 {
                base.to_string()
            } else {
                format!("{base}{k}")
            }
        })
        .find(|n| c.range(n).is_none() && !c.lets.iter().any(|(l, _)| l == n))
        .unwrap_or_default()
}

/// The reads of `e` that are not under a `?:` branch: those a reduction
/// skips when out of bounds.
pub fn unguarded_reads(e: &Expr) -> Vec<(&str, &[Expr])> {
    let mut out = Vec::new();
    fn go<'a>(e: &'a Expr, out: &mut Vec<(&'a str, &'a [Expr])>) {
        match e {
            Expr::Read(t, ix) => out.push((t.as_str(), ix.as_slice())),
            Expr::Select(c, _, _) => go(c, out),
            _ => {
                for c in e.children() {
                    go(c, out);
                }
            }
        }
    }
    go(e, &mut out);
    out
}
