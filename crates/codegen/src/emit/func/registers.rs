//! Accumulators held in vector registers: a register-blocked reduction.
//!
//! The vector block of a convolution or matmul tile accumulates into a
//! local array (`interchange`'s accumulator rows), one 16-lane row per
//! jammed point, inside the block's reduction loops. Written as loads and
//! stores of the array in the innermost body, gcc keeps those rows in
//! memory (a load and a store around every add), and a jammed loop whose
//! bounds move with an outer index (a convolution's row near the padding)
//! is not unrolled at all. Here the rows become `__m512` variables: loaded
//! once before the block's loops, updated in registers at every point, and
//! stored once after them; the jammed loop (or loops, for a register block
//! of several jammed indices) is unrolled, each point under a guard of its
//! bounds.
//!
//! Applies when the block's every store goes to a local array at an
//! address that, lane 0 taken, is a constant plus multiples of the jammed
//! indices (so it does not move inside the block's own loops), with all 16
//! lanes inside the array, no statement of the block loads from that
//! array, and the jammed loops have at most [`MAX_POINTS`] points in all.
//!
//! Guarantees: the same values in the same order as the loop it replaces:
//! each register is the array row it stands for, every update is the
//! masked operation the store would have done on that row, and nothing
//! else reads or writes the row while the block runs.

use std::collections::{BTreeMap, HashMap};

use kernel::{Block, StmtKind};

use super::vector::{Lanes, Vectors, LANES};
use super::{Base, Func, Lin, View};

/// The most jammed points unrolled with their accumulators in registers:
/// AVX-512's 32 vector registers less one loaded vector and one broadcast,
/// the fewest a register-blocked reduction needs. `vectorize` sizes jams
/// by the target's register model, so this refuses only jams made for a
/// larger register file than the one this code runs on.
pub(super) const MAX_POINTS: i64 = 30;

/// The accumulators of one vector block while its body is emitted.
pub(super) struct Registers {
    /// The jammed indices' C variables, outermost first.
    jam: Vec<usize>,
    /// The jammed point being emitted: a value of each jammed index.
    point: Vec<i64>,
    /// Per local array and constant lane-0 offset: the register's C name
    /// and the array row it holds.
    rows: BTreeMap<(usize, i64), (String, String)>,
}

impl Func<'_> {
    /// The jammed points to unroll with the block's accumulators in
    /// registers, each a value of every jammed index in row-major order
    /// (one empty point when there is no jammed index), or `None` when the
    /// block does not qualify (see the module doc).
    pub(super) fn register_points(
        &self,
        b: &Block,
        views: &HashMap<String, View>,
        lanes: &Lanes,
    ) -> Option<Vec<Vec<i64>>> {
        let jam: Vec<usize> = lanes.jam.iter().map(|j| j.var).collect();
        let mut accumulators = Vec::new();
        for s in &b.stmts {
            if let StmtKind::Store { into, .. } = &s.kind {
                let v = views.get(into)?;
                let Base::Local(k) = v.base else {
                    return None;
                };
                let lane0 = self.lane0(v, lanes.var, &jam)?;
                let (lo, hi) = self.range(&lane0);
                let whole =
                    lo >= 0 && i128::from(hi) + i128::from(LANES) <= i128::from(self.locals[k].2);
                if !whole {
                    return None;
                }
                accumulators.push(k);
            }
        }
        let loads_accumulator = b.stmts.iter().any(|s| match &s.kind {
            StmtKind::Load { from, .. } => views
                .get(from)
                .is_some_and(|v| matches!(v.base, Base::Local(k) if accumulators.contains(&k))),
            _ => false,
        });
        if accumulators.is_empty() || loads_accumulator {
            return None;
        }
        let mut points: Vec<Vec<i64>> = vec![Vec::new()];
        for &j in &jam {
            let var = &self.vars[j];
            points = points
                .into_iter()
                .flat_map(|p| {
                    (var.lo..=var.hi).map(move |x| p.iter().copied().chain([x]).collect())
                })
                .collect();
            if points.len() > MAX_POINTS as usize {
                return None;
            }
        }
        Some(points)
    }

    /// The lane-0 offset of a view written by a vector store, if it moves
    /// by 1 per lane and otherwise only with the jammed indices.
    fn lane0(&self, v: &View, lane: usize, jam: &[usize]) -> Option<Lin> {
        if v.origin.coef(lane) != 1 {
            return None;
        }
        let lane0 = v.origin.add_scaled(&Lin::var(lane), -1)?;
        lane0.terms.keys().all(|t| jam.contains(t)).then_some(lane0)
    }

    /// The register holding the row a store to `v` writes at the current
    /// point, made on first use.
    pub(super) fn accumulator(
        &mut self,
        regs: &mut Registers,
        v: &View,
        lane: usize,
    ) -> Option<String> {
        let Base::Local(k) = v.base else {
            return None;
        };
        let lane0 = self.lane0(v, lane, &regs.jam)?;
        let mut offset = lane0.constant;
        for (&j, &x) in regs.jam.iter().zip(&regs.point) {
            offset = offset.checked_add(lane0.coef(j).checked_mul(x)?)?;
        }
        if let Some((name, _)) = regs.rows.get(&(k, offset)) {
            return Some(name.clone());
        }
        let name = self.names.fresh("acc");
        let row = self.element(v.base, &offset.to_string());
        regs.rows.insert((k, offset), (name.clone(), row));
        Some(name)
    }

    /// Emits the statements of a vector block that vary with the jammed
    /// indices (`varying`) once per jammed point of `points`, unrolled, each
    /// under guards of the jammed loops' bounds where they may not hold,
    /// its accumulators in registers; `hoisted` are the vectors computed
    /// once before. Returns the registers and the rows they hold, or `None`
    /// when a statement does not qualify.
    pub(super) fn register_blocked(
        &mut self,
        views: &HashMap<String, View>,
        hoisted: &Vectors,
        varying: &[&StmtKind],
        lanes: &Lanes,
        mask: &str,
        points: Vec<Vec<i64>>,
    ) -> Option<Vec<(String, String)>> {
        let mut regs = Registers {
            jam: lanes.jam.iter().map(|j| j.var).collect(),
            point: Vec::new(),
            rows: BTreeMap::new(),
        };
        for point in points {
            self.line("{");
            self.depth += 1;
            let mut opened = 1;
            // Each index's value, then its guard: an inner jammed loop's
            // bounds may read an outer one's value.
            for (j, &x) in lanes.jam.iter().zip(&point) {
                let n = self.vars[j.var].name.clone();
                self.line(format!("const int64_t {n} = {x};"));
                // Points inside the bounds for every value of the loops
                // around need no guard (constant bounds included).
                if !(j.always.0 <= x && x < j.always.1) {
                    self.line(format!("if ({} <= {n} && {n} < {}) {{", j.lo, j.hi));
                    self.depth += 1;
                    opened += 1;
                }
            }
            regs.point = point;
            let mut vectors = hoisted.clone();
            for kind in varying {
                if !self.vector_stmt(kind, views, &mut vectors, lanes.var, mask, Some(&mut regs)) {
                    return None;
                }
            }
            for _ in 0..opened {
                self.depth -= 1;
                self.line("}");
            }
        }
        Some(regs.rows.into_values().collect())
    }
}
