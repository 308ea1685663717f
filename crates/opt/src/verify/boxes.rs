//! Box propagation (PET §5.2): split points for every dimension of every
//! tensor version, such that inside each box of the grid they make, the
//! elements are polynomials of one shape.
//!
//! PET computes a box per operator from a table of operator types; here the
//! split points are derived from the comprehension itself, so every
//! statement the IR can express gets its boxes (concatenation, slicing,
//! padding, strides, dilation, reshapes, OffsetAdd, G2BMM alike). Every
//! subscript and integer condition is a [`Form`]; a condition `f >= 0` (an
//! *atom*) is uniform over a box when, for every point of the reduction box,
//! it has the same truth at every output point of the box. Atoms come from
//!
//! - every read `X(.., f, ..)`: `f - q >= 0` for every split point `q` of
//!   that dimension of `X`'s version (its bounds `0` and extent included),
//!   so each summation point reads one box of `X` across the output box,
//!   and the reads that fall outside `X` (padding) are the same;
//! - every comparison in a condition (`a < b` is `a - b >= 0` negated);
//! - every floor `floor(L / k)`: `L - k * j >= 0` at each multiple `k * j`
//!   inside `L`'s range, so the floor is constant and the subscript affine.
//!
//! An atom with one output iterator `v`, `a * v + r >= 0`, flips where `v`
//! crosses `-r / a` for the values `r` takes over the reduction box: those
//! are its split points (a few, for padding: the rows where the kernel
//! overhangs). An atom true (or false) everywhere adds none. An atom with
//! several output iterators, a subscript or condition that is not a form,
//! or an output iterator used as a value, splits its dimensions at every
//! point: always sound (boxes of one element), only slower. The statement's
//! own range bounds, and the earlier version's split points where it
//! accumulates or does not write, are split points too.
//!
//! Requires: a graph from `graph.rs`. Guarantees: every list is sorted,
//! starts at 0 and ends at the extent; never panics.

use std::collections::BTreeSet;

use ir::{floor_div, floor_mod, BinOp, UnOp};

use super::expr::{Comp, Ord, Read, Val};
use super::form::Form;
use super::graph::{covers, Graph, NodeKind};

/// Per dimension, the sorted split points (`0` and the extent included).
pub(crate) type Splits = Vec<Vec<i64>>;

/// The value set of an atom's remainder is enumerated up to this size;
/// beyond it, its interval is used (more split points, still sound).
const MAX_SET: usize = 4096;

/// The split points of every version of `g`, in node order.
pub(crate) fn propagate(g: &Graph) -> Vec<Splits> {
    let mut out: Vec<Splits> = Vec::with_capacity(g.nodes.len());
    for node in &g.nodes {
        let splits = match &node.kind {
            NodeKind::Input(_) | NodeKind::Zeros => {
                node.shape.iter().map(|&n| vec![0, n as i64]).collect()
            }
            NodeKind::Comp { comp, prev } => {
                let mut cx = Cx {
                    comp,
                    all: &out,
                    sets: node
                        .shape
                        .iter()
                        .map(|&n| BTreeSet::from([0, n as i64]))
                        .collect(),
                    dense: vec![false; comp.n_lhs],
                };
                if comp.accumulate || !covers(comp, &node.shape) {
                    for (set, p) in cx.sets.iter_mut().zip(&out[*prev]) {
                        set.extend(p);
                    }
                }
                for (set, &(lo, hi)) in cx.sets.iter_mut().zip(&comp.bounds) {
                    set.insert(lo);
                    set.insert(hi);
                }
                cx.val(&comp.body);
                for r in &comp.checks {
                    cx.read(r);
                }
                cx.sets
                    .into_iter()
                    .map(|s| s.into_iter().collect())
                    .collect()
            }
        };
        out.push(splits);
    }
    out
}

struct Cx<'a> {
    comp: &'a Comp,
    /// The split points of the earlier versions.
    all: &'a [Splits],
    sets: Vec<BTreeSet<i64>>,
    /// Output dimensions already split at every point.
    dense: Vec<bool>,
}

impl Cx<'_> {
    /// An iterator's inclusive range.
    fn range(&self, slot: usize) -> (i64, i64) {
        let (lo, hi) = self.comp.bounds[slot];
        (lo, hi - 1)
    }

    fn is_output(&self, slot: usize) -> bool {
        slot < self.comp.n_lhs
    }

    /// Splits output dimension `slot` at every point of its range.
    fn dense(&mut self, slot: usize) {
        if !self.is_output(slot) || self.dense[slot] {
            return;
        }
        self.dense[slot] = true;
        let (lo, hi) = self.comp.bounds[slot];
        self.sets[slot].extend(lo..=hi);
    }

    /// Splits every output dimension that `o` depends on at every point.
    fn dense_in(&mut self, o: &Ord) {
        let mut slots = Vec::new();
        o.slots(&mut slots);
        for s in slots {
            self.dense(s);
        }
    }

    fn val(&mut self, v: &Val) {
        v.walk(&mut |x| match x {
            Val::Iter(s) => {
                let s = *s;
                self.dense(s);
            }
            // A coefficient computed from output iterators is a polynomial
            // in them, which Theorem 1's lemma does not cover: no box.
            Val::Ord(o) => self.dense_in(o),
            Val::Read(r) => self.read(r),
            Val::Select(c, ..) => self.cond(c),
            _ => {}
        });
    }

    fn read(&mut self, r: &Read) {
        let all = self.all;
        for (d, s) in r.subs.iter().enumerate() {
            match s {
                Ord::Form(f) => {
                    self.floors(f);
                    self.atoms(f, &all[r.node][d]);
                }
                other => self.dense_in(other),
            }
        }
    }

    /// Atoms of a condition.
    fn cond(&mut self, o: &Ord) {
        match o {
            Ord::Binary(op, _, a, b) if op.is_comparison() => match (&**a, &**b) {
                (Ord::Form(f), Ord::Form(g)) => {
                    self.floors(f);
                    self.floors(g);
                    let diff = f.clone().add(g.clone().scale(-1));
                    // `f < g` and `f >= g` flip where `f - g >= 0` does;
                    // `f <= g` and `f > g` where `f - g - 1 >= 0` does.
                    let shifts: &[i64] = match op {
                        BinOp::Lt | BinOp::Ge => &[0],
                        BinOp::Le | BinOp::Gt => &[1],
                        _ => &[0, 1],
                    };
                    self.atoms(&diff, shifts);
                }
                _ => self.dense_in(o),
            },
            Ord::Binary(BinOp::And | BinOp::Or, _, a, b) => {
                self.cond(a);
                self.cond(b);
            }
            Ord::Unary(UnOp::Not, _, a) => self.cond(a),
            Ord::Select(c, a, b) => {
                self.cond(c);
                self.cond(a);
                self.cond(b);
            }
            Ord::Const(_) => {}
            other => self.dense_in(other),
        }
    }

    /// The atoms that keep every floor and modulo of `f` in one period
    /// over a box (a floor constant, a modulo affine).
    fn floors(&mut self, f: &Form) {
        for (fl, _) in f.floors.iter().chain(&f.mods) {
            self.floors(&fl.inner);
            let (a, b) = fl.inner.interval(&|s| self.range(s));
            let (first, last) = (floor_div(a, fl.divisor) + 1, floor_div(b, fl.divisor));
            if last - first >= MAX_SET as i64 {
                let mut slots = Vec::new();
                fl.inner.slots(&mut slots);
                slots.into_iter().for_each(|s| self.dense(s));
                continue;
            }
            let qs: Vec<i64> = (first..=last).map(|j| j * fl.divisor).collect();
            self.atoms(&fl.inner, &qs);
        }
    }

    /// The split points of the atoms `f - q >= 0` for every `q` in `qs`.
    ///
    /// Along one output dimension `v`, with everything else in the box
    /// fixed, the atom is `a * v + r >= 0` (`v` appearing directly) or
    /// `m * ((b * v + c) mod k) + r >= 0` (`v` inside one modulo), where `r`
    /// is the rest: the other output iterators, the reduction iterators and
    /// the floors and modulos without `v`, all constant inside a box (the
    /// floors' own atoms see to that). The truth flips only where `a * v`
    /// (or `m` times the modulo) crosses `-r` for a value `r` can take, so
    /// splitting `v` there, for every such value, leaves each box on one
    /// side: between two points of a box that differ in one dimension the
    /// truth cannot change. Dimensions used any other way split everywhere.
    fn atoms(&mut self, f: &Form, qs: &[i64]) {
        let mut slots = Vec::new();
        f.slots(&mut slots);
        slots.retain(|&s| self.is_output(s) && !self.dense[s]);
        slots.sort_unstable();
        slots.dedup();
        if slots.is_empty() {
            return;
        }
        let (lo, hi) = f.interval(&|s| self.range(s));
        // Atoms true or false over the whole iteration box split nothing.
        let live: Vec<i64> = qs
            .iter()
            .copied()
            .filter(|&q| lo.saturating_sub(q) < 0 && hi.saturating_sub(q) >= 0)
            .collect();
        if live.is_empty() {
            return;
        }
        for slot in slots {
            match along(f, slot) {
                Along::Direct(a, rest) => {
                    let values = self.values(&rest);
                    self.direct(slot, a, &values, &live);
                }
                Along::Modulo(m, inner, divisor, rest) => {
                    let (rlo, rhi) = rest.interval(&|s| self.range(s));
                    self.periodic(slot, m, &inner, divisor, (rlo, rhi), &live);
                }
                Along::Floors => {}
                Along::Other => self.dense(slot),
            }
        }
    }

    /// Split points of `a * v + r - q >= 0` for `r` in `values`.
    fn direct(&mut self, slot: usize, a: i64, values: &Values, live: &[i64]) {
        let (vlo, vhi) = self.comp.bounds[slot];
        // The first `v` on the other side of the boundary.
        let flip = |r: i64| {
            if a > 0 {
                -floor_div(r, a)
            } else {
                floor_div(r, -a) + 1
            }
        };
        for &q in live {
            let points: Vec<i64> = match values {
                Values::Set(set) => set.iter().map(|&r| flip(r - q)).collect(),
                Values::Range(rlo, rhi) => {
                    let (p, r) = (flip(rlo - q), flip(rhi - q));
                    let (p, r) = (p.min(r).max(vlo + 1), p.max(r).min(vhi - 1));
                    (p..=r).collect()
                }
            };
            self.sets[slot].extend(points.into_iter().filter(|&p| vlo < p && p < vhi));
        }
    }

    /// Split points of `m * (inner mod k) + r - q >= 0` for `r` in
    /// `[rlo, rhi]`: every `v` where the modulo, moving from `v - 1` to `v`
    /// inside one period, crosses a threshold `q - r`.
    fn periodic(
        &mut self,
        slot: usize,
        m: i64,
        inner: &Form,
        k: i64,
        (rlo, rhi): (i64, i64),
        live: &[i64],
    ) {
        let (vlo, vhi) = self.comp.bounds[slot];
        let mut iters = vec![0; self.comp.bounds.len()];
        let mut at = |v: i64| {
            iters[slot] = v;
            inner.eval(&iters)
        };
        for v in vlo + 1..vhi {
            let (x, y) = (at(v - 1), at(v));
            if floor_div(x, k) != floor_div(y, k) {
                // A new period: the floor atoms split here already.
                continue;
            }
            let (a, b) = (m * floor_mod(x, k), m * floor_mod(y, k));
            let (a, b) = (a.min(b), a.max(b));
            // The truth of `m * u + r - q >= 0` differs between the two
            // when `q - r` lies in `(a, b]`.
            let crosses = live.iter().any(|&q| q - rhi <= b && q - rlo > a);
            if crosses {
                self.sets[slot].insert(v);
            }
        }
    }

    /// The values a form without output iterators takes over the reduction
    /// box: a set when small, else an interval.
    fn values(&self, f: &Form) -> Values {
        if !f.floors.is_empty() || !f.mods.is_empty() {
            let (lo, hi) = f.interval(&|s| self.range(s));
            return Values::Range(lo, hi);
        }
        let mut set = BTreeSet::from([f.constant]);
        for &(s, k) in &f.iters {
            let (lo, hi) = self.range(s);
            if set.len() as i128 * (i128::from(hi) - i128::from(lo) + 1) > MAX_SET as i128 {
                let (lo, hi) = f.interval(&|s| self.range(s));
                return Values::Range(lo, hi);
            }
            set = set
                .iter()
                .flat_map(|&x| (lo..=hi).map(move |v| x.wrapping_add(k.wrapping_mul(v))))
                .collect();
        }
        Values::Set(set)
    }
}

/// How an atom depends on one output iterator.
enum Along {
    /// `a * v + rest`.
    Direct(i64, Form),
    /// `m * (inner mod k) + rest`, `inner` affine in `v` alone.
    Modulo(i64, Form, i64, Form),
    /// Only inside floors, which are constant in a box.
    Floors,
    Other,
}

/// Splits `f` into its part in output iterator `slot` and the rest.
fn along(f: &Form, slot: usize) -> Along {
    let direct = f.iters.iter().find(|t| t.0 == slot).map(|t| t.1);
    let in_floors = f.floors.iter().any(|(fl, _)| fl.inner.uses(slot));
    let mods: Vec<usize> = (0..f.mods.len())
        .filter(|&k| f.mods[k].0.inner.uses(slot))
        .collect();
    match (direct, &mods[..]) {
        (None, []) => Along::Floors,
        // A floor of `v` next to `v` itself is constant in a box, so it
        // belongs to the rest, whose range it widens.
        (Some(a), []) => Along::Direct(
            a,
            Form {
                iters: f.iters.iter().copied().filter(|t| t.0 != slot).collect(),
                ..f.clone()
            },
        ),
        (None, [k]) if !in_floors => {
            let (fl, m) = &f.mods[*k];
            let single = fl.inner.iters.iter().all(|t| t.0 == slot)
                && fl.inner.floors.is_empty()
                && fl.inner.mods.is_empty();
            if !single {
                return Along::Other;
            }
            let mut rest = f.clone();
            rest.mods.remove(*k);
            Along::Modulo(*m, fl.inner.clone(), fl.divisor, rest)
        }
        _ => Along::Other,
    }
}

enum Values {
    Set(BTreeSet<i64>),
    /// Inclusive.
    Range(i64, i64),
}
