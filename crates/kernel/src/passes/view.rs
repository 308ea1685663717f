//! `view`: tags `#view #library` every root step that copies one root
//! buffer into a temporary element for element in row-major order — a
//! reshape, flatten, squeeze or unsqueeze, or a transpose that moves only
//! axes of size 1 — so that the runtime gives the
//! temporary the source's memory and skips the step.
//!
//! The step must write its result `Y`, a root temporary that no other root
//! statement writes, through one `out` view of aggregation `assign`, size 1
//! in every dimension and the block's indices as access (their ranges `Y`'s
//! sizes, no constraints, no index passed from a parent); read one other
//! root buffer `X` of `Y`'s element type and element count through one `in`
//! view; and store into `Y` the value loaded or gathered from `X`, with no
//! child block and no other store. Both buffers must be row-major, and no
//! root statement after the step may write `X`. The read's flat offset in
//! `X` — the view's access and, for a gather, its computed subscripts, as
//! integer expressions of the indices with additions, multiplications by
//! constants and floor divisions and modulos by positive constants — must
//! equal the write's flat offset in `Y` for every point, which this pass
//! proves symbolically: `c * (a / c) + a % c = a` for every `a`, applied
//! until no floor quotient is left whose coefficient `c` divides.
//!
//! Requires: a verified kernel (run it right after `inline`, while each
//! comprehension is one root step). Guarantees: the same kernel with tags
//! added; a tagged step stores into each element of `Y` the element of `X`
//! at the same row-major position, so `Y` may share `X`'s memory for as
//! long as both live; `#library` keeps the later passes from rewriting it.

use std::collections::{BTreeMap, HashMap, HashSet};

use ir::{BinOp, DType, Value};

use crate::{row_major, Affine, Agg, Block, Op, Pass, RefDir, Refinement, StmtKind, Target};

#[derive(Debug)]
pub struct View;

/// The tag of a step whose result is a view of its input.
pub const TAG: &str = "view";

impl Pass for View {
    fn name(&self) -> &'static str {
        "view"
    }

    fn run(&self, root: &mut Block, _target: &Target) -> Result<(), String> {
        let views: Vec<usize> = (0..root.stmts.len())
            .filter(|&k| match &root.stmts[k].kind {
                StmtKind::Block(b) => !b.is_library() && copies_in_place(root, k, b),
                _ => false,
            })
            .collect();
        for k in views {
            if let StmtKind::Block(b) = &mut root.stmts[k].kind {
                b.tags.insert(TAG.to_string());
                b.tags.insert("library".to_string());
            }
        }
        Ok(())
    }
}

/// Whether root step `k`, block `b`, copies a root buffer into a root
/// temporary in row-major order, as the module doc says.
fn copies_in_place(root: &Block, k: usize, b: &Block) -> bool {
    let Some((out, input)) = written_and_read(b) else {
        return false;
    };
    let (Some(y), Some(x)) = (root_ref(root, out), root_ref(root, input)) else {
        return false;
    };
    let len = |r: &Refinement| r.shape.iter().map(|d| d.size).product::<u64>();
    let row_major_buffer = |r: &Refinement| {
        row_major(&r.shape.iter().map(|d| d.size).collect::<Vec<_>>(), r.dtype)
            .is_some_and(|dims| dims == r.shape)
    };
    let plain = out.dir == RefDir::Out
        && input.dir == RefDir::In
        && out.agg == Agg::Assign
        && b.visits_each_element(out, y)
        && y.tags.contains("temp")
        && y.into != x.into
        && y.dtype == x.dtype
        && len(y) == len(x)
        && row_major_buffer(y)
        && row_major_buffer(x);
    if !plain || !only_writer(root, k, &y.into) || written_after(root, k, &x.into) {
        return false;
    }
    // An index of range 1 is always 0, so a transpose that moves only
    // axes of size 1 copies in place too.
    let unit: HashSet<&str> = b
        .idxs
        .iter()
        .filter(|i| i.range == 1 && i.affine.is_none())
        .map(|i| i.name.as_str())
        .collect();
    // The flat position written, in elements.
    let mut written = Form::default();
    for (a, d) in out.access.iter().zip(&y.shape) {
        written = written.plus(&Form::affine(a, &unit).times(d.stride));
    }
    read_offset(b, out, input, x, &unit)
        .is_some_and(|read| read.normalized() == written.normalized())
}

/// A step of two views, a copy's shape: the one it writes (if either is
/// `out`) and the other. The callers check the directions.
pub(crate) fn written_and_read(b: &Block) -> Option<(&Refinement, &Refinement)> {
    let [first, second] = b.refs.as_slice() else {
        return None;
    };
    Some(if first.dir == RefDir::Out {
        (first, second)
    } else {
        (second, first)
    })
}

/// The root buffer that view `r` of a root step refines.
pub(crate) fn root_ref<'a>(root: &'a Block, r: &Refinement) -> Option<&'a Refinement> {
    let from = r.from.as_deref()?;
    root.refs.iter().find(|b| b.into == from)
}

/// Whether root step `k` is the only root statement that writes `name`.
pub(crate) fn only_writer(root: &Block, k: usize, name: &str) -> bool {
    root.stmts
        .iter()
        .enumerate()
        .all(|(j, s)| j == k || !writes(&s.kind, name))
}

/// Whether a root statement after step `k` writes `name`.
pub(crate) fn written_after(root: &Block, k: usize, name: &str) -> bool {
    root.stmts[k + 1..].iter().any(|s| writes(&s.kind, name))
}

fn writes(kind: &StmtKind, name: &str) -> bool {
    match kind {
        StmtKind::Block(b) => b.refs.iter().any(|r| {
            r.from.as_deref() == Some(name) && matches!(r.dir, RefDir::Out | RefDir::InOut)
        }),
        StmtKind::Store { into, .. } => into == name,
        _ => false,
    }
}

/// The flat position in `x` that the value stored into `out` is read
/// from, if the block's statements are only that read, the integer
/// arithmetic of its subscripts, and the store.
fn read_offset(
    b: &Block,
    out: &Refinement,
    input: &Refinement,
    x: &Refinement,
    unit: &HashSet<&str>,
) -> Option<Form> {
    let mut ints: HashMap<&str, Form> = HashMap::new();
    let mut read: HashMap<&str, Form> = HashMap::new();
    let mut stored = None;
    // The view's own offset in `x`, then its element strides.
    let mut base = Form::default();
    for (a, d) in input.access.iter().zip(&x.shape) {
        base = base.plus(&Form::affine(a, unit).times(d.stride));
    }
    for s in &b.stmts {
        match &s.kind {
            StmtKind::LoadIndex { from, into } => {
                ints.insert(into, Form::affine(from, unit));
            }
            StmtKind::Constant {
                into,
                value: Value::Int(v),
                dtype,
            } if dtype.is_int() => {
                ints.insert(into, Form::constant(*v));
            }
            StmtKind::Intrinsic {
                op,
                inputs,
                into,
                dtype,
            } => {
                let arg = |k: usize| inputs.get(k).and_then(|n| ints.get(n.as_str()));
                let form = match (op, inputs.len()) {
                    // A cast to int64 keeps an integer's value.
                    (Op::Cast, 1) if *dtype == DType::I64 => arg(0)?.clone(),
                    (Op::Binary(op), 2) if *dtype == DType::I64 => {
                        let (l, r) = (arg(0)?, arg(1)?);
                        match op {
                            BinOp::Add => l.plus(r),
                            BinOp::Sub => l.plus(&r.times(-1)),
                            BinOp::Mul => match (l.as_constant(), r.as_constant()) {
                                (_, Some(c)) => l.times(c),
                                (Some(c), _) => r.times(c),
                                _ => return None,
                            },
                            BinOp::Div | BinOp::Mod => {
                                let c = r.as_constant().filter(|&c| c > 0)?;
                                Form::atom(Atom::new(*op == BinOp::Div, l.clone(), c))
                            }
                            _ => return None,
                        }
                    }
                    _ => return None,
                };
                ints.insert(into, form);
            }
            StmtKind::Load { from, into } if *from == input.into => {
                read.insert(into, base.clone());
            }
            StmtKind::Gather {
                from,
                indices,
                into,
            } if *from == input.into && indices.len() == input.shape.len() => {
                let mut at = base.clone();
                for (i, d) in indices.iter().zip(&input.shape) {
                    at = at.plus(&ints.get(i.as_str())?.times(d.stride));
                }
                read.insert(into, at);
            }
            StmtKind::Store { from, into } if *into == out.into && stored.is_none() => {
                stored = Some(read.get(from.as_str())?.clone());
            }
            _ => return None,
        }
    }
    stored
}

/// An integer expression of the indices: a constant plus a sum of
/// coefficients times atoms. Zero coefficients are never stored, so equal
/// sums compare equal.
#[derive(Clone, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
struct Form {
    constant: i64,
    terms: BTreeMap<Atom, i64>,
}

/// An index, or a floor quotient or modulo of a form by a positive
/// constant.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Atom {
    Index(String),
    Div(Box<Form>, i64),
    Mod(Box<Form>, i64),
}

impl Atom {
    fn new(div: bool, a: Form, c: i64) -> Atom {
        if div {
            Atom::Div(Box::new(a), c)
        } else {
            Atom::Mod(Box::new(a), c)
        }
    }
}

impl Form {
    fn constant(c: i64) -> Form {
        Form {
            constant: c,
            terms: BTreeMap::new(),
        }
    }

    fn atom(a: Atom) -> Form {
        let mut f = Form::default();
        f.add(a, 1);
        f
    }

    /// `a` with the indices of `unit` (range 1, so always 0) left out.
    fn affine(a: &Affine, unit: &HashSet<&str>) -> Form {
        let mut f = Form::constant(a.constant);
        for (n, &c) in a.terms.iter().filter(|(n, _)| !unit.contains(n.as_str())) {
            f.add(Atom::Index(n.clone()), c);
        }
        f
    }

    fn as_constant(&self) -> Option<i64> {
        self.terms.is_empty().then_some(self.constant)
    }

    fn add(&mut self, a: Atom, c: i64) {
        let e = self.terms.entry(a.clone()).or_insert(0);
        *e += c;
        if *e == 0 {
            self.terms.remove(&a);
        }
    }

    fn plus(&self, other: &Form) -> Form {
        let mut f = self.clone();
        f.constant += other.constant;
        for (a, &c) in &other.terms {
            f.add(a.clone(), c);
        }
        f
    }

    fn times(&self, k: i64) -> Form {
        if k == 0 {
            return Form::default();
        }
        Form {
            constant: self.constant * k,
            terms: self
                .terms
                .iter()
                .map(|(a, &c)| (a.clone(), c * k))
                .collect(),
        }
    }

    /// The form with every `k * (a / c)` whose `k` is a multiple of `c`
    /// rewritten as `(k / c) * (a - a % c)`, inside atoms first, until none
    /// is left; quotients and modulos of constants are folded. Each
    /// rewrite removes a quotient, so this ends.
    fn normalized(&self) -> Form {
        let mut f = self.clone();
        loop {
            let next = f.rewritten();
            if next == f {
                return f;
            }
            f = next;
        }
    }

    /// One round of [`Form::normalized`]'s rewrites over the terms.
    fn rewritten(&self) -> Form {
        let mut f = Form::constant(self.constant);
        for (a, &c) in &self.terms {
            match a {
                Atom::Index(_) => f.add(a.clone(), c),
                Atom::Div(x, d) | Atom::Mod(x, d) => {
                    let x = x.normalized();
                    let div = matches!(a, Atom::Div(..));
                    match x.as_constant() {
                        Some(v) => {
                            let folded = if div {
                                v.div_euclid(*d)
                            } else {
                                v.rem_euclid(*d)
                            };
                            f.constant += c * folded;
                        }
                        None if div && c % d == 0 => {
                            let q = c / d;
                            f = f.plus(&x.times(q));
                            f.add(Atom::Mod(Box::new(x), *d), -q);
                        }
                        None => f.add(Atom::new(div, x, *d), c),
                    }
                }
            }
        }
        f
    }
}
