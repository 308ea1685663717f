//! Random programs against the equivalence verifier (`opt::verify`).
//!
//! A seeded generator (`testkit::Rng`; the cases are the same on every run)
//! writes multi-linear Tensor Comprehensions defs over float tensors,
//! small (iterator ranges of 1 to 6 points) so the interpreter is quick:
//! ranks 1 to 4; `+=!` contractions (matmul-like, transposed operands,
//! several reduction iterators); convolutions whose padding is
//! out-of-range reads that a reduction skips, with strided and dilated
//! subscripts (`2*h + x`, `h + 2*x`, `h + x - 1`, `h - x + 2`); `=`
//! statements with affine subscripts, slices (`where i in 2:5`, the rows
//! below staying zero), elementwise products of different inputs and sums
//! of several terms; concatenation and padding by `?:` on an iterator
//! condition (`i < 3 ? A(i) : B(i - 3)`, three-way, `i >= 1 && i < 4 ?
//! A(i - 1) : 0`); chains of two or three statements through temporaries
//! (read transposed, shifted, diagonally, padded), and two independent
//! temporaries read by one statement; `+=` onto an earlier result; literal
//! coefficients (integers, and dyadic floats such as 0.5); a second
//! output. `where` ranges are written out, or left to inference where it
//! gives the same.
//!
//! Every base program `f` is paired with
//!
//! - a copy rewritten by rules that keep it equivalent (operands of `*` or
//!   `+` swapped, a reduction range split into `+=!` and `+=` statements,
//!   an output split along a dimension into two temporaries merged by
//!   `?:`, a subexpression or a whole padded body moved into a temporary
//!   read back transposed, a temporary transposed, independent statements
//!   reordered, iterators renamed, a sum split into two statements, a
//!   product distributed over a sum, `e` written `0.5 * (e + e)`), which
//!   the verifier must call equivalent (and the interpreter must agree on,
//!   which checks the generator: in mod-p mode, or in real mode with a
//!   tolerance when there are float literals);
//! - copies (without float literals) with one change: a literal, a
//!   subscript's offset or coefficient, a range bound, a `?:` condition's
//!   constant, a `+` made a `-`, two subscripts of a read swapped, or an
//!   update `T(..) += T(..)` (or `+= 1`) of a small box added. Their true
//!   differing elements come from the reference interpreter in mod-p mode
//!   on random residues: the verdict must be "not equivalent" exactly when
//!   there are some, and the reported regions must be exactly those
//!   elements. (A change that makes a program invalid, a read out of
//!   bounds in an `=`, is dropped.)
//!
//! A failure prints the case, its seed, both defs, the sizes, the regions
//! and the true differences (`VERIFY_RANDOM_CASES=n` runs more or fewer
//! cases; `--nocapture` prints what was covered).
//! `hand_written_pairs_agree_with_the_interpreter` checks the same on
//! programs written out, with their regions. Three verifier bugs found
//! while writing this test are regressed (`outputs_of_different_ranks_
//! that_both_differ`, the last hand-written pair, and
//! `reads_along_other_directions`).

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::fmt::Write as _;
use std::time::Instant;

use interp::{Arg, Mode, Tensor};
use ir::DType;
use opt::verify::{verify, Method, Options, Region, Report, Verdict};
use testkit::Rng;

/// Base programs; each gives one equivalent pair and, without float
/// literals, up to two perturbed ones.
const CASES: u64 = 1000;
const SEED: u64 = 0x5eed_7e55_e7a0_0001;
/// Perturbations tried per base before giving up (one may make a read
/// fall out of bounds, which is an error rather than a program).
const ATTEMPTS: usize = 8;

// ---------------------------------------------------------------------
// Programs.

/// `sum(coef * iterator) + c`.
#[derive(Clone, Debug, PartialEq)]
struct Aff {
    terms: Vec<(i64, String)>,
    c: i64,
}

/// Iterator ranges `[lo, hi)` by name.
type Ranges = BTreeMap<String, (i64, i64)>;

impl Aff {
    fn var(v: &str) -> Aff {
        Aff {
            terms: vec![(1, v.to_string())],
            c: 0,
        }
    }

    fn konst(c: i64) -> Aff {
        Aff {
            terms: Vec::new(),
            c,
        }
    }

    fn alone(&self) -> Option<&str> {
        match &self.terms[..] {
            [(1, v)] if self.c == 0 => Some(v),
            _ => None,
        }
    }

    /// The least and greatest values over the box.
    fn interval(&self, r: &Ranges) -> (i64, i64) {
        let (mut lo, mut hi) = (self.c, self.c);
        for (a, v) in &self.terms {
            let (l, h) = r[v];
            let (x, y) = (a * l, a * (h - 1));
            lo += x.min(y);
            hi += x.max(y);
        }
        (lo, hi)
    }

    fn render(&self) -> String {
        let mut s = String::new();
        for (a, v) in &self.terms {
            let term = match a.abs() {
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
}

/// A condition on iterators.
#[derive(Clone, Debug, PartialEq)]
enum Cond {
    Lt(Aff, i64),
    Ge(Aff, i64),
    And(Box<Cond>, Box<Cond>),
}

impl Cond {
    fn render(&self) -> String {
        match self {
            Cond::Lt(a, k) => format!("{} < {k}", a.render()),
            Cond::Ge(a, k) => format!("{} >= {k}", a.render()),
            Cond::And(a, b) => format!("{} && {}", a.render(), b.render()),
        }
    }

    fn affs_mut(&mut self, f: &mut dyn FnMut(&mut Aff, &mut i64)) {
        match self {
            Cond::Lt(a, k) | Cond::Ge(a, k) => f(a, k),
            Cond::And(a, b) => {
                a.affs_mut(f);
                b.affs_mut(f);
            }
        }
    }

    fn vars(&self, out: &mut BTreeSet<String>) {
        match self {
            Cond::Lt(a, _) | Cond::Ge(a, _) => out.extend(a.terms.iter().map(|t| t.1.clone())),
            Cond::And(a, b) => {
                a.vars(out);
                b.vars(out);
            }
        }
    }
}

/// A statement's body.
#[derive(Clone, Debug, PartialEq)]
enum E {
    Read(String, Vec<Aff>),
    Int(i64),
    Flt(f64),
    Add(Box<E>, Box<E>),
    Sub(Box<E>, Box<E>),
    Mul(Box<E>, Box<E>),
    Neg(Box<E>),
    Sel(Cond, Box<E>, Box<E>),
}

fn add(a: E, b: E) -> E {
    E::Add(Box::new(a), Box::new(b))
}

fn mul(a: E, b: E) -> E {
    E::Mul(Box::new(a), Box::new(b))
}

fn sel(c: Cond, a: E, b: E) -> E {
    E::Sel(c, Box::new(a), Box::new(b))
}

impl E {
    fn render(&self, outer: u8) -> String {
        let (prec, s) = match self {
            E::Read(t, subs) => {
                let subs: Vec<String> = subs.iter().map(Aff::render).collect();
                (4, format!("{t}({})", subs.join(", ")))
            }
            E::Int(c) if *c < 0 => (3, c.to_string()),
            E::Int(c) => (4, c.to_string()),
            E::Flt(x) => (4, format!("{x:?}")),
            E::Add(a, b) => (1, format!("{} + {}", a.render(1), b.render(2))),
            E::Sub(a, b) => (1, format!("{} - {}", a.render(1), b.render(2))),
            E::Mul(a, b) => (2, format!("{} * {}", a.render(2), b.render(3))),
            E::Neg(a) => (3, format!("-{}", a.render(4))),
            E::Sel(c, a, b) => (
                0,
                format!("{} ? {} : {}", c.render(), a.render(1), b.render(0)),
            ),
        };
        if prec < outer {
            format!("({s})")
        } else {
            s
        }
    }

    fn children_mut(&mut self) -> Vec<&mut E> {
        match self {
            E::Add(a, b) | E::Sub(a, b) | E::Mul(a, b) | E::Sel(_, a, b) => vec![a, b],
            E::Neg(a) => vec![a],
            _ => Vec::new(),
        }
    }

    fn children(&self) -> Vec<&E> {
        match self {
            E::Add(a, b) | E::Sub(a, b) | E::Mul(a, b) | E::Sel(_, a, b) => vec![a, b],
            E::Neg(a) => vec![a],
            _ => Vec::new(),
        }
    }

    /// Every node, pre-order.
    fn nodes(&self) -> Vec<&E> {
        let mut out = vec![self];
        for c in self.children() {
            out.extend(c.nodes());
        }
        out
    }

    /// Calls `f` on every node, pre-order (after `f` changes a node, its
    /// new children are visited).
    fn walk_mut(&mut self, f: &mut dyn FnMut(&mut E)) {
        f(self);
        for c in self.children_mut() {
            c.walk_mut(f);
        }
    }

    /// The `n`-th node in pre-order.
    fn nth_mut(&mut self, n: &mut usize) -> Option<&mut E> {
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
    fn reads(&self, in_branch: bool, out: &mut Vec<(String, Vec<Aff>, bool)>) {
        match self {
            E::Read(t, subs) => out.push((t.clone(), subs.clone(), in_branch)),
            E::Sel(_, a, b) => {
                a.reads(true, out);
                b.reads(true, out);
            }
            _ => self.children().iter().for_each(|c| c.reads(in_branch, out)),
        }
    }

    /// For every node, pre-order: whether it lies in a `?:` branch.
    fn branch_flags(&self, in_branch: bool, out: &mut Vec<bool>) {
        out.push(in_branch);
        let inner = in_branch || matches!(self, E::Sel(..));
        for c in self.children() {
            c.branch_flags(inner, out);
        }
    }

    /// The iterators it mentions.
    fn vars(&self) -> BTreeSet<String> {
        let mut out = BTreeSet::new();
        for n in self.nodes() {
            match n {
                E::Read(_, subs) => {
                    for s in subs {
                        out.extend(s.terms.iter().map(|t| t.1.clone()));
                    }
                }
                E::Sel(c, ..) => c.vars(&mut out),
                _ => {}
            }
        }
        out
    }

    fn has_float(&self) -> bool {
        self.nodes().iter().any(|n| matches!(n, E::Flt(_)))
    }

    fn rename(&mut self, map: &BTreeMap<String, String>) {
        let fix = |a: &mut Aff| {
            for t in &mut a.terms {
                if let Some(n) = map.get(&t.1) {
                    t.1 = n.clone();
                }
            }
        };
        self.walk_mut(&mut |e| match e {
            E::Read(_, subs) => subs.iter_mut().for_each(fix),
            E::Sel(c, ..) => c.affs_mut(&mut |a, _| fix(a)),
            _ => {}
        });
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Op {
    Assign,
    /// `+=!`
    Init,
    /// `+=`
    Acc,
}

impl Op {
    fn text(self) -> &'static str {
        match self {
            Op::Assign => "=",
            Op::Init => "+=!",
            Op::Acc => "+=",
        }
    }
}

/// An iterator's range `[lo, hi)`.
#[derive(Clone, Debug, PartialEq)]
struct Iv {
    name: String,
    lo: i64,
    hi: i64,
}

/// `lhs(idx) op body where ranges` (the left-hand iterators first).
#[derive(Clone, Debug, PartialEq)]
struct St {
    lhs: String,
    idx: Vec<String>,
    op: Op,
    body: E,
    ranges: Vec<Iv>,
}

impl St {
    fn range_map(&self) -> Ranges {
        self.ranges
            .iter()
            .map(|r| (r.name.clone(), (r.lo, r.hi)))
            .collect()
    }

    fn range(&self, v: &str) -> (i64, i64) {
        let r = self.ranges.iter().find(|r| r.name == v).expect("a range");
        (r.lo, r.hi)
    }

    /// The ranges of `vars`, in that order.
    fn intervals(&self, vars: &[String]) -> Vec<Iv> {
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

    fn reductions(&self) -> Vec<String> {
        self.ranges
            .iter()
            .filter(|r| !self.idx.contains(&r.name))
            .map(|r| r.name.clone())
            .collect()
    }

    fn reads_tensor(&self, t: &str) -> bool {
        let mut reads = Vec::new();
        self.body.reads(false, &mut reads);
        reads.iter().any(|r| r.0 == t)
    }

    fn rename(&mut self, map: &BTreeMap<String, String>) {
        self.body.rename(map);
        for v in &mut self.idx {
            *v = map[v].clone();
        }
        for r in &mut self.ranges {
            r.name = map[&r.name].clone();
        }
    }
}

#[derive(Clone, Debug, PartialEq)]
enum Dim {
    Sym(String),
    Const(i64),
}

#[derive(Clone, Debug, PartialEq)]
struct Input {
    name: String,
    dims: Vec<Dim>,
}

#[derive(Clone, Debug, PartialEq)]
struct Prog {
    inputs: Vec<Input>,
    stmts: Vec<St>,
    outputs: Vec<String>,
    /// Leave out `where` ranges that inference gives anyway.
    infer: bool,
    /// Write `where` bounds as size symbols where one has that value.
    symbolic: bool,
}

type Sizes = BTreeMap<String, i64>;

impl Prog {
    /// The shape of every tensor (a temporary's from its first statement).
    fn shapes(&self, sizes: &Sizes) -> BTreeMap<String, Vec<i64>> {
        let mut out = BTreeMap::new();
        for x in &self.inputs {
            let dims = x
                .dims
                .iter()
                .map(|d| match d {
                    Dim::Sym(s) => sizes[s],
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

    fn has_float(&self) -> bool {
        self.stmts.iter().any(|s| s.body.has_float())
    }

    /// Every name in use (tensors and iterators), for fresh names.
    fn names(&self) -> BTreeSet<String> {
        let mut out: BTreeSet<String> = self.inputs.iter().map(|x| x.name.clone()).collect();
        for s in &self.stmts {
            out.insert(s.lhs.clone());
            out.extend(s.ranges.iter().map(|r| r.name.clone()));
        }
        out
    }

    fn fresh(&self, prefix: &str) -> String {
        let names = self.names();
        (0..)
            .map(|k| format!("{prefix}{k}"))
            .find(|n| !names.contains(n))
            .expect("a fresh name")
    }

    fn render(&self, name: &str, sizes: &Sizes) -> String {
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
                format!("float({}) {}", dims.join(", "), x.name)
            })
            .collect();
        let mut text = format!(
            "def {name}({}) -> ({}) {{\n",
            params.join(", "),
            self.outputs.join(", ")
        );
        let all = self.shapes(sizes);
        let mut known: BTreeMap<String, Vec<i64>> = self
            .inputs
            .iter()
            .map(|x| (x.name.clone(), all[&x.name].clone()))
            .collect();
        for s in &self.stmts {
            let _ = writeln!(text, "  {}", self.render_stmt(s, &known, sizes));
            known.insert(s.lhs.clone(), all[&s.lhs].clone());
        }
        text.push_str("}\n");
        text
    }

    fn render_stmt(&self, s: &St, known: &BTreeMap<String, Vec<i64>>, sizes: &Sizes) -> String {
        let mut reads = Vec::new();
        s.body.reads(false, &mut reads);
        let bound = |v: i64| -> String {
            if self.symbolic {
                if let Some((name, _)) = sizes.iter().find(|(_, &n)| n == v) {
                    return name.clone();
                }
                if let Some((name, _)) = sizes.iter().find(|(_, &n)| n == v + 1) {
                    return format!("{name}-1");
                }
            }
            v.to_string()
        };
        let mut wheres = Vec::new();
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
                    } else if a.terms.iter().any(|t| t.1 == r.name) {
                        other = true;
                    }
                }
            }
            if let Some(shape) = known.get(&s.lhs) {
                let d = s.idx.iter().position(|v| *v == r.name);
                extents.extend(d.map(|d| shape[d]));
            }
            let inferred = !other && !extents.is_empty() && extents.iter().all(|&e| e == r.hi);
            if !(self.infer && r.lo == 0 && inferred) {
                wheres.push(format!("{} in {}:{}", r.name, r.lo, bound(r.hi)));
            }
        }
        let mut text = format!(
            "{}({}) {} {}",
            s.lhs,
            s.idx.join(", "),
            s.op.text(),
            s.body.render(0)
        );
        if !wheres.is_empty() {
            let _ = write!(text, " where {}", wheres.join(", "));
        }
        text
    }
}

// ---------------------------------------------------------------------
// The generator.

/// An iterator of a statement being generated.
#[derive(Clone, Debug)]
struct It {
    name: String,
    lo: i64,
    hi: i64,
    lhs: bool,
}

/// The most points a generated statement iterates over.
const MAX_VOLUME: i64 = 1500;

#[derive(Debug)]
struct Gen<'r> {
    rng: &'r mut Rng,
    sizes: Sizes,
    inputs: Vec<Input>,
    shapes: BTreeMap<String, Vec<i64>>,
    floats: bool,
}

impl Gen<'_> {
    /// A fresh input of these extents: each dimension a new size symbol,
    /// one already there with that value, or a constant.
    fn input(&mut self, extents: &[i64]) -> String {
        let name = format!("X{}", self.inputs.len());
        let mut dims = Vec::new();
        for &n in extents {
            let same: Vec<String> = self
                .sizes
                .iter()
                .filter(|(_, &v)| v == n)
                .map(|(s, _)| s.clone())
                .collect();
            let d = if self.rng.chance(15) {
                Dim::Const(n)
            } else if !same.is_empty() && self.rng.chance(30) {
                Dim::Sym(self.rng.pick(&same))
            } else {
                let s = format!("N{}", self.sizes.len());
                self.sizes.insert(s.clone(), n);
                Dim::Sym(s)
            };
            dims.push(d);
        }
        self.inputs.push(Input {
            name: name.clone(),
            dims,
        });
        self.shapes.insert(name.clone(), extents.to_vec());
        name
    }

    fn literal(&mut self) -> E {
        if self.floats && self.rng.chance(40) {
            E::Flt(self.rng.pick(&[0.5, 0.25, 1.5, 0.75]))
        } else {
            E::Int(self.rng.pick(&[2, 3, 2, 5, 1, 4]))
        }
    }

    /// A subscript over `its` (mentioning iterator `must`, if any) and the
    /// extent of a fresh input's dimension for it: in bounds, or with
    /// `pad`, sometimes reaching past either edge.
    fn subscript(&mut self, its: &[It], must: Option<usize>, pad: bool) -> (Aff, i64) {
        let rng = &mut *self.rng;
        let v = match must {
            Some(v) => v,
            None if rng.chance(8) => {
                let c = rng.range(0, 1);
                return (Aff::konst(c), c + 1 + rng.range(0, 1));
            }
            None => rng.below(its.len()),
        };
        let others: Vec<usize> = (0..its.len()).filter(|&w| w != v).collect();
        // Prefer a convolution's pair: an output iterator and a reduction
        // one.
        let partners: Vec<usize> = others
            .iter()
            .copied()
            .filter(|&w| its[w].lhs != its[v].lhs)
            .collect();
        let x = rng.below(100);
        let mut aff = Aff::var(&its[v].name);
        let mut extra = 0;
        if x < 45 {
        } else if x < 60 {
            extra = rng.pick(&[1, 2, -1]);
        } else if x < 90 && !others.is_empty() {
            let w = if partners.is_empty() || rng.chance(20) {
                rng.pick(&others)
            } else {
                rng.pick(&partners)
            };
            let (a, b) = rng.pick(&[(1, 1), (1, 1), (2, 1), (1, 2), (1, -1), (2, 2)]);
            aff.terms[0].0 = a;
            aff.terms.push((b, its[w].name.clone()));
            extra = rng.pick(&[0, 0, -1, 1]);
        } else {
            aff.terms[0].0 = 2;
        }
        let r: Ranges = its.iter().map(|i| (i.name.clone(), (i.lo, i.hi))).collect();
        let (mn, mx) = aff.interval(&r);
        if pad && rng.chance(60) {
            aff.c = -mn - rng.range(0, 2);
            let extent = (mx + aff.c + 1 - rng.range(0, 2)).max(1);
            (aff, extent)
        } else {
            aff.c = (-mn).max(0) + extra.max(0);
            if extra < 0 && mn + extra >= 0 {
                aff.c = extra;
            }
            let extent = mx + aff.c + 1 + rng.range(0, 1);
            (aff, extent)
        }
    }

    /// A read of a fresh input of rank 1 to 4 over `its`, mentioning
    /// `must`.
    fn fresh_read(&mut self, its: &[It], must: &[usize], pad: bool) -> E {
        let rank = (1 + self.rng.below(4)).max(must.len()).min(4);
        let mut slots: Vec<Option<usize>> = must.iter().copied().map(Some).collect();
        while slots.len() < rank {
            slots.push(None);
        }
        self.rng.shuffle(&mut slots);
        let (subs, extents): (Vec<Aff>, Vec<i64>) = slots
            .into_iter()
            .map(|m| self.subscript(its, m, pad))
            .unzip();
        let name = self.input(&extents);
        E::Read(name, subs)
    }

    /// `?:` over iterator `v`: its range cut into two or three pieces, each
    /// a read of a fresh input (concatenation) or zero (padding).
    fn concat(&mut self, its: &[It], v: usize) -> E {
        let (lo, hi) = (its[v].lo, its[v].hi);
        let rng = &mut *self.rng;
        let mut cuts = vec![rng.range(lo + 1, hi - 1)];
        if hi - lo >= 3 && rng.chance(40) {
            let k = rng.range(lo + 1, hi - 1);
            if !cuts.contains(&k) {
                cuts.push(k);
            }
        }
        cuts.sort_unstable();
        // The other dimensions: the same in-bounds subscripts in every piece.
        let others: Vec<It> = its
            .iter()
            .enumerate()
            .filter(|&(w, _)| w != v)
            .map(|(_, i)| i.clone())
            .collect();
        let rank = if others.is_empty() {
            1
        } else {
            1 + rng.below(3)
        };
        let at = rng.below(rank);
        let mut rest = Vec::new();
        for _ in 1..rank {
            rest.push(self.subscript(&others, None, false));
        }
        let mut starts = vec![0];
        starts.extend(&cuts);
        let mut ends = cuts.clone();
        ends.push(hi);
        let n = starts.len();
        let zero_at = if self.rng.chance(30) {
            Some(self.rng.below(n))
        } else {
            None
        };
        let pieces: Vec<E> = (0..n)
            .map(|p| {
                if zero_at == Some(p) {
                    return E::Int(0);
                }
                let off = if self.rng.chance(25) { 1 } else { 0 };
                let slack = self.rng.pick(&[0, 0, 1, 2]);
                let mut sub = Aff::var(&its[v].name);
                sub.c = off - starts[p];
                let mut subs: Vec<Aff> = rest.iter().map(|r| r.0.clone()).collect();
                let mut extents: Vec<i64> = rest.iter().map(|r| r.1).collect();
                subs.insert(at, sub);
                extents.insert(at, ends[p] - starts[p] + off + slack);
                let name = self.input(&extents);
                E::Read(name, subs)
            })
            .collect();
        let var = Aff::var(&its[v].name);
        match pieces.len() {
            2 if self.rng.chance(30) => {
                sel(Cond::Ge(var, cuts[0]), pieces[1].clone(), pieces[0].clone())
            }
            2 => sel(Cond::Lt(var, cuts[0]), pieces[0].clone(), pieces[1].clone()),
            _ if zero_at.is_none() && self.rng.chance(30) => sel(
                Cond::And(
                    Box::new(Cond::Ge(var.clone(), cuts[0])),
                    Box::new(Cond::Lt(var, cuts[1])),
                ),
                pieces[1].clone(),
                E::Int(0),
            ),
            _ => sel(
                Cond::Lt(var.clone(), cuts[0]),
                pieces[0].clone(),
                sel(Cond::Lt(var, cuts[1]), pieces[1].clone(), pieces[2].clone()),
            ),
        }
    }

    fn new_iter(&mut self, its: &mut Vec<It>, lhs: bool, slice: bool) {
        let names: &[&str] = if lhs {
            &["i", "j", "k", "l", "m", "n"]
        } else {
            &["r", "s", "t", "u", "v", "w"]
        };
        let name = names
            .iter()
            .find(|n| !its.iter().any(|i| i.name == **n))
            .expect("a free name")
            .to_string();
        let volume: i64 = its.iter().map(|i| i.hi - i.lo).product();
        let most = (MAX_VOLUME / volume).clamp(1, if lhs { 6 } else { 4 });
        let width = self.rng.range(1, most);
        let lo = if slice && width >= 2 && self.rng.chance(20) {
            self.rng.range(1, 2)
        } else {
            0
        };
        its.push(It {
            name,
            lo,
            hi: lo + width,
            lhs,
        });
    }

    /// A statement `lhs(..) op body`: over `fixed` left-hand iterators (an
    /// update of an earlier tensor) or new ones; reading temporary `temp`
    /// in full (shifted, padded, diagonally) when given.
    fn stmt(
        &mut self,
        lhs: &str,
        op: Op,
        fixed: Option<Vec<It>>,
        temps: &[&str],
        concat: bool,
    ) -> St {
        let reduce = op != Op::Assign;
        let mut its: Vec<It> = fixed.clone().unwrap_or_default();
        let mut temp_reads = Vec::new();
        for (n, &t) in temps.iter().enumerate() {
            let shape = self.shapes[t].clone();
            let mut order: Vec<usize> = (0..shape.len()).collect();
            self.rng.shuffle(&mut order);
            let mut subs = vec![Aff::konst(0); shape.len()];
            for d in order {
                let e = shape[d];
                let x = self.rng.below(100);
                let n_lhs = its.iter().filter(|i| i.lhs).count();
                // At most four left-hand iterators, six in all.
                let lhs = n_lhs < 4 && (!reduce || self.rng.chance(60));
                let can_new = its.len() < 6 && (lhs || reduce);
                let reuse: Vec<usize> = (0..its.len())
                    .filter(|&w| its[w].lo == 0 && its[w].hi == e)
                    .collect();
                // Later temporaries mostly share the first one's
                // iterators.
                let share = !reuse.is_empty()
                    && (!can_new || (n > 0 || its.len() >= 3) && self.rng.chance(70));
                subs[d] = if share {
                    Aff::var(&its[self.rng.pick(&reuse)].name)
                } else if !can_new {
                    Aff::konst(self.rng.range(0, e - 1))
                } else if x < 55 {
                    self.new_iter(&mut its, lhs, false);
                    let last = its.len() - 1;
                    its[last].hi = e;
                    if lhs && e >= 2 && self.rng.chance(15) {
                        its[last].lo = 1;
                    }
                    Aff::var(&its[last].name)
                } else if x < 70 && e >= 2 {
                    self.new_iter(&mut its, lhs, false);
                    let last = its.len() - 1;
                    its[last].hi = e - 1;
                    let mut a = Aff::var(&its[last].name);
                    a.c = 1;
                    a
                } else if x < 80 && reduce && its.len() < 5 && n_lhs < 4 {
                    // Padding: h + x - 1 over h in 0:e, x in 0:3.
                    self.new_iter(&mut its, true, false);
                    let h = its.len() - 1;
                    its[h].hi = e;
                    self.new_iter(&mut its, false, false);
                    let r = its.len() - 1;
                    its[r].hi = 3;
                    Aff {
                        terms: vec![(1, its[h].name.clone()), (1, its[r].name.clone())],
                        c: -1,
                    }
                } else if x < 92 && !reuse.is_empty() {
                    Aff::var(&its[self.rng.pick(&reuse)].name)
                } else {
                    Aff::konst(self.rng.range(0, e - 1))
                };
            }
            temp_reads.push(E::Read(t.to_string(), subs));
        }
        if fixed.is_none() {
            let n_lhs = self.rng.pick(&[1, 1, 2, 2, 2, 3, 3, 4]);
            while its.iter().filter(|i| i.lhs).count() < n_lhs && its.len() < 5 {
                self.new_iter(&mut its, true, true);
            }
            if !its.iter().any(|i| i.lhs) {
                self.new_iter(&mut its, true, true);
            }
        }
        if reduce {
            let n_red = self.rng.pick(&[0, 1, 1, 1, 2, 2]);
            while its.iter().filter(|i| !i.lhs).count() < n_red && its.len() < 6 {
                self.new_iter(&mut its, false, true);
            }
        }
        let pad = reduce && self.rng.chance(45);

        let n_terms = self.rng.pick(&[1, 1, 1, 2, 2, 3]);
        let mut terms = Vec::new();
        for k in 0..n_terms {
            let mut factors = Vec::new();
            for t in &temp_reads {
                if k == 0 || self.rng.chance(30) {
                    factors.push(t.clone());
                }
            }
            let n = self.rng.pick(&[1, 1, 2, 2, 2, 3]);
            while factors.len() < n {
                let wide: Vec<usize> = (0..its.len())
                    .filter(|&v| its[v].hi - its[v].lo >= 2)
                    .collect();
                if !wide.is_empty()
                    && (concat && k == 0 && factors.is_empty() || self.rng.chance(12))
                {
                    let v = self.rng.pick(&wide);
                    factors.push(self.concat(&its, v));
                } else if n >= 2 && self.rng.chance(12) {
                    // A sum as a factor: `(A(i) + B(i, k)) * C(k)`.
                    let (a, b) = (
                        self.fresh_read(&its, &[], pad),
                        self.fresh_read(&its, &[], pad),
                    );
                    factors.push(if self.rng.chance(25) {
                        E::Sub(Box::new(a), Box::new(b))
                    } else {
                        add(a, b)
                    });
                } else {
                    factors.push(self.fresh_read(&its, &[], pad));
                }
            }
            if self.rng.chance(20) {
                let at = self.rng.below(factors.len() + 1);
                let lit = self.literal();
                factors.insert(at, lit);
            }
            let mut term = factors.into_iter().reduce(mul).expect("a factor");
            if self.rng.chance(8) {
                term = E::Neg(Box::new(term));
            }
            terms.push(term);
        }
        // Every reduction iterator (and most left-hand ones) read outside
        // `?:`.
        let mut reads = Vec::new();
        for t in &terms {
            t.reads(false, &mut reads);
        }
        let seen: BTreeSet<String> = reads
            .iter()
            .filter(|r| !r.2)
            .flat_map(|r| r.1.iter().flat_map(|a| a.terms.iter().map(|t| t.1.clone())))
            .collect();
        let missing: Vec<usize> = (0..its.len())
            .filter(|&v| !seen.contains(&its[v].name) && (!its[v].lhs || self.rng.chance(85)))
            .collect();
        for chunk in missing.chunks(4) {
            let subs: Vec<Aff> = chunk.iter().map(|&v| Aff::var(&its[v].name)).collect();
            let extents: Vec<i64> = chunk
                .iter()
                .map(|&v| its[v].hi + self.rng.range(0, 1))
                .collect();
            let name = self.input(&extents);
            let first = terms.remove(0);
            terms.insert(0, mul(first, E::Read(name, subs)));
        }
        let mut body = terms.remove(0);
        for t in terms {
            body = if self.rng.chance(20) {
                E::Sub(Box::new(body), Box::new(t))
            } else {
                add(body, t)
            };
        }
        let mut lhs_its: Vec<It> = its.iter().filter(|i| i.lhs).cloned().collect();
        if fixed.is_none() {
            self.rng.shuffle(&mut lhs_its);
        }
        let idx: Vec<String> = lhs_its.iter().map(|i| i.name.clone()).collect();
        let ranges: Vec<Iv> = lhs_its
            .iter()
            .chain(its.iter().filter(|i| !i.lhs))
            .map(|i| Iv {
                name: i.name.clone(),
                lo: i.lo,
                hi: i.hi,
            })
            .collect();
        if !self.shapes.contains_key(lhs) {
            let shape = lhs_its.iter().map(|i| i.hi).collect();
            self.shapes.insert(lhs.to_string(), shape);
        }
        St {
            lhs: lhs.to_string(),
            idx,
            op,
            body,
            ranges,
        }
    }
}

/// A generated program with the sizes of its symbols.
#[derive(Clone, Debug)]
struct Base {
    family: &'static str,
    sizes: Sizes,
    prog: Prog,
}

fn generate(rng: &mut Rng) -> Base {
    let floats = rng.chance(30);
    let infer = rng.chance(50);
    let symbolic = rng.chance(50);
    let family = rng.pick(&[
        "reduce", "reduce", "assign", "concat", "chain2", "chain3", "fork", "acc",
    ]);
    let mut g = Gen {
        rng,
        sizes: Sizes::new(),
        inputs: Vec::new(),
        shapes: BTreeMap::new(),
        floats,
    };
    let any_op = |g: &mut Gen| {
        if g.rng.chance(50) {
            Op::Assign
        } else {
            Op::Init
        }
    };
    let mut stmts = Vec::new();
    let mut outputs = vec!["O".to_string()];
    match family {
        "reduce" => stmts.push(g.stmt("O", Op::Init, None, &[], false)),
        "assign" => stmts.push(g.stmt("O", Op::Assign, None, &[], false)),
        "concat" => {
            let op = any_op(&mut g);
            stmts.push(g.stmt("O", op, None, &[], true));
        }
        "fork" => {
            // Two independent temporaries, both read by the output.
            for t in ["T0", "T1"] {
                let op = any_op(&mut g);
                let concat = g.rng.chance(25);
                stmts.push(g.stmt(t, op, None, &[], concat));
            }
            let op = any_op(&mut g);
            stmts.push(g.stmt("O", op, None, &["T0", "T1"], false));
            if g.rng.chance(30) {
                outputs.push("T1".to_string());
            }
        }
        "chain2" | "chain3" => {
            let op = any_op(&mut g);
            let concat = g.rng.chance(25);
            stmts.push(g.stmt("T0", op, None, &[], concat));
            let mut last = "T0".to_string();
            if family == "chain3" {
                let op = any_op(&mut g);
                stmts.push(g.stmt("T1", op, None, &["T0"], false));
                last = "T1".to_string();
            }
            let op = any_op(&mut g);
            let temps: &[&str] = if last == "T1" && g.rng.chance(30) {
                &["T1", "T0"]
            } else {
                &[&last]
            };
            stmts.push(g.stmt("O", op, None, temps, false));
            if g.rng.chance(30) {
                outputs.push(last);
            }
        }
        _ => {
            let op = any_op(&mut g);
            let concat = g.rng.chance(25);
            let first = g.stmt("O", op, None, &[], concat);
            // `+=` over the same or a narrower box.
            let mut fixed: Vec<It> = first
                .idx
                .iter()
                .map(|v| {
                    let (lo, hi) = first.range(v);
                    It {
                        name: v.clone(),
                        lo,
                        hi,
                        lhs: true,
                    }
                })
                .collect();
            for it in &mut fixed {
                if it.hi - it.lo >= 2 && g.rng.chance(25) {
                    if g.rng.chance(50) {
                        it.lo += 1;
                    } else {
                        it.hi -= 1;
                    }
                }
            }
            stmts.push(first);
            stmts.push(g.stmt("O", Op::Acc, Some(fixed), &[], false));
        }
    }
    Base {
        family,
        sizes: g.sizes,
        prog: Prog {
            inputs: g.inputs,
            stmts,
            outputs,
            infer,
            symbolic,
        },
    }
}

// ---------------------------------------------------------------------
// Rewrites that keep a program equivalent.

/// Whether every read of `e` outside `?:` stays inside its tensor over the
/// box `r`.
/// With `all`, of every read, under `?:` too.
fn in_bounds(e: &E, r: &Ranges, shapes: &BTreeMap<String, Vec<i64>>, all: bool) -> bool {
    let mut reads = Vec::new();
    e.reads(false, &mut reads);
    reads.iter().filter(|x| all || !x.2).all(|(t, subs, _)| {
        subs.iter().zip(&shapes[t]).all(|(a, &n)| {
            let (lo, hi) = a.interval(r);
            lo >= 0 && hi < n
        })
    })
}

const REWRITES: [&str; 11] = [
    "swap operands",
    "rename iterators",
    "split a reduction range",
    "split an output along a dimension",
    "subexpression into a temporary",
    "padded body into a temporary",
    "transpose a temporary",
    "reorder statements",
    "split a sum into statements",
    "distribute a product",
    "0.5 * (e + e)",
];

/// Applies rewrite `kind` to `p` if it applies somewhere.
fn rewrite(rng: &mut Rng, p: &Prog, sizes: &Sizes, kind: usize) -> Option<Prog> {
    let mut p = p.clone();
    let shapes = p.shapes(sizes);
    let n = p.stmts.len();
    match kind {
        0 => {
            let sites: Vec<(usize, usize)> = (0..n)
                .flat_map(|s| {
                    let nodes = p.stmts[s].body.nodes();
                    (0..nodes.len())
                        .filter(|&k| matches!(nodes[k], E::Add(..) | E::Mul(..)))
                        .map(|k| (s, k))
                        .collect::<Vec<_>>()
                })
                .collect();
            if sites.is_empty() {
                return None;
            }
            let (s, mut k) = rng.pick(&sites);
            if let Some(E::Add(a, b) | E::Mul(a, b)) = p.stmts[s].body.nth_mut(&mut k) {
                std::mem::swap(a, b);
            }
        }
        1 => {
            let s = rng.below(n);
            let pool = ["a", "b", "c", "d", "e", "h", "o", "p", "q", "x", "y", "z"];
            let mut free: Vec<&str> = pool.to_vec();
            rng.shuffle(&mut free);
            let map: BTreeMap<String, String> = p.stmts[s]
                .ranges
                .iter()
                .zip(free)
                .map(|(r, f)| (r.name.clone(), f.to_string()))
                .collect();
            p.stmts[s].rename(&map);
        }
        2 => {
            let sites: Vec<(usize, String)> = (0..n)
                .filter(|&s| p.stmts[s].op != Op::Assign)
                .flat_map(|s| {
                    let st = &p.stmts[s];
                    st.reductions()
                        .into_iter()
                        .filter(|v| st.range(v).1 - st.range(v).0 >= 2)
                        .map(|v| (s, v))
                        .collect::<Vec<_>>()
                })
                .collect();
            if sites.is_empty() {
                return None;
            }
            let (s, v) = rng.pick(&sites);
            let (lo, hi) = p.stmts[s].range(&v);
            let k = rng.range(lo + 1, hi - 1);
            let mut a = p.stmts[s].clone();
            let mut b = a.clone();
            a.ranges
                .iter_mut()
                .filter(|r| r.name == v)
                .for_each(|r| r.hi = k);
            b.ranges
                .iter_mut()
                .filter(|r| r.name == v)
                .for_each(|r| r.lo = k);
            b.op = Op::Acc;
            p.stmts.splice(s..=s, [a, b]);
        }
        3 => {
            let first = |s: usize| !p.stmts[..s].iter().any(|x| x.lhs == p.stmts[s].lhs);
            let sites: Vec<(usize, usize)> = (0..n)
                .filter(|&s| p.stmts[s].op != Op::Acc && first(s))
                .flat_map(|s| {
                    let st = &p.stmts[s];
                    (0..st.idx.len())
                        .filter(|&d| {
                            let (lo, hi) = st.range(&st.idx[d]);
                            hi - lo >= 2
                        })
                        .map(|d| (s, d))
                        .collect::<Vec<_>>()
                })
                .collect();
            if sites.is_empty() {
                return None;
            }
            let (s, d) = rng.pick(&sites);
            let st = p.stmts[s].clone();
            let v = st.idx[d].clone();
            let (lo, hi) = st.range(&v);
            let k = rng.range(lo + 1, hi - 1);
            let (t1, t2) = (p.fresh("P"), p.fresh("Q"));
            let (mut a, mut b) = (st.clone(), st.clone());
            a.lhs = t1.clone();
            b.lhs = t2.clone();
            a.ranges
                .iter_mut()
                .filter(|r| r.name == v)
                .for_each(|r| r.hi = k);
            b.ranges
                .iter_mut()
                .filter(|r| r.name == v)
                .for_each(|r| r.lo = k);
            let idx: Vec<Aff> = st.idx.iter().map(|x| Aff::var(x)).collect();
            let merge = St {
                lhs: st.lhs.clone(),
                idx: st.idx.clone(),
                op: Op::Assign,
                body: sel(
                    Cond::Lt(Aff::var(&v), k),
                    E::Read(t1, idx.clone()),
                    E::Read(t2, idx),
                ),
                ranges: st
                    .idx
                    .iter()
                    .map(|x| {
                        let (lo, hi) = st.range(x);
                        Iv {
                            name: x.clone(),
                            lo,
                            hi,
                        }
                    })
                    .collect(),
            };
            p.stmts.splice(s..=s, [a, b, merge]);
        }
        4 => {
            let mut sites = Vec::new();
            for s in 0..n {
                let st = &p.stmts[s];
                let r = st.range_map();
                let mut branch = Vec::new();
                st.body.branch_flags(false, &mut branch);
                for (k, e) in st.body.nodes().into_iter().enumerate() {
                    // Under a `?:` branch, the reads of its own branches
                    // may rely on the outer condition.
                    if !matches!(e, E::Int(_) | E::Flt(_))
                        && !e.vars().is_empty()
                        && in_bounds(e, &r, &shapes, branch[k])
                    {
                        sites.push((s, k));
                    }
                }
            }
            if sites.is_empty() {
                return None;
            }
            let (s, mut k) = rng.pick(&sites);
            let u = p.fresh("U");
            let st = &mut p.stmts[s];
            let node = st.body.nth_mut(&mut k).expect("the node");
            let mut vars: Vec<String> = node.vars().into_iter().collect();
            rng.shuffle(&mut vars);
            let sub = std::mem::replace(
                node,
                E::Read(u.clone(), vars.iter().map(|v| Aff::var(v)).collect()),
            );
            let ranges = st.intervals(&vars);
            let hoisted = St {
                lhs: u,
                idx: vars,
                op: Op::Assign,
                body: sub,
                ranges,
            };
            p.stmts.insert(s, hoisted);
        }
        5 => {
            let sites: Vec<usize> = (0..n)
                .filter(|&s| p.stmts[s].op != Op::Assign && p.stmts[s].ranges.len() <= 5)
                .collect();
            if sites.is_empty() {
                return None;
            }
            let s = rng.pick(&sites);
            let u = p.fresh("V");
            let st = &mut p.stmts[s];
            let mut vars: Vec<String> = st.ranges.iter().map(|r| r.name.clone()).collect();
            rng.shuffle(&mut vars);
            let body = std::mem::replace(
                &mut st.body,
                E::Read(u.clone(), vars.iter().map(|v| Aff::var(v)).collect()),
            );
            let ranges = st.intervals(&vars);
            // `+=!` over no reduction iterator: the points a read of the
            // body skips stay zero, which add nothing.
            let hoisted = St {
                lhs: u,
                idx: vars,
                op: Op::Init,
                body,
                ranges,
            };
            p.stmts.insert(s, hoisted);
        }
        6 => {
            let temps: Vec<String> = p
                .stmts
                .iter()
                .map(|s| s.lhs.clone())
                .filter(|t| !p.outputs.contains(t) && shapes[t].len() >= 2)
                .collect::<BTreeSet<_>>()
                .into_iter()
                .collect();
            if temps.is_empty() {
                return None;
            }
            let t = rng.pick(&temps);
            let rank = shapes[&t].len();
            let mut perm: Vec<usize> = (0..rank).collect();
            while perm.iter().enumerate().all(|(a, &b)| a == b) {
                rng.shuffle(&mut perm);
            }
            for st in &mut p.stmts {
                if st.lhs == t {
                    st.idx = perm.iter().map(|&d| st.idx[d].clone()).collect();
                    // Left-hand ranges first, in the new order.
                    let mut ranges: Vec<Iv> = st
                        .idx
                        .iter()
                        .map(|v| st.ranges.iter().find(|r| r.name == *v).cloned())
                        .collect::<Option<_>>()
                        .expect("ranges");
                    ranges.extend(
                        st.ranges
                            .iter()
                            .filter(|r| !st.idx.contains(&r.name))
                            .cloned(),
                    );
                    st.ranges = ranges;
                }
                st.body.walk_mut(&mut |e| {
                    if let E::Read(x, subs) = e {
                        if *x == t {
                            *subs = perm.iter().map(|&d| subs[d].clone()).collect();
                        }
                    }
                });
            }
        }
        7 => {
            let sites: Vec<usize> = (0..n.saturating_sub(1))
                .filter(|&s| {
                    let (a, b) = (&p.stmts[s], &p.stmts[s + 1]);
                    a.lhs != b.lhs && !a.reads_tensor(&b.lhs) && !b.reads_tensor(&a.lhs)
                })
                .collect();
            if sites.is_empty() {
                return None;
            }
            let s = rng.pick(&sites);
            p.stmts.swap(s, s + 1);
        }
        8 => {
            let sites: Vec<usize> = (0..n)
                .filter(|&s| {
                    let st = &p.stmts[s];
                    let (E::Add(x, y) | E::Sub(x, y)) = &st.body else {
                        return false;
                    };
                    let reds: BTreeSet<String> = st.reductions().into_iter().collect();
                    in_bounds(&st.body, &st.range_map(), &shapes, false)
                        && reds.is_subset(&x.vars())
                        && reds.is_subset(&y.vars())
                })
                .collect();
            if sites.is_empty() {
                return None;
            }
            let s = rng.pick(&sites);
            let st = p.stmts[s].clone();
            let (x, y) = match st.body.clone() {
                E::Add(x, y) => (*x, *y),
                E::Sub(x, y) => (*x, E::Neg(y)),
                _ => unreachable!("a sum"),
            };
            let (mut a, mut b) = (st.clone(), st);
            a.body = x;
            b.body = y;
            b.op = Op::Acc;
            p.stmts.splice(s..=s, [a, b]);
        }
        9 => {
            let is_site = |e: &E| match e {
                E::Mul(a, b) => {
                    matches!(**a, E::Add(..) | E::Sub(..)) || matches!(**b, E::Add(..) | E::Sub(..))
                }
                _ => false,
            };
            let sites: Vec<(usize, usize)> = (0..n)
                .flat_map(|s| {
                    let nodes = p.stmts[s].body.nodes();
                    (0..nodes.len())
                        .filter(|&k| is_site(nodes[k]))
                        .map(|k| (s, k))
                        .collect::<Vec<_>>()
                })
                .collect();
            if sites.is_empty() {
                return None;
            }
            let (s, mut k) = rng.pick(&sites);
            let node = p.stmts[s].body.nth_mut(&mut k).expect("the node");
            let E::Mul(a, b) = node.clone() else {
                unreachable!("a product")
            };
            let dist = |sum: E, c: E, left: bool| {
                let prod = |x: E| {
                    if left {
                        mul(x, c.clone())
                    } else {
                        mul(c.clone(), x)
                    }
                };
                match sum {
                    E::Add(x, y) => add(prod(*x), prod(*y)),
                    E::Sub(x, y) => E::Sub(Box::new(prod(*x)), Box::new(prod(*y))),
                    _ => unreachable!("a sum"),
                }
            };
            *node = if matches!(*a, E::Add(..) | E::Sub(..)) {
                dist(*a, *b, true)
            } else {
                dist(*b, *a, false)
            };
        }
        _ => {
            let s = rng.below(n);
            let count = p.stmts[s].body.nodes().len();
            let mut k = rng.below(count);
            let node = p.stmts[s].body.nth_mut(&mut k).expect("the node");
            let e = node.clone();
            *node = mul(E::Flt(0.5), add(e.clone(), e));
        }
    }
    Some(p)
}

// ---------------------------------------------------------------------
// Perturbations: one number changed.

const PERTURBATIONS: [&str; 8] = [
    "literal",
    "subscript offset",
    "subscript coefficient",
    "range bound",
    "condition",
    "sign of a term",
    "two subscripts swapped",
    "an update of a small box added",
];

/// Counts (`apply` `None`) or changes (the `n`-th, by `delta`) the sites of
/// perturbation `kind`.
fn sites(p: &mut Prog, kind: usize, apply: Option<(usize, i64)>) -> usize {
    let mut count = 0;
    let hit = |count: &mut usize| {
        let here = apply.is_some_and(|(n, _)| n == *count);
        *count += 1;
        here
    };
    let delta = apply.map_or(0, |a| a.1);
    for st in &mut p.stmts {
        if kind == 3 {
            for r in &mut st.ranges {
                if r.hi - r.lo >= 2 && hit(&mut count) {
                    if delta > 0 {
                        r.lo += 1;
                    } else {
                        r.hi -= 1;
                    }
                }
            }
            continue;
        }
        st.body.walk_mut(&mut |e| {
            if kind == 5 {
                if matches!(e, E::Add(..)) && hit(&mut count) {
                    if let E::Add(a, b) = std::mem::replace(e, E::Int(0)) {
                        *e = E::Sub(a, b);
                    }
                }
                return;
            }
            match (kind, e) {
                (0, E::Int(c)) if hit(&mut count) => *c += delta,
                (1, E::Read(_, subs)) => {
                    for a in subs {
                        if hit(&mut count) {
                            a.c += delta;
                        }
                    }
                }
                (2, E::Read(_, subs)) => {
                    for a in subs {
                        for t in &mut a.terms {
                            if hit(&mut count) {
                                t.0 = if t.0 + delta == 0 {
                                    t.0 + 2 * delta
                                } else {
                                    t.0 + delta
                                };
                            }
                        }
                    }
                }
                (4, E::Sel(c, ..)) => c.affs_mut(&mut |_, k| {
                    if hit(&mut count) {
                        *k += delta;
                    }
                }),
                (6, E::Read(_, subs)) if subs.len() >= 2 && hit(&mut count) => {
                    let n = subs.len();
                    if delta > 0 {
                        subs.swap(0, 1);
                    } else {
                        subs.swap(n - 2, n - 1);
                    }
                }
                _ => {}
            }
        });
    }
    count
}

fn perturb(rng: &mut Rng, p: &Prog, sizes: &Sizes) -> Option<(Prog, usize)> {
    let mut q = p.clone();
    let mut kinds: Vec<usize> = (0..7).filter(|&k| sites(&mut q, k, None) > 0).collect();
    kinds.push(7);
    let kind = rng.pick(&kinds);
    if kind == 7 {
        // `T(i, j) += T(i, j)` (or `+= 1`) over a box of one or two
        // elements per dimension, after a statement writing `T`.
        let s = rng.below(q.stmts.len());
        let t = q.stmts[s].lhs.clone();
        let shape = &q.shapes(sizes)[&t];
        let names = ["a", "b", "c", "d", "e", "h", "o"];
        let mut ranges = Vec::new();
        for (d, &n) in shape.iter().enumerate() {
            let lo = rng.range(0, n - 1);
            let hi = (lo + rng.range(1, 2)).min(n);
            ranges.push(Iv {
                name: names[d].to_string(),
                lo,
                hi,
            });
        }
        let idx: Vec<String> = ranges.iter().map(|r| r.name.clone()).collect();
        let body = if rng.chance(60) {
            E::Read(t.clone(), idx.iter().map(|v| Aff::var(v)).collect())
        } else {
            E::Int(1)
        };
        let update = St {
            lhs: t,
            idx,
            op: Op::Acc,
            body,
            ranges,
        };
        q.stmts.insert(s + 1, update);
        return Some((q, kind));
    }
    let n = sites(&mut q, kind, None);
    let delta = if rng.chance(50) { 1 } else { -1 };
    sites(&mut q, kind, Some((rng.below(n), delta)));
    (q != *p).then_some((q, kind))
}

// ---------------------------------------------------------------------
// Running and checking.

fn check(text: &str) -> Result<ir::Program, String> {
    tc::check_source(text)
        .map(|c| c.program)
        .map_err(|d| tc::render_diagnostics(&d, "case", text))
}

/// Runs `f` and `g` of `program` in the interpreter on the same inputs
/// (`draws` seeded draws): per output, its shape and the elements that
/// differ in some draw. Mod-p mode on residues, or (with float literals)
/// real mode on floats with a tolerance.
type Differences = Vec<(Vec<usize>, BTreeSet<Vec<usize>>)>;

fn differences(
    program: &ir::Program,
    sizes: &Sizes,
    seed: u64,
    draws: u64,
    modp: bool,
) -> Result<Differences, String> {
    let given: HashMap<String, i64> = sizes.iter().map(|(k, &v)| (k.clone(), v)).collect();
    let def = |name: &str| program.def(name).ok_or(format!("no def `{name}`"));
    let (df, dg) = (def("f")?, def("g")?);
    let bound = interp::bind_sizes(df, &HashMap::new(), &given).map_err(|e| e.message)?;
    let shapes = df
        .params
        .iter()
        .map(|p| interp::param_shape(df, p.name(), &bound).map_err(|e| e.message))
        .collect::<Result<Vec<_>, String>>()?;
    let mut out: Differences = Vec::new();
    for draw in 0..draws {
        let tensors: Vec<Tensor> = shapes
            .iter()
            .enumerate()
            .map(|(k, shape)| {
                let s = seed
                    .wrapping_mul(1000)
                    .wrapping_add(draw * 100)
                    .wrapping_add(k as u64);
                if modp {
                    interp::random_residues(shape, s)
                } else {
                    Tensor::random(DType::F32, shape, s)
                }
            })
            .collect();
        let args = |d: &ir::Def| -> HashMap<String, Arg> {
            d.params
                .iter()
                .zip(&tensors)
                .map(|(p, t)| (p.name().to_string(), Arg::Tensor(t.clone())))
                .collect()
        };
        let (fa, ga) = (args(df), args(dg));
        let mode = if modp { Mode::ModP } else { Mode::Real };
        let run = |name: &str, args: &HashMap<String, Arg>| {
            interp::run(program, name, args, &given, mode)
                .map_err(|e| format!("the interpreter fails on `{name}`: {}", e.message))
        };
        let (a, b) = (run("f", &fa)?, run("g", &ga)?);
        if out.is_empty() {
            out = a
                .iter()
                .map(|(_, t)| (t.shape().to_vec(), BTreeSet::new()))
                .collect();
        }
        for (k, ((_, x), (_, y))) in a.iter().zip(&b).enumerate() {
            if x.shape() != y.shape() {
                return Err(format!(
                    "output {k} has shape {:?} in `f` but {:?} in `g`",
                    x.shape(),
                    y.shape()
                ));
            }
            let (x, y) = (x.to_f64_vec(), y.to_f64_vec());
            let scale = x.iter().chain(&y).fold(1.0f64, |m, v| m.max(v.abs()));
            for (flat, (u, v)) in x.iter().zip(&y).enumerate() {
                let differ = if modp {
                    u != v
                } else {
                    (u - v).abs() > 1e-3 * scale
                };
                if differ {
                    let index = unflatten(flat, &out[k].0);
                    out[k].1.insert(index);
                }
            }
        }
    }
    Ok(out)
}

fn unflatten(mut flat: usize, shape: &[usize]) -> Vec<usize> {
    let mut index = vec![0; shape.len()];
    for d in (0..shape.len()).rev() {
        index[d] = flat % shape[d];
        flat /= shape[d];
    }
    index
}

/// Everything needed to reproduce a case.
fn describe(seed: u64, text: &str, sizes: &Sizes) -> String {
    let sizes: Vec<String> = sizes.iter().map(|(k, v)| format!("{k}={v}")).collect();
    format!("case seed {seed:#x}, sizes {}\n{text}", sizes.join(" "))
}

fn show_regions(report: &Report) -> String {
    match &report.verdict {
        Verdict::Equivalent { .. } => "none (equivalent)".to_string(),
        Verdict::NotEquivalent { boxes } => boxes
            .iter()
            .map(|b| format!("output {} {}", b.output, b.show()))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

fn show_differences(d: &Differences) -> String {
    d.iter()
        .enumerate()
        .map(|(k, (shape, set))| {
            let first: Vec<String> = set.iter().take(12).map(|i| format!("{i:?}")).collect();
            format!(
                "output {k} of shape {shape:?}: {} differ{} {}",
                set.len(),
                if set.len() > 12 { ", first" } else { "" },
                first.join(" ")
            )
        })
        .collect::<Vec<_>>()
        .join("\n")
}

/// The verifier's report on `f` against `g` against the true differences:
/// the verdict is "not equivalent" exactly when some element differs, and
/// the regions are exactly the differing elements.
fn judge(report: &Report, truth: &Differences) -> Result<(), String> {
    if !matches!(report.method, Method::Exact { .. }) {
        return Err(format!("the exact test was not used: {:?}", report.method));
    }
    let differ = truth.iter().any(|(_, s)| !s.is_empty());
    match (&report.verdict, differ) {
        (Verdict::Equivalent { .. }, false) => Ok(()),
        (Verdict::Equivalent { .. }, true) => {
            Err("the verifier says equivalent, but elements differ".to_string())
        }
        (Verdict::NotEquivalent { .. }, false) => {
            Err("the verifier says not equivalent, but no element differs".to_string())
        }
        (Verdict::NotEquivalent { boxes }, true) => {
            for (k, (_, set)) in truth.iter().enumerate() {
                let mine: Vec<&Region> = boxes.iter().filter(|b| b.output == k).collect();
                if let Some(i) = set.iter().find(|i| !mine.iter().any(|b| b.contains(i))) {
                    return Err(format!(
                        "element {i:?} of output {k} differs but lies in no reported region"
                    ));
                }
                // Regions are disjoint, and each differing element is in
                // one: equal counts mean the regions are exactly the set.
                let covered: usize = mine.iter().map(|b| b.len()).sum();
                if covered != set.len() {
                    let agree = mine
                        .iter()
                        .find(|b| b.len() != set.iter().filter(|i| b.contains(i)).count());
                    return Err(format!(
                        "the regions of output {k} cover {covered} elements, but {} differ; region {} also holds elements that agree",
                        set.len(),
                        agree.map_or_else(String::new, |b| b.show())
                    ));
                }
            }
            if let Some(b) = boxes.iter().find(|b| b.output >= truth.len()) {
                return Err(format!(
                    "region of output {} which does not exist",
                    b.output
                ));
            }
            Ok(())
        }
    }
}

/// What a verification came to, when it agrees with the interpreter.
#[derive(Debug)]
enum Outcome {
    Equivalent,
    /// Not equivalent; unless the regions hold only differing elements,
    /// the case described.
    NotEquivalent {
        inexact: Option<String>,
    },
}

/// Verifies `g` against `f` (one program holding both) and judges the
/// report against the interpreter's differences.
fn compare(
    seed: u64,
    text: &str,
    program: &ir::Program,
    sizes: &Sizes,
    truth: &Differences,
) -> Result<Outcome, String> {
    let options = Options {
        sizes: sizes.iter().map(|(k, &v)| (k.clone(), v)).collect(),
        trials: None,
        seed,
    };
    let report = verify(program, "f", program, "g", &options)
        .map_err(|e| format!("{}\nthe verifier fails: {e}", describe(seed, text, sizes)))?;
    judge(&report, truth).map_err(|e| {
        format!(
            "{}\n{e}\nreported regions: {}\ntrue differences:\n{}",
            describe(seed, text, sizes),
            show_regions(&report),
            show_differences(truth)
        )
    })?;
    Ok(match &report.verdict {
        Verdict::Equivalent { .. } => Outcome::Equivalent,
        Verdict::NotEquivalent { boxes } => {
            let covered: usize = boxes.iter().map(Region::len).sum();
            let differ: usize = truth.iter().map(|(_, set)| set.len()).sum();
            Outcome::NotEquivalent {
                inexact: (covered != differ).then(|| {
                    format!(
                        "{}\nreported regions: {}\ntrue differences:\n{}",
                        describe(seed, text, sizes),
                        show_regions(&report),
                        show_differences(truth)
                    )
                }),
            }
        }
    })
}

#[derive(Debug, Default)]
struct Stats {
    families: BTreeMap<&'static str, usize>,
    rewrites: BTreeMap<&'static str, usize>,
    perturbations: BTreeMap<&'static str, usize>,
    equivalent_pairs: usize,
    perturbed_pairs: usize,
    perturbed_equivalent: usize,
    perturbed_not_equivalent: usize,
    /// Of those, how many reported exactly the differing elements (the
    /// test requires only that every region hold one), and the first that
    /// did not.
    exact_regions: usize,
    inexact_example: Option<String>,
    discarded: BTreeMap<String, usize>,
    float_literals: usize,
}

fn run_case(case: u64, stats: &mut Stats) -> Vec<String> {
    let seed = SEED ^ case.wrapping_mul(0x2545_f491_4f6c_dd1d);
    let mut rng = Rng::new(seed);
    let base = generate(&mut rng);
    let sizes = &base.sizes;
    *stats.families.entry(base.family).or_default() += 1;
    let f_text = base.prog.render("f", sizes);
    if let Err(e) = check(&f_text) {
        panic!(
            "the generator wrote a program that does not check:\n{}\n{e}",
            describe(seed, &f_text, sizes)
        );
    }
    stats.float_literals += usize::from(base.prog.has_float());
    let mut failures = Vec::new();

    // An equivalent copy: one to three rewrites.
    let mut g = base.prog.clone();
    let mut applied = Vec::new();
    let want = 1 + rng.below(3);
    for _ in 0..20 {
        if applied.len() == want {
            break;
        }
        let kind = rng.below(REWRITES.len());
        if let Some(q) = rewrite(&mut rng, &g, sizes, kind) {
            g = q;
            applied.push(kind);
        }
    }
    for &k in &applied {
        *stats.rewrites.entry(REWRITES[k]).or_default() += 1;
    }
    let text = format!("{f_text}{}", g.render("g", sizes));
    let program = check(&text).unwrap_or_else(|e| {
        panic!(
            "a rewrite ({:?}) wrote a program that does not check:\n{}\n{e}",
            applied.iter().map(|&k| REWRITES[k]).collect::<Vec<_>>(),
            describe(seed, &text, sizes)
        )
    });
    let rewrites: Vec<&str> = applied.iter().map(|&k| REWRITES[k]).collect();
    // The mod-p interpreter takes integer literals only: with a float
    // literal, real mode checks the generator.
    let modp = !base.prog.has_float() && !g.has_float();
    match differences(&program, sizes, seed, 1, modp) {
        Ok(d) if d.iter().all(|(_, s)| s.is_empty()) => {
            stats.equivalent_pairs += 1;
            if let Err(e) = compare(seed, &text, &program, sizes, &d) {
                failures.push(format!(
                    "case {case}, equivalent pair (rewrites {rewrites:?}): {e}"
                ));
            }
        }
        Ok(d) => panic!(
            "the generator's rewrites {rewrites:?} are not equivalent:\n{}\n{}",
            describe(seed, &text, sizes),
            show_differences(&d)
        ),
        Err(e) => panic!(
            "the generator wrote a program the interpreter rejects ({rewrites:?}):\n{}\n{e}",
            describe(seed, &text, sizes)
        ),
    }

    // Perturbed copies, of the base or of its rewritten copy, compared in
    // mod-p mode (no float literals).
    if base.prog.has_float() {
        return failures;
    }
    for n in 0..2 {
        let from = if n == 1 && !g.has_float() {
            &g
        } else {
            &base.prog
        };
        for _ in 0..ATTEMPTS {
            let Some((q, kind)) = perturb(&mut rng, from, sizes) else {
                continue;
            };
            let text = format!("{f_text}{}", q.render("g", sizes));
            let program = match check(&text) {
                Ok(p) => p,
                Err(e) => {
                    let reason = reason(e.lines().next().unwrap_or(""));
                    *stats.discarded.entry(reason).or_default() += 1;
                    continue;
                }
            };
            let truth = match differences(&program, sizes, seed, 2, true) {
                Ok(d) => d,
                Err(e) => {
                    let reason = if e.contains("shape") {
                        "output shape changed".to_string()
                    } else {
                        "the interpreter fails".to_string()
                    };
                    *stats.discarded.entry(reason).or_default() += 1;
                    continue;
                }
            };
            *stats.perturbations.entry(PERTURBATIONS[kind]).or_default() += 1;
            stats.perturbed_pairs += 1;
            match compare(seed, &text, &program, sizes, &truth) {
                Ok(Outcome::Equivalent) => stats.perturbed_equivalent += 1,
                Ok(Outcome::NotEquivalent { inexact }) => {
                    stats.perturbed_not_equivalent += 1;
                    stats.exact_regions += usize::from(inexact.is_none());
                    if stats.inexact_example.is_none() {
                        stats.inexact_example = inexact;
                    }
                }
                Err(e) => failures.push(format!(
                    "case {case}, perturbed pair ({}): {e}",
                    PERTURBATIONS[kind]
                )),
            }
            break;
        }
    }
    failures
}

/// A check's message with the names in backquotes left out, for counting.
fn reason(message: &str) -> String {
    let mut out = String::new();
    for (k, part) in message.split('`').enumerate() {
        out.push_str(if k % 2 == 1 { "_" } else { part });
    }
    out.split(':').take(2).collect::<Vec<_>>().join(":")
}

#[test]
fn random_programs_verify_as_the_interpreter_says() {
    let start = Instant::now();
    let mut stats = Stats::default();
    let mut failures = Vec::new();
    // `VERIFY_RANDOM_CASES=n` runs more (or fewer) cases.
    let cases = std::env::var("VERIFY_RANDOM_CASES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(CASES);
    for case in 0..cases {
        failures.extend(run_case(case, &mut stats));
    }
    let example = stats.inexact_example.take();
    println!("{stats:#?}");
    if let Some(e) = example {
        println!("the first case whose regions hold elements that agree:\n{e}");
    }
    println!("{:.1} s", start.elapsed().as_secs_f64());
    if !failures.is_empty() {
        for f in failures.iter().take(30) {
            eprintln!("{f}\n");
        }
        panic!(
            "{} of the cases failed (the first 30 above)",
            failures.len()
        );
    }
}

// ---------------------------------------------------------------------
// Hand-written pairs.

/// Verifies `g` against `f` of `text` at `sizes` and judges the report
/// against the mod-p interpreter, as the random cases are judged.
fn hand_pair(text: &str, sizes: &[(&str, i64)], seed: u64) -> Result<Report, String> {
    let sizes: Sizes = sizes.iter().map(|&(k, v)| (k.to_string(), v)).collect();
    let program = check(text)?;
    let truth = differences(&program, &sizes, seed, 2, true)?;
    let options = Options {
        sizes: sizes.iter().map(|(k, &v)| (k.clone(), v)).collect(),
        trials: None,
        seed,
    };
    let report = verify(&program, "f", &program, "g", &options)
        .map_err(|e| format!("{}\nthe verifier fails: {e}", describe(seed, text, &sizes)))?;
    judge(&report, &truth).map_err(|e| {
        format!(
            "{}\n{e}\nthe report:\n{}true differences:\n{}",
            describe(seed, text, &sizes),
            opt::verify::print_report(&report),
            show_differences(&truth)
        )
    })?;
    Ok(report)
}

/// The regions a report lists, as (output, ranges).
fn regions(report: &Report) -> Vec<(usize, Vec<(usize, usize)>)> {
    match &report.verdict {
        Verdict::Equivalent { .. } => Vec::new(),
        Verdict::NotEquivalent { boxes } => {
            boxes.iter().map(|b| (b.output, b.ranges.clone())).collect()
        }
    }
}

/// The regions expected, as (output, ranges).
type Expected = &'static [(usize, &'static [(usize, usize)])];

/// What a pair shows, the program, its sizes, and the regions expected
/// (`None`: whatever the interpreter says).
type HandCase = (
    &'static str,
    String,
    Vec<(&'static str, i64)>,
    Option<Expected>,
);

/// Pairs with `where` ranges, padding and concatenation: the exact test
/// agrees with the interpreter's mod-p mode element by element, with the
/// verdict and regions written down here.
#[test]
fn hand_written_pairs_agree_with_the_interpreter() {
    const CONV: &str = "def f(float(N) I, float(3) W) -> (O) {
  O(h) +=! I(h + x - 1) * W(x) where h in 0:N, x in 0:3
}
";
    const SLICE: &str = "def f(float(N) A) -> (O) {
  O(i) = A(i) where i in 2:N
}
";
    const CONCAT: &str = "def f(float(4, M) A, float(4, M) B) -> (O) {
  O(i, j) = i < 3 ? A(i, j) : B(i - 3, j) where i in 0:7, j in 0:M
}
";
    const STRIDED: &str = "def f(float(N) I, float(3) W) -> (O) {
  O(h) +=! I(2*h + x - 1) * W(x) where h in 0:4, x in 0:3
}
";
    const SHIFT: &str = "def f(float(N) A, float(2) W) -> (O) {
  T(i) = A(i) where i in 0:N
  O(i) +=! T(i + x) * W(x) where i in 0:N, x in 0:2
}
";
    const DILATED: &str = "def f(float(H, W) I, float(3, 3) K) -> (O) {
  O(h, w) +=! I(h + 2*x - 2, w + 2*y - 2) * K(x, y) where h in 0:H, w in 0:W, x in 0:3, y in 0:3
}
";
    let cases: Vec<HandCase> = vec![
        (
            "padding by skipped reads = padding by ?:",
            format!(
                "{CONV}def g(float(N) I, float(3) W) -> (O) {{
  P(i) = i >= 1 && i < N + 1 ? I(i - 1) : 0 where i in 0:N+2
  O(h) +=! P(h + x) * W(x) where h in 0:N, x in 0:3
}}
"
            ),
            vec![("N", 6)],
            Some(&[]),
        ),
        (
            "explicit padding one short",
            format!(
                "{CONV}def g(float(N) I, float(3) W) -> (O) {{
  P(i) = i >= 1 && i < N ? I(i - 1) : 0 where i in 0:N+2
  O(h) +=! P(h + x) * W(x) where h in 0:N, x in 0:3
}}
"
            ),
            vec![("N", 6)],
            Some(&[(0, &[(4, 6)])]),
        ),
        (
            "a slice = a ?: of zero",
            format!(
                "{SLICE}def g(float(N) A) -> (O) {{
  O(i) = i < 2 ? 0 : A(i) where i in 0:N
}}
"
            ),
            vec![("N", 6)],
            Some(&[]),
        ),
        (
            "a slice one row shorter",
            format!(
                "{SLICE}def g(float(N) A) -> (O) {{
  O(i) = A(i) where i in 3:N
}}
"
            ),
            vec![("N", 6)],
            Some(&[(0, &[(2, 3)])]),
        ),
        (
            "concatenation = two slices written",
            format!(
                "{CONCAT}def g(float(4, M) A, float(4, M) B) -> (O) {{
  O(i, j) = B(i - 3, j) where i in 3:7, j in 0:M
  O(i, j) = A(i, j) where i in 0:3, j in 0:M
}}
"
            ),
            vec![("M", 5)],
            Some(&[]),
        ),
        (
            "concatenation's cut moved",
            format!(
                "{CONCAT}def g(float(4, M) A, float(4, M) B) -> (O) {{
  O(i, j) = i < 4 ? A(i, j) : B(i - 3, j) where i in 0:7, j in 0:M
}}
"
            ),
            vec![("M", 5)],
            Some(&[(0, &[(3, 4), (0, 5)])]),
        ),
        (
            "a strided, padded reduction split in two",
            format!(
                "{STRIDED}def g(float(N) I, float(3) W) -> (O) {{
  O(h) +=! I(2*h + x - 1) * W(x) where h in 0:4, x in 0:1
  O(h) += I(2*h + x - 1) * W(x) where h in 1:4, x in 1:3
  O(h) += I(2*h + x - 1) * W(x) where h in 0:1, x in 1:3
}}
"
            ),
            vec![("N", 8)],
            Some(&[]),
        ),
        (
            "a strided reduction's range one short",
            format!(
                "{STRIDED}def g(float(N) I, float(3) W) -> (O) {{
  O(h) +=! I(2*h + x - 1) * W(x) where h in 0:4, x in 0:2
}}
"
            ),
            vec![("N", 8)],
            Some(&[(0, &[(0, 4)])]),
        ),
        (
            "a padded 2-d reduction, the last column's padding different",
            format!(
                "{STRIDED}def g(float(N) I, float(3) W) -> (O) {{
  O(h) +=! I(2*h + x - 1) * W(x) where h in 0:4, x in 0:3
  O(h) += I(2*h + x - 1) * W(x) where h in 3:4, x in 2:3
}}
"
            ),
            vec![("N", 7)],
            Some(&[]),
        ),
        (
            "matmul through transposed partial products",
            "def f(float(M, K) A, float(K, N) B) -> (C) {
  C(i, j) +=! A(i, k) * B(k, j)
}
def g(float(M, K) A, float(K, N) B) -> (C) {
  T(j, i) +=! B(k, j) * A(i, k) where k in 0:2
  U(j, i) +=! A(i, k) * B(k, j) where k in 2:K
  C(i, j) = T(j, i) + U(j, i)
}
"
            .to_string(),
            vec![("M", 3), ("K", 5), ("N", 4)],
            Some(&[]),
        ),
        (
            "an `=` temporary's first row left zero",
            format!(
                "{SHIFT}def g(float(N) A, float(2) W) -> (O) {{
  T(i) = A(i) where i in 1:N
  O(i) +=! T(i + x) * W(x) where i in 0:N, x in 0:2
}}
"
            ),
            vec![("N", 6)],
            Some(&[(0, &[(0, 1)])]),
        ),
        (
            "a dilated, padded 2-d convolution read one column over",
            format!(
                "{DILATED}def g(float(H, W) I, float(3, 3) K) -> (O) {{
  O(h, w) +=! I(h + 2*x - 2, w + 2*y - 1) * K(x, y) where h in 0:H, w in 0:W, x in 0:3, y in 0:3
}}
"
            ),
            vec![("H", 5), ("W", 6)],
            None,
        ),
        (
            "a dilated, padded 2-d convolution = its padding written out",
            format!(
                "{DILATED}def g(float(H, W) I, float(3, 3) K) -> (O) {{
  P(a, b) = a >= 2 && a < H + 2 ? (b >= 2 && b < W + 2 ? I(a - 2, b - 2) : 0) : 0 where a in 0:H+4, b in 0:W+4
  O(h, w) +=! K(x, y) * P(h + 2*x, w + 2*y) where h in 0:H, w in 0:W, x in 0:3, y in 0:3
}}
"
            ),
            vec![("H", 5), ("W", 6)],
            Some(&[]),
        ),
        (
            "reads along other directions, in a box small enough to test whole",
            "def f(float(N) X) -> (O) {
  O(i, j, k) = X(i + j) + X(k) where i in 0:2, j in 0:2, k in 0:2
}
def g(float(N) X) -> (O) {
  O(i, j, k) = X(i) + X(j + k) where i in 0:2, j in 0:2, k in 0:2
}
"
            .to_string(),
            vec![("N", 3)],
            Some(&[(0, &[(0, 1), (1, 2), (1, 2)]), (0, &[(1, 2), (1, 2), (0, 1)])]),
        ),
    ];
    for (what, text, sizes, expected) in &cases {
        for seed in [1, 2, 3] {
            let report = hand_pair(text, sizes, seed).unwrap_or_else(|e| panic!("{what}: {e}"));
            if let Some(expected) = expected {
                let want: Vec<(usize, Vec<(usize, usize)>)> =
                    expected.iter().map(|(k, r)| (*k, r.to_vec())).collect();
                assert_eq!(
                    regions(&report),
                    want,
                    "{what}: seed {seed}\n{text}\n{}",
                    opt::verify::print_report(&report)
                );
            }
        }
    }
}

// ---------------------------------------------------------------------
// Verifier bugs found by this test and while writing it, each as the
// smallest pair found, kept as regression tests.

/// Found by this test: two outputs of different ranks that both differ
/// made `region::merge` panic (it took the rank of the first region for
/// all of them), so `verify` answered "the verifier's thread panicked".
#[test]
fn outputs_of_different_ranks_that_both_differ() {
    let text = "def f(float(N, N) B, float(N) A) -> (P, O) {
  P(i, j) = B(i, j) where i in 0:N, j in 0:N
  O(i) = A(i) where i in 0:N
}
def g(float(N, N) B, float(N) A) -> (P, O) {
  P(i, j) = 2 * B(i, j) where i in 0:N, j in 0:N
  O(i) = 2 * A(i) where i in 0:N
}
";
    let report = hand_pair(text, &[("N", 3)], 1).unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(
        regions(&report),
        vec![(0, vec![(0, 3), (0, 3)]), (1, vec![(0, 3)])]
    );
}

/// Theorem 1's points (and the corners, and two random points per trial)
/// do not decide a box in which the two programs read along different
/// directions. `F(i) = X(6 - 2i) + X(2i) + X(3i + 3)` and `G(i) = X(3 - i)
/// + X(6) + X(4i)` agree at `i = 0, 1, 3` (the same three elements,
/// matched up differently) and differ at `i = 2`; here `f` and `g` differ
/// by `(F(i) - G(i)) * (F'(j) - G'(j))` (`F'`, `G'` the same over `Y`), so
/// only at `i = j = 2`: 5 elements of the 80 of the one box, none of them
/// a corner or a `v0 + e_j`. The verifier sees that the box is not uniform
/// (`X` is read along several directions) and tests it whole.
#[test]
fn reads_along_other_directions() {
    let text = "def f(float(N) X, float(N) Y) -> (O) {
  O(i, j, k) = (X(6 - 2*i) + X(2*i) + X(3*i + 3)) * (Y(6 - 2*j) + Y(2*j) + Y(3*j + 3)) + (X(3 - i) + X(6) + X(4*i)) * (Y(3 - j) + Y(6) + Y(4*j)) where i in 0:4, j in 0:4, k in 0:5
}
def g(float(N) X, float(N) Y) -> (O) {
  O(i, j, k) = (X(6 - 2*i) + X(2*i) + X(3*i + 3)) * (Y(3 - j) + Y(6) + Y(4*j)) + (X(3 - i) + X(6) + X(4*i)) * (Y(6 - 2*j) + Y(2*j) + Y(3*j + 3)) where i in 0:4, j in 0:4, k in 0:5
}
";
    let mut wrong = Vec::new();
    for seed in 0..32 {
        if let Err(e) = hand_pair(text, &[("N", 13)], seed) {
            wrong.push((seed, e));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of 32 seeds wrong; the first:\n{}",
        wrong.len(),
        wrong[0].1
    );
}
