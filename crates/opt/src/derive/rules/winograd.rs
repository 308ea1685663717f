//! Winograd minimal filtering (Lavin and Gray, "Fast Algorithms for
//! Convolutional Neural Networks"): a stride-1, dilation-1 convolution
//! computed with fewer multiplications. Along a tiled axis, `m` outputs of
//! an `r`-tap correlation come from one tile of `α = m + r - 1` inputs as
//! `Aᵀ [(G g) ⊙ (Bᵀ d)]`: `α` products instead of `m·r`. Over the
//! channels, the products at each of the `α` (or `α²`) transform positions
//! are one matrix product, so the statement becomes
//!
//! - coefficient tables `G`, `Bᵀ`, `Aᵀ` (comprehensions without inputs,
//!   computed once),
//! - the filter transform `U(a…, f, c, k…) +=! W(…) · G(a, r)…`, which
//!   reads only the weight (at load when the weight is a constant),
//! - the input transform `V(a…, c, k…, n, t…) +=! X(…) · Bᵀ(a, i)…` over
//!   the tiles, whose reads outside the image are skipped as the
//!   statement's own reduction skips them (its zero padding),
//! - the products `M(a…, f, n, t…) +=! U(a…, f, c, k…) · V(a…, c, k…, n,
//!   t…)`, a batched matmul over the transform positions, left open for
//!   operator matching,
//! - the output transform writing the original tensor at the original
//!   points only (a last tile reaching past the output writes nothing
//!   there): `O(…) op= M(a…, f, n, o / m…) · Aᵀ(o % m, a)…`.
//!
//! Offered: `F(2×2, 3×3)` and `F(4×4, 3×3)` for 3×3 kernels, and `F(2, 5)`
//! and `F(4, 5)` along the width for kernels 5 wide (their height summed
//! in the matmul as a channel: `V` then holds one row of the image per
//! kernel row). The matrices are computed from Cook–Toom interpolation
//! points (0, 1, -1, 2, -2, 1/2, -1/2 and ∞) in exact rational arithmetic,
//! and written as `num / den` literals, so that the verifier evaluates
//! them exactly over Z_p.
//!
//! Requires an open `+` reduction whose iterator mapping table matches a
//! 2-D convolution (`ir::opmatch::conv`, any layout it reports, padded or
//! not) with stride and dilation 1, a body that is the product of the
//! image's and the weight's reads, a floating-point output, and each tiled
//! axis's output at least one tile long. Guarantees: the same outputs
//! over exact arithmetic — `Aᵀ[(G g) ⊙ (Bᵀ d)]` is the correlation of `d`
//! with `g` as polynomial identities (Toom–Cook's interpolation,
//! transposed), the tiles cover every output point, and a tile's input
//! outside the image is the padding's zero; in floating point the
//! transforms round differently (F(4×4, 3×3) loses a few bits: see
//! `bench/derive/README.md`).

use std::collections::HashMap;

use ir::opmatch::{self, ConvShape};
use ir::{BinOp, Comprehension, DType, Expr, IterRange, Reduction, Value};

use super::{Applied, Rule};
use crate::derive::scope::rewrite;
use crate::derive::state::{bounds, fresh_iter, iter_range, range, State, Status};
use crate::derive::subscript::Linear;

pub struct WinogradMinimalFiltering;

/// The finite interpolation points, taken in this order: small magnitudes
/// first keep the transforms' constants (and their rounding) small.
const POINTS: [(i64, i64); 7] = [(0, 1), (1, 1), (-1, 1), (2, 1), (-2, 1), (1, 2), (-1, 2)];

/// A rational number `num / den`, `den > 0`, in lowest terms.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Q {
    num: i64,
    den: i64,
}

fn gcd(a: i64, b: i64) -> i64 {
    if b == 0 {
        a.abs()
    } else {
        gcd(b, a % b)
    }
}

impl Q {
    fn new(num: i64, den: i64) -> Option<Q> {
        if den == 0 {
            return None;
        }
        let g = gcd(num, den).max(1);
        let s = if den < 0 { -1 } else { 1 };
        Some(Q {
            num: num.checked_div(g)?.checked_mul(s)?,
            den: den.checked_div(g)?.checked_mul(s)?,
        })
    }

    fn int(v: i64) -> Q {
        Q { num: v, den: 1 }
    }

    fn add(self, o: Q) -> Option<Q> {
        Q::new(
            self.num
                .checked_mul(o.den)?
                .checked_add(o.num.checked_mul(self.den)?)?,
            self.den.checked_mul(o.den)?,
        )
    }

    fn mul(self, o: Q) -> Option<Q> {
        Q::new(self.num.checked_mul(o.num)?, self.den.checked_mul(o.den)?)
    }

    fn div(self, o: Q) -> Option<Q> {
        Q::new(self.num.checked_mul(o.den)?, self.den.checked_mul(o.num)?)
    }

    fn neg(self) -> Q {
        Q {
            num: -self.num,
            den: self.den,
        }
    }

    /// The literal `num / den` (or `num`) of type `dtype`: a division by a
    /// literal is exact over Z_p, a rounded decimal would not be.
    fn literal(self, dtype: DType) -> Expr {
        let lit = |v: i64| Expr::Lit(Value::Float(v as f64), dtype);
        if self.den == 1 {
            lit(self.num)
        } else {
            Expr::binary(BinOp::Div, lit(self.num), lit(self.den))
        }
    }
}

/// The matrices of `F(m, r)`: `y = Aᵀ [(G g) ⊙ (Bᵀ d)]` for `y_i = Σ_k
/// g_k d_{i+k}`, `i < m`, over a tile `d` of `α = m + r - 1` inputs.
#[derive(Clone, Debug, PartialEq)]
struct Transform {
    m: usize,
    r: usize,
    /// `m × α`.
    at: Vec<Vec<Q>>,
    /// `α × r`.
    g: Vec<Vec<Q>>,
    /// `α × α`.
    bt: Vec<Vec<Q>>,
}

/// The coefficients of `Π (x - p)` over `points`, lowest degree first.
fn product(points: &[Q]) -> Option<Vec<Q>> {
    let mut c = vec![Q::int(1)];
    for &p in points {
        let mut next = vec![Q::int(0); c.len() + 1];
        for (i, &ci) in c.iter().enumerate() {
            next[i + 1] = next[i + 1].add(ci)?;
            next[i] = next[i].add(ci.mul(p)?.neg())?;
        }
        c = next;
    }
    Some(c)
}

/// Toom–Cook's `F(m, r)` from the first `m + r - 2` of [`POINTS`] and ∞.
/// The polynomial product `s = g·h` (degrees `r - 1` and `m - 1`) is
/// evaluated at the points (∞ gives the leading coefficient) and
/// interpolated: `s = Σ_j s(p_j) L_j + s_∞ Π (x - p_l)`. The correlation
/// is that algorithm transposed: `Aᵀ` evaluates `h`'s basis (`p_j^i`),
/// `G` evaluates `g` divided by `L_j`'s denominator `Π_{l≠j} (p_j - p_l)`,
/// and `Bᵀ`'s rows are the numerators `Π_{l≠j} (x - p_l)` and `Π (x - p_l)`.
fn transform(m: usize, r: usize) -> Option<Transform> {
    let alpha = m + r - 1;
    if m == 0 || r == 0 || alpha - 1 > POINTS.len() {
        return None;
    }
    let points: Vec<Q> = POINTS[..alpha - 1]
        .iter()
        .map(|&(n, d)| Q::new(n, d))
        .collect::<Option<_>>()?;
    let pow = |p: Q, e: usize| (0..e).try_fold(Q::int(1), |acc, _| acc.mul(p));
    let mut at = vec![vec![Q::int(0); alpha]; m];
    for (i, row) in at.iter_mut().enumerate() {
        for (j, &p) in points.iter().enumerate() {
            row[j] = pow(p, i)?;
        }
        row[alpha - 1] = Q::int(i64::from(i == m - 1));
    }
    let mut g = vec![vec![Q::int(0); r]; alpha];
    let mut bt = vec![vec![Q::int(0); alpha]; alpha];
    for (j, &p) in points.iter().enumerate() {
        let others: Vec<Q> = points
            .iter()
            .enumerate()
            .filter(|&(l, _)| l != j)
            .map(|(_, &q)| q)
            .collect();
        let denominator = others
            .iter()
            .try_fold(Q::int(1), |acc, &q| acc.mul(p.add(q.neg())?))?;
        for (k, gk) in g[j].iter_mut().enumerate() {
            *gk = pow(p, k)?.div(denominator)?;
        }
        for (i, &c) in product(&others)?.iter().enumerate() {
            bt[j][i] = c;
        }
    }
    g[alpha - 1][r - 1] = Q::int(1);
    bt[alpha - 1] = product(&points)?;
    Some(Transform { m, r, at, g, bt })
}

/// How one spatial axis of the convolution is computed.
#[derive(Clone, Debug)]
enum Axis {
    /// Summed directly: its kernel iterator joins the channels in the
    /// matmul's reduction.
    Kept,
    Tiled(Transform),
}

/// The axis plans offered for kernel extents `(kh, kw)`.
fn plans(kh: u64, kw: u64) -> Vec<[Axis; 2]> {
    let tiled = |m| transform(m, 3).map(Axis::Tiled);
    let mut out = Vec::new();
    if kh == 3 && kw == 3 {
        for m in [2, 4] {
            if let Some(t) = tiled(m) {
                out.push([t.clone(), t]);
            }
        }
    }
    if kw == 5 {
        for m in [2, 4] {
            if let Some(t) = transform(m, 5) {
                out.push([Axis::Kept, Axis::Tiled(t)]);
            }
        }
    }
    out
}

/// An iterator's range as `(lo, extent)`.
fn span(c: &Comprehension, name: &str) -> Option<(i64, i64)> {
    range(c, name).map(|(lo, hi)| (lo, hi - lo))
}

/// The coefficient table `rows × cols` as a comprehension without inputs:
/// a select on the row, then on the column, zeros left out.
fn table(name: &str, entries: &[Vec<Q>], dtype: DType) -> Comprehension {
    let zero = Expr::Lit(Value::Float(0.0), dtype);
    let is = |it: &str, v: usize| {
        Expr::binary(BinOp::Eq, Expr::Iter(it.to_string()), Expr::int(v as i64))
    };
    let mut body = zero.clone();
    for (i, row) in entries.iter().enumerate().rev() {
        let mut value = zero.clone();
        for (j, q) in row.iter().enumerate().rev() {
            if q.num != 0 {
                value = Expr::Select(
                    Box::new(is("j", j)),
                    Box::new(q.literal(dtype)),
                    Box::new(value),
                );
            }
        }
        body = Expr::Select(Box::new(is("i", i)), Box::new(value), Box::new(body));
    }
    let cols = entries.first().map_or(0, Vec::len) as i64;
    Comprehension {
        tensor: name.to_string(),
        indices: vec!["i".to_string(), "j".to_string()],
        op: Reduction::Assign,
        init: false,
        body,
        ranges: vec![
            iter_range("i", 0, entries.len() as i64),
            iter_range("j", 0, cols),
        ],
        lets: Vec::new(),
        exists: Vec::new(),
    }
}

fn iter(n: &str) -> Expr {
    Expr::Iter(n.to_string())
}

fn read(t: &str, ix: Vec<Expr>) -> Expr {
    Expr::Read(t.to_string(), ix)
}

fn mul(a: Expr, b: Expr) -> Expr {
    Expr::binary(BinOp::Mul, a, b)
}

/// `name + k` as a substitution's target.
fn shifted(name: &str, k: i64) -> Option<Linear> {
    Linear::iter(name).plus(&Linear::constant(k))
}

/// A `+=!` statement over `ranges` (the left-hand side's first) whose
/// body's original iterators are replaced by `to`.
fn scope(
    tensor: &str,
    indices: &[String],
    body: Expr,
    ranges: Vec<IterRange>,
    to: &HashMap<String, Linear>,
) -> Comprehension {
    let mut c = Comprehension {
        tensor: tensor.to_string(),
        indices: indices.to_vec(),
        op: Reduction::Add,
        init: true,
        body,
        ranges,
        lets: Vec::new(),
        exists: Vec::new(),
    };
    rewrite(&mut c, to);
    order_reductions(&mut c);
    c
}

/// The reduction iterators' ranges in order of first appearance in the
/// body, as a checked program has them (so the printed text reads back as
/// the same statement).
fn order_reductions(c: &mut Comprehension) {
    fn visit(e: &Expr, seen: &mut Vec<String>) {
        if let Expr::Iter(n) = e {
            if !seen.contains(n) {
                seen.push(n.clone());
            }
        }
        for k in e.children() {
            visit(k, seen);
        }
    }
    let mut seen = Vec::new();
    visit(&c.body, &mut seen);
    let lhs = c.indices.len();
    let key = |r: &IterRange| seen.iter().position(|n| *n == r.name).unwrap_or(usize::MAX);
    if let Some(sums) = c.ranges.get_mut(lhs..) {
        sums.sort_by_key(key);
    }
}

/// The roles' iterators of a matched convolution, with `(lo, extent)`.
struct Roles {
    n: (String, i64, i64),
    f: (String, i64, i64),
    c: (String, i64, i64),
    /// Output and kernel iterator per spatial axis (height, width).
    out: [(String, i64, i64); 2],
    ker: [(String, i64, i64); 2],
}

fn roles(c: &Comprehension, s: &ConvShape) -> Option<Roles> {
    let role = |r: &opmatch::Role| {
        let (lo, ext) = span(c, &r.iter)?;
        Some((r.iter.clone(), lo, ext))
    };
    Some(Roles {
        n: role(&s.n)?,
        f: role(&s.f)?,
        c: role(&s.c)?,
        out: [role(&s.oh)?, role(&s.ow)?],
        ker: [role(&s.kh)?, role(&s.kw)?],
    })
}

impl Rule for WinogradMinimalFiltering {
    fn name(&self) -> &'static str {
        "Winograd minimal filtering"
    }

    fn apply(&self, state: &State, at: usize, out: &mut Vec<Applied>) {
        let c = state.comp(at);
        if state.status[at] != Status::Open || c.op != Reduction::Add || !c.exists.is_empty() {
            return;
        }
        let Some(dtype) = state.dtype(&c.tensor).filter(|t| t.is_float()) else {
            return;
        };
        let Ok(t) = opmatch::table(&state.def, c) else {
            return;
        };
        let Ok(shape) = opmatch::conv(&t) else {
            return;
        };
        if shape.stride != [1, 1] || shape.dilation != [1, 1] {
            return;
        }
        let (Some(image), Some(weight)) = (t.inputs.get(shape.input), t.inputs.get(shape.weight))
        else {
            return;
        };
        // The body must be the two reads' product and nothing else (a
        // guard restating the image's bounds is left alone).
        let Expr::Binary(BinOp::Mul, a, b) = &c.body else {
            return;
        };
        let (x_read, w_read) = match (a.as_ref(), b.as_ref()) {
            (Expr::Read(p, _), Expr::Read(q, _)) if *p == image.tensor && *q == weight.tensor => {
                (a.as_ref(), b.as_ref())
            }
            (Expr::Read(p, _), Expr::Read(q, _)) if *p == weight.tensor && *q == image.tensor => {
                (b.as_ref(), a.as_ref())
            }
            _ => return,
        };
        if image.tensor == weight.tensor || image.tensor == c.tensor || weight.tensor == c.tensor {
            return;
        }
        let Some(roles) = roles(c, &shape) else {
            return;
        };
        for plan in plans(shape.kh.extent, shape.kw.extent) {
            if let Some(a) = winograd(state, at, dtype, &roles, x_read, w_read, &plan) {
                out.push(a);
            }
        }
    }
}

/// The state with statement `at` computed by `plan`; `None` when a tiled
/// axis's output is shorter than a tile.
fn winograd(
    state: &State,
    at: usize,
    dtype: DType,
    roles: &Roles,
    x_read: &Expr,
    w_read: &Expr,
    plan: &[Axis; 2],
) -> Option<Applied> {
    let c = state.comp(at);
    for (d, axis) in plan.iter().enumerate() {
        if let Axis::Tiled(tr) = axis {
            if roles.out[d].2 < tr.m as i64 || roles.ker[d].2 != tr.r as i64 {
                return None;
            }
        }
    }
    let mut next = state.clone();
    // One set of tables per distinct transform (a 2-D plan shares its).
    let mut tables: Vec<(Transform, [String; 3])> = Vec::new();
    let mut stmts: Vec<(Comprehension, Status)> = Vec::new();
    for axis in plan {
        let Axis::Tiled(tr) = axis else { continue };
        if tables.iter().any(|(t, _)| t == tr) {
            continue;
        }
        let alpha = (tr.m + tr.r - 1) as i64;
        let names = [
            next.fresh_tensor(dtype, &[alpha, tr.r as i64]),
            next.fresh_tensor(dtype, &[alpha, alpha]),
            next.fresh_tensor(dtype, &[tr.m as i64, alpha]),
        ];
        for (name, entries) in names.iter().zip([&tr.g, &tr.bt, &tr.at]) {
            stmts.push((table(name, entries, dtype), Status::EOperator));
        }
        tables.push((tr.clone(), names));
    }
    let table_of = |tr: &Transform| tables.iter().find(|(t, _)| t == tr).map(|(_, n)| n.clone());

    // Iterator names no original iterator has: the originals stay in the
    // substituted reads.
    let fresh = |base: &str, taken: &[String]| {
        let mut k = 0;
        loop {
            let name = fresh_iter(
                c,
                &format!(
                    "{base}{}",
                    if k == 0 { String::new() } else { k.to_string() }
                ),
            );
            if !taken.contains(&name) {
                return name;
            }
            k += 1;
        }
    };
    let mut taken: Vec<String> = Vec::new();
    let mut pick = |base: &str| {
        let n = fresh(base, &taken);
        taken.push(n.clone());
        n
    };
    // Per axis: transform position, filter tap, input tap, tile.
    let mut pos: [Option<String>; 2] = [None, None];
    let mut tap: [Option<String>; 2] = [None, None];
    let mut itap: [Option<String>; 2] = [None, None];
    let mut tile: [Option<String>; 2] = [None, None];
    for (d, axis) in plan.iter().enumerate() {
        if let Axis::Tiled(_) = axis {
            let s = ["h", "w"][d];
            pos[d] = Some(pick(&format!("a{s}")));
            tap[d] = Some(pick(&format!("r{s}")));
            itap[d] = Some(pick(&format!("i{s}")));
            tile[d] = Some(pick(&format!("t{s}")));
        }
    }
    let positions: Vec<String> = pos.iter().flatten().cloned().collect();
    let kept_k: Vec<String> = (0..2)
        .filter(|&d| matches!(plan[d], Axis::Kept))
        .map(|d| roles.ker[d].0.clone())
        .collect();
    let (n, f, ch) = (&roles.n, &roles.f, &roles.c);
    // A spatial axis's output-side iterator in V and M: the tile when
    // tiled, the output iterator itself when kept.
    let spatial: Vec<String> = (0..2)
        .map(|d| tile[d].clone().unwrap_or_else(|| roles.out[d].0.clone()))
        .collect();
    let spatial_ext = |d: usize| match &plan[d] {
        Axis::Tiled(tr) => (roles.out[d].2 + tr.m as i64 - 1) / tr.m as i64,
        Axis::Kept => roles.out[d].2,
    };
    let alpha_of = |d: usize| match &plan[d] {
        Axis::Tiled(tr) => (tr.m + tr.r - 1) as i64,
        Axis::Kept => 0,
    };
    let ext = |name: &str| -> i64 {
        for d in 0..2 {
            if pos[d].as_deref() == Some(name) || itap[d].as_deref() == Some(name) {
                return alpha_of(d);
            }
            if let (Some(t), Axis::Tiled(tr)) = (&tap[d], &plan[d]) {
                if t == name {
                    return tr.r as i64;
                }
            }
            if spatial[d] == name {
                return spatial_ext(d);
            }
        }
        for r in [n, f, ch].into_iter().chain(&roles.ker) {
            if r.0 == name {
                return r.2;
            }
        }
        0
    };
    let ranges = |names: &[String]| -> Vec<IterRange> {
        names.iter().map(|n| iter_range(n, 0, ext(n))).collect()
    };
    let ix = |names: &[String]| names.iter().map(|n| iter(n)).collect::<Vec<_>>();
    let lo_shift = |r: &(String, i64, i64)| Some((r.0.clone(), shifted(&r.0, r.1)?));

    // U: the filter transform.
    let mut u_idx = positions.clone();
    u_idx.extend([f.0.clone(), ch.0.clone()]);
    u_idx.extend(kept_k.iter().cloned());
    let mut u_to: HashMap<String, Linear> = [lo_shift(f)?, lo_shift(ch)?].into_iter().collect();
    let mut u_body = w_read.clone();
    let mut u_sums = Vec::new();
    for d in 0..2 {
        match &plan[d] {
            Axis::Tiled(tr) => {
                let (p, r) = (pos[d].clone()?, tap[d].clone()?);
                u_to.insert(roles.ker[d].0.clone(), shifted(&r, roles.ker[d].1)?);
                u_body = mul(u_body, read(&table_of(tr)?[0], vec![iter(&p), iter(&r)]));
                u_sums.push(r);
            }
            Axis::Kept => {
                let (k, v) = lo_shift(&roles.ker[d])?;
                u_to.insert(k, v);
            }
        }
    }
    let u_shape: Vec<i64> = u_idx.iter().map(|n| ext(n)).collect();
    let u = next.fresh_tensor(dtype, &u_shape);
    let u_ranges = ranges(&[u_idx.clone(), u_sums].concat());
    stmts.push((
        scope(&u, &u_idx, u_body, u_ranges, &u_to),
        Status::EOperator,
    ));

    // V: the input transform over the tiles.
    let mut v_idx = positions.clone();
    v_idx.push(ch.0.clone());
    v_idx.extend(kept_k.iter().cloned());
    v_idx.push(n.0.clone());
    v_idx.extend(spatial.iter().cloned());
    let mut v_to: HashMap<String, Linear> = [lo_shift(n)?, lo_shift(ch)?].into_iter().collect();
    let mut v_body = x_read.clone();
    let mut v_sums = Vec::new();
    for d in 0..2 {
        let (o, k) = (&roles.out[d], &roles.ker[d]);
        match &plan[d] {
            Axis::Tiled(tr) => {
                let (p, i, tl) = (pos[d].clone()?, itap[d].clone()?, tile[d].clone()?);
                v_to.insert(
                    o.0.clone(),
                    Linear::iter(&tl)
                        .scale(tr.m as i64)?
                        .plus(&Linear::constant(o.1))?,
                );
                v_to.insert(k.0.clone(), shifted(&i, k.1)?);
                v_body = mul(v_body, read(&table_of(tr)?[1], vec![iter(&p), iter(&i)]));
                v_sums.push(i);
            }
            Axis::Kept => {
                for r in [o, k] {
                    let (name, v) = lo_shift(r)?;
                    v_to.insert(name, v);
                }
            }
        }
    }
    let v_shape: Vec<i64> = v_idx.iter().map(|n| ext(n)).collect();
    let v = next.fresh_tensor(dtype, &v_shape);
    let v_ranges = ranges(&[v_idx.clone(), v_sums].concat());
    stmts.push((
        scope(&v, &v_idx, v_body, v_ranges, &v_to),
        Status::EOperator,
    ));

    // M: the products, a batched matmul over the transform positions.
    let mut m_idx = positions.clone();
    m_idx.extend([f.0.clone(), n.0.clone()]);
    m_idx.extend(spatial.iter().cloned());
    let mut m_sums = vec![ch.0.clone()];
    m_sums.extend(kept_k.iter().cloned());
    let m_body = mul(read(&u, ix(&u_idx)), read(&v, ix(&v_idx)));
    let m_shape: Vec<i64> = m_idx.iter().map(|n| ext(n)).collect();
    let m = next.fresh_tensor(dtype, &m_shape);
    let m_ranges = ranges(&[m_idx.clone(), m_sums].concat());
    stmts.push((
        scope(&m, &m_idx, m_body, m_ranges, &HashMap::new()),
        Status::Open,
    ));

    // The output transform, at the original's points.
    let b = bounds(c);
    let mut m_sub: Vec<Expr> = positions.iter().map(|p| iter(p)).collect();
    let from0 = |r: &(String, i64, i64)| shifted(&r.0, -r.1);
    m_sub.push(from0(f)?.to_expr());
    m_sub.push(from0(n)?.to_expr());
    let mut coeffs = Vec::new();
    for d in 0..2 {
        let o = &roles.out[d];
        match &plan[d] {
            Axis::Tiled(tr) => {
                let k = tr.m as i64;
                m_sub.push(from0(o)?.floor_div(k, &b)?.to_expr());
                let within = from0(o)?.floor_mod(k, &b)?.to_expr();
                coeffs.push(read(
                    &table_of(tr)?[2],
                    vec![within, iter(pos[d].as_ref()?)],
                ));
            }
            Axis::Kept => m_sub.push(from0(o)?.to_expr()),
        }
    }
    let mut o_body = read(&m, m_sub);
    for k in coeffs {
        o_body = mul(o_body, k);
    }
    let mut o_ranges: Vec<IterRange> = c
        .indices
        .iter()
        .filter_map(|i| c.range(i).cloned())
        .collect();
    o_ranges.extend(positions.iter().map(|p| iter_range(p, 0, ext(p))));
    let o = Comprehension {
        tensor: c.tensor.clone(),
        indices: c.indices.clone(),
        op: Reduction::Add,
        init: c.init,
        body: o_body,
        ranges: o_ranges,
        lets: Vec::new(),
        exists: Vec::new(),
    };
    stmts.push((o, Status::EOperator));

    let name = match plan {
        [Axis::Tiled(a), Axis::Tiled(_)] => format!("F({0}×{0}, {1}×{1})", a.m, a.r),
        [_, Axis::Tiled(a)] | [Axis::Tiled(a), _] => format!("F({}, {}) along the width", a.m, a.r),
        _ => return None,
    };
    let batch: i64 = (0..2).map(|d| alpha_of(d).max(1)).product();
    next.splice(at, stmts);
    Some(Applied {
        state: next,
        what: format!(
            "`{}`: Winograd {name}: filter transform `{u}`, input transform `{v}`, products `{m}` ({batch} matmuls)",
            c.tensor
        ),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `Aᵀ [(G g) ⊙ (Bᵀ d)]` equals the direct correlation exactly, for
    /// every offered transform, on integer data.
    #[test]
    fn transforms_compute_the_correlation() {
        for (m, r) in [(2, 3), (4, 3), (2, 5), (4, 5)] {
            let t = transform(m, r).expect("the transform exists");
            let alpha = m + r - 1;
            for seed in 0..5i64 {
                let d: Vec<Q> = (0..alpha as i64)
                    .map(|i| Q::int((i * 7 + seed * 3) % 11 - 5))
                    .collect();
                let g: Vec<Q> = (0..r as i64)
                    .map(|k| Q::int((k * 5 + seed) % 7 - 3))
                    .collect();
                let dot = |row: &[Q], v: &[Q]| {
                    row.iter()
                        .zip(v)
                        .try_fold(Q::int(0), |acc, (&a, &b)| acc.add(a.mul(b)?))
                        .expect("no overflow")
                };
                let gg: Vec<Q> = t.g.iter().map(|row| dot(row, &g)).collect();
                let dd: Vec<Q> = t.bt.iter().map(|row| dot(row, &d)).collect();
                let prod: Vec<Q> = gg
                    .iter()
                    .zip(&dd)
                    .map(|(&a, &b)| a.mul(b).expect("no overflow"))
                    .collect();
                for i in 0..m {
                    let direct = dot(&g, &d[i..i + r]);
                    assert_eq!(dot(&t.at[i], &prod), direct, "F({m}, {r}), output {i}");
                }
            }
        }
    }

    /// Lavin's F(2, 3) up to the sign of one row of `G` and of `Bᵀ` (the
    /// product is the same): a hand-checked instance.
    #[test]
    fn f23_is_lavins() {
        let t = transform(2, 3).expect("F(2, 3)");
        let q = |n, d| Q::new(n, d).expect("rational");
        assert_eq!(t.at[0], vec![q(1, 1), q(1, 1), q(1, 1), q(0, 1)]);
        assert_eq!(t.at[1], vec![q(0, 1), q(1, 1), q(-1, 1), q(1, 1)]);
        assert_eq!(t.g[1], vec![q(1, 2), q(1, 2), q(1, 2)]);
        assert_eq!(t.g[0], vec![q(-1, 1), q(0, 1), q(0, 1)]);
        assert_eq!(t.bt[0], vec![q(-1, 1), q(0, 1), q(1, 1), q(0, 1)]);
        assert_eq!(t.bt[3], vec![q(0, 1), q(-1, 1), q(0, 1), q(1, 1)]);
    }
}
