//! The generator: random programs ([`Prog`]) drawn from a seeded [`Rng`]
//! by a [`Profile`], which says which element types, operators, sizes and
//! families of programs a property test wants.
//!
//! A family is a function that writes a whole program with the core
//! below: fresh inputs with symbolic or constant dimensions, iterators
//! with ranges, affine subscripts that stay in bounds or (in reductions)
//! reach past an edge as padding does, reads, `?:` concatenation and
//! padding pieces, and statements that are sums of products of reads
//! (with, where the profile allows, division, maximum and minimum). The
//! families here are the multi-statement ones every test shares
//! ([`FAMILIES`]); other files of this module add families for what one
//! boundary specializes on.
//!
//! Every program of these families checks at its sizes (a test that finds
//! one that does not reports a generator bug, with the program); a family
//! that also writes erroneous programs on purpose says so.

use std::collections::{BTreeMap, BTreeSet};

use ir::DType;

use super::program::{add, mul, sel, sub, Aff, Cond, Dim, Expr, Input, Iv, Op, Prog, Ranges, St};
use crate::Rng;

/// A family: writes its statements and outputs into `g`, or gives up
/// (`None`; the generator then draws again).
pub type Family = fn(&mut Gen) -> Option<()>;

/// What a property test wants generated.
#[derive(Clone, Copy, Debug)]
pub struct Profile {
    /// Element types, each with a weight.
    pub dtypes: &'static [(DType, u64)],
    /// Families by name, each with a weight.
    pub families: &'static [(&'static str, Family, u64)],
    /// Percent of float programs whose literals include dyadic floats
    /// (0.5, 0.25, ...); the others use small integers only.
    pub float_literals: u64,
    /// Whether bodies may divide and take maxima and minima (otherwise
    /// they are multi-linear: sums of products of reads and literals).
    pub nonlinear: bool,
    /// The widths of new left-hand and of new reduction iterators.
    pub lhs_widths: &'static [i64],
    pub reduction_widths: &'static [i64],
    /// The most points a generated statement iterates over.
    pub max_volume: i64,
    /// The most elements of a generated input.
    pub max_elements: i64,
}

/// The left-hand iterators of a statement, with their ranges: what a
/// later statement over the same box (`+=` onto it) starts from.
pub fn lhs_iters(st: &St) -> Vec<It> {
    st.idx
        .iter()
        .map(|v| {
            let (lo, hi) = st.range(v);
            It {
                name: v.clone(),
                lo,
                hi,
                lhs: true,
            }
        })
        .collect()
}

/// A generated program and the family that wrote it.
#[derive(Clone, Debug)]
pub struct Generated {
    pub family: &'static str,
    pub prog: Prog,
}

/// Draws a program.
pub fn generate(rng: &mut Rng, profile: &Profile) -> Generated {
    loop {
        let dtype = weighted(rng, profile.dtypes);
        let (family, write, _) = *weighted_entry(rng, profile.families);
        let floats = dtype.is_float() && rng.chance(profile.float_literals);
        let infer = rng.chance(50);
        let symbolic = rng.chance(50);
        let mut g = Gen {
            rng,
            profile: *profile,
            dtype,
            floats,
            sizes: BTreeMap::new(),
            inputs: Vec::new(),
            shapes: BTreeMap::new(),
            stmts: Vec::new(),
            outputs: Vec::new(),
            bounds: BTreeMap::new(),
        };
        if write(&mut g).is_none() || g.too_large() {
            continue;
        }
        let prog = Prog {
            dtype,
            inputs: g.inputs,
            stmts: g.stmts,
            outputs: g.outputs,
            sizes: g.sizes,
            infer,
            symbolic,
        };
        return Generated { family, prog };
    }
}

fn weighted_entry<'a, T>(rng: &mut Rng, xs: &'a [T]) -> &'a T
where
    T: Weighted,
{
    let total: u64 = xs.iter().map(Weighted::weight).sum();
    let mut x = rng.next_u64() % total.max(1);
    for e in xs {
        if x < e.weight() {
            return e;
        }
        x -= e.weight();
    }
    &xs[xs.len() - 1]
}

fn weighted<T: Copy>(rng: &mut Rng, xs: &[(T, u64)]) -> T {
    weighted_entry(rng, xs).0
}

trait Weighted {
    fn weight(&self) -> u64;
}

impl<T> Weighted for (T, u64) {
    fn weight(&self) -> u64 {
        self.1
    }
}

impl<A, B> Weighted for (A, B, u64) {
    fn weight(&self) -> u64 {
        self.2
    }
}

/// An iterator of a statement being generated.
#[derive(Clone, Debug)]
pub struct It {
    pub name: String,
    pub lo: i64,
    pub hi: i64,
    pub lhs: bool,
}

/// A program being generated.
#[derive(Debug)]
pub struct Gen<'r> {
    pub rng: &'r mut Rng,
    pub profile: Profile,
    pub dtype: DType,
    /// Whether literals may be dyadic floats.
    pub floats: bool,
    pub sizes: BTreeMap<String, i64>,
    pub inputs: Vec<Input>,
    /// The shape of every tensor so far.
    pub shapes: BTreeMap<String, Vec<i64>>,
    pub stmts: Vec<St>,
    pub outputs: Vec<String>,
    /// How the next statement's ranges are written (see [`St::bounds`]).
    pub bounds: BTreeMap<String, super::program::Bound>,
}

impl Gen<'_> {
    fn too_large(&self) -> bool {
        self.shapes
            .values()
            .any(|s| s.iter().product::<i64>() > self.profile.max_elements)
    }

    /// A fresh input of these extents: each dimension a new size symbol,
    /// one already there with that value, or a constant.
    pub fn input(&mut self, extents: &[i64]) -> String {
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
        self.param(&name, dims);
        name
    }

    /// Adds input `name` with these dimensions (their symbols must have
    /// sizes).
    pub fn param(&mut self, name: &str, dims: Vec<Dim>) {
        let extents = dims
            .iter()
            .map(|d| match d {
                Dim::Sym(s) => self.sizes[s],
                Dim::Const(n) => *n,
            })
            .collect();
        self.inputs.push(Input {
            name: name.to_string(),
            dims,
        });
        self.shapes.insert(name.to_string(), extents);
    }

    /// A literal of the program's type: a small integer, or (where
    /// allowed) a dyadic float.
    pub fn literal(&mut self) -> Expr {
        if self.floats && self.rng.chance(40) {
            Expr::Flt(self.rng.pick(&[0.5, 0.25, 1.5, 0.75]))
        } else {
            Expr::Int(self.rng.pick(&[2, 3, 2, 5, 1, 4]))
        }
    }

    /// A subscript over `its` (mentioning iterator `must`, if any) and the
    /// extent of a fresh input's dimension for it: in bounds, or with
    /// `pad`, sometimes reaching past either edge.
    pub fn subscript(&mut self, its: &[It], must: Option<usize>, pad: bool) -> (Aff, i64) {
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
    pub fn fresh_read(&mut self, its: &[It], must: &[usize], pad: bool) -> Expr {
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
        Expr::Read(name, subs)
    }

    /// `?:` over iterator `v`: its range cut into two or three pieces, each
    /// a read of a fresh input (concatenation) or zero (padding).
    pub fn concat(&mut self, its: &[It], v: usize) -> Expr {
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
        let pieces: Vec<Expr> = (0..n)
            .map(|p| {
                if zero_at == Some(p) {
                    return Expr::Int(0);
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
                Expr::Read(name, subs)
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
                Expr::Int(0),
            ),
            _ => sel(
                Cond::Lt(var.clone(), cuts[0]),
                pieces[0].clone(),
                sel(Cond::Lt(var, cuts[1]), pieces[1].clone(), pieces[2].clone()),
            ),
        }
    }

    /// Adds a new left-hand or reduction iterator to `its`, of a width the
    /// profile allows within the volume left; with `slice`, its range
    /// sometimes starts above 0.
    pub fn new_iter(&mut self, its: &mut Vec<It>, lhs: bool, slice: bool) {
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
        let most = (self.profile.max_volume / volume).max(1);
        let pool = if lhs {
            self.profile.lhs_widths
        } else {
            self.profile.reduction_widths
        };
        let fits: Vec<i64> = pool.iter().copied().filter(|&w| w <= most).collect();
        let width = if fits.is_empty() {
            1
        } else {
            self.rng.pick(&fits)
        };
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

    /// Combines two factors of a product: by `*`, or where the profile
    /// allows, sometimes by `/`, a maximum or a minimum.
    fn combine(&mut self, a: Expr, b: Expr) -> Expr {
        if !self.profile.nonlinear {
            return mul(a, b);
        }
        match self.rng.below(10) {
            0 => Expr::Max(Box::new(a), Box::new(b)),
            1 => Expr::Min(Box::new(a), Box::new(b)),
            // Integer inputs are 0 to 7: a bare divisor is sometimes zero,
            // which is an error on every path; float divisors are kept
            // away from zero.
            2 if self.dtype.is_int() && self.rng.chance(50) => Expr::Div(Box::new(a), Box::new(b)),
            2 if self.dtype.is_int() => Expr::Div(Box::new(a), Box::new(add(b, Expr::Int(1)))),
            2 => Expr::Div(Box::new(a), Box::new(add(b, Expr::Int(3)))),
            _ => mul(a, b),
        }
    }

    /// A statement `lhs(..) op body`: over `fixed` left-hand iterators (an
    /// update of an earlier tensor) or new ones; reading temporaries
    /// `temps` in full (shifted, padded, diagonally) when given; with
    /// `concat`, its first factor a `?:` concatenation.
    pub fn stmt(
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
                    its[last].lo = 0;
                    its[last].hi = e;
                    if lhs && e >= 2 && self.rng.chance(15) {
                        its[last].lo = 1;
                    }
                    Aff::var(&its[last].name)
                } else if x < 70 && e >= 2 {
                    self.new_iter(&mut its, lhs, false);
                    let last = its.len() - 1;
                    its[last].lo = 0;
                    its[last].hi = e - 1;
                    let mut a = Aff::var(&its[last].name);
                    a.c = 1;
                    a
                } else if x < 80 && reduce && its.len() < 5 && n_lhs < 4 {
                    // Padding: h + x - 1 over h in 0:e, x in 0:3.
                    self.new_iter(&mut its, true, false);
                    let h = its.len() - 1;
                    its[h].lo = 0;
                    its[h].hi = e;
                    self.new_iter(&mut its, false, false);
                    let r = its.len() - 1;
                    its[r].lo = 0;
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
            temp_reads.push(Expr::Read(t.to_string(), subs));
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
                        sub(a, b)
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
            let mut factors = factors.into_iter();
            let first = factors.next().expect("a factor");
            let mut term = factors.fold(first, |a, b| self.combine(a, b));
            if self.rng.chance(8) {
                term = Expr::Neg(Box::new(term));
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
            terms.insert(0, mul(first, Expr::Read(name, subs)));
        }
        let mut body = terms.remove(0);
        for t in terms {
            body = if self.profile.nonlinear && self.rng.chance(10) {
                Expr::Max(Box::new(body), Box::new(t))
            } else if self.rng.chance(20) {
                sub(body, t)
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
        let mut st = St::new(lhs, idx, op, body, ranges);
        st.bounds = std::mem::take(&mut self.bounds);
        st
    }

    /// `=` or `+=!`, evenly.
    fn any_op(&mut self) -> Op {
        if self.rng.chance(50) {
            Op::Assign
        } else {
            Op::Init(super::program::Agg::Add)
        }
    }
}

/// The multi-statement families every test shares: one reduction, one
/// `=`, a concatenation, chains of two and three statements through
/// temporaries, two independent temporaries read by one statement, and a
/// statement accumulating (`+=`) onto an earlier one.
pub const FAMILIES: [(&str, Family, u64); 7] = [
    ("reduce", reduce, 2),
    ("assign", assign, 1),
    ("concat", concat, 1),
    ("chain2", chain2, 1),
    ("chain3", chain3, 1),
    ("fork", fork, 1),
    ("acc", acc, 1),
];

/// [`FAMILIES`] and [`reduce_other`]: the shared families for profiles
/// that are not multi-linear.
pub const NONLINEAR_FAMILIES: [(&str, Family, u64); FAMILIES.len() + 1] = {
    let mut all = [("reduce-other", reduce_other as Family, 1); FAMILIES.len() + 1];
    let mut k = 0;
    while k < FAMILIES.len() {
        all[k] = FAMILIES[k];
        k += 1;
    }
    all
};

pub fn reduce(g: &mut Gen) -> Option<()> {
    let st = g.stmt("O", Op::Init(super::program::Agg::Add), None, &[], false);
    g.stmts.push(st);
    g.outputs.push("O".to_string());
    Some(())
}

/// A reduction by `*`, `max` or `min` (for profiles that are not
/// multi-linear; not in [`FAMILIES`]).
pub fn reduce_other(g: &mut Gen) -> Option<()> {
    use super::program::Agg;
    let agg = g.rng.pick(&[Agg::Max, Agg::Max, Agg::Min, Agg::Mul]);
    let st = g.stmt("O", Op::Init(agg), None, &[], false);
    g.stmts.push(st);
    g.outputs.push("O".to_string());
    Some(())
}

pub fn assign(g: &mut Gen) -> Option<()> {
    let st = g.stmt("O", Op::Assign, None, &[], false);
    g.stmts.push(st);
    g.outputs.push("O".to_string());
    Some(())
}

pub fn concat(g: &mut Gen) -> Option<()> {
    let op = g.any_op();
    let st = g.stmt("O", op, None, &[], true);
    g.stmts.push(st);
    g.outputs.push("O".to_string());
    Some(())
}

/// Two independent temporaries, both read by the output.
pub fn fork(g: &mut Gen) -> Option<()> {
    g.outputs.push("O".to_string());
    for t in ["T0", "T1"] {
        let op = g.any_op();
        let concat = g.rng.chance(25);
        let st = g.stmt(t, op, None, &[], concat);
        g.stmts.push(st);
    }
    let op = g.any_op();
    let st = g.stmt("O", op, None, &["T0", "T1"], false);
    g.stmts.push(st);
    if g.rng.chance(30) {
        g.outputs.push("T1".to_string());
    }
    Some(())
}

pub fn chain2(g: &mut Gen) -> Option<()> {
    chain(g, false)
}

pub fn chain3(g: &mut Gen) -> Option<()> {
    chain(g, true)
}

fn chain(g: &mut Gen, three: bool) -> Option<()> {
    g.outputs.push("O".to_string());
    let op = g.any_op();
    let concat = g.rng.chance(25);
    let st = g.stmt("T0", op, None, &[], concat);
    g.stmts.push(st);
    let mut last = "T0".to_string();
    if three {
        let op = g.any_op();
        let st = g.stmt("T1", op, None, &["T0"], false);
        g.stmts.push(st);
        last = "T1".to_string();
    }
    let op = g.any_op();
    let temps: &[&str] = if last == "T1" && g.rng.chance(30) {
        &["T1", "T0"]
    } else {
        &[&last]
    };
    let st = g.stmt("O", op, None, temps, false);
    g.stmts.push(st);
    if g.rng.chance(30) {
        g.outputs.push(last);
    }
    Some(())
}

/// A statement, then `+=` onto it over the same or a narrower box.
pub fn acc(g: &mut Gen) -> Option<()> {
    use super::program::Agg;
    g.outputs.push("O".to_string());
    let op = g.any_op();
    let concat = g.rng.chance(25);
    let first = g.stmt("O", op, None, &[], concat);
    let mut fixed = lhs_iters(&first);
    for it in &mut fixed {
        if it.hi - it.lo >= 2 && g.rng.chance(25) {
            if g.rng.chance(50) {
                it.lo += 1;
            } else {
                it.hi -= 1;
            }
        }
    }
    g.stmts.push(first);
    let agg = if g.profile.nonlinear && g.rng.chance(20) {
        Agg::Max
    } else {
        Agg::Add
    };
    let st = g.stmt("O", Op::Acc(agg), Some(fixed), &[], false);
    g.stmts.push(st);
    Some(())
}
